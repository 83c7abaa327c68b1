#include <jansson.h>
#include <string.h>

#include "io/config.h"

static json_t *int_list(const int *v, int n) {
    json_t *a = json_array();
    for (int i = 0; i < n; i++) json_array_append_new(a, json_integer(v[i]));
    return a;
}

static void set(json_t *o, const char *k, json_t *v) {
    json_object_set_new(o, k, v);
}

// A double that is integral is written as an integer, as the released configs write rope_theta and friends.
static json_t *num(double x) {
    if (x == (double)(int64_t)x && x < 9e15 && x > -9e15) return json_integer((json_int_t)x);
    return json_real(x);
}

// The keys V4 and V4.1 spell alike, into the object o (the root for V4, text_config for V4.1).
static void common(json_t *o, const dsf_args *a) {
    set(o, "vocab_size", json_integer(a->vocab_size));
    set(o, "hidden_size", json_integer(a->dim));
    set(o, "moe_intermediate_size", json_integer(a->moe_inter_dim));
    set(o, "num_hidden_layers", json_integer(a->n_layers));
    set(o, "num_nextn_predict_layers", json_integer(a->n_mtp_layers));
    set(o, "num_attention_heads", json_integer(a->n_heads));
    set(o, "num_key_value_heads", json_integer(a->n_kv_heads));
    set(o, "head_dim", json_integer(a->head_dim));
    set(o, "qk_rope_head_dim", json_integer(a->rope_head_dim));
    set(o, "q_lora_rank", json_integer(a->q_lora_rank));
    set(o, "o_lora_rank", json_integer(a->o_lora_rank));
    set(o, "o_groups", json_integer(a->o_groups));
    set(o, "hidden_act", json_string("silu"));
    set(o, "swiglu_limit", json_real(a->swiglu_limit));
    set(o, "rms_norm_eps", json_real(a->norm_eps));
    set(o, "attention_bias", json_false());
    set(o, "tie_word_embeddings", json_false());
    set(o, "max_position_embeddings", json_integer(a->max_position_embeddings));
    set(o, "rope_theta", num(a->rope_theta));
    json_t *rs = json_object();
    set(rs, a->arch == DSF_ARCH_V4_1 ? "rope_type" : "type", json_string("yarn"));
    set(rs, "factor", num(a->rope_factor));
    set(rs, "beta_fast", num(a->beta_fast));
    set(rs, "beta_slow", num(a->beta_slow));
    set(rs, "original_max_position_embeddings", json_integer(a->original_seq_len));
    set(o, "rope_scaling", rs);
    set(o, "n_routed_experts", json_integer(a->n_routed_experts));
    set(o, "n_shared_experts", json_integer(a->n_shared_experts));
    set(o, "num_experts_per_tok", json_integer(a->n_activated_experts));
    set(o, "scoring_func", json_string(a->score_func));
    set(o, "topk_method", json_string("noaux_tc"));
    set(o, "norm_topk_prob", json_boolean(a->norm_topk_prob));
    set(o, "routed_scaling_factor", json_real(a->route_scale));
    set(o, "sliding_window", json_integer(a->window_size));
    set(o, "compress_ratios", int_list(a->compress_ratios, a->n_layers + a->n_mtp_layers));
    set(o, "compress_rope_theta", num(a->compress_rope_theta));
    set(o, "index_n_heads", json_integer(a->index_n_heads));
    set(o, "index_head_dim", json_integer(a->index_head_dim));
    set(o, "index_topk", json_integer(a->index_topk));
    set(o, "hc_mult", json_integer(a->hc_mult));
    set(o, "hc_sinkhorn_iters", json_integer(a->hc_sinkhorn_iters));
    set(o, "hc_eps", json_real(a->hc_eps));
}

static json_t *quant(const dsf_args *a) {
    json_t *q = json_object();
    set(q, "quant_method", json_string("fp8"));
    set(q, "activation_scheme", json_string("dynamic"));
    set(q, "fmt", json_string("e4m3"));
    int blk[2] = {a->fp8_block, a->fp8_block};
    set(q, "weight_block_size", int_list(blk, 2));
    set(q, "scale_fmt", json_string("ue8m0"));
    if (a->arch == DSF_ARCH_V4_1) set(q, "expert_dtype", json_string("fp4"));
    return q;
}

