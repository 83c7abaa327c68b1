// Dense linears on the CPU: one worker computes an output column for all rows, each sum in K order (R1, R2).
#include "kern/dsv4/linear.h"

#include <math.h>
#include <stdlib.h>

#include "base/err.h"
#include "base/quant.h"

const dsf_geom dsf_lin_geom_default = {"all_o16", 0, 0, {16, 0, 0, 0}};

typedef struct lin_job {
    const dsf_linw *w;
    const float *x;  // FP8 / FP4: the e4m3 values of act_quant; otherwise the input
    const float *xs; // FP8 / FP4: act scales [R, k / blk]
    int64_t ldx, rows, ldy, chunk;
    float lut[256];
    float *y;
} lin_job;

// Sum over one quant block of 32 (FP4) or blk (FP8) inputs; the fp32 order is k ascending.
static float lin_one(const lin_job *j, int64_t r, int64_t o) {
    const dsf_linw *w = j->w;
    const float *x = j->x + r * j->ldx;
    int64_t k = w->k;
    float acc = 0.0f;
    if (w->kind == DSF_LIN_FP8) {
        int64_t nb = k / w->blk;
        const uint8_t *q = w->q + o * k, *ws = w->s + (o / w->blk) * nb;
        const float *xs = j->xs + r * nb;
        for (int64_t b = 0; b < nb; b++) {
            float s = 0.0f;
            for (int64_t i = b * w->blk; i < (b + 1) * w->blk; i++) s += x[i] * j->lut[q[i]];
            acc += s * xs[b] * dsf_e8m0_to_f32(ws[b]);
        }
    } else if (w->kind == DSF_LIN_FP4) {
        int64_t nb = k / 32, per = w->blk / 32;
        const uint8_t *q = w->q + o * (k / 2), *ws = w->s + o * nb;
        const float *xs = j->xs + r * (k / w->blk);
        for (int64_t b = 0; b < nb; b++) {
            float s = 0.0f;
            for (int64_t i = b * 32; i < b * 32 + 32; i += 2) {
                uint8_t c = q[i >> 1];
                s += x[i] * j->lut[c & 0xF];
                s += x[i + 1] * j->lut[c >> 4];
            }
            acc += s * xs[b / per] * dsf_e8m0_to_f32(ws[b]);
        }
    } else {
        const float *f = w->f + o * k;
        for (int64_t i = 0; i < k; i++) acc += x[i] * f[i];
    }
    return w->kind == DSF_LIN_F32 ? acc : dsf_bf16_round(acc);
}

static void lin_worker(void *ctx, int tid, int nthreads) {
    const lin_job *j = ctx;
    long long lo, hi;
    int64_t nchunks = (j->w->n + j->chunk - 1) / j->chunk;
    dsf_pool_range(nchunks, tid, nthreads, &lo, &hi);
    for (int64_t c = lo; c < hi; c++) {
        int64_t o1 = (c + 1) * j->chunk < j->w->n ? (c + 1) * j->chunk : j->w->n;
        for (int64_t o = c * j->chunk; o < o1; o++)
            for (int64_t r = 0; r < j->rows; r++) j->y[r * j->ldy + o] = lin_one(j, r, o);
    }
}

void dsf_linear_s(dsf_pool *pool, const dsf_geom *g, const dsf_linw *w, const float *x, int64_t ldx, int64_t rows,
                  float *y, int64_t ldy) {
    if (!g) g = &dsf_lin_geom_default;
    DSF_ASSERT(g->p[0] > 0 && w->n > 0 && w->k > 0);
    if (rows <= 0) return;
    lin_job *j = dsf_malloc(sizeof *j);
    *j = (lin_job){.w = w, .x = x, .ldx = ldx, .rows = rows, .ldy = ldy, .chunk = g->p[0], .y = y};
    float *xq = NULL, *xs = NULL;
    if (w->kind == DSF_LIN_FP8 || w->kind == DSF_LIN_FP4) {
        DSF_ASSERT(w->blk >= 32 && w->blk % 32 == 0 && w->k % w->blk == 0);
        int64_t nb = w->k / w->blk;
        xq = dsf_malloc(sizeof(float) * (size_t)(rows * w->k));
        xs = dsf_malloc(sizeof(float) * (size_t)(rows * nb));
        for (int64_t r = 0; r < rows; r++)
            for (int64_t b = 0; b < nb; b++) {
                const float *xb = x + r * ldx + b * w->blk;
                float s = dsf_act_scale_pow2(dsf_block_amax(xb, w->blk));
                xs[r * nb + b] = s;
                for (int i = 0; i < w->blk; i++)
                    xq[r * w->k + b * w->blk + i] = dsf_e4m3_to_f32(dsf_act_quant_code(xb[i], s));
            }
        for (int c = 0; c < 256; c++)
            j->lut[c] = w->kind == DSF_LIN_FP8 ? dsf_e4m3_to_f32((uint8_t)c) : dsf_e2m1_to_f32((uint8_t)(c & 0xF));
        j->x = xq;
        j->xs = xs;
        j->ldx = w->k;
    }
    if (pool)
        dsf_pool_run(pool, g->threads, lin_worker, j);
    else
        lin_worker(j, 0, 1);
    free(xq);
    free(xs);
    free(j);
}

void dsf_linear(dsf_pool *pool, const dsf_geom *g, const dsf_linw *w, const float *x, int64_t rows, float *y) {
    dsf_linear_s(pool, g, w, x, w->k, rows, y, w->n);
}
