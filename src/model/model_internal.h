#ifndef DSF_MODEL_INTERNAL_H
#define DSF_MODEL_INTERNAL_H
// Legend: R rows, D dim, hc streams, H heads, Hd head dim, Q q_lora, ID/IH index dim/heads, E experts, I inter.
#include "base/pool.h"
#include "io/bind.h"
#include "kern/compress/compress.h"
#include "kern/dsv4/linear.h"
#include "kern/engram/engram.h"
#include "model/model.h"

// An Engram layer's projection and gate weights (the table is in dsf_model.tables).
typedef struct dsf_engram_w {
    const uint8_t *w, *ws; // wkv FP8 [(hc+1)*D, C*hd], E8M0 [(hc+1)*D/32, C*hd/32], mmapped
    uint16_t *q_w, *k_w;   // bf16 [hc, D], aligned copies
} dsf_engram_w;

typedef struct dsf_layer_w {
    const dsf_role *role;
    float *hc_attn_fn, *hc_attn_base, *hc_attn_scale; // [(2+hc)*hc, hc*D], [(2+hc)*hc], [3]
    float *hc_ffn_fn, *hc_ffn_base, *hc_ffn_scale;
    float *attn_norm, *ffn_norm; // [D]
    float *q_norm, *kv_norm;     // [Q], [Hd]
    float *attn_sink;            // [H]
    dsf_linw wq_a, wq_b, wkv;    // [Q, D], [H*Hd, Q], [Hd, D]
    dsf_linw wo_a, wo_b;         // BF16 [G*OL, H*Hd/G] (dequantised at load), FP8 [D, G*OL]
    dsf_cmp_layer cmp;           // kv sources: the compressor and index keys (kern/compress), cap set per call
    dsf_linw i_wq_b, i_wp;       // indexer: FP8 [IH*ID, Q], BF16 [IH, D]
    dsf_linw gate;               // F32 [E, D]
    float *gate_bias;            // [E]
    dsf_linw *w1, *w2, *w3;      // routed experts [E]: FP4 [I, D], [D, I], [I, D]
    dsf_linw s_w1, s_w2, s_w3;   // shared expert: FP8
    float *freqs;                // RoPE frequencies [rope_dim / 2] of this layer's kind
    dsf_engram_w engram;         // when role->engram >= 0
} dsf_layer_w;

struct dsf_model {
    dsf_ckpt *ck;
    const dsf_args *a;
    dsf_pool *pool;
    dsf_layer_w *L;                                 // [n_layers]
    float *norm;                                    // [D]
    dsf_linw head;                                  // F32 [V, D]
    dsf_engram_map map;                             // Engram's compressed token map (docs/forward.md)
    char map_source[256];                           // where the map came from
    dsf_engram_hash hash;                           // hash constants of every Engram layer
    dsf_engram_table tables[DSF_ENGRAM_MAX_LAYERS]; // mmapped tables by Engram index
    int64_t n_alloc;
    void **allocs; // every aligned copy, freed at close
};

struct dsf_stream {
    int64_t max_seq, len, hw; // hw: one past the highest position ever written
    int max_rollback, wcap, n_layers;
    float **win;          // per layer: window ring [wcap, Hd], slot = pos % wcap
    uint16_t **ckv;       // per kv source: compressed KV bf16 [max_seq / r + 1, Hd], post-RoPE FP4 QDQ values
    uint16_t **ikey;      // per index-key owner: bf16 [max_seq / r + 1, ID], post-RoPE FP4 QDQ values
    float **ring;         // per ratio-2 kv source: compressor ring [cap, 2 Hd] (docs/compressor.md)
    dsf_engram_hist hist; // Engram history ring by absolute position
};

// The compressor ring rows of a stream for a layer: kern/compress's rule from the stream's rollback depth.
int dsf_stream_ring_cap(const dsf_stream *s, const dsf_cmp_layer *c);

// The rows of a round and the state its layers publish to later layers.
typedef struct dsf_run {
    dsf_model *m;
    const dsf_round *round;
    int64_t rows;
    dsf_stream **row_stream; // [R]
    int64_t *row_pos;        // [R]
    int64_t *row_first;      // [R] first row of the row's part: positions >= row_pos[row_first] are in this round
    float *h, *h2;           // [R, hc, D] residual streams (bf16 values)
    float *pre_mix;          // [R, hc]
    float *win_kv;           // [R, Hd] this layer's window K of the round's rows
    int64_t *topk;           // [R, index_topk] compressed entries of the latest index source, ascending
    int64_t *topk_n;         // [R]
    int topk_layer;          // the layer that published topk, -1 none
    uint8_t *cand;           // [R, cand_stride] candidate blocks of the candidate source
    int64_t cand_stride;
    int cand_layer;
    uint8_t *eng_codes, *eng_scales; // gathered Engram rows [n_engram, R, C*hd] e4m3 and [n_engram, R, C*hd/32] e8m0
} dsf_run;

// Stages of one layer (each one plain function; spec §3.2.2 - §3.2.7).
void dsf_model_attn(dsf_run *st, int layer, const float *x, float *out);
void dsf_model_compress(dsf_run *st, int layer, const float *x);
void dsf_model_indexer(dsf_run *st, int layer, const float *x, const float *qr);
void dsf_model_ffn(dsf_run *st, int layer, const float *x, float *out);
// Engram: history and gather for the whole round (before layer 0), then each Engram layer's add.
int dsf_model_engram_rows(dsf_run *st, const int32_t *tokens, dsf_err *e);
void dsf_model_engram(dsf_run *st, int layer);
int dsf_model_engram_open(dsf_model *m, const char *dir, const char *token_map, dsf_err *e);

// Weight preparation (model.c).
float *dsf_model_f32_copy(dsf_model *m, const dsf_tensor *t);
uint16_t *dsf_model_bf16_copy(dsf_model *m, const dsf_tensor *t);
void *dsf_model_alloc(dsf_model *m, size_t bytes);

#endif
