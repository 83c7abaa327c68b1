#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"
#include "tok/tok_internal.h"
#include "tok_test_util.h"

// Under ASan every 8th string is enough to look for memory errors; the plain build compares every string.
#ifdef __SANITIZE_ADDRESS__
#define CORPUS_STRIDE 8
#else
#define CORPUS_STRIDE 1
#endif

static dsf_tok *tok;

static void test_golden(void) {
    FILE *f = fopen("tests/vectors/tok_golden.txt", "r");
    TEST_ASSERT(f != NULL);
    if (!f) return;
    char *line = NULL;
    size_t cap = 0;
    int n = 0;
    while (getline(&line, &cap, f) > 0) {
        if (line[0] == '#') continue;
        char *tab = strchr(line, '\t');
        TEST_ASSERT(tab != NULL);
        if (!tab) continue;
        dsf_tok_buf text = {0}, back = {0};
        dsf_tok_ids want = {0}, got = {0};
        TEST_ASSERT(!tok_test_unhex(line, tab, &text));
        tok_test_ids(tab + 1, &want);
        TEST_ASSERT(!dsf_tok_encode(tok, text.p, text.n, &got, NULL));
        TEST_ASSERT(tok_test_ids_equal(&want, &got));
        TEST_ASSERT(!dsf_tok_decode(tok, got.v, got.n, &back, NULL));
        TEST_ASSERT(back.n == text.n && !memcmp(back.p, text.p, text.n));
        dsf_tok_buf_free(&text), dsf_tok_buf_free(&back), dsf_tok_ids_free(&want), dsf_tok_ids_free(&got);
        n++;
    }
    TEST_ASSERT(n >= 1);
    free(line);
    fclose(f);
}

static void test_special_ids(void) {
    const char *names[] = {"<｜begin▁of▁sentence｜>",
                           "<｜end▁of▁sentence｜>",
                           "<｜▁pad▁｜>",
                           "<｜User｜>",
                           "<｜Assistant｜>",
                           "<think>",
                           "</think>",
                           "｜DSML｜",
                           "<｜latest_reminder｜>"};
    int32_t ids[] = {0, 1, 2, 128803, 128804, 128821, 128822, 128825, 128828};
    for (size_t i = 0; i < sizeof ids / sizeof *ids; i++) TEST_ASSERT(dsf_tok_id(tok, names[i]) == ids[i]);
    TEST_ASSERT(dsf_tok_size(tok) == 129280);
    TEST_ASSERT(dsf_tok_is_special(tok, 1) && !dsf_tok_is_special(tok, 128821) && !dsf_tok_is_special(tok, 500));
    dsf_tok_buf b = {0};
    int32_t bad[] = {5, 129280};
    dsf_err e;
    TEST_ASSERT(dsf_tok_decode(tok, bad, 2, &b, &e) == -1 && strstr(e.msg, "129280"));
    dsf_tok_buf_free(&b);
}

// Decoding one token at a time must give the lossy text, whatever splits the UTF-8 characters across tokens.
static void stream_check(const dsf_tok_ids *ids, const dsf_tok_buf *want, int *bad) {
    dsf_tok_stream s = {0};
    dsf_tok_buf out = {0};
    for (size_t i = 0; i < ids->n; i++) dsf_tok_stream_push(tok, &s, ids->v[i], &out, NULL);
    dsf_tok_stream_finish(&s, &out);
    if (out.n != want->n || (want->n && memcmp(out.p, want->p, want->n))) (*bad)++;
    dsf_tok_buf_free(&out);
}

static int32_t byte_token(uint8_t b) {
    char s[3] = {0};
    uint32_t cp = dsf_tok_byte_char(b);
    if (cp < 0x80) {
        s[0] = (char)cp;
    } else {
        s[0] = (char)(0xC0 | cp >> 6), s[1] = (char)(0x80 | (cp & 0x3F));
    }
    return dsf_tok_id(tok, s);
}

