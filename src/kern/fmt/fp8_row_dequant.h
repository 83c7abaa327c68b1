#ifndef DSF_FP8_ROW_DEQUANT_H
#define DSF_FP8_ROW_DEQUANT_H
// fp8_row_dequant: e4m3 q [R, n] + e8m0 s [R, n/32] -> bf16 y [R, n] = bf16(q * 2^(s-127)) (Engram rows, §3.2.6).
#include <stdint.h>

#include "base/err.h"
#include "base/pool.h"
#include "contract/contract.h"

#ifdef __cplusplus
extern "C" {
#endif

// CPU geometry: threads = workers (0 = all), p[0] = rows per chunk, p[1] = elements per inner block (32k).
int dsf_fp8_row_dequant_cpu(dsf_pool *pool, const dsf_geom *g, const uint8_t *q, const uint8_t *s, uint16_t *y,
                            int64_t rows, int64_t n, dsf_err *e);
// CUDA geometry: threads per block (multiple of 32), p[0] = rows per block, p[1] = consecutive elements per thread.
int dsf_fp8_row_dequant_cuda(void *stream, const dsf_geom *g, const uint8_t *q, const uint8_t *s, uint16_t *y,
                             int64_t rows, int64_t n, dsf_err *e);

#ifdef __cplusplus
}
#endif

#endif
