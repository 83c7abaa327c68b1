// Contract records of bf16_round and fp8_row_dequant: operands, drawers, cases, geometries, implementations.
#include <string.h>

#include "contract/draw.h"
#include "kern/fmt/fmt_record.h"

static int64_t count_n(const dsf_case *c) {
    return c->n;
}
static int64_t count_n32(const dsf_case *c) {
    return c->n / 32;
}

// fp32 activations at 2^-8..2^8 with random mantissas, an eighth of them exact bf16 ties, and 1 in 64 an edge value.
static void fill_f32(void *buf, int64_t count, const dsf_case *c, uint64_t *rng) {
    static const uint32_t edges[] = {
        0x00000000u, 0x80000000u, 0x80000001u, 0x00400000u, 0x807FFFFFu, 0x3F7F8000u, 0x3F808000u,
        0x7F7F8000u, 0x7F7F7FFFu, 0x7F800000u, 0xFF800000u, 0x7FC00001u, 0xFFA00000u, 0x7F800001u,
    };
    (void)c;
    for (int64_t i = 0; i < count; i++) {
        uint64_t r = dsf_rng_next(rng);
        uint32_t u;
        if (r % 64 == 0) {
            u = edges[(r >> 8) % (sizeof edges / sizeof edges[0])];
        } else {
            u = (uint32_t)(r >> 32) & 0x807FFFFFu;
            u |= (uint32_t)(119 + (r >> 8) % 17) << 23;
            if ((r >> 16) % 8 == 0) u = (u & 0xFFFF0000u) | 0x8000u;
        }
        memcpy((uint8_t *)buf + 4 * i, &u, 4);
    }
}

// Every e4m3 code but the two NaNs, zeros of both signs included.
static void fill_e4m3(void *buf, int64_t count, const dsf_case *c, uint64_t *rng) {
    uint8_t *b = buf;
    (void)c;
    for (int64_t i = 0; i < count; i++) {
        do b[i] = (uint8_t)dsf_rng_next(rng);
        while ((b[i] & 0x7F) == 0x7F);
    }
}

// e8m0 bytes 110..135, scales 2^-17..2^8 as Engram tables carry.
static void fill_e8m0(void *buf, int64_t count, const dsf_case *c, uint64_t *rng) {
    uint8_t *b = buf;
    (void)c;
    for (int64_t i = 0; i < count; i++) b[i] = (uint8_t)(110 + dsf_rng_next(rng) % 26);
}

static int bf16_round_cpu(const dsf_call *c, dsf_fmt_fault f, dsf_err *e) {
    return dsf_bf16_round_cpu_v(c->pool, c->g, c->ops[0], c->ops[1], c->c->rows, c->c->n, f, e);
}
DSF_FMT_RUNS(bf16_round, cpu, bf16_round_cpu)

static int dequant_cpu(const dsf_call *c, dsf_fmt_fault f, dsf_err *e) {
    return dsf_fp8_row_dequant_cpu_v(c->pool, c->g, c->ops[0], c->ops[1], c->ops[2], c->c->rows, c->c->n, f, e);
}
DSF_FMT_RUNS(dequant, cpu, dequant_cpu)

#ifdef DSF_HAVE_CUDA
static int bf16_round_cuda(const dsf_call *c, dsf_fmt_fault f, dsf_err *e) {
    return dsf_bf16_round_cuda_v(c->stream, c->g, c->ops[0], c->ops[1], c->c->rows, c->c->n, f, e);
}
DSF_FMT_RUNS(bf16_round, cuda, bf16_round_cuda)
DSF_FMT_ATTRS(bf16_round, dsf_bf16_round_cuda_attrs)

static int dequant_cuda(const dsf_call *c, dsf_fmt_fault f, dsf_err *e) {
    return dsf_fp8_row_dequant_cuda_v(c->stream, c->g, c->ops[0], c->ops[1], c->ops[2], c->c->rows, c->c->n, f, e);
}
DSF_FMT_RUNS(dequant, cuda, dequant_cuda)
DSF_FMT_ATTRS(dequant, dsf_fp8_row_dequant_cuda_attrs)
#endif

// CPU geometries {name, workers, -, {rows per chunk, inner block}}; the first is the simplest walk.
static const dsf_geom round_cpu_geoms[] = {
    {"w1_c1_b16", 1, 0, {1, 16}},
    {"w2_c4_b64", 2, 0, {4, 64}},
    {"all_c16_b4096", 0, 0, {16, 4096}},
    {"w3_c2_b1", 3, 0, {2, 1}},
};

static const dsf_geom dequant_cpu_geoms[] = {
    {"w1_c1_b32", 1, 0, {1, 32}},
    {"w2_c4_b64", 2, 0, {4, 64}},
    {"all_c16_b256", 0, 0, {16, 256}},
    {"w3_c2_b96", 3, 0, {2, 96}},
};

#ifdef DSF_HAVE_CUDA
// CUDA geometries {name, threads per block, dynamic smem, {rows per block, elements per thread}}.
static const dsf_geom round_cuda_geoms[] = {
    {"t32_r1_e1", 32, 0, {1, 1}},     {"t128_r1_e2", 128, 0, {1, 2}}, {"t256_r4_e4", 256, 0, {4, 4}},
    {"t1024_r2_e1", 1024, 0, {2, 1}}, {"t64_r16_e8", 64, 0, {16, 8}},
};

