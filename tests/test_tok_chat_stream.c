#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "tok/chat.h"
#include "tok/chat_stream.h"

#define EOS "<｜end▁of▁sentence｜>"
#define MAX_TOOLS 16

// Events merged into runs (consecutive deltas of one kind and call joined), so that any chunking must log the same.
typedef struct ev_log {
    dsf_tok_buf runs, reasoning, content, name[MAX_TOOLS], args[MAX_TOOLS];
    int last_kind, last_tool, starts, ends, bad_utf8;
} ev_log;

static void log_free(ev_log *l) {
    dsf_tok_buf_free(&l->runs), dsf_tok_buf_free(&l->reasoning), dsf_tok_buf_free(&l->content);
    for (int i = 0; i < MAX_TOOLS; i++) dsf_tok_buf_free(&l->name[i]), dsf_tok_buf_free(&l->args[i]);
}

static void on_event(void *user, const dsf_chat_ev *ev) {
    ev_log *l = user;
    int delta =
        ev->kind == DSF_CHAT_EV_REASONING || ev->kind == DSF_CHAT_EV_CONTENT || ev->kind == DSF_CHAT_EV_TOOL_ARGS;
    if (!delta || (int)ev->kind != l->last_kind || ev->tool != l->last_tool) {
        char head[32];
        snprintf(head, sizeof head, "\n#%d/%d:", (int)ev->kind, ev->tool);
        dsf_tok_buf_puts(&l->runs, head);
    }
    dsf_tok_buf_put(&l->runs, ev->text, ev->n);
    l->last_kind = (int)ev->kind, l->last_tool = ev->tool;
    if (delta && !dsf_utf8_valid(ev->text, ev->n)) l->bad_utf8 = 1;
    int t = ev->tool >= 0 && ev->tool < MAX_TOOLS ? ev->tool : 0;
    if (ev->kind == DSF_CHAT_EV_REASONING) dsf_tok_buf_put(&l->reasoning, ev->text, ev->n);
    if (ev->kind == DSF_CHAT_EV_CONTENT) dsf_tok_buf_put(&l->content, ev->text, ev->n);
    if (ev->kind == DSF_CHAT_EV_TOOL_NAME) dsf_tok_buf_put(&l->name[t], ev->text, ev->n);
    if (ev->kind == DSF_CHAT_EV_TOOL_ARGS) dsf_tok_buf_put(&l->args[t], ev->text, ev->n);
    l->starts += ev->kind == DSF_CHAT_EV_TOOL_START, l->ends += ev->kind == DSF_CHAT_EV_TOOL_END;
}

typedef struct outcome {
    ev_log log;
    json_t *msg;
    unsigned flags;
    dsf_chat_finish finish;
} outcome;

static void outcome_free(outcome *o) {
    log_free(&o->log);
    json_decref(o->msg);
    memset(o, 0, sizeof *o);
}

// mode 0: one piece; 1: byte by byte; 2: random pieces of 0..17 bytes from seed.
static void run_stream(const char *t, size_t n, dsf_chat_variant v, int thinking, int mode, uint32_t seed, int stopped,
                       outcome *o) {
    memset(o, 0, sizeof *o);
    o->log.last_kind = -1;
    dsf_chat_stream *s = dsf_chat_stream_open(v, thinking, on_event, &o->log);
    for (size_t i = 0; i < n;) {
        size_t k = mode == 0 ? n : 1;
        if (mode == 2) seed = seed * 1664525u + 1013904223u, k = (seed >> 24) % 18;
        if (k > n - i) k = n - i;
        dsf_chat_stream_feed(s, t + i, k);
        i += k;
    }
    dsf_chat_stream_finish(s, stopped);
    o->msg = dsf_chat_stream_result(s);
    o->flags = dsf_chat_stream_flags(s);
    o->finish = dsf_chat_stream_finish_reason(s);
    dsf_chat_stream_close(s);
}

static const char *str_of(const json_t *m, const char *key) {
    const char *s = json_string_value(json_object_get(m, key));
    return s ? s : "";
}

