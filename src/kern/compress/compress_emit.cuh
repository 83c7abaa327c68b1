#ifndef DSF_COMPRESS_EMIT_CUH
#define DSF_COMPRESS_EMIT_CUH
// The compressor's emission on CUDA, by one block: tokens, staged pooling of a channel range, norm, key, RoPE, QDQ.
#include "kern/compress/compress_internal.h"

enum { TCH = 8, MAX_WARPS = 8, POOL_FLOATS = 8192, KS = 5, XS_CAP = 1344 };

__device__ __forceinline__ static int dsf_cmp_channels_dev(const dsf_cmp_layer &L) { return (L.overlap ? 2 : 1) * L.d; }
__device__ __forceinline__ static int dsf_cmp_proj_outputs_dev(const dsf_cmp_layer &L) {
    return (L.ratio > 1 ? 2 : 1) * dsf_cmp_channels_dev(L);
}

// Row o of the projection's weights (C channels, D wide): wkv for the first C outputs, then wgate (scores).
__device__ __forceinline__ static const uint16_t *dsf_cmp_proj_row(const dsf_cmp_layer &L, int o, int C, int D) {
    return o < C ? L.w.wkv + (size_t)o * D : L.w.wgate + (size_t)(o - C) * D;
}

typedef struct emit_smem {
    union {
        float st[POOL_FLOATS];                          // pooling: scores (then weights) and kv of a channel chunk
        float part[MAX_WARPS][TCH][DSF_CMP_SLICES + 1]; // GEMVs: slice partials, lane t folds row or output t
        struct {
            float part[MAX_WARPS][TCH][DSF_CMP_SLICES + 1];
            uint4 xs[XS_CAP]; // decode GEMV: a stage of x, [row][slice][odd stride] 16-byte vectors
        } g;
    } u;
    float v[DSF_CMP_MAX_D], lat[DSF_CMP_MAX_D], k[DSF_CMP_MAX_IK], sl[DSF_CMP_SLICES], qs[DSF_CMP_MAX_D / 16], inv;
    float2 cs[DSF_CMP_ROPE_DIM / 2], kcs[DSF_CMP_ROPE_DIM / 2]; // RoPE cosines and sines of the entry and its key
    uint16_t nw[DSF_CMP_MAX_D], knw[DSF_CMP_MAX_IK];             // norm and k_norm weights
    uint16_t *kvo, *iko;                                         // where the entry and its key go
    dsf_cmp_tok tok[2 * DSF_CMP_MAX_RATIO];
    unsigned char cur[2 * DSF_CMP_MAX_RATIO]; // the token's row is this call's projection (ws), not the ring
    int n, cur0;
    unsigned ticket;
} emit_smem;

__device__ static int seg_of(const dsf_cmp_batch &b, int64_t row) {
    int lo = 0, hi = b.n_seg - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (b.row0[mid] <= row) lo = mid; else hi = mid - 1;
    }
    return lo;
}

// The row of position q of segment s: this call's projection (ws, *cur = 1) or the ring for earlier positions.
__device__ static const float *row_of(const dsf_cmp_layer &L, const dsf_cmp_batch &b, int s, int64_t q, const float *ws,
                                      int O, unsigned char *cur) {
    int64_t p0 = b.pos[s], len = b.row0[s + 1] - b.row0[s];
    *cur = q >= p0 && q < p0 + len;
    if (*cur) return ws + (b.row0[s] + (q - p0)) * O;
    return b.ring[s] + (size_t)(q & (L.cap - 1)) * 2 * dsf_cmp_channels_dev(L);
}

