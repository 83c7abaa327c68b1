// bf16_round on CUDA: a block takes p[0] whole rows and walks them flat, p[1] consecutive elements per thread.
#include "kern/cuda_check.h"
#include "kern/fmt/fmt_internal.h"

template <int F>
__global__ void __launch_bounds__(1024) bf16_round_kernel(const float *__restrict__ x, uint16_t *__restrict__ y,
                                                          int64_t rows, int64_t n, int rows_per_block, int per_thread) {
    int64_t r0 = (int64_t)blockIdx.x * rows_per_block;
    int64_t r1 = r0 + rows_per_block < rows ? r0 + rows_per_block : rows;
    int64_t base = r0 * n, count = (r1 - r0) * n;
    int64_t skip = F == DSF_FMT_SKIP_LAST ? rows * n - 1 : -1;
    int toward_zero = (F == DSF_FMT_GEOM && per_thread >= 2) || (F == DSF_FMT_BATCH && rows > DSF_FMT_SUITE_MAX_ROWS);
    for (int64_t j = (int64_t)threadIdx.x * per_thread; j < count; j += (int64_t)blockDim.x * per_thread)
        for (int u = 0; u < per_thread && j + u < count; u++) {
            int64_t i = base + j + u;
            if (i == skip) continue;
            float v = x[i];
            if (F == DSF_FMT_WRONG)
                y[i] = dsf_fmt_bf16_half_away(v);
            else
                y[i] = toward_zero ? dsf_fmt_bf16_toward_zero(v) : dsf_bf16_from_f32(v);
        }
}

static const void *const kernels[DSF_FMT_FAULTS] = {
    (const void *)bf16_round_kernel<DSF_FMT_REAL>,  (const void *)bf16_round_kernel<DSF_FMT_SKIP_LAST>,
    (const void *)bf16_round_kernel<DSF_FMT_GEOM>,  (const void *)bf16_round_kernel<DSF_FMT_WRONG>,
    (const void *)bf16_round_kernel<DSF_FMT_BATCH>,
};

static int check(const dsf_geom *g, int fault, dsf_err *e) {
    if (fault < 0 || fault >= DSF_FMT_FAULTS) return dsf_fail(e, "bf16_round: no variant %d", fault);
    if (dsf_fmt_cuda_geom_check(g, "bf16_round", e)) return -1;
    if (g->p[1] < 1 || g->p[1] > 8)
        return dsf_fail(e, "bf16_round geometry %s: %d elements per thread, need 1..8", g->name, g->p[1]);
    return 0;
}

extern "C" int dsf_bf16_round_cuda_v(void *stream, const dsf_geom *g, const float *x, uint16_t *y, int64_t rows,
                                     int64_t n, int fault, dsf_err *e) {
    if (check(g, fault, e)) return -1;
    if (rows < 0 || n < 0) return dsf_fail(e, "bf16_round: bad shape [%lld, %lld]", (long long)rows, (long long)n);
    if ((uintptr_t)x % 4 || (uintptr_t)y % 2) return dsf_fail(e, "bf16_round: x or y is misaligned");
    if (n == 0) return 0;
    int rpb = g->p[0], per = g->p[1];
    void *args[] = {&x, &y, &rows, &n, &rpb, &per};
    return dsf_fmt_cuda_launch(kernels[fault], (rows + rpb - 1) / rpb, g, stream, args, "bf16_round", e);
}

extern "C" int dsf_bf16_round_cuda(void *stream, const dsf_geom *g, const float *x, uint16_t *y, int64_t rows,
                                   int64_t n, dsf_err *e) {
    return dsf_bf16_round_cuda_v(stream, g, x, y, rows, n, DSF_FMT_REAL, e);
}

extern "C" int dsf_bf16_round_cuda_attrs(const dsf_geom *g, int fault, dsf_func_attrs *out, dsf_err *e) {
    if (check(g, fault, e)) return -1;
    return dsf_cuda_func_attrs(kernels[fault], out, e);
}
