#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tok/chat_internal.h"

static const char *const TASKS[][2] = {{"action", "<｜action｜>"},       {"query", "<｜query｜>"},
                                       {"authority", "<｜authority｜>"}, {"domain", "<｜domain｜>"},
                                       {"title", "<｜title｜>"},         {"read_url", "<｜read_url｜>"}};

static const char EFFORT_ABSOLUTE[] =
    "Reasoning Effort: Absolute maximum with no shortcuts permitted.\n"
    "You MUST be very thorough in your thinking and comprehensively decompose the problem to resolve the root cause, "
    "rigorously stress-testing your logic against all potential paths, edge cases, and adversarial scenarios.\n"
    "Explicitly write out your entire deliberation process, documenting every intermediate step, considered "
    "alternative, and rejected hypothesis to ensure absolutely no assumption is left unchecked.\n\n";

static const char EFFORT_BEYOND[] =
    "Reasoning Effort: Beyond maximum \xE2\x80\x94 exhaustive, relentless, and uncompromising.\n"
    "You MUST reason with the utmost depth and rigor, leaving absolutely nothing to chance: exhaustively decompose the "
    "problem into its most fundamental components, trace every causal chain to its root, and resolve the underlying "
    "cause rather than any surface symptom.\n"
    "Do not stop reasoning until you have independently verified the solution from multiple angles and are certain "
    "that no assumption remains unchecked and no error remains undiscovered.\n\n";

void dsf_chat_opts_default(dsf_chat_opts *o, dsf_chat_variant v) {
    memset(o, 0, sizeof *o);
    o->variant = v;
    o->thinking = 1;
    o->drop_thinking = 1;
    o->add_bos = 1;
}

int dsf_chat_variant_parse(const char *name, dsf_chat_variant *v) {
    if (!strcmp(name, "v4"))
        *v = DSF_CHAT_V4;
    else if (!strcmp(name, "v4_0731"))
        *v = DSF_CHAT_V4_0731;
    else if (!strcmp(name, "v41"))
        *v = DSF_CHAT_V41;
    else
        return -1;
    return 0;
}

