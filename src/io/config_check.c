#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/config.h"
#include "io/engram_primes.h"
#include "io/roles.h"

typedef struct checker {
    const dsf_args *a;
    dsf_err *e;
    char key[96];
} checker;

static const char *K(checker *c, const char *key) {
    return dsf_config_key(c->a, key, c->key, sizeof c->key);
}

// x must be a positive multiple of m; `what` names the quantity in the message.
static int multiple(checker *c, const char *key, const char *what, int64_t x, int64_t m) {
    if (x > 0 && x % m == 0) return 0;
    return dsf_fail(c->e, "%s: %s = %lld is not a positive multiple of %lld", K(c, key), what, (long long)x,
                    (long long)m);
}

static int dims(checker *c) {
    const dsf_args *a = c->a;
    int B = a->fp8_block;
    if (a->n_kv_heads != 1)
        return dsf_fail(c->e, "%s: only 1 (one shared latent) is supported", K(c, "num_key_value_heads"));
    if (a->rope_head_dim % 2) return dsf_fail(c->e, "%s: must be even", K(c, "qk_rope_head_dim"));
    if (a->head_dim <= a->rope_head_dim)
        return dsf_fail(c->e, "%s: %d must exceed qk_rope_head_dim %d", K(c, "head_dim"), a->head_dim,
                        a->rope_head_dim);
    if (a->index_head_dim <= a->rope_head_dim)
        return dsf_fail(c->e, "%s: %d must exceed qk_rope_head_dim %d", K(c, "index_head_dim"), a->index_head_dim,
                        a->rope_head_dim);
    if (a->n_heads % a->o_groups)
        return dsf_fail(c->e, "%s: %d does not divide num_attention_heads %d", K(c, "o_groups"), a->o_groups,
                        a->n_heads);
    if (multiple(c, "hidden_size", "hidden_size", a->dim, B)) return -1;
    if (multiple(c, "q_lora_rank", "q_lora_rank", a->q_lora_rank, B)) return -1;
    if (multiple(c, "head_dim", "head_dim", a->head_dim, B)) return -1;
    if (multiple(c, "o_lora_rank", "o_groups * o_lora_rank", (int64_t)a->o_groups * a->o_lora_rank, B)) return -1;
    if (multiple(c, "o_groups", "heads * head_dim / o_groups", (int64_t)a->n_heads * a->head_dim / a->o_groups, B))
        return -1;
    if (multiple(c, "moe_intermediate_size", "moe_intermediate_size", a->moe_inter_dim, B)) return -1;
    if (multiple(c, "moe_intermediate_size", "moe_intermediate_size (fp4 scale block)", a->moe_inter_dim, a->fp4_block))
        return -1;
    if (multiple(c, "hidden_size", "hidden_size (fp4 scale block)", a->dim, a->fp4_block)) return -1;
    if (multiple(c, "index_head_dim", "index_head_dim (fp4 block)", a->index_head_dim, 32)) return -1;
    if (multiple(c, "index_n_heads", "index_n_heads * index_head_dim", (int64_t)a->index_n_heads * a->index_head_dim,
                 B))
        return -1;
    if (a->arch == DSF_ARCH_V4) {
        if (multiple(c, "head_dim", "head_dim - qk_rope_head_dim (fp8 KV block)", a->head_dim - a->rope_head_dim, 64))
            return -1;
        if (a->index_head_dim & (a->index_head_dim - 1))
            return dsf_fail(c->e, "%s: must be a power of two (Hadamard rotation)", K(c, "index_head_dim"));
    } else if (multiple(c, "head_dim", "head_dim (fp4 KV block)", a->head_dim, 16)) {
        return -1;
    }
    return 0;
}

