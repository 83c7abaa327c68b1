#include <stdlib.h>
#include <string.h>

#include "tok/chat_internal.h"
#include "tok/chat_stream.h"

#define OPEN "<｜DSML｜"
#define CLOSE "</｜DSML｜"
// Longest tag, invoke head or parameter head kept while looking for its end; past it, it is skipped as malformed.
#define HEAD_LIMIT 1024
#define NPAT 9

typedef enum stage {
    ST_REASONING,
    ST_CONTENT,
    ST_BLOCK,
    ST_TAG,
    ST_INVOKE,
    ST_PARAM,
    ST_VALUE,
    ST_AFTER,
    ST_DONE,
    ST_N
} stage;

// The literal patterns each stage looks for (specific tags before the bare OPEN); text that could become one is held.
static const char *const PATS[ST_N][NPAT] = {
    [ST_REASONING] = {OPEN, "</think>", DSF_CHAT_EOS},
    [ST_CONTENT] = {OPEN, "</think>", DSF_CHAT_EOS},
    [ST_BLOCK] = {OPEN "tool_calls", OPEN " calls", OPEN "invoke", OPEN " invoke", OPEN "parameter", OPEN " parameter",
                  CLOSE, OPEN, DSF_CHAT_EOS},
    [ST_TAG] = {">"},
    [ST_AFTER] = {DSF_CHAT_EOS},
};

// Invoke heads, parameter heads and values end where the strict parser ends them, in the spelling they opened with.
static const char *const SPELLED[2][3][NPAT] = {
    {{OPEN "parameter", CLOSE "invoke"},
     {"\" string=\"true\">", "\" string=\"false\">", CLOSE "parameter"},
     {CLOSE "parameter"}},
    {{OPEN " parameter", CLOSE " invoke"},
     {"\" string=\"true\">", "\" string=\"false\">", CLOSE " parameter"},
     {CLOSE " parameter"}},
};

struct dsf_chat_stream {
    dsf_chat_variant variant;
    dsf_chat_ev_fn fn;
    void *user;
    stage st;
    // sp: the open invoke or parameter tag was spelled with V4.1's space; tag_close: ST_TAG reads a closing tag.
    int sp, tag_close, in_call, param_live, param_str, n_started, saw_eos, finished;
    unsigned flags;
    // The last bytes fed, to see EOS text at the end where a name or value swallowed it.
    char tail[32];
    size_t tail_n;
    dsf_tok_buf pend, tag, reasoning, content, name, args, esc, fix;
    json_t *calls, *keys;
};

dsf_chat_stream *dsf_chat_stream_open(dsf_chat_variant v, int thinking, dsf_chat_ev_fn fn, void *user) {
    dsf_chat_stream *s = dsf_calloc(1, sizeof *s);
    s->variant = v;
    s->fn = fn;
    s->user = user;
    s->st = thinking ? ST_REASONING : ST_CONTENT;
    s->calls = json_array();
    return s;
}

void dsf_chat_stream_close(dsf_chat_stream *s) {
    if (!s) return;
    dsf_tok_buf *bufs[] = {&s->pend, &s->tag, &s->reasoning, &s->content, &s->name, &s->args, &s->esc, &s->fix};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) dsf_tok_buf_free(bufs[i]);
    json_decref(s->calls);
    json_decref(s->keys);
    free(s);
}

// Invalid UTF-8 leaves as U+FFFD; hold-back never splits a sequence, so pieces convert as the whole text would.
static void emit(dsf_chat_stream *s, dsf_chat_ev_kind kind, const char *p, size_t n) {
    dsf_tok_buf *acc = kind == DSF_CHAT_EV_REASONING   ? &s->reasoning
                       : kind == DSF_CHAT_EV_CONTENT   ? &s->content
                       : kind == DSF_CHAT_EV_TOOL_ARGS ? &s->args
                       : kind == DSF_CHAT_EV_TOOL_NAME ? &s->name
                                                       : NULL;
    if (acc && acc != &s->name && !n) return;
    if (!dsf_utf8_valid(p, n)) {
        s->fix.n = 0;
        dsf_utf8_lossy(p, n, &s->fix);
        p = s->fix.p, n = s->fix.n;
    }
    if (acc) dsf_tok_buf_put(acc, p, n);
    int tool = kind >= DSF_CHAT_EV_TOOL_START ? s->n_started - 1 : -1;
    dsf_chat_ev ev = {kind, tool, p, n};
    if (s->fn) s->fn(s->user, &ev);
}