static void test_stream_partial_utf8(void) {
    dsf_tok_stream s = {0};
    dsf_tok_buf out = {0};
    TEST_ASSERT(!dsf_tok_stream_push(tok, &s, byte_token(0xE4), &out, NULL));
    TEST_ASSERT(!dsf_tok_stream_push(tok, &s, byte_token(0xBD), &out, NULL));
    TEST_ASSERT(out.n == 0 && s.npend == 2);
    TEST_ASSERT(!dsf_tok_stream_push(tok, &s, byte_token(0xA0), &out, NULL));
    TEST_ASSERT(out.n == 3 && !memcmp(out.p, "\xE4\xBD\xA0", 3) && s.npend == 0);
    TEST_ASSERT(!dsf_tok_stream_push(tok, &s, byte_token(0xE4), &out, NULL));
    TEST_ASSERT(!dsf_tok_stream_push(tok, &s, byte_token('a'), &out, NULL));
    TEST_ASSERT(out.n == 7 && !memcmp(out.p + 3,
                                      "\xEF\xBF\xBD"
                                      "a",
                                      4));
    TEST_ASSERT(!dsf_tok_stream_push(tok, &s, byte_token(0xF0), &out, NULL));
    dsf_tok_stream_finish(&s, &out);
    TEST_ASSERT(out.n == 10 && !memcmp(out.p + 7, "\xEF\xBF\xBD", 3));
    TEST_ASSERT(dsf_tok_stream_push(tok, &s, -1, &out, NULL) == -1);
    dsf_tok_buf_free(&out);
}

static void test_hf_corpus(void) {
    char path[4096];
    snprintf(path, sizeof path, "%s", dsf_tok_path(NULL));
    char *slash = strrchr(path, '/');
    snprintf(slash ? slash + 1 : path, sizeof path - (size_t)(slash ? slash + 1 - path : 0), "hf_corpus.txt");
    FILE *f = fopen(path, "r");
    TEST_ASSERT_MSG(f != NULL, "%s is missing: run tools/tok_reference.py (tools/setup does)", path);
    if (!f) return;
    char *line = NULL;
    size_t cap = 0;
    ssize_t len = getline(&line, &cap, f);
    TEST_ASSERT(len > 0 && strstr(line, dsf_tok_sha256(tok)));
    int n = 0, wrong = 0, wrong_decode = 0, wrong_stream = 0, line_no = 0;
    while ((len = getline(&line, &cap, f)) > 0) {
        if (line_no++ % CORPUS_STRIDE) continue;
        char *tab = strchr(line, '\t');
        if (!tab) {
            wrong++;
            continue;
        }
        dsf_tok_buf text = {0}, lossy = {0}, back = {0};
        dsf_tok_ids want = {0}, got = {0};
        if (tok_test_unhex(line, tab, &text)) wrong++;
        tok_test_ids(tab + 1, &want);
        if (dsf_tok_encode(tok, text.p, text.n, &got, NULL) || !tok_test_ids_equal(&want, &got)) {
            if (wrong++ < 5) fprintf(stderr, "ids differ from HF for line %d: %.200s\n", n + 2, line);
        }
        dsf_utf8_lossy(text.p, text.n, &lossy);
        dsf_tok_decode(tok, got.v, got.n, &back, NULL);
        if (back.n != lossy.n || (lossy.n && memcmp(back.p, lossy.p, lossy.n))) wrong_decode++;
        stream_check(&got, &lossy, &wrong_stream);
        dsf_tok_buf_free(&text), dsf_tok_buf_free(&lossy), dsf_tok_buf_free(&back);
        dsf_tok_ids_free(&want), dsf_tok_ids_free(&got);
        n++;
    }
    printf("corpus: %d strings, %d ids differ from HF, %d decode and %d stream mismatches\n", n, wrong, wrong_decode,
           wrong_stream);
    TEST_ASSERT(n >= 10000 / CORPUS_STRIDE);
    TEST_ASSERT(wrong == 0 && wrong_decode == 0 && wrong_stream == 0);
    free(line);
    fclose(f);
}

