#ifndef DSF_COMPRESS_EMIT_WARP_CUH
#define DSF_COMPRESS_EMIT_WARP_CUH
// Prefill emissions, up to EW entries a block pooled by all its warps, a warp finishing each; keys share wk's reads.
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

// Most entries (warps) a block, the pooled tokens a warp holds (more are pooled by cmp_pool), key outputs a pass.
enum { EW = 8, EW_TOK = 16, KO = 2, KMS = DSF_CMP_MAX_D / DSF_CMP_SLICES };
static_assert(KO * EW <= 32 && KMS == 16, "a lane folds one (output, entry) pair; a latent slice is 4 float4");

typedef struct emitw_smem {
    union {
        struct {
            float v[EW][DSF_CMP_MAX_D];  // an entry's values, one warp each
            dsf_cmp_tok tok[EW][EW_TOK]; // its pooled tokens
        } e;
        float part[EW][KO * EW][DSF_CMP_SLICES + 1]; // index keys: slice partials of (output, entry) pairs
    } u;
    float x[EW][DSF_CMP_SLICES][KMS]; // normalised latents by slice, 16-byte chunks swizzled: no bank conflicts
    float k[EW][DSF_CMP_MAX_IK];
    float sl[EW][DSF_CMP_SLICES], qs[EW][DSF_CMP_MAX_D / 16], inv[EW];
    float2 cs[EW][DSF_CMP_ROPE_DIM / 2];
    int64_t j[EW], row[EW]; // an entry's index (-1: none in this slot) and emitting row
    int n[EW];              // its pooled tokens
} emitw_smem;

// Where element k of slice sl sits in its row of x: chunk k / 4 moved by (sl / 2) mod 4.
__device__ __forceinline__ static int xpos(int sl, int k) { return ((k >> 2 ^ sl >> 1) & 3) << 2 | (k & 3); }

// emit_entry's steps by one warp: RMSNorm by nw (values also to lat when given), RoPE at pos, QDQ, bf16 write.
__device__ static void warp_finish(const dsf_cmp_layer &L, float *v, int n, const uint16_t *nw, float (*lat)[KMS],
                                   int64_t pos, int kind, int had, int fault, uint16_t *out, emitw_smem &sm) {
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, S = n / DSF_CMP_SLICES;
    team_inv_rms(cmp_warp(), v, n, L.eps, sm.sl[w], &sm.inv[w]);
    static_assert(DSF_CMP_ROPE_DIM / 2 == 32, "a lane computes one RoPE pair's cosine and sine");
    float a = dsf_cmp_rope_angle(pos, L.freq[lane]);
    sm.cs[w][lane] = make_float2(cosf(a), sinf(a));
    for (int c = lane; (lat || had) && c < n; c += 32) { // the latent's copy, or the Hadamard's input, else nothing
        float x = dsf_cmp_norm_elem(v[c], sm.inv[w], nw[c]);
        if (lat) lat[c / S][xpos(c / S, c % S)] = x;
        if (had) v[c] = x;
    }
    __syncwarp();
    if (!had) { // finish_blocks, the decode's code: 64 values a step, a QDQ block's amax by xor shuffles
        if (kind == 0) finish_blocks<64>(cmp_warp(), v, n, sm.inv[w], nw, NULL, sm.cs[w], kind, fault, out);
        else if (kind == 1) finish_blocks<32>(cmp_warp(), v, n, sm.inv[w], nw, NULL, sm.cs[w], kind, fault, out);
        else finish_blocks<16>(cmp_warp(), v, n, sm.inv[w], nw, NULL, sm.cs[w], kind, fault, out);
        return;
    }
    finish_dev(cmp_warp(), v, sm.qs[w], n, sm.cs[w], kind, dsf_cmp_quant_blk(kind), had, fault);
    for (int c = lane; c < n; c += 32) out[c] = dsf_bf16_from_f32(v[c]);
}