static void emit_str(dsf_chat_stream *s, dsf_chat_ev_kind kind, const char *str) {
    emit(s, kind, str, strlen(str));
}

// A parameter value piece: JSON-escaped (byte by byte, so pieces concatenate) for string="true", raw otherwise.
static void emit_value(dsf_chat_stream *s, const char *p, size_t n) {
    if (!s->param_live || !n) return;
    if (!s->param_str) {
        emit(s, DSF_CHAT_EV_TOOL_ARGS, p, n);
        return;
    }
    s->esc.n = 0;
    dsf_json_dumps_str(p, n, &s->esc);
    emit(s, DSF_CHAT_EV_TOOL_ARGS, s->esc.p + 1, s->esc.n - 2);
}

// Bytes at the end of p[0..n) that begin a UTF-8 sequence a later piece may complete.
static size_t utf8_tail(const char *p, size_t n) {
    for (size_t k = 1; k <= 3 && k <= n; k++) {
        unsigned char c = (unsigned char)p[n - k];
        if ((c & 0xC0) == 0x80) continue;
        size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
        return need > k ? k : 0;
    }
    return 0;
}

static const char *const *pats_of(const dsf_chat_stream *s) {
    return s->st >= ST_INVOKE && s->st <= ST_VALUE ? SPELLED[s->sp][s->st - ST_INVOKE] : PATS[s->st];
}

// The earliest complete pattern (first listed on a tie), or -1 while a pattern's proper prefix starts at or before it.
static int scan(const char *const *pats, const char *p, size_t n, int final, size_t *at, size_t *hold) {
    int best = -1;
    *hold = n;
    for (int k = 0; k < NPAT && pats[k]; k++) {
        size_t len = strlen(pats[k]);
        const char *hit = memmem(p, n, pats[k], len);
        if (hit && (best < 0 || (size_t)(hit - p) < *at)) best = k, *at = (size_t)(hit - p);
        for (size_t j = n > len ? n - len + 1 : 0; !final && j < n; j++)
            if (j < *hold && !memcmp(p + j, pats[k], n - j)) *hold = j;
    }
    if (best >= 0 && *hold <= *at) best = -1;
    return best;
}

static void call_end(dsf_chat_stream *s) {
    emit_str(s, DSF_CHAT_EV_TOOL_ARGS, "}");
    json_array_append_new(s->calls, json_pack("{s:s,s:{s:s%,s:s%}}", "type", "function", "function", "name", s->name.p,
                                              s->name.n, "arguments", s->args.p, s->args.n));
    emit(s, DSF_CHAT_EV_TOOL_END, NULL, 0);
    s->in_call = 0;
}

static void call_start(dsf_chat_stream *s, const char *name, size_t n) {
    if (s->in_call) {
        s->flags |= DSF_CHAT_TOL_MARKUP;
        call_end(s);
    }
    s->n_started++;
    s->in_call = 1;
    s->name.n = s->args.n = 0;
    json_decref(s->keys);
    s->keys = json_object();
    emit(s, DSF_CHAT_EV_TOOL_START, NULL, 0);
    emit(s, DSF_CHAT_EV_TOOL_NAME, name, n);
    emit_str(s, DSF_CHAT_EV_TOOL_ARGS, "{");
}

