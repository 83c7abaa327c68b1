// The launch path shared by the fmt CUDA kernels: geometry sanity, opt-in shared memory, launch, error check.
#include "kern/cuda_check.h"
#include "kern/fmt/fmt_internal.h"

extern "C" int dsf_fmt_cuda_geom_check(const dsf_geom *g, const char *kernel, dsf_err *e) {
    if (g->threads < 32 || g->threads > 1024 || g->threads % 32)
        return dsf_fail(e, "%s geometry %s: %d threads per block, need a multiple of 32 in 32..1024", kernel, g->name,
                        g->threads);
    if (g->dyn_smem < 0 || g->p[0] < 1)
        return dsf_fail(e, "%s geometry %s: dynamic shared memory %d, rows per block %d", kernel, g->name, g->dyn_smem,
                        g->p[0]);
    return 0;
}

extern "C" int dsf_fmt_cuda_launch(const void *fn, int64_t blocks, const dsf_geom *g, void *stream, void **args,
                                   const char *kernel, dsf_err *e) {
    if (blocks <= 0) return 0;
    if (blocks > 0x7FFFFFFF) return dsf_fail(e, "%s: %lld blocks exceed the grid limit", kernel, (long long)blocks);
    if (dsf_cuda_smem_limit(fn, g->dyn_smem, kernel, e)) return -1;
    DSF_CUDA_TRY(e, cudaLaunchKernel(fn, dim3((unsigned)blocks), dim3((unsigned)g->threads), args, (size_t)g->dyn_smem,
                                     (cudaStream_t)stream));
    DSF_CUDA_LAUNCHED(e, kernel);
    return 0;
}

