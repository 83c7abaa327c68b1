#ifndef DSF_COMPRESS_KEYS_CUH
#define DSF_COMPRESS_KEYS_CUH
// Prefill index keys of V4.1 owners, KE entries a block: wk is read once for all of them, each key the same steps.
#include "kern/compress/compress_emit.cuh"

// Whether token p of segment s emits entry j (by the fault's rule); -1 when it does not.
__device__ static int64_t emitted_at(const dsf_cmp_layer &L, const dsf_cmp_batch &b, int s, int64_t p, int fault) {
    int late = fault == DSF_CMP_LATE;
    int64_t j = dsf_cmp_emits(L.ratio, p, late);
    if (j < 0 || (late && (j < b.j0[s] || (L.ratio == 1 && j < b.pos[s])))) return -1;
    return j;
}

// Entry slot e of segment s: entry floor(p0/r) - 1 + e if a token of the call emits it (*row: that token's row).
__device__ static int prefill_entry_at(const dsf_cmp_layer &L, const dsf_cmp_batch &b, int fault, int s, int64_t e,
                                       int64_t *j, int64_t *row) {
    int r = L.ratio;
    int64_t p0 = b.pos[s], len = b.row0[s + 1] - b.row0[s];
    *j = p0 / r - 1 + e;
    int64_t p = *j * r + r - 1 + (fault == DSF_CMP_LATE ? 1 : 0);
    *row = b.row0[s] + (p - p0);
    return *j >= 0 && p >= p0 && p < p0 + len && emitted_at(L, b, s, p, fault) == *j;
}

// Entries a block, its warps, outputs a warp takes at a time (KO x KE = 32 pairs, one a lane when folding).
enum { KE = 8, KW = 4, KO = 4, KMS = DSF_CMP_MAX_D / DSF_CMP_SLICES, KXS = KMS + 4 };
static_assert(KO * KE == 32, "a lane folds one (output, entry) pair");

typedef struct key_smem {
    float x[KE][DSF_CMP_SLICES][KXS]; // latents by slice, a stride of 5 16-byte vectors: no bank conflicts
    float part[KW][32][DSF_CMP_SLICES + 1];
    float k[KE][DSF_CMP_MAX_IK];
    float sl[KW][DSF_CMP_SLICES], qs[KW][DSF_CMP_MAX_IK / 16], inv[KW];
    float2 cs[KW][DSF_CMP_ROPE_DIM / 2];
    int64_t j[KE], row[KE];
    int ok[KE];
} key_smem;

// Slice partials of outputs o0..o0+KO-1 for the KE latents into part: lane = slice, each a chain from zero in order.
__device__ static void key_partials(const dsf_cmp_layer &L, int o0, int vec, key_smem &sm) {
    int d = L.d, S = d / DSF_CMP_SLICES, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (vec) {
        float wf[KO][KMS];
#pragma unroll
        for (int u = 0; u < KO; u++)
#pragma unroll
            for (int k = 0; k < KMS; k += 8) {
                uint4 w = o0 + u < L.ik && k < S ? __ldg((const uint4 *)(L.w.wk + (size_t)(o0 + u) * d + lane * S + k))
                                                 : make_uint4(0, 0, 0, 0);
                bf16x8(w, wf[u] + k);
            }
#pragma unroll 2
        for (int e = 0; e < KE; e++) {
            float x[KMS];
#pragma unroll
            for (int k = 0; k < KMS; k += 4) *(float4 *)(x + k) = *(const float4 *)&sm.x[e][lane][k];
#pragma unroll
            for (int u = 0; u < KO; u++) {
                float p = 0.0f;
#pragma unroll
                for (int k = 0; k < KMS; k++)
                    if (k < S) p = DSF_CMP_MADD(x[k], wf[u][k], p);
                sm.part[warp][u * KE + e][lane] = p;
            }
        }
        return;
    }
    for (int u = 0; u < KO && o0 + u < L.ik; u++) { // unaligned or short slices: the same FMAs, bf16 read one at a time
        const uint16_t *w = L.w.wk + (size_t)(o0 + u) * d + lane * S;
        for (int e = 0; e < KE; e++) {
            float p = 0.0f;
            for (int k = 0; k < S; k++) p = DSF_CMP_MADD(sm.x[e][lane][k], dsf_bf16_to_f32(w[k]), p);
            sm.part[warp][u * KE + e][lane] = p;
        }
    }
}

