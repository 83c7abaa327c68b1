#ifndef DSF_CHAT_INTERNAL_H
#define DSF_CHAT_INTERNAL_H
// Shared by the chat files: the merged message list being rendered and the helpers that write its parts.
#include "tok/chat.h"

#define DSF_CHAT_BOS "<｜begin▁of▁sentence｜>"
#define DSF_CHAT_EOS "<｜end▁of▁sentence｜>"

typedef struct chat_ctx {
    const dsf_chat_opts *o;
    dsf_tok_buf *out;
    json_t *list;
    int drop;
    long last_user;
} chat_ctx;

const char *dsf_chat_str(const json_t *m, const char *key);
void dsf_chat_unsupported(chat_ctx *c, const char *type);
// Tool messages into user turns, user texts into blocks (__blocks), tool results in call order; sets c->list.
int dsf_chat_merge(chat_ctx *c, const json_t *messages, dsf_err *e);
void dsf_chat_tools_block(chat_ctx *c, const json_t *tools);
int dsf_chat_tool_calls(chat_ctx *c, size_t i, const json_t *calls, dsf_err *e);
// The DSML tag names of a variant: tool_calls/invoke/parameter, with V4.1's leading space.
const char *dsf_chat_tag(dsf_chat_variant v, int which);

#endif
