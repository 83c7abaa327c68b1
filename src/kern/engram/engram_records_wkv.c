// Contract records of engram_wkv (small and real dims) and engram_gate: operands, drawers, cases, implementations.
#include "contract/draw.h"
#include "kern/engram/engram_internal.h"
#include "kern/engram/engram_kern.h"
#include "kern/engram/engram_record.h"

static int64_t count_k(const dsf_case *c) {
    return c->k;
}
static int64_t count_k32(const dsf_case *c) {
    return c->k / 32;
}
static int64_t count_n(const dsf_case *c) {
    return c->n;
}
static int64_t count_w(const dsf_case *c) {
    return c->n * c->k;
}
static int64_t count_ws(const dsf_case *c) {
    return (c->n / 32) * (c->k / 32);
}

// Activation codes as act_quant leaves them (a block's largest near 448); weight codes spread; no NaN codes.
static void fill_act_codes(void *buf, int64_t count, const dsf_case *c, uint64_t *rng) {
    uint8_t *b = buf;
    (void)c;
    for (int64_t i = 0; i < count; i++) {
        do b[i] = (uint8_t)dsf_rng_next(rng);
        while ((b[i] & 0x7F) == 0x7F);
    }
}
static void fill_act_scales(void *buf, int64_t count, const dsf_case *c, uint64_t *rng) {
    uint8_t *b = buf;
    (void)c;
    for (int64_t i = 0; i < count; i++) b[i] = (uint8_t)(112 + dsf_rng_next(rng) % 12);
}
static void fill_w_scales(void *buf, int64_t count, const dsf_case *c, uint64_t *rng) {
    uint8_t *b = buf;
    (void)c;
    for (int64_t i = 0; i < count; i++) b[i] = (uint8_t)(114 + dsf_rng_next(rng) % 6);
}

static int wkv_cpu(const dsf_call *c, int f, dsf_err *e) {
    return dsf_engram_wkv_cpu_v(c->pool, c->g, c->ops[0], c->ops[1], c->ops[2], c->ops[3], c->ops[4], c->c->rows,
                                c->c->n, c->c->k, f, e);
}
DSF_ENG_RUN(wkv_cpu_real, wkv_cpu, DSF_ENG_REAL)
DSF_ENG_RUN(wkv_cpu_skip, wkv_cpu, DSF_ENG_SKIP)
DSF_ENG_RUN(wkv_cpu_geom, wkv_cpu, DSF_ENG_GEOM)
DSF_ENG_RUN(wkv_cpu_wrong, wkv_cpu, DSF_ENG_WRONG)
DSF_ENG_RUN(wkv_cpu_batch, wkv_cpu, DSF_ENG_BATCH)

// CPU {name, workers, -, {outputs per unit}}; the order control splits K at 64 or more outputs per unit.
static const dsf_geom wkv_cpu_geoms[] = {
    {"w1_c32", 1, 0, {32}},
    {"w2_c64", 2, 0, {64}},
    {"all_c8", 0, 0, {8}},
};

#ifdef DSF_HAVE_CUDA
static int wkv_cuda(const dsf_call *c, int f, dsf_err *e) {
    return dsf_engram_wkv_cuda_v(c->stream, c->g, c->ops[0], c->ops[1], c->ops[2], c->ops[3], c->ops[4], c->c->rows,
                                 c->c->n, c->c->k, f, e);
}
DSF_ENG_RUN(wkv_cuda_real, wkv_cuda, DSF_ENG_REAL)
DSF_ENG_RUN(wkv_cuda_skip, wkv_cuda, DSF_ENG_SKIP)
DSF_ENG_RUN(wkv_cuda_geom, wkv_cuda, DSF_ENG_GEOM)
DSF_ENG_RUN(wkv_cuda_wrong, wkv_cuda, DSF_ENG_WRONG)
DSF_ENG_RUN(wkv_cuda_batch, wkv_cuda, DSF_ENG_BATCH)
DSF_ENG_ATTRS(wkv_attrs, 1, DSF_ENG_REAL)

