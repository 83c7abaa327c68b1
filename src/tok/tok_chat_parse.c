#include <stdio.h>
#include <string.h>

#include "tok/chat_internal.h"

typedef struct parse_ctx {
    const char *s;
    size_t n, pos;
    dsf_err *e;
} parse_ctx;

// The earliest of two needles at or after pos: 0 or 1 for which, -1 for neither; *at gets its offset.
static int earliest(const parse_ctx *p, const char *a, const char *b, size_t *at) {
    const char *x = memmem(p->s + p->pos, p->n - p->pos, a, strlen(a));
    const char *y = b ? memmem(p->s + p->pos, p->n - p->pos, b, strlen(b)) : NULL;
    if (!x && !y) return -1;
    int which = !x || (y && y < x);
    *at = (size_t)((which ? y : x) - p->s);
    return which;
}

static int skipped_is(const parse_ctx *p, size_t at, const char *want) {
    return at - p->pos == strlen(want) && !memcmp(p->s + p->pos, want, at - p->pos);
}

// The text between </｜DSML｜invoke ... and the next tag: ^\s*name="(.*?)">\n$ (Python's $ allows one more \n).
static int invoke_name(const char *s, size_t n, dsf_tok_buf *name) {
    size_t i = 0;
    while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r' || s[i] == '\f' || s[i] == '\v')) i++;
    if (n - i < 6 || memcmp(s + i, "name=\"", 6)) return -1;
    i += 6;
    size_t end = n >= 4 && !memcmp(s + n - 4, "\">\n\n", 4) ? n - 4
                 : n >= 3 && !memcmp(s + n - 3, "\">\n", 3) ? n - 3
                                                            : 0;
    if (end < i || memchr(s + i, '\n', end - i)) return -1;
    dsf_tok_buf_put(name, s + i, end - i);
    return 0;
}

// ^ name="(.*?)" string="(true|false)">(.*?)<$ over the text before /｜DSML｜parameter.
static int param_parts(const char *s, size_t n, size_t *key_end, int *is_str, size_t *val_start) {
    if (n < 7 || memcmp(s, " name=\"", 7) || s[n - 1] != '<') return -1;
    for (size_t i = 7; i < n; i++) {
        if (s[i] != '"') continue;
        if (n - i >= 16 && !memcmp(s + i, "\" string=\"true\">", 16)) {
            *key_end = i, *is_str = 1, *val_start = i + 16;
        } else if (n - i >= 17 && !memcmp(s + i, "\" string=\"false\">", 17)) {
            *key_end = i, *is_str = 0, *val_start = i + 17;
        } else {
            continue;
        }
        return *val_start <= n - 1 ? 0 : -1;
    }
    return -1;
}

static int parse_invoke(parse_ctx *p, dsf_chat_variant v, json_t *calls) {
    char param_open[40], param_close[40], invoke_end[40];
    snprintf(param_open, sizeof param_open, "<｜DSML｜%s", dsf_chat_tag(v, 2));
    snprintf(param_close, sizeof param_close, "/｜DSML｜%s", dsf_chat_tag(v, 2));
    snprintf(invoke_end, sizeof invoke_end, "</｜DSML｜%s", dsf_chat_tag(v, 1));
    size_t at;
    int which = earliest(p, param_open, invoke_end, &at);
    dsf_tok_buf name = {0}, args = {0}, key = {0};
    if (which < 0 || invoke_name(p->s + p->pos, at - p->pos, &name)) {
        dsf_tok_buf_free(&name);
        return dsf_fail(p->e, "chat parse: byte %zu: malformed invoke name", p->pos);
    }
    json_t *seen = json_object();
    dsf_tok_buf_puts(&args, "{");
    int rc = 0;
    while (!rc && which == 0) {
        p->pos = at + strlen(param_open);
        const char *close = memmem(p->s + p->pos, p->n - p->pos, param_close, strlen(param_close));
        size_t key_end, val_start;
        int is_str;
        if (!close || param_parts(p->s + p->pos, (size_t)(close - p->s) - p->pos, &key_end, &is_str, &val_start)) {
            rc = dsf_fail(p->e, "chat parse: byte %zu: malformed parameter", p->pos);
            break;
        }
        const char *base = p->s + p->pos;
        key.n = 0;
        dsf_tok_buf_put(&key, base + 7, key_end - 7);
        if (json_object_get(seen, key.p)) {
            rc = dsf_fail(p->e, "chat parse: duplicate parameter \"%s\"", key.p);
            break;
        }
        json_object_set_new(seen, key.p, json_true());
        if (args.n > 1) dsf_tok_buf_puts(&args, ", ");
        dsf_json_dumps_str(key.p, key.n, &args);
        dsf_tok_buf_puts(&args, ": ");
        size_t val_len = (size_t)(close - base) - 1 - val_start;
        if (is_str)
            dsf_json_dumps_str(base + val_start, val_len, &args);
        else
            dsf_tok_buf_put(&args, base + val_start, val_len);
        p->pos = (size_t)(close - p->s) + strlen(param_close);
        which = earliest(p, param_open, invoke_end, &at);
        if (which < 0 || !skipped_is(p, at, ">\n"))
            rc = dsf_fail(p->e, "chat parse: byte %zu: expected \">\\n\"", p->pos);
    }
    if (!rc) {
        dsf_tok_buf_puts(&args, "}");
        json_array_append_new(
            calls, json_pack("{s:s,s:{s:s,s:s}}", "type", "function", "function", "name", name.p, "arguments", args.p));
        p->pos = at + strlen(invoke_end);
    }
    json_decref(seen);
    dsf_tok_buf_free(&name), dsf_tok_buf_free(&args), dsf_tok_buf_free(&key);
    return rc;
}