static const dsf_geom round_cuda_big[] = {
    {"t32_r1_e1", 32, 0, {1, 1}},
    {"t256_r4_e4_smem200k", 256, 200 * 1024, {4, 4}},
};

static const dsf_geom dequant_cuda_geoms[] = {
    {"t32_r1_e1", 32, 0, {1, 1}},     {"t128_r2_e2", 128, 0, {2, 2}}, {"t256_r4_e8", 256, 0, {4, 8}},
    {"t1024_r1_e4", 1024, 0, {1, 4}}, {"t64_r16_e1", 64, 0, {16, 1}},
};

static const dsf_geom dequant_cuda_big[] = {
    {"t32_r1_e1", 32, 0, {1, 1}},
    {"t256_r4_e8_smem200k", 256, 200 * 1024, {4, 8}},
};
#endif

static const dsf_impl bf16_round_impls[] = {
    DSF_FMT_CPU_IMPLS(bf16_round, round_cpu_geoms, "whole rows per worker, inner blocks of p[1] elements",
                      "never writes the last element of the last row",
                      "inner blocks of 64 or more elements round toward zero",
                      "rounds half away from zero instead of half to even", "rounds toward zero"),
#ifdef DSF_HAVE_CUDA
    DSF_FMT_CUDA_IMPLS(bf16_round, round_cuda_geoms, round_cuda_big, "p[0] rows per block, p[1] elements per thread",
                       "never writes the last element of the last row",
                       "geometries with 2 or more elements per thread round toward zero",
                       "rounds half away from zero instead of half to even", "rounds toward zero"),
#endif
};

static const dsf_operand bf16_round_ops[] = {
    {"x", DSF_ELEM_F32, DSF_IN, 1, count_n, DSF_DRAW_CUSTOM, fill_f32},
    {"y", DSF_ELEM_BF16, DSF_OUT, 1, count_n, DSF_DRAW_ACT, NULL},
};

// Cases {name, rows, n}: model widths (V4.1 5120, V4 4096, Engram 6144, latent 512), ragged tails and single rows.
static const dsf_case bf16_round_cases[] = {
    {"r64_n5120", 64, 5120, 0, 0}, {"r17_n4096", 17, 4096, 0, 0}, {"r5_n6144", 5, 6144, 0, 0},
    {"r1_n512", 1, 512, 0, 0},     {"r3_n33", 3, 33, 0, 0},       {"r2_n1", 2, 1, 0, 0},
    {"r13_n255", 13, 255, 0, 0},
};

const dsf_record dsf_rec_bf16_round = {
    "bf16_round",
    "fmt",
    "f32 [R, n] -> bf16 [R, n], round to nearest even, NaN kept, overflow to inf",
    bf16_round_ops,
    DSF_FMT_LEN(bf16_round_ops),
    dsf_fmt_ref_bf16_round,
    bf16_round_impls,
    DSF_FMT_LEN(bf16_round_impls),
    bf16_round_cases,
    DSF_FMT_LEN(bf16_round_cases),
    0.0,
    0.0,
};

static const dsf_impl dequant_impls[] = {
    DSF_FMT_CPU_IMPLS(dequant, dequant_cpu_geoms, "whole rows per worker, one scale load per 32 elements",
                      "never writes the last element of the last row",
                      "inner blocks over 32 elements apply their first scale to the whole block",
                      "leaves the scale out (2^0 for every block)", "applies each row's first scale to the whole row"),
#ifdef DSF_HAVE_CUDA
    DSF_FMT_CUDA_IMPLS(dequant, dequant_cuda_geoms, dequant_cuda_big, "p[0] rows per block, p[1] elements per thread",
                       "never writes the last element of the last row",
                       "geometries of 2 or more rows per block read every row's scales from the block's first row",
                       "leaves the scale out (2^0 for every block)", "applies each row's first scale to the whole row"),
#endif
};

static const dsf_operand dequant_ops[] = {
    {"q", DSF_ELEM_E4M3, DSF_IN, 1, count_n, DSF_DRAW_CUSTOM, fill_e4m3},
    {"s", DSF_ELEM_E8M0, DSF_IN, 1, count_n32, DSF_DRAW_CUSTOM, fill_e8m0},
    {"y", DSF_ELEM_BF16, DSF_OUT, 1, count_n, DSF_DRAW_ACT, NULL},
};

// Cases {name, rows, n}: Engram rows of 256 (and a token's 24 of them flat, 6144), one block, three blocks.
static const dsf_case dequant_cases[] = {
    {"r64_n256", 64, 256, 0, 32}, {"r17_n256", 17, 256, 0, 32},   {"r1_n256", 1, 256, 0, 32},
    {"r5_n256", 5, 256, 0, 32},   {"r64_n6144", 64, 6144, 0, 32}, {"r1_n32", 1, 32, 0, 32},
    {"r3_n96", 3, 96, 0, 32},
};

const dsf_record dsf_rec_fp8_row_dequant = {
    "fp8_row_dequant",
    "fmt",
    "e4m3 [R, n] + e8m0 [R, n/32] -> bf16 [R, n] = bf16(q * 2^(s-127)) (Engram rows)",
    dequant_ops,
    DSF_FMT_LEN(dequant_ops),
    dsf_fmt_ref_fp8_row_dequant,
    dequant_impls,
    DSF_FMT_LEN(dequant_impls),
    dequant_cases,
    DSF_FMT_LEN(dequant_cases),
    0.0,
    0.0,
};
