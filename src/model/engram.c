// Engram in the forward (spec §3.2.6): token map, hash history, gather and the layer kernels of kern/engram.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/formats.h"
#include "kern/engram/engram_kern.h"
#include "model/model_internal.h"
#include "tok/tok_engram.h"

// The map of a tokenizer.json (the tokenizer's own cache beside it) or of a dsfold-engram-map file.
static int map_from_path(dsf_model *m, const char *path, dsf_err *e) {
    size_t n = strlen(path);
    if (n < 5 || strcmp(path + n - 5, ".json")) return dsf_engram_map_load(path, &m->map, e);
    dsf_tok *tok;
    if (dsf_tok_open(&tok, path, e)) return -1;
    int32_t *ids = NULL, keys = 0;
    int rc = dsf_tok_engram_map(tok, NULL, (int32_t)m->a->engram_compressed_vocab_size, &ids, &keys, e);
    if (!rc) rc = dsf_engram_map_from_ids(ids, dsf_tok_size(tok), keys, &m->map, e);
    if (rc) dsf_fail_prefix(e, "%s: Engram token map", path);
    free(ids);
    dsf_tok_close(tok);
    return rc;
}

// Without a tokenizer: map[i] = i mod the compressed vocab, a valid map (first-seen order, every id < 99092).
static int map_fold(dsf_model *m, dsf_err *e) {
    int64_t n = m->a->vocab_size, c = m->a->engram_compressed_vocab_size;
    if (c < 1) return dsf_fail(e, "config.json: engram_compressed_vocab_size %lld", (long long)c);
    int32_t *ids = dsf_malloc(sizeof(int32_t) * (size_t)n);
    for (int64_t i = 0; i < n; i++) ids[i] = (int32_t)(i % c);
    int rc = dsf_engram_map_from_ids(ids, n, c, &m->map, e);
    free(ids);
    return rc;
}

static int want_shape(const dsf_tensor *t, int64_t d0, int64_t d1, dsf_err *e) {
    if (t && t->ndim == 2 && t->shape[0] == d0 && t->shape[1] == d1) return 0;
    return dsf_fail(e, "%s: expected shape [%lld, %lld]", t ? t->name : "engram tensor", (long long)d0, (long long)d1);
}

int dsf_model_engram_open(dsf_model *m, const char *dir, const char *token_map, dsf_err *e) {
    const dsf_args *a = m->a;
    if (a->n_engram_layers == 0) return 0;
    char own[4200];
    snprintf(own, sizeof own, "%s/tokenizer.json", dir);
    const char *path = token_map ? token_map : access(own, R_OK) == 0 ? own : NULL;
    if (path ? map_from_path(m, path, e) : map_fold(m, e)) return -1;
    snprintf(m->map_source, sizeof m->map_source, "%s", path ? path : "fold (map[i] = i mod compressed vocab)");
    if (dsf_engram_hash_init(a, &m->map, &m->hash, e)) return -1;
    int64_t hc = a->hc_mult, D = a->dim, hd = a->engram_head_dim, K = (int64_t)m->hash.cols * hd;
    for (int li = 0; li < a->n_layers; li++) {
        int ei = m->L[li].role->engram;
        if (ei < 0) continue;
        const dsf_engram_view *v = &m->ck->layers[li].engram;
        if (dsf_engram_table_bind(v->embed.weight, v->embed.scale, m->hash.rows[ei], (int)hd, &m->tables[ei], e) ||
            want_shape(v->wkv.weight, (hc + 1) * D, K, e) || want_shape(v->wkv.scale, (hc + 1) * D / 32, K / 32, e) ||
            want_shape(v->q_weight, hc, D, e) || want_shape(v->k_weight, hc, D, e))
            return dsf_fail_prefix(e, "layers.%d.engram", li);
        dsf_engram_w *g = &m->L[li].engram;
        g->w = v->wkv.weight->data;
        g->ws = v->wkv.scale->data;
        g->q_w = dsf_model_bf16_copy(m, v->q_weight);
        g->k_w = dsf_model_bf16_copy(m, v->k_weight);
    }
    return 0;
}

const int32_t *dsf_model_token_map(const dsf_model *m, int64_t *n, const char **source) {
    *n = m->map.n;
    if (source) *source = m->map_source;
    return m->map.ids;
}

int dsf_model_engram_rows(dsf_run *st, const int32_t *tokens, dsf_err *e) {
    dsf_model *m = st->m;
    if (m->a->n_engram_layers == 0) return 0;
    int nl = m->hash.n_layers, C = m->hash.cols;
    int64_t R = st->rows, hd = m->a->engram_head_dim;
    int64_t *rows = dsf_malloc(sizeof(int64_t) * (size_t)(R * nl * C));
    int rc = 0;
    for (int i = 0, row = 0; i < st->round->n_parts && !rc; i++) {
        const dsf_round_part *p = &st->round->parts[i];
        rc = dsf_engram_hist_step(&m->hash, &m->map, &p->stream->hist, p->pos, p->n, tokens + row, NULL,
                                  rows + (int64_t)row * nl * C, e);
        row += (int)p->n;
    }
    st->eng_codes = dsf_malloc((size_t)(nl * R * C * hd));
    st->eng_scales = dsf_malloc((size_t)(nl * R * C * hd / 32));
    if (!rc) rc = dsf_engram_gather(m->pool, 0, m->tables, nl, C, R, rows, st->eng_codes, st->eng_scales, e);
    free(rows);
    return rc;
}

void dsf_model_engram(dsf_run *st, int li) {
    const dsf_args *a = st->m->a;
    const dsf_engram_w *g = &st->m->L[li].engram;
    int ei = st->m->L[li].role->engram, hc = a->hc_mult;
    int64_t R = st->rows, D = a->dim, n = (int64_t)st->m->hash.cols * a->engram_head_dim, HD = hc * D;
    uint16_t *h = dsf_malloc(sizeof(uint16_t) * (size_t)(R * HD));
    int32_t *img = dsf_calloc((size_t)R, sizeof(int32_t));
    for (int64_t i = 0; i < R * HD; i++) h[i] = dsf_bf16_from_f32(st->h[i]);
    dsf_err e;
    int rc = dsf_engram_layer_cpu(st->m->pool, st->eng_codes + ei * R * n, st->eng_scales + ei * R * n / 32, R, n, g->w,
                                  g->ws, g->q_w, g->k_w, img, h, hc, D, (float)a->norm_eps, &e);
    DSF_ASSERT(rc == 0);
    for (int64_t i = 0; i < R * HD; i++) st->h[i] = dsf_bf16_to_f32(h[i]);
    free(h);
    free(img);
}
