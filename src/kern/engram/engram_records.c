// Contract records of engram_hash, engram_embed_quant and engram_gate: operands, drawers, cases, implementations.
#include <stdlib.h>
#include <string.h>

#include "contract/draw.h"
#include "kern/engram/engram_internal.h"
#include "kern/engram/engram_record.h"

static int64_t count_4(const dsf_case *c) {
    (void)c;
    return 4;
}
static int64_t count_24(const dsf_case *c) {
    (void)c;
    return 24;
}

// Histories with sequence starts (-1 beyond the start), DEAD spans of image tokens and ids over the whole vocab.
static void fill_hist(void *buf, int64_t count, const dsf_case *c, uint64_t *rng) {
    int64_t *h = buf;
    (void)c;
    for (int64_t r = 0; r < count / 4; r++) {
        uint64_t x = dsf_rng_next(rng);
        int start = x % 4 == 0 ? (int)((x >> 8) % 4) : 4;
        for (int k = 0; k < 4; k++) {
            uint64_t y = dsf_rng_next(rng);
            h[4 * r + k] = k >= start || y % 7 == 0 ? DSF_ENGRAM_DEAD : (int64_t)(y >> 16) % 99092;
        }
    }
}

// The real V4.1 hash (layers 1 and 14) over a map with 99092 compressed ids and map[2] = 1, built once.
static const dsf_engram_hash *real_hash(void) {
    static dsf_engram_hash h;
    static int ready;
    if (ready) return &h;
    dsf_args a;
    memset(&a, 0, sizeof a);
    a.n_engram_layers = 2, a.engram_layers[0] = 1, a.engram_layers[1] = 14;
    a.engram_num_embeddings[0] = 384006168, a.engram_num_embeddings[1] = 384016682;
    a.engram_max_ngram_size = 4, a.engram_n_heads = 8, a.engram_vocab_size = 16000000, a.engram_pad_id = 2;
    a.engram_compressed_vocab_size = 99092;
    int32_t *ids = dsf_malloc(sizeof(int32_t) * 129280);
    for (int i = 0; i < 129280; i++) ids[i] = i < 2 ? i : (i - 1 < 99091 ? i - 1 : 99091);
    dsf_engram_map m;
    dsf_err e;
    DSF_ASSERT(dsf_engram_map_from_ids(ids, 129280, 99092, &m, &e) == 0);
    DSF_ASSERT(dsf_engram_hash_init(&a, &m, &h, &e) == 0);
    dsf_engram_map_free(&m);
    free(ids);
    ready = 1;
    return &h;
}

typedef struct hash_job {
    const int64_t *hist;
    int64_t *rows;
    int64_t T;
    int layer, fault;
} hash_job;

static void hash_rows(void *ctx, int64_t r0, int64_t r1) {
    const hash_job *j = ctx;
    const dsf_engram_hash *h = real_hash();
    for (int64_t r = r0; r < r1; r++) {
        int64_t hist[4], ids[24];
        // The blocking control feeds DEAD entries as pad tokens, so they block only their own shift.
        for (int k = 0; k < 4; k++) hist[k] = j->fault == DSF_ENG_BLOCKING && j->hist[4 * r + k] < 0 ? h->pad : j->hist[4 * r + k];
        dsf_engram_hash_token(h, j->layer, hist, ids);
        for (int col = 0; col < 24; col++) {
            int dst = j->fault == DSF_ENG_COLS ? (col % 8) * 3 + col / 8 : col;
            if (!(j->fault == DSF_ENG_SKIP && r == j->T - 1 && col == 23)) j->rows[24 * r + dst] = ids[col];
        }
    }
}

static int hash_cpu(const dsf_call *c, int fault, dsf_err *e) {
    if (c->c->n != 1 && c->c->n != 14) return dsf_fail(e, "engram_hash: case layer %lld", (long long)c->c->n);
    if (c->g->p[0] < 1) return dsf_fail(e, "engram_hash geometry %s: rows per chunk %d", c->g->name, c->g->p[0]);
    real_hash();
    hash_job j = {c->ops[0], c->ops[1], c->c->rows, c->c->n == 14, fault};
    dsf_eng_units_run(c->pool, c->g->threads, c->c->rows, c->g->p[0], hash_rows, &j);
    return 0;
}
DSF_ENG_RUN(hash_cpu_real, hash_cpu, DSF_ENG_REAL)
DSF_ENG_RUN(hash_cpu_skip, hash_cpu, DSF_ENG_SKIP)
DSF_ENG_RUN(hash_cpu_cols, hash_cpu, DSF_ENG_COLS)
DSF_ENG_RUN(hash_cpu_blocking, hash_cpu, DSF_ENG_BLOCKING)

