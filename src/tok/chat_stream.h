#ifndef DSF_CHAT_STREAM_H
#define DSF_CHAT_STREAM_H
// The tolerant streaming completion parser of shared/spec/chat-encoding.md 6.3; rules and outcomes: docs/tokenizer.md.
#include "tok/chat.h"

typedef enum dsf_chat_ev_kind {
    DSF_CHAT_EV_REASONING = 0,
    DSF_CHAT_EV_CONTENT,
    DSF_CHAT_EV_TOOL_START,
    DSF_CHAT_EV_TOOL_NAME,
    DSF_CHAT_EV_TOOL_ARGS,
    DSF_CHAT_EV_TOOL_END,
} dsf_chat_ev_kind;

typedef struct dsf_chat_ev {
    dsf_chat_ev_kind kind;
    // The call's index (0, 1, ...) for the TOOL_ events, -1 for the others.
    int tool;
    // A delta (REASONING, CONTENT, TOOL_ARGS) or the whole name (TOOL_NAME); valid only during the callback.
    const char *text;
    size_t n;
} dsf_chat_ev;

typedef void (*dsf_chat_ev_fn)(void *user, const dsf_chat_ev *ev);

typedef enum dsf_chat_finish {
    DSF_CHAT_FINISH_STOP = 0,
    DSF_CHAT_FINISH_LENGTH,
    DSF_CHAT_FINISH_TOOL_CALLS,
} dsf_chat_finish;

// Tolerances the parser applied (bits of dsf_chat_stream_flags); none is set on a completion dsf_chat_parse accepts.
enum {
    DSF_CHAT_TOL_NO_THINK_END = 1 << 0,   // a tool block opened inside reasoning
    DSF_CHAT_TOL_STRAY_THINK = 1 << 1,    // a </think> in content, dropped
    DSF_CHAT_TOL_BLOCK_SPACING = 1 << 2,  // a tool block not preceded by "\n\n"
    DSF_CHAT_TOL_MARKUP = 1 << 3,         // unknown or malformed tags, or text between tags, skipped
    DSF_CHAT_TOL_PARTIAL_CALL = 1 << 4,   // the text ended inside a call: left out of the result
    DSF_CHAT_TOL_UNCLOSED = 1 << 5,       // the text ended inside reasoning or inside a tool block
    DSF_CHAT_TOL_TRAILING = 1 << 6,       // text after the tool block or after EOS, discarded
    DSF_CHAT_TOL_DUP_PARAM = 1 << 7,      // a parameter name repeated within a call (kept)
    DSF_CHAT_TOL_OTHER_SPELLING = 1 << 8, // DSML tag names of the other variant
};

typedef struct dsf_chat_stream dsf_chat_stream;

// thinking: the prompt ended with <think>, so the completion starts in reasoning; fn may be NULL.
dsf_chat_stream *dsf_chat_stream_open(dsf_chat_variant v, int thinking, dsf_chat_ev_fn fn, void *user);
void dsf_chat_stream_close(dsf_chat_stream *s);
// Decoded text in pieces of any size, split anywhere (inside UTF-8 sequences and inside tags too).
void dsf_chat_stream_feed(dsf_chat_stream *s, const char *text, size_t n);
// End of generation; stopped_on_eos: it stopped on id 1 (the EOS text need not have been fed). Flushes held text.
void dsf_chat_stream_finish(dsf_chat_stream *s, int stopped_on_eos);
// After finish: {role, content, reasoning_content, tool_calls}, as dsf_chat_parse builds it (a new reference).
json_t *dsf_chat_stream_result(const dsf_chat_stream *s);
// After finish: tool_calls when a call was parsed, else stop when EOS was seen, else length.
dsf_chat_finish dsf_chat_stream_finish_reason(const dsf_chat_stream *s);
unsigned dsf_chat_stream_flags(const dsf_chat_stream *s);
// "stop", "length" or "tool_calls", the OpenAI finish_reason strings.
const char *dsf_chat_finish_name(dsf_chat_finish f);

#endif
