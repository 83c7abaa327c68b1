// Contract record of engram_gate: per-stream gate and residual add into the hc bf16 streams.
#include "contract/draw.h"
#include "kern/engram/engram_internal.h"
#include "kern/engram/engram_kern.h"
#include "kern/engram/engram_record.h"

static int64_t count_h(const dsf_case *c) {
    return c->k * c->n;
}
static int64_t count_kv(const dsf_case *c) {
    return (c->k + 1) * c->n;
}
static int64_t count_w(const dsf_case *c) {
    return c->k * c->n;
}
static int64_t count_1(const dsf_case *c) {
    (void)c;
    return 1;
}

// q_weight, k_weight as RMSNorm-like weights near 1 (bf16 of 1 + 0.1u).
static void fill_norm_w(void *buf, int64_t count, const dsf_case *c, uint64_t *rng) {
    uint16_t *b = buf;
    (void)c;
    for (int64_t i = 0; i < count; i++) b[i] = dsf_bf16_from_f32((float)(1.0 + 0.2 * (dsf_rng_unit(rng) - 0.5)));
}

// One token in four is an image token.
static void fill_img(void *buf, int64_t count, const dsf_case *c, uint64_t *rng) {
    int32_t *b = buf;
    (void)c;
    for (int64_t i = 0; i < count; i++) b[i] = dsf_rng_next(rng) % 4 == 0;
}

static int gate_cpu(const dsf_call *c, int f, dsf_err *e) {
    return dsf_engram_gate_cpu_v(c->pool, c->g, c->ops[0], c->ops[1], c->ops[2], c->ops[3], c->ops[4], c->ops[5],
                                 c->c->rows, (int)c->c->k, c->c->n, 1e-20f, f, e);
}
DSF_ENG_RUN(gate_cpu_real, gate_cpu, DSF_ENG_REAL)
DSF_ENG_RUN(gate_cpu_skip, gate_cpu, DSF_ENG_SKIP)
DSF_ENG_RUN(gate_cpu_geom, gate_cpu, DSF_ENG_GEOM)
DSF_ENG_RUN(gate_cpu_wrong, gate_cpu, DSF_ENG_WRONG)
DSF_ENG_RUN(gate_cpu_batch, gate_cpu, DSF_ENG_BATCH)

// CPU {name, workers, -, {streams per unit}}; the GEOM control sums sequentially at 4 or more streams per unit.
static const dsf_geom gate_cpu_geoms[] = {
    {"w1_c1", 1, 0, {1}},
    {"w2_c4", 2, 0, {4}},
    {"all_c3", 0, 0, {3}},
};

#ifdef DSF_HAVE_CUDA
static int gate_cuda(const dsf_call *c, int f, dsf_err *e) {
    return dsf_engram_gate_cuda_v(c->stream, c->g, c->ops[0], c->ops[1], c->ops[2], c->ops[3], c->ops[4], c->ops[5],
                                  c->c->rows, (int)c->c->k, c->c->n, 1e-20f, f, e);
}
DSF_ENG_RUN(gate_cuda_real, gate_cuda, DSF_ENG_REAL)
DSF_ENG_RUN(gate_cuda_skip, gate_cuda, DSF_ENG_SKIP)
DSF_ENG_RUN(gate_cuda_geom, gate_cuda, DSF_ENG_GEOM)
DSF_ENG_RUN(gate_cuda_wrong, gate_cuda, DSF_ENG_WRONG)
DSF_ENG_RUN(gate_cuda_batch, gate_cuda, DSF_ENG_BATCH)
DSF_ENG_ATTRS(gate_attrs_real, 2, DSF_ENG_REAL)
DSF_ENG_ATTRS(gate_attrs_skip, 2, DSF_ENG_SKIP)
DSF_ENG_ATTRS(gate_attrs_geom, 2, DSF_ENG_GEOM)
DSF_ENG_ATTRS(gate_attrs_wrong, 2, DSF_ENG_WRONG)
DSF_ENG_ATTRS(gate_attrs_batch, 2, DSF_ENG_BATCH)

// CUDA {name, threads, dyn smem (st_: 8 D bytes), {grid cap in 132 blocks, 1: a block per (token, stream)}}.
static const dsf_geom gate_cuda_geoms[] = {
    {"t32_w1", 32, 0, {1}},
    {"t128_w4", 128, 0, {4}},
    {"t256_w64", 256, 0, {64}},
    {"t1024_w2", 1024, 0, {2}},
    {"st_t128_w1", 128, 40960, {1, 1}},
    {"st_t256_w8", 256, 40960, {8, 1}},
    {"st_t512_w8", 512, 40960, {8, 1}},
};
const dsf_geom *dsf_engram_gate_cuda_geoms(int *n) {
    *n = DSF_ENG_LEN(gate_cuda_geoms);
    return gate_cuda_geoms;
}
static const dsf_geom gate_cuda_big[] = {
    {"t32_w1", 32, 0, {1}},
    {"t256_w64_smem200k", 256, 200 * 1024, {64}},
};
#endif

