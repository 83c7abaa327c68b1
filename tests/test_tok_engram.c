#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"
#include "tok/tok_engram.h"
#include "tok_test_util.h"

static dsf_tok *tok;

static void sibling(const char *name, char *out, size_t n) {
    const char *path = dsf_tok_path(NULL), *slash = strrchr(path, '/');
    snprintf(out, n, "%.*s%s", slash ? (int)(slash - path + 1) : 0, path, name);
}

// Every id's key and map entry against HF's normalizers pipeline (tools/tok_reference.py writes hf_engram.txt).
static void test_against_hf(void) {
    char path[4096];
    sibling("hf_engram.txt", path, sizeof path);
    FILE *f = fopen(path, "r");
    TEST_ASSERT_MSG(f != NULL, "%s is missing: run tools/tok_reference.py (tools/setup does)", path);
    if (!f) return;
    int32_t *map, n_keys;
    TEST_ASSERT(!dsf_tok_engram_build(tok, &map, &n_keys, NULL));
    char *line = NULL;
    size_t cap = 0;
    TEST_ASSERT(getline(&line, &cap, f) > 0 && strstr(line, dsf_tok_sha256(tok)));
    int n = 0, bad_key = 0, bad_map = 0;
    while (getline(&line, &cap, f) > 0) {
        char *t1 = strchr(line, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
        if (!t2) {
            bad_key++;
            continue;
        }
        int id = atoi(line), want = atoi(t1 + 1);
        dsf_tok_buf hf = {0}, ours = {0};
        char *end = t2 + 1 + strcspn(t2 + 1, "\n");
        tok_test_unhex(t2 + 1, end, &hf);
        dsf_tok_engram_key(tok, id, &ours);
        if (ours.n != hf.n || memcmp(ours.p, hf.p, hf.n)) {
            if (bad_key++ < 10) fprintf(stderr, "id %d: key %s, HF %s\n", id, ours.p, hf.p);
        }
        if (id >= dsf_tok_size(tok) || map[id] != want) bad_map++;
        dsf_tok_buf_free(&hf), dsf_tok_buf_free(&ours);
        n++;
    }
    printf("engram: %d ids, %d keys and %d map entries differ from HF, %d distinct keys\n", n, bad_key, bad_map,
           n_keys);
    TEST_ASSERT(n == dsf_tok_size(tok) && bad_key == 0 && bad_map == 0);
    TEST_ASSERT(n_keys == DSF_TOK_ENGRAM_KEYS);
    free(map);
    free(line);
    fclose(f);
}

static void test_known_keys(void) {
    const char *cases[][2] = {{"Ġthe", "the"}, {"ĠThe", "the"}, {"Ċ", " "}, {"ĠĠ", " "}, {"<think>", "<think>"}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int32_t id = dsf_tok_id(tok, cases[i][0]);
        dsf_tok_buf k = {0};
        TEST_ASSERT(id >= 0);
        if (id >= 0) dsf_tok_engram_key(tok, id, &k);
        TEST_ASSERT_MSG(k.p && !strcmp(k.p, cases[i][1]), "%s -> %s", cases[i][0], k.p ? k.p : "(none)");
        dsf_tok_buf_free(&k);
    }
}

static void test_cache(void) {
    char path[] = "/tmp/dsf_engram_XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    int32_t *a, *b, na, nb;
    TEST_ASSERT(!dsf_tok_engram_map(tok, path, DSF_TOK_ENGRAM_KEYS, &a, &na, NULL));
    FILE *f = fopen(path, "rb");
    TEST_ASSERT(f != NULL);
    if (f) {
        fseek(f, 0, SEEK_END);
        TEST_ASSERT(ftell(f) == 8 + 64 + 8 + 4L * dsf_tok_size(tok) + 32);
        fclose(f);
    }
    TEST_ASSERT(!dsf_tok_engram_map(tok, path, DSF_TOK_ENGRAM_KEYS, &b, &nb, NULL));
    TEST_ASSERT(na == nb && !memcmp(a, b, (size_t)dsf_tok_size(tok) * 4));
    TEST_ASSERT(a[0] == 0 && a[2] >= 0);
    free(b);
    f = fopen(path, "r+b");
    fseek(f, 100, SEEK_SET);
    fputc(0x7F, f);
    fclose(f);
    TEST_ASSERT(!dsf_tok_engram_map(tok, path, 0, &b, &nb, NULL));
    TEST_ASSERT(na == nb && !memcmp(a, b, (size_t)dsf_tok_size(tok) * 4));
    free(b);
    dsf_err e;
    TEST_ASSERT(dsf_tok_engram_map(tok, path, 1234, &b, &nb, &e) == -1 && strstr(e.msg, "1234") && !b);
    free(a);
    unlink(path);
}

int main(void) {
    tok = tok_test_open();
    if (!tok) TEST_SKIP_ALL("tokenizer.json is absent (run tools/fetch_tokenizer)");
    TEST_RUN(test_known_keys);
    TEST_RUN(test_against_hf);
    TEST_RUN(test_cache);
    dsf_tok_close(tok);
    TEST_END();
}
