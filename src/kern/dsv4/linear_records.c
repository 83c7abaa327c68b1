// Contract records of the dense linears (FP8, FP4, BF16, F32 weights) with a control kernel per gate.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/formats.h"
#include "base/quant.h"
#include "kern/dsv4/dsv4_rec.h"
#include "kern/dsv4/dsv4_ref.h"
#include "kern/dsv4/linear.h"

// Operands of every kind: x [R, k], w [n, k] (codes or floats), s (E8M0 scales; none for BF16 / F32), y [R, n].
enum { OP_X, OP_W, OP_S };

static int y_op(dsf_lin_kind kind) {
    return kind == DSF_LIN_FP8 || kind == DSF_LIN_FP4 ? 3 : 2;
}

static dsf_linw weight_of(dsf_lin_kind kind, const dsf_call *c) {
    dsf_linw w = {kind, c->c->n, c->c->k, 32, NULL, NULL, NULL};
    if (kind == DSF_LIN_FP8 || kind == DSF_LIN_FP4) {
        w.q = c->ops[OP_W];
        w.s = c->ops[OP_S];
    } else {
        w.f = c->ops[OP_W];
    }
    return w;
}

typedef struct ctl_job {
    const dsf_call *c;
    dsf_linw w;
    int fault, lanes;
    const float *x, *xs;
    float *y;
} ctl_job;

// The control kernel: one (row, output) as the real kernel computes it, with the planted fault of its gate.
static float ctl_one(const ctl_job *j, int64_t r, int64_t o) {
    const dsf_linw *w = &j->w;
    int64_t k = w->k, nb = k / 32;
    const float *x = j->x + r * k;
    float part[64] = {0}, acc = 0.0f;
    if (w->kind == DSF_LIN_BF16 || w->kind == DSF_LIN_F32) {
        acc = dsv4_dot(x, w->f + o * k, j->fault == DSV4_G3 && w->kind == DSF_LIN_BF16 ? k - 1 : k, j->lanes);
        return w->kind == DSF_LIN_F32 && j->fault != DSV4_G3 ? acc : dsf_bf16_round(acc);
    }
    int64_t used = j->fault == DSV4_G3 && w->kind == DSF_LIN_FP8 ? nb - 1 : nb;
    for (int64_t b = 0; b < used; b++) {
        float s = 0.0f;
        for (int64_t i = b * 32; i < b * 32 + 32; i++) {
            int hi = (int)(i & 1) ^ (j->fault == DSV4_G3);
            uint8_t code =
                w->kind == DSF_LIN_FP8 ? w->q[o * k + i] : (uint8_t)((w->q[(o * k + i) >> 1] >> (hi ? 4 : 0)) & 0xF);
            s += x[i] * (w->kind == DSF_LIN_FP8 ? dsf_e4m3_to_f32(code) : dsf_e2m1_to_f32(code));
        }
        float ws = dsf_e8m0_to_f32(w->kind == DSF_LIN_FP8 ? w->s[(o / 32) * nb + b] : w->s[o * nb + b]);
        part[b % j->lanes] += s * j->xs[r * nb + b] * ws;
    }
    for (int l = 0; l < j->lanes; l++) acc += j->lanes > 1 ? dsf_bf16_round(part[l]) : part[l];
    return dsf_bf16_round(acc);
}

static void ctl_worker(void *ctx, int tid, int nthreads) {
    const ctl_job *j = ctx;
    int64_t n = j->w.n, chunk = j->c->g->p[0];
    long long lo, hi;
    dsf_pool_range((n + chunk - 1) / chunk, tid, nthreads, &lo, &hi);
    for (int64_t ch = lo; ch < hi; ch++) {
        int64_t o1 = (ch + 1) * chunk < n ? (ch + 1) * chunk : n;
        if (j->fault == DSV4_G1 && o1 == n && n % chunk) o1--;
        for (int64_t o = ch * chunk; o < o1; o++)
            for (int64_t r = 0; r < j->c->c->rows; r++) j->y[r * n + o] = ctl_one(j, r, o);
    }
}

