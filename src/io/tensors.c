#include "io/tensors.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/bind.h"

#define LS(f) ((int32_t)offsetof(dsf_layer_view, f))
#define GS(f) ((int32_t)offsetof(dsf_global_view, f))
#define XS(f) ((int32_t)offsetof(dsf_expert_view, f))

// The table being built and the naming context of the tensors added next.
typedef struct builder {
    dsf_tensor_table *t;
    const dsf_args *a;
    int layer, expert, place;
    char prefix[40];
    int overflow;
} builder;

static dsf_tspec *add(builder *b, const char *name, dsf_dtype dt, int ndim, int64_t d0, int64_t d1, dsf_fill fill,
                      int32_t slot) {
    dsf_tensor_table *t = b->t;
    if (t->n == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 1024;
        t->t = dsf_realloc(t->t, t->cap * sizeof *t->t);
    }
    dsf_tspec *s = &t->t[t->n++];
    memset(s, 0, sizeof *s);
    int len = snprintf(s->name, sizeof s->name, "%s%s", b->prefix, name);
    if (len < 0 || (size_t)len >= sizeof s->name) b->overflow = 1;
    s->dtype = dt;
    s->ndim = (uint8_t)ndim;
    s->shape[0] = d0;
    s->shape[1] = ndim > 1 ? d1 : 0;
    s->fill = (uint8_t)fill;
    s->place = (uint8_t)b->place;
    s->layer = (int16_t)b->layer;
    s->expert = b->expert;
    s->slot = slot;
    s->fan_in = ndim > 1 ? d1 : 0;
    return s;
}

static int64_t cdiv(int64_t x, int64_t m) {
    return (x + m - 1) / m;
}

// An FP8 linear "name.weight" [out, in] with its "name.scale" [out/B, in/B]; slot is the dsf_lin field.
static void fp8(builder *b, const char *name, int64_t out, int64_t in, int32_t slot) {
    char n[64];
    int64_t B = b->a->fp8_block;
    snprintf(n, sizeof n, "%s.weight", name);
    add(b, n, DSF_DT_F8_E4M3, 2, out, in, DSF_FILL_LINEAR, slot);
    snprintf(n, sizeof n, "%s.scale", name);
    add(b, n, DSF_DT_F8_E8M0, 2, cdiv(out, B), cdiv(in, B), DSF_FILL_SCALE,
        slot < 0 ? -1 : slot + (int32_t)offsetof(dsf_lin, scale));
}

// A routed-expert FP4 linear: I8 [out, in/2] (two e2m1 codes a byte) and E8M0 [out, in/32].
static void fp4(builder *b, const char *name, int64_t out, int64_t in, int32_t slot) {
    char n[64];
    snprintf(n, sizeof n, "%s.weight", name);
    dsf_tspec *w = add(b, n, DSF_DT_I8, 2, out, in / 2, DSF_FILL_LINEAR, slot);
    w->fan_in = in;
    snprintf(n, sizeof n, "%s.scale", name);
    add(b, n, DSF_DT_F8_E8M0, 2, out, in / b->a->fp4_block, DSF_FILL_SCALE, slot + (int32_t)offsetof(dsf_lin, scale));
}

static void bf16(builder *b, const char *name, int64_t out, int64_t in, int32_t slot) {
    add(b, name, DSF_DT_BF16, 2, out, in, DSF_FILL_LINEAR, slot);
}

static void norm(builder *b, const char *name, int64_t d, int32_t slot) {
    add(b, name, DSF_DT_BF16, 1, d, 0, DSF_FILL_NORM, slot);
}

static void compressor(builder *b, const char *pre, int ratio, int coff, int64_t d, int gated, int ape, int32_t slot) {
    const dsf_args *a = b->a;
    char n[64];
    if (ape) {
        snprintf(n, sizeof n, "%s.ape", pre);
        add(b, n, DSF_DT_F32, 2, ratio, coff * d, DSF_FILL_APE, slot + (int32_t)offsetof(dsf_compressor_view, ape));
    }
    snprintf(n, sizeof n, "%s.wkv.weight", pre);
    bf16(b, n, coff * d, a->dim, slot + (int32_t)offsetof(dsf_compressor_view, wkv.weight));
    if (gated) {
        snprintf(n, sizeof n, "%s.wgate.weight", pre);
        bf16(b, n, coff * d, a->dim, slot + (int32_t)offsetof(dsf_compressor_view, wgate.weight));
    }
    snprintf(n, sizeof n, "%s.norm.weight", pre);
    norm(b, n, d, slot + (int32_t)offsetof(dsf_compressor_view, norm));
}