// Programmatic dependent launch (sm_90 on): waits for the grid before this one; a no-op for a plain launch (launch_p).
__device__ __forceinline__ static void pdl_wait() {
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Lets the next grid of the call launch (its blocks wait in pdl_wait until this grid has ended), once every block has.
__device__ __forceinline__ static void pdl_launch() {
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;");
#endif
}

// The threads that run a finishing step together: the whole block (decode), or one warp (prefill, cmp_emit_w).
struct cmp_block {
    __device__ int t() const { return threadIdx.x; }
    __device__ int nt() const { return blockDim.x; }
    __device__ void sync() const { __syncthreads(); }
};
struct cmp_warp {
    __device__ int t() const { return threadIdx.x & 31; }
    __device__ int nt() const { return 32; }
    __device__ void sync() const { __syncwarp(); }
};

// Token i of entry j's pool (with prev, the previous group's r tokens come first): its row and channel offset.
__device__ static dsf_cmp_tok entry_token(const dsf_cmp_layer &L, const dsf_cmp_batch &b, int s, int64_t j, int i,
                                          int prev, const float *ws, int O, unsigned char *cur) {
    int r = L.ratio, now = !prev || i >= r;
    int64_t q = (j - (now ? 0 : 1)) * r + (now && prev ? i - r : i);
    dsf_cmp_tok t;
    t.row = row_of(L, b, s, q, ws, O, cur);
    t.off = now && L.overlap ? L.d : 0;
    return t;
}

// dsf_cmp_slice_sumsq's chain, its values read 16 bytes at a time where n and v allow (4 times fewer shared loads).
__device__ static float slice_sumsq_dev(const float *v, int n) {
    if (n % 4 || (uintptr_t)v % 16) return dsf_cmp_slice_sumsq(v, n);
    float p = 0.0f;
    for (int k = 0; k < n; k += 4) {
        float4 q = *(const float4 *)(v + k);
        p = DSF_CMP_MADD(q.x, q.x, p), p = DSF_CMP_MADD(q.y, q.y, p);
        p = DSF_CMP_MADD(q.z, q.z, p), p = DSF_CMP_MADD(q.w, q.w, p);
    }
    return p;
}

// dsf_block_amax of n values, read 16 bytes at a time where n and x allow (max is exact, so any order agrees).
__device__ static float block_amax_dev(const float *x, int n) {
    if (n % 4 || (uintptr_t)x % 16) return dsf_block_amax(x, n);
    float m = 0.0f;
    for (int i = 0; i < n; i += 4) {
        float4 q = *(const float4 *)(x + i);
        m = fmaxf(m, fmaxf(fmaxf(fabsf(q.x), fabsf(q.y)), fmaxf(fabsf(q.z), fabsf(q.w))));
    }
    return m;
}

// Sum of squares of n values in the canonical order: thread l sums slice l, thread 0 folds; 1/rms in *inv.
template <class Team>
__device__ static void team_inv_rms(Team tm, const float *v, int n, float eps, float *sl, float *inv) {
    int t = tm.t(), S = n / DSF_CMP_SLICES;
    if (t < DSF_CMP_SLICES) sl[t] = slice_sumsq_dev(v + t * S, S);
    tm.sync();
    if (t == 0) {
        float tot = sl[0];
#pragma unroll
        for (int i = 1; i < DSF_CMP_SLICES; i++) tot = DSF_CMP_ADD(tot, sl[i]);
        *inv = dsf_cmp_inv_rms(tot, n, eps);
    }
    tm.sync();
}

// RoPE of the last 64 of n dims, optional Hadamard, QDQ as dsf_cmp_qdq_block (scales per block, then per element).
template <class Team>
__device__ static void finish_dev(Team tm, float *v, float *qs, int n, const float2 *cs, int kind, int blk, int had,
                                  int fault) {
    int t = tm.t(), nt = tm.nt();
    for (int i = t; i < DSF_CMP_ROPE_DIM / 2; i += nt) dsf_cmp_rope_rot(v + n - DSF_CMP_ROPE_DIM + 2 * i, cs[i].x, cs[i].y);
    tm.sync();
    if (had) {
        for (int h = 1; h < n; h *= 2) {
            for (int i = t; i < n / 2; i += nt) dsf_cmp_hadamard_pair(v, h, i);
            tm.sync();
        }
        float sc = dsf_cmp_hadamard_scale(n);
        for (int c = t; c < n; c += nt) v[c] = dsf_bf16_round(DSF_CMP_MUL(v[c], sc));
        tm.sync();
    }
    int qn = kind == 0 ? n - DSF_CMP_ROPE_DIM : n;
    for (int bi = t; bi < qn / blk; bi += nt) {
        float amax = block_amax_dev(v + bi * blk, blk);
        qs[bi] = kind == 0 ? dsf_act_scale_pow2(amax) : kind == 1 ? dsf_fp4_scale_e8m0(amax) : dsf_fp4_scale_e4m3(amax);
    }
    tm.sync();
    for (int c = t; c < qn; c += nt)
        v[c] = kind == 0 ? dsf_act_qdq_value(v[c], qs[c / blk]) : dsf_fp4_qdq_value(v[c], qs[c / blk]);
    tm.sync();
    if (fault == DSF_CMP_NAN && t == 0) v[n - 1] = __int_as_float(0x7FC00000);
    tm.sync();
}

// finish_dev's steps in one pass, 2 values a thread, BLK/2 lanes a QDQ block (n: a multiple of 64; whole warps a team).
template <int BLK, class Team>
__device__ static void finish_blocks(Team tm, const float *v, int n, float inv, const uint16_t *nw, float *lat,
                                     const float2 *cs, int kind, int fault, uint16_t *out) {
    enum { LPB = BLK / 2 };
    int qn = kind == 0 ? n - DSF_CMP_ROPE_DIM : n, r0 = n - DSF_CMP_ROPE_DIM;
    unsigned grp = (LPB == 32 ? 0xFFFFFFFFu : (1u << LPB) - 1) << (tm.t() & 31 & ~(LPB - 1));
    for (int c = 2 * tm.t(); c < n; c += 2 * tm.nt()) {
        float2 f = *(const float2 *)(v + c);
        float r[2] = {dsf_cmp_norm_elem(f.x, inv, nw[c]), dsf_cmp_norm_elem(f.y, inv, nw[c + 1])};
        if (lat) *(float2 *)(lat + c) = make_float2(r[0], r[1]);
        if (c >= r0) dsf_cmp_rope_rot(r, cs[(c - r0) / 2].x, cs[(c - r0) / 2].y);
        if (c < qn) { // the whole QDQ block is below qn (n a multiple of BLK)
            float m = fmaxf(fmaxf(0.0f, fabsf(r[0])), fabsf(r[1])); // dsf_block_amax's: from 0, exact in any order
#pragma unroll
            for (int x = 1; x < LPB; x *= 2) m = fmaxf(m, __shfl_xor_sync(grp, m, x));
            float sc = kind == 0 ? dsf_act_scale_pow2(m) : kind == 1 ? dsf_fp4_scale_e8m0(m) : dsf_fp4_scale_e4m3(m);
#pragma unroll
            for (int k = 0; k < 2; k++) r[k] = kind == 0 ? dsf_act_qdq_value(r[k], sc) : dsf_fp4_qdq_value(r[k], sc);
        }
        if (fault == DSF_CMP_NAN && c + 2 == n) r[1] = __int_as_float(0x7FC00000);
        out[c] = dsf_bf16_from_f32(r[0]), out[c + 1] = dsf_bf16_from_f32(r[1]);
    }
}

// Entry j's tokens in position order, with channel offsets (sm.tok, sm.n); sm.cur0: the first whose row is this call's.
__device__ static void emit_tokens(const dsf_cmp_layer &L, const dsf_cmp_batch &b, int s, int64_t j, const float *ws,
                                   int O, int fault, emit_smem &sm) {
    int prev = L.overlap && (j > 0 || fault == DSF_CMP_NO_RESET), n = (prev ? 2 : 1) * L.ratio;
    if (threadIdx.x == 0) sm.n = n, sm.cur0 = n;
    __syncthreads();
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        sm.tok[i] = entry_token(L, b, s, j, i, prev, ws, O, &sm.cur[i]);
        if (sm.cur[i]) atomicMin(&sm.cur0, i);
    }
    __syncthreads();
}

