// Contract records of mHC (spec §3.0, §6 finding 25): mixes, the Sinkhorn split, hc_pre, hc_post; hc = 4 streams.
#include <math.h>

#include "base/formats.h"
#include "kern/dsv4/dsv4_rec.h"
#include "kern/dsv4/dsv4_ref.h"
#include "kern/dsv4/hc.h"

#define HC 4
#define NMIX ((2 + HC) * HC)
#define SINKHORN_ITERS 20
#define HC_EPS 1e-6f

// Cases of this file: rows, n = D (the stream width); streams are stored stream-major, [R, HC, D].
static int64_t cnt_hd(const dsf_case *c) {
    return HC * c->n;
}
static int64_t cnt_hc(const dsf_case *c) {
    (void)c;
    return HC;
}
static int64_t cnt_hc2(const dsf_case *c) {
    (void)c;
    return HC * HC;
}
static int64_t cnt_mix(const dsf_case *c) {
    (void)c;
    return NMIX;
}
static int64_t cnt_fn(const dsf_case *c) {
    return NMIX * HC * c->n;
}
static int64_t cnt_3(const dsf_case *c) {
    (void)c;
    return 3;
}

// Gate-1 controls of hc_pre / hc_post run an 8-wide loop with no scalar tail: the last D % 8 outputs stay unwritten.
static int64_t tail_end(int64_t d, int fault) {
    return fault == DSV4_G1 ? d - d % 8 : d;
}

static void mixes_rows(const dsf_call *c, int64_t r0, int64_t r1, int fault) {
    int64_t W = HC * c->c->n;
    const float *x = c->ops[0], *fn = c->ops[1];
    float *mx = c->ops[2];
    if (fault == DSV4_REAL) {
        dsf_hc_mixes(x + r0 * W, r1 - r0, W, fn, NMIX, 1e-20f, mx + r0 * NMIX);
        return;
    }
    int lanes = dsv4_lanes(c, fault);
    for (int64_t r = r0; r < r1; r++) {
        float ss = dsv4_dot(x + r * W, NULL, W, lanes);
        float rs = 1.0f / sqrtf(ss / (float)(fault == DSV4_G3 ? c->c->n : W) + 1e-20f);
        for (int j = 0; j < (fault == DSV4_G1 && r == c->c->rows - 1 ? NMIX - 1 : NMIX); j++)
            mx[r * NMIX + j] = dsv4_dot(x + r * W, fn + j * W, W, lanes) * rs;
    }
}
static int mixes_go(const dsf_call *c, int fault, dsf_err *e) {
    (void)e;
    dsv4_run_rows(c, mixes_rows, fault);
    return 0;
}
DSV4_IMPLS(mixes, dsv4_row_geoms, "dsf_hc_mixes on chunks of p[0] rows: fp32 sums in order",
           "the last mix (comb[3][3]) of the last row is never written",
           "the sums split in p[0] partials kept in bf16 scratch (follows the chunk)",
           "mean of squares over one stream (D) instead of all four (4D)",
           "calls of more than 64 rows split the sums in two bf16 partials");

static void mixes_ref(const void *const *ins, double *const *out, const dsf_case *c) {
    int64_t W = HC * c->n;
    for (int64_t r = 0; r < c->rows; r++)
        dsv4_ref_hc_mixes((const float *)ins[0] + r * W, W, ins[1], NMIX, 1e-20, out[0] + r * NMIX);
}

// hc_fn weights: U(-1, 1) * 2 / sqrt(4D) in fp32, mixes then land near N(0, 1).
static void fill_fn(void *buf, int64_t count, const dsf_case *c, uint64_t *rng) {
    float *x = buf;
    float a = (float)(2.0 / sqrt(4.0 * (double)c->n));
    for (int64_t i = 0; i < count; i++) x[i] = a * (float)(dsf_rng_unit(rng) * 2.0 - 1.0) + 1e-9f;
}