// Channels c0 + h cs (h < CH, below c1) over n <= NT tokens, all loads first: dsf_cmp_pool's operations in its order.
template <int NT, int CH>
__device__ static void pool_lane(const dsf_cmp_tok *tok, int n, int C, int c0, int cs, int c1, int wide, float *out) {
    float sc[CH][NT], kv[CH][NT];
#pragma unroll
    for (int h = 0; h < CH; h++)
#pragma unroll
        for (int i = 0; i < NT; i++) {
            int iv = wide ? n - 1 - i : i, c = c0 + h * cs, ok = i < n && c < c1;
            sc[h][i] = ok ? __ldcg(tok[i].row + C + tok[i].off + c) : 0.0f;
            kv[h][i] = ok ? __ldcg(tok[iv].row + tok[iv].off + c) : 0.0f;
        }
#pragma unroll
    for (int h = 0; h < CH; h++) {
        float m = -INFINITY, sum = 0.0f, acc = 0.0f;
#pragma unroll
        for (int i = 0; i < NT; i++)
            if (i < n) m = fmaxf(m, sc[h][i]);
#pragma unroll
        for (int i = 0; i < NT; i++)
            if (i < n) sc[h][i] = expf(DSF_CMP_SUB(sc[h][i], m)), sum = DSF_CMP_ADD(sum, sc[h][i]);
#pragma unroll
        for (int i = 0; i < NT; i++)
            if (i < n) acc = DSF_CMP_MADD(kv[h][i], DSF_CMP_DIV(sc[h][i], sum), acc);
        out[h] = acc;
    }
}

__device__ __forceinline__ static float pool_one(const dsf_cmp_tok *tok, int n, int C, int c, int wide) {
    float v;
    pool_lane<EW_TOK, 1>(tok, n, C, c, 0, c + 1, wide, &v);
    return v;
}

// Warp w's entry (slot g ew + w, index j): its pooled tokens (lanes below n) and what the block's pooling reads.
__device__ static void entry_setup(const dsf_cmp_layer &L, const dsf_cmp_batch &b, const float *ws, int s, int64_t j,
                                   int64_t row, int fault, int split, emitw_smem &sm) {
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    int prev = L.overlap && (j > 0 || fault == DSF_CMP_NO_RESET), n = (prev ? 2 : 1) * L.ratio;
    unsigned char cur;
    if (!split && lane < n)
        sm.u.e.tok[w][lane] = entry_token(L, b, s, j, lane, prev, ws, dsf_cmp_proj_outputs_dev(L), &cur);
    if (lane == 0) sm.row[w] = row, sm.n[w] = n;
}

// The block's threads pool its ew entries' channels as one range (cmp_pool's values when split); <= 8 tokens: 2 a time.
__device__ static void pool_entries(const dsf_cmp_layer &L, const float *pooled, int ew, int wide, int split,
                                    emitw_smem &sm) {
    int d = L.d, C = dsf_cmp_channels_dev(L), bd = blockDim.x;
    for (int i = threadIdx.x; i < ew * d; i += bd) {
        int e = i / d, c = i % d;
        if (sm.j[e] < 0) continue;
        int n = sm.n[e];
        const dsf_cmp_tok *tok = sm.u.e.tok[e];
        float *v = sm.u.e.v[e];
        if (!split && L.ratio > 1 && n <= 8 && c + bd < d) { // this thread's next channel, c + bd, is the same entry's
            float o[2];
            pool_lane<8, 2>(tok, n, C, c, bd, d, wide, o);
            v[c] = dsf_bf16_round(o[0]), v[c + bd] = dsf_bf16_round(o[1]);
            i += bd;
            continue;
        }
        v[c] = split          ? __ldcg(pooled + sm.row[e] * d + c)
               : L.ratio == 1 ? dsf_bf16_round(__ldcg(tok[0].row + c))
                              : dsf_bf16_round(pool_one(tok, n, C, c, wide));
    }
}

// Slice partials of outputs o0, o0 + 1 for the ew latents into part, slices of SS elements (16-byte aligned wk rows).
template <int SS> __device__ static void key_partials_v(const dsf_cmp_layer &L, int o0, int ew, emitw_smem &sm) {
    int d = L.d, lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    float wf[KO][SS];
#pragma unroll
    for (int u = 0; u < KO; u++)
#pragma unroll
        for (int k = 0; k < SS; k += 8) {
            uint4 q = o0 + u < L.ik ? __ldg((const uint4 *)(L.w.wk + (size_t)(o0 + u) * d + lane * SS + k))
                                    : make_uint4(0, 0, 0, 0);
            bf16x8(q, wf[u] + k);
        }
    for (int e = 0; e < ew; e++) {
        float x[SS];
#pragma unroll
        for (int k = 0; k < SS; k += 4) *(float4 *)(x + k) = *(const float4 *)&sm.x[e][lane][xpos(lane, k)];
#pragma unroll
        for (int u = 0; u < KO; u++) {
            float p = 0.0f;
#pragma unroll
            for (int k = 0; k < SS; k++) p = DSF_CMP_MADD(x[k], wf[u][k], p);
            sm.u.part[w][u * EW + e][lane] = p;
        }
    }
}