// 16 bytes from global (L2, as __ldcg) to shared memory asynchronously (cp_wait waits); src 16-byte aligned.
__device__ __forceinline__ static void cp16a(void *dst, const void *src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"((uint32_t)__cvta_generic_to_shared(dst)), "l"(src)
                 : "memory");
}

// cp16a, or plain loads for a source off 16-byte alignment (other blocks wrote ws, hence through L2).
__device__ __forceinline__ static void cp16(float *dst, const float *src) {
    if ((uintptr_t)src & 15) { // a caller's ring need not be 16-byte aligned: plain loads, seen after the same barrier
        for (int k = 0; k < 4; k++) dst[k] = __ldcg(src + k);
        return;
    }
    cp16a(dst, src);
}
__device__ __forceinline__ static void cp_wait() { asm volatile("cp.async.wait_all;" ::: "memory"); }

// Copies (all in flight) scores, kv of channels a..a+ch-1 (ch: 32s): ring tokens (want 0), this call's (1) or all (2).
__device__ __noinline__ static void pool_stage(int C, int a, int ch, int wide, int want, emit_smem &sm) {
    int t = threadIdx.x, nt = blockDim.x, n = sm.n, i0 = want == 1 ? sm.cur0 : 0, q = ch / 4;
    float *e = sm.u.st, *kv = sm.u.st + POOL_FLOATS / 2;
    for (int x = t; x < (n - i0) * q; x += nt) {
        int i = i0 + x / q, c = x % q * 4, iv = wide ? n - 1 - i : i;
        const dsf_cmp_tok *tk = &sm.tok[i], *tv = &sm.tok[iv];
        if (want == 1) { // token i, if this call's: its score at slot i, its kv at the slot that takes it
            if (!sm.cur[i]) continue;
            cp16(e + i * ch + c, tk->row + C + tk->off + a + c);
            cp16(kv + iv * ch + c, tk->row + tk->off + a + c);
            continue;
        }
        if (want == 2 || !sm.cur[i]) cp16(e + i * ch + c, tk->row + C + tk->off + a + c);
        if (want == 2 || !sm.cur[iv]) cp16(kv + i * ch + c, tv->row + tv->off + a + c);
    }
}