static void test_lossy(void) {
    const char *in[] = {"a\xC3",
                        "\xED\xA0\x80",
                        "\xE0\xA0",
                        "\xF0\x9F\x98"
                        "a",
                        "\xC0\xAF",
                        "ok"};
    const char *want[] = {"a\xEF\xBF\xBD",
                          "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD",
                          "\xEF\xBF\xBD",
                          "\xEF\xBF\xBD"
                          "a",
                          "\xEF\xBF\xBD\xEF\xBF\xBD",
                          "ok"};
    for (size_t i = 0; i < sizeof in / sizeof *in; i++) {
        dsf_tok_buf b = {0};
        dsf_utf8_lossy(in[i], strlen(in[i]), &b);
        TEST_ASSERT_MSG(b.n == strlen(want[i]) && !memcmp(b.p, want[i], b.n), "case %zu", i);
        TEST_ASSERT(dsf_utf8_valid(in[i], strlen(in[i])) == (i == 5));
        dsf_tok_buf_free(&b);
    }
}

// Writes tokenizer.json with one substring replaced, and checks the load fails naming what it must name.
static void load_fails(const char *json, const char *from, const char *to, const char *must_name) {
    const char *at = strstr(json, from);
    TEST_ASSERT_MSG(at != NULL, "fixture lacks %s", from);
    if (!at) return;
    char path[] = "/tmp/dsf_tok_bad_XXXXXX";
    int fd = mkstemp(path);
    FILE *f = fdopen(fd, "w");
    fwrite(json, 1, (size_t)(at - json), f);
    fputs(to, f);
    fputs(at + strlen(from), f);
    fclose(f);
    dsf_tok *t = NULL;
    dsf_err e = {{0}};
    TEST_ASSERT_MSG(dsf_tok_open(&t, path, &e) == -1 && strstr(e.msg, must_name), "%s -> %s: %s", from, to, e.msg);
    dsf_tok_close(t);
    unlink(path);
}

static void test_bad_files(void) {
    const char *json =
        "{\"added_tokens\": [{\"id\": 3, \"content\": \"<s>\", \"single_word\": false, \"lstrip\": false,"
        " \"rstrip\": false, \"normalized\": false, \"special\": true}],"
        " \"normalizer\": null, \"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": ["
        "{\"type\": \"Split\", \"pattern\": {\"Regex\": \"\\\\p{N}{1,3}\"}, \"behavior\": \"Isolated\","
        " \"invert\": false}, {\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": false}]},"
        " \"decoder\": {\"type\": \"ByteLevel\"}, \"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0,"
        " \"b\": 1, \"ab\": 2}, \"merges\": [\"a b\"]}}";
    load_fails(json, "\"lstrip\": false", "\"lstrip\": true", "added_tokens[0].lstrip");
    load_fails(json, "\"normalizer\": null", "\"normalizer\": {\"type\": \"NFC\"}", "normalizer");
    load_fails(json, "\"Isolated\"", "\"Removed\"", "pretokenizers[0]");
    load_fails(json, "{1,3}", "{1,3}(", "pretokenizers[0].pattern");
    load_fails(json, "\\\\p{N}", "\\\\p{Han}", "only \\p{L}");
    load_fails(json, "\"a b\"", "\"a c\"", "model.merges[0]");
    load_fails(json, "\"BPE\"", "\"WordPiece\"", "model.type");
    load_fails(json, "\"id\": 3", "\"id\": 9", "no token has id");
    load_fails(json, "\"merges\"", "\"merges\": 1, \"x\"", "merges");
    dsf_tok *t = NULL;
    dsf_err e;
    TEST_ASSERT(dsf_tok_open(&t, "/nonexistent/tokenizer.json", &e) == -1 && strstr(e.msg, "fetch_tokenizer"));
}

int main(void) {
    TEST_RUN(test_lossy);
    TEST_RUN(test_bad_files);
    tok = tok_test_open();
    if (!tok) {
        printf("SKIP: %s is absent (run tools/fetch_tokenizer)\n", dsf_tok_path(NULL));
        printf("%d passed, %d failed\n", dsf_test_passed, dsf_test_failed);
        return dsf_test_failed ? 1 : 77;
    }
    TEST_RUN(test_golden);
    TEST_RUN(test_special_ids);
    TEST_RUN(test_stream_partial_utf8);
    TEST_RUN(test_hf_corpus);
    dsf_tok_close(tok);
    TEST_END();
}