// Key of entry e from sm.k[e] by one warp, as emit_finish's key step: k_norm, RoPE at j r, FP4 QDQ (E8M0, 32).
__device__ static void key_finish(const dsf_cmp_layer &L, const dsf_cmp_batch &b, int s, int e, int fault,
                                  key_smem &sm) {
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, n = L.ik;
    float *v = sm.k[e];
    cmp_warp tm;
    team_inv_rms(tm, v, n, L.eps, sm.sl[warp], &sm.inv[warp]);
    for (int c = lane; c < n; c += 32) v[c] = dsf_cmp_norm_elem(v[c], sm.inv[warp], L.w.k_norm[c]);
    static_assert(DSF_CMP_ROPE_DIM / 2 == 32, "a lane computes one RoPE pair's cosine and sine");
    float a = dsf_cmp_rope_angle(sm.j[e] * L.ratio, L.freq[lane]);
    sm.cs[warp][lane] = make_float2(cosf(a), sinf(a));
    __syncwarp();
    finish_dev(tm, v, sm.qs[warp], n, sm.cs[warp], 1, 32, 0, fault);
    uint16_t *out = b.ik[s] + (size_t)(sm.j[e] - b.j0[s]) * n;
    for (int c = lane; c < n; c += 32) out[c] = dsf_bf16_from_f32(v[c]);
}

// Block (s, g): index keys of entry slots g KE .. g KE + KE - 1 of segment s, from the latents cmp_emit left in lat.
__global__ void __launch_bounds__(KW * 32) cmp_keys(dsf_cmp_layer L, dsf_cmp_batch b, const float *lat, int fault) {
    __shared__ __align__(16) key_smem sm;
    int d = L.d, S = d / DSF_CMP_SLICES, t = threadIdx.x, lane = t & 31, warp = t >> 5, s = blockIdx.x, any = 0;
    if (t < KE) {
        int64_t j, row;
        sm.ok[t] = prefill_entry_at(L, b, fault, s, (int64_t)blockIdx.y * KE + t, &j, &row);
        sm.j[t] = j, sm.row[t] = row;
    }
    __syncthreads();
    for (int e = 0; e < KE; e++) any |= sm.ok[e];
    if (!any) return;
    for (int i = t; i < KE * d; i += blockDim.x) {
        int e = i / d, c = i - e * d;
        sm.x[e][c / S][c % S] = sm.ok[e] ? __ldcg(lat + sm.row[e] * d + c) : 0.0f;
    }
    __syncthreads();
    int vec = S % 8 == 0 && ((uintptr_t)L.w.wk & 15) == 0;
    for (int o0 = warp * KO; o0 < L.ik; o0 += KW * KO) {
        key_partials(L, o0, vec, sm);
        __syncwarp();
        int u = lane / KE, e = lane % KE; // the fold of emit_finish's index_key: slices left to right
        float tot = sm.part[warp][lane][0];
#pragma unroll
        for (int i = 1; i < DSF_CMP_SLICES; i++) tot = DSF_CMP_ADD(tot, sm.part[warp][lane][i]);
        if (o0 + u < L.ik) sm.k[e][o0 + u] = dsf_bf16_round(tot);
        __syncwarp();
    }
    __syncthreads();
    for (int e = warp; e < KE; e += KW)
        if (sm.ok[e]) key_finish(L, b, s, e, fault, sm);
}

#endif
