#ifndef DSF_BF16_ROUND_H
#define DSF_BF16_ROUND_H
// bf16_round: x f32 [R, n] -> y bf16 [R, n], round to nearest even, NaN kept (quiet, sign kept), overflow to inf.
#include <stdint.h>

#include "base/err.h"
#include "base/pool.h"
#include "contract/contract.h"

#ifdef __cplusplus
extern "C" {
#endif

// CPU geometry: threads = workers (0 = all), p[0] = rows per chunk, p[1] = elements per inner block.
int dsf_bf16_round_cpu(dsf_pool *pool, const dsf_geom *g, const float *x, uint16_t *y, int64_t rows, int64_t n,
                       dsf_err *e);
// CUDA geometry: threads per block (multiple of 32), p[0] = rows per block, p[1] = consecutive elements per thread.
int dsf_bf16_round_cuda(void *stream, const dsf_geom *g, const float *x, uint16_t *y, int64_t rows, int64_t n,
                        dsf_err *e);

#ifdef __cplusplus
}
#endif

#endif
