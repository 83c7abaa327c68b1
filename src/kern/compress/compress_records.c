// Contract records of the compressor variants: a row is one stream's segment (its rows, position and ring).
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "contract/draw.h"
#include "kern/compress/compress_internal.h"

#define LEN(a) ((int)(sizeof(a) / sizeof((a)[0])))

// Operands: x, pos, ring_in, wkv, wgate, ape, norm, wk, k_norm | ring_out, kv, ik; absent ones count zero.
enum { OP_X, OP_POS, OP_RING_IN, OP_WKV, OP_WGATE, OP_APE, OP_NORM, OP_WK, OP_KNORM, OP_RING, OP_KV, OP_IK, N_OPS };

typedef struct cmp_variant {
    int ratio, overlap, quant, v41;
} cmp_variant;

enum { V41_R2, V41_R1, V4_R4, V4_R4_IDX, V4_R128 };
static const cmp_variant variants[] = {
    {2, 0, DSF_CMP_Q_FP4_E4M3, 1}, {1, 0, DSF_CMP_Q_FP4_E4M3, 1}, {4, 1, DSF_CMP_Q_FP8_NOPE, 0},
    {4, 1, DSF_CMP_Q_HAD_FP4, 0},  {128, 0, DSF_CMP_Q_FP8_NOPE, 0},
};

// Cases give rows = streams, n = D, k = rows per stream, blk = d; the rest follows the variant.
static void layer_of(int vi, const dsf_case *c, dsf_cmp_layer *L) {
    const cmp_variant *v = &variants[vi];
    memset(L, 0, sizeof *L);
    L->ratio = v->ratio;
    L->overlap = v->overlap;
    L->dim = (int)c->n;
    L->d = (int)c->blk;
    L->ik = v->v41 ? (L->d >= 512 ? 128 : 64) : 0;
    L->cap = dsf_cmp_ring_cap(v->ratio, v->overlap, 6);
    L->quant = (dsf_cmp_quant)v->quant;
    L->eps = v->v41 ? 1e-20f : 1e-6f;
    dsf_cmp_rope_freqs(160000.0, 16.0, 32.0, 1.0, 65536, L->freq);
}

static int64_t count_op(int vi, int op, const dsf_case *c) {
    dsf_cmp_layer L;
    layer_of(vi, c, &L);
    int64_t C = dsf_cmp_channels(&L), E = dsf_cmp_entry_slots(L.ratio, c->k);
    switch (op) {
    case OP_X: return c->k * c->n;
    case OP_POS: return 1;
    case OP_RING_IN:
    case OP_RING: return (int64_t)dsf_cmp_ring_floats(&L);
    case OP_WKV: return C * c->n;
    case OP_WGATE: return L.ratio > 1 ? C * c->n : 0;
    case OP_APE: return variants[vi].v41 ? 0 : L.ratio * C;
    case OP_NORM: return L.d;
    case OP_WK: return (int64_t)L.ik * L.d;
    case OP_KNORM: return L.ik;
    case OP_KV: return E * L.d;
    default: return E * L.ik;
    }
}

static float unit(uint64_t *rng) { return (float)dsf_rng_unit(rng); }

static void fill_bf16(void *buf, int64_t n, uint64_t *rng, float lo, float hi, int centred) {
    uint16_t *p = buf;
    for (int64_t i = 0; i < n; i++) {
        float u = lo + (hi - lo) * unit(rng);
        p[i] = dsf_bf16_from_f32(centred ? 1.0f + u : (dsf_rng_next(rng) & 1 ? u : -u));
    }
}

// Activations after attn_norm: rms near 1, never zero, a few outliers.
static void fill_x(void *buf, int64_t n, const dsf_case *c, uint64_t *rng) {
    (void)c;
    fill_bf16(buf, n, rng, 0.02f, 1.7f, 0);
    uint16_t *p = buf;
    for (int64_t i = 0; i < n; i += 97) p[i] = dsf_bf16_from_f32(dsf_bf16_to_f32(p[i]) * 6.0f);
}

static void fill_w_dim(void *buf, int64_t n, const dsf_case *c, uint64_t *rng) {
    fill_bf16(buf, n, rng, 0.0005f, (float)sqrt(3.0 / (double)c->n), 0);
}
static void fill_w_d(void *buf, int64_t n, const dsf_case *c, uint64_t *rng) {
    fill_bf16(buf, n, rng, 0.0005f, (float)sqrt(3.0 / (double)c->blk), 0);
}
static void fill_norm(void *buf, int64_t n, const dsf_case *c, uint64_t *rng) {
    (void)c;
    fill_bf16(buf, n, rng, -0.1f, 0.1f, 1);
}