// The event deltas concatenate to the result: reasoning, content, each call's name and arguments.
static int log_matches(const outcome *o) {
    json_t *calls = json_object_get(o->msg, "tool_calls");
    int ok = !strcmp(o->log.reasoning.p ? o->log.reasoning.p : "", str_of(o->msg, "reasoning_content")) &&
             !strcmp(o->log.content.p ? o->log.content.p : "", str_of(o->msg, "content")) &&
             o->log.ends == (int)json_array_size(calls);
    for (size_t i = 0; ok && i < json_array_size(calls) && i < MAX_TOOLS; i++) {
        json_t *f = json_object_get(json_array_get(calls, i), "function");
        ok = !strcmp(o->log.name[i].p, str_of(f, "name")) && !strcmp(o->log.args[i].p, str_of(f, "arguments"));
    }
    return ok;
}

// Every chunking gives the events and the result of one piece; returns the number of chunkings that differed.
static int check_chunkings(const char *name, const char *t, size_t n, dsf_chat_variant v, int thinking, int stopped,
                           outcome *whole) {
    run_stream(t, n, v, thinking, 0, 0, stopped, whole);
    int bad = 0;
    for (int r = 0; r < 10; r++) {
        outcome o;
        run_stream(t, n, v, thinking, r == 0 ? 1 : 2, 0x9e3779b9u * (uint32_t)r + 7, stopped, &o);
        int same = o.log.runs.n == whole->log.runs.n &&
                   (!o.log.runs.n || !memcmp(o.log.runs.p, whole->log.runs.p, o.log.runs.n)) &&
                   json_equal(o.msg, whole->msg) && o.flags == whole->flags && o.finish == whole->finish &&
                   log_matches(&o);
        TEST_ASSERT_MSG(same, "%s: chunking %d differs from one piece", name, r);
        bad += !same;
        outcome_free(&o);
    }
    TEST_ASSERT_MSG(log_matches(whole) && !whole->log.bad_utf8, "%s: event deltas do not concatenate to the result",
                    name);
    return bad;
}

// A completion the strict parser accepts: the stream must agree with it in every chunking, with no tolerance used.
static void check_valid(const char *name, const char *t, size_t n, dsf_chat_variant v, int thinking) {
    json_t *strict = NULL;
    dsf_err e = {{0}};
    TEST_ASSERT_MSG(!dsf_chat_parse(t, n, v, thinking, &strict, &e), "%s: strict parse: %s", name, e.msg);
    outcome o;
    check_chunkings(name, t, n, v, thinking, 0, &o);
    size_t calls = json_array_size(json_object_get(strict, "tool_calls"));
    TEST_ASSERT_MSG(json_equal(o.msg, strict), "%s: stream result differs from the strict parser", name);
    TEST_ASSERT_MSG(o.flags == 0 && !o.log.bad_utf8, "%s: flags 0x%x, utf8 %d", name, o.flags, o.log.bad_utf8);
    TEST_ASSERT(o.finish == (calls ? DSF_CHAT_FINISH_TOOL_CALLS : DSF_CHAT_FINISH_STOP));
    TEST_ASSERT(o.log.starts == (int)calls && o.log.ends == (int)calls);
    outcome_free(&o);
    // Generation stopped on id 1 without its text: the same result.
    if (n >= strlen(EOS) && !memcmp(t + n - strlen(EOS), EOS, strlen(EOS))) {
        check_chunkings(name, t, n - strlen(EOS), v, thinking, 1, &o);
        TEST_ASSERT_MSG(json_equal(o.msg, strict) && o.flags == 0, "%s: without EOS text: flags 0x%x", name, o.flags);
        outcome_free(&o);
    }
    json_decref(strict);
}

static int opts_of(const char *line, dsf_chat_variant *v, int *thinking) {
    char name[16] = "v4";
    const char *a = strstr(line, "variant="), *b = strstr(line, "thinking=");
    if (a) sscanf(a + 8, "%15s", name);
    *thinking = b ? atoi(b + 9) : 1;
    return dsf_chat_variant_parse(name, v);
}

// Each assistant turn of a rendered golden prompt that ends in EOS is a completion: after <think> in thinking form.
static int turns_of(const char *name, const char *p, dsf_chat_variant v) {
    const char *a = "<｜Assistant｜>";
    int n = 0;
    for (const char *at = strstr(p, a); at; at = strstr(at + 1, a)) {
        const char *body = at + strlen(a), *end = strstr(body, EOS), *next = strstr(body, a);
        int thinking = !strncmp(body, "<think>", 7);
        if (!end || (next && next < end) || (!thinking && strncmp(body, "</think>", 8))) continue;
        body += thinking ? 7 : 8;
        char label[160];
        snprintf(label, sizeof label, "%s turn %d", name, n);
        check_valid(label, body, (size_t)(end - body) + strlen(EOS), v, thinking);
        n++;
    }
    return n;
}

