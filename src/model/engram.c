// The Engram stage before its layers (spec §3.2.6, §6.2 item 8): hash rows, dequantised rows, wkv, gate, add.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/formats.h"
#include "io/engram_primes.h"
#include "kern/engram/engram.h"
#include "model/model_internal.h"

void dsf_model_engram_prepare(dsf_model *m, int li, int idx) {
    const dsf_args *a = m->a;
    const dsf_layer_view *v = &m->ck->layers[li];
    dsf_engram_w *g = &m->L[li].engram;
    int per = (a->engram_max_ngram_size - 1) * a->engram_n_heads;
    int64_t *primes = dsf_malloc(sizeof(int64_t) * (size_t)(a->n_engram_layers * per));
    int64_t *rows = dsf_malloc(sizeof(int64_t) * (size_t)a->n_engram_layers);
    dsf_engram_primes(a->engram_vocab_size, a->n_engram_layers, a->engram_max_ngram_size, a->engram_n_heads, primes,
                      rows);
    g->cols = per;
    for (int c = 0; c < per; c++) {
        g->primes[c] = primes[idx * per + c];
        g->offsets[c] = c ? g->offsets[c - 1] + g->primes[c - 1] : 0;
    }
    free(primes);
    free(rows);
    DSF_ASSERT(a->engram_max_ngram_size <= DSF_ENGRAM_MAX_NGRAM);
    DSF_ASSERT(dsf_engram_multipliers(li, a->engram_compressed_vocab_size, g->mult) == 0);
    g->codes = v->engram.embed.weight->data;
    g->scales = v->engram.embed.scale->data;
    g->wkv = (dsf_linw){DSF_LIN_FP8,  v->engram.wkv.weight->shape[0], v->engram.wkv.weight->shape[1],
                        a->fp8_block, v->engram.wkv.weight->data,     v->engram.wkv.scale->data,
                        NULL};
    float *q = dsf_model_f32_copy(m, v->engram.q_weight), *k = dsf_model_f32_copy(m, v->engram.k_weight);
    for (int64_t i = 0; i < (int64_t)a->hc_mult * a->dim; i++) q[i] = q[i] * k[i];
    g->wt = q;
}

// The C table rows of position t from the history: cumulative blocking, wrapping int64 products, floor modulo.
static void hash_rows(const dsf_engram_w *g, const dsf_args *a, const int64_t *hist, int64_t t, int64_t pad,
                      int64_t *rows) {
    uint64_t h = 0;
    int blocked = 0, nh = a->engram_n_heads;
    for (int k = 0; k < a->engram_max_ngram_size; k++) {
        int64_t src = t >= k ? hist[t - k] : -1;
        blocked |= t < k || src < 0;
        uint64_t prod = (uint64_t)(blocked ? pad : src) * (uint64_t)g->mult[k];
        h = k ? h ^ prod : prod;
        if (k == 0) continue;
        for (int c = (k - 1) * nh; c < k * nh; c++) {
            int64_t v = (int64_t)h % g->primes[c];
            rows[c] = (v < 0 ? v + g->primes[c] : v) + g->offsets[c];
        }
    }
}

void dsf_model_engram(dsf_run *st, int li, const int32_t *tokens) {
    const dsf_args *a = st->m->a;
    const dsf_engram_w *g = &st->m->L[li].engram;
    int64_t R = st->rows, D = a->dim, hc = a->hc_mult, hd = a->engram_head_dim, C = g->cols;
    int64_t *rows = dsf_malloc(sizeof(int64_t) * (size_t)C);
    float *emb = dsf_malloc(sizeof(float) * (size_t)(R * C * hd));
    float *kv = dsf_malloc(sizeof(float) * (size_t)(R * (hc + 1) * D));
    for (int64_t r = 0; r < R; r++) {
        int64_t *hist = st->row_stream[r]->hist;
        hist[st->row_pos[r]] = tokens[r];
        hash_rows(g, a, hist, st->row_pos[r], a->engram_pad_id, rows);
        for (int64_t c = 0; c < C; c++)
            for (int64_t i = 0; i < hd; i++)
                emb[(r * C + c) * hd + i] = dsf_bf16_round(dsf_e4m3_to_f32(g->codes[rows[c] * hd + i]) *
                                                           dsf_e8m0_to_f32(g->scales[rows[c] * (hd / 32) + i / 32]));
    }
    dsf_linear(st->m->pool, NULL, &g->wkv, emb, R, kv);
    float scale = (float)(1.0 / sqrt((double)D));
    for (int64_t r = 0; r < R; r++) {
        const float *value = kv + r * (hc + 1) * D + hc * D;
        for (int64_t k = 0; k < hc; k++) {
            float *h = st->h + (r * hc + k) * D;
            const float *key = kv + r * (hc + 1) * D + k * D, *wt = g->wt + k * D;
            float hh = 0.0f, kk = 0.0f, dot = 0.0f;
            for (int64_t i = 0; i < D; i++) {
                hh += h[i] * h[i];
                kk += key[i] * key[i];
                dot += h[i] * wt[i] * key[i];
            }
            float eps = (float)a->norm_eps;
            float rstd = 1.0f / sqrtf(hh / (float)D + eps) * (1.0f / sqrtf(kk / (float)D + eps));
            dot = dot * rstd * scale;
            float mag = sqrtf(fabsf(dot) > 1e-6f ? fabsf(dot) : 1e-6f);
            float gate = 1.0f / (1.0f + expf(-copysignf(mag, dot)));
            for (int64_t i = 0; i < D; i++) h[i] = dsf_bf16_round(h[i] + gate * value[i]);
        }
    }
    free(rows);
    free(emb);
    free(kv);
}