// Ring rows as earlier rows of the stream (kv and scores near rms 1), ape as learned offsets.
static void fill_f32(void *buf, int64_t n, const dsf_case *c, uint64_t *rng) {
    (void)c;
    float *p = buf;
    for (int64_t i = 0; i < n; i++) p[i] = (2.0f * unit(rng) - 1.0f) * 1.7f;
}
static void fill_ape(void *buf, int64_t n, const dsf_case *c, uint64_t *rng) {
    (void)c;
    float *p = buf;
    for (int64_t i = 0; i < n; i++) p[i] = (2.0f * unit(rng) - 1.0f) * 0.5f;
}

// Start positions: each segment holds one group's last token; every third stream emits its group 0.
static void fill_pos(int ratio, void *buf, int64_t n, const dsf_case *c, uint64_t *rng) {
    int64_t *p = buf;
    for (int64_t i = 0; i < n; i++) {
        int64_t g = i % 3 == 0 ? 0 : 1 + (int64_t)(dsf_rng_next(rng) % (ratio == 128 ? 40 : 1500));
        int64_t last = g * ratio + ratio - 1, u = (int64_t)(dsf_rng_next(rng) % (uint64_t)c->k);
        p[i] = last - u < 0 ? 0 : last - u;
    }
}

static void run_setup(int vi, const dsf_call *c, dsf_cmp_layer *L) {
    layer_of(vi, c->c, L);
    void *const *o = c->ops;
    dsf_cmp_weights w = {o[OP_WKV], L->ratio > 1 ? o[OP_WGATE] : NULL, variants[vi].v41 ? NULL : o[OP_APE],
                         o[OP_NORM], L->ik ? o[OP_WK] : NULL, L->ik ? o[OP_KNORM] : NULL};
    L->w = w;
}

static int run_cpu(int vi, const dsf_call *c, int fault, dsf_err *e) {
    dsf_cmp_layer L;
    run_setup(vi, c, &L);
    int S = (int)c->c->rows;
    int64_t len = c->c->k, E = dsf_cmp_entry_slots(L.ratio, len);
    size_t rf = dsf_cmp_ring_floats(&L);
    void *const *o = c->ops;
    const int64_t *pos = o[OP_POS];
    int32_t *row0 = dsf_malloc(sizeof(int32_t) * (size_t)(S + 1));
    int64_t *j0 = dsf_malloc(sizeof(int64_t) * (size_t)(S + 1));
    float **ring = dsf_malloc(sizeof(float *) * (size_t)(S + 1));
    uint16_t **kv = dsf_malloc(sizeof(uint16_t *) * (size_t)(S + 1)), **ik = dsf_malloc(sizeof(uint16_t *) * (S + 1));
    memcpy(o[OP_RING], o[OP_RING_IN], sizeof(float) * rf * (size_t)S);
    memset(o[OP_KV], 0, 2 * (size_t)(E * L.d * S));
    memset(o[OP_IK], 0, 2 * (size_t)(E * L.ik * S));
    for (int s = 0; s <= S; s++) {
        row0[s] = (int32_t)(s * len);
        if (s == S) break;
        j0[s] = pos[s] / L.ratio;
        ring[s] = (float *)o[OP_RING] + (size_t)s * rf;
        kv[s] = (uint16_t *)o[OP_KV] + (size_t)(s * E * L.d);
        ik[s] = (uint16_t *)o[OP_IK] + (size_t)(s * E * L.ik);
    }
    dsf_cmp_batch b = {S, S * len, (int)len, o[OP_X], row0, pos, ring, kv, ik, j0};
    int rc = dsf_cmp_run_cpu_v(c->pool, c->g, &L, &b, fault, e);
    free(row0), free(j0), free(ring), free(kv), free(ik);
    return rc;
}

#ifdef DSF_HAVE_CUDA
static int run_cuda(int vi, const dsf_call *c, int fault, dsf_err *e) {
    dsf_cmp_layer L;
    run_setup(vi, c, &L);
    void *const *o = c->ops;
    return dsf_cmp_contract_cuda(c->stream, c->g, &L, (int)c->c->rows, c->c->k, o[OP_X], o[OP_POS], o[OP_RING_IN],
                                 o[OP_RING], o[OP_KV], o[OP_IK], fault, e);
}
#endif

