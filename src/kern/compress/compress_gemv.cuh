#ifndef DSF_COMPRESS_GEMV_CUH
#define DSF_COMPRESS_GEMV_CUH
// The fused decode's projection: a warp an output, a lane one K slice's in-order chain, x staged by the block.
#include "kern/compress/compress_emit.cuh"

enum { WP = DSF_CMP_GEMV_WP };

// Dynamic shared memory the staged GEMV needs for nw warps and slices of S elements (0: it cannot serve S).
__host__ __device__ inline int gemv_stage_bytes(int nw, int S) {
    int s8 = S / 8, p = (s8 + 1) / 2;
    return S % 8 || p > WP ? 0 : nw * DSF_CMP_SLICES * (p | 1) * 16;
}

// GEMV of output o (warp), rows t0..t0+nr-1, lane = one K slice: weights double-buffered, x staged by the whole block.
__device__ static void gemv_rows(const dsf_cmp_batch &b, const uint16_t *w, int D, int S, int64_t t0, int nr,
                                 float *acc, emit_smem &sm) {
    int lane = threadIdx.x & 31, s8 = S / 8, kwp = XS_CAP / (nr * DSF_CMP_SLICES);
    kwp -= !(kwp & 1);
    int kw = (s8 < kwp ? s8 : kwp) / KS * KS;
    kw = kw < KS ? KS : kw;
    uint4 wv[KS], wn[KS];
    load_vecs<KS>(w, 0, S, wv);
    for (int u0 = 0; u0 < s8; u0 += KS) {
        load_vecs<KS>(w, 8 * (u0 + KS), S, wn);
        if (u0 % kw == 0) {
            __syncthreads();
            for (int i = threadIdx.x; i < nr * DSF_CMP_SLICES * kw; i += blockDim.x) {
                int u = i % kw, sl = i / kw % DSF_CMP_SLICES, t = i / (kw * DSF_CMP_SLICES);
                if (u0 + u < s8)
                    sm.u.g.xs[(t * DSF_CMP_SLICES + sl) * kwp + u] = *(const uint4 *)(b.x + (t0 + t) * D + sl * S + 8 * (u0 + u));
            }
            __syncthreads();
        }
        const uint4 *xs = sm.u.g.xs + lane * kwp + u0 % kw; // an odd stride of 16-byte vectors: no bank conflicts
#pragma unroll
        for (int u = 0; u < KS; u++) {
            if (!w || u0 + u >= s8) break;
            float wf[8];
            bf16x8(wv[u], wf);
#pragma unroll
            for (int t = 0; t < TCH; t++) {
                if (t >= nr) break;
                float xf[8];
                bf16x8(xs[t * DSF_CMP_SLICES * kwp + u], xf);
#pragma unroll
                for (int i = 0; i < 8; i++) acc[t] = DSF_CMP_MADD(xf[i], wf[i], acc[t]);
            }
        }
#pragma unroll
        for (int u = 0; u < KS; u++) wv[u] = wn[u];
    }
}

// i / n for 0 <= i < 2^21 and n >= 1 from a reciprocal: (i + 0.5) / n stays 0.5 / n away from every integer.
__device__ __forceinline__ static int small_div(int i, float rn) { return __float2int_rz(((float)i + 0.5f) * rn); }

// Vectors ua..ub-1 of a lane's chains (weights wl[u], row t's x xs[t * 32 * kwp + u]), two vectors' loads at a time.
__device__ __forceinline__ static void gemv_span(const uint4 *xs, const uint4 *wl, int ua, int ub, int kwp, int nr,
                                                 float *acc) {
    enum { G = 2 };
    for (int u = ua; u < ub; u += G) {
        uint4 wv[G];
#pragma unroll
        for (int g = 0; g < G; g++) wv[g] = u + g < ub ? wl[u + g] : make_uint4(0, 0, 0, 0);
#pragma unroll
        for (int t = 0; t < TCH; t++) {
            if (t >= nr) break;
            uint4 xv[G];
#pragma unroll
            for (int g = 0; g < G; g++)
                xv[g] = u + g < ub ? xs[t * DSF_CMP_SLICES * kwp + u + g] : make_uint4(0, 0, 0, 0);
#pragma unroll
            for (int g = 0; g < G; g++) {
                if (u + g >= ub) break;
                float wf[8], xf[8];
                bf16x8(wv[g], wf);
                bf16x8(xv[g], xf);
#pragma unroll
                for (int i = 0; i < 8; i++) acc[t] = DSF_CMP_MADD(xf[i], wf[i], acc[t]);
            }
        }
    }
}

// x vectors u0..u0+kw-1 of every slice of the call's rows into xs at stride kwp, by asynchronous copies.
__device__ static void stage_x_async(const dsf_cmp_batch &b, int D, int S, int64_t t0, int nr, int u0, int kw, int kwp,
                                     int s8, float rkw, emit_smem &sm) {
    for (int i = threadIdx.x; i < nr * DSF_CMP_SLICES * kw; i += blockDim.x) {
        int g = small_div(i, rkw), u = i - g * kw;
        if (u0 + u < s8) cp16a(sm.u.g.xs + g * kwp + u, b.x + (t0 + (g >> 5)) * D + (g & 31) * S + 8 * (u0 + u));
    }
}

// gemv_rows' chains, the weights read coalesced: each slice's halves via ws (copies, then registers); compressor.md.
__device__ static void gemv_staged(const dsf_cmp_batch &b, const uint16_t *row, int D, int S, int64_t t0, int nr,
                                   float *acc, uint4 *ws, emit_smem &sm) {
    int lane = threadIdx.x & 31, s8 = S / 8, p = (s8 + 1) / 2, q = s8 - p, st = p | 1;
    float rp = 1.0f / (float)p, rq = q ? 1.0f / (float)q : 0.0f;
    int kwp = XS_CAP / (nr * DSF_CMP_SLICES);
    kwp -= !(kwp & 1);
    int kw = s8 < kwp ? s8 : kwp;
    float rkw = 1.0f / (float)kw;
    if (row) {
#pragma unroll
        for (int k = 0; k < WP; k++) {
            int i = lane + 32 * k, s = small_div(i, rp);
            if (k < p) cp16a(ws + s * st + i - s * p, row + s * S + 8 * (i - s * p));
        }
    }
    uint4 r[WP];
#pragma unroll
    for (int j = 0; j < WP; j++) {
        int i = lane + 32 * j, s = small_div(i, rq);
        r[j] = row && j < q ? __ldg((const uint4 *)(row + s * S + 8 * (p + i - s * q))) : make_uint4(0, 0, 0, 0);
    }
    for (int u0 = 0; u0 < s8; u0 += kw) {
        __syncthreads(); // xs is free
        stage_x_async(b, D, S, t0, nr, u0, kw, kwp, s8, rkw, sm);
        cp_wait();
        __syncthreads();
        const uint4 *xs = sm.u.g.xs + lane * kwp - u0, *wl = ws + lane * st;
        int ue = u0 + kw < s8 ? u0 + kw : s8;
        if (u0 < p) gemv_span(xs, wl, u0, ue < p ? ue : p, kwp, nr, acc);
        if (ue > p) {
            if (u0 <= p) { // the first half consumed: the second takes its place
                __syncwarp();
#pragma unroll
                for (int j = 0; j < WP; j++) {
                    int i = lane + 32 * j, s = small_div(i, rq);
                    if (j < q) ws[s * st + i - s * q] = r[j];
                }
                __syncwarp();
            }
            gemv_span(xs, wl - p, u0 > p ? u0 : p, ue, kwp, nr, acc);
        }
    }
}

#endif