// The channels a chunk of pooling stages at once (the emitter may stage the ring's part of the first before waiting).
__host__ __device__ static int pool_chunk(int n) { return (POOL_FLOATS / 2 / n) / 32 * 32; }

// Pools channels c0..c1-1 into dst as dsf_cmp_pool does (same operations, same order), a staged chunk at a time.
__device__ static void pool_range(const dsf_cmp_layer &L, int c0, int c1, int wide, float *dst, int ring_staged,
                                  emit_smem &sm) {
    int t = threadIdx.x, nt = blockDim.x, n = sm.n;
    if (L.ratio == 1) {
        for (int c = c0 + t; c < c1; c += nt) dst[c - c0] = dsf_bf16_round(__ldcg(sm.tok[0].row + c));
        __syncthreads();
        return;
    }
    int cw = pool_chunk(n);
    float *e = sm.u.st, *kv = sm.u.st + POOL_FLOATS / 2;
    for (int a = c0; a < c1; a += cw) {
        int ch = c1 - a < cw ? c1 - a : cw, nx = n * ch;
        pool_stage(dsf_cmp_channels_dev(L), a, ch, wide, a == c0 && ring_staged ? 1 : 2, sm);
        cp_wait();
        __syncthreads();
        for (int c = t; c < ch; c += nt) {
            float m = -INFINITY;
#pragma unroll 8
            for (int i = 0; i < n; i++) m = fmaxf(m, e[i * ch + c]);
            sm.lat[c] = m;
        }
        __syncthreads();
        int cm = ch - 1, p2 = (ch & cm) == 0; // a power-of-two chunk takes its channel by a mask, not a division
        for (int x = t; x < nx; x += nt) e[x] = expf(DSF_CMP_SUB(e[x], sm.lat[p2 ? x & cm : x % ch]));
        __syncthreads();
        for (int c = t; c < ch; c += nt) {
            float sum = 0.0f;
#pragma unroll 8
            for (int i = 0; i < n; i++) sum = DSF_CMP_ADD(sum, e[i * ch + c]);
            sm.lat[c] = sum;
        }
        __syncthreads();
        for (int x = t; x < nx; x += nt) e[x] = DSF_CMP_DIV(e[x], sm.lat[p2 ? x & cm : x % ch]);
        __syncthreads();
        for (int c = t; c < ch; c += nt) {
            float acc = 0.0f;
#pragma unroll 8
            for (int i = 0; i < n; i++) acc = DSF_CMP_MADD(kv[i * ch + c], e[i * ch + c], acc);
            dst[a - c0 + c] = dsf_bf16_round(acc);
        }
        __syncthreads();
    }
}

__device__ static void bf16x8(uint4 u, float *f) {
    const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int i = 0; i < 4; i++) f[2 * i] = __uint_as_float(w[i] << 16), f[2 * i + 1] = __uint_as_float(w[i] & 0xFFFF0000u);
}

// N 16-byte vectors of bf16 from element k0 of w (zeros from element S on, or without w).
template <int N> __device__ __forceinline__ static void load_vecs(const uint16_t *w, int k0, int S, uint4 *v) {
#pragma unroll
    for (int u = 0; u < N; u++)
        v[u] = w && k0 + 8 * u < S ? __ldg((const uint4 *)(w + k0 + 8 * u)) : make_uint4(0, 0, 0, 0);
}

