#ifndef DSF_CONFIG_H
#define DSF_CONFIG_H
// Model arguments from config.json of V4 (flat HF keys) or V4.1 (text_config); keys and rules: docs/checkpoint.md.
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

#define DSF_MAX_LAYERS 256 // entries of compress_ratios: backbone layers plus MTP / DSpark stages
#define DSF_MAX_LIST 64    // kv / index sources, Engram layers, DSpark target layers

typedef enum dsf_arch {
    DSF_ARCH_V4,   // DeepSeek-V4-Flash: model_type "deepseek_v4", architectures ["DeepseekV4ForCausalLM"]
    DSF_ARCH_V4_1, // DeepSeek-V4.1-Flash: model_type "deepseek_v41", architectures ["DeepseekV41ForCausalLM"]
} dsf_arch;

typedef struct dsf_args {
    dsf_arch arch;
    int64_t vocab_size;
    int dim;          // hidden_size
    int n_layers;     // num_hidden_layers (backbone)
    int n_mtp_layers; // num_nextn_predict_layers: V4 MTP blocks, V4.1 DSpark stages
    int n_heads, n_kv_heads, head_dim, rope_head_dim, q_lora_rank, o_groups, o_lora_rank, window_size;
    int compress_ratios[DSF_MAX_LAYERS];              // n_layers + n_mtp_layers entries
    int n_kv_sources, kv_sources[DSF_MAX_LIST];       // V4.1 kv_source_layer_ids (V4: none listed)
    int n_index_sources, index_sources[DSF_MAX_LIST]; // V4.1 index_source_layer_ids
    int candidate_source;                             // V4.1 candidate_source_layer_id, -1 without
    int candidate_topk_blocks, candidate_block_size;
    int index_n_heads, index_head_dim, index_topk;
    double rope_theta, compress_rope_theta, rope_factor, beta_fast, beta_slow;
    int64_t original_seq_len, max_position_embeddings;
    double norm_eps;
    int n_routed_experts, n_activated_experts, n_shared_experts, moe_inter_dim;
    int n_hash_layers; // V4 num_hash_layers (tid2eid routing on layers 0..n-1); 0 for V4.1
    char score_func[16];
    double route_scale, swiglu_limit;
    int norm_topk_prob;
    int hc_mult, hc_sinkhorn_iters;
    double hc_eps;
    int n_engram_layers, engram_layers[DSF_MAX_LIST];
    int64_t engram_num_embeddings[DSF_MAX_LIST];
    int engram_max_ngram_size, engram_n_heads, engram_head_dim, engram_pad_id;
    int64_t engram_vocab_size, engram_compressed_vocab_size;
    int dspark_block_size, dspark_noise_token_id, dspark_markov_rank;
    int dspark_n_routed_experts, dspark_n_activated_experts;
    int n_dspark_targets, dspark_targets[DSF_MAX_LIST];
    int vision_n_layers, vision_dim, vision_n_heads, vision_inter_dim, vision_patch_size, vision_downsample_ratio;
    int vision_max_image_tokens;
    int64_t vision_min_pixels;
    double vision_rope_theta;
    int image_token_id;
    int fp8_block; // quantization_config.weight_block_size (square): one E8M0 scale per block x block weights
    int fp4_block; // experts: one E8M0 scale per 32 inputs (fixed by the format)
    int bos_id, eos_id, pad_id;
} dsf_args;

const char *dsf_arch_name(dsf_arch a);
// Parses config.json text; `what` names the source in messages. Runs dsf_args_check before returning 0.
int dsf_config_parse(const char *json, size_t len, const char *what, dsf_args *a, dsf_err *e);
// Reads path, a config.json file or a directory holding one.
int dsf_config_load(const char *path, dsf_args *a, dsf_err *e);
// Refuses inconsistent arguments with a message naming the HF key (list lengths, roles, quant-block multiples).
int dsf_args_check(const dsf_args *a, dsf_err *e);
// The HF config.json of these arguments (flat for V4, nested for V4.1), pretty-printed; the caller frees it.
char *dsf_config_to_json(const dsf_args *a, const char *synth_note);
// The HF spelling of an argument in messages: "text_config.hidden_size" for V4.1, "hidden_size" for V4.
const char *dsf_config_key(const dsf_args *a, const char *key, char *buf, size_t n);

#endif
