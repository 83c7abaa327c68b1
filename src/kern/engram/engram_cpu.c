// Engram kernels on the CPU: whole units per worker in a fixed order, so no result depends on the split (R1, R2).
#include <math.h>
#include <stdlib.h>

#include "kern/engram/engram_internal.h"

typedef struct units_job {
    int64_t units, chunk;
    dsf_eng_units_fn fn;
    void *ctx;
} units_job;

static void units_worker(void *ctx, int tid, int n) {
    const units_job *j = ctx;
    long long lo, hi;
    dsf_pool_range((j->units + j->chunk - 1) / j->chunk, tid, n, &lo, &hi);
    for (long long c = lo; c < hi; c++) {
        int64_t u0 = c * j->chunk, u1 = u0 + j->chunk;
        j->fn(j->ctx, u0, u1 < j->units ? u1 : j->units);
    }
}

void dsf_eng_units_run(dsf_pool *pool, int threads, int64_t units, int64_t chunk, dsf_eng_units_fn fn, void *ctx) {
    DSF_ASSERT(chunk > 0);
    units_job j = {units, chunk, fn, ctx};
    if (units <= 0) return;
    if (pool)
        dsf_pool_run(pool, threads, units_worker, &j);
    else
        units_worker(&j, 0, 1);
}

typedef struct embed_job {
    const uint8_t *codes, *scales;
    uint8_t *xq, *xs;
    int64_t T, n;
    int fault;
} embed_job;

static void embed_tokens(void *ctx, int64_t t0, int64_t t1) {
    const embed_job *j = ctx;
    for (int64_t t = t0; t < t1; t++)
        for (int64_t b = 0; b < j->n / 32; b++) {
            uint8_t out[32];
            uint8_t sb = dsf_eng_quant_block(j->codes + t * j->n + 32 * b, j->scales[t * (j->n / 32) + b], out,
                                             j->fault == DSF_ENG_WRONG);
            int last = j->fault == DSF_ENG_SKIP && t == j->T - 1 && b == j->n / 32 - 1;
            for (int i = 0; i < 32 - last; i++) j->xq[t * j->n + 32 * b + i] = out[i];
            j->xs[t * (j->n / 32) + b] = sb;
        }
}

int dsf_engram_embed_quant_cpu_v(dsf_pool *pool, const dsf_geom *g, const uint8_t *codes, const uint8_t *scales,
                                 uint8_t *xq, uint8_t *xs, int64_t T, int64_t n, int fault, dsf_err *e) {
    if (T < 0 || n <= 0 || n % 32)
        return dsf_fail(e, "engram_embed_quant: shape [%lld, %lld]: n must be a positive multiple of 32",
                        (long long)T, (long long)n);
    if (g->p[0] < 1) return dsf_fail(e, "engram_embed_quant cpu geometry %s: tokens per chunk %d", g->name, g->p[0]);
    embed_job j = {codes, scales, xq, xs, T, n, fault};
    dsf_eng_units_run(pool, g->threads, T, g->p[0], embed_tokens, &j);
    return 0;
}

int dsf_engram_embed_quant_cpu(dsf_pool *pool, const dsf_geom *g, const uint8_t *codes, const uint8_t *scales,
                               uint8_t *xq, uint8_t *xs, int64_t T, int64_t n, dsf_err *e) {
    return dsf_engram_embed_quant_cpu_v(pool, g, codes, scales, xq, xs, T, n, DSF_ENG_REAL, e);
}

typedef struct wkv_job {
    const uint8_t *xq, *xs, *w, *ws;
    uint16_t *y;
    int64_t T, N, K;
    int chunk, fault;
    double lut[256];
} wkv_job;

// Units are (token, chunk of outputs); an output's sum runs over its K blocks in order whatever the unit.
static void wkv_units(void *ctx, int64_t u0, int64_t u1) {
    const wkv_job *j = ctx;
    int64_t per = (j->N + j->chunk - 1) / j->chunk, kb_n = j->K / 32;
    double *xd = malloc(sizeof(double) * (size_t)j->K);
    int64_t have = -1;
    int split = (j->fault == DSF_ENG_GEOM && j->chunk >= 64) || (j->fault == DSF_ENG_BATCH && j->T > DSF_ENG_SUITE_MAX_ROWS);
    for (int64_t u = u0; u < u1; u++) {
        int64_t t = u / per, n0 = (u % per) * j->chunk, n1 = n0 + j->chunk < j->N ? n0 + j->chunk : j->N;
        if (t != have) {
            for (int64_t k = 0; k < j->K; k++) xd[k] = j->lut[j->xq[t * j->K + k]];
            have = t;
        }
        for (int64_t o = n0; o < n1; o++) {
            if (j->fault == DSF_ENG_SKIP && t == j->T - 1 && o == j->N - 1) continue;
            const uint8_t *wr = j->w + o * j->K;
            float acc = 0.0f;
            for (int64_t kb = 0; kb < kb_n; kb++) {
                // The controls' split: the first half of K ends as a bf16 partial, as a split-K with bf16 workspace.
                if (split && kb == kb_n / 2) acc = dsf_bf16_round(acc);
                // Every product is a multiple of 2^-18 below 2^18 and 32 of them sum exactly in a double.
                double bs = 0;
                for (int i = 0; i < 32; i++) bs += xd[32 * kb + i] * j->lut[wr[32 * kb + i]];
                uint8_t wsb = j->ws[(o / 32) * kb_n + kb];
                if (j->fault == DSF_ENG_WRONG) wsb++;
                float s = dsf_e8m0_to_f32(j->xs[t * kb_n + kb]) * dsf_e8m0_to_f32(wsb);
                acc += (float)bs * s;
            }
            j->y[t * j->N + o] = dsf_bf16_from_f32(acc);
        }
    }
    free(xd);
}

