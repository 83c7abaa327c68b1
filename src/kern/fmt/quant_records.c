// Contract records of the block quantisers: act_quant_fp8 (blocks 32 and 128), fp4_quant_e8m0, fp4_quant_e4m3.
#include "kern/fmt/fmt_record.h"

static int64_t count_n(const dsf_case *c) {
    return c->n;
}
static int64_t count_blocks(const dsf_case *c) {
    return c->n / c->blk;
}

static int quant_cpu(const dsf_call *c, dsf_quant_kind kind, dsf_fmt_fault f, dsf_err *e) {
    return dsf_block_quant_cpu_v(c->pool, c->g, kind, (int)c->c->blk, c->ops[0], c->ops[1], c->ops[2], c->c->rows,
                                 c->c->n, f, e);
}

static int fp8_cpu(const dsf_call *c, dsf_fmt_fault f, dsf_err *e) {
    return quant_cpu(c, DSF_QUANT_FP8, f, e);
}
static int e8m0_cpu(const dsf_call *c, dsf_fmt_fault f, dsf_err *e) {
    return quant_cpu(c, DSF_QUANT_FP4_E8M0, f, e);
}
static int e4m3_cpu(const dsf_call *c, dsf_fmt_fault f, dsf_err *e) {
    return quant_cpu(c, DSF_QUANT_FP4_E4M3, f, e);
}
DSF_FMT_RUNS(fp8, cpu, fp8_cpu)
DSF_FMT_RUNS(e8m0, cpu, e8m0_cpu)
DSF_FMT_RUNS(e4m3, cpu, e4m3_cpu)

#ifdef DSF_HAVE_CUDA
static int quant_cuda(const dsf_call *c, dsf_quant_kind kind, dsf_fmt_fault f, dsf_err *e) {
    return dsf_block_quant_cuda_v(c->stream, c->g, kind, (int)c->c->blk, c->ops[0], c->ops[1], c->ops[2], c->c->rows,
                                  c->c->n, f, e);
}

static int fp8_cuda(const dsf_call *c, dsf_fmt_fault f, dsf_err *e) {
    return quant_cuda(c, DSF_QUANT_FP8, f, e);
}
static int e8m0_cuda(const dsf_call *c, dsf_fmt_fault f, dsf_err *e) {
    return quant_cuda(c, DSF_QUANT_FP4_E8M0, f, e);
}
static int e4m3_cuda(const dsf_call *c, dsf_fmt_fault f, dsf_err *e) {
    return quant_cuda(c, DSF_QUANT_FP4_E4M3, f, e);
}
DSF_FMT_RUNS(fp8, cuda, fp8_cuda)
DSF_FMT_RUNS(e8m0, cuda, e8m0_cuda)
DSF_FMT_RUNS(e4m3, cuda, e4m3_cuda)

static int fp8_attrs(const dsf_geom *g, int f, dsf_func_attrs *o, dsf_err *e) {
    return dsf_block_quant_cuda_attrs(DSF_QUANT_FP8, g, f, o, e);
}
static int e8m0_attrs(const dsf_geom *g, int f, dsf_func_attrs *o, dsf_err *e) {
    return dsf_block_quant_cuda_attrs(DSF_QUANT_FP4_E8M0, g, f, o, e);
}
static int e4m3_attrs(const dsf_geom *g, int f, dsf_func_attrs *o, dsf_err *e) {
    return dsf_block_quant_cuda_attrs(DSF_QUANT_FP4_E4M3, g, f, o, e);
}
DSF_FMT_ATTRS(fp8, fp8_attrs)
DSF_FMT_ATTRS(e8m0, e8m0_attrs)
DSF_FMT_ATTRS(e4m3, e4m3_attrs)
#endif

// CPU geometries {name, workers, -, {rows per chunk, amax lanes}}; the first keeps a single lane.
static const dsf_geom cpu_geoms[] = {
    {"w1_c1_l1", 1, 0, {1, 1}},
    {"w2_c4_l8", 2, 0, {4, 8}},
    {"all_c16_l32", 0, 0, {16, 32}},
    {"w3_c2_l4", 3, 0, {2, 4}},
};

