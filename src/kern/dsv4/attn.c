// Sparse attention rows on the CPU: a (row, head) is computed whole by one worker in list order (R1, R2).
#include "kern/dsv4/attn.h"

#include <math.h>
#include <stdlib.h>

#include "base/err.h"
#include "base/formats.h"

typedef struct attn_job {
    const float *q;
    const float *const *kv;
    int64_t rows, list_len, chunk;
    int heads, hd;
    const float *sink;
    float scale;
    float *o;
} attn_job;

static void attn_head(const attn_job *j, int64_t r, int h, float *acc, float *s) {
    const float *q = j->q + (r * j->heads + h) * j->hd;
    const float *const *kv = j->kv + r * j->list_len;
    float m = -1e30f, sum = 0.0f;
    for (int d = 0; d < j->hd; d++) acc[d] = 0.0f;
    for (int64_t b0 = 0; b0 < j->list_len; b0 += DSF_ATTN_BLOCK) {
        int64_t n = j->list_len - b0 < DSF_ATTN_BLOCK ? j->list_len - b0 : DSF_ATTN_BLOCK;
        float mb = m;
        for (int64_t i = 0; i < n; i++) {
            const float *k = kv[b0 + i];
            if (!k) {
                s[i] = -INFINITY;
                continue;
            }
            float dot = 0.0f;
            for (int d = 0; d < j->hd; d++) dot += q[d] * k[d];
            s[i] = dot * j->scale;
            mb = s[i] > mb ? s[i] : mb;
        }
        float alpha = expf(m - mb), bsum = 0.0f;
        for (int d = 0; d < j->hd; d++) acc[d] *= alpha;
        for (int64_t i = 0; i < n; i++) {
            float p = expf(s[i] - mb);
            bsum += p;
            if (!kv[b0 + i]) continue;
            float pb = dsf_bf16_round(p);
            const float *k = kv[b0 + i];
            for (int d = 0; d < j->hd; d++) acc[d] += pb * k[d];
        }
        sum = sum * alpha + bsum;
        m = mb;
    }
    sum += expf(j->sink[h] - m);
    float *o = j->o + (r * j->heads + h) * j->hd;
    for (int d = 0; d < j->hd; d++) o[d] = dsf_bf16_round(acc[d] / sum);
}

static void attn_worker(void *ctx, int tid, int nthreads) {
    const attn_job *j = ctx;
    long long lo, hi;
    dsf_pool_range((j->rows + j->chunk - 1) / j->chunk, tid, nthreads, &lo, &hi);
    float *acc = dsf_malloc(sizeof(float) * (size_t)j->hd);
    float s[DSF_ATTN_BLOCK];
    for (int64_t c = lo; c < hi; c++)
        for (int64_t r = c * j->chunk; r < (c + 1) * j->chunk && r < j->rows; r++)
            for (int h = 0; h < j->heads; h++) attn_head(j, r, h, acc, s);
    free(acc);
}

void dsf_sparse_attn(dsf_pool *pool, const dsf_geom *g, const float *q, const float *const *kv, int64_t rows, int heads,
                     int hd, int64_t list_len, const float *sink, float scale, float *o) {
    int64_t chunk = g ? g->p[0] : 1;
    DSF_ASSERT(chunk > 0);
    if (rows <= 0) return;
    attn_job j = {q, kv, rows, list_len, chunk, heads, hd, sink, scale, o};
    if (pool)
        dsf_pool_run(pool, g ? g->threads : 0, attn_worker, &j);
    else
        attn_worker(&j, 0, 1);
}
