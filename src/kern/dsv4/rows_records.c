// Contract records of the row ops: RMSNorm, RoPE with YaRN, the clamped SwiGLU; a control kernel per gate.
#include <math.h>
#include <string.h>

#include "base/formats.h"
#include "kern/dsv4/dsv4_rec.h"
#include "kern/dsv4/dsv4_ref.h"
#include "kern/dsv4/moe.h"
#include "kern/dsv4/rows.h"

#define V41_EPS 1e-20f
#define SWIGLU_LIMIT 10.0f

// The last row of a call is skipped by the gate-1 controls (a row loop one short).
static int64_t end_of(const dsf_call *c, int64_t r1, int fault) {
    return fault == DSV4_G1 && r1 == c->c->rows ? r1 - 1 : r1;
}

static void norm_rows(const dsf_call *c, int64_t r0, int64_t r1, int fault) {
    int64_t n = c->c->n;
    const float *x = c->ops[0], *w = c->ops[1];
    float *y = c->ops[2];
    if (fault == DSV4_REAL) {
        dsf_rmsnorm(x + r0 * n, n, r1 - r0, n, w, V41_EPS, y + r0 * n, n);
        return;
    }
    for (int64_t r = r0; r < end_of(c, r1, fault); r++) {
        float ss = dsv4_dot(x + r * n, NULL, n, dsv4_lanes(c, fault));
        float rs = 1.0f / sqrtf(ss / (float)n + (fault == DSV4_G3 ? 1e-6f : V41_EPS));
        for (int64_t i = 0; i < n; i++) y[r * n + i] = dsf_bf16_round(w[i] * (x[r * n + i] * rs));
    }
}
static int norm_go(const dsf_call *c, int fault, dsf_err *e) {
    (void)e;
    dsv4_run_rows(c, norm_rows, fault);
    return 0;
}
DSV4_IMPLS(norm, dsv4_row_geoms, "dsf_rmsnorm on chunks of p[0] rows: fp32 sum of squares in order, bf16 out",
           "the last row of a call is never normalised (row loop one short)",
           "sum of squares split in p[0] partials kept in bf16 scratch (follows the chunk)",
           "V4's eps 1e-6 in place of V4.1's 1e-20 (visible on rows of rms 2^-12)",
           "calls of more than 64 rows split the sum of squares in two bf16 partials");

static void norm_ref(const void *const *ins, double *const *out, const dsf_case *c) {
    dsv4_ref_rmsnorm(ins[0], c->rows, c->n, ins[1], 1e-20, out[0]);
}

static const dsf_operand norm_ops[] = {
    {"x", DSF_ELEM_F32, DSF_IN, 1, dsv4_cnt_n, DSF_DRAW_CUSTOM, dsv4_fill_act_rows},
    {"w", DSF_ELEM_F32, DSF_IN, 0, dsv4_cnt_n, DSF_DRAW_CUSTOM, dsv4_fill_normw},
    {"y", DSF_ELEM_F32, DSF_OUT, 1, dsv4_cnt_n, DSF_DRAW_ACT, NULL},
};

// Cases {name, rows, n}: D = 5120 (attn/ffn norm), q_norm 1280, kv_norm 512, k_norm 128, tiny 64 and odd 45.
static const dsf_case norm_cases[] = {
    {"r64_n5120", 64, 5120, 0, 0}, {"r17_n64", 17, 64, 0, 0}, {"r1_n512", 1, 512, 0, 0},
    {"r3_n1280", 3, 1280, 0, 0},   {"r5_n128", 5, 128, 0, 0}, {"r2_n45", 2, 45, 0, 0},
};

// Bounds: half a bf16 ulp (2^-8 relative) per output; outliers reach 8x the rms, so max 8 * 2^-8.
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
    4e-3,
    3.2e-2,
};

// RoPE cases: n heads of width k; blk bit 0: a ratio > 0 layer (160000 + YaRN, else 1e4 plain), bit 1: inverse.
static void rope_table(const dsf_call *c, int fault, float *f) {
    if (!(c->c->blk & 1)) {
        dsf_rope_freqs(10000.0, 64, 0, 1.0, 0.0, 0.0, f);
        return;
    }
    int swap = fault == DSV4_G3;
    dsf_rope_freqs(160000.0, 64, 65536, 16.0, swap ? 1.0 : 32.0, swap ? 32.0 : 1.0, f);
}

