// Measuring instruments of bench_compress: the fp32 FMA rate and the least a one-launch decode does (docs/perf.md).
#include "bench_probes.h"
#include "kern/cuda_check.h"

// blocks x 256 threads of fn on stream, checked as the engine's launchers check theirs.
static int probe_launch(const void *fn, int blocks, void *stream, void **args, const char *what, dsf_err *e) {
    DSF_CUDA_TRY(e, cudaLaunchKernel(fn, dim3((unsigned)blocks), dim3(256u), args, 0, (cudaStream_t)stream));
    DSF_CUDA_LAUNCHED(e, what);
    return 0;
}

// 8 independent fp32 FMA chains per thread, the rate the prefill GEMM is compared against.
__global__ void cmp_fma_probe(float *out, int iters, float seed) {
    float a[8];
#pragma unroll
    for (int i = 0; i < 8; i++) a[i] = seed + (float)(threadIdx.x + i);
    for (int k = 0; k < iters; k++)
#pragma unroll
        for (int i = 0; i < 8; i++) a[i] = __fmaf_rn(a[i], 0.999999f, 1e-7f);
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < 8; i++) s += a[i];
    if (s == 12345.678f) out[0] = s;
}

extern "C" int dsf_bench_fma_probe(void *stream, int blocks, int iters, float *out, dsf_err *e) {
    float seed = 1.0f;
    void *args[] = {&out, &iters, &seed};
    return probe_launch((const void *)cmp_fma_probe, blocks, stream, args, "cmp_fma_probe", e);
}

// The least a one-launch decode does: read n16 vectors, fold them, the last block reads the join.
__global__ void cmp_read_probe(const uint4 *src, int64_t n16, unsigned *ticket, unsigned *out) {
    if (n16 < 0) return;
    __shared__ unsigned wp[32];
    unsigned x = 0;
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x, step = (int64_t)gridDim.x * blockDim.x;
    for (; i + 3 * step < n16; i += 4 * step) {
        uint4 v[4];
#pragma unroll
        for (int u = 0; u < 4; u++) v[u] = __ldcg(src + i + u * step);
#pragma unroll
        for (int u = 0; u < 4; u++) x ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
    }
    for (; i < n16; i += step) {
        uint4 v = __ldcg(src + i);
        x ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    for (int o = 16; o; o >>= 1) x ^= __shfl_xor_sync(0xffffffffu, x, o);
    if ((threadIdx.x & 31) == 0) wp[threadIdx.x >> 5] = x;
    __syncthreads();
    if (threadIdx.x == 0) { // the partials meet in one word (an xor, so any order), then the ticket, as last_of does
        for (int w = 1; w < (int)(blockDim.x >> 5); w++) x ^= wp[w];
        atomicXor(out + 1, x);
        __threadfence();
        if (atomicAdd(ticket, 1u) == gridDim.x - 1) {
            *ticket = 0;
            __threadfence();
            out[0] = atomicExch(out + 1, 0u); // the join, and the word cleared for the next call
        }
    }
}

// cmp_read_probe over n16 vectors at src in `blocks` blocks (scratch: 3 zeroed words); n16 < 0: an empty kernel.
extern "C" int dsf_bench_read_probe(void *stream, int blocks, const void *src, int64_t n16, unsigned *scratch,
                                    dsf_err *e) {
    if (blocks < 1 || !scratch || (n16 > 0 && (!src || (uintptr_t)src % 16)))
        return dsf_fail(e, "cmp_read_probe: %d blocks, scratch %p, %lld vectors at %p (16-byte aligned)", blocks,
                        (void *)scratch, (long long)n16, src);
    unsigned *out = scratch + 1;
    void *args[] = {&src, &n16, &scratch, &out};
    return probe_launch((const void *)cmp_read_probe, blocks, stream, args, "cmp_read_probe", e);
}