static void ref(int vi, const void *const *ins, double *const *out, const dsf_case *c) {
    dsf_cmp_layer L;
    layer_of(vi, c, &L);
    dsf_cmp_weights w = {ins[OP_WKV], ins[OP_WGATE], variants[vi].v41 ? NULL : ins[OP_APE], ins[OP_NORM], ins[OP_WK],
                         ins[OP_KNORM]};
    L.w = w;
    int64_t len = c->k, E = dsf_cmp_entry_slots(L.ratio, len), rf = (int64_t)dsf_cmp_ring_floats(&L);
    const float *ring_in = ins[OP_RING_IN];
    const int64_t *pos = ins[OP_POS];
    for (int64_t s = 0; s < c->rows; s++) {
        for (int64_t i = 0; i < rf; i++) out[0][s * rf + i] = ring_in[s * rf + i];
        dsf_cmp_ref_segment(&L, (const uint16_t *)ins[OP_X] + s * len * c->n, len, pos[s], out[0] + s * rf,
                            out[1] + s * E * L.d, out[2] + s * E * L.ik);
    }
}

static const dsf_geom cpu_geoms[] = {
    {"w1_b1", 1, 0, {1}}, {"w2_b4", 2, 0, {4}}, {"w3_b2", 3, 0, {2}}, {"all_b8", 0, 0, {8}}};
#ifdef DSF_HAVE_CUDA
static const dsf_geom cuda_geoms[] = {
    {"fused_t128", 128, 0, {1, 0}},           {"fused_t256", 256, 0, {1, 1}}, {"tiled64_t128_e3", 128, 0, {2, 0, 3}},
    {"tiled128_t256_e8", 256, 0, {2, 1, 8}}, {"auto_t64", 64, 0, {0, 0}},    {"sliced64_t128", 128, 0, {3, 1}},
    {"sliced32_t256_e2", 256, 0, {3, 0, 2}},  {"sliced_gemv_t64", 64, 0, {3, 0, 0, 64}},
    {"fused_t256_ws", 256, DSF_CMP_GEMV_STAGE(256), {1, 1}}, {"auto_t128_ws", 128, DSF_CMP_GEMV_STAGE(128), {0, 0}},
    {"fused_t128_k1", 128, 0, {1, 0, 0, 0, 1}},              {"sliced64_t256_k3", 256, 0, {3, 1, 0, 0, 3}},
    {"tiled_g128_t128_e2", 128, 0, {2, 2, 2}},               {"tiled_by_grid_t64", 64, 0, {2, 3}},
};
static const dsf_geom cuda_big[] = {{"fused_t128", 128, 0, {1, 0}}, {"tiled_t256_smem200k", 256, 200 * 1024, {2, 1}}};
#endif

#define CMP_WHAT_CPU "row blocks of p[0] project through 32 ordered slices; emissions and ring rows after"
#define CMP_WHAT_CUDA "fused or sliced decode (GEMV, sliced GEMV or SGEMM; emitters), tiled prefill; same orders"
#define CMP_NAN "a NaN in the last element of every entry"
#define CMP_GEOM "wide geometries pool each token's weight with the mirrored token's value"
#define CMP_GEOM1 "wide geometries rotate entries at the position after the token's"
#define CMP_LATE "emits each entry one step after its group's last token"
#define CMP_APE "leaves APE out of the scores"
#define CMP_RESET "group 0 pools the ring rows before position 0 (a previous sequence's state)"
#define CMP_BATCH "calls of more than 8 streams drop the last K slice of the projection"
#define CMP_SMEM "the kernel under a geometry declaring 200 KB of dynamic shared memory: fits sm_90 and sm_100 only"

#define CMP_IMPL(name, be, fn, geoms, gate, what, attrs) \
    {name, be, fn, geoms, LEN(geoms), gate, what, attrs, NULL, NULL}

#define CMP_COUNT(tag, vi, op) \
    static int64_t tag##_n_##op(const dsf_case *c) { return count_op(vi, op, c); }

#define CMP_RUN(tag, vi, be, fault, suffix) \
    __attribute__((unused)) static int tag##_##be##_##suffix(const dsf_call *c, dsf_err *e) {         \
        return run_##be(vi, c, fault, e);                                                                      \
    }