static const dsf_operand mixes_ops[] = {
    {"x", DSF_ELEM_F32, DSF_IN, 1, cnt_hd, DSF_DRAW_CUSTOM, dsv4_fill_act},
    {"fn", DSF_ELEM_F32, DSF_IN, 0, cnt_fn, DSF_DRAW_CUSTOM, fill_fn},
    {"mixes", DSF_ELEM_F32, DSF_OUT, 1, cnt_mix, DSF_DRAW_ACT, NULL},
};

// Cases {name, rows, D}: the real D = 5120 (width 20480), a tiny D, an odd D.
static const dsf_case mixes_cases[] = {
    {"r3_d5120", 3, 5120, 0, 0}, {"r1_d5120", 1, 5120, 0, 0}, {"r17_d64", 17, 64, 0, 0},
    {"r64_d256", 64, 256, 0, 0}, {"r5_d45", 5, 45, 0, 0},
};

// Bounds: fp32 sums of up to 20480 terms, error about sqrt(4D) * 2^-24 of the terms' norm; mixes are near N(0, 1).
const dsf_record dsf_rec_dsv4_hc_mixes = {
    "dsv4_hc_mixes",
    "dsv4",
    "x [R, 4 * D], fn [24, 4 * D] -> mixes [R, 24] = (x . fn) * rsqrt(mean(x^2) + 1e-20)",
    mixes_ops,
    LEN(mixes_ops),
    mixes_ref,
    mixes_impls,
    LEN(mixes_impls),
    mixes_cases,
    LEN(mixes_cases),
    1.2e-5,
    5e-5,
};

static float sigm(float v) {
    return 1.0f / (1.0f + expf(-v));
}

// Sum of four: in order, or pairwise ((a + b) + (c + d)) where the gate-2 / gate-4 control says.
static float sum4(const float *v, int step, int pair) {
    return pair ? (v[0] + v[step]) + (v[2 * step] + v[3 * step]) : ((v[0] + v[step]) + v[2 * step]) + v[3 * step];
}

static void split_rows(const dsf_call *c, int64_t r0, int64_t r1, int fault) {
    const float *mixes = c->ops[0], *scale = c->ops[1], *base = c->ops[2];
    float *pre = c->ops[3], *post = c->ops[4], *comb = c->ops[5];
    if (fault == DSV4_REAL) {
        dsf_hc_split(mixes + r0 * NMIX, r1 - r0, HC, scale, base, SINKHORN_ITERS, HC_EPS, pre + r0 * HC, post + r0 * HC,
                     comb + r0 * HC * HC);
        return;
    }
    int pair = dsv4_lanes(c, fault) > 1;
    for (int64_t r = r0; r < r1; r++) {
        const float *mx = mixes + r * NMIX;
        float *cm = comb + r * HC * HC;
        for (int j = 0; j < (fault == DSV4_G1 && r == c->c->rows - 1 ? HC - 1 : HC); j++) {
            pre[r * HC + j] = sigm(mx[j] * scale[0] + base[j]) + HC_EPS;
            post[r * HC + j] = (fault == DSV4_G3 ? 1.0f : 2.0f) * sigm(mx[HC + j] * scale[1] + base[HC + j]);
        }
        if (fault == DSV4_G1 && r == c->c->rows - 1)
            pre[r * HC + HC - 1] = sigm(mx[HC - 1] * scale[0] + base[HC - 1]) + HC_EPS;
        for (int j = 0; j < HC; j++) {
            float top = -INFINITY, e[HC];
            for (int k = 0; k < HC; k++) {
                cm[j * HC + k] = mx[2 * HC + j * HC + k] * scale[2] + base[2 * HC + j * HC + k];
                top = cm[j * HC + k] > top ? cm[j * HC + k] : top;
            }
            for (int k = 0; k < HC; k++) e[k] = expf(cm[j * HC + k] - top);
            float s = sum4(e, 1, 0);
            for (int k = 0; k < HC; k++) cm[j * HC + k] = e[k] / s + HC_EPS;
        }
        for (int it = 0; it < SINKHORN_ITERS; it++) {
            for (int j = 0; it > 0 && j < HC; j++) {
                float s = sum4(cm + j * HC, 1, pair);
                for (int k = 0; k < HC; k++) cm[j * HC + k] /= s + HC_EPS;
            }
            for (int k = 0; k < HC; k++) {
                float s = sum4(cm + k, HC, pair);
                for (int j = 0; j < HC; j++) cm[j * HC + k] /= s + HC_EPS;
            }
        }
    }
}
static int split_go(const dsf_call *c, int fault, dsf_err *e) {
    (void)e;
    dsv4_run_rows(c, split_rows, fault);
    return 0;
}
DSV4_IMPLS(split, dsv4_row_geoms, "dsf_hc_split on chunks of p[0] rows: sigmoid, softmax, 1 + 19 Sinkhorn rounds",
           "post of the last stream of the last row is never written",
           "chunks of more than one row sum Sinkhorn rows and columns pairwise",
           "post without its factor 2 (spec: 2 * sigmoid)",
           "calls of more than 64 rows sum Sinkhorn rows and columns pairwise");