static void v41_text(json_t *t, const dsf_args *a) {
    set(t, "model_type", json_string("deepseek_v41_text"));
    common(t, a);
    set(t, "kv_source_layer_ids", int_list(a->kv_sources, a->n_kv_sources));
    set(t, "index_source_layer_ids", int_list(a->index_sources, a->n_index_sources));
    if (a->candidate_source >= 0) {
        set(t, "candidate_source_layer_id", json_integer(a->candidate_source));
        set(t, "candidate_topk_blocks", json_integer(a->candidate_topk_blocks));
        set(t, "candidate_block_size", json_integer(a->candidate_block_size));
    }
    set(t, "engram_layer_ids", int_list(a->engram_layers, a->n_engram_layers));
    json_t *rows = json_array();
    for (int i = 0; i < a->n_engram_layers; i++) json_array_append_new(rows, json_integer(a->engram_num_embeddings[i]));
    set(t, "engram_num_embeddings", rows);
    set(t, "engram_max_ngram_size", json_integer(a->engram_max_ngram_size));
    set(t, "engram_vocab_size", json_integer(a->engram_vocab_size));
    set(t, "engram_n_heads", json_integer(a->engram_n_heads));
    set(t, "engram_head_dim", json_integer(a->engram_head_dim));
    set(t, "engram_pad_token_id", json_integer(a->engram_pad_id));
    set(t, "engram_compressed_vocab_size", json_integer(a->engram_compressed_vocab_size));
    if (a->n_mtp_layers) {
        set(t, "dspark_block_size", json_integer(a->dspark_block_size));
        set(t, "dspark_noise_token_id", json_integer(a->dspark_noise_token_id));
        set(t, "dspark_target_layer_ids", int_list(a->dspark_targets, a->n_dspark_targets));
        set(t, "dspark_markov_rank", json_integer(a->dspark_markov_rank));
        set(t, "dspark_n_routed_experts", json_integer(a->dspark_n_routed_experts));
        set(t, "dspark_num_experts_per_tok", json_integer(a->dspark_n_activated_experts));
    }
}

static json_t *vision(const dsf_args *a) {
    json_t *v = json_object();
    set(v, "model_type", json_string("deepseek_v41_vision"));
    set(v, "num_hidden_layers", json_integer(a->vision_n_layers));
    set(v, "hidden_size", json_integer(a->vision_dim));
    set(v, "num_attention_heads", json_integer(a->vision_n_heads));
    set(v, "intermediate_size", json_integer(a->vision_inter_dim));
    set(v, "patch_size", json_integer(a->vision_patch_size));
    set(v, "rope_theta", num(a->vision_rope_theta));
    set(v, "downsample_ratio", json_integer(a->vision_downsample_ratio));
    set(v, "max_image_tokens", json_integer(a->vision_max_image_tokens));
    set(v, "min_pixels", json_integer(a->vision_min_pixels));
    set(v, "max_wh_ratio", json_null());
    return v;
}

char *dsf_config_to_json(const dsf_args *a, const char *synth_note) {
    json_t *root = json_object();
    if (a->arch == DSF_ARCH_V4) {
        set(root, "architectures", json_pack("[s]", "DeepseekV4ForCausalLM"));
        set(root, "model_type", json_string("deepseek_v4"));
        set(root, "torch_dtype", json_string("bfloat16"));
        set(root, "bos_token_id", json_integer(a->bos_id));
        set(root, "eos_token_id", json_integer(a->eos_id));
        set(root, "expert_dtype", json_string("fp4"));
        set(root, "num_hash_layers", json_integer(a->n_hash_layers));
        common(root, a);
        set(root, "quantization_config", quant(a));
    } else {
        set(root, "architectures", json_pack("[s]", "DeepseekV41ForCausalLM"));
        set(root, "model_type", json_string("deepseek_v41"));
        set(root, "dtype", json_string("bfloat16"));
        set(root, "bos_token_id", json_integer(a->bos_id));
        set(root, "eos_token_id", json_integer(a->eos_id));
        set(root, "pad_token_id", json_integer(a->pad_id));
        set(root, "image_token_id", json_integer(a->image_token_id));
        set(root, "quantization_config", quant(a));
        json_t *t = json_object();
        v41_text(t, a);
        set(root, "text_config", t);
        if (a->vision_n_layers > 0) set(root, "vision_config", vision(a));
    }
    if (synth_note) set(root, "dsfold_synth", json_string(synth_note));
    char *s = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15));
    json_decref(root);
    DSF_ASSERT(s);
    return s;
}
