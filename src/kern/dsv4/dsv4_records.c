// Contract records of the dsv4 CPU kernels: FP8 linear, sparse attention with sink, RMSNorm; controls per gate.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/formats.h"
#include "base/quant.h"
#include "contract/draw.h"
#include "kern/dsv4/attn.h"
#include "kern/dsv4/linear.h"
#include "kern/dsv4/rows.h"

#define LEN(a) ((int)(sizeof(a) / sizeof((a)[0])))
// No case has more rows; the batch controls switch path only in gate 4's (R+3)-row calls beyond it.
#define SUITE_MAX_ROWS 64
#define ATTN_HD 128

typedef enum fault { REAL, SKIP, GEOM, WRONG, BATCH } fault;
typedef int (*run_fn)(const dsf_call *c);

// Runs the kernel, then plants the control's defect in the last operand (the output, F32 [R, count]).
static int run_with(const dsf_call *c, run_fn fn, int out_op, int64_t per_row, fault f) {
    float *y = c->ops[out_op];
    int64_t last = c->c->rows * per_row - 1;
    float keep = 0.0f;
    if (f == SKIP) memcpy(&keep, &y[last], 4);
    if (fn(c)) return -1;
    if (f == SKIP) memcpy(&y[last], &keep, 4);
    int flip = (f == GEOM && c->g->p[3]) || (f == BATCH && c->c->rows > SUITE_MAX_ROWS);
    for (int64_t r = 0; flip && r < c->c->rows; r++)
        y[r * per_row] = dsf_f32_from_bits(dsf_f32_bits(y[r * per_row]) ^ 0x10000u);
    for (int64_t i = 0; f == WRONG && i <= last; i++) y[i] *= 2.0f;
    return 0;
}

// bf16-representable activations around rms 1 with outliers, never zero.
static void fill_act(void *buf, int64_t count, const dsf_case *c, uint64_t *rng) {
    float *x = buf;
    (void)c;
    for (int64_t i = 0; i < count; i++) {
        double u = dsf_rng_unit(rng) * 2.0 - 1.0, mag = dsf_rng_next(rng) % 32 == 0 ? 8.0 : 1.7;
        x[i] = dsf_bf16_round((float)(u * mag + (u < 0 ? -1e-3 : 1e-3)));
    }
}

// RMSNorm weights as checkpoints hold them: 1 + U(-0.1, 0.1) in bf16.
static void fill_normw(void *buf, int64_t count, const dsf_case *c, uint64_t *rng) {
    float *x = buf;
    (void)c;
    for (int64_t i = 0; i < count; i++) x[i] = dsf_bf16_round((float)(1.0 + 0.2 * (dsf_rng_unit(rng) - 0.5)));
}

static void fill_e4m3(void *buf, int64_t count, const dsf_case *c, uint64_t *rng) {
    uint8_t *b = buf;
    (void)c;
    for (int64_t i = 0; i < count; i++) {
        do b[i] = (uint8_t)dsf_rng_next(rng);
        while ((b[i] & 0x7F) == 0x7F);
    }
}

static void fill_e8m0(void *buf, int64_t count, const dsf_case *c, uint64_t *rng) {
    uint8_t *b = buf;
    (void)c;
    for (int64_t i = 0; i < count; i++) b[i] = (uint8_t)(118 + dsf_rng_next(rng) % 10);
}

// List entries: kv rows in [0, n) with an eighth of them -1, and rows whose first 64 entries are all -1.
static void fill_idx(void *buf, int64_t count, const dsf_case *c, uint64_t *rng) {
    int32_t *x = buf;
    for (int64_t i = 0; i < count; i++) {
        int64_t row = i / c->k, col = i % c->k;
        int dead = (row % 5 == 3 && col < DSF_ATTN_BLOCK) || dsf_rng_next(rng) % 8 == 0;
        x[i] = dead ? -1 : (int32_t)(dsf_rng_next(rng) % (uint64_t)c->n);
    }
}

static int64_t cnt_k(const dsf_case *c) {
    return c->k;
}
static int64_t cnt_n(const dsf_case *c) {
    return c->n;
}
static int64_t cnt_nk(const dsf_case *c) {
    return c->n * c->k;
}
static int64_t cnt_scales(const dsf_case *c) {
    return (c->n / 32) * (c->k / 32);
}
static int64_t cnt_q(const dsf_case *c) {
    return c->blk * ATTN_HD;
}
static int64_t cnt_kv(const dsf_case *c) {
    return c->n * ATTN_HD;
}
static int64_t cnt_heads(const dsf_case *c) {
    return c->blk;
}

