#ifndef DSF_COMPRESS_SGEMM_CUH
#define DSF_COMPRESS_SGEMM_CUH
// The projection's SGEMMs, register-staged (tiles 0, 1; sliced decode) or double-buffered (2, 3): the same fma chains.
#include "kern/compress/compress_emit.cuh"

// Finishes one projected value (APE for scores) and stores it in ws and, on the fused path, in the ring.
__device__ static void store_proj(const dsf_cmp_layer &L, const dsf_cmp_batch &b, float *ws, int O, int64_t row, int o,
                                  float v, int fault, int to_ring) {
    int C = dsf_cmp_channels_dev(L), s = seg_of(b, row);
    int64_t p = b.pos[s] + (row - b.row0[s]);
    if (o >= C && L.w.ape && fault != DSF_CMP_NO_APE) v = DSF_CMP_ADD(v, L.w.ape[(p % L.ratio) * C + (o - C)]);
    ws[row * O + o] = v;
    if (to_ring) b.ring[s][(size_t)(p & (L.cap - 1)) * 2 * C + o] = v;
}

// Calls f(i, j, row, o) for a GEMM thread's 8x8 outputs: two 4-wide halves of its rows and of its columns.
template <int BM, int BN, class F>
__device__ __forceinline__ static void each_out(int64_t r0, int o0, int tx, int ty, F f) {
#pragma unroll
    for (int i = 0; i < 8; i++)
#pragma unroll
        for (int j = 0; j < 8; j++)
            f(i, j, r0 + (i < 4 ? ty * 4 + i : BM / 2 + ty * 4 + i - 4),
              o0 + (j < 4 ? tx * 4 + j : BN / 2 + tx * 4 + j - 4));
}

