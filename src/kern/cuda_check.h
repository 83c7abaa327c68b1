#ifndef DSF_CUDA_CHECK_H
#define DSF_CUDA_CHECK_H
// For .cu files: every CUDA call goes through DSF_CUDA_TRY, which names the call and file:line in the dsf_err.
#include <cuda_runtime.h>

#include "base/err.h"

#define DSF_CUDA_TRY(e, call)                                                                              \
    do {                                                                                                   \
        cudaError_t dsf_rc_ = (call);                                                                      \
        if (dsf_rc_ != cudaSuccess)                                                                        \
            return dsf_fail((e), "%s:%d: %s: %s", __FILE__, __LINE__, #call, cudaGetErrorString(dsf_rc_)); \
    } while (0)

// After a launch: reports a launch-configuration error with the kernel's name.
#define DSF_CUDA_LAUNCHED(e, kname) DSF_CUDA_TRY((e), cudaGetLastError())

// Raises fn's dynamic shared memory limit to bytes (above the default 48 KB) once per function, device and size.
int dsf_cuda_smem_limit(const void *fn, int bytes, const char *k, dsf_err *e);

// 1 where fn may launch with programmatic dependent launch (device and its PTX sm_90 on), 0 if not, -1 on error.
int dsf_cuda_pdl_ok(const void *fn, dsf_err *e);

// The current device and its SM count (cached per device).
int dsf_cuda_sms(int *dev, int *sms, const char *k, dsf_err *e);

// Blocks of fn (threads each, smem bytes of dynamic shared memory, its limit raised) the current device holds at once.
int dsf_cuda_slots(const void *fn, int threads, int smem, const char *k, int *slots, dsf_err *e);

// The compiled function's registers, static shared memory, largest block and local bytes (cudaFuncGetAttributes).
struct dsf_func_attrs;
int dsf_cuda_func_attrs(const void *fn, struct dsf_func_attrs *out, dsf_err *e);

#endif
