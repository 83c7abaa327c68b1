// Engram host side: hash ids worked by hand, chunking and rollback, map and table errors, the real table sizes.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/formats.h"
#include "io/bind.h"
#include "kern/engram/engram.h"
#include "kern/engram/engram_internal.h"
#include "kern/engram/engram_kern.h"
#include "test.h"

static dsf_args real_args(void) {
    dsf_args a;
    memset(&a, 0, sizeof a);
    a.n_engram_layers = 2, a.engram_layers[0] = 1, a.engram_layers[1] = 14;
    a.engram_num_embeddings[0] = 384006168, a.engram_num_embeddings[1] = 384016682;
    a.engram_max_ngram_size = 4, a.engram_n_heads = 8, a.engram_vocab_size = 16000000, a.engram_pad_id = 2;
    a.engram_compressed_vocab_size = 99092;
    return a;
}

// Token i maps to i - 1 from token 2 on (so pad = map[2] = 1, not 2), capped to 99092 distinct ids.
static void test_map(dsf_engram_map *m) {
    int32_t *ids = malloc(sizeof(int32_t) * 129280);
    for (int i = 0; i < 129280; i++) ids[i] = i < 2 ? i : (i - 1 < 99091 ? i - 1 : 99091);
    dsf_err e;
    DSF_ASSERT(dsf_engram_map_from_ids(ids, 129280, 99092, m, &e) == 0);
    free(ids);
}

static void test_real_table_sizes(void) {
    dsf_args a = real_args();
    dsf_engram_map m;
    test_map(&m);
    dsf_engram_hash h;
    dsf_err e;
    TEST_ASSERT(dsf_engram_hash_init(&a, &m, &h, &e) == 0);
    TEST_ASSERT(h.rows[0] == 384006168 && h.rows[1] == 384016682);
    TEST_ASSERT(h.offsets[0][8] == 128000880 && h.offsets[0][16] == 256002934);
    TEST_ASSERT(h.offsets[1][8] == 128004290 && h.offsets[1][16] == 256009984);
    TEST_ASSERT(h.primes[0][0] == 16000057 && h.primes[1][0] == 16000477 && h.pad == 1);
    a.engram_num_embeddings[1] = 384016681;
    TEST_ASSERT(dsf_engram_hash_init(&a, &m, &h, &e) != 0 && strstr(e.msg, "384016682"));
    dsf_engram_map_free(&m);
}

// The generated table must hold the spec's published values for layers 1 and 14, and refuse other vocab sizes.
static void test_multiplier_table(void) {
    static const int64_t l1[4] = {76632096046245, 4839876093313, 35959672319349, 73987337458391};
    static const int64_t l14[4] = {67716810739261, 51510806800915, 30921347202721, 82619226485591};
    int64_t m[4];
    TEST_ASSERT(dsf_engram_multipliers(1, 99092, m) == 0 && !memcmp(m, l1, sizeof m));
    TEST_ASSERT(dsf_engram_multipliers(14, 99092, m) == 0 && !memcmp(m, l14, sizeof m));
    TEST_ASSERT(dsf_engram_multipliers(4, 99092, m) == 0 && (m[0] & 1) && (m[3] & 1));
    TEST_ASSERT(dsf_engram_multipliers(1, 99093, m) == -1 && dsf_engram_multipliers(64, 99092, m) == -1);
}