#ifdef DSF_HAVE_CUDA
// CUDA geometries {name, threads per block, dynamic smem, {rows per block, lanes per block}}; lanes split the items.
static const dsf_geom fp8_cuda_geoms[] = {
    {"t32_r1_l32", 32, 0, {1, 32}},   {"t128_r1_l8", 128, 0, {1, 8}}, {"t256_r4_l32", 256, 0, {4, 32}},
    {"t1024_r2_l4", 1024, 0, {2, 4}}, {"t64_r16_l1", 64, 0, {16, 1}},
};

static const dsf_geom fp8_cuda_big[] = {
    {"t32_r1_l32", 32, 0, {1, 32}},
    {"t256_r4_l32_smem200k", 256, 200 * 1024, {4, 32}},
};

static const dsf_geom e8m0_cuda_geoms[] = {
    {"t32_r1_l16", 32, 0, {1, 16}},   {"t128_r1_l8", 128, 0, {1, 8}}, {"t256_r4_l16", 256, 0, {4, 16}},
    {"t1024_r2_l4", 1024, 0, {2, 4}}, {"t64_r16_l1", 64, 0, {16, 1}},
};

static const dsf_geom e8m0_cuda_big[] = {
    {"t32_r1_l16", 32, 0, {1, 16}},
    {"t256_r4_l16_smem200k", 256, 200 * 1024, {4, 16}},
};

static const dsf_geom e4m3_cuda_geoms[] = {
    {"t32_r1_l8", 32, 0, {1, 8}},     {"t128_r1_l4", 128, 0, {1, 4}}, {"t256_r4_l8", 256, 0, {4, 8}},
    {"t1024_r2_l2", 1024, 0, {2, 2}}, {"t64_r16_l1", 64, 0, {16, 1}},
};

static const dsf_geom e4m3_cuda_big[] = {
    {"t32_r1_l8", 32, 0, {1, 8}},
    {"t256_r4_l8_smem200k", 256, 200 * 1024, {4, 8}},
};
#endif

#define QUANT_CPU_WHAT "whole rows per worker, amax kept in p[1] lanes"
#define QUANT_CUDA_WHAT "p[1] lanes per block reduce its amax by xor shuffles, p[0] rows per CUDA block"
#define QUANT_SKIP "never writes the last code of the last row"
#define QUANT_CPU_GEOM "8 or more amax lanes leave the last lane out of the block's amax"
#define QUANT_CUDA_GEOM "blocks of 128 or more threads stop the lane reduction one step early"
#define QUANT_BATCH "takes each block's amax over its first half only"

static const dsf_impl fp8_impls[] = {
    DSF_FMT_CPU_IMPLS(fp8, cpu_geoms, QUANT_CPU_WHAT, QUANT_SKIP, QUANT_CPU_GEOM,
                      "scale exponent one too high (scale byte + 1, codes halved)", QUANT_BATCH),
#ifdef DSF_HAVE_CUDA
    DSF_FMT_CUDA_IMPLS(fp8, fp8_cuda_geoms, fp8_cuda_big, QUANT_CUDA_WHAT, QUANT_SKIP, QUANT_CUDA_GEOM,
                       "scale exponent one too high (scale byte + 1, codes halved)", QUANT_BATCH),
#endif
};

static const dsf_impl e8m0_impls[] = {
    DSF_FMT_CPU_IMPLS(e8m0, cpu_geoms, QUANT_CPU_WHAT, QUANT_SKIP, QUANT_CPU_GEOM,
                      "scale exponent one too high (scale byte + 1, codes halved)", QUANT_BATCH),
#ifdef DSF_HAVE_CUDA
    DSF_FMT_CUDA_IMPLS(e8m0, e8m0_cuda_geoms, e8m0_cuda_big, QUANT_CUDA_WHAT, QUANT_SKIP, QUANT_CUDA_GEOM,
                       "scale exponent one too high (scale byte + 1, codes halved)", QUANT_BATCH),
#endif
};

static const dsf_impl e4m3_impls[] = {
    DSF_FMT_CPU_IMPLS(e4m3, cpu_geoms, QUANT_CPU_WHAT, QUANT_SKIP, QUANT_CPU_GEOM,
                      "scale doubled before it is stored and applied", QUANT_BATCH),
#ifdef DSF_HAVE_CUDA
    DSF_FMT_CUDA_IMPLS(e4m3, e4m3_cuda_geoms, e4m3_cuda_big, QUANT_CUDA_WHAT, QUANT_SKIP, QUANT_CUDA_GEOM,
                       "scale doubled before it is stored and applied", QUANT_BATCH),
#endif
};

