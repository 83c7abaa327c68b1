#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "tok/chat.h"
#include "tok_test_util.h"

static dsf_tok *tok;

static int parse_opts(const char *line, dsf_chat_opts *o, char *effort, size_t n) {
    char variant[16] = "v4";
    int thinking = 1;
    const char *v = strstr(line, "variant="), *t = strstr(line, "thinking="), *ef = strstr(line, "effort=");
    const char *ctx = strstr(line, "context=");
    if (v) sscanf(v + 8, "%15s", variant);
    if (t) thinking = atoi(t + 9);
    dsf_chat_variant var;
    if (dsf_chat_variant_parse(variant, &var)) return -1;
    dsf_chat_opts_default(o, var);
    o->thinking = thinking;
    if (ctx) o->n_context = (size_t)atoi(ctx + 8);
    if (ef) {
        snprintf(effort, n, "%.*s", (int)strcspn(ef + 7, " \n"), ef + 7);
        o->effort = effort;
    }
    return 0;
}

// Ids of the rendered prompt must decode back to it, and the markup must come out as the single special ids.
static void check_tokens(const char *text) {
    if (!tok) return;
    dsf_tok_ids ids = {0};
    dsf_tok_buf back = {0};
    TEST_ASSERT(!dsf_tok_encode(tok, text, strlen(text), &ids, NULL));
    TEST_ASSERT(!dsf_tok_decode(tok, ids.v, ids.n, &back, NULL));
    TEST_ASSERT(back.n == strlen(text) && !memcmp(back.p, text, back.n));
    int bos = 0, user = 0;
    for (size_t i = 0; i < ids.n; i++) bos += ids.v[i] == 0, user += ids.v[i] == 128803;
    TEST_ASSERT(bos == 1 && user >= 1);
    dsf_tok_ids_free(&ids), dsf_tok_buf_free(&back);
}

// One vector file: render records compare byte for byte (or the end only for expect_suffix); parse records as JSON.
static int golden_file(const char *path) {
    FILE *f = fopen(path, "r");
    TEST_ASSERT_MSG(f != NULL, "%s", path);
    if (!f) return 0;
    char *line = NULL, name[128] = "", effort[32];
    size_t cap = 0;
    dsf_chat_opts o;
    json_t *input = NULL;
    int is_parse = 0, cases = 0;
    while (getline(&line, &cap, f) > 0) {
        int suffix = !strncmp(line, "expect_suffix ", 14);
        const char *val = line + (suffix ? 14 : 7);
        if (!strncmp(line, "case ", 5)) {
            snprintf(name, sizeof name, "%.*s", (int)strcspn(line + 5, "\n"), line + 5);
        } else if (!strncmp(line, "opts ", 5)) {
            TEST_ASSERT(!parse_opts(line, &o, effort, sizeof effort));
        } else if (!strncmp(line, "messages ", 9) || !strncmp(line, "parse ", 6)) {
            is_parse = line[0] == 'p';
            input = json_loads(line + (is_parse ? 6 : 9), JSON_DECODE_ANY, NULL);
            TEST_ASSERT_MSG(input != NULL, "%s: bad input JSON", name);
        } else if ((suffix || !strncmp(line, "expect ", 7)) && input) {
            json_t *want = strncmp(val, "error", 5) ? json_loads(val, JSON_DECODE_ANY, NULL) : NULL;
            dsf_err e = {{0}};
            if (is_parse) {
                json_t *got = NULL;
                int rc = dsf_chat_parse(json_string_value(input), json_string_length(input), o.variant, o.thinking,
                                        &got, &e);
                TEST_ASSERT_MSG(want ? !rc && json_equal(got, want) : rc == -1, "%s: %s", name, e.msg);
                json_decref(got);
            } else {
                dsf_tok_buf out = {0};
                int rc = dsf_chat_render(input, &o, &out, &e);
                size_t wn = want ? json_string_length(want) : 0;
                const char *got = out.p && suffix && out.n >= wn ? out.p + out.n - wn : out.p;
                TEST_ASSERT_MSG(
                    want ? !rc && (suffix ? out.n >= wn : out.n == wn) && !memcmp(got, json_string_value(want), wn)
                         : rc == -1,
                    "%s: %s\n got: %s\nwant: %s", name, e.msg, out.p, want ? json_string_value(want) : "error");
                if (!rc && want && !suffix && o.variant != DSF_CHAT_V41 && !o.n_context) check_tokens(out.p);
                dsf_tok_buf_free(&out);
            }
            json_decref(want);
            json_decref(input);
            input = NULL;
            cases++;
        }
    }
    printf("%s: %d cases\n", path, cases);
    free(line);
    fclose(f);
    return cases;
}

static void test_golden_cases(void) {
    TEST_ASSERT(golden_file("tests/vectors/tok_chat.txt") >= 15);
    TEST_ASSERT(golden_file("tests/vectors/tok_chat_gold.txt") >= 21);
}

static int render(const char *json, dsf_chat_variant v, int thinking, dsf_tok_buf *out, dsf_err *e) {
    json_t *m = json_loads(json, 0, NULL);
    DSF_ASSERT(m);
    dsf_chat_opts o;
    dsf_chat_opts_default(&o, v);
    o.thinking = thinking;
    int rc = dsf_chat_render(m, &o, out, e);
    json_decref(m);
    return rc;
}