// Expected ids computed by hand (Python ints) from spec §3.2.6: columns 0, 8 and 23 of layer 1.
static void test_hash_by_hand(void) {
    static const int64_t want[6][3] = {{7812728, 138212529, 370148103},  {22259, 136486238, 371428782},
                                       {2149863, 136701180, 369050879},  {8847396, 142896013, 373913988},
                                       {12075939, 134903071, 383771711}, {11754974, 143641730, 376617561}};
    dsf_args a = real_args();
    dsf_engram_map m;
    test_map(&m);
    dsf_engram_hash h;
    dsf_err e;
    TEST_ASSERT(dsf_engram_hash_init(&a, &m, &h, &e) == 0);
    dsf_engram_hist s;
    dsf_engram_hist_init(&s, 0);
    int32_t tok[6] = {5, 6, 129264, 7, 8, 9};
    uint8_t img[6] = {0, 0, 1, 0, 0, 0};
    int64_t rows[6 * 2 * 24];
    TEST_ASSERT(dsf_engram_hist_step(&h, &m, &s, 0, 6, tok, img, rows, &e) == 0);
    for (int t = 0; t < 6; t++) {
        const int64_t *r = rows + t * 48;
        TEST_ASSERT_MSG(r[0] == want[t][0] && r[8] == want[t][1] && r[23] == want[t][2], "t=%d: %lld %lld %lld", t,
                        (long long)r[0], (long long)r[8], (long long)r[23]);
    }
    dsf_engram_hist_free(&s);
    dsf_engram_map_free(&m);
}

// One call, token by token and random chunks give the same ids; a rollback rewrites positions like a fresh run.
static void test_chunked_and_rollback(void) {
    dsf_args a = real_args();
    dsf_engram_map m;
    test_map(&m);
    dsf_engram_hash h;
    dsf_err e;
    TEST_ASSERT(dsf_engram_hash_init(&a, &m, &h, &e) == 0);
    enum { T = 300, W = 48 };
    int32_t tok[T];
    uint8_t img[T];
    uint64_t x = 12345;
    for (int i = 0; i < T; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        tok[i] = (int32_t)((x >> 33) % 129280);
        img[i] = (i >= 40 && i < 57) || (i >= 200 && i < 203);
    }
    int64_t *one = malloc(sizeof(int64_t) * T * W), *part = malloc(sizeof(int64_t) * T * W);
    dsf_engram_hist s1, s2;
    dsf_engram_hist_init(&s1, 0);
    dsf_engram_hist_init(&s2, 16);
    TEST_ASSERT(dsf_engram_hist_step(&h, &m, &s1, 0, T, tok, img, one, &e) == 0);
    for (int p = 0; p < T;) {
        int n = 1 + (int)((p * 7919) % 13);
        if (p + n > T) n = T - p;
        TEST_ASSERT(dsf_engram_hist_step(&h, &m, &s2, p, n, tok + p, img + p, part + (int64_t)p * W, &e) == 0);
        if (p > 20 && p % 3 == 0 && n > 2) {
            int32_t junk[2] = {77, 88};
            int64_t tmp[2 * W];
            TEST_ASSERT(dsf_engram_hist_step(&h, &m, &s2, p + n, 2, junk, NULL, tmp, &e) == 0);
        }
        p += n;
    }
    TEST_ASSERT(memcmp(one, part, sizeof(int64_t) * T * W) == 0);
    TEST_ASSERT(dsf_engram_hist_step(&h, &m, &s2, T + 2, 1, tok, NULL, part, &e) != 0 && strstr(e.msg, "position"));
    TEST_ASSERT(dsf_engram_hist_step(&h, &m, &s2, 3, 1, tok, NULL, part, &e) != 0 && strstr(e.msg, "rollback"));
    int32_t bad = 129280;
    TEST_ASSERT(dsf_engram_hist_step(&h, &m, &s2, T, 1, &bad, NULL, part, &e) != 0 && strstr(e.msg, "token map"));
    dsf_engram_hist_free(&s1);
    dsf_engram_hist_free(&s2);
    free(one);
    free(part);
    dsf_engram_map_free(&m);
}

static int write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fputs(text, f);
    fclose(f);
    return 0;
}