int dsf_engram_wkv_cpu_v(dsf_pool *pool, const dsf_geom *g, const uint8_t *xq, const uint8_t *xs, const uint8_t *w,
                         const uint8_t *ws, uint16_t *y, int64_t T, int64_t N, int64_t K, int fault, dsf_err *e) {
    if (T < 0 || N <= 0 || K <= 0 || N % 32 || K % 32)
        return dsf_fail(e, "engram_wkv: T %lld, N %lld, K %lld: N and K must be positive multiples of 32", (long long)T,
                        (long long)N, (long long)K);
    if (g->p[0] < 1) return dsf_fail(e, "engram_wkv cpu geometry %s: outputs per chunk %d", g->name, g->p[0]);
    wkv_job *j = malloc(sizeof *j);
    *j = (wkv_job){xq, xs, w, ws, y, T, N, K, g->p[0], fault, {0}};
    for (int c = 0; c < 256; c++) j->lut[c] = (c & 0x7F) == 0x7F ? 0.0 : (double)dsf_e4m3_to_f32((uint8_t)c);
    dsf_eng_units_run(pool, g->threads, T * ((N + g->p[0] - 1) / g->p[0]), 1, wkv_units, j);
    free(j);
    return 0;
}

int dsf_engram_wkv_cpu(dsf_pool *pool, const dsf_geom *g, const uint8_t *xq, const uint8_t *xs, const uint8_t *w,
                       const uint8_t *ws, uint16_t *y, int64_t T, int64_t N, int64_t K, dsf_err *e) {
    return dsf_engram_wkv_cpu_v(pool, g, xq, xs, w, ws, y, T, N, K, DSF_ENG_REAL, e);
}

typedef struct gate_job {
    const uint16_t *h, *kv, *qw, *kw;
    const int32_t *img;
    uint16_t *out;
    int64_t T, D;
    int hc, chunk, fault;
    float eps;
} gate_job;

// One (token, stream): the three sums in the canonical partial order, the gate, the residual add.
static void gate_units(void *ctx, int64_t u0, int64_t u1) {
    const gate_job *j = ctx;
    int seq = (j->fault == DSF_ENG_GEOM && j->chunk >= 4) || (j->fault == DSF_ENG_BATCH && j->T > DSF_ENG_SUITE_MAX_ROWS);
    for (int64_t u = u0; u < u1; u++) {
        int64_t t = u / j->hc;
        int k = (int)(u % j->hc);
        const uint16_t *h = j->h + u * j->D, *key = j->kv + t * (j->hc + 1) * j->D + k * j->D;
        const uint16_t *val = j->kv + t * (j->hc + 1) * j->D + j->hc * j->D;
        float p_hh[DSF_ENG_PARTS] = {0}, p_kk[DSF_ENG_PARTS] = {0}, p_d[DSF_ENG_PARTS] = {0};
        for (int64_t c = 0; c < j->D; c++) {
            float hv = dsf_bf16_to_f32(h[c]), kv = dsf_bf16_to_f32(key[c]);
            float wt = dsf_bf16_to_f32(j->qw[k * j->D + c]) * dsf_bf16_to_f32(j->kw[k * j->D + c]);
            int p = seq ? 0 : (int)(c % DSF_ENG_PARTS);
            p_hh[p] += hv * hv;
            p_kk[p] += kv * kv;
            p_d[p] += (hv * wt) * kv;
        }
        float s_hh = dsf_eng_tree(p_hh), s_kk = dsf_eng_tree(p_kk), s_d = dsf_eng_tree(p_d);
        float gate = dsf_eng_gate_value(s_hh, s_kk, s_d, (float)j->D, (float)(1.0 / sqrt((double)j->D)), j->eps);
        if (j->img[t] && j->fault != DSF_ENG_WRONG) gate = 0.0f;
        int64_t end = j->D - (j->fault == DSF_ENG_SKIP && u == j->T * j->hc - 1);
        for (int64_t c = 0; c < end; c++)
            j->out[u * j->D + c] = dsf_bf16_from_f32(dsf_bf16_to_f32(h[c]) + gate * dsf_bf16_to_f32(val[c]));
    }
}

int dsf_engram_gate_cpu_v(dsf_pool *pool, const dsf_geom *g, const uint16_t *h, const uint16_t *kv,
                          const uint16_t *qw, const uint16_t *kw, const int32_t *img, uint16_t *out, int64_t T, int hc,
                          int64_t D, float eps, int fault, dsf_err *e) {
    if (T < 0 || hc < 1 || D <= 0 || D % DSF_ENG_PARTS)
        return dsf_fail(e, "engram_gate: T %lld, hc %d, D %lld: D must be a positive multiple of %d", (long long)T, hc,
                        (long long)D, DSF_ENG_PARTS);
    if (g->p[0] < 1) return dsf_fail(e, "engram_gate cpu geometry %s: streams per chunk %d", g->name, g->p[0]);
    gate_job j = {h, kv, qw, kw, img, out, T, D, hc, g->p[0], fault, eps};
    dsf_eng_units_run(pool, g->threads, T * hc, g->p[0], gate_units, &j);
    return 0;
}

int dsf_engram_gate_cpu(dsf_pool *pool, const dsf_geom *g, const uint16_t *h, const uint16_t *kv, const uint16_t *qw,
                        const uint16_t *kw, const int32_t *img, uint16_t *out, int64_t T, int hc, int64_t D,
                        float eps, dsf_err *e) {
    return dsf_engram_gate_cpu_v(pool, g, h, kv, qw, kw, img, out, T, hc, D, eps, DSF_ENG_REAL, e);
}