static void attention(builder *b, const dsf_role *r) {
    const dsf_args *a = b->a;
    int64_t D = a->dim, H = a->n_heads, Hd = a->head_dim, Q = a->q_lora_rank, G = a->o_groups;
    add(b, "attn.attn_sink", DSF_DT_F32, 1, H, 0, DSF_FILL_SINK, LS(attn.attn_sink));
    fp8(b, "attn.wq_a", Q, D, LS(attn.wq_a));
    norm(b, "attn.q_norm.weight", Q, LS(attn.q_norm));
    fp8(b, "attn.wq_b", H * Hd, Q, LS(attn.wq_b));
    fp8(b, "attn.wkv", Hd, D, LS(attn.wkv));
    norm(b, "attn.kv_norm.weight", Hd, LS(attn.kv_norm));
    fp8(b, "attn.wo_a", G * a->o_lora_rank, H * Hd / G, LS(attn.wo_a));
    fp8(b, "attn.wo_b", D, G * a->o_lora_rank, LS(attn.wo_b));
    int coff = r->compressor_overlap ? 2 : 1;
    if (r->owns_compressor)
        compressor(b, "attn.compressor", r->compress_ratio, coff, Hd, r->compressor_gated, r->compressor_ape,
                   LS(attn.compressor));
    if (!r->owns_indexer) return;
    int64_t IH = a->index_n_heads, Id = a->index_head_dim;
    if (r->indexer_compressor)
        compressor(b, "attn.indexer.compressor", r->compress_ratio, coff, Id, 1, 1, LS(attn.indexer.compressor));
    fp8(b, "attn.indexer.wq_b", IH * Id, Q, LS(attn.indexer.wq_b));
    bf16(b, "attn.indexer.weights_proj.weight", IH, D, LS(attn.indexer.weights_proj.weight));
    if (r->indexer_owns_k) {
        bf16(b, "attn.indexer.wk.weight", Id, Hd, LS(attn.indexer.wk.weight));
        norm(b, "attn.indexer.k_norm.weight", Id, LS(attn.indexer.k_norm));
    }
}

static void moe(builder *b, const dsf_role *r) {
    const dsf_args *a = b->a;
    int64_t D = a->dim, I = a->moe_inter_dim, E = r->n_experts;
    bf16(b, "ffn.gate.weight", E, D, LS(ffn.gate.weight));
    if (r->hash_routed) {
        add(b, "ffn.gate.tid2eid", DSF_DT_I64, 2, a->vocab_size, r->n_activated, DSF_FILL_TID2EID,
            LS(ffn.gate.tid2eid));
    } else {
        add(b, "ffn.gate.bias", DSF_DT_F32, 1, E, 0, DSF_FILL_SMALL, LS(ffn.gate.bias));
    }
    if (a->arch == DSF_ARCH_V4_1 && a->vision_n_layers > 0)
        add(b, "ffn.gate.bias_vl", DSF_DT_F32, 1, E, 0, DSF_FILL_SMALL, LS(ffn.gate.bias_vl));
    char n[48];
    for (int e = 0; e < E; e++) {
        b->expert = e;
        snprintf(n, sizeof n, "ffn.experts.%d.w1", e);
        fp4(b, n, I, D, XS(w1));
        snprintf(n, sizeof n, "ffn.experts.%d.w2", e);
        fp4(b, n, D, I, XS(w2));
        snprintf(n, sizeof n, "ffn.experts.%d.w3", e);
        fp4(b, n, I, D, XS(w3));
    }
    b->expert = -1;
    fp8(b, "ffn.shared_experts.w1", I, D, LS(ffn.shared_experts.w1));
    fp8(b, "ffn.shared_experts.w2", D, I, LS(ffn.shared_experts.w2));
    fp8(b, "ffn.shared_experts.w3", I, D, LS(ffn.shared_experts.w3));
}

static void engram(builder *b, const dsf_role *r) {
    const dsf_args *a = b->a;
    int64_t rows = a->engram_num_embeddings[r->engram], hd = a->engram_head_dim, B = a->fp8_block;
    b->place = DSF_PLACE_HOST;
    add(b, "engram.embed.weight", DSF_DT_F8_E4M3, 2, rows, hd, DSF_FILL_ENGRAM, LS(engram.embed.weight));
    add(b, "engram.embed.scale", DSF_DT_F8_E8M0, 2, rows, hd / B, DSF_FILL_SCALE, LS(engram.embed.scale));
    b->place = DSF_PLACE_GPU;
    int64_t cols = (int64_t)(a->engram_max_ngram_size - 1) * a->engram_n_heads * hd;
    fp8(b, "engram.wkv", (int64_t)a->dim * (a->hc_mult + 1), cols, LS(engram.wkv));
    add(b, "engram.q_weight", DSF_DT_BF16, 2, a->hc_mult, a->dim, DSF_FILL_ONES, LS(engram.q_weight));
    add(b, "engram.k_weight", DSF_DT_BF16, 2, a->hc_mult, a->dim, DSF_FILL_ONES, LS(engram.k_weight));
}