// One staged K tile into cmp_gemm_db's 8x8 chains: A rows [k][BM], B columns [k][BN], two 4-wide halves of each.
template <int KT, int BM, int BN>
__device__ __forceinline__ static void tile_fma(const float *As, const float *Bs, int ty, int tx, float (*acc)[8]) {
#pragma unroll
    for (int k = 0; k < KT; k++) {
        float4 a0 = *(const float4 *)&As[k * BM + ty * 4], a1 = *(const float4 *)&As[k * BM + BM / 2 + ty * 4];
        float4 b0 = *(const float4 *)&Bs[k * BN + tx * 4], b1 = *(const float4 *)&Bs[k * BN + BN / 2 + tx * 4];
        float a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
        float w[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
        for (int j = 0; j < 8; j++) // j outer, i back and forth: each fma shares an operand with the one before
#pragma unroll
            for (int h = 0; h < 8; h++) {
                int i = j & 1 ? 7 - h : h;
                acc[i][j] = DSF_CMP_MADD(a[i], w[j], acc[i][j]);
            }
    }
}

// Folds slice sl's chains into the thread's totals (Ts[(i 8 + j) NT], left to right; skip: the control), clears them.
template <int NT>
__device__ __forceinline__ static void fold_slice(float (*acc)[8], float *Ts, int sl, int skip) {
    int keep = !(skip && sl == DSF_CMP_SLICES - 1);
#pragma unroll
    for (int i = 0; i < 8; i++)
#pragma unroll
        for (int j = 0; j < 8; j++) {
            float *t = &Ts[(i * 8 + j) * NT];
            if (sl == 0) *t = acc[i][j];
            else if (keep) *t = DSF_CMP_ADD(*t, acc[i][j]);
            acc[i][j] = 0.0f;
        }
}

// Tiled SGEMM, thread 8x8 in 4-wide halves; K tiles inside a slice, folded left into Ts (SL: slice z into part).
template <int BM, int BN, int KT, bool SL>
__global__ void __launch_bounds__(256, 2) cmp_gemm(dsf_cmp_layer L, dsf_cmp_batch b, float *ws, int fault, int skip,
                                                   float *part) {
    enum { NT = BM * BN / 64, CPR = KT / 8, RA = BM / NT, RB = BN / NT };
    static_assert(BM % NT == 0 && BN % NT == 0, "each thread stages whole rows of both operands");
    if (SL) pdl_launch(); // the sliced path's cmp_fused may launch
    __shared__ __align__(16) float As[KT][BM];
    __shared__ __align__(16) float Bs[KT][BN];
    __shared__ float Ts[64][NT];
    int O = dsf_cmp_proj_outputs_dev(L), C = dsf_cmp_channels_dev(L), D = L.dim, per = D / DSF_CMP_SLICES / KT;
    static_assert(BN == 64, "a warp is 8 column groups by 4 row groups");
    // Lanes l and l ^ 1 share a row group, l and l ^ 2 a column group: each 16-byte shared load returns in 2 passes.
    int tid = threadIdx.x, l = tid & 31;
    int pt = (tid & ~31) | (l & 1) | (l >> 1 & 2) | (l >> 2 & 4) | (l << 2 & 8) | (l << 1 & 16);
    int tx = pt & 7, ty = pt >> 3;
    int64_t r0 = (int64_t)blockIdx.y * BM;
    int o0 = blockIdx.x * BN, sl0 = SL ? (int)blockIdx.z : 0, sl1 = SL ? sl0 + 1 : DSF_CMP_SLICES;
    int64_t kb = (int64_t)sl0 * per * KT, kend = SL ? per * KT : D;
    const uint16_t *pa[RA], *pb[RB];
    uint4 ra[RA][CPR], rb[RB][CPR];
#pragma unroll
    for (int v = 0; v < RA; v++) {
        int64_t row = r0 + tid + v * NT;
        pa[v] = b.x + (row < b.rows ? row : b.rows - 1) * D + kb;
    }
#pragma unroll
    for (int v = 0; v < RB; v++) {
        int o = o0 + tid + v * NT;
        o = o < O ? o : O - 1;
        pb[v] = dsf_cmp_proj_row(L, o, C, D) + kb;
    }
    float acc[8][8];
#pragma unroll
    for (int i = 0; i < 8; i++)
#pragma unroll
        for (int j = 0; j < 8; j++) acc[i][j] = 0.0f;
#pragma unroll
    for (int u = 0; u < CPR; u++) {
#pragma unroll
        for (int v = 0; v < RA; v++) ra[v][u] = *(const uint4 *)(pa[v] + 8 * u);
#pragma unroll
        for (int v = 0; v < RB; v++) rb[v][u] = __ldg((const uint4 *)(pb[v] + 8 * u));
    }
    for (int sl = sl0; sl < sl1; sl++) {
        for (int t = 0; t < per; t++) {
            float f[8];
#pragma unroll
            for (int u = 0; u < CPR; u++) {
#pragma unroll
                for (int v = 0; v < RA; v++) {
                    bf16x8(ra[v][u], f);
#pragma unroll
                    for (int k = 0; k < 8; k++) As[u * 8 + k][tid + v * NT] = f[k];
                }
#pragma unroll
                for (int v = 0; v < RB; v++) {
                    bf16x8(rb[v][u], f);
#pragma unroll
                    for (int k = 0; k < 8; k++) Bs[u * 8 + k][tid + v * NT] = f[k];
                }
            }
            __syncthreads();
            int64_t kn = ((int64_t)(sl - sl0) * per + t + 1) * KT;
            if (kn < kend) {
#pragma unroll
                for (int u = 0; u < CPR; u++) {
#pragma unroll
                    for (int v = 0; v < RA; v++) ra[v][u] = *(const uint4 *)(pa[v] + kn + 8 * u);
#pragma unroll
                    for (int v = 0; v < RB; v++) rb[v][u] = __ldg((const uint4 *)(pb[v] + kn + 8 * u));
                }
            }
#pragma unroll
            for (int k = 0; k < KT; k++) { // in place (through tile_fma it compiled slower); i outer, j back and forth
                float4 a0 = *(const float4 *)&As[k][ty * 4], a1 = *(const float4 *)&As[k][BM / 2 + ty * 4];
                float4 b0 = *(const float4 *)&Bs[k][tx * 4], b1 = *(const float4 *)&Bs[k][BN / 2 + tx * 4];
                float a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
                float w[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
                for (int i = 0; i < 8; i++)
#pragma unroll
                    for (int h = 0; h < 8; h++) {
                        int j = i & 1 ? 7 - h : h;
                        acc[i][j] = DSF_CMP_MADD(a[i], w[j], acc[i][j]);
                    }
            }
            __syncthreads();
        }
        if (SL) {
            each_out<BM, BN>(r0, o0, tx, ty, [&](int i, int j, int64_t row, int o) {
                if (row < b.rows && o < O) part[((int64_t)sl * b.rows + row) * O + o] = acc[i][j];
            });
            return;
        }
        fold_slice<NT>(acc, &Ts[0][tid], sl, skip);
    }
    each_out<BM, BN>(r0, o0, tx, ty, [&](int i, int j, int64_t row, int o) {
        if (row < b.rows && o < O) store_proj(L, b, ws, O, row, o, Ts[i * 8 + j][tid], fault, 0);
    });
}

// Prefill SGEMM, a BM x BM tile of BM*BM/64 threads (8x8 outputs each); K tiles double-buffered, one barrier a tile.
template <int BM, int KT>
__global__ void __launch_bounds__(256, 2)
    cmp_gemm_db(dsf_cmp_layer L, dsf_cmp_batch b, float *ws, int fault, int skip) {
    enum { NT = BM * BM / 64, CPR = KT / 8, Q = 2 * BM * CPR / NT, WX = BM / 64, TILE = KT * BM };
    static_assert(NT <= 256 && Q >= 1 && Q * NT == 2 * BM * CPR && BM * CPR % 32 == 0,
                  "whole vectors, an operand a warp");
    extern __shared__ __align__(16) float gsm[]; // [buffer][operand][KT][BM] staged K tiles, then Ts [64][NT]
    float *Ts = gsm + 4 * TILE;
    int O = dsf_cmp_proj_outputs_dev(L), C = dsf_cmp_channels_dev(L), D = L.dim, per = D / DSF_CMP_SLICES / KT;
    // The lanes interleave as in cmp_gemm; warp w takes row groups (w / WX) * 4.. and column groups (w % WX) * 8..
    int tid = threadIdx.x, l = tid & 31, w = tid >> 5;
    int pt = (l & 1) | (l >> 1 & 2) | (l >> 2 & 4) | (l << 2 & 8) | (l << 1 & 16);
    int tx = w % WX * 8 + (pt & 7), ty = w / WX * 4 + (pt >> 3);
    int64_t r0 = (int64_t)blockIdx.y * BM;
    int o0 = blockIdx.x * BM;
    const uint16_t *src[Q];
    int dst[Q];
    uint4 rv[Q];
#pragma unroll
    for (int q = 0; q < Q; q++) { // vector i: operand i / (BM CPR), its row (or output) and which 8 of the K tile
        int i = tid + q * NT, op = i >= BM * CPR, j = i - op * BM * CPR, r = j % BM, u = j / BM;
        if (op) {
            int o = o0 + r < O ? o0 + r : O - 1;
            src[q] = dsf_cmp_proj_row(L, o, C, D) + 8 * u;
        } else {
            src[q] = b.x + (r0 + r < b.rows ? r0 + r : b.rows - 1) * D + 8 * u;
        }
        dst[q] = op * TILE + 8 * u * BM + r;
    }
    auto load = [&](int t) {
#pragma unroll
        for (int q = 0; q < Q; q++) rv[q] = __ldg((const uint4 *)(src[q] + (int64_t)t * KT));
    };
    auto stage = [&](int buf) {
#pragma unroll
        for (int q = 0; q < Q; q++) {
            float f[8];
            bf16x8(rv[q], f);
#pragma unroll
            for (int k = 0; k < 8; k++) gsm[buf * 2 * TILE + dst[q] + k * BM] = f[k];
        }
    };
    float acc[8][8];
#pragma unroll
    for (int i = 0; i < 8; i++)
#pragma unroll
        for (int j = 0; j < 8; j++) acc[i][j] = 0.0f;
    load(0);
    stage(0);
    __syncthreads();
    for (int sl = 0, t = 0; sl < DSF_CMP_SLICES; sl++) {
        for (int e = 0; e < per; e++, t++) {
            int more = t + 1 < per * DSF_CMP_SLICES;
            if (more) load(t + 1);
            const float *As = gsm + (t & 1) * 2 * TILE;
            tile_fma<KT, BM, BM>(As, As + TILE, ty, tx, acc);
            if (more) stage((t + 1) & 1);
            __syncthreads();
        }
        fold_slice<NT>(acc, Ts + tid, sl, skip);
    }
    each_out<BM, BM>(r0, o0, tx, ty, [&](int i, int j, int64_t row, int o) {
        if (row < b.rows && o < O) store_proj(L, b, ws, O, row, o, Ts[(i * 8 + j) * NT + tid], fault, 0);
    });
}

// Dynamic shared memory cmp_gemm_db<BM, KT> takes: two buffers of both operands' K tiles, and the slice totals.
__host__ __device__ constexpr int gemm_db_smem(int bm, int kt) { return 4 * (4 * kt * bm + bm * bm); }
#endif