static void test_map_file(void) {
    char dir[] = "/tmp/dsf_engram_map_XXXXXX", path[256];
    TEST_ASSERT(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/map.txt", dir);
    dsf_engram_map m;
    dsf_err e;
    TEST_ASSERT(write_text(path, "dsfold-engram-map 1\n5 3\n0\n1\n1\n2\n0\n") == 0);
    TEST_ASSERT(dsf_engram_map_load(path, &m, &e) == 0 && m.n == 5 && m.ids[2] == 1 && m.ids[4] == 0);
    dsf_engram_map_free(&m);
    TEST_ASSERT(write_text(path, "dsfold-engram-map 2\n5 3\n0\n1\n1\n2\n0\n") == 0);
    TEST_ASSERT(dsf_engram_map_load(path, &m, &e) != 0 && strstr(e.msg, "not an engram map"));
    TEST_ASSERT(write_text(path, "dsfold-engram-map 1\n5 3\n0\n2\n1\n2\n0\n") == 0);
    TEST_ASSERT(dsf_engram_map_load(path, &m, &e) != 0 && strstr(e.msg, "first-seen"));
    TEST_ASSERT(write_text(path, "dsfold-engram-map 1\n5 4\n0\n1\n1\n2\n0\n") == 0);
    TEST_ASSERT(dsf_engram_map_load(path, &m, &e) != 0 && strstr(e.msg, "distinct"));
    TEST_ASSERT(write_text(path, "dsfold-engram-map 1\n5 3\n0\n1\n1\n") == 0);
    TEST_ASSERT(dsf_engram_map_load(path, &m, &e) != 0 && strstr(e.msg, "missing"));
    unlink(path);
    rmdir(dir);
}

// Writes one table (weight and scale) into a safetensors file with the given dtype and rows.
static int write_table(const char *path, dsf_dtype wdt, int64_t rows, int64_t srows) {
    dsf_st_writer *w = dsf_st_writer_new();
    dsf_err e;
    int64_t ws[2] = {rows, 32}, ss[2] = {srows, 1};
    int rc = dsf_st_writer_add(w, "embed.weight", wdt, 2, ws, &e) || dsf_st_writer_add(w, "embed.scale",
                                                                                       DSF_DT_F8_E8M0, 2, ss, &e) ||
             dsf_st_writer_begin(w, path, &e);
    size_t nb = (size_t)(rows * 32) * dsf_dtype_size(wdt) + (size_t)srows;
    uint8_t *z = calloc(nb, 1);
    if (!rc) rc = dsf_st_writer_data(w, z, nb, &e) || dsf_st_writer_end(w, NULL, &e);
    free(z);
    dsf_st_writer_free(w);
    return rc;
}

static void test_corrupt_tables(void) {
    char dir[] = "/tmp/dsf_engram_tab_XXXXXX", path[256];
    TEST_ASSERT(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/t.safetensors", dir);
    dsf_err e;
    dsf_st *st;
    dsf_engram_table tb;
    TEST_ASSERT(write_table(path, DSF_DT_F8_E4M3, 100, 100) == 0 && dsf_st_open(path, &st, &e) == 0);
    TEST_ASSERT(dsf_engram_table_bind(dsf_st_find(st, "embed.weight"), dsf_st_find(st, "embed.scale"), 100, 32, &tb,
                                      &e) == 0);
    TEST_ASSERT(dsf_engram_table_bind(dsf_st_find(st, "embed.weight"), dsf_st_find(st, "embed.scale"), 101, 32, &tb,
                                      &e) != 0 && strstr(e.msg, "rows") && strstr(e.msg, "embed.weight"));
    dsf_st_close(st);
    TEST_ASSERT(write_table(path, DSF_DT_BF16, 100, 100) == 0 && dsf_st_open(path, &st, &e) == 0);
    TEST_ASSERT(dsf_engram_table_bind(dsf_st_find(st, "embed.weight"), dsf_st_find(st, "embed.scale"), 100, 32, &tb,
                                      &e) != 0 && strstr(e.msg, "BF16") && strstr(e.msg, "F8_E4M3"));
    dsf_st_close(st);
    TEST_ASSERT(write_table(path, DSF_DT_F8_E4M3, 100, 99) == 0 && dsf_st_open(path, &st, &e) == 0);
    TEST_ASSERT(dsf_engram_table_bind(dsf_st_find(st, "embed.weight"), dsf_st_find(st, "embed.scale"), 100, 32, &tb,
                                      &e) != 0 && strstr(e.msg, "scale 99"));
    dsf_st_close(st);
    TEST_ASSERT(write_table(path, DSF_DT_F8_E4M3, 100, 100) == 0 && truncate(path, 2000) == 0);
    TEST_ASSERT(dsf_st_open(path, &st, &e) != 0 && strstr(e.msg, "t.safetensors"));
    printf("     short file: %s\n", e.msg);
    unlink(path);
    rmdir(dir);
}

// The tokens-as-A grid: every 8-row chunk of every token tile falls in exactly one block, at any split and tail.
static void test_wgt_tiles(void) {
    static unsigned char seen[40][160];
    const int Ts[] = {1, 64, 127, 128, 129, 200, 256, 300, 4096, 4160}, subs[] = {1, 2, 4};
    for (int it = 0; it < 10; it++)
        for (int N = 32; N <= 1280; N += 32)
            for (int is = 0; is < 3; is++) {
                int tt = (Ts[it] + 127) / 128, F = tt * ((N + 255) / 256), sub = subs[is];
                const int tails[] = {0, 1, F / 3, F - 1, F};
                for (int ia = 0; ia < 5; ia++) {
                    int tail = tails[ia] < 0 ? 0 : tails[ia], blocks = tail + (F - tail) * sub, bad = 0;
                    memset(seen, 0, sizeof seen);
                    for (int b = 0; b < blocks; b++) {
                        int tile = -1;
                        int64_t n0 = -1;
                        int wide = dsf_eng_wgt_tile(b, tt, tail, sub, 256, &tile, &n0);
                        bad |= tile < 0 || tile >= tt || n0 % 64 || wide != (b < tail ? 256 : 256 / sub);
                        for (int64_t r = n0; !bad && r < n0 + wide && r < N; r += 8) seen[tile][r / 8]++;
                    }
                    for (int t = 0; t < tt; t++)
                        for (int c = 0; c < N / 8; c++) bad |= seen[t][c] != 1;
                    TEST_ASSERT_MSG(!bad, "T %d, N %d, sub %d, tail %d of %d", Ts[it], N, sub, tail, F);
                }
            }
    // The tail's blocks fit one wave: 4096 tokens (3200 tiles on 132) in quarters; 68 last tiles stay whole.
    TEST_ASSERT(dsf_eng_wgt_tail_sub(3200, 132) == 4 && dsf_eng_wgt_tail_sub(800, 132) == 4);
    TEST_ASSERT(dsf_eng_wgt_tail_sub(200, 132) == 1 && dsf_eng_wgt_tail_sub(264, 132) == 1);
    TEST_ASSERT(dsf_eng_wgt_tail_sub(60, 132) == 2 && dsf_eng_wgt_tail_sub(100, 132) == 1);
    for (int64_t F = 1; F < 2000; F++) {
        int sub = dsf_eng_wgt_tail_sub(F, 132);
        TEST_ASSERT_MSG(sub == 1 || (F % 132) * sub <= 132, "%lld tiles: %d blocks each", (long long)F, sub);
    }
}

#ifdef DSF_HAVE_CUDA
// The CUDA GEMM refuses g (1 token, 32 x 32) before touching the device, naming g, `what` and `also` (if given).
static void wkv_refuses(const dsf_geom *g, int64_t K, const char *what, const char *also) {
    static _Alignas(16) uint8_t buf[4096];
    dsf_err e;
    TEST_ASSERT_MSG(dsf_engram_wkv_cuda_v(NULL, g, buf, buf, buf, buf, (uint16_t *)buf, 1, 32, K, DSF_ENG_REAL, &e),
                    "%s accepted", g->name);
    TEST_ASSERT_MSG(strstr(e.msg, what) && (!also || strstr(e.msg, also)), "%s", e.msg);
}

// Geometries without a kernel or with too little shared memory, and a K that is not a multiple of 32.
static void test_wkv_geometry_refusals(void) {
    const dsf_geom small = {"wg_small", 160, 1024, {3, 8, 1, 36}}, none = {"wg_b24", 160, 65536, {3, 24, 1, 36}};
    const dsf_geom shallow = {"wg_one_stage", 160, 65536, {3, 8, 1, 33}}, old = {"narrow_w4", 32, 16384, {2, 1, 4, 4}};
    // Four stages of 64 weight rows and 8 token rows of 128 bytes, each with its 40 scales as floats, the alignment.
    wkv_refuses(&small, 32, "wg_small", "38528");
    wkv_refuses(&small, 32, "1024", NULL);
    wkv_refuses(&none, 32, "wg_b24", "no such kernel variant");
    wkv_refuses(&shallow, 32, "wg_one_stage", "no such kernel variant");
    wkv_refuses(&old, 32, "narrow_w4", "no such kernel variant");
    // The tokens-as-A kernel: a thread count that is not 128 per warpgroup plus whole producer warps, bad flags.
    const dsf_geom odd = {"wgt_t296", 296, 200000, {4, 128, 2, 4}};
    const dsf_geom flag = {"wgt_parts8", 512, 200000, {4, 128, 3, 388}};
    const dsf_geom hs_db = {"wgt_hs_db", 512, 200000, {4, 128, 3, 164}};
    const dsf_geom hs_ws = {"wgt_hs_ws", 384, 200000, {4, 128, 1, 196}};
    const dsf_geom neg = {"wgt_neg", 512, 200000, {4, 128, 3, -124}};
    const dsf_geom tiny = {"wgt_small", 288, 4096, {4, 128, 2, 4}}, big = {"wgt_p512", 384, 206336, {4, 256, 2, 516}};
    const dsf_geom t3 = {"wgt_t3", 384, 206336, {4, 256, 2, 388, 3}};
    const dsf_geom t2 = {"wgt_hs_t2", 512, 177408, {4, 128, 3, 132, 2}};
    wkv_refuses(&odd, 32, "wgt_t296", "no such kernel variant");
    wkv_refuses(&flag, 32, "wgt_parts8", "no such kernel variant");
    wkv_refuses(&hs_db, 32, "wgt_hs_db", "no such kernel variant");
    wkv_refuses(&hs_ws, 32, "wgt_hs_ws", "no such kernel variant");
    wkv_refuses(&neg, 32, "wgt_neg", "no such kernel variant");
    wkv_refuses(&big, 32, "wgt_p512", "no such kernel variant");
    // Tiles split in 1, 2 or 4 blocks only, and only by the four-part kernel.
    wkv_refuses(&t3, 32, "wgt_t3", "split in 3");
    wkv_refuses(&t2, 32, "wgt_hs_t2", "four-part kernel");
    // Four stages of 256 rows of 128 bytes, 4 x 128 token and 4 x 4 weight scale floats, and the alignment.
    wkv_refuses(&tiny, 32, "wgt_small", "140544");
    wkv_refuses(dsf_engram_cuda_geom(DSF_ENG_ROLE_WKV_DECODE), 48, "multiples of 32", NULL);
}

// Whether g is an element of the list a geometry accessor returns (the contract checks the entries of those lists).
static int in_list(const dsf_geom *g, const dsf_geom *(*list)(int *n)) {
    int n = 0;
    const dsf_geom *l = list(&n);
    return g >= l && g < l + n;
}

// The engine's roles are entries of their kernels' contract lists; wkv by size, accepted at real dims with no tokens.
static void test_wkv_engine_geoms(void) {
    static _Alignas(16) uint8_t buf[64];
    const char *dec = "wg_b8_w1_u1_s4", *split = "wgt_w224_x1_ws2_pw4_s4_hs", *p4 = "wgt_w256_x2_pw4_s4_p4";
    const char *halves = "wgt_w128_x3_pw4_s4_hs";
    const int64_t Ts[] = {1, 8, 9, 24, 25, 64, 65, 128, 129, 192, 193, 256, 320, 576, 577, 640, 641, 4096, 4160};
    const char *want[] = {dec, dec, split, split, split, split, p4, p4, halves, halves,
                          p4,  p4,  p4,    p4,    p4,    p4,    p4, p4, p4};
    dsf_err e;
    TEST_ASSERT(in_list(dsf_engram_cuda_geom(DSF_ENG_ROLE_EMBED_QUANT), dsf_engram_embed_cuda_geoms));
    TEST_ASSERT(in_list(dsf_engram_cuda_geom(DSF_ENG_ROLE_WKV_DECODE), dsf_engram_wkv_cuda_geoms));
    TEST_ASSERT(in_list(dsf_engram_cuda_geom(DSF_ENG_ROLE_WKV_PREFILL), dsf_engram_wkv_cuda_geoms));
    TEST_ASSERT(in_list(dsf_engram_cuda_geom(DSF_ENG_ROLE_GATE_WARP), dsf_engram_gate_cuda_geoms));
    for (int i = 0; i < (int)(sizeof Ts / sizeof Ts[0]); i++) {
        const dsf_geom *g = dsf_engram_cuda_wkv_geom(Ts[i]);
        TEST_ASSERT_MSG(in_list(g, dsf_engram_wkv_cuda_geoms), "%lld tokens: %s", (long long)Ts[i], g->name);
        TEST_ASSERT_MSG(!strcmp(g->name, want[i]), "%lld tokens: %s, not %s", (long long)Ts[i], g->name, want[i]);
        int rc = dsf_engram_wkv_cuda_v(NULL, g, buf, buf, buf, buf, (uint16_t *)buf, 0, 25600, 6144, DSF_ENG_REAL, &e);
        TEST_ASSERT_MSG(rc == 0, "%s: %s", g->name, e.msg);
    }
}

// The gate refuses g at D 5120 before touching the device (rows offset by `skew` elements), naming `what` and `also`.
static void gate_refuses(const dsf_geom *g, int skew, const char *what, const char *also) {
    static _Alignas(16) uint16_t b[64];
    dsf_err e;
    TEST_ASSERT_MSG(dsf_engram_gate_cuda(NULL, g, b + skew, b, b, b, (const int32_t *)b, b + skew, 1, 4, 5120, 1e-20f,
                                         &e),
                    "%s accepted", g->name);
    TEST_ASSERT_MSG(strstr(e.msg, what) && strstr(e.msg, also), "%s", e.msg);
}

// Staged gate refusals (kind, shared memory, alignment) without a device; the engine's gate geometries by size.
static void test_gate_geoms(void) {
    const dsf_geom small = {"st_small", 256, 1024, {8, 1}}, kind = {"st_kind2", 256, 40960, {8, 2}};
    gate_refuses(&small, 0, "st_small", "40960");
    gate_refuses(&small, 0, "1024", "40960");
    gate_refuses(&kind, 0, "st_kind2", "no such kernel variant");
    gate_refuses(dsf_engram_cuda_gate_geom(1), 1, dsf_engram_cuda_gate_geom(1)->name, "16-byte");
    const int64_t Ts[] = {1, 64, DSF_ENG_GATE_STAGED_MAX, DSF_ENG_GATE_STAGED_MAX + 1, 4096};
    for (int i = 0; i < 5; i++) {
        const dsf_geom *g = dsf_engram_cuda_gate_geom(Ts[i]);
        TEST_ASSERT_MSG(in_list(g, dsf_engram_gate_cuda_geoms), "%lld tokens: %s", (long long)Ts[i], g->name);
        TEST_ASSERT_MSG((g->p[1] == 1) == (Ts[i] <= DSF_ENG_GATE_STAGED_MAX), "%lld tokens: %s", (long long)Ts[i],
                        g->name);
    }
}
#endif

int main(void) {
    TEST_RUN(test_real_table_sizes);
    TEST_RUN(test_multiplier_table);
    TEST_RUN(test_hash_by_hand);
    TEST_RUN(test_chunked_and_rollback);
    TEST_RUN(test_map_file);
    TEST_RUN(test_corrupt_tables);
    TEST_RUN(test_wgt_tiles);
#ifdef DSF_HAVE_CUDA
    TEST_RUN(test_wkv_geometry_refusals);
    TEST_RUN(test_wkv_engine_geoms);
    TEST_RUN(test_gate_geoms);
#endif
    TEST_END();
}
