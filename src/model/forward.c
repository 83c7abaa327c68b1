// One lane round top to bottom (spec §3.2.1, §3.2.2); every stage takes all rows, nothing branches on their count.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/formats.h"
#include "kern/dsv4/hc.h"
#include "kern/dsv4/rows.h"
#include "model/model_internal.h"

static int check_round(const dsf_model *m, const dsf_round *r, dsf_err *e) {
    if (r->n_parts < 1) return dsf_fail(e, "round: no parts");
    for (int i = 0; i < r->n_parts; i++) {
        const dsf_round_part *p = &r->parts[i];
        const dsf_stream *s = p->stream;
        if (!s || p->n < 1 || !p->tokens) return dsf_fail(e, "round part %d: needs a stream and n >= 1 tokens", i);
        for (int j = 0; j < i; j++)
            if (r->parts[j].stream == s) return dsf_fail(e, "round part %d: stream repeated in one round", i);
        if (p->pos < 0 || p->pos > s->len)
            return dsf_fail(e, "round part %d: position %lld beyond the stream's length %lld", i, (long long)p->pos,
                            (long long)s->len);
        if (p->pos < s->hw - s->max_rollback)
            return dsf_fail(e, "round part %d: position %lld rolls back more than %d positions from %lld", i,
                            (long long)p->pos, s->max_rollback, (long long)s->hw);
        if (p->pos + p->n > s->max_seq)
            return dsf_fail(e, "round part %d: positions up to %lld exceed the stream's max_seq %lld", i,
                            (long long)(p->pos + p->n), (long long)s->max_seq);
        for (int64_t t = 0; t < p->n; t++) {
            if (p->tokens[t] < 0 || p->tokens[t] >= m->a->vocab_size)
                return dsf_fail(e, "round part %d: token %d at row %lld outside the vocabulary (%lld)", i,
                                (int)p->tokens[t], (long long)t, (long long)m->a->vocab_size);
            if (m->a->n_engram_layers > 0 && p->tokens[t] >= m->map.n)
                return dsf_fail(e, "round part %d: token %d at row %lld outside the Engram token map (%lld, %s)", i,
                                (int)p->tokens[t], (long long)t, (long long)m->map.n, m->map_source);
        }
        if (p->want != DSF_LOGITS_NONE && !p->logits) return dsf_fail(e, "round part %d: logits wanted, no buffer", i);
    }
    return 0;
}

// h[r, j] = embed[token] for every stream j; the pre-mix starts one-hot.
static void embed_stage(dsf_run *st, const int32_t *tokens) {
    const dsf_args *a = st->m->a;
    const uint8_t *emb = st->m->ck->g.embed->data;
    int hc = a->hc_mult;
    for (int64_t r = 0; r < st->rows; r++) {
        float *h = st->h + r * hc * a->dim;
        for (int i = 0; i < a->dim; i++) {
            uint16_t v;
            memcpy(&v, emb + 2 * ((int64_t)tokens[r] * a->dim + i), 2);
            h[i] = dsf_bf16_to_f32(v);
        }
        for (int j = 1; j < hc; j++) memcpy(h + j * a->dim, h, sizeof(float) * (size_t)a->dim);
        for (int j = 0; j < hc; j++) st->pre_mix[r * hc + j] = j == 0 ? 1.0f : 0.0f;
    }
}

// The mixes of one sublayer on the streams h: pre, post [R, hc], comb [R, hc, hc].
static void hc_stage(dsf_run *st, const float *h, const float *fn, const float *scale, const float *base, float *pre,
                     float *post, float *comb) {
    const dsf_args *a = st->m->a;
    int hc = a->hc_mult, nm = (2 + hc) * hc;
    float *mixes = dsf_malloc(sizeof(float) * (size_t)(st->rows * nm));
    dsf_hc_mixes(h, st->rows, (int64_t)hc * a->dim, fn, nm, (float)a->norm_eps, mixes);
    dsf_hc_split(mixes, st->rows, hc, scale, base, a->hc_sinkhorn_iters, (float)a->hc_eps, pre, post, comb);
    free(mixes);
}

// One block with the lagged pre-mix (spec §3.2.2): attention collapses with the previous FFN's pre.
static void block_stage(dsf_run *st, int li) {
    const dsf_args *a = st->m->a;
    const dsf_layer_w *L = &st->m->L[li];
    int hc = a->hc_mult;
    int64_t R = st->rows, D = a->dim;
    float *a_pre = dsf_malloc(sizeof(float) * (size_t)(R * hc)), *a_post = dsf_malloc(sizeof(float) * (size_t)(R * hc));
    float *f_post = dsf_malloc(sizeof(float) * (size_t)(R * hc));
    float *comb = dsf_malloc(sizeof(float) * (size_t)(R * hc * hc));
    float *x = dsf_malloc(sizeof(float) * (size_t)(R * D)), *y = dsf_malloc(sizeof(float) * (size_t)(R * D));
    hc_stage(st, st->h, L->hc_attn_fn, L->hc_attn_scale, L->hc_attn_base, a_pre, a_post, comb);
    dsf_hc_pre(st->h, st->pre_mix, R, hc, D, x);
    dsf_rmsnorm(x, D, R, D, L->attn_norm, (float)a->norm_eps, x, D);
    dsf_model_attn(st, li, x, y);
    dsf_hc_post(y, st->h, a_post, comb, R, hc, D, st->h2);
    hc_stage(st, st->h2, L->hc_ffn_fn, L->hc_ffn_scale, L->hc_ffn_base, st->pre_mix, f_post, comb);
    dsf_hc_pre(st->h2, a_pre, R, hc, D, x);
    dsf_rmsnorm(x, D, R, D, L->ffn_norm, (float)a->norm_eps, x, D);
    dsf_model_ffn(st, li, x, y);
    dsf_hc_post(y, st->h2, f_post, comb, R, hc, D, st->h);
    free(a_pre);
    free(a_post);
    free(f_post);
    free(comb);
    free(x);
    free(y);
}