// CPU geometries {name, workers, -, {outputs or rows per chunk, -, -, perturbed by the geometry control}}.
static const dsf_geom geoms[] = {
    {"w1_c1", 1, 0, {1, 0, 0, 0}},
    {"w2_c16", 2, 0, {16, 0, 0, 1}},
    {"all_c7", 0, 0, {7, 0, 0, 1}},
    {"w3_c64", 3, 0, {64, 0, 0, 1}},
};

#define IMPLS(tag, what)                                                                                              \
    static int tag##_real(const dsf_call *c, dsf_err *e) {                                                            \
        return tag##_go(c, REAL, e);                                                                                  \
    }                                                                                                                 \
    static int tag##_skip(const dsf_call *c, dsf_err *e) {                                                            \
        return tag##_go(c, SKIP, e);                                                                                  \
    }                                                                                                                 \
    static int tag##_geom(const dsf_call *c, dsf_err *e) {                                                            \
        return tag##_go(c, GEOM, e);                                                                                  \
    }                                                                                                                 \
    static int tag##_wrong(const dsf_call *c, dsf_err *e) {                                                           \
        return tag##_go(c, WRONG, e);                                                                                 \
    }                                                                                                                 \
    static int tag##_batch(const dsf_call *c, dsf_err *e) {                                                           \
        return tag##_go(c, BATCH, e);                                                                                 \
    }                                                                                                                 \
    static const dsf_impl tag##_impls[] = {                                                                           \
        {"cpu", DSF_BACKEND_CPU, tag##_real, geoms, LEN(geoms), DSF_GATE_NONE, what, NULL},                           \
        {"cpu_ctl_skip", DSF_BACKEND_CPU, tag##_skip, geoms, LEN(geoms), DSF_GATE_1, "never writes the last element", \
         NULL},                                                                                                       \
        {"cpu_ctl_geom", DSF_BACKEND_CPU, tag##_geom, geoms, LEN(geoms), DSF_GATE_2,                                  \
         "geometries after the first round each row's first output one bf16 ulp off", NULL},                          \
        {"cpu_ctl_wrong", DSF_BACKEND_CPU, tag##_wrong, geoms, LEN(geoms), DSF_GATE_3,                                \
         "a scale exponent off by one (every output doubled)", NULL},                                                 \
        {"cpu_ctl_batch", DSF_BACKEND_CPU, tag##_batch, geoms, LEN(geoms), DSF_GATE_4,                                \
         "calls of more than 64 rows round each row's first output differently", NULL},                               \
    }

static int lin_run(const dsf_call *c) {
    dsf_linw w = {DSF_LIN_FP8, c->c->n, c->c->k, 32, c->ops[1], c->ops[2], NULL};
    dsf_linear(c->pool, c->g, &w, c->ops[0], c->c->rows, c->ops[3]);
    return 0;
}
static int lin_go(const dsf_call *c, fault f, dsf_err *e) {
    if (c->c->n % 32 || c->c->k % 32) return dsf_fail(e, "linear_fp8: n and k must be multiples of 32");
    return run_with(c, lin_run, 3, c->c->n, f);
}
IMPLS(lin, "one worker per output chunk, each sum in K order, act_quant block 32");

// float64: act_quant of the bf16 input (a definition of the op), then exact sums of q * s_a * w * s_w.
static void lin_ref(const void *const *ins, double *const *out, const dsf_case *c) {
    const float *x = ins[0];
    const uint8_t *w = ins[1], *s = ins[2];
    int64_t N = c->n, K = c->k;
    double *xq = malloc(sizeof(double) * (size_t)K);
    for (int64_t r = 0; r < c->rows; r++) {
        for (int64_t b = 0; b < K / 32; b++) {
            float sa = dsf_act_scale_pow2(dsf_block_amax(x + r * K + b * 32, 32));
            for (int i = 0; i < 32; i++)
                xq[b * 32 + i] = (double)dsf_e4m3_to_f32(dsf_act_quant_code(x[r * K + b * 32 + i], sa)) * sa;
        }
        for (int64_t o = 0; o < N; o++) {
            double acc = 0;
            for (int64_t i = 0; i < K; i++)
                acc += xq[i] * dsf_e4m3_to_f32(w[o * K + i]) * dsf_e8m0_to_f32(s[(o / 32) * (K / 32) + i / 32]);
            out[0][r * N + o] = acc;
        }
    }
    free(xq);
}