static void rope_rows(const dsf_call *c, int64_t r0, int64_t r1, int fault) {
    int heads = (int)c->c->n, hd = (int)c->c->k, inv = (c->c->blk & 2) != 0;
    int64_t w = (int64_t)heads * hd;
    const float *x = c->ops[0];
    const int64_t *pos = c->ops[1];
    float *y = c->ops[2], f[32];
    rope_table(c, fault, f);
    int wide = (fault == DSV4_G2 && c->g->p[0] > 1) || (fault == DSV4_G4 && c->c->rows > DSV4_MAX_ROWS);
    for (int64_t r = r0; r < r1; r++) {
        float *yr = y + r * w;
        int64_t skip = fault == DSV4_G1 && r == c->c->rows - 1 ? hd - 64 : 0;
        memcpy(yr, x + r * w, sizeof(float) * (size_t)(w - hd));
        memcpy(yr + w - hd + skip, x + r * w + w - hd + skip, sizeof(float) * (size_t)(hd - skip));
        if (!wide) {
            dsf_rope_row(yr, heads, hd, 64, f, pos[r], inv);
            continue;
        }
        for (int i = 0; i < 32; i++) {
            double ang = (double)pos[r] * f[i], cs = cos(ang), sn = inv ? -sin(ang) : sin(ang);
            for (int h = 0; h < heads; h++) {
                float *p = yr + (int64_t)h * hd + hd - 64 + 2 * i, a = p[0], b = p[1];
                p[0] = dsf_bf16_round((float)(a * cs - b * sn));
                p[1] = dsf_bf16_round((float)(a * sn + b * cs));
            }
        }
    }
}
static int rope_go(const dsf_call *c, int fault, dsf_err *e) {
    if (c->c->k < 64 || c->c->k % 2) return dsf_fail(e, "rope: head width must be even and at least 64");
    dsv4_run_rows(c, rope_rows, fault);
    return 0;
}
DSV4_IMPLS(rope, dsv4_row_geoms, "dsf_rope_freqs table, dsf_rope_row per row on chunks of p[0] rows",
           "the nope dims of the last head of the last row are never copied",
           "chunks of more than one row take cos/sin in double of a double angle (a table path per chunk)",
           "YaRN betas swapped (32 <-> 1): the 1/16 ramp lands on the high-frequency pairs",
           "calls of more than 64 rows take cos/sin in double of a double angle");

static void rope_ref(const void *const *ins, double *const *out, const dsf_case *c) {
    const float *x = ins[0];
    const int64_t *pos = ins[1];
    int64_t w = c->n * c->k;
    float f[32];
    dsv4_ref_rope_freqs(c->blk & 1 ? 160000.0 : 10000.0, (int)(c->blk & 1), 64, f);
    for (int64_t r = 0; r < c->rows; r++)
        dsv4_ref_rope(x + r * w, (int)c->n, (int)c->k, 64, f, pos[r], (c->blk & 2) != 0, out[0] + r * w);
}

// Positions: a third near the start, a third below the original 65536, a third up to the 2^20 table end.
static void fill_pos(void *buf, int64_t count, const dsf_case *c, uint64_t *rng) {
    int64_t *p = buf;
    (void)c;
    for (int64_t i = 0; i < count; i++) {
        uint64_t v = dsf_rng_next(rng), top[3] = {256, 65536, 1048576};
        p[i] = (int64_t)((v >> 8) % top[v % 3]);
    }
}

static int64_t cnt_hk(const dsf_case *c) {
    return c->n * c->k;
}

static const dsf_operand rope_ops[] = {
    {"x", DSF_ELEM_F32, DSF_IN, 1, cnt_hk, DSF_DRAW_CUSTOM, dsv4_fill_act},
    {"pos", DSF_ELEM_I64, DSF_IN, 1, dsv4_cnt_one, DSF_DRAW_CUSTOM, fill_pos},
    {"y", DSF_ELEM_F32, DSF_OUT, 1, cnt_hk, DSF_DRAW_ACT, NULL},
};

// Cases {name, rows, heads, head width, kind}: q (64 x 512), window kv (1 x 512), index q (32 x 128), de-rotation.
static const dsf_case rope_cases[] = {
    {"r2_h64_d512_yarn", 2, 64, 512, 1},     {"r17_h1_d512_plain", 17, 1, 512, 0},
    {"r5_h64_d512_yarn_inv", 5, 64, 512, 3}, {"r64_h1_d512_yarn", 64, 1, 512, 1},
    {"r3_h32_d128_yarn", 3, 32, 128, 1},     {"r1_h8_d64_plain", 1, 8, 64, 0},
    {"r4_h4_d512_plain_inv", 4, 4, 512, 2},
};

// Bounds: nope dims are exact; rope dims carry half a bf16 ulp (2^-8) of values up to 8x the rms, plus fp32 cos/sin.
const dsf_record dsf_rec_dsv4_rope = {
    "dsv4_rope",
    "dsv4",
    "x [R, H, hd], pos [R] -> y: last 64 dims of each head rotated in pairs (YaRN per kind)",
    rope_ops,
    LEN(rope_ops),
    rope_ref,
    rope_impls,
    LEN(rope_impls),
    rope_cases,
    LEN(rope_cases),
    4e-3,
    3.2e-2,
};

