#ifndef DSF_BENCH_PROBES_H
#define DSF_BENCH_PROBES_H
// Measuring instruments of bench_compress (bench_probes.cu): not engine kernels, so not in the contract.
#include <stdint.h>

#include "base/err.h"

#ifdef __cplusplus
extern "C" {
#endif

// FMA rate: blocks x 256 threads x iters x 8 fp32 FMAs.
int dsf_bench_fma_probe(void *stream, int blocks, int iters, float *out, dsf_err *e);
// Read and join: n16 16-byte vectors at src read by `blocks` x 256, joined by a ticket (3 zeroed words).
int dsf_bench_read_probe(void *stream, int blocks, const void *src, int64_t n16, unsigned *scratch, dsf_err *e);

#ifdef __cplusplus
}
#endif

#endif
