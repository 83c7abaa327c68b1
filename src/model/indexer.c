// The two-level indexer (spec §3.2.5, §6.2 items 4, 5): scores, candidate blocks, masks, ascending top-k per row.
#include <math.h>
#include <stdlib.h>

#include "base/formats.h"
#include "base/quant.h"
#include "kern/dsv4/index.h"
#include "kern/dsv4/rows.h"
#include "model/model_internal.h"

void dsf_model_indexer(dsf_run *st, int li, const float *x, const float *qr) {
    const dsf_args *a = st->m->a;
    const dsf_layer_w *L = &st->m->L[li];
    const dsf_role *role = L->role;
    int ratio = role->compress_ratio, IH = a->index_n_heads, ID = a->index_head_dim, bs = a->candidate_block_size;
    int64_t R = st->rows, K = a->index_topk;
    float *q = dsf_malloc(sizeof(float) * (size_t)(R * IH * ID)), *w = dsf_malloc(sizeof(float) * (size_t)(R * IH));
    dsf_linear(st->m->pool, NULL, &L->i_wq_b, qr, R, q);
    dsf_linear(st->m->pool, NULL, &L->i_wp, x, R, w);
    float wscale = (float)(1.0 / sqrt((double)ID) / sqrt((double)IH));
    int64_t maxvis = 1;
    for (int64_t r = 0; r < R; r++) {
        dsf_rope_row(q + r * IH * ID, IH, ID, a->rope_head_dim, L->freqs, st->row_pos[r], 0);
        dsf_fp4_qdq_e8m0_row(q + r * IH * ID, (size_t)(IH * ID), q + r * IH * ID);
        for (int h = 0; h < IH; h++) w[r * IH + h] = dsf_bf16_round(w[r * IH + h] * wscale);
        int64_t vis = (st->row_pos[r] + 1) / ratio;
        maxvis = vis > maxvis ? vis : maxvis;
    }
    float *score = dsf_malloc(sizeof(float) * (size_t)maxvis),
          *keys = dsf_malloc(sizeof(float) * (size_t)(maxvis * ID));
    if (role->uses_candidates) DSF_ASSERT(st->cand_layer == a->candidate_source);
    for (int64_t r = 0, have = 0; r < R; r++) {
        int64_t vis = (st->row_pos[r] + 1) / ratio;
        // The bf16 keys of the row's stream in fp32, converted once per part as far as its rows see.
        if (st->row_first[r] == r) have = 0;
        const uint16_t *kb = st->row_stream[r]->ikey[role->index_k_source];
        for (; have < vis; have++)
            for (int64_t c = 0; c < ID; c++) keys[have * ID + c] = dsf_bf16_to_f32(kb[have * ID + c]);
        dsf_index_scores(q + r * IH * ID, w + r * IH, IH, ID, keys, vis, score);
        uint8_t *cand = st->cand + r * st->cand_stride;
        if (role->candidate_source && vis > 0) dsf_candidate_blocks(score, vis, bs, a->candidate_topk_blocks, cand);
        if (role->uses_candidates)
            for (int64_t t = 0; t < vis; t++)
                if (!cand[t / bs]) score[t] = -INFINITY;
        st->topk_n[r] = dsf_topk_ascending(score, vis, K, st->topk + r * K);
    }
    if (role->candidate_source) st->cand_layer = li;
    st->topk_layer = li;
    free(q);
    free(w);
    free(score);
    free(keys);
}