// CUDA {name, threads, smem, {3, tokens, groups, 32 atoms + st} | {4, rows, groups, 128 (parts-1)+64 ws2+32 db+st, t}}.
static const dsf_geom wkv_cuda_geoms[] = {
    {"wg_b8_w1_u1_s4", 160, 38528, {3, 8, 1, 36}},  {"wg_b8_w1_u2_s2", 160, 38528, {3, 8, 1, 66}},
    {"wg_b8_w2_u2_s2", 288, 71424, {3, 8, 2, 66}},  {"wg_b16_w2_u1_s4", 288, 76032, {3, 16, 2, 36}},
    {"wg_b32_w2_u1_s4", 288, 85248, {3, 32, 2, 36}},  {"wgt_w128_x2_s4", 288, 140544, {4, 128, 2, 4}},
    {"wgt_w128_x1_s4", 160, 103680, {4, 128, 1, 4}},
    {"wgt_w128_x3_pw4_s4", 512, 177408, {4, 128, 3, 4}},  {"wgt_w64_x3_s4", 416, 144512, {4, 64, 3, 4}},
    {"wgt_w128_x2_pw4_s4_db", 384, 140544, {4, 128, 2, 36}},  {"wgt_w64_x3_s4_db", 416, 144512, {4, 64, 3, 36}},
    {"wgt_w64_x2_pw4_s4_db", 384, 107648, {4, 64, 2, 36}},  {"wgt_w64_x2_pw4_s6_db", 384, 160960, {4, 64, 2, 38}},
    {"wgt_w128_x3_pw4_s5", 512, 221504, {4, 128, 3, 5}},  {"wgt_w128_x2_s6", 288, 210304, {4, 128, 2, 6}},
    {"wgt_w128_x1_pw4_s4_db", 256, 103680, {4, 128, 1, 36}},
    {"wgt_w224_x1_ws2_pw4_s4_db", 384, 153024, {4, 224, 1, 100}},
    {"wgt_w224_x1_ws2_pw4_s5_db", 384, 191024, {4, 224, 1, 101}},
    {"wgt_w104_x1_pw4_s4_db", 256, 91392, {4, 104, 1, 36}},
    {"wgt_w104_x1_pw4_s5_db", 256, 113984, {4, 104, 1, 37}},
    {"wgt_w224_x1_ws2_pw4_s4_hs", 384, 153024, {4, 224, 1, 196}},
    {"wgt_w224_x1_ws2_pw4_s5_hs", 384, 191024, {4, 224, 1, 197}},
    {"wgt_w128_x3_pw4_s4_hs", 512, 177408, {4, 128, 3, 132}},
    {"wgt_w128_x3_pw4_s5_hs", 512, 221504, {4, 128, 3, 133}},
    // Four parts: t (p[4]) 1, 2 or 4 splits every tile in so many blocks; 0 only the last wave's tiles, by SM count.
    {"wgt_w256_x2_pw4_s4_p4", 384, 206336, {4, 256, 2, 388}},
    {"wgt_w256_x2_pw4_s4_p4_t1", 384, 206336, {4, 256, 2, 388, 1}},
    {"wgt_w256_x2_pw4_s4_p4_t2", 384, 206336, {4, 256, 2, 388, 2}},
    {"wgt_w256_x2_pw4_s4_p4_t4", 384, 206336, {4, 256, 2, 388, 4}},
};
const dsf_geom *dsf_engram_wkv_cuda_geoms(int *n) {
    *n = DSF_ENG_LEN(wkv_cuda_geoms);
    return wkv_cuda_geoms;
}

// Both kernels; the order control splits K at 2 warpgroups a block: red between the first and the others.
static const dsf_geom wkv_cuda_ctl_geoms[] = {
    {"wg_b8_w1_u1_s4", 160, 38528, {3, 8, 1, 36}},
    {"wg_b16_w2_u1_s4", 288, 76032, {3, 16, 2, 36}},
    {"wgt_w64_x3_s4", 416, 144512, {4, 64, 3, 4}},
};
static const dsf_geom wkv_cuda_big[] = {
    {"wg_b8_w1_u1_s4", 160, 38528, {3, 8, 1, 36}},
    {"wg_b8_w1_u1_s4_smem200k", 160, 200 * 1024, {3, 8, 1, 36}},
};
#define WKV_CUDA_IMPLS                                                                                          \
    DSF_ENG_IMPL_ON("cuda", wkv_cuda_real, wkv_cuda_geoms, DSF_GATE_NONE,                                      \
                    "wgmma m64nNk32 e4m3 per K block, fp32 promotion in K order", wkv_attrs, "sm_90"),          \
        DSF_ENG_IMPL_ON("cuda_ctl_skip", wkv_cuda_skip, wkv_cuda_ctl_geoms, DSF_GATE_1,                        \
                        "never writes the last output of the last row", wkv_attrs, "sm_90"),                   \
        DSF_ENG_IMPL_ON("cuda_ctl_order", wkv_cuda_geom, wkv_cuda_ctl_geoms, DSF_GATE_2,                       \
                        "splits K with a bf16 partial at 2 warpgroups a block (order follows the geometry)",   \
                        wkv_attrs, "sm_90"),                                                                   \
        DSF_ENG_IMPL_ON("cuda_ctl_scale", wkv_cuda_wrong, wkv_cuda_ctl_geoms, DSF_GATE_3,                      \
                        "weight scale exponent off by one", wkv_attrs, "sm_90"),                               \
        DSF_ENG_IMPL_ON("cuda_ctl_batch", wkv_cuda_batch, wkv_cuda_ctl_geoms, DSF_GATE_4,                      \
                        "splits K with a bf16 partial in calls of more than 64 rows (split by row count)",     \
                        wkv_attrs, "sm_90"),                                                                   \
        DSF_ENG_IMPL("cuda_ctl_smem", DSF_BACKEND_CUDA, wkv_cuda_real, wkv_cuda_big, DSF_GATE_LIMITS,          \
                     "200 KB of dynamic shared memory checked against every target (sm_86 holds 99 KB)", wkv_attrs)
#endif