// The same partials for any slice length and alignment, the bf16 weights read one at a time.
__device__ static void key_partials(const dsf_cmp_layer &L, int o0, int ew, emitw_smem &sm) {
    int d = L.d, S = d / DSF_CMP_SLICES, lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    for (int u = 0; u < KO && o0 + u < L.ik; u++) {
        const uint16_t *q = L.w.wk + (size_t)(o0 + u) * d + lane * S;
        for (int e = 0; e < ew; e++) {
            float p = 0.0f;
            for (int k = 0; k < S; k++) p = DSF_CMP_MADD(sm.x[e][lane][xpos(lane, k)], dsf_bf16_to_f32(q[k]), p);
            sm.u.part[w][u * EW + e][lane] = p;
        }
    }
}

// Block (s, g): entry slots g ew .. g ew + ew - 1 of segment s pooled by all its warps, warp e finishes entry e; keys.
__global__ void __launch_bounds__(EW * 32) cmp_emit_w(dsf_cmp_layer L, dsf_cmp_batch b, const float *ws,
                                                      const float *pooled, int fault, int wide, int split, int ew) {
    __shared__ __align__(16) emitw_smem sm;
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, s = blockIdx.x, nw = blockDim.x >> 5, r = L.ratio;
    int64_t j = -1, row = 0;
    int ok = w < ew && prefill_entry_at(L, b, fault, s, (int64_t)blockIdx.y * ew + w, &j, &row);
    if (ok) entry_setup(L, b, ws, s, j, row, fault, split, sm);
    if (lane == 0) sm.j[w] = ok ? j : -1;
    __syncthreads();
    pool_entries(L, pooled, ew, wide, split, sm);
    __syncthreads();
    int kind = dsf_cmp_quant_kind(&L);
    if (ok)
        warp_finish(L, sm.u.e.v[w], L.d, L.w.norm, L.ik ? sm.x[w] : NULL, j * r + (r == 1 && wide ? 1 : 0), kind,
                    kind == 1, fault, b.kv[s] + (j - b.j0[s]) * L.d, sm);
    if (!L.ik || !__syncthreads_or(ok)) return;
    for (int i = lane; !ok && i < DSF_CMP_SLICES * KMS; i += 32) sm.x[w][i / KMS][i % KMS] = 0.0f;
    __syncthreads();
    int S = L.d / DSF_CMP_SLICES, al = ((uintptr_t)L.w.wk & 15) == 0;
    for (int o0 = w * KO; o0 < L.ik; o0 += nw * KO) {
        if (al && S == 16)
            key_partials_v<16>(L, o0, ew, sm);
        else if (al && S == 8)
            key_partials_v<8>(L, o0, ew, sm);
        else
            key_partials(L, o0, ew, sm);
        __syncwarp();
        int u = lane / EW, e = lane % EW; // index_key's fold: slices left to right
        if (lane < KO * EW && e < ew) {
            float tot = sm.u.part[w][lane][0];
#pragma unroll
            for (int i = 1; i < DSF_CMP_SLICES; i++) tot = DSF_CMP_ADD(tot, sm.u.part[w][lane][i]);
            if (o0 + u < L.ik) sm.k[e][o0 + u] = dsf_bf16_round(tot);
        }
        __syncwarp();
    }
    __syncthreads();
    if (!ok) return;
    // row_key's finish of a key: k_norm, RoPE at j r, FP4 QDQ (E8M0, blocks of 32).
    warp_finish(L, sm.k[w], L.ik, L.w.k_norm, NULL, sm.j[w] * L.ratio, 1, 0, fault,
                b.ik[s] + (size_t)(sm.j[w] - b.j0[s]) * L.ik, sm);
}

#endif