static void swiglu_rows(const dsf_call *c, int64_t r0, int64_t r1, int fault) {
    int64_t n = c->c->n;
    const float *g = c->ops[0], *u = c->ops[1], *w = c->c->blk ? c->ops[2] : NULL;
    float *t = c->ops[3];
    if (fault == DSV4_REAL) {
        dsf_swiglu(g + r0 * n, u + r0 * n, w ? w + r0 : NULL, r1 - r0, n, SWIGLU_LIMIT, t + r0 * n);
        return;
    }
    int late = (fault == DSV4_G2 && c->g->p[0] > 1) || (fault == DSV4_G4 && c->c->rows > DSV4_MAX_ROWS);
    for (int64_t r = r0; r < r1; r++) {
        int64_t end = fault == DSV4_G1 ? n - n % 8 : n;
        for (int64_t i = 0; i < end; i++) {
            float gv = g[r * n + i], uv = u[r * n + i];
            gv = gv > SWIGLU_LIMIT ? SWIGLU_LIMIT : gv;
            uv = uv > SWIGLU_LIMIT ? SWIGLU_LIMIT : (uv < -SWIGLU_LIMIT && fault != DSV4_G3 ? -SWIGLU_LIMIT : uv);
            float v = gv / (1.0f + expf(-gv)) * uv;
            t[r * n + i] = !w     ? dsf_bf16_round(v)
                           : late ? dsf_bf16_round(w[r] * dsf_bf16_round(v))
                                  : dsf_bf16_round(w[r] * v);
        }
    }
}
static int swiglu_go(const dsf_call *c, int fault, dsf_err *e) {
    (void)e;
    dsv4_run_rows(c, swiglu_rows, fault);
    return 0;
}
DSV4_IMPLS(swiglu, dsv4_row_geoms, "dsf_swiglu on chunks of p[0] rows, fp32, one bf16 rounding",
           "an 8-wide loop with no scalar tail: the last n % 8 outputs of each row never written",
           "chunks of more than one row round silu(g)*u to bf16 before the routing weight (double rounding)",
           "up clamped only from above, as the gate is (spec: up to +-10, gate from above)",
           "calls of more than 64 rows round silu(g)*u to bf16 before the routing weight");

static void swiglu_ref(const void *const *ins, double *const *out, const dsf_case *c) {
    const float *g = ins[0], *u = ins[1], *w = ins[2];
    for (int64_t r = 0; r < c->rows; r++)
        for (int64_t i = 0; i < c->n; i++)
            out[0][r * c->n + i] = dsv4_ref_swiglu(g[r * c->n + i], u[r * c->n + i], c->blk ? w[r] : 1.0, 10.0);
}

// Expert projections in bf16: U(-4, 4) with a sixth of them out to +-16, so both clamps and both signs are hit.
static void fill_gu(void *buf, int64_t count, const dsf_case *c, uint64_t *rng) {
    float *x = buf;
    (void)c;
    for (int64_t i = 0; i < count; i++) {
        double v = (dsf_rng_unit(rng) * 2.0 - 1.0) * (dsf_rng_next(rng) % 6 == 0 ? 16.0 : 4.0);
        x[i] = dsf_bf16_round((float)(v == 0 ? 0.25 : v));
    }
}

// Routing weights after normalisation and route_scale 1.5: U(0.01, 1.5).
static void fill_rw(void *buf, int64_t count, const dsf_case *c, uint64_t *rng) {
    float *x = buf;
    (void)c;
    for (int64_t i = 0; i < count; i++) x[i] = (float)(0.01 + 1.49 * dsf_rng_unit(rng));
}

static const dsf_operand swiglu_ops[] = {
    {"g", DSF_ELEM_F32, DSF_IN, 1, dsv4_cnt_n, DSF_DRAW_CUSTOM, fill_gu},
    {"u", DSF_ELEM_F32, DSF_IN, 1, dsv4_cnt_n, DSF_DRAW_CUSTOM, fill_gu},
    {"w", DSF_ELEM_F32, DSF_IN, 1, dsv4_cnt_one, DSF_DRAW_CUSTOM, fill_rw},
    {"t", DSF_ELEM_F32, DSF_OUT, 1, dsv4_cnt_n, DSF_DRAW_ACT, NULL},
};

// Cases {name, rows, n, weighted}: a routed expert (2304) and the shared one (unweighted), ragged n.
static const dsf_case swiglu_cases[] = {
    {"r1_n2304_routed", 1, 2304, 0, 1}, {"r3_n2304_shared", 3, 2304, 0, 0}, {"r17_n45_routed", 17, 45, 0, 1},
    {"r64_n72_routed", 64, 72, 0, 1},   {"r5_n17_shared", 5, 17, 0, 0},
};

// Bounds: one bf16 rounding (2^-8); outputs reach 150 (half ulp 0.5) over a row-set rms of 8 or more: max 7e-2.
const dsf_record dsf_rec_dsv4_swiglu = {
    "dsv4_swiglu",
    "dsv4",
    "g, u [R, n], w [R] -> bf16(w * silu(min(g, 10)) * clamp(u, +-10)) [R, n]",
    swiglu_ops,
    LEN(swiglu_ops),
    swiglu_ref,
    swiglu_impls,
    LEN(swiglu_impls),
    swiglu_cases,
    LEN(swiglu_cases),
    4e-3,
    7e-2,
};