static const dsf_geom rows_cpu_geoms[] = {
    {"w1_c1", 1, 0, {1}},
    {"w2_c3", 2, 0, {3}},
    {"all_c16", 0, 0, {16}},
};

static const dsf_impl hash_impls[] = {
    DSF_ENG_IMPL("cpu", DSF_BACKEND_CPU, hash_cpu_real, rows_cpu_geoms, DSF_GATE_NONE, "uint64 XOR chain, 24 columns", NULL),
    DSF_ENG_IMPL("cpu_ctl_skip", DSF_BACKEND_CPU, hash_cpu_skip, rows_cpu_geoms, DSF_GATE_1,
                 "never writes the last column of the last row", NULL),
    DSF_ENG_IMPL("cpu_ctl_cols", DSF_BACKEND_CPU, hash_cpu_cols, rows_cpu_geoms, DSF_GATE_3,
                 "hash heads in head-major column order instead of n-gram-major", NULL),
    DSF_ENG_IMPL("cpu_ctl_blocking", DSF_BACKEND_CPU, hash_cpu_blocking, rows_cpu_geoms, DSF_GATE_3,
                 "a DEAD or pre-start shift blocks only itself, not the longer n-grams", NULL),
};

static const dsf_operand hash_ops[] = {
    {"hist", DSF_ELEM_I64, DSF_IN, 1, count_4, DSF_DRAW_CUSTOM, fill_hist},
    {"rows", DSF_ELEM_I64, DSF_OUT, 1, count_24, DSF_DRAW_ACT, NULL},
};

// Cases {name, rows, n = Engram layer id}.
static const dsf_case hash_cases[] = {
    {"r64_l1", 64, 1, 0, 0}, {"r17_l14", 17, 14, 0, 0}, {"r1_l1", 1, 1, 0, 0}, {"r5_l14", 5, 14, 0, 0},
};

const dsf_record dsf_rec_engram_hash = {
    "engram_hash", "engram", "compressed ids at t..t-3 (-1 DEAD or before start) -> 24 table row ids (spec §3.2.6)",
    hash_ops, DSF_ENG_LEN(hash_ops), dsf_engram_ref_hash, hash_impls, DSF_ENG_LEN(hash_impls), hash_cases,
    DSF_ENG_LEN(hash_cases), 0.0, 0.0,
};

static int64_t count_n(const dsf_case *c) {
    return c->n;
}
static int64_t count_n32(const dsf_case *c) {
    return c->n / 32;
}

// Table codes: every e4m3 code but the NaNs; table scales 2^-17..2^8 as the tables carry.
static void fill_codes(void *buf, int64_t count, const dsf_case *c, uint64_t *rng) {
    uint8_t *b = buf;
    (void)c;
    for (int64_t i = 0; i < count; i++) {
        do b[i] = (uint8_t)dsf_rng_next(rng);
        while ((b[i] & 0x7F) == 0x7F);
    }
}
static void fill_scales(void *buf, int64_t count, const dsf_case *c, uint64_t *rng) {
    uint8_t *b = buf;
    (void)c;
    for (int64_t i = 0; i < count; i++) b[i] = (uint8_t)(110 + dsf_rng_next(rng) % 26);
}

static int embed_cpu(const dsf_call *c, int f, dsf_err *e) {
    return dsf_engram_embed_quant_cpu_v(c->pool, c->g, c->ops[0], c->ops[1], c->ops[2], c->ops[3], c->c->rows, c->c->n,
                                        f, e);
}
DSF_ENG_RUN(embed_cpu_real, embed_cpu, DSF_ENG_REAL)
DSF_ENG_RUN(embed_cpu_skip, embed_cpu, DSF_ENG_SKIP)
DSF_ENG_RUN(embed_cpu_wrong, embed_cpu, DSF_ENG_WRONG)

#ifdef DSF_HAVE_CUDA
static int embed_cuda(const dsf_call *c, int f, dsf_err *e) {
    return dsf_engram_embed_quant_cuda_v(c->stream, c->g, c->ops[0], c->ops[1], c->ops[2], c->ops[3], c->c->rows,
                                         c->c->n, f, e);
}
DSF_ENG_RUN(embed_cuda_real, embed_cuda, DSF_ENG_REAL)
DSF_ENG_RUN(embed_cuda_skip, embed_cuda, DSF_ENG_SKIP)
DSF_ENG_RUN(embed_cuda_wrong, embed_cuda, DSF_ENG_WRONG)
DSF_ENG_ATTRS(embed_attrs_real, 0, DSF_ENG_REAL)
DSF_ENG_ATTRS(embed_attrs_skip, 0, DSF_ENG_SKIP)
DSF_ENG_ATTRS(embed_attrs_wrong, 0, DSF_ENG_WRONG)

