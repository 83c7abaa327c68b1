#ifndef DSF_ENGRAM_WG_CUH
#define DSF_ENGRAM_WG_CUH
// sm_90a pieces of the engram_wkv kernel: mbarriers, bulk tensor copies, operand descriptors, fp8 wgmma, stores.
#include <cuda.h>

#include "kern/cuda_check.h"
#include "kern/engram/engram_internal.h"

// An atom: 128 bytes of K (4 blocks), one row of the 128-byte swizzle; the unit of every tensor copy here.
#define ENG_ATOM 128

// dsf_e8m0_to_f32 without branches (selects), so the scale loads before it are not serialised behind them.
__device__ __forceinline__ float eng_e8m0(uint32_t b) {
    b &= 0xFFu;
    uint32_t bits = b == 0 ? 0x00400000u : b << 23;
    return __uint_as_float(b == 0xFFu ? 0x7FC00000u : bits);
}

// Two outputs as one 4-byte word of bf16 (a first), each rounded as eng_store rounds it.
__device__ __forceinline__ uint32_t eng_bf16x2(float a, float b) {
    return dsf_bf16_from_f32(a) | (uint32_t)dsf_bf16_from_f32(b) << 16;
}

// Output (token t, row n); the skip control never writes the last row's last output.
__device__ __forceinline__ void eng_store(uint16_t *y, int64_t T, int64_t N, int64_t t, int64_t n, float v, int fault) {
    if (t >= T || n >= N || (fault == DSF_ENG_SKIP && t == T - 1 && n == N - 1)) return;
    y[t * N + n] = dsf_bf16_from_f32(v);
}

// Outputs (t, n) and (t, n + 1): one 4-byte store where both exist and it is aligned, else one at a time.
__device__ __forceinline__ void eng_store2(uint16_t *y, int64_t T, int64_t N, int64_t t, int64_t n, float a, float b,
                                           int fault) {
    uint16_t *at = y + t * N + n;
    if (t < T && n + 1 < N && ((uintptr_t)at & 3) == 0 && fault != DSF_ENG_SKIP) {
        *(uint32_t *)at = eng_bf16x2(a, b);
        return;
    }
    eng_store(y, T, N, t, n, a, fault);
    eng_store(y, T, N, t, n + 1, b, fault);
}

// An accumulator tile (m64nN fragments hold n8 tiles of this shape): rows n, n+8 (weights) by columns t, t+1 (tokens).
__device__ __forceinline__ void eng_store_tile(uint16_t *y, int64_t T, int64_t N, int64_t t, int64_t n,
                                               const float a[4], int fault) {
    eng_store(y, T, N, t, n, a[0], fault);
    eng_store(y, T, N, t + 1, n, a[1], fault);
    eng_store(y, T, N, t, n + 8, a[2], fault);
    eng_store(y, T, N, t + 1, n + 8, a[3], fault);
}

__device__ __forceinline__ uint32_t eng_smem(const void *p) {
    return (uint32_t)__cvta_generic_to_shared(p);
}

__device__ __forceinline__ void eng_mbar_init(uint64_t *b, int count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(eng_smem(b)), "r"(count) : "memory");
}

// Thread 0 sets up a ring's full and empty barriers with their arrival counts; then the whole block syncs.
__device__ __forceinline__ void eng_ring_init(uint64_t *full, uint64_t *empty, int stages, int n_full, int n_empty) {
    if (threadIdx.x == 0) {
        for (int s = 0; s < stages; s++) eng_mbar_init(&full[s], n_full), eng_mbar_init(&empty[s], n_empty);
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
}

// Waits until the phase of parity `parity` of barrier b has completed; a try_wait may suspend the warp up to NS ns.
template <int NS = 0> __device__ __forceinline__ void eng_mbar_wait(uint64_t *b, int parity) {
    uint32_t done;
    do {
        if constexpr (NS)
            asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2, %3;\n"
                         "selp.u32 %0, 1, 0, p;\n}\n"
                         : "=r"(done)
                         : "r"(eng_smem(b)), "r"(parity), "n"(NS)
                         : "memory");
        else
            asm volatile(
                "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                : "=r"(done)
                : "r"(eng_smem(b)), "r"(parity)
                : "memory");
    } while (!done);
}

