// Stream caches by absolute position: window rings, compressed KV and index keys by entry, compressor rings.
#include <stdlib.h>

#include "model/model_internal.h"

static int next_pow2(int v) {
    int p = 1;
    while (p < v) p *= 2;
    return p;
}

int dsf_stream_new(const dsf_model *m, int64_t max_seq, int max_rollback, dsf_stream **out, dsf_err *e) {
    const dsf_args *a = m->a;
    if (max_seq < 1 || max_seq > a->max_position_embeddings)
        return dsf_fail(e, "stream: max_seq %lld outside 1..%lld (max_position_embeddings)", (long long)max_seq,
                        (long long)a->max_position_embeddings);
    if (max_rollback < 0 || max_rollback > 4096)
        return dsf_fail(e, "stream: max_rollback %d outside 0..4096", max_rollback);
    size_t hd = (size_t)a->head_dim, id = (size_t)a->index_head_dim;
    dsf_stream *s = dsf_calloc(1, sizeof *s);
    s->max_seq = max_seq;
    s->max_rollback = max_rollback;
    s->wcap = a->window_size + max_rollback;
    s->ccap = next_pow2(max_rollback + 2 > 8 ? max_rollback + 2 : 8);
    int n = a->n_layers;
    s->n_layers = n;
    s->hist = dsf_calloc((size_t)max_seq, sizeof(int64_t));
    s->win = dsf_calloc((size_t)n, sizeof(float *));
    s->ckv = dsf_calloc((size_t)n, sizeof(float *));
    s->ikey = dsf_calloc((size_t)n, sizeof(float *));
    s->cst_kv = dsf_calloc((size_t)n, sizeof(float *));
    s->cst_sc = dsf_calloc((size_t)n, sizeof(float *));
    for (int l = 0; l < n; l++) {
        const dsf_role *r = m->L[l].role;
        s->win[l] = dsf_calloc((size_t)s->wcap * hd, sizeof(float));
        if (!r->owns_compressor) continue;
        size_t entries = (size_t)(max_seq / r->compress_ratio + 1);
        s->ckv[l] = dsf_calloc(entries * hd, sizeof(float));
        if (r->indexer_owns_k) s->ikey[l] = dsf_calloc(entries * id, sizeof(float));
        if (r->compress_ratio > 1) {
            s->cst_kv[l] = dsf_calloc((size_t)s->ccap * hd, sizeof(float));
            s->cst_sc[l] = dsf_calloc((size_t)s->ccap * hd, sizeof(float));
        }
    }
    *out = s;
    return 0;
}

void dsf_stream_free(dsf_stream *s) {
    if (!s) return;
    float **lists[] = {s->win, s->ckv, s->ikey, s->cst_kv, s->cst_sc};
    for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++)
        for (int l = 0; l < s->n_layers; l++) free(lists[i][l]);
    free(s->hist);
    free(s->win);
    free(s->ckv);
    free(s->ikey);
    free(s->cst_kv);
    free(s->cst_sc);
    free(s);
}

int64_t dsf_stream_len(const dsf_stream *s) {
    return s->len;
}
