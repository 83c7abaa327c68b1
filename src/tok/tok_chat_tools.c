#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tok/chat_internal.h"

const char *dsf_chat_tag(dsf_chat_variant v, int which) {
    static const char *const v4[] = {"tool_calls", "invoke", "parameter"};
    static const char *const v41[] = {" calls", " invoke", " parameter"};
    return v == DSF_CHAT_V41 ? v41[which] : v4[which];
}

static void put_tag(chat_ctx *c, const char *open, int which, const char *close) {
    dsf_tok_buf_puts(c->out, open);
    dsf_tok_buf_puts(c->out, dsf_chat_tag(c->o->variant, which));
    dsf_tok_buf_puts(c->out, close);
}

void dsf_chat_tools_block(chat_ctx *c, const json_t *tools) {
    dsf_tok_buf_puts(c->out, "## Tools\n\nYou have access to a set of tools to help answer the user's question. You "
                             "can invoke tools by writing a \"");
    put_tag(c, "<｜DSML｜", 0, ">\" block like the following:\n\n");
    put_tag(c, "<｜DSML｜", 0, ">\n");
    put_tag(c, "<｜DSML｜", 1, " name=\"$TOOL_NAME\">\n");
    put_tag(c, "<｜DSML｜", 2, " name=\"$PARAMETER_NAME\" string=\"true|false\">$PARAMETER_VALUE");
    put_tag(c, "</｜DSML｜", 2, ">\n...\n");
    put_tag(c, "</｜DSML｜", 1, ">\n");
    put_tag(c, "<｜DSML｜", 1, " name=\"$TOOL_NAME2\">\n...\n");
    put_tag(c, "</｜DSML｜", 1, ">\n");
    put_tag(c, "</｜DSML｜", 0, ">\n\n");
    dsf_tok_buf_puts(
        c->out, "String parameters should be specified as is and set `string=\"true\"`. For all other types "
                "(numbers, booleans, arrays, objects), pass the value in JSON format and set `string=\"false\"`.\n\n"
                "If thinking_mode is enabled (triggered by <think>), you MUST output your complete reasoning inside "
                "<think>...</think> BEFORE any tool calls or final response.\n\n"
                "Otherwise, output directly after </think> with tool calls or final response.\n\n"
                "### Available Tool Schemas\n\n");
    for (size_t i = 0; i < json_array_size(tools); i++) {
        const json_t *t = json_array_get(tools, i), *fn = json_object_get(t, "function");
        if (i) dsf_tok_buf_puts(c->out, "\n");
        dsf_json_dumps(fn ? fn : t, c->out);
    }
    dsf_tok_buf_puts(c->out, "\n\nYou MUST strictly follow the above defined tool name and parameter schemas to invoke "
                             "tool calls.\n");
}

// The arguments object of one call, per variant (spec 4.8); a new reference, or NULL for what the reference rejects.
static json_t *call_args(const chat_ctx *c, const json_t *raw) {
    if (c->o->variant != DSF_CHAT_V41) {
        if (json_is_string(raw)) {
            json_t *v = json_loads(json_string_value(raw), JSON_DECODE_ANY, NULL);
            if (json_is_object(v)) return v;
            if (v) {
                json_decref(v);
                return NULL;
            }
        }
        return json_pack("{sO}", "arguments", raw ? raw : json_null());
    }
    if (json_is_object(raw)) return json_incref((json_t *)raw);
    json_t *cur = json_incref((json_t *)raw);
    for (int round = 0; round < 2 && json_is_string(cur); round++) {
        json_t *v = json_loads(json_string_value(cur), JSON_DECODE_ANY, NULL);
        if (!v) break;
        json_decref(cur);
        cur = v;
    }
    if (json_is_object(cur)) return cur;
    json_decref(cur);
    return json_pack("{sO}", "arguments", raw ? raw : json_null());
}

int dsf_chat_tool_calls(chat_ctx *c, size_t i, const json_t *calls, dsf_err *e) {
    if (!json_is_array(calls) || !json_array_size(calls)) return 0;
    put_tag(c, "\n\n<｜DSML｜", 0, ">\n");
    for (size_t k = 0; k < json_array_size(calls); k++) {
        const json_t *fn = json_object_get(json_array_get(calls, k), "function");
        const char *name = dsf_chat_str(fn, "name");
        if (!name) return dsf_fail(e, "chat: messages[%zu].tool_calls[%zu].function.name: missing", i, k);
        json_t *args = call_args(c, json_object_get(fn, "arguments"));
        if (!args)
            return dsf_fail(e, "chat: messages[%zu].tool_calls[%zu].function.arguments: not a JSON object", i, k);
        if (k) dsf_tok_buf_puts(c->out, "\n");
        put_tag(c, "<｜DSML｜", 1, " name=\"");
        dsf_tok_buf_puts(c->out, name);
        dsf_tok_buf_puts(c->out, "\">\n");
        const char *key;
        json_t *v;
        int first = 1;
        json_object_foreach(args, key, v) {
            if (!first) dsf_tok_buf_puts(c->out, "\n");
            first = 0;
            put_tag(c, "<｜DSML｜", 2, " name=\"");
            dsf_tok_buf_puts(c->out, key);
            if (json_is_string(v)) {
                dsf_tok_buf_puts(c->out, "\" string=\"true\">");
                dsf_tok_buf_put(c->out, json_string_value(v), json_string_length(v));
            } else {
                dsf_tok_buf_puts(c->out, "\" string=\"false\">");
                dsf_json_dumps(v, c->out);
            }
            put_tag(c, "</｜DSML｜", 2, ">");
        }
        json_decref(args);
        put_tag(c, "\n</｜DSML｜", 1, ">");
    }
    put_tag(c, "\n</｜DSML｜", 0, ">");
    return 0;
}

