#ifndef DSF_BIND_H
#define DSF_BIND_H
// Checkpoint binding: checks a directory against the tensor table and points typed views (named as the tensors) at it.
#include "io/config.h"
#include "io/roles.h"
#include "io/safetensors.h"
#include "io/tensors.h"

// A linear map: weight plus its E8M0 scale (NULL for BF16 weights).
typedef struct dsf_lin {
    const dsf_tensor *weight;
    const dsf_tensor *scale;
} dsf_lin;

// Routed experts: I8 [out, in/2] packed e2m1 with E8M0 [out, in/32]; the shared expert: F8_E4M3 with [out/B, in/B].
typedef struct dsf_expert_view {
    dsf_lin w1, w2, w3; // w1, w3: [I, D]; w2: [D, I]
} dsf_expert_view;

typedef struct dsf_compressor_view {
    dsf_lin wkv, wgate;     // BF16 [coff*d, D]; wgate only when ratio > 1
    const dsf_tensor *ape;  // V4: F32 [ratio, coff*d]
    const dsf_tensor *norm; // BF16 [d]
} dsf_compressor_view;

typedef struct dsf_indexer_view {
    dsf_lin wq_b;                   // F8 [index_heads * index_head_dim, Q]
    dsf_lin weights_proj;           // BF16 [index_heads, D]
    dsf_lin wk;                     // V4.1 owners: BF16 [index_head_dim, Hd]
    const dsf_tensor *k_norm;       // V4.1 owners: BF16 [index_head_dim]
    dsf_compressor_view compressor; // V4: the indexer's own compressor (d = index_head_dim)
} dsf_indexer_view;

typedef struct dsf_attn_view {
    const dsf_tensor *attn_sink; // F32 [H]
    dsf_lin wq_a;                // F8 [Q, D]
    const dsf_tensor *q_norm;    // BF16 [Q]
    dsf_lin wq_b;                // F8 [H*Hd, Q]
    dsf_lin wkv;                 // F8 [Hd, D]
    const dsf_tensor *kv_norm;   // BF16 [Hd]
    dsf_lin wo_a;                // F8 [o_groups*o_lora_rank, H*Hd/o_groups] (the loader dequantises it to BF16)
    dsf_lin wo_b;                // F8 [D, o_groups*o_lora_rank]
    dsf_compressor_view compressor;
    dsf_indexer_view indexer;
} dsf_attn_view;

typedef struct dsf_gate_view {
    const dsf_tensor *weight;  // BF16 [E, D]
    const dsf_tensor *bias;    // F32 [E] (score-routed layers)
    const dsf_tensor *bias_vl; // V4.1 with vision: F32 [E]
    const dsf_tensor *tid2eid; // V4 hash layers: I64 [V, top-k]
} dsf_gate_view;

typedef struct dsf_ffn_view {
    dsf_gate_view gate;
    int n_experts;
    dsf_expert_view *experts; // [n_experts]
    dsf_expert_view shared_experts;
} dsf_ffn_view;

typedef struct dsf_engram_view {
    dsf_lin embed;              // F8 [rows, engram_head_dim] with E8M0 [rows, engram_head_dim/B]
    dsf_lin wkv;                // F8 [D*(hc+1), (max_ngram-1)*engram_heads*engram_head_dim]
    const dsf_tensor *q_weight; // BF16 [hc, D]
    const dsf_tensor *k_weight; // BF16 [hc, D]
} dsf_engram_view;

typedef struct dsf_markov_view {
    const dsf_tensor *embed; // BF16 [V, markov_rank]
    const dsf_tensor *head;  // BF16 [V, markov_rank]
} dsf_markov_view;

// One backbone layer ("layers.L.") or one MTP / DSpark stage ("mtp.K."); stage-only fields stay NULL elsewhere.
typedef struct dsf_layer_view {
    const dsf_role *role;
    const dsf_tensor *hc_attn_fn, *hc_attn_base, *hc_attn_scale; // F32 [(2+hc)*hc, hc*D], [(2+hc)*hc], [3]
    const dsf_tensor *hc_ffn_fn, *hc_ffn_base, *hc_ffn_scale;
    const dsf_tensor *attn_norm, *ffn_norm; // BF16 [D]
    dsf_attn_view attn;
    dsf_ffn_view ffn;
    dsf_engram_view engram;
    dsf_lin e_proj, h_proj;                                      // V4 MTP: F8 [D, D]
    const dsf_tensor *enorm, *hnorm;                             // V4 MTP: BF16 [D]
    const dsf_tensor *hc_head_fn, *hc_head_base, *hc_head_scale; // V4 MTP: F32 [hc, hc*D], [hc], [1]
    dsf_lin main_proj;                                           // V4.1 stage 0: F8 [D, D*targets]
    const dsf_tensor *main_norm;                                 // V4.1 stage 0: BF16 [D]
    const dsf_tensor *norm;                                      // V4 MTP, V4.1 last stage: BF16 [D]
    dsf_markov_view markov_head;                                 // V4.1 last stage
    struct {
        const dsf_tensor *proj; // V4.1 last stage: BF16 [1, D + markov_rank]
    } confidence_head;
} dsf_layer_view;

typedef struct dsf_global_view {
    const dsf_tensor *embed;                                     // BF16 [V, D]
    const dsf_tensor *norm;                                      // BF16 [D]
    const dsf_tensor *head;                                      // BF16 [V, D]
    const dsf_tensor *hc_head_fn, *hc_head_base, *hc_head_scale; // V4 only
    const dsf_tensor *image_start, *image_end, *image_newline;   // V4.1 with vision: BF16 [D]
} dsf_global_view;

typedef struct dsf_ckpt {
    dsf_args args;
    dsf_roles roles;
    dsf_tensor_table table;
    dsf_st *st;
    dsf_global_view g;
    int n_layers; // backbone + stages: layers[n_layers_backbone + k] is stage k
    dsf_layer_view *layers;
    dsf_layer_view *mtp; // = layers + args.n_layers
    dsf_expert_view *expert_mem;
} dsf_ckpt;

// Opens and binds a checkpoint directory; any mismatch with the table fails with one message listing the problems.
int dsf_ckpt_open(const char *dir, dsf_ckpt **out, dsf_err *e);
void dsf_ckpt_close(dsf_ckpt *c);

// Problem counts of dsf_bind_check, by kind.
typedef struct dsf_bind_report {
    size_t missing, unexpected, wrong_dtype, wrong_shape;
} dsf_bind_report;

// Checks an opened checkpoint against a table; on mismatch returns -1 with the first problems listed (and counts).
int dsf_bind_check(const dsf_tensor_table *t, const dsf_st *st, dsf_bind_report *rep, dsf_err *e);

#endif