// The tokens-as-A kernels' waits: a warp sleeps up to 1 ms (it resumes when the phase completes) instead of spinning.
#define ENG_SLEEP_NS 1000000

// Four e8m0 bytes as floats (byte j to f[j]): one shift each unless a byte is 0 or 255, which eng_e8m0 maps.
__device__ __forceinline__ void eng_e8m0x4(uint32_t v, float (&f)[4]) {
    uint32_t zero = (v - 0x01010101u) & ~v & 0x80808080u, full = (~v - 0x01010101u) & v & 0x80808080u;
    if (zero | full) {
#pragma unroll
        for (int j = 0; j < 4; j++) f[j] = eng_e8m0(v >> 8 * j);
        return;
    }
    f[0] = __uint_as_float(v << 23 & 0x7F800000u), f[1] = __uint_as_float(v << 15 & 0x7F800000u);
    f[2] = __uint_as_float(v << 7 & 0x7F800000u), f[3] = __uint_as_float(v >> 1 & 0x7F800000u);
}

__device__ __forceinline__ void eng_mbar_arrive(uint64_t *b) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(eng_smem(b)) : "memory");
}

__device__ __forceinline__ void eng_mbar_expect(uint64_t *b, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(eng_smem(b)), "r"(bytes) : "memory");
}

// Box (x bytes along K, y rows) of a 2D tensor map into shared memory; completes on barrier b.
__device__ __forceinline__ void eng_tma(void *dst, const CUtensorMap *m, int x, int y, uint64_t *b) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], "
                 "[%4];\n" ::"r"(eng_smem(dst)),
                 "l"((uint64_t)m), "r"(x), "r"(y), "r"(eng_smem(b))
                 : "memory");
}

// The L2 policy of eng_tma_w's weight boxes read once: their lines are evicted before others.
__device__ __forceinline__ uint64_t eng_evict_first() {
    uint64_t p;
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(p));
    return p;
}

// A weight box: under pol (eng_evict_first) where there is one token tile (read once per call), else plain.
__device__ __forceinline__ void eng_tma_w(void *dst, const CUtensorMap *m, int x, int y, uint64_t *b, uint64_t pol,
                                          bool once) {
    if (!once) return eng_tma(dst, m, x, y, b);
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], "
                 "[%1, {%2, %3}], [%4], %5;\n" ::"r"(eng_smem(dst)),
                 "l"((uint64_t)m), "r"(x), "r"(y), "r"(eng_smem(b)), "l"(pol)
                 : "memory");
}

// K-major operand in 128-byte swizzle: 8-row atoms 1024 bytes apart; a K offset is added to the start address.
__device__ __forceinline__ uint64_t eng_desc(const void *p) {
    return (uint64_t)((eng_smem(p) & 0x3FFFF) >> 4) | (1ull << 16) | (64ull << 32) | (1ull << 62);
}