// {name, threads, dyn smem, {grid cap in units of 132 blocks}}.
static const dsf_geom warp_cuda_geoms[] = {
    {"t32_w1", 32, 0, {1}}, {"t128_w4", 128, 0, {4}}, {"t256_w64", 256, 0, {64}}, {"t1024_w2", 1024, 0, {2}},
};
const dsf_geom *dsf_engram_embed_cuda_geoms(int *n) {
    *n = DSF_ENG_LEN(warp_cuda_geoms);
    return warp_cuda_geoms;
}
static const dsf_geom warp_cuda_big[] = {
    {"t32_w1", 32, 0, {1}},
    {"t256_w64_smem200k", 256, 200 * 1024, {64}},
};
#endif

static const dsf_impl embed_impls[] = {
    DSF_ENG_IMPL("cpu", DSF_BACKEND_CPU, embed_cpu_real, rows_cpu_geoms, DSF_GATE_NONE, "whole tokens per worker", NULL),
    DSF_ENG_IMPL("cpu_ctl_skip", DSF_BACKEND_CPU, embed_cpu_skip, rows_cpu_geoms, DSF_GATE_1,
                 "never writes the last code of the last row", NULL),
    DSF_ENG_IMPL("cpu_ctl_scale", DSF_BACKEND_CPU, embed_cpu_wrong, rows_cpu_geoms, DSF_GATE_3,
                 "act scale exponent off by one", NULL),
#ifdef DSF_HAVE_CUDA
    DSF_ENG_IMPL("cuda", DSF_BACKEND_CUDA, embed_cuda_real, warp_cuda_geoms, DSF_GATE_NONE,
                 "a warp per 32-block, warp-max amax", embed_attrs_real),
    DSF_ENG_IMPL("cuda_ctl_skip", DSF_BACKEND_CUDA, embed_cuda_skip, warp_cuda_geoms, DSF_GATE_1,
                 "never writes the last code of the last row", embed_attrs_skip),
    DSF_ENG_IMPL("cuda_ctl_scale", DSF_BACKEND_CUDA, embed_cuda_wrong, warp_cuda_geoms, DSF_GATE_3,
                 "act scale exponent off by one", embed_attrs_wrong),
    DSF_ENG_IMPL("cuda_ctl_smem", DSF_BACKEND_CUDA, embed_cuda_real, warp_cuda_big, DSF_GATE_LIMITS,
                 "the kernel under a geometry declaring 200 KB of dynamic shared memory", embed_attrs_real),
#endif
};

static const dsf_operand embed_ops[] = {
    {"codes", DSF_ELEM_E4M3, DSF_IN, 1, count_n, DSF_DRAW_CUSTOM, fill_codes},
    {"scales", DSF_ELEM_E8M0, DSF_IN, 1, count_n32, DSF_DRAW_CUSTOM, fill_scales},
    {"xq", DSF_ELEM_E4M3, DSF_OUT, 1, count_n, DSF_DRAW_ACT, NULL},
    {"xs", DSF_ELEM_E8M0, DSF_OUT, 1, count_n32, DSF_DRAW_ACT, NULL},
};

// Cases {name, rows, n}: a token's 24 real rows flat (6144), the tiny synth's 6 x 32, one block.
static const dsf_case embed_cases[] = {
    {"r64_n6144", 64, 6144, 0, 0}, {"r17_n6144", 17, 6144, 0, 0}, {"r1_n6144", 1, 6144, 0, 0},
    {"r5_n192", 5, 192, 0, 0},     {"r3_n32", 3, 32, 0, 0},
};

const dsf_record dsf_rec_engram_embed_quant = {
    "engram_embed_quant", "engram",
    "e4m3 rows [R, n] + e8m0 [R, n/32] -> act_quant_32(bf16(q * 2^(s-127))): e4m3 [R, n] + e8m0 [R, n/32]",
    embed_ops, DSF_ENG_LEN(embed_ops), dsf_engram_ref_embed_quant, embed_impls, DSF_ENG_LEN(embed_impls), embed_cases,
    DSF_ENG_LEN(embed_cases), 0.0, 0.0,
};
