// Model open: binds the checkpoint, points FP8/FP4 weights into it, copies small and BF16 tensors to aligned floats.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/formats.h"
#include "kern/dsv4/rows.h"
#include "kern/engram/engram.h"
#include "model/model_internal.h"

void *dsf_model_alloc(dsf_model *m, size_t bytes) {
    void *p = dsf_calloc(1, bytes ? bytes : 1);
    m->allocs = dsf_realloc(m->allocs, sizeof(void *) * (size_t)(m->n_alloc + 1));
    m->allocs[m->n_alloc++] = p;
    return p;
}

// Exact float values of a BF16 or F32 tensor (checkpoint data may be unaligned, so it is read bytewise).
float *dsf_model_f32_copy(dsf_model *m, const dsf_tensor *t) {
    if (!t) return NULL;
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
    float *f = dsf_model_alloc(m, sizeof(float) * (size_t)n);
    const uint8_t *b = t->data;
    for (int64_t i = 0; i < n; i++) {
        if (t->dtype == DSF_DT_BF16) {
            uint16_t v;
            memcpy(&v, b + 2 * i, 2);
            f[i] = dsf_bf16_to_f32(v);
        } else {
            DSF_ASSERT(t->dtype == DSF_DT_F32);
            memcpy(&f[i], b + 4 * i, 4);
        }
    }
    return f;
}

// Aligned bf16 codes of a BF16 tensor (checkpoint data may be unaligned, so it is copied bytewise).
uint16_t *dsf_model_bf16_copy(dsf_model *m, const dsf_tensor *t) {
    DSF_ASSERT(t && t->dtype == DSF_DT_BF16);
    uint16_t *v = dsf_model_alloc(m, t->nbytes);
    memcpy(v, t->data, t->nbytes);
    return v;
}

static dsf_linw lin_q(const dsf_lin *l, dsf_lin_kind kind, int blk) {
    dsf_linw w = {kind, l->weight->shape[0], kind == DSF_LIN_FP4 ? 2 * l->weight->shape[1] : l->weight->shape[1],
                  blk,  l->weight->data,     l->scale->data,
                  NULL};
    return w;
}

static dsf_linw lin_f(dsf_model *m, const dsf_tensor *t, dsf_lin_kind kind) {
    dsf_linw w = {kind, t->shape[0], t->shape[1], 0, NULL, NULL, dsf_model_f32_copy(m, t)};
    return w;
}

// wo_a to BF16 (spec §6 finding 24): bf16(fp32(w) * 2^(s-127)) per B x B block.
static dsf_linw lin_dequant(dsf_model *m, const dsf_lin *l, int blk) {
    int64_t n = l->weight->shape[0], k = l->weight->shape[1];
    float *f = dsf_model_alloc(m, sizeof(float) * (size_t)(n * k));
    const uint8_t *q = l->weight->data, *s = l->scale->data;
    for (int64_t o = 0; o < n; o++)
        for (int64_t i = 0; i < k; i++)
            f[o * k + i] =
                dsf_bf16_round(dsf_e4m3_to_f32(q[o * k + i]) * dsf_e8m0_to_f32(s[(o / blk) * (k / blk) + i / blk]));
    dsf_linw w = {DSF_LIN_BF16, n, k, 0, NULL, NULL, f};
    return w;
}