const char *dsf_chat_str(const json_t *m, const char *key) {
    json_t *v = json_object_get(m, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static int role_is(const json_t *m, const char *role) {
    const char *r = dsf_chat_str(m, "role");
    return r && !strcmp(r, role);
}

static int user_turn(const chat_ctx *c, const json_t *m, size_t i) {
    if (role_is(m, "user")) return 1;
    if (c->o->variant == DSF_CHAT_V41) return role_is(m, "system") && i > 0;
    return role_is(m, "developer");
}

static long last_user(const chat_ctx *c) {
    long last = -1;
    for (size_t i = 0; i < json_array_size(c->list); i++)
        if (user_turn(c, json_array_get(c->list, i), i)) last = (long)i;
    return last;
}

// The preamble for message 0 in thinking mode; NULL when there is none, with *bad set for an unknown effort.
static const char *v4_effort(const chat_ctx *c, int *bad) {
    const char *ef = c->o->effort;
    if (c->o->variant == DSF_CHAT_V4) {
        if (!ef || !strcmp(ef, "high")) return NULL;
        if (!strcmp(ef, "max")) return EFFORT_ABSOLUTE;
    } else {
        if (!ef || !strcmp(ef, "low")) return NULL;
        if (!strcmp(ef, "high")) return EFFORT_ABSOLUTE;
        if (!strcmp(ef, "max")) return EFFORT_BEYOND;
    }
    *bad = 1;
    return NULL;
}

static int v41_effort(const chat_ctx *c, int *n, dsf_err *e) {
    const char *ef = c->o->effort;
    if (!ef || !strcmp(ef, "high") || !strcmp(ef, "xhigh"))
        *n = 75;
    else if (!strcmp(ef, "low"))
        *n = 50;
    else if (!strcmp(ef, "max"))
        *n = 100;
    else {
        char *end;
        long v = strtol(ef, &end, 10);
        if (!*ef || *end || v < 1 || v > 100)
            return dsf_fail(e, "chat: reasoning_effort \"%s\": expected low, high, xhigh, max or an integer 1..100",
                            ef);
        *n = (int)v;
    }
    return 0;
}

static const char *task_token(const json_t *m, int *bad) {
    const char *task = dsf_chat_str(m, "task");
    if (!task) return NULL;
    for (size_t i = 0; i < sizeof TASKS / sizeof *TASKS; i++)
        if (!strcmp(task, TASKS[i][0])) return TASKS[i][1];
    *bad = 1;
    return NULL;
}

static void put_blocks(chat_ctx *c, const json_t *blocks) {
    for (size_t b = 0; b < json_array_size(blocks); b++) {
        const json_t *blk = json_array_get(blocks, b);
        const char *type = dsf_chat_str(blk, "type");
        if (b) dsf_tok_buf_puts(c->out, "\n\n");
        if (type && !strcmp(type, "text")) {
            const char *t = dsf_chat_str(blk, "text");
            dsf_tok_buf_puts(c->out, t ? t : "");
        } else if (type && !strcmp(type, "tool_result")) {
            json_t *content = json_object_get(blk, "content");
            dsf_tok_buf_puts(c->out, "<tool_result>");
            if (json_is_array(content)) {
                for (size_t k = 0; k < json_array_size(content); k++) {
                    const json_t *part = json_array_get(content, k);
                    const char *pt = dsf_chat_str(part, "type");
                    if (k) dsf_tok_buf_puts(c->out, "\n\n");
                    if (pt && !strcmp(pt, "text")) {
                        const char *t = dsf_chat_str(part, "text");
                        dsf_tok_buf_puts(c->out, t ? t : "");
                    } else {
                        dsf_chat_unsupported(c, pt);
                    }
                }
            } else if (json_is_string(content)) {
                dsf_tok_buf_puts(c->out, json_string_value(content));
            }
            dsf_tok_buf_puts(c->out, "</tool_result>");
        } else {
            dsf_chat_unsupported(c, type);
        }
    }
}

void dsf_chat_unsupported(chat_ctx *c, const char *type) {
    dsf_tok_buf_puts(c->out, "[Unsupported ");
    dsf_tok_buf_puts(c->out, type ? type : "None");
    dsf_tok_buf_puts(c->out, "]");
}

// System-like text: the content, then the tools block and the response-format block when present.
static void put_system_text(chat_ctx *c, const json_t *m) {
    const char *content = dsf_chat_str(m, "content");
    dsf_tok_buf_puts(c->out, content ? content : "");
    json_t *tools = json_object_get(m, "tools");
    if (json_is_array(tools) && json_array_size(tools)) {
        dsf_tok_buf_puts(c->out, "\n\n");
        dsf_chat_tools_block(c, tools);
    }
    json_t *rf = json_object_get(m, "response_format");
    if (rf && !json_is_null(rf)) {
        dsf_tok_buf_puts(c->out,
                         "\n\n## Response Format:\n\nYou MUST strictly adhere to the following schema to reply:\n");
        dsf_json_dumps(rf, c->out);
    }
}

static int render_one(chat_ctx *c, size_t i, dsf_err *e) {
    const json_t *m = json_array_get(c->list, i);
    const json_t *prev = i ? json_array_get(c->list, i - 1) : NULL;
    const char *role = dsf_chat_str(m, "role");
    int v41 = c->o->variant == DSF_CHAT_V41, think = c->o->thinking, bad = 0;
    if (i == 0 && v41) {
        int n = 75;
        if (think && v41_effort(c, &n, e)) return -1;
        if (think || role_is(m, "system")) dsf_tok_buf_puts(c->out, "<｜System｜>");
        if (think) {
            char pre[128];
            snprintf(pre, sizeof pre,
                     "Reasoning Effort: %d (range 1-100, the higher the value, the more thorough the reasoning)\n\n",
                     n);
            dsf_tok_buf_puts(c->out, pre);
        }
    } else if (i == 0 && think) {
        const char *pre = v4_effort(c, &bad);
        if (bad) return dsf_fail(e, "chat: reasoning_effort \"%s\" is not valid for this variant", c->o->effort);
        if (pre) dsf_tok_buf_puts(c->out, pre);
    }
    if (!role) return dsf_fail(e, "chat: messages[%zu].role: missing", i);
    if (!strcmp(role, "system")) {
        if (v41 && i > 0) dsf_tok_buf_puts(c->out, "<｜System｜>");
        put_system_text(c, m);
    } else if (!strcmp(role, "developer") && !v41) {
        const char *content = dsf_chat_str(m, "content");
        if (!content || !*content) return dsf_fail(e, "chat: messages[%zu]: a developer message needs content", i);
        dsf_tok_buf_puts(c->out, "<｜User｜>");
        put_system_text(c, m);
    } else if (!strcmp(role, "user")) {
        dsf_tok_buf_puts(c->out, "<｜User｜>");
        put_blocks(c, json_object_get(m, "__blocks"));
    } else if (!strcmp(role, "latest_reminder")) {
        const char *content = dsf_chat_str(m, "content");
        dsf_tok_buf_puts(c->out, "<｜latest_reminder｜>");
        dsf_tok_buf_puts(c->out, content ? content : "");
    } else if (!strcmp(role, "assistant")) {
        const char *rc = dsf_chat_str(m, "reasoning_content"), *content = dsf_chat_str(m, "content");
        if (think && !(prev && dsf_chat_str(prev, "task")) && (!c->drop || (long)i > c->last_user)) {
            dsf_tok_buf_puts(c->out, rc ? rc : "");
            dsf_tok_buf_puts(c->out, "</think>");
        }
        dsf_tok_buf_puts(c->out, content ? content : "");
        if (dsf_chat_tool_calls(c, i, json_object_get(m, "tool_calls"), e)) return -1;
        if (!json_is_true(json_object_get(m, "wo_eos"))) dsf_tok_buf_puts(c->out, DSF_CHAT_EOS);
    } else {
        return dsf_fail(e, "chat: messages[%zu].role: unknown role \"%s\"", i, role);
    }
    const json_t *next = json_array_get(c->list, i + 1);
    if (next && !role_is(next, "assistant") && !role_is(next, "latest_reminder")) return 0;
    const char *task = task_token(m, &bad);
    if (bad) return dsf_fail(e, "chat: messages[%zu].task: \"%s\" is not a known task", i, dsf_chat_str(m, "task"));
    if (task && !strcmp(task, "<｜action｜>")) {
        dsf_tok_buf_puts(c->out, think ? "<｜Assistant｜><think><｜action｜>" : "<｜Assistant｜></think><｜action｜>");
    } else if (task) {
        dsf_tok_buf_puts(c->out, task);
    } else if (user_turn(c, m, i)) {
        dsf_tok_buf_puts(c->out, "<｜Assistant｜>");
        dsf_tok_buf_puts(c->out, think && (!c->drop || (long)i >= c->last_user) ? "<think>" : "</think>");
    }
    return 0;
}

// Thinking mode with drop: earlier assistants lose their reasoning, other roles before the last user turn go.
static void drop_pass(chat_ctx *c) {
    json_t *kept = json_array();
    for (size_t i = 0; i < json_array_size(c->list); i++) {
        json_t *m = json_array_get(c->list, i);
        const char *r = dsf_chat_str(m, "role");
        int keep_role = r && (!strcmp(r, "user") || !strcmp(r, "system") || !strcmp(r, "tool") ||
                              !strcmp(r, "latest_reminder") || !strcmp(r, "direct_search_results"));
        if ((long)i >= c->last_user || keep_role) {
            json_array_append(kept, m);
        } else if (r && !strcmp(r, "assistant")) {
            json_t *copy = json_copy(m);
            json_object_del(copy, "reasoning_content");
            json_array_append_new(kept, copy);
        }
    }
    json_decref(c->list);
    c->list = kept;
}

int dsf_chat_render(const json_t *messages, const dsf_chat_opts *o, dsf_tok_buf *out, dsf_err *e) {
    if (!json_is_array(messages)) return dsf_fail(e, "chat: messages: expected a JSON array");
    chat_ctx c = {o, out, NULL, 0, -1};
    if (dsf_chat_merge(&c, messages, e)) {
        json_decref(c.list);
        return -1;
    }
    c.drop = o->drop_thinking;
    for (size_t i = 0; i < json_array_size(c.list); i++) {
        json_t *tools = json_object_get(json_array_get(c.list, i), "tools");
        if (json_is_array(tools) && json_array_size(tools)) c.drop = 0;
    }
    c.last_user = last_user(&c);
    if (o->thinking && c.drop) {
        drop_pass(&c);
        c.last_user = last_user(&c);
    }
    size_t n_ctx = 0;
    for (size_t i = 0; i < json_array_size(c.list); i++)
        if (json_is_true(json_object_get(json_array_get(c.list, i), "__ctx"))) n_ctx = i + 1;
    if (o->add_bos && !o->n_context) dsf_tok_buf_puts(out, DSF_CHAT_BOS);
    int rc = 0;
    for (size_t i = n_ctx; !rc && i < json_array_size(c.list); i++) rc = render_one(&c, i, e);
    json_decref(c.list);
    return rc;
}