static const dsf_operand lin_ops[] = {
    {"x", DSF_ELEM_F32, DSF_IN, 1, cnt_k, DSF_DRAW_CUSTOM, fill_act},
    {"w", DSF_ELEM_E4M3, DSF_IN, 0, cnt_nk, DSF_DRAW_CUSTOM, fill_e4m3},
    {"s", DSF_ELEM_E8M0, DSF_IN, 0, cnt_scales, DSF_DRAW_CUSTOM, fill_e8m0},
    {"y", DSF_ELEM_F32, DSF_OUT, 1, cnt_n, DSF_DRAW_ACT, NULL},
};

// Cases {name, rows, n outputs, k inputs}: tiny and small model shapes, V4.1 wkv at real width, ragged rows.
static const dsf_case lin_cases[] = {
    {"r1_n512_k5120", 1, 512, 5120, 0}, {"r17_n64_k64", 17, 64, 64, 0}, {"r64_n96_k256", 64, 96, 256, 0},
    {"r5_n32_k1280", 5, 32, 1280, 0},   {"r3_n512_k64", 3, 512, 64, 0},
};

const dsf_record dsf_rec_dsv4_linear_fp8 = {
    "dsv4_linear_fp8",
    "dsv4",
    "bf16 x [R, k], e4m3 W [n, k] + e8m0 [n/32, k/32] -> bf16 y [R, n] (act_quant 32)",
    lin_ops,
    LEN(lin_ops),
    lin_ref,
    lin_impls,
    LEN(lin_impls),
    lin_cases,
    LEN(lin_cases),
    4e-3,
    2e-2,
};

static int attn_run(const dsf_call *c) {
    int64_t R = c->c->rows, L = c->c->k;
    const float *kv = c->ops[1];
    const int32_t *idx = c->ops[2];
    const float **list = malloc(sizeof(float *) * (size_t)(R * L));
    for (int64_t i = 0; i < R * L; i++) list[i] = idx[i] < 0 ? NULL : kv + (int64_t)idx[i] * ATTN_HD;
    dsf_sparse_attn(c->pool, c->g, c->ops[0], (const float *const *)list, R, (int)c->c->blk, ATTN_HD, L, c->ops[3],
                    (float)(1.0 / sqrt((double)ATTN_HD)), c->ops[4]);
    free(list);
    return 0;
}
static int attn_go(const dsf_call *c, fault f, dsf_err *e) {
    if (c->c->blk < 1 || c->c->n < 1) return dsf_fail(e, "sparse_attn: heads and kv rows must be positive");
    return run_with(c, attn_run, 4, c->c->blk * ATTN_HD, f);
}
IMPLS(attn, "rows per chunk to a worker, list blocks of 64, online softmax from -1e30, bf16 P for P.V");

// float64: o = sum_i e^(s_i - m) kv_i / (sum_i e^(s_i - m) + e^(sink - m)), no bf16 P; a list of -1 only gives 0.
static void attn_ref(const void *const *ins, double *const *out, const dsf_case *c) {
    const float *q = ins[0], *kv = ins[1], *sink = ins[3];
    const int32_t *idx = ins[2];
    int64_t L = c->k, H = c->blk;
    double *s = malloc(sizeof(double) * (size_t)L);
    for (int64_t r = 0; r < c->rows; r++)
        for (int64_t h = 0; h < H; h++) {
            const float *qh = q + (r * H + h) * ATTN_HD;
            double m = -1e300, den = 0;
            for (int64_t i = 0; i < L; i++) {
                int32_t j = idx[r * L + i];
                s[i] = -INFINITY;
                if (j < 0) continue;
                double d = 0;
                for (int k = 0; k < ATTN_HD; k++) d += (double)qh[k] * kv[(int64_t)j * ATTN_HD + k];
                s[i] = d / sqrt((double)ATTN_HD);
                m = s[i] > m ? s[i] : m;
            }
            double *o = out[0] + (r * H + h) * ATTN_HD;
            for (int k = 0; k < ATTN_HD; k++) o[k] = 0;
            for (int64_t i = 0; i < L; i++) {
                if (idx[r * L + i] < 0) continue;
                double p = exp(s[i] - m);
                den += p;
                for (int k = 0; k < ATTN_HD; k++) o[k] += p * kv[(int64_t)idx[r * L + i] * ATTN_HD + k];
            }
            if (den == 0) continue;
            den += exp(sink[h] - m);
            for (int k = 0; k < ATTN_HD; k++) o[k] /= den;
        }
    free(s);
}