static void ctl_linear(const dsf_call *c, dsf_lin_kind kind, int fault) {
    int64_t R = c->c->rows, k = c->c->k, nb = k / 32;
    ctl_job j = {c, weight_of(kind, c), fault, dsv4_lanes(c, fault), c->ops[OP_X], NULL, c->ops[y_op(kind)]};
    float *xq = NULL, *xs = NULL;
    if (kind == DSF_LIN_FP8 || kind == DSF_LIN_FP4) {
        xq = malloc(sizeof(float) * (size_t)(R * k));
        xs = malloc(sizeof(float) * (size_t)(R * nb));
        for (int64_t i = 0; i < R * nb; i++) {
            const float *xb = j.x + i * 32;
            xs[i] = dsf_act_scale_pow2(dsf_block_amax(xb, 32));
            for (int e = 0; e < 32; e++) xq[i * 32 + e] = dsf_e4m3_to_f32(dsf_act_quant_code(xb[e], xs[i]));
        }
        j.x = xq;
        j.xs = xs;
    }
    dsf_pool_run(c->pool, c->g->threads, ctl_worker, &j);
    free(xq);
    free(xs);
}

static int lin_go(const dsf_call *c, dsf_lin_kind kind, int fault, dsf_err *e) {
    int quant = kind == DSF_LIN_FP8 || kind == DSF_LIN_FP4;
    if (quant && (c->c->n % 32 || c->c->k % 32)) return dsf_fail(e, "linear: n and k must be multiples of 32");
    if (fault == DSV4_REAL) {
        dsf_linw w = weight_of(kind, c);
        dsf_linear(c->pool, c->g, &w, c->ops[OP_X], c->c->rows, c->ops[y_op(kind)]);
    } else {
        ctl_linear(c, kind, fault);
    }
    return 0;
}

static int fp8_go(const dsf_call *c, int f, dsf_err *e) {
    return lin_go(c, DSF_LIN_FP8, f, e);
}
static int fp4_go(const dsf_call *c, int f, dsf_err *e) {
    return lin_go(c, DSF_LIN_FP4, f, e);
}
static int bf16_go(const dsf_call *c, int f, dsf_err *e) {
    return lin_go(c, DSF_LIN_BF16, f, e);
}
static int f32_go(const dsf_call *c, int f, dsf_err *e) {
    return lin_go(c, DSF_LIN_F32, f, e);
}

#define W_SKIP "the last output of a ragged last chunk is never written (chunk bound one short)"
#define W_LANES "split-K: p[0] interleaved partials in bf16 scratch (the tiling follows the chunk width)"
#define W_SPLIT "calls of more than 64 rows split K in two bf16 partials (split-K chosen by row count)"
DSV4_IMPLS(fp8, dsv4_chunk_geoms, "outputs in chunks of p[0] per worker, fp32 sums per 32-block in K order", W_SKIP,
           W_LANES, "the last K block is dropped (block loop one short)", W_SPLIT);
DSV4_IMPLS(fp4, dsv4_chunk_geoms, "outputs in chunks of p[0] per worker, fp32 sums per 32-block in K order", W_SKIP,
           W_LANES, "nibbles swapped: the even element read from the high nibble", W_SPLIT);
DSV4_IMPLS(bf16, dsv4_chunk_geoms, "outputs in chunks of p[0] per worker, one fp32 sum in K order, bf16 out", W_SKIP,
           W_LANES, "the last input of K is dropped (sum loop one short)", W_SPLIT);
DSV4_IMPLS(f32, dsv4_chunk_geoms, "outputs in chunks of p[0] per worker, one fp32 sum in K order, fp32 out", W_SKIP,
           W_LANES, "the output is rounded to bf16 as for the BF16 kind", W_SPLIT);

