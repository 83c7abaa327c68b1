#ifndef DSF_COMPRESS_H
#define DSF_COMPRESS_H
// KV compressor kernels (spec §3.1.4, §3.2.4, §3.2.5); state, emission, continuation, rollback: docs/compressor.md.
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "base/pool.h"
#include "contract/contract.h"
#include "io/bind.h"
#include "io/config.h"

#ifdef __cplusplus
extern "C" {
#endif

// Every reduction splits its length into this many contiguous slices, summed in order and then folded in order.
#define DSF_CMP_SLICES 32
#define DSF_CMP_ROPE_DIM 64
#define DSF_CMP_MAX_D 512
#define DSF_CMP_MAX_IK 128
#define DSF_CMP_MAX_RATIO 128

typedef enum dsf_cmp_quant {
    DSF_CMP_Q_FP8_NOPE,    // V4 main: FP8 QDQ of dims 0..d-65 in blocks of 64 (ue8m0), rope dims stay bf16
    DSF_CMP_Q_HAD_FP4,     // V4 indexer: Hadamard over d (scale d^-0.5, bf16), then FP4 QDQ block 32, E8M0 scale
    DSF_CMP_Q_FP4_E4M3,    // V4.1: FP4 QDQ block 16 with an E4M3 scale over all d dims
} dsf_cmp_quant;

// Weights in the memory of the backend that runs (host views on CPU; device copies on CUDA), row-major.
typedef struct dsf_cmp_weights {
    const uint16_t *wkv;    // bf16 [C, D]
    const uint16_t *wgate;  // bf16 [C, D]; NULL for ratio 1
    const float *ape;       // [r, C]; NULL without APE (V4.1)
    const uint16_t *norm;   // bf16 [d]
    const uint16_t *wk;     // bf16 [I, d]; V4.1 index-key owners, else NULL
    const uint16_t *k_norm; // bf16 [I]
} dsf_cmp_weights;

// One compressor of one layer (D model dim, d entry dims, C = coff*d, I index-key dims); see _init and _bind.
typedef struct dsf_cmp_layer {
    int ratio;   // r: 1, 2, 4 or 128
    int overlap; // V4 ratio 4: 2d channels, pools the previous group's half A and the current group's half B
    int dim;     // D, a multiple of 32 (CPU) or 256 (CUDA)
    int d;       // entry dims: 512 (main), 128 (V4 indexer), multiple of 64
    int ik;      // I: index-key dims (V4.1 owners), 0 without; a multiple of 64
    int cap;     // ring rows per stream, a power of two >= coff*r + rollback (0 for ratio 1: no state)
    dsf_cmp_quant quant;
    float eps;                   // RMSNorm eps (V4 1e-6, V4.1 1e-20)
    float freq[DSF_CMP_ROPE_DIM / 2]; // RoPE frequencies in fp32 (theta and YaRN of compressed layers)
    dsf_cmp_weights w;
} dsf_cmp_layer;

// Ring rows for a ratio and a rollback depth: the next power of two of coff*r + max_rollback (0 for ratio 1).
int dsf_cmp_ring_cap(int ratio, int overlap, int max_rollback);
// The fp32 RoPE table of spec §6.2 item 7: f = 1/fp32(base^(2i/64)), then the YaRN blend when orig_len > 0.
void dsf_cmp_rope_freqs(double base, double factor, double beta_fast, double beta_slow, int64_t orig_len,
                        float out[DSF_CMP_ROPE_DIM / 2]);
// Shape and numerics from the config: which = 0 the attention compressor, 1 the V4 indexer's compressor.
int dsf_cmp_layer_init(dsf_cmp_layer *L, const dsf_args *a, int layer, int which, int max_rollback, dsf_err *e);
// Points L->w at the bound checkpoint views (host memory), checking dtypes and shapes; iv may be NULL.
int dsf_cmp_layer_bind(dsf_cmp_layer *L, const dsf_compressor_view *cv, const dsf_indexer_view *iv, dsf_err *e);
// Checks the shape fields of L (not the weights).
int dsf_cmp_layer_check(const dsf_cmp_layer *L, dsf_err *e);
int dsf_cmp_channels(const dsf_cmp_layer *L);      // C = coff*d
int dsf_cmp_proj_outputs(const dsf_cmp_layer *L);  // kv and score channels: 2C, or C for ratio 1
size_t dsf_cmp_ring_floats(const dsf_cmp_layer *L); // cap * 2C: a ring row holds kv [C] then score+ape [C]

// A call of any rows from any streams: segment s is rows row0[s]..row0[s+1]-1 of x from pos[s]; CUDA: device arrays.
typedef struct dsf_cmp_batch {
    int n_seg;           // S (host)
    int64_t rows;        // R (host): row0[S]
    int max_len;         // the longest segment (host)
    const uint16_t *x;   // bf16 [R, D]: the attention input after attn_norm
    const int32_t *row0; // [S + 1]
    const int64_t *pos;  // [S] absolute position of the segment's first row
    float *const *ring;  // [S] state rings fp32 [cap, 2C], row of position q at q mod cap (ratio > 1)
    uint16_t *const *kv; // [S] entry caches bf16 [*, d]: entry j at row j - j0[s]
    uint16_t *const *ik; // [S] index-key caches bf16 [*, I] (when L->ik), same rows
    const int64_t *j0;   // [S] the entry index of each cache's row 0 (0 for a cache of the whole sequence)
} dsf_cmp_batch;

// Clears a ring to kv 0 and score -inf (a new sequence); the kernels never read rows of positions < 0 anyway.
void dsf_cmp_ring_reset(const dsf_cmp_layer *L, float *ring);

// CPU geometry: threads = workers (0 all); p[0] = rows projected together (weight reuse), 1..64.
int dsf_cmp_run_cpu(dsf_pool *pool, const dsf_geom *g, const dsf_cmp_layer *L, const dsf_cmp_batch *b, dsf_err *e);
extern const dsf_geom dsf_cmp_geom_cpu;

// CUDA scratch: dsf_cmp_scratch_bytes, zeroed once. Geometry fields: docs/compressor.md, "CUDA geometry".
size_t dsf_cmp_scratch_bytes(const dsf_cmp_layer *L, int64_t rows);
int dsf_cmp_run_cuda(void *stream, const dsf_geom *g, const dsf_cmp_layer *L, const dsf_cmp_batch *b, void *scratch,
                     size_t scratch_bytes, dsf_err *e);
int dsf_cmp_ring_reset_cuda(void *stream, const dsf_cmp_layer *L, float *ring, dsf_err *e);
// The prefill SGEMM tile (0: 32x64, 1: 64x64, 2: 128x128) a tiled call of `rows` rows launches with geometry g.
int dsf_cmp_cuda_prefill_tile(const dsf_geom *g, const dsf_cmp_layer *L, int64_t rows, dsf_err *e);
extern const dsf_geom dsf_cmp_geom_cuda;
// Fused decode serves calls of at most this many rows whose segments fit the ring (see docs/compressor.md).
#define DSF_CMP_FUSED_MAX_ROWS 64
// The automatic geometry slices such calls from this many rows (a K slice a block; docs/compressor.md).
#define DSF_CMP_SLICED_MIN_ROWS 6
// The automatic geometry's sliced projection is the GEMV up to this many rows, the SGEMM above.
#define DSF_CMP_SGEMV_ROWS 12
// The fused GEMV stages a slice's first half of up to this many 16-byte weight vectors in dynamic shared memory.
#define DSF_CMP_GEMV_WP 10
// Fused decode: blocks that share an index key's outputs (V4.1 owners), by default and at most (geometry p[4]).
#define DSF_CMP_KEY_BLOCKS 8
#define DSF_CMP_KEY_BLOCKS_MAX 16
// Dynamic shared memory a fused geometry of this many threads declares to stage the GEMV's weights (odd stride).
#define DSF_CMP_GEMV_STAGE(threads) ((threads) / 32 * 32 * (DSF_CMP_GEMV_WP | 1) * 16)

#ifdef __cplusplus
}
#endif

#endif