// Collapse with the last FFN's pre, the final norm and the fp32 head, for the rows that want logits.
static void head_stage(dsf_run *st, const dsf_round *r) {
    const dsf_args *a = st->m->a;
    int64_t D = a->dim, row = 0;
    float *y = dsf_malloc(sizeof(float) * (size_t)D);
    for (int i = 0; i < r->n_parts; i++) {
        const dsf_round_part *p = &r->parts[i];
        int64_t first = p->want == DSF_LOGITS_ALL ? 0 : p->n - 1;
        for (int64_t t = first; p->want != DSF_LOGITS_NONE && t < p->n; t++) {
            int64_t rr = row + t;
            dsf_hc_pre(st->h + rr * a->hc_mult * D, st->pre_mix + rr * a->hc_mult, 1, a->hc_mult, D, y);
            dsf_rmsnorm(y, D, 1, D, st->m->norm, (float)a->norm_eps, y, D);
            dsf_linear(st->m->pool, NULL, &st->m->head, y, 1, p->logits + (t - first) * a->vocab_size);
        }
        row += p->n;
    }
    free(y);
}

int dsf_model_forward(dsf_model *m, const dsf_round *r, dsf_err *e) {
    if (check_round(m, r, e)) return -1;
    const dsf_args *a = m->a;
    dsf_run st = {.m = m, .round = r, .topk_layer = -1, .cand_layer = -1};
    for (int i = 0; i < r->n_parts; i++) st.rows += r->parts[i].n;
    int64_t R = st.rows, HD = (int64_t)a->hc_mult * a->dim;
    st.row_stream = dsf_malloc(sizeof(dsf_stream *) * (size_t)R);
    st.row_pos = dsf_malloc(sizeof(int64_t) * (size_t)R);
    st.row_first = dsf_malloc(sizeof(int64_t) * (size_t)R);
    int32_t *tokens = dsf_malloc(sizeof(int32_t) * (size_t)R);
    int64_t max_entries = 1;
    for (int i = 0, row = 0; i < r->n_parts; i++) {
        const dsf_round_part *p = &r->parts[i];
        for (int64_t t = 0; t < p->n; t++, row++) {
            st.row_stream[row] = p->stream;
            st.row_pos[row] = p->pos + t;
            st.row_first[row] = row - t;
            tokens[row] = p->tokens[t];
        }
        max_entries = p->pos + p->n > max_entries ? p->pos + p->n : max_entries;
    }
    st.h = dsf_malloc(sizeof(float) * (size_t)(R * HD));
    st.h2 = dsf_malloc(sizeof(float) * (size_t)(R * HD));
    st.pre_mix = dsf_malloc(sizeof(float) * (size_t)(R * a->hc_mult));
    st.win_kv = dsf_malloc(sizeof(float) * (size_t)(R * a->head_dim));
    st.topk = dsf_malloc(sizeof(int64_t) * (size_t)(R * a->index_topk));
    st.topk_n = dsf_calloc((size_t)R, sizeof(int64_t));
    st.cand_stride = a->candidate_block_size > 0 ? max_entries / a->candidate_block_size + 1 : 1;
    st.cand = dsf_calloc((size_t)(R * st.cand_stride), 1);
    int rc = dsf_model_engram_rows(&st, tokens, e);
    if (!rc) embed_stage(&st, tokens);
    if (!rc && r->hidden) memcpy(r->hidden, st.h, sizeof(float) * (size_t)(R * HD));
    if (!rc && r->pre_mix) memcpy(r->pre_mix, st.pre_mix, sizeof(float) * (size_t)(R * a->hc_mult));
    for (int li = 0; li < a->n_layers && !rc; li++) {
        if (m->L[li].role->engram >= 0) dsf_model_engram(&st, li);
        block_stage(&st, li);
        if (r->hidden) memcpy(r->hidden + (int64_t)(li + 1) * R * HD, st.h, sizeof(float) * (size_t)(R * HD));
        if (r->pre_mix)
            memcpy(r->pre_mix + (int64_t)(li + 1) * R * a->hc_mult, st.pre_mix,
                   sizeof(float) * (size_t)(R * a->hc_mult));
    }
    if (!rc) head_stage(&st, r);
    for (int i = 0; i < r->n_parts && !rc; i++) {
        dsf_stream *s = r->parts[i].stream;
        s->len = r->parts[i].pos + r->parts[i].n;
        s->hw = s->len > s->hw ? s->len : s->hw;
    }
    free(st.row_stream);
    free(st.row_pos);
    free(st.row_first);
    free(tokens);
    free(st.h);
    free(st.h2);
    free(st.pre_mix);
    free(st.win_kv);
    free(st.topk);
    free(st.topk_n);
    free(st.cand);
    free(st.eng_codes);
    free(st.eng_scales);
    return rc;
}
