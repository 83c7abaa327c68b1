#ifndef DSF_CHAT_H
#define DSF_CHAT_H
// DeepSeek-V4 / V4-0731 / V4.1 chat encoding and completion parsing, per shared/spec/chat-encoding.md (no Jinja).
#include <jansson.h>

#include "tok/tok.h"

typedef enum dsf_chat_variant {
    DSF_CHAT_V4 = 0,
    DSF_CHAT_V4_0731,
    DSF_CHAT_V41,
} dsf_chat_variant;

typedef struct dsf_chat_opts {
    dsf_chat_variant variant;
    int thinking;
    // NULL (the variant's default), "low", "high", "max", or for V4.1 also "xhigh" or a decimal 1..100.
    const char *effort;
    int drop_thinking;
    int add_bos;
    // The first n_context messages were encoded before (a KV prefix): they count for indices but render nothing.
    size_t n_context;
} dsf_chat_opts;

// Defaults of the reference encoders: thinking on, effort default, drop_thinking on, BOS on, no context.
void dsf_chat_opts_default(dsf_chat_opts *o, dsf_chat_variant v);
// "v4", "v4_0731" or "v41" to a variant; -1 when unknown.
int dsf_chat_variant_parse(const char *name, dsf_chat_variant *v);

// OpenAI-style messages (a JSON array) to the prompt text, appended to out.
int dsf_chat_render(const json_t *messages, const dsf_chat_opts *o, dsf_tok_buf *out, dsf_err *e);

// The strict parser (spec 6.2): completion text, EOS text included, to {role, content, reasoning_content, tool_calls}.
int dsf_chat_parse(const char *text, size_t n, dsf_chat_variant v, int thinking, json_t **msg, dsf_err *e);

// Python json.dumps(value, ensure_ascii=False): ", " and ": " separators, keys in order, floats as repr.
void dsf_json_dumps(const json_t *v, dsf_tok_buf *out);
// A JSON string literal the way json.dumps writes it (quotes included).
void dsf_json_dumps_str(const char *s, size_t n, dsf_tok_buf *out);

#endif
