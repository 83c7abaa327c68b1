#ifndef DSF_ENGRAM_MMA_CUH
#define DSF_ENGRAM_MMA_CUH
// Device pieces shared by the engram_wkv kernels: e4m3 as f16 fragments, the two-mma block product, promotion, stores.
#include "kern/cuda_check.h"
#include "kern/engram/engram_internal.h"

// Four e4m3 codes (bytes 0..3 of v) as two f16 pairs: lo = bytes 0, 1; hi = bytes 2, 3 (exact: f16 holds every e4m3).
__device__ __forceinline__ void eng_f16x4(uint32_t v, uint32_t &lo, uint32_t &hi) {
    asm("{\n.reg .b16 a, b;\nmov.b32 {a, b}, %2;\ncvt.rn.f16x2.e4m3x2 %0, a;\ncvt.rn.f16x2.e4m3x2 %1, b;\n}\n"
        : "=r"(lo), "=r"(hi)
        : "r"(v));
}

// A token's 8 codes of a block (bytes 8q..8q+7) as the B fragments of the block's two mma: {b0, b1} then {b2, b3}.
__device__ __forceinline__ void eng_bfrag(uint2 x, uint32_t b[4]) {
    eng_f16x4(x.x, b[0], b[1]);
    eng_f16x4(x.y, b[2], b[3]);
}

__device__ __forceinline__ void eng_hmma(float d[4], const uint32_t a[4], uint32_t b0, uint32_t b1, const float c[4]) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%10,%11,%12,%13};\n"
                 : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "f"(c[0]), "f"(c[1]), "f"(c[2]),
                   "f"(c[3]));
}

// Weight rows g, g+8 (lo, hi), bytes 8q..8q+7 of a block, as the A fragments of its two mma (slots 2q, 2q+8 first).
__device__ __forceinline__ void eng_afrag(uint2 lo, uint2 hi, uint32_t a[8]) {
    eng_f16x4(lo.x, a[0], a[2]);
    eng_f16x4(hi.x, a[1], a[3]);
    eng_f16x4(lo.y, a[4], a[6]);
    eng_f16x4(hi.y, a[5], a[7]);
}

// One block's exact-input product (C = 0): bytes 8q..8q+3 of both operands in the first mma, 8q+4..8q+7 in the second.
__device__ __forceinline__ void eng_block(const uint32_t a[8], const uint32_t b[4], float d[4]) {
    const float z[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    eng_hmma(d, a, b[0], b[1], z);
    eng_hmma(d, a + 4, b[2], b[3], d);
}

// dsf_e8m0_to_f32 without branches (selects), so the scale loads before it are not serialised behind them.
__device__ __forceinline__ float eng_e8m0(uint32_t b) {
    b &= 0xFFu;
    uint32_t bits = b == 0 ? 0x00400000u : b << 23;
    return __uint_as_float(b == 0xFFu ? 0x7FC00000u : bits);
}

// Promotion of one block's product: acc = fma(d, sa*sw, acc) (columns = tokens 2q, 2q+1); sa*sw is exact.
__device__ __forceinline__ void eng_promote(float acc[4], const float d[4], float sa0, float sa1, float sw) {
    float s0 = __fmul_rn(sa0, sw), s1 = __fmul_rn(sa1, sw);
    acc[0] = __fmaf_rn(d[0], s0, acc[0]);
    acc[1] = __fmaf_rn(d[1], s1, acc[1]);
    acc[2] = __fmaf_rn(d[2], s0, acc[2]);
    acc[3] = __fmaf_rn(d[3], s1, acc[3]);
}

// Output (token t, row n); the skip control never writes the last row's last output.
__device__ __forceinline__ void eng_store(uint16_t *y, int64_t T, int64_t N, int64_t t, int64_t n, float v, int fault) {
    if (t >= T || n >= N || (fault == DSF_ENG_SKIP && t == T - 1 && n == N - 1)) return;
    y[t * N + n] = dsf_bf16_from_f32(v);
}

// An m16n8 accumulator tile: rows n, n+8 (weights) by columns t, t+1 (tokens).
__device__ __forceinline__ void eng_store_tile(uint16_t *y, int64_t T, int64_t N, int64_t t, int64_t n,
                                               const float a[4], int fault) {
    eng_store(y, T, N, t, n, a[0], fault);
    eng_store(y, T, N, t + 1, n, a[1], fault);
    eng_store(y, T, N, t, n + 8, a[2], fault);
    eng_store(y, T, N, t + 1, n + 8, a[3], fault);
}

__device__ __forceinline__ void eng_cp16(void *smem, const void *gmem, int bytes) {
    unsigned d = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(gmem), "r"(bytes));
}

// Stages of a warp's ring in the decode kernels, and a ring's bytes: stages x blocks x weight rows x 32.
#define ENG_DS 4
#define ENG_RING_BYTES(ROWS, U) (ENG_DS * (U) * (ROWS) * 32)

typedef void (*wkv_fn)(const uint8_t *, const uint8_t *, const uint8_t *, const uint8_t *, uint16_t *, int64_t,
                       int64_t, int64_t, int);

// The narrow decode kernel of engram_wkv_decode.cu for a geometry of kind 2, or NULL.
wkv_fn dsf_eng_decode_fn(const dsf_geom *g);

#endif