static void ref_of(dsf_lin_kind kind, const void *const *ins, double *const *out, const dsf_case *c) {
    int quant = kind == DSF_LIN_FP8 || kind == DSF_LIN_FP4;
    dsv4_ref_linear(kind, ins[OP_X], c->rows, c->n, c->k, quant ? ins[OP_W] : NULL, quant ? ins[OP_S] : NULL,
                    quant ? NULL : ins[OP_W], out[0]);
}
static void fp8_ref(const void *const *i, double *const *o, const dsf_case *c) {
    ref_of(DSF_LIN_FP8, i, o, c);
}
static void fp4_ref(const void *const *i, double *const *o, const dsf_case *c) {
    ref_of(DSF_LIN_FP4, i, o, c);
}
static void bf16_ref(const void *const *i, double *const *o, const dsf_case *c) {
    ref_of(DSF_LIN_BF16, i, o, c);
}
static void f32_ref(const void *const *i, double *const *o, const dsf_case *c) {
    ref_of(DSF_LIN_F32, i, o, c);
}

static int64_t cnt_fp8_s(const dsf_case *c) {
    return (c->n / 32) * (c->k / 32);
}
static int64_t cnt_fp4_s(const dsf_case *c) {
    return c->n * (c->k / 32);
}

// fp32 weights of the F32 kind (bf16 upcast or F32 tensors): U(-1, 1) * sqrt(3 / K) with full fp32 mantissas.
static void fill_wf32(void *buf, int64_t count, const dsf_case *c, uint64_t *rng) {
    float *x = buf;
    float a = (float)sqrt(3.0 / (double)c->k);
    for (int64_t i = 0; i < count; i++) x[i] = a * (float)(dsf_rng_unit(rng) * 2.0 - 1.0) + 1e-9f;
}

static const dsf_operand fp8_ops[] = {
    {"x", DSF_ELEM_F32, DSF_IN, 1, dsv4_cnt_k, DSF_DRAW_CUSTOM, dsv4_fill_act},
    {"w", DSF_ELEM_E4M3, DSF_IN, 0, dsv4_cnt_nk, DSF_DRAW_CUSTOM, dsv4_fill_e4m3},
    {"s", DSF_ELEM_E8M0, DSF_IN, 0, cnt_fp8_s, DSF_DRAW_CUSTOM, dsv4_fill_e8m0},
    {"y", DSF_ELEM_F32, DSF_OUT, 1, dsv4_cnt_n, DSF_DRAW_ACT, NULL},
};
static const dsf_operand fp4_ops[] = {
    {"x", DSF_ELEM_F32, DSF_IN, 1, dsv4_cnt_k, DSF_DRAW_CUSTOM, dsv4_fill_act},
    {"w", DSF_ELEM_FP4X2, DSF_IN, 0, dsv4_cnt_nk, DSF_DRAW_CUSTOM, dsv4_fill_fp4},
    {"s", DSF_ELEM_E8M0, DSF_IN, 0, cnt_fp4_s, DSF_DRAW_CUSTOM, dsv4_fill_e8m0},
    {"y", DSF_ELEM_F32, DSF_OUT, 1, dsv4_cnt_n, DSF_DRAW_ACT, NULL},
};
static const dsf_operand bf16_ops[] = {
    {"x", DSF_ELEM_F32, DSF_IN, 1, dsv4_cnt_k, DSF_DRAW_CUSTOM, dsv4_fill_act},
    {"w", DSF_ELEM_F32, DSF_IN, 0, dsv4_cnt_nk, DSF_DRAW_CUSTOM, dsv4_fill_wk},
    {"y", DSF_ELEM_F32, DSF_OUT, 1, dsv4_cnt_n, DSF_DRAW_ACT, NULL},
};
static const dsf_operand f32_ops[] = {
    {"x", DSF_ELEM_F32, DSF_IN, 1, dsv4_cnt_k, DSF_DRAW_CUSTOM, dsv4_fill_act},
    {"w", DSF_ELEM_F32, DSF_IN, 0, dsv4_cnt_nk, DSF_DRAW_CUSTOM, fill_wf32},
    {"y", DSF_ELEM_F32, DSF_OUT, 1, dsv4_cnt_n, DSF_DRAW_ACT, NULL},
};

