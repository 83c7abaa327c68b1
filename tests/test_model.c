// The CPU forward on tiny V4.1: greedy decode; R1 and R3 bit for bit (chunkings, shared rounds, rollback).
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/sample.h"
#include "model/model.h"
#include "test.h"

static dsf_model *g_m;
static int64_t g_vocab;
static char g_dir[] = "/tmp/dsf_test_model_XXXXXX";

static uint64_t hash_row(const float *x, int64_t n) {
    uint64_t h = 1469598103934665603ull;
    const uint8_t *b = (const uint8_t *)x;
    for (int64_t i = 0; i < 4 * n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

static void random_ids(int32_t *ids, int64_t n, uint64_t seed) {
    for (int64_t i = 0; i < n; i++) ids[i] = (int32_t)(dsf_sample_uniform(seed, i, 0) * (double)g_vocab) % g_vocab;
}

// Feeds ids[0..n) in chunks of the given sizes (cycled) into a fresh stream; every row's logits hash into h.
static int run_chunks(const int32_t *ids, int64_t n, const int64_t *chunks, int nchunks, uint64_t *h) {
    dsf_err e;
    dsf_stream *s;
    if (dsf_stream_new(g_m, n + 1, 0, &s, &e)) return -1;
    float *lg = malloc(sizeof(float) * (size_t)(n * g_vocab));
    int rc = 0;
    for (int64_t pos = 0, c = 0; pos < n && !rc; c++) {
        int64_t len = chunks[c % nchunks] < n - pos ? chunks[c % nchunks] : n - pos;
        dsf_round_part p = {s, pos, len, ids + pos, DSF_LOGITS_ALL, lg};
        dsf_round r = {1, &p, NULL, NULL};
        rc = dsf_model_forward(g_m, &r, &e);
        for (int64_t t = 0; t < len && !rc; t++) h[pos + t] = hash_row(lg + t * g_vocab, g_vocab);
        pos += len;
    }
    if (rc) fprintf(stderr, "forward: %s\n", e.msg);
    free(lg);
    dsf_stream_free(s);
    return rc;
}

enum { PROMPT = 300, DECODE = 50, SEQ = PROMPT + DECODE };
static int32_t g_seq[SEQ];
static uint64_t g_decode_hash[DECODE];

// A 300-token prompt in one round, then 50 greedy steps of one row each; the logits stay finite and spread.
static void test_greedy_decode(void) {
    dsf_err e;
    dsf_stream *s;
    random_ids(g_seq, PROMPT, 7);
    TEST_ASSERT(dsf_stream_new(g_m, SEQ + 1, 0, &s, &e) == 0);
    float *lg = malloc(sizeof(float) * (size_t)g_vocab);
    dsf_round_part p = {s, 0, PROMPT, g_seq, DSF_LOGITS_LAST, lg};
    dsf_round r = {1, &p, NULL, NULL};
    int distinct = 0;
    for (int i = 0; i < DECODE; i++) {
        TEST_ASSERT(dsf_model_forward(g_m, &r, &e) == 0);
        double ss = 0;
        for (int64_t v = 0; v < g_vocab; v++) ss += (double)lg[v] * lg[v];
        TEST_ASSERT_MSG(isfinite(ss) && ss > 0.01 * (double)g_vocab, "step %d: logits rms %g", i, sqrt(ss / g_vocab));
        g_decode_hash[i] = hash_row(lg, g_vocab);
        g_seq[PROMPT + i] = dsf_sample(lg, g_vocab, 0.0f, 0, PROMPT + i);
        for (int j = PROMPT; j < PROMPT + i; j++) distinct += g_seq[j] == g_seq[PROMPT + i];
        p = (dsf_round_part){s, PROMPT + i, 1, &g_seq[PROMPT + i], DSF_LOGITS_LAST, lg};
    }
    TEST_ASSERT(dsf_stream_len(s) == SEQ - 1);
    free(lg);
    dsf_stream_free(s);
}

// One chunk, token by token and two random chunkings give the same bits for every row, and the greedy steps.
static void test_chunkings(void) {
    static uint64_t h[4][SEQ];
    int64_t one[] = {SEQ}, tok[] = {1}, rnd1[] = {7, 1, 33, 2, 64, 5, 17, 128, 3}, rnd2[] = {129, 1, 1, 15, 16, 31};
    TEST_ASSERT(run_chunks(g_seq, SEQ, one, 1, h[0]) == 0);
    TEST_ASSERT(run_chunks(g_seq, SEQ, tok, 1, h[1]) == 0);
    TEST_ASSERT(run_chunks(g_seq, SEQ, rnd1, 9, h[2]) == 0);
    TEST_ASSERT(run_chunks(g_seq, SEQ, rnd2, 6, h[3]) == 0);
    for (int v = 1; v < 4; v++) {
        int bad = -1;
        for (int i = 0; i < SEQ && bad < 0; i++)
            if (h[v][i] != h[0][i]) bad = i;
        TEST_ASSERT_MSG(bad < 0, "chunking %d: row %d differs from the one-chunk run", v, bad);
    }
    for (int i = 0; i < DECODE; i++)
        TEST_ASSERT_MSG(h[0][PROMPT - 1 + i] == g_decode_hash[i], "greedy step %d differs from the one-chunk row", i);
}

// Three streams in shared rounds of ragged parts give each stream's solo bits; one has other ring sizes (rollback 8).
static void test_streams(void) {
    enum { NS = 3 };
    int64_t len[NS] = {140, 90, 41}, chunk[NS][4] = {{60, 1, 50, 29}, {13, 77, 1, 1}, {1, 40, 3, 2}};
    int32_t ids[NS][140];
    uint64_t solo[NS][140], both[NS][140];
    dsf_stream *s[NS];
    dsf_err e;
    for (int k = 0; k < NS; k++) {
        random_ids(ids[k], len[k], 100 + k);
        int64_t whole[] = {len[k]};
        TEST_ASSERT(run_chunks(ids[k], len[k], whole, 1, solo[k]) == 0);
        TEST_ASSERT(dsf_stream_new(g_m, len[k], k == 1 ? 8 : 0, &s[k], &e) == 0);
    }
    float *lg = malloc(sizeof(float) * (size_t)(140 * NS * g_vocab));
    int64_t pos[NS] = {0};
    for (int c = 0; c < 64; c++) {
        dsf_round_part parts[NS];
        int np = 0;
        float *out = lg;
        for (int k = 0; k < NS; k++) {
            int64_t n = chunk[k][c % 4] < len[k] - pos[k] ? chunk[k][c % 4] : len[k] - pos[k];
            if (n <= 0) continue;
            parts[np++] = (dsf_round_part){s[k], pos[k], n, ids[k] + pos[k], DSF_LOGITS_ALL, out};
            out += n * g_vocab;
        }
        if (!np) break;
        dsf_round r = {np, parts, NULL, NULL};
        TEST_ASSERT(dsf_model_forward(g_m, &r, &e) == 0);
        for (int i = 0; i < np; i++) {
            int k = 0;
            while (s[k] != parts[i].stream) k++;
            for (int64_t t = 0; t < parts[i].n; t++) both[k][pos[k] + t] = hash_row(parts[i].logits + t * g_vocab, g_vocab);
            pos[k] += parts[i].n;
        }
    }
    for (int k = 0; k < NS; k++) {
        TEST_ASSERT(pos[k] == len[k]);
        for (int64_t t = 0; t < len[k]; t++)
            TEST_ASSERT_MSG(both[k][t] == solo[k][t], "stream %d row %lld: shared round differs from solo", k, (long long)t);
        dsf_stream_free(s[k]);
    }
    free(lg);
}

// Drafts written then rejected (rounds that start below the stream's length) leave no trace.
static void test_rollback(void) {
    enum { N = 120 };
    int32_t ids[N], junk[16];
    uint64_t straight[N], rolled[N];
    int64_t whole[] = {N};
    random_ids(ids, N, 31);
    random_ids(junk, 16, 32);
    TEST_ASSERT(run_chunks(ids, N, whole, 1, straight) == 0);
    dsf_stream *s;
    dsf_err e;
    TEST_ASSERT(dsf_stream_new(g_m, N, 8, &s, &e) == 0);
    float *lg = malloc(sizeof(float) * (size_t)(N * g_vocab));
    int64_t pos = 0;
    // Rounds: accept a, then write b junk drafts that are rolled back (b <= 8 = max_rollback).
    int64_t plan[][2] = {{37, 5}, {1, 8}, {2, 1}, {19, 7}, {1, 3}, {30, 2}, {5, 8}, {25, 0}};
    for (size_t i = 0; i < sizeof plan / sizeof plan[0]; i++) {
        int64_t a = plan[i][0] < N - pos ? plan[i][0] : N - pos;
        dsf_round_part p = {s, pos, a, ids + pos, DSF_LOGITS_ALL, lg};
        dsf_round r = {1, &p, NULL, NULL};
        TEST_ASSERT(dsf_model_forward(g_m, &r, &e) == 0);
        for (int64_t t = 0; t < a; t++) rolled[pos + t] = hash_row(lg + t * g_vocab, g_vocab);
        pos += a;
        if (plan[i][1] && pos + plan[i][1] <= N) {
            p = (dsf_round_part){s, pos, plan[i][1], junk, DSF_LOGITS_NONE, NULL};
            TEST_ASSERT(dsf_model_forward(g_m, &r, &e) == 0);
        }
    }
    TEST_ASSERT(pos == N);
    for (int t = 0; t < N; t++) TEST_ASSERT_MSG(rolled[t] == straight[t], "row %d differs after rollbacks", t);
    dsf_round_part p = {s, N - 9, 1, ids, DSF_LOGITS_NONE, NULL};
    dsf_round r = {1, &p, NULL, NULL};
    TEST_ASSERT(dsf_model_forward(g_m, &r, &e) == -1 && strstr(e.msg, "rolls back more than 8"));
    free(lg);
    dsf_stream_free(s);
}

// Bad rounds are refused with a message: a gap, a token outside the vocabulary, a stream twice.
static void test_refusals(void) {
    dsf_stream *s;
    dsf_err e;
    int32_t ids[2] = {5, (int32_t)g_vocab};
    TEST_ASSERT(dsf_stream_new(g_m, 16, 0, &s, &e) == 0);
    dsf_round_part p[2] = {{s, 1, 1, ids, DSF_LOGITS_NONE, NULL}, {s, 0, 1, ids, DSF_LOGITS_NONE, NULL}};
    dsf_round r = {1, p, NULL, NULL};
    TEST_ASSERT(dsf_model_forward(g_m, &r, &e) == -1 && strstr(e.msg, "beyond the stream's length"));
    p[0].pos = 0;
    p[0].n = 2;
    TEST_ASSERT(dsf_model_forward(g_m, &r, &e) == -1 && strstr(e.msg, "outside the vocabulary"));
    p[0].n = 1;
    r.n_parts = 2;
    TEST_ASSERT(dsf_model_forward(g_m, &r, &e) == -1 && strstr(e.msg, "stream repeated"));
    dsf_stream_free(s);
}

// Logits of ids at positions 0..n-1 on a fresh stream of model m, hashed per row.
static void logits_hash(dsf_model *m, const int32_t *ids, int64_t n, uint64_t *h) {
    dsf_stream *s;
    dsf_err e;
    float *lg = malloc(sizeof(float) * (size_t)(n * g_vocab));
    TEST_ASSERT(dsf_stream_new(m, n, 0, &s, &e) == 0);
    dsf_round_part p = {s, 0, n, ids, DSF_LOGITS_ALL, lg};
    dsf_round r = {1, &p, NULL, NULL};
    TEST_ASSERT(dsf_model_forward(m, &r, &e) == 0);
    for (int64_t t = 0; t < n; t++) h[t] = hash_row(lg + t * g_vocab, g_vocab);
    dsf_stream_free(s);
    free(lg);
}

// Without tokenizer.json the map folds ids onto the compressed vocab; with the tokenizer, its real map drives Engram.
static void test_token_map(void) {
    const char *dir = g_dir;
    int64_t n;
    const char *src;
    const int32_t *map = dsf_model_token_map(g_m, &n, &src);
    TEST_ASSERT(map && n == g_vocab && strstr(src, "fold") && map[5] == 5 && map[99092] == 0 && map[129279] == 30187);
    const char *tok = "models/tokenizer/tokenizer.json";
    if (access(tok, R_OK)) {
        printf("skip real map: %s is absent (tools/fetch_tokenizer)\n", tok);
        return;
    }
    char link[512], target[4200], cwd[4096];
    snprintf(link, sizeof link, "%s/tokenizer.json", dir);
    TEST_ASSERT(getcwd(cwd, sizeof cwd) != NULL);
    snprintf(target, sizeof target, "%s/%s", cwd, tok);
    TEST_ASSERT(symlink(target, link) == 0);
    dsf_model *m;
    dsf_err e;
    int rc = dsf_model_open(dir, 2, &m, &e);
    TEST_ASSERT_MSG(rc == 0, "open with tokenizer.json: %s", e.msg);
    if (rc) return;
    const int32_t *real = dsf_model_token_map(m, &n, &src);
    int64_t same = 0, top = 0;
    for (int64_t i = 0; i < n; i++) same += real[i] == map[i], top = real[i] > top ? real[i] : top;
    TEST_ASSERT(n == 129280 && top == 99091 && same < n && !strcmp(src, link));
    // Ids whose compressed ids differ between the maps hash to other Engram rows, so the logits move.
    int32_t ids[8] = {128000, 100, 65, 128001, 33, 129000, 7, 99500};
    uint64_t hf[8], hr[8];
    logits_hash(g_m, ids, 8, hf);
    logits_hash(m, ids, 8, hr);
    TEST_ASSERT(memcmp(hf, hr, sizeof hf) != 0);
    dsf_model_close(m);
    unlink(link);
}

int main(void) {
    const char *bin = getenv("DSF_BIN");
    if (!bin) TEST_SKIP_ALL("DSF_BIN not set (ctest sets it)");
    char *dir = g_dir, cmd[512];
    if (!mkdtemp(dir)) TEST_SKIP_ALL("mkdtemp failed");
    snprintf(cmd, sizeof cmd, "'%s' synth --arch v4.1 --size tiny --quiet %s > /dev/null", bin, dir);
    dsf_err e;
    if (system(cmd) != 0 || dsf_model_open(dir, 2, &g_m, &e)) {
        fprintf(stderr, "setup: %s\n", e.msg);
        return 1;
    }
    g_vocab = dsf_model_args(g_m)->vocab_size;
    TEST_RUN(test_greedy_decode);
    TEST_RUN(test_chunkings);
    TEST_RUN(test_streams);
    TEST_RUN(test_rollback);
    TEST_RUN(test_refusals);
    TEST_RUN(test_token_map);
    dsf_model_close(g_m);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    TEST_END();
}