static int has_special(const char *s, size_t n) {
    const char *bad[] = {DSF_CHAT_BOS, DSF_CHAT_EOS, "<think>", "</think>", "｜DSML｜"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        if (memmem(s, n, bad[i], strlen(bad[i]))) return 1;
    return 0;
}

int dsf_chat_parse(const char *text, size_t n, dsf_chat_variant v, int thinking, json_t **msg, dsf_err *e) {
    *msg = NULL;
    if (!dsf_utf8_valid(text, n)) return dsf_fail(e, "chat parse: the completion is not valid UTF-8");
    char tc_start[40], invoke_open[40], block_end[40];
    snprintf(tc_start, sizeof tc_start, "\n\n<｜DSML｜%s", dsf_chat_tag(v, 0));
    snprintf(invoke_open, sizeof invoke_open, "<｜DSML｜%s", dsf_chat_tag(v, 1));
    snprintf(block_end, sizeof block_end, "</｜DSML｜%s>", dsf_chat_tag(v, 0));
    parse_ctx p = {text, n, 0, e};
    size_t at, r_end = 0, c_start = 0, c_end;
    if (thinking) {
        if (earliest(&p, "</think>", tc_start, &at) != 0)
            return dsf_fail(e, "chat parse: missing </think> before the content or tool calls");
        r_end = at;
        p.pos = c_start = at + strlen("</think>");
    }
    int which = earliest(&p, DSF_CHAT_EOS, tc_start, &at);
    if (which < 0) return dsf_fail(e, "chat parse: missing EOS");
    c_end = at;
    json_t *calls = json_array();
    if (which == 0) {
        p.pos = at + strlen(DSF_CHAT_EOS);
    } else {
        p.pos = at + strlen(tc_start);
        for (;;) {
            which = earliest(&p, invoke_open, block_end, &at);
            if (which < 0 || !skipped_is(&p, at, ">\n")) {
                json_decref(calls);
                return dsf_fail(e, "chat parse: byte %zu: expected \">\\n\" then an invoke or the block end", p.pos);
            }
            p.pos = at + strlen(which ? block_end : invoke_open);
            if (which) break;
            if (parse_invoke(&p, v, calls)) {
                json_decref(calls);
                return -1;
            }
        }
        if (n - p.pos >= strlen(DSF_CHAT_EOS) && !memcmp(text + p.pos, DSF_CHAT_EOS, strlen(DSF_CHAT_EOS)))
            p.pos += strlen(DSF_CHAT_EOS);
    }
    if (p.pos != n || has_special(text, r_end) || has_special(text + c_start, c_end - c_start)) {
        json_decref(calls);
        return dsf_fail(e, "chat parse: unexpected text after byte %zu, or a special token in content/reasoning",
                        p.pos);
    }
    *msg = json_pack("{s:s,s:s%,s:s%,s:o}", "role", "assistant", "content", text + c_start, c_end - c_start,
                     "reasoning_content", text, r_end, "tool_calls", calls);
    return *msg ? 0 : dsf_fail(e, "chat parse: the message could not be built");
}
