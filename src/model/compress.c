// The V4.1 compressor (spec §3.2.4) and index keys (§3.2.5): entry j comes from the row at position (j+1)*r - 1.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/formats.h"
#include "base/quant.h"
#include "kern/dsv4/rows.h"
#include "model/model_internal.h"

// Projected kv and score [Hd] of position t for a row: this round's row, or the stream's ring.
static void state_rows(const dsf_run *st, int li, int64_t row, int64_t t, const float *kv, const float *sc,
                       const float **kv_t, const float **sc_t) {
    int64_t first = st->row_first[row], p0 = st->row_pos[first], Hd = st->m->a->head_dim;
    if (t >= p0) {
        *kv_t = kv + (first + t - p0) * Hd;
        *sc_t = sc + (first + t - p0) * Hd;
        return;
    }
    const dsf_stream *s = st->row_stream[row];
    *kv_t = s->cst_kv[li] + (t % s->ccap) * Hd;
    *sc_t = s->cst_sc[li] + (t % s->ccap) * Hd;
}

// Pools the r = 2 tokens ending at the row's position: per channel softmax of the scores, fp32, then bf16.
static void pool_group(const dsf_run *st, int li, int64_t row, const float *kv, const float *sc, float *lat) {
    int64_t p = st->row_pos[row], Hd = st->m->a->head_dim;
    const float *k0, *s0, *k1, *s1;
    state_rows(st, li, row, p - 1, kv, sc, &k0, &s0);
    state_rows(st, li, row, p, kv, sc, &k1, &s1);
    for (int64_t c = 0; c < Hd; c++) {
        float m = s0[c] > s1[c] ? s0[c] : s1[c];
        float e0 = expf(s0[c] - m), e1 = expf(s1[c] - m), sum = e0 + e1;
        lat[c] = dsf_bf16_round(k0[c] * (e0 / sum) + k1[c] * (e1 / sum));
    }
}

void dsf_model_compress(dsf_run *st, int li, const float *x) {
    const dsf_args *a = st->m->a;
    const dsf_layer_w *L = &st->m->L[li];
    int ratio = L->role->compress_ratio;
    int64_t R = st->rows, Hd = a->head_dim, ID = a->index_head_dim, rd = a->rope_head_dim;
    float eps = (float)a->norm_eps;
    float *kv = dsf_malloc(sizeof(float) * (size_t)(R * Hd)), *sc = NULL;
    float *lat = dsf_malloc(sizeof(float) * (size_t)Hd), *key = dsf_malloc(sizeof(float) * (size_t)ID);
    dsf_linear(st->m->pool, NULL, &L->c_wkv, x, R, kv);
    if (ratio > 1) {
        sc = dsf_malloc(sizeof(float) * (size_t)(R * Hd));
        dsf_linear(st->m->pool, NULL, &L->c_wgate, x, R, sc);
    }
    for (int64_t r = 0; r < R; r++) {
        int64_t p = st->row_pos[r];
        if ((p + 1) % ratio) continue;
        int64_t j = p / ratio;
        if (ratio > 1)
            pool_group(st, li, r, kv, sc, lat);
        else
            memcpy(lat, kv + r * Hd, sizeof(float) * (size_t)Hd);
        dsf_rmsnorm(lat, Hd, 1, Hd, L->c_norm, eps, lat, Hd);
        dsf_stream *s = st->row_stream[r];
        if (L->role->indexer_owns_k) {
            dsf_linear(NULL, NULL, &L->i_wk, lat, 1, key);
            dsf_rmsnorm(key, ID, 1, ID, L->i_k_norm, eps, key, ID);
            dsf_rope_row(key, 1, (int)ID, (int)rd, L->freqs, j * ratio, 0);
            dsf_fp4_qdq_e8m0_row(key, (size_t)ID, s->ikey[li] + j * ID);
        }
        dsf_rope_row(lat, 1, (int)Hd, (int)rd, L->freqs, j * ratio, 0);
        dsf_fp4_qdq_e4m3_row(lat, (size_t)Hd, s->ckv[li] + j * Hd);
    }
    if (ratio > 1)
        for (int64_t r = 0; r < R; r++) {
            dsf_stream *s = st->row_stream[r];
            int64_t slot = st->row_pos[r] % s->ccap;
            memcpy(s->cst_kv[li] + slot * Hd, kv + r * Hd, sizeof(float) * (size_t)Hd);
            memcpy(s->cst_sc[li] + slot * Hd, sc + r * Hd, sizeof(float) * (size_t)Hd);
        }
    free(kv);
    free(sc);
    free(lat);
    free(key);
}