static void hc(builder *b, const char *which, int32_t fn, int32_t base, int32_t scale) {
    const dsf_args *a = b->a;
    int64_t mix = (int64_t)(2 + a->hc_mult) * a->hc_mult, width = (int64_t)a->hc_mult * a->dim;
    char n[40];
    snprintf(n, sizeof n, "hc_%s_fn", which);
    add(b, n, DSF_DT_F32, 2, mix, width, DSF_FILL_HC_FN, fn);
    snprintf(n, sizeof n, "hc_%s_base", which);
    add(b, n, DSF_DT_F32, 1, mix, 0, DSF_FILL_HC_BASE, base);
    snprintf(n, sizeof n, "hc_%s_scale", which);
    add(b, n, DSF_DT_F32, 1, 3, 0, DSF_FILL_HC_SCALE, scale);
}

// hc_head_* of V4: a [hc, hc*D] projection, [hc] base and a single scale.
static void hc_head(builder *b, int32_t fn, int32_t base, int32_t scale) {
    const dsf_args *a = b->a;
    add(b, "hc_head_fn", DSF_DT_F32, 2, a->hc_mult, (int64_t)a->hc_mult * a->dim, DSF_FILL_HC_FN, fn);
    add(b, "hc_head_base", DSF_DT_F32, 1, a->hc_mult, 0, DSF_FILL_SMALL, base);
    add(b, "hc_head_scale", DSF_DT_F32, 1, 1, 0, DSF_FILL_HC_SCALE, scale);
}

static void block(builder *b, const dsf_role *r) {
    hc(b, "attn", LS(hc_attn_fn), LS(hc_attn_base), LS(hc_attn_scale));
    hc(b, "ffn", LS(hc_ffn_fn), LS(hc_ffn_base), LS(hc_ffn_scale));
    norm(b, "attn_norm.weight", b->a->dim, LS(attn_norm));
    norm(b, "ffn_norm.weight", b->a->dim, LS(ffn_norm));
    attention(b, r);
    moe(b, r);
    if (r->engram >= 0) engram(b, r);
}

static void stage(builder *b, const dsf_role *r) {
    const dsf_args *a = b->a;
    int64_t D = a->dim;
    block(b, r);
    if (a->arch == DSF_ARCH_V4) {
        fp8(b, "e_proj", D, D, LS(e_proj));
        fp8(b, "h_proj", D, D, LS(h_proj));
        norm(b, "enorm.weight", D, LS(enorm));
        norm(b, "hnorm.weight", D, LS(hnorm));
        norm(b, "norm.weight", D, LS(norm));
        hc_head(b, LS(hc_head_fn), LS(hc_head_base), LS(hc_head_scale));
        return;
    }
    if (r->stage == 0) {
        fp8(b, "main_proj", D, D * a->n_dspark_targets, LS(main_proj));
        norm(b, "main_norm.weight", D, LS(main_norm));
    }
    if (r->stage == a->n_mtp_layers - 1) {
        int64_t R = a->dspark_markov_rank;
        norm(b, "norm.weight", D, LS(norm));
        add(b, "markov_head.embed.weight", DSF_DT_BF16, 2, a->vocab_size, R, DSF_FILL_EMBED, LS(markov_head.embed));
        bf16(b, "markov_head.head.weight", a->vocab_size, R, LS(markov_head.head));
        bf16(b, "confidence_head.proj.weight", 1, D + R, LS(confidence_head.proj));
    }
}