static const dsf_operand fp8_ops[] = {
    {"x", DSF_ELEM_BF16, DSF_IN, 1, count_n, DSF_DRAW_ACT, NULL},
    {"q", DSF_ELEM_E4M3, DSF_OUT, 1, count_n, DSF_DRAW_ACT, NULL},
    {"s", DSF_ELEM_E8M0, DSF_OUT, 1, count_blocks, DSF_DRAW_ACT, NULL},
};

static const dsf_operand e8m0_ops[] = {
    {"x", DSF_ELEM_BF16, DSF_IN, 1, count_n, DSF_DRAW_ACT, NULL},
    {"q", DSF_ELEM_FP4X2, DSF_OUT, 1, count_n, DSF_DRAW_ACT, NULL},
    {"s", DSF_ELEM_E8M0, DSF_OUT, 1, count_blocks, DSF_DRAW_ACT, NULL},
};

static const dsf_operand e4m3_ops[] = {
    {"x", DSF_ELEM_BF16, DSF_IN, 1, count_n, DSF_DRAW_ACT, NULL},
    {"q", DSF_ELEM_FP4X2, DSF_OUT, 1, count_n, DSF_DRAW_ACT, NULL},
    {"s", DSF_ELEM_E4M3, DSF_OUT, 1, count_blocks, DSF_DRAW_ACT, NULL},
};

// Cases {name, rows, n, -, blk}: V4.1 (blk 32: 5120, 2304, 6144) and V4 (blk 128: 4096, 2048) widths, ragged ones.
static const dsf_case fp8_cases[] = {
    {"b32_r64_n5120", 64, 5120, 0, 32}, {"b32_r17_n2304", 17, 2304, 0, 32}, {"b32_r9_n6144", 9, 6144, 0, 32},
    {"b32_r1_n32", 1, 32, 0, 32},       {"b32_r3_n96", 3, 96, 0, 32},       {"b128_r64_n4096", 64, 4096, 0, 128},
    {"b128_r5_n2048", 5, 2048, 0, 128}, {"b128_r1_n128", 1, 128, 0, 128},   {"b128_r2_n384", 2, 384, 0, 128},
};

// Indexer q/k rows (32 heads of 128, one head), one block, three blocks, an odd row count.
static const dsf_case e8m0_cases[] = {
    {"r64_n4096", 64, 4096, 0, 32}, {"r64_n128", 64, 128, 0, 32}, {"r17_n128", 17, 128, 0, 32},
    {"r1_n32", 1, 32, 0, 32},       {"r3_n96", 3, 96, 0, 32},
};

// Compressed KV rows of 512, one block, three blocks, odd row counts.
static const dsf_case e4m3_cases[] = {
    {"r64_n512", 64, 512, 0, 16}, {"r17_n512", 17, 512, 0, 16}, {"r2_n512", 2, 512, 0, 16},
    {"r1_n16", 1, 16, 0, 16},     {"r5_n48", 5, 48, 0, 16},
};

#define QUANT_RECORD(tag, name, doc, ref)                        \
    const dsf_record dsf_rec_##name = {#name,                    \
                                       "fmt",                    \
                                       doc,                      \
                                       tag##_ops,                \
                                       DSF_FMT_LEN(tag##_ops),   \
                                       ref,                      \
                                       tag##_impls,              \
                                       DSF_FMT_LEN(tag##_impls), \
                                       tag##_cases,              \
                                       DSF_FMT_LEN(tag##_cases), \
                                       0.0,                      \
                                       0.0};

QUANT_RECORD(fp8, act_quant_fp8, "bf16 [R, n] -> e4m3 [R, n] + e8m0 [R, n/blk], spec §3.0 act_quant (blk 32, 128)",
             dsf_fmt_ref_act_quant_fp8)
QUANT_RECORD(e8m0, fp4_quant_e8m0, "bf16 [R, n] -> e2m1 x2 [R, n/2] + e8m0 [R, n/32], spec §3.0 fp4_act_quant",
             dsf_fmt_ref_fp4_quant_e8m0)
QUANT_RECORD(e4m3, fp4_quant_e4m3, "bf16 [R, n] -> e2m1 x2 [R, n/2] + e4m3 [R, n/16], spec §3.0 fp4_act_quant",
             dsf_fmt_ref_fp4_quant_e4m3)