// A V4.1 content list to blocks: images become the placeholder text; a placeholder inside text is an error.
static int content_blocks(const chat_ctx *c, const json_t *m, size_t i, json_t *blocks, dsf_err *e) {
    static const char IMG[] = "<｜deepseek_image｜>";
    json_t *content = json_object_get(m, "content");
    int v41 = c->o->variant == DSF_CHAT_V41;
    if (json_is_array(content) && v41) {
        for (size_t k = 0; k < json_array_size(content); k++) {
            json_t *b = json_array_get(content, k);
            const char *type = dsf_chat_str(b, "type"), *text = dsf_chat_str(b, "text");
            if (type && (!strcmp(type, "image") || !strcmp(type, "image_url"))) {
                json_array_append_new(blocks, json_pack("{s:s,s:s}", "type", "text", "text", IMG));
                continue;
            }
            if (text && strstr(text, IMG))
                return dsf_fail(e, "chat: messages[%zu].content[%zu]: text contains the image placeholder", i, k);
            json_array_append(blocks, b);
        }
        return 0;
    }
    const char *s = json_is_string(content) ? json_string_value(content) : "";
    if (v41 && strstr(s, IMG)) return dsf_fail(e, "chat: messages[%zu].content: contains the image placeholder", i);
    json_array_append_new(blocks, json_pack("{s:s,s:s}", "type", "text", "text", s));
    return 0;
}

static void sort_results(json_t *list) {
    json_t *ids = NULL;
    for (size_t i = 0; i < json_array_size(list); i++) {
        json_t *m = json_array_get(list, i), *calls = json_object_get(m, "tool_calls");
        if (json_is_array(calls) && json_array_size(calls)) ids = calls;
        json_t *blocks = json_object_get(m, "__blocks");
        size_t n = json_array_size(blocks), slot[256], nr = 0;
        json_t *res[256];
        long rank[256];
        for (size_t b = 0; b < n && nr < 256; b++) {
            const char *type = dsf_chat_str(json_array_get(blocks, b), "type");
            if (!type || strcmp(type, "tool_result")) continue;
            const char *id = dsf_chat_str(json_array_get(blocks, b), "tool_use_id");
            rank[nr] = 0;
            for (size_t k = 0; id && k < json_array_size(ids); k++) {
                const char *cid = dsf_chat_str(json_array_get(ids, k), "id");
                if (cid && !strcmp(cid, id)) rank[nr] = (long)k;
            }
            res[nr] = json_incref(json_array_get(blocks, b));
            slot[nr++] = b;
        }
        for (size_t a = 1; a < nr; a++)
            for (size_t b = a; b > 0 && rank[b - 1] > rank[b]; b--) {
                long tr = rank[b];
                json_t *tj = res[b];
                rank[b] = rank[b - 1], res[b] = res[b - 1];
                rank[b - 1] = tr, res[b - 1] = tj;
            }
        for (size_t r = 0; r < nr; r++) json_array_set_new(blocks, slot[r], res[r]);
    }
}

int dsf_chat_merge(chat_ctx *c, const json_t *messages, dsf_err *e) {
    c->list = json_array();
    json_t *last = NULL;
    for (size_t i = 0; i < json_array_size(messages); i++) {
        const json_t *m = json_array_get(messages, i);
        if (!json_is_object(m)) return dsf_fail(e, "chat: messages[%zu]: expected an object", i);
        const char *role = dsf_chat_str(m, "role");
        if (!role) return dsf_fail(e, "chat: messages[%zu].role: missing or not a string", i);
        int ctx = i < c->o->n_context, is_tool = !strcmp(role, "tool"), is_user = !strcmp(role, "user");
        json_t *prev_blocks = last ? json_object_get(last, "__blocks") : NULL;
        if (is_tool) {
            const char *id = dsf_chat_str(m, "tool_call_id");
            json_t *content = json_object_get(m, "content"), *blk = json_object();
            json_object_set_new(blk, "type", json_string("tool_result"));
            json_object_set_new(blk, "tool_use_id", json_string(id ? id : ""));
            json_object_set_new(blk, "content", content ? json_deep_copy(content) : json_string(""));
            if (prev_blocks) {
                json_array_append_new(prev_blocks, blk);
                continue;
            }
            last = json_pack("{s:s,s:o}", "role", "user", "__blocks", json_pack("[o]", blk));
        } else if (is_user && prev_blocks && !json_object_get(last, "task")) {
            if (content_blocks(c, m, i, prev_blocks, e)) return -1;
            continue;
        } else {
            last = json_deep_copy(m);
            if (is_user) {
                json_t *blocks = json_array();
                json_object_set_new(last, "__blocks", blocks);
                if (content_blocks(c, m, i, blocks, e)) {
                    json_decref(last);
                    return -1;
                }
            }
        }
        if (ctx) json_object_set_new(last, "__ctx", json_true());
        json_array_append_new(c->list, last);
    }
    sort_results(c->list);
    return 0;
}