// The vision tower (vision.py ViT + Aligner) and the image delimiters, all BF16: counted, bound, not used.
static void vision(builder *b) {
    const dsf_args *a = b->a;
    int64_t vd = a->vision_dim, vi = a->vision_inter_dim, p = a->vision_patch_size, r = a->vision_downsample_ratio;
    b->place = DSF_PLACE_VISION;
    add(b, "image_start", DSF_DT_BF16, 1, a->dim, 0, DSF_FILL_EMBED, GS(image_start));
    add(b, "image_end", DSF_DT_BF16, 1, a->dim, 0, DSF_FILL_EMBED, GS(image_end));
    add(b, "image_newline", DSF_DT_BF16, 1, a->dim, 0, DSF_FILL_EMBED, GS(image_newline));
    bf16(b, "vision.patch_embed.proj.weight", vd, 3 * p * p, -1);
    add(b, "vision.patch_embed.proj.bias", DSF_DT_BF16, 1, vd, 0, DSF_FILL_SMALL, -1);
    for (int i = 0; i < a->vision_n_layers; i++) {
        snprintf(b->prefix, sizeof b->prefix, "vision.blocks.%d.", i);
        norm(b, "norm1.weight", vd, -1);
        bf16(b, "attn.wqkv.weight", 3 * vd, vd, -1);
        add(b, "attn.wqkv.bias", DSF_DT_BF16, 1, 3 * vd, 0, DSF_FILL_SMALL, -1);
        bf16(b, "attn.wo.weight", vd, vd, -1);
        add(b, "attn.wo.bias", DSF_DT_BF16, 1, vd, 0, DSF_FILL_SMALL, -1);
        norm(b, "norm2.weight", vd, -1);
        bf16(b, "mlp.w1.weight", 2 * vi, vd, -1);
        bf16(b, "mlp.w2.weight", vd, vi, -1);
    }
    b->prefix[0] = 0;
    norm(b, "vision.norm.weight", vd, -1);
    bf16(b, "aligner.w1.weight", a->dim, vd * r * r, -1);
    add(b, "aligner.w1.bias", DSF_DT_BF16, 1, a->dim, 0, DSF_FILL_SMALL, -1);
    bf16(b, "aligner.w2.weight", a->dim, a->dim, -1);
    add(b, "aligner.w2.bias", DSF_DT_BF16, 1, a->dim, 0, DSF_FILL_SMALL, -1);
    b->place = DSF_PLACE_GPU;
}

int dsf_tensors_build(const dsf_args *a, const dsf_roles *r, dsf_tensor_table *out, dsf_err *e) {
    memset(out, 0, sizeof *out);
    builder b = {out, a, -1, -1, DSF_PLACE_GPU, "", 0};
    add(&b, "embed.weight", DSF_DT_BF16, 2, a->vocab_size, a->dim, DSF_FILL_EMBED, GS(embed));
    norm(&b, "norm.weight", a->dim, GS(norm));
    bf16(&b, "head.weight", a->vocab_size, a->dim, GS(head));
    if (a->arch == DSF_ARCH_V4) hc_head(&b, GS(hc_head_fn), GS(hc_head_base), GS(hc_head_scale));
    if (a->arch == DSF_ARCH_V4_1 && a->vision_n_layers > 0) vision(&b);
    for (int L = 0; L < r->n; L++) {
        const dsf_role *role = &r->r[L];
        b.layer = L;
        if (role->stage < 0) {
            snprintf(b.prefix, sizeof b.prefix, "layers.%d.", L);
            block(&b, role);
        } else {
            snprintf(b.prefix, sizeof b.prefix, "mtp.%d.", role->stage);
            stage(&b, role);
        }
    }
    if (b.overflow) {
        dsf_tensors_free(out);
        return dsf_fail(e, "tensor table: a tensor name exceeds %zu characters", sizeof out->t->name - 1);
    }
    return 0;
}

void dsf_tensors_free(dsf_tensor_table *t) {
    free(t->t);
    memset(t, 0, sizeof *t);
}

int64_t dsf_tspec_numel(const dsf_tspec *t) {
    return t->ndim > 1 ? t->shape[0] * t->shape[1] : t->shape[0];
}

size_t dsf_tspec_nbytes(const dsf_tspec *t) {
    return (size_t)dsf_tspec_numel(t) * dsf_dtype_size(t->dtype);
}

int64_t dsf_tspec_params(const dsf_tspec *t) {
    if (t->fill == DSF_FILL_SCALE) return 0;
    return t->dtype == DSF_DT_I8 ? 2 * dsf_tspec_numel(t) : dsf_tspec_numel(t);
}

uint64_t dsf_tensors_bytes(const dsf_tensor_table *t, uint64_t *by_dtype) {
    uint64_t total = 0;
    if (by_dtype) memset(by_dtype, 0, sizeof(uint64_t) * DSF_DT_COUNT);
    for (size_t i = 0; i < t->n; i++) {
        size_t nb = dsf_tspec_nbytes(&t->t[i]);
        total += nb;
        if (by_dtype) by_dtype[t->t[i].dtype] += nb;
    }
    return total;
}
