// Contract record of the MoE router (spec §6.2 item 6): sqrt-softplus scores, bias-only selection, normed weights.
#include <math.h>

#include "kern/dsv4/dsv4_rec.h"
#include "kern/dsv4/dsv4_ref.h"
#include "kern/dsv4/moe.h"

#define ROUTE_SCALE 1.5f

// Case rows (tokens), n experts, k picks; z [R, E], bias [E] | idx [R, k], w [R, k].
static void route_rows(const dsf_call *c, int64_t r0, int64_t r1, int fault) {
    int E = (int)c->c->n, k = (int)c->c->k;
    const float *z = c->ops[0], *bias = c->ops[1];
    int32_t *idx = c->ops[2];
    float *w = c->ops[3];
    if (fault == DSV4_REAL) {
        dsf_moe_route(z + r0 * E, r1 - r0, E, bias, k, 1, ROUTE_SCALE, idx + r0 * k, w + r0 * k);
        return;
    }
    int rev = dsv4_lanes(c, fault) > 1;
    for (int64_t r = r0; r < r1; r++) {
        float s[1024], b[1024], wr[64];
        int32_t *ir = idx + r * k;
        for (int e = 0; e < E; e++) {
            float v = z[r * E + e];
            s[e] = sqrtf(v > 20.0f ? v : log1pf(expf(v)));
            b[e] = s[e] + bias[e];
        }
        for (int i = 0; i < k; i++) {
            int best = -1;
            for (int e = 0; e < E; e++) {
                int taken = 0;
                for (int j = 0; j < i; j++) taken |= ir[j] == e;
                if (!taken && (best < 0 || b[e] > b[best])) best = e;
            }
            ir[i] = best;
            wr[i] = fault == DSV4_G3 ? b[best] : s[best];
        }
        float sum = 0.0f;
        for (int i = 0; i < k; i++) sum += wr[rev ? k - 1 - i : i];
        for (int i = 0; i < (fault == DSV4_G1 ? k - 1 : k); i++)
            w[r * k + i] = (k > 1 ? wr[i] / (sum + 1e-20f) : wr[i]) * ROUTE_SCALE;
    }
}
static int route_go(const dsf_call *c, int fault, dsf_err *e) {
    if (c->c->n > 1024 || c->c->k > 64) return dsf_fail(e, "route: at most 1024 experts and 64 picks");
    dsv4_run_rows(c, route_rows, fault);
    return 0;
}
DSV4_IMPLS(route, dsv4_row_geoms, "dsf_moe_route on chunks of p[0] rows: fp32 scores, picks by score + bias",
           "the last pick's weight is never written",
           "chunks of more than one row sum the picked scores from the last pick backwards",
           "weights from the biased scores (spec: the bias only selects)",
           "calls of more than 64 rows sum the picked scores from the last pick backwards");

static void route_ref(const void *const *ins, double *const *out, const dsf_case *c) {
    int E = (int)c->n, k = (int)c->k;
    for (int64_t r = 0; r < c->rows; r++)
        dsv4_ref_route((const float *)ins[0] + r * E, E, ins[1], k, 1, 1.5, out[0] + r * k, out[1] + r * k);
}

// Logits on a 1/8 grid in [-4, 4), biases on a 1/32 grid: exact ties, distinct sums far apart (tests check the gap).
static void fill_z(void *buf, int64_t count, const dsf_case *c, uint64_t *rng) {
    float *x = buf;
    (void)c;
    for (int64_t i = 0; i < count; i++) x[i] = (float)((double)(dsf_rng_next(rng) % 64) / 8.0 - 4.0);
}
static void fill_bias(void *buf, int64_t count, const dsf_case *c, uint64_t *rng) {
    float *x = buf;
    (void)c;
    for (int64_t i = 0; i < count; i++) x[i] = (float)((double)(dsf_rng_next(rng) % 7) / 32.0 - 3.0 / 32.0);
}

static const dsf_operand route_ops[] = {
    {"z", DSF_ELEM_F32, DSF_IN, 1, dsv4_cnt_n, DSF_DRAW_CUSTOM, fill_z},
    {"bias", DSF_ELEM_F32, DSF_IN, 0, dsv4_cnt_n, DSF_DRAW_CUSTOM, fill_bias},
    {"idx", DSF_ELEM_I32, DSF_OUT, 1, dsv4_cnt_k, DSF_DRAW_ACT, NULL},
    {"w", DSF_ELEM_F32, DSF_OUT, 1, dsv4_cnt_k, DSF_DRAW_ACT, NULL},
};

// Cases {name, tokens, experts, picks}: V4.1 (384, top 6), DSpark stages (128, top 3), one pick (no norm), ragged.
static const dsf_case route_cases[] = {
    {"r1_e384_k6", 1, 384, 6, 0}, {"r17_e384_k6", 17, 384, 6, 0}, {"r64_e384_k6", 64, 384, 6, 0},
    {"r3_e128_k3", 3, 128, 3, 0}, {"r5_e17_k1", 5, 17, 1, 0},
};

// Bounds: weights carry fp32 softplus / sqrt / divide errors (a few 2^-24); an index off by one is 1/200 of the rms.
const dsf_record dsf_rec_dsv4_route = {
    "dsv4_route",
    "dsv4",
    "z [R, E], bias [E] -> idx [R, k] (top-k of sqrt(softplus(z)) + bias), w [R, k] (unbiased)",
    route_ops,
    LEN(route_ops),
    route_ref,
    route_impls,
    LEN(route_impls),
    route_cases,
    LEN(route_cases),
    5e-7,
    2e-6,
};