static void test_v41_roundtrip(void) {
    const char *done = "  reason  </think>summary\n\n<｜DSML｜ calls>\n<｜DSML｜ invoke name=\"lookup\">\n<｜DSML｜ "
                       "parameter name=\"query\" string=\"true\">value</｜DSML｜ parameter>\n<｜DSML｜ parameter "
                       "name=\"limit\" string=\"false\">2</｜DSML｜ parameter>\n</｜DSML｜ invoke>\n</｜DSML｜ calls>"
                       "<｜end▁of▁sentence｜>";
    json_t *msg;
    TEST_ASSERT(!dsf_chat_parse(done, strlen(done), DSF_CHAT_V41, 1, &msg, NULL));
    json_t *list = json_pack("[{s:s,s:s},O]", "role", "user", "content", "q", msg);
    dsf_chat_opts o;
    dsf_chat_opts_default(&o, DSF_CHAT_V41);
    dsf_tok_buf out = {0};
    TEST_ASSERT(!dsf_chat_render(list, &o, &out, NULL));
    const char *at = out.p ? strstr(out.p, "<｜Assistant｜><think>") : NULL;
    TEST_ASSERT(at && !strcmp(at + strlen("<｜Assistant｜><think>"), done));
    json_decref(list), json_decref(msg), dsf_tok_buf_free(&out);
}

static void test_rules(void) {
    dsf_tok_buf out = {0};
    dsf_err e;
    TEST_ASSERT(render("[{\"role\":\"developer\",\"content\":\"x\"}]", DSF_CHAT_V41, 1, &out, &e) == -1 &&
                strstr(e.msg, "developer"));
    out.n = 0;
    TEST_ASSERT(
        !render("[{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":"
                "[{\"id\":\"c\",\"type\":\"function\",\"function\":{\"name\":\"now\",\"arguments\":\"{}\"}}]},"
                "{\"role\":\"tool\",\"tool_call_id\":\"c\",\"content\":\"12:00\"},{\"role\":\"user\",\"content\":"
                "\"thanks\"}]",
                DSF_CHAT_V4, 0, &out, NULL));
    TEST_ASSERT(out.p && strstr(out.p, "<｜DSML｜invoke name=\"now\">\n\n</｜DSML｜invoke>") &&
                strstr(out.p, "<｜User｜><tool_result>12:00</tool_result>\n\nthanks<｜Assistant｜></think>"));
    out.n = 0;
    TEST_ASSERT(!render("[{\"role\":\"user\",\"content\":\"q\",\"task\":\"action\"}]", DSF_CHAT_V4, 1, &out, NULL));
    TEST_ASSERT(out.p && !strcmp(out.p, "<｜begin▁of▁sentence｜><｜User｜>q<｜Assistant｜><think><｜action｜>"));
    out.n = 0;
    TEST_ASSERT(render("[{\"role\":\"user\",\"content\":\"q\",\"task\":\"dance\"}]", DSF_CHAT_V4, 1, &out, &e) == -1);
    json_t *m;
    const char *zero = "</think><｜DSML｜invoke name=\"now\">\n\n</｜DSML｜invoke>";
    TEST_ASSERT(dsf_chat_parse(zero, strlen(zero), DSF_CHAT_V4, 1, &m, &e) == -1);
    const char *call = "r</think>\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"now\">\n\n</｜DSML｜invoke>\n"
                       "</｜DSML｜tool_calls>";
    TEST_ASSERT(!dsf_chat_parse(call, strlen(call), DSF_CHAT_V4, 1, &m, NULL));
    TEST_ASSERT(m && json_array_size(json_object_get(m, "tool_calls")) == 1);
    json_decref(m);
    TEST_ASSERT(dsf_chat_parse("hello", 5, DSF_CHAT_V4, 0, &m, &e) == -1 && strstr(e.msg, "EOS"));
    const char *hello = "hello<｜end▁of▁sentence｜>";
    TEST_ASSERT(!dsf_chat_parse(hello, strlen(hello), DSF_CHAT_V4, 0, &m, NULL));
    TEST_ASSERT(m && !strcmp(json_string_value(json_object_get(m, "content")), "hello"));
    json_decref(m);
    const char *broken = "he\xffllo<｜end▁of▁sentence｜>";
    TEST_ASSERT(dsf_chat_parse(broken, strlen(broken), DSF_CHAT_V4, 0, &m, &e) == -1 && !m && strstr(e.msg, "UTF-8"));
    dsf_tok_buf_free(&out);
}

static void test_json_dumps(void) {
    const char *in = "{\"f\": [1e-05, 1e16, 100.0, 0.1, 1.5e300, -0.0, 123456789012345678, 0.0001, 1234.5], "
                     "\"s\": \"a\\u0001\\n\\\"/\\u00e9\", \"o\": {\"z\": true, \"a\": null}}";
    const char *want = "{\"f\": [1e-05, 1e+16, 100.0, 0.1, 1.5e+300, -0.0, 123456789012345678, 0.0001, 1234.5], "
                       "\"s\": \"a\\u0001\\n\\\"/\xC3\xA9\", \"o\": {\"z\": true, \"a\": null}}";
    json_t *v = json_loads(in, 0, NULL);
    dsf_tok_buf out = {0};
    dsf_json_dumps(v, &out);
    TEST_ASSERT_MSG(out.p && !strcmp(out.p, want), "%s", out.p);
    json_decref(v), dsf_tok_buf_free(&out);
}

int main(void) {
    tok = tok_test_open();
    TEST_RUN(test_json_dumps);
    TEST_RUN(test_golden_cases);
    TEST_RUN(test_v41_roundtrip);
    TEST_RUN(test_rules);
    if (tok) dsf_tok_close(tok);
    TEST_END();
}