static const dsf_impl gate_impls[] = {
    DSF_ENG_IMPL("cpu", DSF_BACKEND_CPU, gate_cpu_real, gate_cpu_geoms, DSF_GATE_NONE,
                 "32 strided partials per sum, xor butterfly, finding 12 order, copysign", NULL),
    DSF_ENG_IMPL("cpu_ctl_skip", DSF_BACKEND_CPU, gate_cpu_skip, gate_cpu_geoms, DSF_GATE_1,
                 "never writes the last element of the last stream", NULL),
    DSF_ENG_IMPL("cpu_ctl_order", DSF_BACKEND_CPU, gate_cpu_geom, gate_cpu_geoms, DSF_GATE_2,
                 "sums sequentially at 4 or more streams per unit (order follows the geometry)", NULL),
    DSF_ENG_IMPL("cpu_ctl_image", DSF_BACKEND_CPU, gate_cpu_wrong, gate_cpu_geoms, DSF_GATE_3,
                 "leaves the gate open for image tokens", NULL),
    DSF_ENG_IMPL("cpu_ctl_batch", DSF_BACKEND_CPU, gate_cpu_batch, gate_cpu_geoms, DSF_GATE_4,
                 "sums sequentially in calls of more than 64 rows (gate reduction split by row count)", NULL),
#ifdef DSF_HAVE_CUDA
    DSF_ENG_IMPL("cuda", DSF_BACKEND_CUDA, gate_cuda_real, gate_cuda_geoms, DSF_GATE_NONE,
                 "a warp per (token, stream), lane-strided partials, xor butterfly", gate_attrs_real),
    DSF_ENG_IMPL("cuda_ctl_skip", DSF_BACKEND_CUDA, gate_cuda_skip, gate_cuda_geoms, DSF_GATE_1,
                 "never writes the last element of the last stream", gate_attrs_skip),
    DSF_ENG_IMPL("cuda_ctl_order", DSF_BACKEND_CUDA, gate_cuda_geom, gate_cuda_geoms, DSF_GATE_2,
                 "butterfly offsets climb in blocks of 128 or more threads (order follows the geometry)",
                 gate_attrs_geom),
    DSF_ENG_IMPL("cuda_ctl_image", DSF_BACKEND_CUDA, gate_cuda_wrong, gate_cuda_geoms, DSF_GATE_3,
                 "leaves the gate open for image tokens", gate_attrs_wrong),
    DSF_ENG_IMPL("cuda_ctl_batch", DSF_BACKEND_CUDA, gate_cuda_batch, gate_cuda_geoms, DSF_GATE_4,
                 "butterfly offsets climb in calls of more than 64 rows (gate reduction split by row count)",
                 gate_attrs_batch),
    DSF_ENG_IMPL("cuda_ctl_smem", DSF_BACKEND_CUDA, gate_cuda_real, gate_cuda_big, DSF_GATE_LIMITS,
                 "the kernel under a geometry declaring 200 KB of dynamic shared memory", gate_attrs_real),
#endif
};

static const dsf_operand gate_ops[] = {
    {"h", DSF_ELEM_BF16, DSF_IN, 1, count_h, DSF_DRAW_ACT, NULL},
    {"kv", DSF_ELEM_BF16, DSF_IN, 1, count_kv, DSF_DRAW_ACT, NULL},
    {"q_weight", DSF_ELEM_BF16, DSF_IN, 0, count_w, DSF_DRAW_CUSTOM, fill_norm_w},
    {"k_weight", DSF_ELEM_BF16, DSF_IN, 0, count_w, DSF_DRAW_CUSTOM, fill_norm_w},
    {"img", DSF_ELEM_I32, DSF_IN, 1, count_1, DSF_DRAW_CUSTOM, fill_img},
    {"out", DSF_ELEM_BF16, DSF_OUT, 1, count_h, DSF_DRAW_ACT, NULL},
};

// Cases {name, rows, n = D, k = hc}: the real 5120 and the tiny synth's 64, ragged widths.
static const dsf_case gate_cases[] = {
    {"r64_d5120", 64, 5120, 4, 0}, {"r17_d64", 17, 64, 4, 0}, {"r1_d5120", 1, 5120, 4, 0},
    {"r5_d96", 5, 96, 4, 0},   {"r3_d32", 3, 32, 2, 0},
};

const dsf_record dsf_rec_engram_gate = {
    "engram_gate", "engram",
    "bf16 h [R, hc, D], kv [R, (hc+1) D], q/k weights [hc, D], img [R] -> bf16 h + gate_k * value (per-stream norms)",
    gate_ops, DSF_ENG_LEN(gate_ops), dsf_engram_ref_gate, gate_impls, DSF_ENG_LEN(gate_impls), gate_cases,
    DSF_ENG_LEN(gate_cases), 4e-3, 0.15,
};
