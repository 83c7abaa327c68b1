// Stream caches by absolute position: window rings, compressed KV and index keys by entry, compressor rings, history.
#include <stdlib.h>

#include "model/model_internal.h"

int dsf_stream_ring_cap(const dsf_stream *s, const dsf_cmp_layer *c) {
    return dsf_cmp_ring_cap(c->ratio, c->overlap, s->max_rollback);
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
    int n = a->n_layers;
    s->n_layers = n;
    dsf_engram_hist_init(&s->hist, (int64_t)max_rollback + a->engram_max_ngram_size);
    s->win = dsf_calloc((size_t)n, sizeof(float *));
    s->ckv = dsf_calloc((size_t)n, sizeof(uint16_t *));
    s->ikey = dsf_calloc((size_t)n, sizeof(uint16_t *));
    s->ring = dsf_calloc((size_t)n, sizeof(float *));
    for (int l = 0; l < n; l++) {
        const dsf_role *r = m->L[l].role;
        s->win[l] = dsf_calloc((size_t)s->wcap * hd, sizeof(float));
        if (!r->owns_compressor) continue;
        dsf_cmp_layer c = m->L[l].cmp;
        size_t entries = (size_t)(max_seq / c.ratio + 1);
        s->ckv[l] = dsf_calloc(entries * hd, sizeof(uint16_t));
        if (c.ik) s->ikey[l] = dsf_calloc(entries * id, sizeof(uint16_t));
        c.cap = dsf_stream_ring_cap(s, &c);
        if (c.cap == 0) continue;
        s->ring[l] = dsf_malloc(sizeof(float) * dsf_cmp_ring_floats(&c));
        dsf_cmp_ring_reset(&c, s->ring[l]);
    }
    *out = s;
    return 0;
}

void dsf_stream_free(dsf_stream *s) {
    if (!s) return;
    for (int l = 0; l < s->n_layers; l++) {
        free(s->win[l]);
        free(s->ckv[l]);
        free(s->ikey[l]);
        free(s->ring[l]);
    }
    dsf_engram_hist_free(&s->hist);
    free(s->win);
    free(s->ckv);
    free(s->ikey);
    free(s->ring);
    free(s);
}

int64_t dsf_stream_len(const dsf_stream *s) {
    return s->len;
}