static void split_ref(const void *const *ins, double *const *out, const dsf_case *c) {
    for (int64_t r = 0; r < c->rows; r++)
        dsv4_ref_hc_split((const float *)ins[0] + r * NMIX, HC, ins[1], ins[2], SINKHORN_ITERS, 1e-6, out[0] + r * HC,
                          out[1] + r * HC, out[2] + r * HC * HC);
}

// Mixes near N(0, 1) in fp32 with a few at +-6; scales U(0.2, 2); bases U(-1, 1).
static void fill_mix(void *buf, int64_t count, const dsf_case *c, uint64_t *rng) {
    float *x = buf;
    (void)c;
    for (int64_t i = 0; i < count; i++) {
        double g = dsf_rng_unit(rng) + dsf_rng_unit(rng) + dsf_rng_unit(rng) - 1.5;
        x[i] = (float)(dsf_rng_next(rng) % 16 == 0 ? 6.0 * g : 2.0 * g) + 1e-7f;
    }
}
static void fill_scale(void *buf, int64_t count, const dsf_case *c, uint64_t *rng) {
    float *x = buf;
    (void)c;
    for (int64_t i = 0; i < count; i++) x[i] = (float)(0.2 + 1.8 * dsf_rng_unit(rng));
}
static void fill_base(void *buf, int64_t count, const dsf_case *c, uint64_t *rng) {
    float *x = buf;
    (void)c;
    for (int64_t i = 0; i < count; i++) x[i] = (float)(dsf_rng_unit(rng) * 2.0 - 1.0) + 1e-7f;
}

static const dsf_operand split_ops[] = {
    {"mixes", DSF_ELEM_F32, DSF_IN, 1, cnt_mix, DSF_DRAW_CUSTOM, fill_mix},
    {"scale", DSF_ELEM_F32, DSF_IN, 0, cnt_3, DSF_DRAW_CUSTOM, fill_scale},
    {"base", DSF_ELEM_F32, DSF_IN, 0, cnt_mix, DSF_DRAW_CUSTOM, fill_base},
    {"pre", DSF_ELEM_F32, DSF_OUT, 1, cnt_hc, DSF_DRAW_ACT, NULL},
    {"post", DSF_ELEM_F32, DSF_OUT, 1, cnt_hc, DSF_DRAW_ACT, NULL},
    {"comb", DSF_ELEM_F32, DSF_OUT, 1, cnt_hc2, DSF_DRAW_ACT, NULL},
};

static const dsf_case split_cases[] = {
    {"r1", 1, 0, 0, 0},
    {"r17", 17, 0, 0, 0},
    {"r64", 64, 0, 0, 0},
    {"r5", 5, 0, 0, 0},
};

// Bounds: fp32 sigmoid / exp / 39 normalisations, each a few 2^-24 relative; entries are O(1).
const dsf_record dsf_rec_dsv4_hc_split = {
    "dsv4_hc_split",
    "dsv4",
    "mixes [R, 24], scale [3], base [24] -> pre [R, 4], post [R, 4], comb [R, 4, 4]",
    split_ops,
    LEN(split_ops),
    split_ref,
    split_impls,
    LEN(split_impls),
    split_cases,
    LEN(split_cases),
    5e-7,
    4e-6,
};