static int golden_file(const char *path) {
    FILE *f = fopen(path, "r");
    TEST_ASSERT_MSG(f != NULL, "%s", path);
    if (!f) return 0;
    char *line = NULL, name[128] = "";
    size_t cap = 0;
    dsf_chat_variant v = DSF_CHAT_V4;
    int thinking = 1, parse = 0, n = 0;
    while (getline(&line, &cap, f) > 0) {
        if (!strncmp(line, "case ", 5)) snprintf(name, sizeof name, "%.*s", (int)strcspn(line + 5, "\n"), line + 5);
        if (!strncmp(line, "opts ", 5)) TEST_ASSERT(!opts_of(line, &v, &thinking));
        if (!strncmp(line, "parse ", 6) || !strncmp(line, "messages ", 9)) parse = line[0] == 'p';
        json_t *j = NULL;
        if (parse && !strncmp(line, "parse ", 6)) j = json_loads(line + 6, JSON_DECODE_ANY, NULL);
        if (!parse && !strncmp(line, "expect ", 7) && strncmp(line + 7, "error", 5))
            j = json_loads(line + 7, JSON_DECODE_ANY, NULL);
        if (!j) continue;
        json_t *ok = NULL;
        if (parse && !dsf_chat_parse(json_string_value(j), json_string_length(j), v, thinking, &ok, NULL)) {
            check_valid(name, json_string_value(j), json_string_length(j), v, thinking);
            n++;
        } else if (!parse) {
            n += turns_of(name, json_string_value(j), v);
        }
        json_decref(ok), json_decref(j);
    }
    free(line);
    fclose(f);
    return n;
}

static void test_golden_completions(void) {
    int n = golden_file("tests/vectors/tok_chat.txt") + golden_file("tests/vectors/tok_chat_gold.txt");
    printf("golden completions: %d\n", n);
    TEST_ASSERT(n >= 15);
}

#define V4_BLOCK(calls) "\n\n<｜DSML｜tool_calls>\n" calls "</｜DSML｜tool_calls>"
#define V4_CALL(name, params) "<｜DSML｜invoke name=\"" name "\">\n" params "</｜DSML｜invoke>\n"
#define V4_STR(key, val) "<｜DSML｜parameter name=\"" key "\" string=\"true\">" val "</｜DSML｜parameter>\n"
#define V4_RAW(key, val) "<｜DSML｜parameter name=\"" key "\" string=\"false\">" val "</｜DSML｜parameter>\n"

// Completions the strict parser accepts, written for the edges: newline runs, '<' near tags, escapes, UTF-8, no args.
static void test_valid_edges(void) {
    static const struct {
        int thinking;
        const char *text;
    } cases[] = {
        {1, "\n\nr\n\n</think>\n\nc\n\n\n" V4_BLOCK(V4_CALL("now", "\n")) EOS},
        {0, "a < b <｜ c </ d\n<\n\n" V4_BLOCK(
                V4_CALL("f", V4_STR("q", "x\"y\\z\n\t\x01</p>é你💡") V4_RAW("o", "{\"k\":[1, 2.50]}"))) EOS},
        {1, "</think>" V4_BLOCK(V4_CALL("f", V4_STR("", "") V4_STR("k k", "v")) V4_CALL("", "\n")) EOS},
        {0, "plain <thin k> text\n\n" EOS},
        {0, "" V4_BLOCK(V4_CALL("f", V4_STR("a", "<｜DSML｜ not a close </｜DSML｜invoke>"))) EOS},
        {0, "x" V4_BLOCK(V4_CALL("f", V4_RAW("n", "3")))},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char name[32];
        snprintf(name, sizeof name, "edge %zu", i);
        check_valid(name, cases[i].text, strlen(cases[i].text), DSF_CHAT_V4, cases[i].thinking);
    }
}

