// The CSA2 attention sublayer (spec §3.2.3): q, window K, sparse attention over window ++ compressed, wo_a, wo_b.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/formats.h"
#include "base/quant.h"
#include "kern/dsv4/attn.h"
#include "kern/dsv4/rows.h"
#include "model/model_internal.h"

// Window K of position t for a row: this round's row when t is in it, else the stream's ring.
static const float *window_row(const dsf_run *st, int li, int64_t row, int64_t t) {
    int64_t first = st->row_first[row], p0 = st->row_pos[first];
    if (t >= p0) return st->win_kv + (first + t - p0) * st->m->a->head_dim;
    const dsf_stream *s = st->row_stream[row];
    return s->win[li] + (t % s->wcap) * st->m->a->head_dim;
}

// Rows per sparse-attention call: bounds the fp32 copies of compressed entries; rows are independent (R1).
enum { ATTN_ROWS = 32 };

// A row's list: W window slots oldest first, NULL padded, then compressed entries ascending (docs/forward.md).
static void build_list(const dsf_run *st, int li, int64_t row, int64_t width, const float **list, float *ent) {
    const dsf_args *a = st->m->a;
    const dsf_role *r = st->m->L[li].role;
    int64_t p = st->row_pos[row], W = a->window_size, lo = p - W + 1 > 0 ? p - W + 1 : 0, Hd = a->head_dim;
    for (int64_t i = 0; i < W; i++) list[i] = lo + i <= p ? window_row(st, li, row, lo + i) : NULL;
    for (int64_t i = W; i < width; i++) list[i] = NULL;
    if (r->compress_ratio == 0) return;
    const uint16_t *ckv = st->row_stream[row]->ckv[r->kv_source];
    DSF_ASSERT(st->topk_layer == r->index_source);
    for (int64_t i = 0; i < st->topk_n[row]; i++) {
        const uint16_t *src = ckv + st->topk[row * a->index_topk + i] * Hd;
        for (int64_t c = 0; c < Hd; c++) ent[i * Hd + c] = dsf_bf16_to_f32(src[c]);
        list[W + i] = ent + i * Hd;
    }
}

void dsf_model_attn(dsf_run *st, int li, const float *x, float *out) {
    const dsf_args *a = st->m->a;
    const dsf_layer_w *L = &st->m->L[li];
    dsf_pool *pool = st->m->pool;
    int64_t R = st->rows, H = a->n_heads, Hd = a->head_dim, Q = a->q_lora_rank, rd = a->rope_head_dim;
    float eps = (float)a->norm_eps;
    float *qr = dsf_malloc(sizeof(float) * (size_t)(R * Q));
    float *q = dsf_malloc(sizeof(float) * (size_t)(R * H * Hd)), *o = dsf_malloc(sizeof(float) * (size_t)(R * H * Hd));
    dsf_linear(pool, NULL, &L->wq_a, x, R, qr);
    dsf_rmsnorm(qr, Q, R, Q, L->q_norm, eps, qr, Q);
    dsf_linear(pool, NULL, &L->wq_b, qr, R, q);
    dsf_linear(pool, NULL, &L->wkv, x, R, st->win_kv);
    dsf_rmsnorm(st->win_kv, Hd, R, Hd, L->kv_norm, eps, st->win_kv, Hd);
    for (int64_t r = 0; r < R; r++) {
        dsf_rope_row(q + r * H * Hd, (int)H, (int)Hd, (int)rd, L->freqs, st->row_pos[r], 0);
        dsf_rope_row(st->win_kv + r * Hd, 1, (int)Hd, (int)rd, L->freqs, st->row_pos[r], 0);
        dsf_act_qdq_row(st->win_kv + r * Hd, (size_t)Hd, a->fp8_block, st->win_kv + r * Hd);
    }
    if (L->role->owns_compressor) dsf_model_compress(st, li, x);
    if (L->role->owns_indexer) dsf_model_indexer(st, li, x, qr);
    int64_t K = L->role->compress_ratio > 0 ? a->index_topk : 0, width = a->window_size + K;
    const float **list = dsf_malloc(sizeof(float *) * (size_t)(ATTN_ROWS * width));
    float *ent = dsf_malloc(sizeof(float) * (size_t)(ATTN_ROWS * K * Hd + 1));
    for (int64_t r0 = 0; r0 < R; r0 += ATTN_ROWS) {
        int64_t n = R - r0 < ATTN_ROWS ? R - r0 : ATTN_ROWS;
        for (int64_t r = 0; r < n; r++) build_list(st, li, r0 + r, width, list + r * width, ent + r * K * Hd);
        dsf_sparse_attn(pool, NULL, q + r0 * H * Hd, (const float *const *)list, n, (int)H, (int)Hd, width,
                        L->attn_sink, (float)(1.0 / sqrt((double)Hd)), o + r0 * H * Hd);
    }
    for (int64_t r = 0; r < R; r++) dsf_rope_row(o + r * H * Hd, (int)H, (int)Hd, (int)rd, L->freqs, st->row_pos[r], 1);
    int64_t G = a->o_groups, OL = a->o_lora_rank, gk = H * Hd / G;
    float *u = dsf_malloc(sizeof(float) * (size_t)(R * G * OL));
    for (int64_t g = 0; g < G; g++) {
        dsf_linw wg = L->wo_a;
        wg.n = OL;
        wg.f = L->wo_a.f + g * OL * gk;
        dsf_linear_s(pool, NULL, &wg, o + g * gk, H * Hd, R, u + g * OL, G * OL);
    }
    dsf_linear(pool, NULL, &L->wo_b, u, R, out);
    for (int64_t r = 0; r < R; r++) {
        dsf_stream *s = st->row_stream[r];
        memcpy(s->win[li] + (st->row_pos[r] % s->wcap) * Hd, st->win_kv + r * Hd, sizeof(float) * (size_t)Hd);
    }
    free(qr);
    free(q);
    free(o);
    free(list);
    free(ent);
    free(u);
}
