// Shared pieces of the dsv4 contract records: drawers in the model's ranges, the row runner, control helpers.
#include "kern/dsv4/dsv4_rec.h"

#include <math.h>
#include <string.h>

#include "base/formats.h"

const dsf_geom dsv4_row_geoms[4] = {
    {"w1_r1", 1, 0, {1, 0, 0, 0}},
    {"w2_r4", 2, 0, {4, 0, 0, 0}},
    {"w3_r5", 3, 0, {5, 0, 0, 0}},
    {"all_r16", 0, 0, {16, 0, 0, 0}},
};

const dsf_geom dsv4_chunk_geoms[4] = {
    {"w1_c1", 1, 0, {1, 0, 0, 0}},
    {"w2_c16", 2, 0, {16, 0, 0, 0}},
    {"w3_c7", 3, 0, {7, 0, 0, 0}},
    {"all_c64", 0, 0, {64, 0, 0, 0}},
};

typedef struct rows_job {
    const dsf_call *c;
    dsv4_rows_fn fn;
    int fault;
} rows_job;

static void rows_worker(void *ctx, int tid, int nthreads) {
    const rows_job *j = ctx;
    int64_t R = j->c->c->rows, chunk = j->c->g->p[0];
    long long lo, hi;
    dsf_pool_range((R + chunk - 1) / chunk, tid, nthreads, &lo, &hi);
    for (int64_t k = lo; k < hi; k++) j->fn(j->c, k * chunk, (k + 1) * chunk < R ? (k + 1) * chunk : R, j->fault);
}

void dsv4_run_rows(const dsf_call *c, dsv4_rows_fn fn, int fault) {
    rows_job j = {c, fn, fault};
    if (c->pool)
        dsf_pool_run(c->pool, c->g->threads, rows_worker, &j);
    else
        rows_worker(&j, 0, 1);
}

int dsv4_lanes(const dsf_call *c, int fault) {
    if (fault == DSV4_G2) return c->g->p[0];
    return fault == DSV4_G4 && c->c->rows > DSV4_MAX_ROWS ? 2 : 1;
}

float dsv4_dot(const float *a, const float *b, int64_t n, int lanes) {
    float part[64] = {0}, acc = 0.0f;
    if (lanes > 64) lanes = 64;
    for (int64_t i = 0; i < n; i++) part[i % lanes] += a[i] * (b ? b[i] : a[i]);
    for (int l = 0; l < lanes; l++) acc += lanes > 1 ? dsf_bf16_round(part[l]) : part[l];
    return acc;
}

float dsv4_bf16(const dsf_call *c, int fault, float v) {
    int trunc = (fault == DSV4_G2 && c->g->p[0] > 1) || (fault == DSV4_G4 && c->c->rows > DSV4_MAX_ROWS);
    return trunc ? dsf_f32_from_bits(dsf_f32_bits(v) & 0xFFFF0000u) : dsf_bf16_round(v);
}

// bf16 activations around rms 1 with 1-in-32 outliers of 8x, never zero.
void dsv4_fill_act(void *buf, int64_t count, const dsf_case *c, uint64_t *rng) {
    float *x = buf;
    (void)c;
    for (int64_t i = 0; i < count; i++) {
        double u = dsf_rng_unit(rng) * 2.0 - 1.0, mag = dsf_rng_next(rng) % 32 == 0 ? 8.0 : 1.7;
        x[i] = dsf_bf16_round((float)(u * mag + (u < 0 ? -1e-3 : 1e-3)));
    }
}

// As dsv4_fill_act, each row of c->n scaled by 2^[-12, 4] so that an eps of 1e-6 would show on small rows.
void dsv4_fill_act_rows(void *buf, int64_t count, const dsf_case *c, uint64_t *rng) {
    float *x = buf;
    dsv4_fill_act(buf, count, c, rng);
    for (int64_t r = 0; r * c->n < count; r++) {
        float s = ldexpf(1.0f, (int)(dsf_rng_next(rng) % 17) - 12);
        for (int64_t i = r * c->n; i < (r + 1) * c->n && i < count; i++) x[i] *= s;
    }
}

// RMSNorm weights as checkpoints hold them: 1 + U(-0.1, 0.1) in bf16.
void dsv4_fill_normw(void *buf, int64_t count, const dsf_case *c, uint64_t *rng) {
    float *x = buf;
    (void)c;
    for (int64_t i = 0; i < count; i++) x[i] = dsf_bf16_round((float)(1.0 + 0.2 * (dsf_rng_unit(rng) - 0.5)));
}

// Any e4m3fn code but NaN.
void dsv4_fill_e4m3(void *buf, int64_t count, const dsf_case *c, uint64_t *rng) {
    uint8_t *b = buf;
    (void)c;
    for (int64_t i = 0; i < count; i++) {
        do b[i] = (uint8_t)dsf_rng_next(rng);
        while ((b[i] & 0x7F) == 0x7F);
    }
}

// E8M0 weight scales 2^[-9, 0], the range of trained FP8/FP4 weights.
void dsv4_fill_e8m0(void *buf, int64_t count, const dsf_case *c, uint64_t *rng) {
    uint8_t *b = buf;
    (void)c;
    for (int64_t i = 0; i < count; i++) b[i] = (uint8_t)(118 + dsf_rng_next(rng) % 10);
}

// Packed e2m1 pairs: every one of the 16 codes in both nibbles (count is in logical elements).
void dsv4_fill_fp4(void *buf, int64_t count, const dsf_case *c, uint64_t *rng) {
    uint8_t *b = buf;
    (void)c;
    for (int64_t i = 0; i < (count + 1) / 2; i++) b[i] = (uint8_t)dsf_rng_next(rng);
}

// bf16 weights of a K-input linear: U(-1, 1) * sqrt(3 / K), never zero.
void dsv4_fill_wk(void *buf, int64_t count, const dsf_case *c, uint64_t *rng) {
    float *x = buf;
    float a = (float)sqrt(3.0 / (double)c->k);
    for (int64_t i = 0; i < count; i++) {
        float u = (float)(dsf_rng_unit(rng) * 2.0 - 1.0);
        x[i] = dsf_bf16_round(a * (u == 0.0f ? 0.5f : u));
    }
}

// Scores for selections: 24 bf16 levels, so ties are common, and a fifth of them -inf (masked positions).
void dsv4_fill_ties(void *buf, int64_t count, const dsf_case *c, uint64_t *rng) {
    float *x = buf;
    (void)c;
    for (int64_t i = 0; i < count; i++) {
        uint64_t v = dsf_rng_next(rng) % 30;
        x[i] = v >= 24 ? -INFINITY : dsf_bf16_round((float)((double)v * 0.375 - 3.1));
    }
}

int64_t dsv4_cnt_n(const dsf_case *c) {
    return c->n;
}
int64_t dsv4_cnt_k(const dsf_case *c) {
    return c->k;
}
int64_t dsv4_cnt_nk(const dsf_case *c) {
    return c->n * c->k;
}
int64_t dsv4_cnt_one(const dsf_case *c) {
    (void)c;
    return 1;
}