static const dsf_impl wkv_impls[] = {
    DSF_ENG_IMPL("cpu", DSF_BACKEND_CPU, wkv_cpu_real, wkv_cpu_geoms, DSF_GATE_NONE,
                 "exact block sums in double, one fp32 rounding, fp32 promotion in K order", NULL),
    DSF_ENG_IMPL("cpu_ctl_skip", DSF_BACKEND_CPU, wkv_cpu_skip, wkv_cpu_geoms, DSF_GATE_1,
                 "never writes the last output of the last row", NULL),
    DSF_ENG_IMPL("cpu_ctl_order", DSF_BACKEND_CPU, wkv_cpu_geom, wkv_cpu_geoms, DSF_GATE_2,
                 "splits K with a bf16 partial at 64 or more outputs per unit (order follows the geometry)", NULL),
    DSF_ENG_IMPL("cpu_ctl_scale", DSF_BACKEND_CPU, wkv_cpu_wrong, wkv_cpu_geoms, DSF_GATE_3,
                 "weight scale exponent off by one", NULL),
    DSF_ENG_IMPL("cpu_ctl_batch", DSF_BACKEND_CPU, wkv_cpu_batch, wkv_cpu_geoms, DSF_GATE_4,
                 "splits K with a bf16 partial in calls of more than 64 rows (split by row count)", NULL),
#ifdef DSF_HAVE_CUDA
    WKV_CUDA_IMPLS,
#endif
};

static const dsf_operand wkv_ops[] = {
    {"xq", DSF_ELEM_E4M3, DSF_IN, 1, count_k, DSF_DRAW_CUSTOM, fill_act_codes},
    {"xs", DSF_ELEM_E8M0, DSF_IN, 1, count_k32, DSF_DRAW_CUSTOM, fill_act_scales},
    {"w", DSF_ELEM_E4M3, DSF_IN, 0, count_w, DSF_DRAW_CUSTOM, fill_act_codes},
    {"ws", DSF_ELEM_E8M0, DSF_IN, 0, count_ws, DSF_DRAW_CUSTOM, fill_w_scales},
    {"y", DSF_ELEM_BF16, DSF_OUT, 1, count_n, DSF_DRAW_ACT, NULL},
};

// Cases {name, rows, n, k}: tiny synth's 320 x 192, ragged tiles, real K, all token groups, 2 x 3 tiles of 128 x 256.
static const dsf_case wkv_cases[] = {
    {"r5_n512_k6144", 5, 512, 6144, 0},   {"r17_n320_k192", 17, 320, 192, 0},
    {"r1_n96_k1024", 1, 96, 1024, 0},     {"r3_n32_k32", 3, 32, 32, 0},
    {"r64_n160_k1024", 64, 160, 1024, 0}, {"r150_n160_k1024", 150, 160, 1024, 0},
    {"r256_n544_k1024", 256, 544, 1024, 0},
};

const dsf_record dsf_rec_engram_wkv = {
    "engram_wkv", "engram",
    "e4m3 x [R, K] + e8m0 [R, K/32], e4m3 W [N, K] + e8m0 [N/32, K/32] -> bf16 [R, N], fp32 per 32-block in K order",
    wkv_ops, DSF_ENG_LEN(wkv_ops), dsf_engram_ref_wkv, wkv_impls, DSF_ENG_LEN(wkv_impls), wkv_cases,
    DSF_ENG_LEN(wkv_cases), 4e-3, 0.1,
};

#ifdef DSF_HAVE_CUDA
static const dsf_impl wkv_real_impls[] = {
    DSF_ENG_IMPL_ON("cuda", wkv_cuda_real, wkv_cuda_geoms, DSF_GATE_NONE,
                 "wgmma m64nNk32 e4m3 per K block, fp32 promotion in K order", wkv_attrs, "sm_90"),
    DSF_ENG_IMPL_ON("cuda_ctl_order", wkv_cuda_geom, wkv_cuda_ctl_geoms, DSF_GATE_2,
                    "splits K with a bf16 partial at 2 warpgroups a block (order follows the geometry)", wkv_attrs,
                    "sm_90"),
    DSF_ENG_IMPL_ON("cuda_ctl_scale", wkv_cuda_wrong, wkv_cuda_ctl_geoms, DSF_GATE_3,
                 "weight scale exponent off by one", wkv_attrs, "sm_90"),
};
#endif

// The real 25600 x 6144 projection, on CUDA only (the CPU checks the same code at the smaller cases above).
static const dsf_case wkv_real_cases[] = {
    {"r1_n25600_k6144", 1, 25600, 6144, 0},
    {"r8_n25600_k6144", 8, 25600, 6144, 0},
};

const dsf_record dsf_rec_engram_wkv_real = {
    "engram_wkv_real", "engram", "engram_wkv at the real V4.1 dimensions (CUDA)", wkv_ops, DSF_ENG_LEN(wkv_ops),
    dsf_engram_ref_wkv,
#ifdef DSF_HAVE_CUDA
    wkv_real_impls, DSF_ENG_LEN(wkv_real_impls),
#else
    NULL, 0,
#endif
    wkv_real_cases, DSF_ENG_LEN(wkv_real_cases), 4e-3, 0.1,
};
