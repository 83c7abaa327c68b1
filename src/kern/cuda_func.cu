// Per-function CUDA helpers of every family: the dynamic shared memory limit, the compiled function's resources.
#include <pthread.h>

#include "contract/contract.h"
#include "kern/cuda_check.h"

int dsf_cuda_func_attrs(const void *fn, dsf_func_attrs *out, dsf_err *e) {
    cudaFuncAttributes a;
    DSF_CUDA_TRY(e, cudaFuncGetAttributes(&a, fn));
    out->regs_per_thread = a.numRegs;
    out->static_smem = (int)a.sharedSizeBytes;
    out->max_threads_per_block = a.maxThreadsPerBlock;
    out->local_bytes = (int)a.localSizeBytes;
    return 0;
}

// 1 where fn may launch early behind the kernel before it: the device and fn's PTX are sm_90 or later; cached.
int dsf_cuda_pdl_ok(const void *fn, dsf_err *e) {
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    static const void *fns[64];
    static int ok[64], dev[64], n;
    int d = 0, major = 0, i, r;
    DSF_CUDA_TRY(e, cudaGetDevice(&d));
    pthread_mutex_lock(&mu);
    for (i = 0; i < n && (fns[i] != fn || dev[i] != d); i++) {
    }
    r = i < n ? ok[i] : -1;
    pthread_mutex_unlock(&mu);
    if (r >= 0) return r;
    cudaFuncAttributes a;
    DSF_CUDA_TRY(e, cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, d));
    DSF_CUDA_TRY(e, cudaFuncGetAttributes(&a, fn)); // an image JIT-compiled from older PTX has no griddepcontrol.wait
    r = major >= 9 && a.ptxVersion >= 90;
    pthread_mutex_lock(&mu);
    if (n < 64) fns[n] = fn, ok[n] = r, dev[n++] = d;
    pthread_mutex_unlock(&mu);
    return r;
}

// Raises fn's dynamic shared memory limit to bytes once a device (needed once static plus dynamic pass 48 KB).
int dsf_cuda_smem_limit(const void *fn, int bytes, const char *k, dsf_err *e) {
    if (bytes <= 0) return 0;
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    static const void *fns[64];
    static int lim[64], dev[64], n;
    int rc = 0, i, d = 0;
    DSF_CUDA_TRY(e, cudaGetDevice(&d));
    pthread_mutex_lock(&mu);
    for (i = 0; i < n && (fns[i] != fn || dev[i] != d); i++) {
    }
    if (i == n || lim[i] < bytes) {
        cudaError_t c = cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
        if (c != cudaSuccess)
            rc = dsf_fail(e, "%s: %d bytes of dynamic shared memory refused: %s", k, bytes, cudaGetErrorString(c));
        else if (i < 64)
            fns[i] = fn, lim[i] = bytes, dev[i] = d, n += i == n;
    }
    pthread_mutex_unlock(&mu);
    return rc;
}
