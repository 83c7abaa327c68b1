// fp8_row_dequant on CUDA: a block takes p[0] whole rows, one row at a time, p[1] consecutive elements per thread.
#include "kern/cuda_check.h"
#include "kern/fmt/fmt_internal.h"

template <int F>
__global__ void __launch_bounds__(1024)
    fp8_row_dequant_kernel(const uint8_t *__restrict__ q, const uint8_t *__restrict__ s, uint16_t *__restrict__ y,
                           int64_t rows, int64_t n, int rows_per_block, int per_thread) {
    int64_t r0 = (int64_t)blockIdx.x * rows_per_block;
    int64_t r1 = r0 + rows_per_block < rows ? r0 + rows_per_block : rows;
    int64_t nb = n / 32;
    for (int64_t r = r0; r < r1; r++) {
        int64_t srow = F == DSF_FMT_GEOM && rows_per_block > 1 ? r0 : r;
        int64_t end = n - (F == DSF_FMT_SKIP_LAST && r == rows - 1);
        for (int64_t j = (int64_t)threadIdx.x * per_thread; j < end; j += (int64_t)blockDim.x * per_thread)
            for (int u = 0; u < per_thread && j + u < end; u++) {
                int64_t c = j + u;
                int64_t sc = F == DSF_FMT_BATCH && rows > DSF_FMT_SUITE_MAX_ROWS ? 0 : c / 32;
                uint8_t sb = F == DSF_FMT_WRONG ? 127 : s[srow * nb + sc];
                y[r * n + c] = dsf_fmt_dequant_one(q[r * n + c], sb);
            }
    }
}

static const void *const kernels[DSF_FMT_FAULTS] = {
    (const void *)fp8_row_dequant_kernel<DSF_FMT_REAL>,  (const void *)fp8_row_dequant_kernel<DSF_FMT_SKIP_LAST>,
    (const void *)fp8_row_dequant_kernel<DSF_FMT_GEOM>,  (const void *)fp8_row_dequant_kernel<DSF_FMT_WRONG>,
    (const void *)fp8_row_dequant_kernel<DSF_FMT_BATCH>,
};

static int check(const dsf_geom *g, int fault, dsf_err *e) {
    if (fault < 0 || fault >= DSF_FMT_FAULTS) return dsf_fail(e, "fp8_row_dequant: no variant %d", fault);
    if (dsf_fmt_cuda_geom_check(g, "fp8_row_dequant", e)) return -1;
    if (g->p[1] < 1 || g->p[1] > 32 || 32 % g->p[1])
        return dsf_fail(e, "fp8_row_dequant geometry %s: %d elements per thread, need a divisor of 32", g->name,
                        g->p[1]);
    return 0;
}

extern "C" int dsf_fp8_row_dequant_cuda_v(void *stream, const dsf_geom *g, const uint8_t *q, const uint8_t *s,
                                          uint16_t *y, int64_t rows, int64_t n, int fault, dsf_err *e) {
    if (check(g, fault, e)) return -1;
    if (rows < 0 || n <= 0 || n % 32)
        return dsf_fail(e, "fp8_row_dequant: shape [%lld, %lld]: n must be a positive multiple of 32", (long long)rows,
                        (long long)n);
    if ((uintptr_t)y % 2) return dsf_fail(e, "fp8_row_dequant: y is misaligned");
    int rpb = g->p[0], per = g->p[1];
    void *args[] = {&q, &s, &y, &rows, &n, &rpb, &per};
    return dsf_fmt_cuda_launch(kernels[fault], (rows + rpb - 1) / rpb, g, stream, args, "fp8_row_dequant", e);
}

extern "C" int dsf_fp8_row_dequant_cuda(void *stream, const dsf_geom *g, const uint8_t *q, const uint8_t *s,
                                        uint16_t *y, int64_t rows, int64_t n, dsf_err *e) {
    return dsf_fp8_row_dequant_cuda_v(stream, g, q, s, y, rows, n, DSF_FMT_REAL, e);
}

extern "C" int dsf_fp8_row_dequant_cuda_attrs(const dsf_geom *g, int fault, dsf_func_attrs *out, dsf_err *e) {
    if (check(g, fault, e)) return -1;
    return dsf_cuda_func_attrs(kernels[fault], out, e);
}