__device__ __forceinline__ void eng_wg_fence() {
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void eng_wg_commit() {
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int N> __device__ __forceinline__ void eng_wg_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// After a wait: the compiler must read the accumulators only from here on.
template <int R> __device__ __forceinline__ void eng_wg_hold(float (&d)[R]) {
#pragma unroll
    for (int i = 0; i < R; i++) asm volatile("" : "+f"(d[i]));
}

// Operand lists of the wgmma below, four accumulators at a time: asm names %0.. (ENG_N) and bindings d[0].. (ENG_F).
#define ENG_Q4(a, b, c, e) "%" #a ", %" #b ", %" #c ", %" #e
#define ENG_G4(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3])
#define ENG_N4 ENG_Q4(0, 1, 2, 3)
#define ENG_N8 ENG_N4 ", " ENG_Q4(4, 5, 6, 7)
#define ENG_N16 ENG_N8 ", " ENG_Q4(8, 9, 10, 11) ", " ENG_Q4(12, 13, 14, 15)
#define ENG_N28 ENG_N16 ", " ENG_Q4(16, 17, 18, 19) ", " ENG_Q4(20, 21, 22, 23) ", " ENG_Q4(24, 25, 26, 27)
#define ENG_N32 ENG_N28 ", " ENG_Q4(28, 29, 30, 31)
#define ENG_N44 ENG_N32 ", " ENG_Q4(32, 33, 34, 35) ", " ENG_Q4(36, 37, 38, 39) ", " ENG_Q4(40, 41, 42, 43)
#define ENG_N52 ENG_N44 ", " ENG_Q4(44, 45, 46, 47) ", " ENG_Q4(48, 49, 50, 51)
#define ENG_N56 ENG_N52 ", " ENG_Q4(52, 53, 54, 55)
#define ENG_N64 ENG_N56 ", " ENG_Q4(56, 57, 58, 59) ", " ENG_Q4(60, 61, 62, 63)
#define ENG_F4 ENG_G4(0)
#define ENG_F8 ENG_F4, ENG_G4(4)
#define ENG_F16 ENG_F8, ENG_G4(8), ENG_G4(12)
#define ENG_F28 ENG_F16, ENG_G4(16), ENG_G4(20), ENG_G4(24)
#define ENG_F32 ENG_F28, ENG_G4(28)
#define ENG_F52 ENG_F32, ENG_G4(32), ENG_G4(36), ENG_G4(40), ENG_G4(44), ENG_G4(48)
#define ENG_F56 ENG_F52, ENG_G4(52)
#define ENG_F64 ENG_F56, ENG_G4(56), ENG_G4(60)

// d = A (64 rows x 32 codes) * B (N rows x 32 codes)^T, fresh (scale-d 0, %P); d is %0.., the descriptors %A and %B.
#define ENG_WGMMA(N, R, A, B, P)                                                                                       \
    __device__ __forceinline__ void eng_wgmma(float(&d)[R], uint64_t a, uint64_t b) {                                  \
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" #P ", 0;\n"                                                  \
                     "wgmma.mma_async.sync.aligned.m64n" #N "k32.f32.e4m3.e4m3 {" ENG_N##R "}, %" #A ", %" #B          \
                     ", p, 1, 1;\n}\n"                                                                                 \
                     : ENG_F##R                                                                                        \
                     : "l"(a), "l"(b), "r"(0));                                                                        \
    }
ENG_WGMMA(8, 4, 4, 5, 6)
ENG_WGMMA(16, 8, 8, 9, 10)
ENG_WGMMA(32, 16, 16, 17, 18)
ENG_WGMMA(56, 28, 28, 29, 30)
ENG_WGMMA(64, 32, 32, 33, 34)
ENG_WGMMA(104, 52, 52, 53, 54)
ENG_WGMMA(112, 56, 56, 57, 58)
ENG_WGMMA(128, 64, 64, 65, 66)

// Host: a tensor map of rows x K bytes read in boxes of 128 bytes x box_rows, 128-byte swizzle (engram_wkv.cu).
int dsf_eng_tmap(CUtensorMap *m, const void *p, int64_t rows, int64_t K, int box_rows, const char *what, dsf_err *e);

// Host: the launch checks both kernels share, then their tensor maps; -1 on error, 1 when there are no tokens.
int dsf_eng_prep(const dsf_geom *g, long need, const uint8_t *xq, const uint8_t *w, int64_t T, int64_t N, int64_t K,
                 int x_rows, int w_rows, CUtensorMap *mx, CUtensorMap *mw, dsf_err *e);

// Host: the tokens-as-A kernel of engram_wkv_t.cu (geometry kind 4): its function, or its checks and launch.
const void *dsf_eng_wgt_fn(const dsf_geom *g);
int dsf_eng_wgt_launch(void *stream, const dsf_geom *g, const uint8_t *xq, const uint8_t *xs, const uint8_t *w,
                       const uint8_t *ws, uint16_t *y, int64_t T, int64_t N, int64_t K, int fault, dsf_err *e);

#endif