// Cases {name, rows, n outputs, k inputs}: the model's K (5120) with fewer outputs, tiny, ragged (n % 7, n % 64).
static const dsf_case fp8_cases[] = {
    {"r1_n256_k5120", 1, 256, 5120, 0}, {"r17_n64_k64", 17, 64, 64, 0}, {"r64_n96_k256", 64, 96, 256, 0},
    {"r5_n32_k1280", 5, 32, 1280, 0},   {"r3_n512_k64", 3, 512, 64, 0},
};
// A routed expert's w1 K (5120) and w2 K (2304) with fewer outputs, tiny ones.
static const dsf_case fp4_cases[] = {
    {"r1_n256_k5120", 1, 256, 5120, 0},
    {"r17_n64_k64", 17, 64, 64, 0},
    {"r64_n96_k256", 64, 96, 256, 0},
    {"r3_n160_k2304", 3, 160, 2304, 0},
};
// wo_a's group K (4096) and weights_proj (32 x 5120) at real size, an odd n and K.
static const dsf_case bf16_cases[] = {
    {"r1_n128_k4096", 1, 128, 4096, 0}, {"r2_n32_k5120", 2, 32, 5120, 0}, {"r17_n64_k64", 17, 64, 64, 0},
    {"r64_n96_k256", 64, 96, 256, 0},   {"r3_n33_k45", 3, 33, 45, 0},
};
// The router gate (384 x 5120) at real size, an odd n and K.
static const dsf_case f32_cases[] = {
    {"r1_n384_k5120", 1, 384, 5120, 0},
    {"r17_n64_k64", 17, 64, 64, 0},
    {"r64_n96_k256", 64, 96, 256, 0},
    {"r3_n33_k45", 3, 33, 45, 0},
};

// Bounds: the reference QDQs x as the spec does; left is half a bf16 ulp (2^-8) of outputs up to 8x the rms.
const dsf_record dsf_rec_dsv4_linear_fp8 = {
    "dsv4_linear_fp8",
    "dsv4",
    "bf16 x [R, k], e4m3 W [n, k] + e8m0 [n/32, k/32] -> bf16 y [R, n] (act_quant 32)",
    fp8_ops,
    LEN(fp8_ops),
    fp8_ref,
    fp8_impls,
    LEN(fp8_impls),
    fp8_cases,
    LEN(fp8_cases),
    4e-3,
    3.2e-2,
};
const dsf_record dsf_rec_dsv4_linear_fp4 = {
    "dsv4_linear_fp4",
    "dsv4",
    "bf16 x [R, k], e2m1 W [n, k/2] + e8m0 [n, k/32] -> bf16 y [R, n] (act_quant 32)",
    fp4_ops,
    LEN(fp4_ops),
    fp4_ref,
    fp4_impls,
    LEN(fp4_impls),
    fp4_cases,
    LEN(fp4_cases),
    4e-3,
    3.2e-2,
};
const dsf_record dsf_rec_dsv4_linear_bf16 = {
    "dsv4_linear_bf16",
    "dsv4",
    "bf16 x [R, k], bf16 W [n, k] -> bf16 y [R, n] (F.linear in bf16)",
    bf16_ops,
    LEN(bf16_ops),
    bf16_ref,
    bf16_impls,
    LEN(bf16_impls),
    bf16_cases,
    LEN(bf16_cases),
    4e-3,
    3.2e-2,
};
// F32 bounds: fp32 sums in K order, about sqrt(K) * 2^-24 = 4.3e-6 of the terms' norm at K = 5120.
const dsf_record dsf_rec_dsv4_linear_f32 = {
    "dsv4_linear_f32", "dsv4",         "bf16 x [R, k], fp32 W [n, k] -> fp32 y [R, n] (fp32 GEMM)",
    f32_ops,           LEN(f32_ops),   f32_ref,
    f32_impls,         LEN(f32_impls), f32_cases,
    LEN(f32_cases),    5e-6,           5e-5,
};