// Lane u < TCH folds output o0 + u (below ob)'s 32 slice partials in order into sm.k (bf16); the warp syncs around it.
__device__ static void key_fold(int o0, int ob, emit_smem &sm) {
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    __syncwarp();
    if (lane < TCH && o0 + lane < ob) {
        float tot = sm.u.part[warp][lane][0];
#pragma unroll
        for (int i = 1; i < DSF_CMP_SLICES; i++) tot = DSF_CMP_ADD(tot, sm.u.part[warp][lane][i]);
        sm.k[o0 + lane] = dsf_bf16_round(tot);
    }
    __syncwarp();
}

// Index key outputs oa..ob-1 from sm.lat into sm.k: a warp takes st <= TCH at a time, lane = slice, lane u folds u.
__device__ static void index_key(const uint16_t *wk, int d, emit_smem &sm, int oa, int ob, int st) {
    enum { MS = DSF_CMP_MAX_D / DSF_CMP_SLICES, KO = 4 };
    int S = d / DSF_CMP_SLICES, lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    int vec = S % 8 == 0 && ((uintptr_t)wk & 15) == 0;
    float x[MS];
    if (S % 4 == 0) {
#pragma unroll
        for (int k = 0; k < MS; k += 4) {
            float4 q = k < S ? *(const float4 *)(sm.lat + lane * S + k) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            x[k] = q.x, x[k + 1] = q.y, x[k + 2] = q.z, x[k + 3] = q.w;
        }
    } else {
#pragma unroll
        for (int k = 0; k < MS; k++) x[k] = k < S ? sm.lat[lane * S + k] : 0.0f;
    }
    if (vec) {
        for (int o0 = oa + warp * st; o0 < ob; o0 += nw * st) {
            int oe = min(o0 + st, ob);
#pragma unroll
            for (int h = 0; h < TCH; h += KO) {
                if (o0 + h >= oe) break;
                uint4 wv[KO][MS / 8]; // the loads of KO outputs are all in flight before their FMAs
#pragma unroll
                for (int u = 0; u < KO; u++)
#pragma unroll
                    for (int k = 0; k < MS; k += 8)
                        wv[u][k / 8] = o0 + h + u < oe && k < S
                                           ? __ldg((const uint4 *)(wk + (size_t)(o0 + h + u) * d + lane * S + k))
                                           : make_uint4(0, 0, 0, 0);
#pragma unroll
                for (int u = 0; u < KO; u++) {
                    float wf[MS], p = 0.0f;
#pragma unroll
                    for (int k = 0; k < MS; k += 8)
                        if (k < S) bf16x8(wv[u][k / 8], wf + k);
#pragma unroll
                    for (int k = 0; k < MS; k++)
                        if (k < S) p = DSF_CMP_MADD(x[k], wf[k], p);
                    sm.u.part[warp][h + u][lane] = p;
                }
            }
            key_fold(o0, oe, sm);
        }
    } else {
        for (int o0 = oa + warp * st; o0 < ob; o0 += nw * st) {
            int oe = min(o0 + st, ob);
            for (int u = 0; u < TCH && o0 + u < oe; u++) { // unaligned or short slices: the same FMAs, x from sm.lat
                const uint16_t *w = wk + (size_t)(o0 + u) * d + lane * S;
                float p = 0.0f;
                for (int k = 0; k < S; k++) p = DSF_CMP_MADD(sm.lat[lane * S + k], dsf_bf16_to_f32(w[k]), p);
                sm.u.part[warp][u][lane] = p;
            }
            key_fold(o0, oe, sm);
        }
    }
    __syncthreads();
}

// What entry j of segment s needs besides its pooled values: weights, RoPE tables, destinations; ends synced.
__device__ static void emit_prep(const dsf_cmp_layer &L, const dsf_cmp_batch &b, int s, int64_t j, int wide,
                                 emit_smem &sm) {
    int t = threadIdx.x, nt = blockDim.x, r = L.ratio;
    for (int c = t; c < L.d; c += nt) sm.nw[c] = L.w.norm[c];
    for (int o = t; o < L.ik; o += nt) sm.knw[o] = L.w.k_norm[o];
    for (int q = t; q < DSF_CMP_ROPE_DIM; q += nt) { // q < 32: the entry's pair q; then the key's pair q - 32
        int key = q >= DSF_CMP_ROPE_DIM / 2, i = q % (DSF_CMP_ROPE_DIM / 2);
        float a = dsf_cmp_rope_angle(j * r + (r == 1 && wide && !key ? 1 : 0), L.freq[i]);
        (key ? sm.kcs : sm.cs)[i] = make_float2(cosf(a), sinf(a));
    }
    if (t == 0) {
        sm.kvo = b.kv[s] + (size_t)(j - b.j0[s]) * L.d;
        sm.iko = L.ik ? b.ik[s] + (size_t)(j - b.j0[s]) * L.ik : NULL;
    }
    __syncthreads();
}