static void param_start(dsf_chat_stream *s, const char *key, size_t n, int is_str) {
    s->param_live = s->in_call;
    s->param_str = is_str;
    if (!s->in_call) {
        s->flags |= DSF_CHAT_TOL_MARKUP;
        return;
    }
    s->esc.n = 0;
    dsf_tok_buf_put(&s->esc, key, n);
    if (json_object_get(s->keys, s->esc.p)) s->flags |= DSF_CHAT_TOL_DUP_PARAM;
    json_object_set_new(s->keys, s->esc.p, json_true());
    if (s->args.n > 1) emit_str(s, DSF_CHAT_EV_TOOL_ARGS, ", ");
    s->esc.n = 0;
    dsf_json_dumps_str(key, n, &s->esc);
    dsf_tok_buf_puts(&s->esc, is_str ? ": \"" : ": ");
    emit(s, DSF_CHAT_EV_TOOL_ARGS, s->esc.p, s->esc.n);
}

static int starts(const char *p, size_t n, const char *word) {
    size_t w = strlen(word);
    return n >= w && !memcmp(p, word, w);
}

static int is_ws(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static void spelling(dsf_chat_stream *s, int spaced) {
    if (spaced != (s->variant == DSF_CHAT_V41)) s->flags |= DSF_CHAT_TOL_OTHER_SPELLING;
}

// The text between <｜DSML｜invoke and the next parameter or the invoke's end: \s*name="NAME">\n (one more \n allowed).
static void invoke_head(dsf_chat_stream *s, const char *t, size_t n) {
    size_t i = 0, e = n;
    while (i < n && is_ws(t[i])) i++;
    while (e > i && is_ws(t[e - 1])) e--;
    if (!starts(t + i, e - i, "name=\"") || e - i < 8 || memcmp(t + e - 2, "\">", 2)) {
        s->flags |= DSF_CHAT_TOL_MARKUP;
        return;
    }
    int strict_end = (n - e == 1 || n - e == 2) && !memcmp(t + e, "\n\n", n - e);
    if (!strict_end || memchr(t + i, '\n', e - i)) s->flags |= DSF_CHAT_TOL_MARKUP;
    call_start(s, t + i + 6, e - 2 - i - 6);
}

// The text between <｜DSML｜parameter and its string="..."> end: name="KEY", exactly one space before in the strict form.
static void param_head(dsf_chat_stream *s, const char *t, size_t n, int is_str) {
    size_t i = 0;
    while (i < n && is_ws(t[i])) i++;
    if (i != 1 || t[0] != ' ') s->flags |= DSF_CHAT_TOL_MARKUP;
    if (!starts(t + i, n - i, "name=\"")) {
        s->flags |= DSF_CHAT_TOL_MARKUP;
        s->param_live = 0;
        return;
    }
    param_start(s, t + i + 6, n - i - 6, is_str);
}

static void close_tag(dsf_chat_stream *s, const char *t, size_t n) {
    int spaced = n && t[0] == ' ';
    const char *w = t + spaced;
    size_t wn = n - (size_t)spaced;
    s->st = ST_BLOCK;
    if (wn == 6 && !memcmp(w, "invoke", 6) && s->in_call) {
        spelling(s, spaced);
        call_end(s);
    } else if ((wn == 10 && !memcmp(w, "tool_calls", 10)) || (wn == 5 && !memcmp(w, "calls", 5))) {
        spelling(s, wn == 5);
        if (s->in_call) s->flags |= DSF_CHAT_TOL_MARKUP, call_end(s);
        s->st = ST_AFTER;
    } else {
        s->flags |= DSF_CHAT_TOL_MARKUP;
    }
}

// Text of the current stage that holds no pattern; returns the bytes used (a head stops at HEAD_LIMIT).
static size_t on_text(dsf_chat_stream *s, const char *p, size_t n) {
    switch (s->st) {
    case ST_REASONING: emit(s, DSF_CHAT_EV_REASONING, p, n); break;
    case ST_CONTENT: emit(s, DSF_CHAT_EV_CONTENT, p, n); break;
    case ST_VALUE: emit_value(s, p, n); break;
    case ST_BLOCK:
        for (size_t i = 0; i < n; i++)
            if (!is_ws(p[i]) && p[i] != '>') s->flags |= DSF_CHAT_TOL_MARKUP;
        break;
    case ST_TAG:
    case ST_INVOKE:
    case ST_PARAM:
        if (n > HEAD_LIMIT - s->tag.n) n = HEAD_LIMIT - s->tag.n;
        dsf_tok_buf_put(&s->tag, p, n);
        if (s->tag.n == HEAD_LIMIT) s->flags |= DSF_CHAT_TOL_MARKUP, s->param_live = 0, s->st = ST_BLOCK;
        break;
    case ST_AFTER:
    case ST_DONE:
        if (n) s->flags |= DSF_CHAT_TOL_TRAILING;
        break;
    default: DSF_ASSERT(0);
    }
    return n;
}

static void end_at_eos(dsf_chat_stream *s) {
    if (s->st == ST_REASONING || s->st == ST_BLOCK) s->flags |= DSF_CHAT_TOL_UNCLOSED;
    if (s->in_call) s->flags |= DSF_CHAT_TOL_PARTIAL_CALL;
    s->in_call = 0;
    s->saw_eos = 1;
    s->st = ST_DONE;
}

static void enter(dsf_chat_stream *s, stage st) {
    s->tag.n = 0;
    s->st = st;
}

// A pattern of the block: which tag opens, or the closing-tag prefix, or EOS.
static size_t block_match(dsf_chat_stream *s, int k, size_t used) {
    if (k <= 1) spelling(s, k), s->tag_close = 0, enter(s, ST_TAG);
    if (k >= 2 && k <= 5) spelling(s, k & 1), s->sp = k & 1, enter(s, k <= 3 ? ST_INVOKE : ST_PARAM);
    if (k == 6) s->tag_close = 1, enter(s, ST_TAG);
    if (k == 7) s->flags |= DSF_CHAT_TOL_MARKUP, s->tag_close = 0, enter(s, ST_TAG);
    if (k == 8) end_at_eos(s);
    return used;
}

// Pattern k of the current stage found at p + at; returns the bytes used (a pattern the next stage reads stays).
static size_t on_match(dsf_chat_stream *s, int k, const char *p, size_t at) {
    size_t len = strlen(pats_of(s)[k]);
    switch (s->st) {
    case ST_REASONING:
    case ST_CONTENT:
        if (k == 2) {
            on_text(s, p, at);
            end_at_eos(s);
            return at + len;
        }
        if (k == 1) {
            on_text(s, p, at);
            if (s->st == ST_CONTENT) s->flags |= DSF_CHAT_TOL_STRAY_THINK;
            s->st = ST_CONTENT;
            return at + len;
        }
        // The "\n\n" that opens a tool block is markup, not text; longer runs keep their first newlines.
        size_t nl = 0;
        while (nl < at && nl < 2 && p[at - 1 - nl] == '\n') nl++;
        on_text(s, p, at - nl);
        if (s->st == ST_REASONING) s->flags |= DSF_CHAT_TOL_NO_THINK_END;
        if (nl < 2) s->flags |= DSF_CHAT_TOL_BLOCK_SPACING;
        s->st = ST_BLOCK;
        return at;
    case ST_BLOCK: on_text(s, p, at); return block_match(s, k, at + len);
    case ST_TAG:
        if (at > HEAD_LIMIT - s->tag.n) return on_text(s, p, at);
        dsf_tok_buf_put(&s->tag, p, at);
        if (s->tag_close) {
            close_tag(s, s->tag.p, s->tag.n);
        } else {
            for (size_t i = 0; i < s->tag.n; i++)
                if (!is_ws(s->tag.p[i])) s->flags |= DSF_CHAT_TOL_MARKUP;
            s->st = ST_BLOCK;
        }
        return at + len;
    case ST_INVOKE:
    case ST_PARAM:
        if (at > HEAD_LIMIT - s->tag.n) return on_text(s, p, at);
        dsf_tok_buf_put(&s->tag, p, at);
        if (s->st == ST_INVOKE) {
            invoke_head(s, s->tag.p, s->tag.n);
        } else if (k < 2) {
            param_head(s, s->tag.p, s->tag.n, k == 0);
            s->st = ST_VALUE;
            return at + len;
        } else {
            s->flags |= DSF_CHAT_TOL_MARKUP;
        }
        s->st = ST_BLOCK;
        return at;
    case ST_VALUE:
        emit_value(s, p, at);
        if (s->param_live && s->param_str) emit_str(s, DSF_CHAT_EV_TOOL_ARGS, "\"");
        s->param_live = 0;
        s->st = ST_BLOCK;
        return at + len;
    case ST_AFTER:
        on_text(s, p, at);
        end_at_eos(s);
        return at + len;
    default: DSF_ASSERT(0); return 0;
    }
}

// Decides all that the pending text allows; final: no more text comes, so nothing is held back.
static void run(dsf_chat_stream *s, int final) {
    size_t off = 0;
    while (off < s->pend.n) {
        const char *p = s->pend.p + off;
        size_t n = s->pend.n - off, at = 0, hold;
        stage st = s->st;
        int k = scan(pats_of(s), p, n, final, &at, &hold);
        if (k >= 0) {
            off += on_match(s, k, p, at);
            continue;
        }
        size_t cut = hold;
        if (!final && (st == ST_REASONING || st == ST_CONTENT))
            while (cut > 0 && p[cut - 1] == '\n') cut--;
        if (!final && cut == n) cut -= utf8_tail(p, n);
        off += on_text(s, p, cut);
        if (s->st == st && !final) break;
    }
    if (off) memmove(s->pend.p, s->pend.p + off, s->pend.n - off);
    s->pend.n -= off;
}

void dsf_chat_stream_feed(dsf_chat_stream *s, const char *text, size_t n) {
    DSF_ASSERT(!s->finished);
    size_t keep = n >= sizeof s->tail ? 0 : s->tail_n + n > sizeof s->tail ? sizeof s->tail - n : s->tail_n;
    memmove(s->tail, s->tail + s->tail_n - keep, keep);
    size_t take = n > sizeof s->tail ? sizeof s->tail : n;
    memcpy(s->tail + keep, text + n - take, take);
    s->tail_n = keep + take;
    dsf_tok_buf_put(&s->pend, text, n);
    run(s, 0);
}

void dsf_chat_stream_finish(dsf_chat_stream *s, int stopped_on_eos) {
    DSF_ASSERT(!s->finished);
    run(s, 1);
    if (s->st != ST_DONE && s->st != ST_CONTENT && s->st != ST_AFTER) s->flags |= DSF_CHAT_TOL_UNCLOSED;
    if (s->in_call) s->flags |= DSF_CHAT_TOL_PARTIAL_CALL;
    size_t eos = strlen(DSF_CHAT_EOS);
    s->saw_eos |= stopped_on_eos || (s->tail_n >= eos && !memcmp(s->tail + s->tail_n - eos, DSF_CHAT_EOS, eos));
    s->finished = 1;
}

json_t *dsf_chat_stream_result(const dsf_chat_stream *s) {
    DSF_ASSERT(s->finished);
    return json_pack("{s:s,s:s%,s:s%,s:o}", "role", "assistant", "content", s->content.p ? s->content.p : "",
                     s->content.n, "reasoning_content", s->reasoning.p ? s->reasoning.p : "", s->reasoning.n,
                     "tool_calls", json_deep_copy(s->calls));
}

dsf_chat_finish dsf_chat_stream_finish_reason(const dsf_chat_stream *s) {
    DSF_ASSERT(s->finished);
    if (json_array_size(s->calls)) return DSF_CHAT_FINISH_TOOL_CALLS;
    return s->saw_eos ? DSF_CHAT_FINISH_STOP : DSF_CHAT_FINISH_LENGTH;
}

unsigned dsf_chat_stream_flags(const dsf_chat_stream *s) {
    return s->flags;
}

const char *dsf_chat_finish_name(dsf_chat_finish f) {
    return f == DSF_CHAT_FINISH_TOOL_CALLS ? "tool_calls" : f == DSF_CHAT_FINISH_LENGTH ? "length" : "stop";
}