static void test_tolerant(void) {
    static const struct {
        const char *name;
        dsf_chat_variant v;
        int thinking, stopped;
        const char *text, *reasoning, *content, *args0;
        size_t calls;
        dsf_chat_finish finish;
        unsigned flags;
    } cases[] = {
        {"empty chat answer", DSF_CHAT_V4, 0, 1, "", "", "", NULL, 0, DSF_CHAT_FINISH_STOP, 0},
        {"reasoning cut by length", DSF_CHAT_V4, 1, 0, "Let me think\n<｜DS", "Let me think\n<｜DS", "", NULL, 0,
         DSF_CHAT_FINISH_LENGTH, DSF_CHAT_TOL_UNCLOSED},
        {"EOS inside reasoning", DSF_CHAT_V4, 1, 1, "hmm", "hmm", "", NULL, 0, DSF_CHAT_FINISH_STOP,
         DSF_CHAT_TOL_UNCLOSED},
        {"block inside reasoning", DSF_CHAT_V4, 1, 0, "Need data." V4_BLOCK(V4_CALL("f", V4_STR("a", "x"))) EOS,
         "Need data.", "", "{\"a\": \"x\"}", 1, DSF_CHAT_FINISH_TOOL_CALLS, DSF_CHAT_TOL_NO_THINK_END},
        {"call cut by length", DSF_CHAT_V41, 1, 0,
         "r</think>ok\n\n<｜DSML｜ calls>\n<｜DSML｜ invoke name=\"f\">\n<｜DSML｜ parameter name=\"a\" "
         "string=\"true\">ha",
         "r", "ok", NULL, 0, DSF_CHAT_FINISH_LENGTH, DSF_CHAT_TOL_PARTIAL_CALL | DSF_CHAT_TOL_UNCLOSED},
        {"EOS inside an invoke head", DSF_CHAT_V4, 0, 0, "\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"f\">\n" EOS,
         "", "", NULL, 0, DSF_CHAT_FINISH_STOP, DSF_CHAT_TOL_UNCLOSED},
        {"EOS inside a value", DSF_CHAT_V4, 0, 0,
         "\n\n<｜DSML｜tool_calls>\n"
         "<｜DSML｜invoke name=\"f\">\n<｜DSML｜parameter name=\"a\" string=\"true\">x" EOS,
         "", "", NULL, 0, DSF_CHAT_FINISH_STOP, DSF_CHAT_TOL_UNCLOSED | DSF_CHAT_TOL_PARTIAL_CALL},
        {"block left open after a call", DSF_CHAT_V4, 0, 1, "\n\n<｜DSML｜tool_calls>\n" V4_CALL("f", "\n"), "", "",
         "{}", 1, DSF_CHAT_FINISH_TOOL_CALLS, DSF_CHAT_TOL_UNCLOSED},
        {"stray </think> in content", DSF_CHAT_V4, 0, 0, "a</think>b" EOS, "", "ab", NULL, 0, DSF_CHAT_FINISH_STOP,
         DSF_CHAT_TOL_STRAY_THINK},
        {"text after the block", DSF_CHAT_V4, 0, 0, "c" V4_BLOCK(V4_CALL("f", "\n")) "\nmore" EOS, "", "c", "{}", 1,
         DSF_CHAT_FINISH_TOOL_CALLS, DSF_CHAT_TOL_TRAILING},
        {"text after EOS", DSF_CHAT_V4, 0, 0, "c" EOS "junk", "", "c", NULL, 0, DSF_CHAT_FINISH_STOP,
         DSF_CHAT_TOL_TRAILING},
        {"V4 tags under V4.1", DSF_CHAT_V41, 1, 0, "r</think>c" V4_BLOCK(V4_CALL("f", V4_RAW("n", "3"))) EOS, "r", "c",
         "{\"n\": 3}", 1, DSF_CHAT_FINISH_TOOL_CALLS, DSF_CHAT_TOL_OTHER_SPELLING},
        {"block without a blank line", DSF_CHAT_V4, 0, 0,
         "x\n<｜DSML｜tool_calls>\n" V4_CALL("now", "\n") "</｜DSML｜tool_calls>", "", "x", "{}", 1,
         DSF_CHAT_FINISH_TOOL_CALLS, DSF_CHAT_TOL_BLOCK_SPACING},
        {"repeated parameter", DSF_CHAT_V4, 0, 0, V4_BLOCK(V4_CALL("f", V4_STR("a", "1") V4_RAW("a", "2"))), "", "",
         "{\"a\": \"1\", \"a\": 2}", 1, DSF_CHAT_FINISH_TOOL_CALLS, DSF_CHAT_TOL_DUP_PARAM},
        {"unknown tag", DSF_CHAT_V4, 0, 0, "hi\n\n<｜DSML｜foo>bar" EOS, "", "hi", NULL, 0, DSF_CHAT_FINISH_STOP,
         DSF_CHAT_TOL_MARKUP | DSF_CHAT_TOL_UNCLOSED},
        {"parameter without string=", DSF_CHAT_V4, 0, 0,
         V4_BLOCK(V4_CALL("f", "<｜DSML｜parameter name=\"a\">1</｜DSML｜parameter>\n" V4_STR("b", "2"))), "", "",
         "{\"b\": \"2\"}", 1, DSF_CHAT_FINISH_TOOL_CALLS, DSF_CHAT_TOL_MARKUP},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        outcome o;
        check_chunkings(cases[i].name, cases[i].text, strlen(cases[i].text), cases[i].v, cases[i].thinking,
                        cases[i].stopped, &o);
        json_t *calls = json_object_get(o.msg, "tool_calls");
        const char *args0 = str_of(json_object_get(json_array_get(calls, 0), "function"), "arguments");
        TEST_ASSERT_MSG(!strcmp(str_of(o.msg, "reasoning_content"), cases[i].reasoning) &&
                            !strcmp(str_of(o.msg, "content"), cases[i].content) &&
                            json_array_size(calls) == cases[i].calls && o.finish == cases[i].finish &&
                            o.flags == cases[i].flags && (!cases[i].args0 || !strcmp(args0, cases[i].args0)),
                        "%s: reasoning '%s' content '%s' calls %zu args0 %s finish %s flags 0x%x", cases[i].name,
                        str_of(o.msg, "reasoning_content"), str_of(o.msg, "content"), json_array_size(calls), args0,
                        dsf_chat_finish_name(o.finish), o.flags);
        json_t *strict = NULL;
        TEST_ASSERT_MSG(
            dsf_chat_parse(cases[i].text, strlen(cases[i].text), cases[i].v, cases[i].thinking, &strict, NULL) == -1 ||
                !cases[i].stopped,
            "%s: the strict parser accepts it", cases[i].name);
        json_decref(strict);
        outcome_free(&o);
    }
    dsf_tok_buf big = {0};
    dsf_tok_buf_puts(&big, "\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"");
    for (int i = 0; i < 3000; i++) dsf_tok_buf_puts(&big, i % 100 == 99 ? ">" : "a");
    outcome o;
    check_chunkings("tag past the limit", big.p, big.n, DSF_CHAT_V4, 0, 0, &o);
    TEST_ASSERT(o.flags == (DSF_CHAT_TOL_MARKUP | DSF_CHAT_TOL_UNCLOSED) && o.finish == DSF_CHAT_FINISH_LENGTH);
    outcome_free(&o), dsf_tok_buf_free(&big);
}

static uint32_t next(uint32_t *seed, uint32_t n) {
    *seed = *seed * 1664525u + 1013904223u;
    return (*seed >> 12) % n;
}

static void rand_text(dsf_tok_buf *t, uint32_t *seed, int max) {
    static const char *const frags[] = {"a",    " ", "\n", "<", ">",     "\"", "</", "｜",
                                        "DSML", "é", "你", "💡", "think", "=",  "/"};
    for (int i = (int)next(seed, (uint32_t)max + 1); i > 0; i--) dsf_tok_buf_puts(t, frags[next(seed, 15)]);
}

// A completion in the strict grammar with random text, calls and parameters, in the variant's spelling.
static void rand_completion(dsf_tok_buf *t, uint32_t *seed, dsf_chat_variant v, int thinking) {
    const char *sp = v == DSF_CHAT_V41 ? " " : "", *block = v == DSF_CHAT_V41 ? " calls" : "tool_calls";
    if (thinking) rand_text(t, seed, 12), dsf_tok_buf_puts(t, "</think>");
    rand_text(t, seed, 12);
    int calls = (int)next(seed, 4);
    char tag[64];
    if (calls) snprintf(tag, sizeof tag, "\n\n<｜DSML｜%s>\n", block), dsf_tok_buf_puts(t, tag);
    for (int c = 0; c < calls; c++) {
        snprintf(tag, sizeof tag, "<｜DSML｜%sinvoke name=\"f%d\">\n", sp, c);
        dsf_tok_buf_puts(t, tag);
        int params = (int)next(seed, 4);
        if (!params) dsf_tok_buf_puts(t, "\n");
        for (int q = 0; q < params; q++) {
            snprintf(tag, sizeof tag, "<｜DSML｜%sparameter name=\"k%d\" string=\"%s\">", sp, q,
                     next(seed, 2) ? "true" : "false");
            dsf_tok_buf_puts(t, tag);
            rand_text(t, seed, 6);
            snprintf(tag, sizeof tag, "</｜DSML｜%sparameter>\n", sp);
            dsf_tok_buf_puts(t, tag);
        }
        snprintf(tag, sizeof tag, "</｜DSML｜%sinvoke>\n", sp);
        dsf_tok_buf_puts(t, tag);
    }
    if (calls) snprintf(tag, sizeof tag, "</｜DSML｜%s>", block), dsf_tok_buf_puts(t, tag);
    if (!calls || next(seed, 2)) dsf_tok_buf_puts(t, EOS);
}

// Random completions, some spliced with markup (fixed seed): chunking never matters; where strict accepts, they agree.
static void test_fuzz(void) {
    static const char *const marks[] = {
        "<",          ">",        "\n\n", "</think>",         "<think>", "<｜DSML｜", "</｜DSML｜", " calls",  "invoke",
        " parameter", " name=\"", "\"",   " string=\"true\"", "\">\n",   EOS,         "\xff",       "\xe4\xbd"};
    uint32_t seed = 12345;
    int agreed = 0, its = 3000;
    dsf_tok_buf t = {0}, u = {0};
    for (int it = 0; it < its; it++) {
        t.n = u.n = 0;
        int thinking = (int)next(&seed, 2);
        dsf_chat_variant v = next(&seed, 2) ? DSF_CHAT_V41 : DSF_CHAT_V4;
        rand_completion(&t, &seed, v, thinking);
        for (int m = (int)next(&seed, 4) - 1; m > 0; m--) {
            size_t at = next(&seed, (uint32_t)t.n + 1), cut = next(&seed, 2) ? next(&seed, 8) : 0;
            if (cut > t.n - at) cut = t.n - at;
            dsf_tok_buf_put(&u, t.p, at);
            dsf_tok_buf_puts(&u, marks[next(&seed, sizeof marks / sizeof *marks)]);
            dsf_tok_buf_put(&u, t.p + at + cut, t.n - at - cut);
            t.n = 0;
            dsf_tok_buf_put(&t, u.p, u.n);
            u.n = 0;
        }
        char name[32];
        snprintf(name, sizeof name, "fuzz %d", it);
        outcome o;
        if (check_chunkings(name, t.p, t.n, v, thinking, 0, &o)) {
            fprintf(stderr, "%s: thinking %d variant %d text: %s\n", name, thinking, (int)v, t.p);
            outcome_free(&o);
            break;
        }
        json_t *strict = NULL;
        // Valid UTF-8 only: dsf_chat_parse returns 0 with a NULL message when json_pack refuses invalid UTF-8.
        if (dsf_utf8_valid(t.p, t.n) && !dsf_chat_parse(t.p, t.n, v, thinking, &strict, NULL)) {
            TEST_ASSERT_MSG(json_equal(strict, o.msg) && !o.flags, "%s: strict parser disagrees: %s", name, t.p);
            agreed++;
        }
        json_decref(strict);
        outcome_free(&o);
    }
    printf("fuzz: %d of %d texts strict-valid, all agreed\n", agreed, its);
    TEST_ASSERT(agreed > its / 3);
    dsf_tok_buf_free(&t), dsf_tok_buf_free(&u);
}

int main(void) {
    TEST_RUN(test_golden_completions);
    TEST_RUN(test_valid_edges);
    TEST_RUN(test_tolerant);
    TEST_RUN(test_fuzz);
    TEST_END();
}
