#include <stdio.h>

#include "kern/cuda_check.h"

extern "C" {
#include "contract/device.h"

int dsf_cuda_available_(char *why, size_t n) {
    int count = 0;
    cudaError_t rc = cudaGetDeviceCount(&count);
    if (rc != cudaSuccess) {
        snprintf(why, n, "no usable CUDA device: %s", cudaGetErrorString(rc));
        return 0;
    }
    if (count == 0) {
        snprintf(why, n, "no CUDA device present");
        return 0;
    }
    return 1;
}

void dsf_cuda_describe_(char *out, size_t n) {
    cudaDeviceProp p;
    int drv = 0, rt = 0;
    if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) {
        snprintf(out, n, "unknown GPU");
        return;
    }
    cudaDriverGetVersion(&drv);
    cudaRuntimeGetVersion(&rt);
    snprintf(out, n, "%s, sm_%d%d, %d SMs, driver API %d, runtime %d", p.name, p.major, p.minor,
             p.multiProcessorCount, drv, rt);
}

int dsf_cuda_alloc_(size_t n, void **out, dsf_err *e) {
    DSF_CUDA_TRY(e, cudaMalloc(out, n ? n : 1));
    return 0;
}

void dsf_cuda_free_(void *p) { cudaFree(p); }

int dsf_cuda_copy_(void *dst, const void *src, size_t n, int to_device, dsf_err *e) {
    DSF_CUDA_TRY(e, cudaMemcpy(dst, src, n, to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost));
    return 0;
}

int dsf_cuda_fill_(void *dst, int byte, size_t n, dsf_err *e) {
    DSF_CUDA_TRY(e, cudaMemset(dst, byte, n));
    return 0;
}

int dsf_cuda_sync_(void *stream, dsf_err *e) {
    DSF_CUDA_TRY(e, cudaStreamSynchronize((cudaStream_t)stream));
    DSF_CUDA_TRY(e, cudaGetLastError());
    return 0;
}

int dsf_cuda_stream_(void **stream, dsf_err *e) {
    cudaStream_t s;
    // A blocking stream: the runner's fills and copies on the legacy default stream are ordered with launches on it.
    DSF_CUDA_TRY(e, cudaStreamCreateWithFlags(&s, cudaStreamDefault));
    *stream = (void *)s;
    return 0;
}

void dsf_cuda_stream_free_(void *stream) { cudaStreamDestroy((cudaStream_t)stream); }

int dsf_cuda_cc_(void) {
    cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) return 0;
    return p.major * 10 + p.minor;
}
}