static const dsf_operand attn_ops[] = {
    {"q", DSF_ELEM_F32, DSF_IN, 1, cnt_q, DSF_DRAW_CUSTOM, fill_act},
    {"kv", DSF_ELEM_F32, DSF_IN, 0, cnt_kv, DSF_DRAW_CUSTOM, fill_act},
    {"idx", DSF_ELEM_I32, DSF_IN, 1, cnt_k, DSF_DRAW_CUSTOM, fill_idx},
    {"sink", DSF_ELEM_F32, DSF_IN, 0, cnt_heads, DSF_DRAW_CUSTOM, fill_act},
    {"o", DSF_ELEM_F32, DSF_OUT, 1, cnt_q, DSF_DRAW_ACT, NULL},
};

// Cases {name, rows, kv rows, list length, heads}: window + top-k lists of tiny (16 + 8) and small (128 + 64).
static const dsf_case attn_cases[] = {
    {"r17_kv40_l24_h4", 17, 40, 24, 4},
    {"r5_kv300_l192_h8", 5, 300, 192, 8},
    {"r1_kv9_l16_h4", 1, 9, 16, 4},
    {"r64_kv70_l65_h2", 64, 70, 65, 2},
};

const dsf_record dsf_rec_dsv4_sparse_attn = {
    "dsv4_sparse_attn",
    "dsv4",
    "q [R, H, 128], kv [n, 128], idx [R, L] (-1 none), sink [H] -> o [R, H, 128]",
    attn_ops,
    LEN(attn_ops),
    attn_ref,
    attn_impls,
    LEN(attn_impls),
    attn_cases,
    LEN(attn_cases),
    6e-3,
    4e-2,
};

static int norm_run(const dsf_call *c) {
    dsf_rmsnorm(c->ops[0], c->c->n, c->c->rows, c->c->n, c->ops[1], 1e-20f, c->ops[2], c->c->n);
    return 0;
}
static int norm_go(const dsf_call *c, fault f, dsf_err *e) {
    (void)e;
    return run_with(c, norm_run, 2, c->c->n, f);
}
IMPLS(norm, "one row at a time, fp32 sum of squares in order, bf16 out");

static void norm_ref(const void *const *ins, double *const *out, const dsf_case *c) {
    const float *x = ins[0], *w = ins[1];
    for (int64_t r = 0; r < c->rows; r++) {
        double ss = 0;
        for (int64_t i = 0; i < c->n; i++) ss += (double)x[r * c->n + i] * x[r * c->n + i];
        double rs = 1.0 / sqrt(ss / (double)c->n + 1e-20);
        for (int64_t i = 0; i < c->n; i++) out[0][r * c->n + i] = (double)w[i] * x[r * c->n + i] * rs;
    }
}

static const dsf_operand norm_ops[] = {
    {"x", DSF_ELEM_F32, DSF_IN, 1, cnt_n, DSF_DRAW_CUSTOM, fill_act},
    {"w", DSF_ELEM_F32, DSF_IN, 0, cnt_n, DSF_DRAW_CUSTOM, fill_normw},
    {"y", DSF_ELEM_F32, DSF_OUT, 1, cnt_n, DSF_DRAW_ACT, NULL},
};

static const dsf_case norm_cases[] = {
    {"r17_n64", 17, 64, 0, 0},
    {"r64_n5120", 64, 5120, 0, 0},
    {"r1_n512", 1, 512, 0, 0},
    {"r3_n1280", 3, 1280, 0, 0},
};

const dsf_record dsf_rec_dsv4_rmsnorm = {
    "dsv4_rmsnorm",
    "dsv4",
    "x [R, n], w [n] -> bf16(w * x * rsqrt(mean(x^2) + 1e-20)) [R, n]",
    norm_ops,
    LEN(norm_ops),
    norm_ref,
    norm_impls,
    LEN(norm_impls),
    norm_cases,
    LEN(norm_cases),
    3e-3,
    3e-2,
};
