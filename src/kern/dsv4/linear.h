#ifndef DSF_DSV4_LINEAR_H
#define DSF_DSV4_LINEAR_H
// Dense linears of spec §3.0: y[R, N] = x[R, K] W[N, K]^T with fp32 sums in K order; R rows, N outputs, K inputs.
#include <stdint.h>

#include "base/pool.h"
#include "contract/contract.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum dsf_lin_kind {
    DSF_LIN_FP8,  // e4m3 W [N, K], E8M0 scales [N/B, K/B]; x act_quant'ed in blocks of B; bf16 out
    DSF_LIN_FP4,  // e2m1 W packed [N, K/2], E8M0 scales [N, K/32]; x act_quant'ed in blocks of B; bf16 out
    DSF_LIN_BF16, // bf16 W [N, K]; bf16 out (F.linear in bf16: fp32 sums, one rounding)
    DSF_LIN_F32,  // fp32 W [N, K] (bf16 weights upcast at load, or F32 tensors); fp32 out
} dsf_lin_kind;

// A weight as the forward holds it: FP8/FP4 codes and scales point into the checkpoint; BF16/F32 are aligned copies.
typedef struct dsf_linw {
    dsf_lin_kind kind;
    int64_t n, k;
    int blk;          // FP8 / FP4: the activation quant block (spec: V4.1 32); FP8: also the weight scale block
    const uint8_t *q; // FP8 / FP4 codes
    const uint8_t *s; // E8M0 scale bytes
    const float *f;   // F32 weights, or BF16 weights as exact floats (DSF_LIN_BF16)
} dsf_linw;

// Default CPU geometry of the forward: all workers, 16 outputs per chunk.
extern const dsf_geom dsf_lin_geom_default;

// x holds bf16-representable values for FP8/FP4/BF16 (row-major [R, k]); y is [R, n]. g: threads, p[0] outputs/chunk.
void dsf_linear(dsf_pool *pool, const dsf_geom *g, const dsf_linw *w, const float *x, int64_t rows, float *y);
// The same with x as a strided view (row r at x + r * ldx) and y written at y + r * ldy.
void dsf_linear_s(dsf_pool *pool, const dsf_geom *g, const dsf_linw *w, const float *x, int64_t ldx, int64_t rows,
                  float *y, int64_t ldy);

#ifdef __cplusplus
}
#endif

#endif
