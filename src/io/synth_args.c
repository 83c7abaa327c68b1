#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/engram_primes.h"
#include "io/synth.h"

// Dimensions of one (arch, size); the layer layout comes from the layer count (docs/synth.md).
typedef struct dims {
    int dim, heads, head_dim, q_lora, o_groups, o_lora, window, experts, active, inter;
    int idx_heads, idx_topk, cand_blocks, cand_block;
    int eng_heads, eng_head_dim;
    int64_t eng_vocab;
    int stages, ds_experts, ds_active, markov;
    int vis_layers, vis_dim, vis_heads, vis_inter;
    int layers, min_layers;
} dims;

static const dims V41[3] = {
    {64, 4, 128, 64, 2, 64, 16, 8, 2, 64, 4, 8, 2, 4, 2, 32, 1000, 3, 4, 2, 16, 1, 64, 4, 96, 10, 10},
    {512, 8, 512, 256, 4, 256, 128, 32, 6, 256, 8, 64, 16, 8, 4, 64, 10000, 3, 16, 3, 64, 2, 256, 4, 704, 10, 10},
    {5120, 64,  512,    1280, 8,   1024, 128, 384, 6,    2304, 32,   512, 2048, 8,
     8,    256, 100000, 1,    128, 3,    256, 2,   1024, 16,   2816, 2,   2},
};

static const dims V4[3] = {
    {128, 4, 128, 128, 2, 64, 16, 8, 2, 128, 4, 8, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 5, 5},
    {512, 8, 512, 256, 4, 256, 128, 32, 6, 256, 8, 64, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 5, 5},
    {4096, 64, 512, 1024, 8, 1024, 128, 256, 6, 2048, 64, 512, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 3, 1},
};

int dsf_synth_size_parse(const char *s, dsf_synth_size *out) {
    if (!strcmp(s, "tiny"))
        *out = DSF_SYNTH_TINY;
    else if (!strcmp(s, "small"))
        *out = DSF_SYNTH_SMALL;
    else if (!strcmp(s, "layer-real"))
        *out = DSF_SYNTH_LAYER_REAL;
    else
        return -1;
    return 0;
}

const char *dsf_synth_size_name(dsf_synth_size s) {
    return s == DSF_SYNTH_TINY ? "tiny" : s == DSF_SYNTH_SMALL ? "small" : "layer-real";
}

static void push(int *v, int *n, int x) {
    v[(*n)++] = x;
}

// V4.1 layout (docs/synth.md): 10+ layers space sources as the real model (40 reproduces it), fewer go compact.
static void layout_v41(dsf_args *a, int N) {
    int *cr = a->compress_ratios;
    if (N >= 10) {
        int n1 = N / 2, n2 = N - 2 - n1, c = 2 + n2;
        int s2 = n2 / 3 > 2 ? n2 / 3 : 2, s1 = n1 / 5 > 2 ? n1 / 5 : 2;
        cr[0] = cr[1] = 0;
        for (int L = 2; L < N; L++) cr[L] = L < c ? 2 : 1;
        int last2 = 2;
        for (int L = 2; L < c; L += s2) push(a->kv_sources, &a->n_kv_sources, last2 = L);
        push(a->kv_sources, &a->n_kv_sources, c);
        for (int i = 0; i < a->n_kv_sources; i++) push(a->index_sources, &a->n_index_sources, a->kv_sources[i]);
        for (int L = c + s1; L < N; L += s1) push(a->index_sources, &a->n_index_sources, L);
        a->candidate_source = c;
        push(a->engram_layers, &a->n_engram_layers, 1);
        push(a->engram_layers, &a->n_engram_layers, last2);
    } else {
        int k2 = (N - 2) / 2, c = 1 + k2;
        for (int L = 0; L < N; L++) cr[L] = L < c ? 2 : 1;
        push(a->kv_sources, &a->n_kv_sources, 0);
        push(a->kv_sources, &a->n_kv_sources, c);
        push(a->index_sources, &a->n_index_sources, 0);
        push(a->index_sources, &a->n_index_sources, c);
        if (c + 1 < N) push(a->index_sources, &a->n_index_sources, c + 1);
        a->candidate_source = c;
        push(a->engram_layers, &a->n_engram_layers, 0);
    }
    int nt = N < 3 ? N : 3;
    for (int i = 0; i < nt; i++) push(a->dspark_targets, &a->n_dspark_targets, N - nt + i);
}

