#ifndef DSF_BLOCK_QUANT_H
#define DSF_BLOCK_QUANT_H
// Block quantisation of bf16 rows (spec §3.0): act_quant_fp8, fp4_quant_e8m0 and fp4_quant_e4m3, one kernel.
#include <stdint.h>

#include "base/err.h"
#include "base/pool.h"
#include "contract/contract.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum dsf_quant_kind {
    DSF_QUANT_FP8,      // e4m3 codes [R, n], e8m0 scales [R, n/blk], blk 32 (V4.1) or 128 (V4)
    DSF_QUANT_FP4_E8M0, // e2m1 packed [R, n/2] (even element in the low nibble), e8m0 scales [R, n/32]
    DSF_QUANT_FP4_E4M3  // e2m1 packed [R, n/2], e4m3 scales [R, n/16] (the V4.1 compressed KV)
} dsf_quant_kind;

// x bf16 [R, n], n a multiple of blk; CPU geometry: threads = workers, p[0] = rows per chunk, p[1] = amax lanes.
int dsf_block_quant_cpu(dsf_pool *pool, const dsf_geom *g, dsf_quant_kind kind, int blk, const uint16_t *x,
                        uint8_t *codes, uint8_t *scales, int64_t rows, int64_t n, dsf_err *e);
// CUDA geometry: threads per block, p[0] = rows per block, p[1] = lanes per quantisation block (1..32, power of 2).
int dsf_block_quant_cuda(void *stream, const dsf_geom *g, dsf_quant_kind kind, int blk, const uint16_t *x,
                         uint8_t *codes, uint8_t *scales, int64_t rows, int64_t n, dsf_err *e);

#ifdef __cplusplus
}
#endif

#endif