static void pre_rows(const dsf_call *c, int64_t r0, int64_t r1, int fault) {
    int64_t D = c->c->n;
    const float *x = c->ops[0], *pre = c->ops[1];
    float *y = c->ops[2];
    if (fault == DSV4_REAL) {
        dsf_hc_pre(x + r0 * HC * D, pre + r0 * HC, r1 - r0, HC, D, y + r0 * D);
        return;
    }
    for (int64_t r = r0; r < r1; r++)
        for (int64_t i = 0; i < tail_end(D, fault); i++) {
            float acc = 0.0f;
            for (int j = 0; j < HC; j++)
                acc += pre[r * HC + j] * x[r * HC * D + (fault == DSV4_G3 ? (i * HC + j) % (HC * D) : j * D + i)];
            y[r * D + i] = dsv4_bf16(c, fault, acc);
        }
}
static int pre_go(const dsf_call *c, int fault, dsf_err *e) {
    (void)e;
    dsv4_run_rows(c, pre_rows, fault);
    return 0;
}
DSV4_IMPLS(pre, dsv4_row_geoms, "dsf_hc_pre on chunks of p[0] rows: fp32 sum over streams in order, bf16 out",
           "an 8-wide loop with no scalar tail: the last D % 8 outputs of each row never written",
           "chunks of more than one row convert to bf16 by truncation (a SIMD cast) instead of RNE",
           "streams read stream-minor, x[i * 4 + j] (spec finding 25: the layout is stream-major)",
           "calls of more than 64 rows convert to bf16 by truncation");

static void pre_ref(const void *const *ins, double *const *out, const dsf_case *c) {
    const float *x = ins[0], *pre = ins[1];
    int64_t D = c->n;
    for (int64_t r = 0; r < c->rows; r++)
        for (int64_t i = 0; i < D; i++) {
            double acc = 0;
            for (int j = 0; j < HC; j++) acc += (double)pre[r * HC + j] * x[(r * HC + j) * D + i];
            out[0][r * D + i] = acc;
        }
}

// hc_pre weights: sigmoid + 1e-6, so U(0.01, 1); post weights 2 * sigmoid, U(0.02, 2).
static void fill_pre(void *buf, int64_t count, const dsf_case *c, uint64_t *rng) {
    float *x = buf;
    (void)c;
    for (int64_t i = 0; i < count; i++) x[i] = (float)(0.01 + 0.99 * dsf_rng_unit(rng));
}
static void fill_post(void *buf, int64_t count, const dsf_case *c, uint64_t *rng) {
    float *x = buf;
    (void)c;
    for (int64_t i = 0; i < count; i++) x[i] = (float)(0.02 + 1.98 * dsf_rng_unit(rng));
}
// comb rows as Sinkhorn leaves them: positive, far from symmetric (one dominant entry per row), rows near 1.
static void fill_comb(void *buf, int64_t count, const dsf_case *c, uint64_t *rng) {
    float *x = buf;
    (void)c;
    for (int64_t i = 0; i < count; i++)
        x[i] = (float)(i % HC == (i / HC + 1) % HC ? 0.7 : 0.1 * dsf_rng_unit(rng) + 1e-3);
}

static int64_t cnt_d(const dsf_case *c) {
    return c->n;
}

static const dsf_operand pre_ops[] = {
    {"x", DSF_ELEM_F32, DSF_IN, 1, cnt_hd, DSF_DRAW_CUSTOM, dsv4_fill_act},
    {"pre", DSF_ELEM_F32, DSF_IN, 1, cnt_hc, DSF_DRAW_CUSTOM, fill_pre},
    {"y", DSF_ELEM_F32, DSF_OUT, 1, cnt_d, DSF_DRAW_ACT, NULL},
};

// Cases {name, rows, D}: the real D = 5120, tiny and odd D.
static const dsf_case pre_cases[] = {
    {"r17_d5120", 17, 5120, 0, 0},
    {"r1_d5120", 1, 5120, 0, 0},
    {"r64_d256", 64, 256, 0, 0},
    {"r3_d45", 3, 45, 0, 0},
};