// V4 layout (docs/synth.md): 5+ layers as the real model (43 reproduces it), fewer keep one SWA hash layer.
static void layout_v4(dsf_args *a, int N) {
    int swa = N >= 5 ? 2 : 1;
    for (int L = 0; L < N; L++) a->compress_ratios[L] = L < swa ? 0 : ((L - swa) % 2 ? 128 : 4);
    a->n_hash_layers = N >= 5 ? 3 : 1;
}

static void fixed(dsf_args *a) {
    a->vocab_size = 129280;
    a->n_kv_heads = 1;
    a->rope_head_dim = 64;
    a->index_head_dim = 128;
    a->rope_theta = 10000;
    a->compress_rope_theta = 160000;
    a->rope_factor = 16;
    a->original_seq_len = 65536;
    a->beta_fast = 32;
    a->beta_slow = 1;
    a->max_position_embeddings = 1048576;
    a->n_shared_experts = 1;
    snprintf(a->score_func, sizeof a->score_func, "sqrtsoftplus");
    a->route_scale = 1.5;
    a->swiglu_limit = 10.0;
    a->norm_topk_prob = 1;
    a->hc_mult = 4;
    a->hc_sinkhorn_iters = 20;
    a->hc_eps = 1e-6;
    a->fp4_block = 32;
    a->bos_id = 0;
    a->eos_id = 1;
    a->candidate_source = -1;
}

int dsf_synth_args(const dsf_synth_opts *o, dsf_args *a, dsf_err *e) {
    const dims *d = o->arch == DSF_ARCH_V4_1 ? &V41[o->size] : &V4[o->size];
    int N = o->layers ? o->layers : d->layers;
    int full = o->arch == DSF_ARCH_V4_1 ? 10 : 5;
    int min = o->size == DSF_SYNTH_LAYER_REAL ? d->min_layers : full;
    if (N < min)
        return dsf_fail(e, "--layers %d: %s %s needs at least %d layers%s", N, dsf_arch_name(o->arch),
                        dsf_synth_size_name(o->size), min,
                        o->size == DSF_SYNTH_LAYER_REAL ? "" : " to hold every layer role of the architecture");
    if (N + d->stages > DSF_MAX_LAYERS)
        return dsf_fail(e, "--layers %d: at most %d layers", N, DSF_MAX_LAYERS - d->stages);
    memset(a, 0, sizeof *a);
    fixed(a);
    a->arch = o->arch;
    a->dim = d->dim, a->n_heads = d->heads, a->head_dim = d->head_dim, a->q_lora_rank = d->q_lora;
    a->o_groups = d->o_groups, a->o_lora_rank = d->o_lora, a->window_size = d->window;
    a->n_routed_experts = d->experts, a->n_activated_experts = d->active, a->moe_inter_dim = d->inter;
    a->index_n_heads = d->idx_heads, a->index_topk = d->idx_topk;
    a->n_layers = N;
    a->n_mtp_layers = d->stages;
    if (o->arch == DSF_ARCH_V4) {
        a->norm_eps = 1e-6;
        a->fp8_block = 128;
        a->pad_id = -1;
        a->image_token_id = -1;
        layout_v4(a, N);
        return dsf_args_check(a, e);
    }
    a->norm_eps = 1e-20;
    a->fp8_block = 32;
    a->pad_id = 2;
    a->image_token_id = 129264;
    a->candidate_topk_blocks = d->cand_blocks, a->candidate_block_size = d->cand_block;
    a->engram_max_ngram_size = 4, a->engram_n_heads = d->eng_heads, a->engram_head_dim = d->eng_head_dim;
    a->engram_vocab_size = d->eng_vocab, a->engram_pad_id = 2, a->engram_compressed_vocab_size = 99092;
    a->dspark_block_size = 5, a->dspark_noise_token_id = 128799, a->dspark_markov_rank = d->markov;
    a->dspark_n_routed_experts = d->ds_experts, a->dspark_n_activated_experts = d->ds_active;
    a->vision_n_layers = d->vis_layers, a->vision_dim = d->vis_dim, a->vision_n_heads = d->vis_heads;
    a->vision_inter_dim = d->vis_inter, a->vision_patch_size = 14, a->vision_downsample_ratio = 3;
    a->vision_max_image_tokens = 1024, a->vision_min_pixels = 295936, a->vision_rope_theta = 10000;
    layout_v41(a, N);
    int per = (a->engram_max_ngram_size - 1) * a->engram_n_heads;
    int64_t *primes = dsf_malloc(sizeof(int64_t) * (size_t)per * (size_t)a->n_engram_layers);
    dsf_engram_primes(a->engram_vocab_size, a->n_engram_layers, a->engram_max_ngram_size, a->engram_n_heads, primes,
                      a->engram_num_embeddings);
    free(primes);
    return dsf_args_check(a, e);
}