#ifdef DSF_HAVE_CUDA
#define CMP_CUDA_RUNS(tag, vi)                           \
    CMP_RUN(tag, vi, cuda, DSF_CMP_REAL, real)           \
    CMP_RUN(tag, vi, cuda, DSF_CMP_NAN, nan)             \
    CMP_RUN(tag, vi, cuda, DSF_CMP_GEOM, geom)           \
    CMP_RUN(tag, vi, cuda, DSF_CMP_LATE, late)           \
    CMP_RUN(tag, vi, cuda, DSF_CMP_NO_APE, ape)          \
    CMP_RUN(tag, vi, cuda, DSF_CMP_NO_RESET, reset)      \
    CMP_RUN(tag, vi, cuda, DSF_CMP_BATCH, batch)
#else
#define CMP_CUDA_RUNS(tag, vi)
#endif

// Everything a variant's record needs that depends on the variant: counts, draws, reference, runs.
#define CMP_VARIANT(tag, vi)                                                                                      \
    CMP_COUNT(tag, vi, OP_X)                                                                                      \
    CMP_COUNT(tag, vi, OP_POS)                                                                                    \
    CMP_COUNT(tag, vi, OP_RING_IN)                                                                                \
    CMP_COUNT(tag, vi, OP_WKV)                                                                                    \
    CMP_COUNT(tag, vi, OP_WGATE)                                                                                  \
    CMP_COUNT(tag, vi, OP_APE)                                                                                    \
    CMP_COUNT(tag, vi, OP_NORM)                                                                                   \
    CMP_COUNT(tag, vi, OP_WK)                                                                                     \
    CMP_COUNT(tag, vi, OP_KNORM)                                                                                  \
    CMP_COUNT(tag, vi, OP_RING)                                                                                   \
    CMP_COUNT(tag, vi, OP_KV)                                                                                     \
    CMP_COUNT(tag, vi, OP_IK)                                                                                     \
    static void tag##_pos(void *buf, int64_t n, const dsf_case *c, uint64_t *rng) {                               \
        fill_pos(variants[vi].ratio, buf, n, c, rng);                                                             \
    }                                                                                                             \
    static void tag##_ref(const void *const *ins, double *const *out, const dsf_case *c) { ref(vi, ins, out, c); } \
    CMP_RUN(tag, vi, cpu, DSF_CMP_REAL, real)                                                                     \
    CMP_RUN(tag, vi, cpu, DSF_CMP_NAN, nan)                                                                       \
    CMP_RUN(tag, vi, cpu, DSF_CMP_GEOM, geom)                                                                     \
    CMP_RUN(tag, vi, cpu, DSF_CMP_LATE, late)                                                                     \
    CMP_RUN(tag, vi, cpu, DSF_CMP_NO_APE, ape)                                                                    \
    CMP_RUN(tag, vi, cpu, DSF_CMP_NO_RESET, reset)                                                                \
    CMP_RUN(tag, vi, cpu, DSF_CMP_BATCH, batch)                                                                   \
    CMP_CUDA_RUNS(tag, vi)                                                                                        \
    static const dsf_operand tag##_ops[] = {                                                                      \
        {"x", DSF_ELEM_BF16, DSF_IN, 1, tag##_n_OP_X, DSF_DRAW_CUSTOM, fill_x},                                   \
        {"pos", DSF_ELEM_I64, DSF_IN, 1, tag##_n_OP_POS, DSF_DRAW_CUSTOM, tag##_pos},                             \
        {"ring_in", DSF_ELEM_F32, DSF_IN, 1, tag##_n_OP_RING_IN, DSF_DRAW_CUSTOM, fill_f32},                      \
        {"wkv", DSF_ELEM_BF16, DSF_IN, 0, tag##_n_OP_WKV, DSF_DRAW_CUSTOM, fill_w_dim},                           \
        {"wgate", DSF_ELEM_BF16, DSF_IN, 0, tag##_n_OP_WGATE, DSF_DRAW_CUSTOM, fill_w_dim},                       \
        {"ape", DSF_ELEM_F32, DSF_IN, 0, tag##_n_OP_APE, DSF_DRAW_CUSTOM, fill_ape},                              \
        {"norm", DSF_ELEM_BF16, DSF_IN, 0, tag##_n_OP_NORM, DSF_DRAW_CUSTOM, fill_norm},                          \
        {"wk", DSF_ELEM_BF16, DSF_IN, 0, tag##_n_OP_WK, DSF_DRAW_CUSTOM, fill_w_d},                               \
        {"k_norm", DSF_ELEM_BF16, DSF_IN, 0, tag##_n_OP_KNORM, DSF_DRAW_CUSTOM, fill_norm},                       \
        {"ring_out", DSF_ELEM_F32, DSF_OUT, 1, tag##_n_OP_RING, DSF_DRAW_ACT, NULL},                              \
        {"kv", DSF_ELEM_BF16, DSF_OUT, 1, tag##_n_OP_KV, DSF_DRAW_ACT, NULL},                                     \
        {"ik", DSF_ELEM_BF16, DSF_OUT, 1, tag##_n_OP_IK, DSF_DRAW_ACT, NULL},                                     \
    };

#define CMP_CPU(tag, geomwhat)                                                                  \
    CMP_IMPL("cpu", DSF_BACKEND_CPU, tag##_cpu_real, cpu_geoms, DSF_GATE_NONE, CMP_WHAT_CPU, NULL), \
        CMP_IMPL("cpu_ctl_nan", DSF_BACKEND_CPU, tag##_cpu_nan, cpu_geoms, DSF_GATE_1, CMP_NAN, NULL), \
        CMP_IMPL("cpu_ctl_pool_order", DSF_BACKEND_CPU, tag##_cpu_geom, cpu_geoms, DSF_GATE_2, geomwhat, NULL), \
        CMP_IMPL("cpu_ctl_late", DSF_BACKEND_CPU, tag##_cpu_late, cpu_geoms, DSF_GATE_3, CMP_LATE, NULL), \
        CMP_IMPL("cpu_ctl_row_split", DSF_BACKEND_CPU, tag##_cpu_batch, cpu_geoms, DSF_GATE_4, CMP_BATCH, NULL)
#define CMP_CPU_APE(tag) CMP_IMPL("cpu_ctl_no_ape", DSF_BACKEND_CPU, tag##_cpu_ape, cpu_geoms, DSF_GATE_3, CMP_APE, NULL)
#define CMP_CPU_RESET(tag) \
    CMP_IMPL("cpu_ctl_no_reset", DSF_BACKEND_CPU, tag##_cpu_reset, cpu_geoms, DSF_GATE_3, CMP_RESET, NULL)

#ifdef DSF_HAVE_CUDA
static int attrs_real(const dsf_geom *g, dsf_func_attrs *o, dsf_err *e) { return dsf_cmp_cuda_attrs(g, 0, o, e); }
// CUDA implementations: the limits gate also reads the other functions a geometry launches (dsf_cmp_cuda_launches).
#define CMP_CIMPL(name, fn, geoms, gate, what) \
    {name, DSF_BACKEND_CUDA, fn, geoms, LEN(geoms), gate, what, attrs_real, NULL, dsf_cmp_cuda_launches}
#define CMP_CUDA(tag, geomwhat)                                                                          \
    , CMP_CIMPL("cuda", tag##_cuda_real, cuda_geoms, DSF_GATE_NONE, CMP_WHAT_CUDA),                      \
        CMP_CIMPL("cuda_ctl_nan", tag##_cuda_nan, cuda_geoms, DSF_GATE_1, CMP_NAN),                      \
        CMP_CIMPL("cuda_ctl_pool_order", tag##_cuda_geom, cuda_geoms, DSF_GATE_2, geomwhat),             \
        CMP_CIMPL("cuda_ctl_late", tag##_cuda_late, cuda_geoms, DSF_GATE_3, CMP_LATE),                   \
        CMP_CIMPL("cuda_ctl_row_split", tag##_cuda_batch, cuda_geoms, DSF_GATE_4, CMP_BATCH),            \
        CMP_CIMPL("cuda_ctl_smem", tag##_cuda_real, cuda_big, DSF_GATE_LIMITS, CMP_SMEM)
#define CMP_CUDA_APE(tag) , CMP_CIMPL("cuda_ctl_no_ape", tag##_cuda_ape, cuda_geoms, DSF_GATE_3, CMP_APE)
#define CMP_CUDA_RESET(tag) , CMP_CIMPL("cuda_ctl_no_reset", tag##_cuda_reset, cuda_geoms, DSF_GATE_3, CMP_RESET)
#else
#define CMP_CUDA(tag, geomwhat)
#define CMP_CUDA_APE(tag)
#define CMP_CUDA_RESET(tag)
#endif

#define CMP_RECORD(tag, name, doc, rms, max)                                                                     \
    const dsf_record dsf_rec_##name = {#name,        "compress",        doc, tag##_ops, N_OPS, tag##_ref,        \
                                       tag##_impls, LEN(tag##_impls), tag##_cases, LEN(tag##_cases), rms, max};

CMP_VARIANT(v41r2, V41_R2)
CMP_VARIANT(v41r1, V41_R1)
CMP_VARIANT(v4r4, V4_R4)
CMP_VARIANT(v4r4i, V4_R4_IDX)
CMP_VARIANT(v4r128, V4_R128)

static const dsf_impl v41r2_impls[] = {CMP_CPU(v41r2, CMP_GEOM) CMP_CUDA(v41r2, CMP_GEOM)};
static const dsf_impl v41r1_impls[] = {CMP_CPU(v41r1, CMP_GEOM1) CMP_CUDA(v41r1, CMP_GEOM1)};
static const dsf_impl v4r4_impls[] = {CMP_CPU(v4r4, CMP_GEOM), CMP_CPU_APE(v4r4), CMP_CPU_RESET(v4r4)
                                          CMP_CUDA(v4r4, CMP_GEOM) CMP_CUDA_APE(v4r4) CMP_CUDA_RESET(v4r4)};
static const dsf_impl v4r4i_impls[] = {CMP_CPU(v4r4i, CMP_GEOM), CMP_CPU_APE(v4r4i), CMP_CPU_RESET(v4r4i)
                                           CMP_CUDA(v4r4i, CMP_GEOM) CMP_CUDA_APE(v4r4i) CMP_CUDA_RESET(v4r4i)};
static const dsf_impl v4r128_impls[] = {CMP_CPU(v4r128, CMP_GEOM), CMP_CPU_APE(v4r128)
                                            CMP_CUDA(v4r128, CMP_GEOM) CMP_CUDA_APE(v4r128)};

// {name, streams, D, rows per stream, d}: real dimensions, 8 streams (the row-split control), one row, ragged.
static const dsf_case v41r2_cases[] = {{"real_s2_l3", 2, 5120, 3, 512},
                                       {"s8_l5", 8, 256, 5, 128},
                                       {"s1_l1", 1, 256, 1, 128},
                                       {"s3_l9_d64", 3, 512, 9, 64}};
static const dsf_case v41r1_cases[] = {
    {"real_s2_l2", 2, 5120, 2, 512}, {"s8_l3", 8, 256, 3, 128}, {"s1_l1", 1, 256, 1, 128}, {"s3_l5_d64", 3, 512, 5, 64}};
static const dsf_case v4r4_cases[] = {{"real_s2_l5", 2, 4096, 5, 512},
                                      {"s8_l6", 8, 256, 6, 128},
                                      {"s1_l1", 1, 256, 1, 128},
                                      {"s3_l13", 3, 512, 13, 128}};
static const dsf_case v4r4i_cases[] = {
    {"real_s3_l5", 3, 4096, 5, 128}, {"s8_l6", 8, 256, 6, 128}, {"s1_l1", 1, 256, 1, 128}, {"s2_l11", 2, 768, 11, 128}};
static const dsf_case v4r128_cases[] = {{"real_s2_l3", 2, 4096, 3, 512},
                                        {"s8_l4", 8, 256, 4, 128},
                                        {"s1_l1", 1, 256, 1, 128},
                                        {"s2_l140", 2, 256, 140, 128}};

CMP_RECORD(v41r2, cmp_v41_r2, "V4.1 ratio 2: fp32 wkv/wgate, softmax over 2, RMSNorm, RoPE, FP4 E4M3/16; index keys",
           0.02, 2.5)
CMP_RECORD(v41r1, cmp_v41_r1, "V4.1 ratio 1: bf16 wkv, RMSNorm, RoPE, FP4 E4M3/16; index keys", 0.02, 2.5)
CMP_RECORD(v4r4, cmp_v4_r4, "V4 ratio 4 overlap (d 512): 2d channels, APE, 8 tokens, RMSNorm, RoPE, FP8 0..447/64",
           0.02, 2.5)
CMP_RECORD(v4r4i, cmp_v4_r4_idx, "V4 indexer ratio 4 overlap (d 128): APE, RMSNorm, RoPE, Hadamard, FP4 E8M0/32",
           0.02, 2.5)
CMP_RECORD(v4r128, cmp_v4_r128, "V4 ratio 128 (d 512): APE, softmax over 128, RMSNorm, RoPE, FP8 0..447/64", 0.02,
           2.5)