// Bounds: one bf16 rounding (2^-8 relative) of values up to 8x the rms.
const dsf_record dsf_rec_dsv4_hc_pre = {
    "dsv4_hc_pre",  "dsv4",         "x [R, 4, D], pre [R, 4] -> y [R, D] = bf16(sum_j pre_j x_j)",
    pre_ops,        LEN(pre_ops),   pre_ref,
    pre_impls,      LEN(pre_impls), pre_cases,
    LEN(pre_cases), 4e-3,           3.2e-2,
};

static void post_rows(const dsf_call *c, int64_t r0, int64_t r1, int fault) {
    int64_t D = c->c->n;
    const float *f = c->ops[0], *res = c->ops[1], *post = c->ops[2], *comb = c->ops[3];
    float *out = c->ops[4];
    if (fault == DSV4_REAL) {
        dsf_hc_post(f + r0 * D, res + r0 * HC * D, post + r0 * HC, comb + r0 * HC * HC, r1 - r0, HC, D,
                    out + r0 * HC * D);
        return;
    }
    for (int64_t r = r0; r < r1; r++)
        for (int k = 0; k < HC; k++)
            for (int64_t i = 0; i < tail_end(D, fault); i++) {
                float acc = 0.0f;
                for (int j = 0; j < HC; j++)
                    acc += comb[r * HC * HC + (fault == DSV4_G3 ? k * HC + j : j * HC + k)] * res[(r * HC + j) * D + i];
                out[(r * HC + k) * D + i] = dsv4_bf16(c, fault, post[r * HC + k] * f[r * D + i] + acc);
            }
}
static int post_go(const dsf_call *c, int fault, dsf_err *e) {
    (void)e;
    dsv4_run_rows(c, post_rows, fault);
    return 0;
}
DSV4_IMPLS(post, dsv4_row_geoms, "dsf_hc_post on chunks of p[0] rows: fp32, comb sum in stream order, bf16 out",
           "an 8-wide loop with no scalar tail: the last D % 8 outputs of each stream never written",
           "chunks of more than one row convert to bf16 by truncation (a SIMD cast) instead of RNE",
           "comb transposed: comb[k][j] used to carry stream j into stream k",
           "calls of more than 64 rows convert to bf16 by truncation");

static void post_ref(const void *const *ins, double *const *out, const dsf_case *c) {
    const float *f = ins[0], *res = ins[1], *post = ins[2], *comb = ins[3];
    int64_t D = c->n;
    for (int64_t r = 0; r < c->rows; r++)
        for (int k = 0; k < HC; k++)
            for (int64_t i = 0; i < D; i++) {
                double acc = (double)post[r * HC + k] * f[r * D + i];
                for (int j = 0; j < HC; j++) acc += (double)comb[(r * HC + j) * HC + k] * res[(r * HC + j) * D + i];
                out[0][(r * HC + k) * D + i] = acc;
            }
}

static const dsf_operand post_ops[] = {
    {"f", DSF_ELEM_F32, DSF_IN, 1, cnt_d, DSF_DRAW_CUSTOM, dsv4_fill_act},
    {"res", DSF_ELEM_F32, DSF_IN, 1, cnt_hd, DSF_DRAW_CUSTOM, dsv4_fill_act},
    {"post", DSF_ELEM_F32, DSF_IN, 1, cnt_hc, DSF_DRAW_CUSTOM, fill_post},
    {"comb", DSF_ELEM_F32, DSF_IN, 1, cnt_hc2, DSF_DRAW_CUSTOM, fill_comb},
    {"out", DSF_ELEM_F32, DSF_OUT, 1, cnt_hd, DSF_DRAW_ACT, NULL},
};

// Bounds: one bf16 rounding (2^-8 relative); outputs add outliers of f and res, up to 12x the rms.
const dsf_record dsf_rec_dsv4_hc_post = {
    "dsv4_hc_post",
    "dsv4",
    "f [R, D], res [R, 4, D], post [R, 4], comb [R, 4, 4] -> bf16 out [R, 4, D]",
    post_ops,
    LEN(post_ops),
    post_ref,
    post_impls,
    LEN(post_impls),
    pre_cases,
    LEN(pre_cases),
    4e-3,
    4.7e-2,
};