// The entry's latent (RMSNorm of sm.v, before RoPE) into sm.lat, as emit_entry computes it; ends synced.
__device__ static void emit_latent(const dsf_cmp_layer &L, emit_smem &sm) {
    team_inv_rms(cmp_block(), sm.v, L.d, L.eps, sm.sl, &sm.inv);
    for (int c = threadIdx.x; c < L.d; c += blockDim.x) sm.lat[c] = dsf_cmp_norm_elem(sm.v[c], sm.inv, sm.nw[c]);
    __syncthreads();
}

// Entry j from sm.v by the block: norm (also into sm.lat), RoPE, Hadamard for kind 1, QDQ, bf16 write; ends synced.
__device__ static void emit_entry(const dsf_cmp_layer &L, int fault, emit_smem &sm) {
    int t = threadIdx.x, nt = blockDim.x, n = L.d, kind = dsf_cmp_quant_kind(&L);
    float *v = sm.v;
    uint16_t *out = sm.kvo;
    team_inv_rms(cmp_block(), v, n, L.eps, sm.sl, &sm.inv);
    if (kind != 1) { // no Hadamard: one pass, a step a QDQ block (kind 0: 64 values, kind 2: 16)
        if (kind == 2) finish_blocks<16>(cmp_block(), v, n, sm.inv, sm.nw, sm.lat, sm.cs, kind, fault, out);
        else finish_blocks<64>(cmp_block(), v, n, sm.inv, sm.nw, sm.lat, sm.cs, kind, fault, out);
        __syncthreads();
        return;
    }
    for (int c = t; c < n; c += nt) sm.lat[c] = v[c] = dsf_cmp_norm_elem(v[c], sm.inv, sm.nw[c]);
    __syncthreads();
    finish_dev(cmp_block(), v, sm.qs, n, sm.cs, 1, 32, 1, fault); // kind 1: FP4 E8M0 in blocks of 32
    for (int c = t; c < n; c += nt) out[c] = dsf_bf16_from_f32(v[c]);
    __syncthreads();
}

// Whether this block is the last of n to pass ticket *t (which it then resets); ends synced, fenced for the last.
__device__ static int last_of(unsigned *t, int n, emit_smem &sm) {
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
        sm.ticket = atomicAdd(t, 1u) == (unsigned)n - 1;
        if (sm.ticket) *t = 0;
    }
    __syncthreads();
    if (sm.ticket) __threadfence();
    return sm.ticket;
}

// Key outputs oa..ob-1 from sm.lat (kb > 0: to kr, the last of kb by ticket tk goes on); k_norm, RoPE, FP4 QDQ, write.
__device__ __noinline__ static void row_key(const uint16_t *wk, int d, int ik, float eps, int fault, int oa, int ob,
                                            int kb, unsigned *tk, float *kr, emit_smem &sm) {
    int nw = blockDim.x >> 5, st = kb ? (ob - oa + nw - 1) / nw : TCH; // key blocks: one round of loads a warp
    index_key(wk, d, sm, oa, ob, st < 1 ? 1 : st > TCH ? TCH : st);
    if (kb) {
        for (int o = oa + threadIdx.x; o < ob; o += blockDim.x) kr[o] = sm.k[o];
        if (!last_of(tk, kb, sm)) return;
        for (int o = threadIdx.x; o < ik; o += blockDim.x) sm.k[o] = __ldcg(kr + o);
        __syncthreads();
    }
    team_inv_rms(cmp_block(), sm.k, ik, eps, sm.sl, &sm.inv);
    finish_blocks<32>(cmp_block(), sm.k, ik, sm.inv, sm.knw, NULL, sm.kcs, 1, fault, sm.iko);
    __syncthreads();
}

#endif