static int prepare_layer(dsf_model *m, int li, dsf_err *e) {
    const dsf_args *a = m->a;
    const dsf_layer_view *v = &m->ck->layers[li];
    dsf_layer_w *L = &m->L[li];
    int B = a->fp8_block;
    L->role = v->role;
    L->hc_attn_fn = dsf_model_f32_copy(m, v->hc_attn_fn);
    L->hc_attn_base = dsf_model_f32_copy(m, v->hc_attn_base);
    L->hc_attn_scale = dsf_model_f32_copy(m, v->hc_attn_scale);
    L->hc_ffn_fn = dsf_model_f32_copy(m, v->hc_ffn_fn);
    L->hc_ffn_base = dsf_model_f32_copy(m, v->hc_ffn_base);
    L->hc_ffn_scale = dsf_model_f32_copy(m, v->hc_ffn_scale);
    L->attn_norm = dsf_model_f32_copy(m, v->attn_norm);
    L->ffn_norm = dsf_model_f32_copy(m, v->ffn_norm);
    L->q_norm = dsf_model_f32_copy(m, v->attn.q_norm);
    L->kv_norm = dsf_model_f32_copy(m, v->attn.kv_norm);
    L->attn_sink = dsf_model_f32_copy(m, v->attn.attn_sink);
    L->wq_a = lin_q(&v->attn.wq_a, DSF_LIN_FP8, B);
    L->wq_b = lin_q(&v->attn.wq_b, DSF_LIN_FP8, B);
    L->wkv = lin_q(&v->attn.wkv, DSF_LIN_FP8, B);
    L->wo_a = lin_dequant(m, &v->attn.wo_a, B);
    L->wo_b = lin_q(&v->attn.wo_b, DSF_LIN_FP8, B);
    const dsf_role *r = v->role;
    if (r->owns_compressor) {
        if (dsf_cmp_layer_init(&L->cmp, a, li, 0, 0, e) ||
            dsf_cmp_layer_bind(&L->cmp, &v->attn.compressor, r->indexer_owns_k ? &v->attn.indexer : NULL, e))
            return dsf_fail_prefix(e, "layers.%d.attn", li);
        if ((L->cmp.ik != 0) != (r->indexer_owns_k != 0))
            return dsf_fail(e, "layers.%d.attn: index-key ownership differs between the roles and the compressor", li);
    }
    if (r->owns_indexer) {
        L->i_wq_b = lin_q(&v->attn.indexer.wq_b, DSF_LIN_FP8, B);
        L->i_wp = lin_f(m, v->attn.indexer.weights_proj.weight, DSF_LIN_BF16);
    }
    L->gate = lin_f(m, v->ffn.gate.weight, DSF_LIN_F32);
    L->gate_bias = dsf_model_f32_copy(m, v->ffn.gate.bias);
    int E = v->ffn.n_experts;
    L->w1 = dsf_model_alloc(m, sizeof(dsf_linw) * (size_t)E);
    L->w2 = dsf_model_alloc(m, sizeof(dsf_linw) * (size_t)E);
    L->w3 = dsf_model_alloc(m, sizeof(dsf_linw) * (size_t)E);
    for (int x = 0; x < E; x++) {
        L->w1[x] = lin_q(&v->ffn.experts[x].w1, DSF_LIN_FP4, B);
        L->w2[x] = lin_q(&v->ffn.experts[x].w2, DSF_LIN_FP4, B);
        L->w3[x] = lin_q(&v->ffn.experts[x].w3, DSF_LIN_FP4, B);
    }
    L->s_w1 = lin_q(&v->ffn.shared_experts.w1, DSF_LIN_FP8, B);
    L->s_w2 = lin_q(&v->ffn.shared_experts.w2, DSF_LIN_FP8, B);
    L->s_w3 = lin_q(&v->ffn.shared_experts.w3, DSF_LIN_FP8, B);
    L->freqs = dsf_model_alloc(m, sizeof(float) * (size_t)(a->rope_head_dim / 2));
    if (r->compress_ratio > 0)
        dsf_rope_freqs(a->compress_rope_theta, a->rope_head_dim, a->original_seq_len, a->rope_factor, a->beta_fast,
                       a->beta_slow, L->freqs);
    else
        dsf_rope_freqs(a->rope_theta, a->rope_head_dim, 0, 1.0, 0.0, 0.0, L->freqs);
    return 0;
}

int dsf_model_open(const char *dir, int threads, dsf_model **out, dsf_err *e) {
    dsf_model_opts o = {threads, NULL};
    return dsf_model_open_opts(dir, &o, out, e);
}

int dsf_model_open_opts(const char *dir, const dsf_model_opts *o, dsf_model **out, dsf_err *e) {
    dsf_ckpt *ck;
    if (dsf_ckpt_open(dir, &ck, e)) return -1;
    if (ck->args.arch != DSF_ARCH_V4_1) {
        dsf_ckpt_close(ck);
        return dsf_fail(e, "%s: the CPU forward runs DeepSeek-V4.1 checkpoints (config.json model_type deepseek_v41)",
                        dir);
    }
    if (ck->args.hc_mult > 16 || (ck->args.engram_max_ngram_size - 1) * ck->args.engram_n_heads > 64 ||
        ck->args.engram_max_ngram_size > 4 || ck->args.rope_head_dim > 256 || ck->args.n_routed_experts > 4096) {
        dsf_ckpt_close(ck);
        return dsf_fail(e, "%s: config.json: hc_mult, qk_rope_head_dim or n_routed_experts beyond this build's limits",
                        dir);
    }
    dsf_model *m = dsf_calloc(1, sizeof *m);
    m->ck = ck;
    m->a = &ck->args;
    m->pool = dsf_pool_new(o->threads);
    m->L = dsf_model_alloc(m, sizeof(dsf_layer_w) * (size_t)m->a->n_layers);
    for (int li = 0; li < m->a->n_layers; li++)
        if (prepare_layer(m, li, e)) {
            dsf_model_close(m);
            return -1;
        }
    if (dsf_model_engram_open(m, dir, o->token_map, e)) {
        dsf_model_close(m);
        return -1;
    }
    m->norm = dsf_model_f32_copy(m, ck->g.norm);
    m->head = lin_f(m, ck->g.head, DSF_LIN_F32);
    *out = m;
    return 0;
}

void dsf_model_close(dsf_model *m) {
    if (!m) return;
    for (int64_t i = 0; i < m->n_alloc; i++) free(m->allocs[i]);
    free(m->allocs);
    dsf_engram_map_free(&m->map);
    dsf_pool_free(m->pool);
    dsf_ckpt_close(m->ck);
    free(m);
}

const dsf_args *dsf_model_args(const dsf_model *m) {
    return m->a;
}
