// Block quantisation on CUDA: p[1] lanes share a block, xor-shuffle its amax, encode their elements; p[0] rows/block.
#include "kern/cuda_check.h"
#include "kern/fmt/fmt_internal.h"

template <int K, int F>
__global__ void __launch_bounds__(1024)
    block_quant_kernel(const uint16_t *__restrict__ x, uint8_t *__restrict__ codes, uint8_t *__restrict__ scales,
                       int64_t rows, int64_t n, int blk, int rows_per_block, int lanes) {
    const int per_item = K == DSF_QUANT_FP8 ? 1 : 2;
    int items = blk / per_item, per_lane = items / lanes;
    int64_t nb = n / blk;
    int64_t r0 = (int64_t)blockIdx.x * rows_per_block;
    int64_t r1 = r0 + rows_per_block < rows ? r0 + rows_per_block : rows;
    int64_t total = (r1 - r0) * nb;
    int groups = 32 / lanes, grp = (int)(threadIdx.x & 31) / lanes, l = (int)threadIdx.x % lanes;
    int64_t stride = (int64_t)(blockDim.x >> 5) * groups;
    int span = F == DSF_FMT_BATCH && rows > DSF_FMT_SUITE_MAX_ROWS ? items / 2 : items;
    int stop = F == DSF_FMT_GEOM && blockDim.x >= 128 ? 2 : 1;
    for (int64_t q0 = (int64_t)(threadIdx.x >> 5) * groups; q0 < total; q0 += stride) {
        int64_t q = q0 + grp;
        int active = q < total;
        int64_t r = r0 + (active ? q / nb : 0), b = active ? q % nb : 0;
        const uint16_t *xb = x + r * n + b * blk;
        float m = 0.0f;
        for (int k = 0; k < per_lane && active; k++) {
            int it = l + k * lanes;
            for (int h = 0; h < per_item && it < span; h++) m = fmaxf(m, fabsf(dsf_bf16_to_f32(xb[it * per_item + h])));
        }
        // Every lane of the warp takes part in the shuffles, active or not; max is exact in any order.
        for (int off = lanes >> 1; off >= stop; off >>= 1) m = fmaxf(m, __shfl_xor_sync(0xFFFFFFFFu, m, off));
        if (!active) continue;
        float s = dsf_fmt_quant_scale(K, m);
        if (F == DSF_FMT_WRONG) s *= 2.0f;
        if (l == 0) scales[r * nb + b] = dsf_fmt_scale_byte(K, s);
        int skip = F == DSF_FMT_SKIP_LAST && r == rows - 1 && b == nb - 1;
        for (int k = 0; k < per_lane; k++) {
            int it = l + k * lanes;
            if (skip && it == items - 1) continue;
            if (K == DSF_QUANT_FP8) {
                codes[r * n + b * blk + it] = dsf_fmt_quant_code(K, dsf_bf16_to_f32(xb[it]), s);
            } else {
                uint8_t lo = dsf_fmt_quant_code(K, dsf_bf16_to_f32(xb[2 * it]), s);
                uint8_t hi = dsf_fmt_quant_code(K, dsf_bf16_to_f32(xb[2 * it + 1]), s);
                codes[(r * n + b * blk) / 2 + it] = (uint8_t)(lo | hi << 4);
            }
        }
    }
}

#define DSF_FMT_KIND_ROW(K)                                                                                        \
    {                                                                                                              \
        (const void *)block_quant_kernel<K, DSF_FMT_REAL>, (const void *)block_quant_kernel<K, DSF_FMT_SKIP_LAST>, \
            (const void *)block_quant_kernel<K, DSF_FMT_GEOM>, (const void *)block_quant_kernel<K, DSF_FMT_WRONG>, \
            (const void *)block_quant_kernel<K, DSF_FMT_BATCH>                                                     \
    }

static const void *const kernels[3][DSF_FMT_FAULTS] = {
    DSF_FMT_KIND_ROW(DSF_QUANT_FP8),
    DSF_FMT_KIND_ROW(DSF_QUANT_FP4_E8M0),
    DSF_FMT_KIND_ROW(DSF_QUANT_FP4_E4M3),
};

// Lanes must split a block's items (elements, or pairs for fp4) evenly; blk is checked by the caller.
static int check(dsf_quant_kind kind, int blk, const dsf_geom *g, int fault, dsf_err *e) {
    if ((unsigned)kind > DSF_QUANT_FP4_E4M3 || fault < 0 || fault >= DSF_FMT_FAULTS)
        return dsf_fail(e, "block_quant: no kernel for kind %d variant %d", (int)kind, fault);
    if (dsf_fmt_cuda_geom_check(g, "block_quant", e)) return -1;
    int lanes = g->p[1], items = kind == DSF_QUANT_FP8 ? blk : blk / 2;
    if (lanes < 1 || lanes > 32 || (lanes & (lanes - 1)) || (blk > 0 && items % lanes))
        return dsf_fail(e, "block_quant geometry %s: %d lanes, need a power of two up to 32 dividing %d items", g->name,
                        lanes, items);
    return 0;
}

extern "C" int dsf_block_quant_cuda_v(void *stream, const dsf_geom *g, dsf_quant_kind kind, int blk, const uint16_t *x,
                                      uint8_t *codes, uint8_t *scales, int64_t rows, int64_t n, int fault, dsf_err *e) {
    if (dsf_fmt_quant_check(kind, blk, rows, n, e) || check(kind, blk, g, fault, e)) return -1;
    if ((uintptr_t)x % 2) return dsf_fail(e, "block_quant: x is misaligned");
    int rpb = g->p[0], lanes = g->p[1];
    void *args[] = {&x, &codes, &scales, &rows, &n, &blk, &rpb, &lanes};
    return dsf_fmt_cuda_launch(kernels[kind][fault], (rows + rpb - 1) / rpb, g, stream, args, "block_quant", e);
}

extern "C" int dsf_block_quant_cuda(void *stream, const dsf_geom *g, dsf_quant_kind kind, int blk, const uint16_t *x,
                                    uint8_t *codes, uint8_t *scales, int64_t rows, int64_t n, dsf_err *e) {
    return dsf_block_quant_cuda_v(stream, g, kind, blk, x, codes, scales, rows, n, DSF_FMT_REAL, e);
}

extern "C" int dsf_block_quant_cuda_attrs(dsf_quant_kind kind, const dsf_geom *g, int fault, dsf_func_attrs *out,
                                          dsf_err *e) {
    if (check(kind, 0, g, fault, e)) return -1;
    return dsf_cuda_func_attrs(kernels[kind][fault], out, e);
}