static int moe(checker *c) {
    const dsf_args *a = c->a;
    if (a->n_activated_experts > a->n_routed_experts)
        return dsf_fail(c->e, "%s: %d exceeds n_routed_experts %d", K(c, "num_experts_per_tok"), a->n_activated_experts,
                        a->n_routed_experts);
    if (a->n_shared_experts != 1) return dsf_fail(c->e, "%s: exactly 1 is supported", K(c, "n_shared_experts"));
    const char *sf = a->score_func;
    if (strcmp(sf, "sqrtsoftplus") && strcmp(sf, "sigmoid") && strcmp(sf, "softmax"))
        return dsf_fail(c->e, "%s: unknown \"%s\"", K(c, "scoring_func"), sf);
    if (!(a->norm_eps > 0)) return dsf_fail(c->e, "%s: must be positive", K(c, "rms_norm_eps"));
    if (!(a->hc_eps > 0)) return dsf_fail(c->e, "%s: must be positive", K(c, "hc_eps"));
    if (!(a->rope_theta > 0)) return dsf_fail(c->e, "%s: must be positive", K(c, "rope_theta"));
    if (!(a->compress_rope_theta > 0)) return dsf_fail(c->e, "%s: must be positive", K(c, "compress_rope_theta"));
    return 0;
}

static int engram(checker *c) {
    const dsf_args *a = c->a;
    if (!a->n_engram_layers) return 0;
    if (multiple(c, "engram_head_dim", "engram_head_dim", a->engram_head_dim, a->fp8_block)) return -1;
    if (a->engram_pad_id >= a->vocab_size) return dsf_fail(c->e, "%s: not a token id", K(c, "engram_pad_token_id"));
    int per = (a->engram_max_ngram_size - 1) * a->engram_n_heads;
    int64_t *primes = dsf_malloc(sizeof(int64_t) * (size_t)per * (size_t)a->n_engram_layers);
    int64_t rows[DSF_MAX_LIST];
    dsf_engram_primes(a->engram_vocab_size, a->n_engram_layers, a->engram_max_ngram_size, a->engram_n_heads, primes,
                      rows);
    free(primes);
    for (int i = 0; i < a->n_engram_layers; i++)
        if (rows[i] != a->engram_num_embeddings[i])
            return dsf_fail(c->e, "%s: entry %d is %lld, but the prime rule on engram_vocab_size %lld gives %lld rows",
                            K(c, "engram_num_embeddings"), i, (long long)a->engram_num_embeddings[i],
                            (long long)a->engram_vocab_size, (long long)rows[i]);
    return 0;
}

static int dspark(checker *c) {
    const dsf_args *a = c->a;
    if (a->arch != DSF_ARCH_V4_1 || !a->n_mtp_layers) return 0;
    if (a->dspark_block_size <= 0) return dsf_fail(c->e, "%s: must be positive", K(c, "dspark_block_size"));
    if (a->n_dspark_targets <= 0)
        return dsf_fail(c->e, "%s: needs at least one layer", K(c, "dspark_target_layer_ids"));
    if (a->dspark_noise_token_id >= a->vocab_size)
        return dsf_fail(c->e, "%s: not a token id", K(c, "dspark_noise_token_id"));
    int ne = a->dspark_n_routed_experts ? a->dspark_n_routed_experts : a->n_routed_experts;
    int na = a->dspark_n_activated_experts ? a->dspark_n_activated_experts : a->n_activated_experts;
    if (na > ne)
        return dsf_fail(c->e, "%s: %d exceeds the stage's %d experts", K(c, "dspark_num_experts_per_tok"), na, ne);
    if (multiple(c, "dspark_markov_rank", "dspark_markov_rank", a->dspark_markov_rank, 1)) return -1;
    return 0;
}

static int vision(checker *c) {
    const dsf_args *a = c->a;
    if (!a->vision_n_layers) return 0;
    if (a->vision_dim % a->vision_n_heads)
        return dsf_fail(c->e, "vision_config.num_attention_heads: %d does not divide hidden_size %d", a->vision_n_heads,
                        a->vision_dim);
    return 0;
}

int dsf_args_check(const dsf_args *a, dsf_err *e) {
    checker c = {a, e, ""};
    if (a->n_layers + a->n_mtp_layers > DSF_MAX_LAYERS)
        return dsf_fail(e, "%s: more than %d layers", K(&c, "num_hidden_layers"), DSF_MAX_LAYERS);
    if (dims(&c) || moe(&c) || engram(&c) || dspark(&c) || vision(&c)) return -1;
    dsf_roles *r = dsf_malloc(sizeof *r);
    int rc = dsf_roles_build(a, r, e);
    free(r);
    return rc;
}
