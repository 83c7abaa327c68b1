// engram_wkv prefill kernel with tokens as the wgmma A operand: 64 tokens a warpgroup by BW weight rows a block.
#include <limits.h>

#include "kern/engram/engram_wg.cuh"

#define ENG_WGT_MAXS 8

// Weight scale groups a block's bw rows touch: bw / 32, or with a start 8, 16 or 24 rows into a group one more.
__host__ __device__ constexpr int wgt_groups(int bw) { return bw % 32 ? (bw + 55) / 32 : bw / 32; }
// A stage: tiles ([tb][128] tokens, [bw][128] weights), then scales as floats ([4][tb] tokens, [4][groups] weights).
__host__ __device__ constexpr int wgt_tile_bytes(int tb, int bw) { return (tb + bw) * ENG_ATOM; }
__host__ __device__ constexpr int wgt_scale_bytes(int tb, int bw) { return 16 * tb + 16 * wgt_groups(bw); }

// A consumer's place in the ring: the slot's tiles (as the descriptor dt of their start), scales (sc) and parity.
template <int STAGE, int SCB> struct wgt_ring {
    const uint8_t *scl, *sc;
    uint64_t d0, dt;
    int slot, phase;
    __device__ __forceinline__ wgt_ring(const uint8_t *b, int stages)
        : scl(b + (size_t)stages * STAGE), sc(scl), d0(eng_desc(b)), dt(d0), slot(0), phase(0) {}
    // The descriptor of the operand `bytes` into the slot's tiles, k32 block j along K (no carry: below 256 KB).
    __device__ __forceinline__ uint64_t desc(int bytes, int j) const { return dt + (uint64_t)((bytes >> 4) + 2 * j); }
    // To the next slot, whose stage is then waited for when there is one (kt + 1 < KT).
    __device__ __forceinline__ void advance(uint64_t *full, int stages, int kt, int KT) {
        if (++slot == stages) slot = 0, phase ^= 1;
        sc = scl + (size_t)slot * SCB, dt = d0 + (uint64_t)(slot * (STAGE >> 4));
        if (kt + 1 < KT) eng_mbar_wait<ENG_SLEEP_NS>(&full[slot], phase);
    }
};

// A thread's scales of block j: its tokens' (rows g and g + 8 of its 16) and weight groups G0 on; then sa * sw.
template <int TB, int RB, int G0, int NG> struct wgt_scales {
    enum { VEC = RB % 4 == 0 && G0 % 4 == 0 && NG % 4 == 0 ? 4 : RB % 2 == 0 && G0 % 2 == 0 && NG % 2 == 0 ? 2 : 1 };
    float2 sa;
    float sw[NG];
    __device__ __forceinline__ void fetch(const uint8_t *sc, int j, int tok, int g) {
        sa = *(const float2 *)((const float *)sc + j * TB + (tok & ~15) + 2 * g);
        const float *w = (const float *)(sc + 16 * TB) + j * RB + G0;
#pragma unroll
        for (int b = 0; b < NG; b += VEC)
            if (VEC == 4) {
                float4 v = *(const float4 *)(w + b);
                sw[b] = v.x, sw[b + 1] = v.y, sw[b + 2] = v.z, sw[b + 3] = v.w;
            } else if (VEC == 2) {
                float2 v = *(const float2 *)(w + b);
                sw[b] = v.x, sw[b + 1] = v.y;
            } else {
                sw[b] = w[b];
            }
    }
    __device__ __forceinline__ void mult(float (&s)[NG][2]) const {
#pragma unroll
        for (int b = 0; b < NG; b++) s[b][0] = __fmul_rn(sa.x, sw[b]), s[b][1] = __fmul_rn(sa.y, sw[b]);
    }
};

// A consumer warpgroup with no token below T: no products, only the ring's protocol (each stage's full, then empty).
__device__ __forceinline__ void wgt_idle(uint64_t *full, uint64_t *empty, int stages, int KT) {
    for (int kt = 0, slot = 0, phase = 0; kt < KT; kt++) {
        eng_mbar_wait<ENG_SLEEP_NS>(&full[slot], phase);
        eng_mbar_arrive(&empty[slot]);
        if (++slot == stages) slot = 0, phase ^= 1;
    }
}

// The controls' split: the first KT / 2 stages end as a bf16 partial (once a stage, not in the unrolled blocks).
template <int R> __device__ __forceinline__ void wgt_split(float (&acc)[R], int kt, int split_kt) {
    if (kt == split_kt)
#pragma unroll
        for (int i = 0; i < R; i++) acc[i] = dsf_bf16_round(acc[i]);
}

// A thread's totals: n8 tile i at weight rows n + 8i + 2q and + 1, tokens t and t + 8.
template <int R>
__device__ __forceinline__ void wgt_store(uint16_t *y, int64_t T, int64_t N, int64_t t, int64_t n, int q,
                                          const float (&acc)[R], int fault) {
    // The whole tile inside y, r0 4-byte aligned (then every pair is: r1 lies 16 N bytes on, each tile 16), no control.
    uint16_t *r0 = y + t * N + n + 2 * q, *r1 = r0 + 8 * N;
    if (t + 8 < T && n + 2 * R <= N && ((uintptr_t)r0 & 3) == 0 && fault != DSF_ENG_SKIP) {
#pragma unroll
        for (int i = 0; i < R / 4; i++) {
            *(uint32_t *)(r0 + 8 * i) = eng_bf16x2(acc[4 * i], acc[4 * i + 1]);
            *(uint32_t *)(r1 + 8 * i) = eng_bf16x2(acc[4 * i + 2], acc[4 * i + 3]);
        }
        return;
    }
#pragma unroll
    for (int i = 0; i < R / 4; i++) {
        eng_store2(y, T, N, t, n + 8 * i + 2 * q, acc[4 * i], acc[4 * i + 1], fault);
        eng_store2(y, T, N, t + 8, n + 8 * i + 2 * q, acc[4 * i + 2], acc[4 * i + 3], fault);
    }
}

// A consumer warpgroup's share: 64 tokens (group wg) by W rows from row OFF of BW; the block starts PH into a group.
template <int BW, int NWG, int DB, int W, int OFF, int PH>
__device__ __forceinline__ void wgt_consume(const uint8_t *base, uint64_t *full, uint64_t *empty, int stages, int KB,
                                            int KT, int wg, int64_t t0, int64_t n0, uint16_t *y, int64_t T, int64_t N,
                                            int split, int fault) {
    enum { TB = 64 * NWG, SA = TB * ENG_ATOM, STAGE = wgt_tile_bytes(TB, BW), RB = wgt_groups(BW), SO = OFF + PH };
    // This warpgroup's weight groups: G0 = SO / 32 to G0 + NG - 1; chunk i of 8 rows falls in group (SO + 8i) / 32.
    enum { SCB = wgt_scale_bytes(TB, BW), R = W / 2, G0 = SO / 32, NG = (SO + W - 1) / 32 - SO / 32 + 1 };
    int warp = (threadIdx.x >> 5) & 3, lane = threadIdx.x & 31, g = lane >> 2, q = lane & 3;
    // This thread's tokens: rows g and g + 8 of its warp's 16; its weights: OFF + 8j + 2q and OFF + 8j + 2q + 1.
    int tok = wg * 64 + warp * 16 + g;
    float acc[R], d[DB ? 2 : 1][R];
#pragma unroll
    for (int i = 0; i < R; i++) {
        acc[i] = 0.0f;
#pragma unroll
        for (int b = 0; b <= DB; b++) d[b][i] = 0.0f;
    }
    int split_kt = split ? KT / 2 : -1;
    wgt_ring<STAGE, SCB> ring(base, stages);
    // Block j (of 4) of the current stage into dd, as one commit group.
    auto issue = [&](int j, float(&dd)[R]) {
        eng_wg_fence();
        eng_wgmma(dd, ring.desc(wg * 64 * ENG_ATOM, j), ring.desc(SA + OFF * ENG_ATOM, j));
        eng_wg_commit();
    };
    wgt_scales<TB, RB, G0, NG> sv;
    auto fetch = [&](int j) { sv.fetch(ring.sc, j, tok, g); };
    auto mult = [&](float(&s)[NG][2]) { sv.mult(s); };
    // acc = fma(d, sa * sw, acc); the scale of (token, weight) is the same product as in the weights-as-A kernel.
    auto promote = [&](float(&dd)[R], const float(&s)[NG][2]) {
        eng_wg_hold(dd);
#pragma unroll
        for (int i = 0; i < R / 4; i++) {
            int b = (SO + 8 * i) / 32 - G0;
            acc[4 * i] = __fmaf_rn(dd[4 * i], s[b][0], acc[4 * i]);
            acc[4 * i + 1] = __fmaf_rn(dd[4 * i + 1], s[b][0], acc[4 * i + 1]);
            acc[4 * i + 2] = __fmaf_rn(dd[4 * i + 2], s[b][1], acc[4 * i + 2]);
            acc[4 * i + 3] = __fmaf_rn(dd[4 * i + 3], s[b][1], acc[4 * i + 3]);
        }
    };
    auto split_at = [&](int kt) { wgt_split(acc, kt, split_kt); };
    auto advance = [&](int kt) { ring.advance(full, stages, kt, KT); };
    eng_mbar_wait<ENG_SLEEP_NS>(&full[0], 0);
    int kt = 0, nfull = DB ? KB / 4 : 0;
    float s[NG][2];
    // Block j + 1's scales are read before block j's wait (AHEAD) where the block's scale groups are whole (perf.md).
    enum { AHEAD = BW % 32 == 0 };
    if (nfull && AHEAD) fetch(0);
    // Block j (0-2) of a stage in set dd: promoted while block j + 1 runs, then block j + 2 issued into dd (to 3).
    auto step = [&](int j, float(&dd)[R], int next) {
        if (!AHEAD) fetch(j);
        mult(s);
        if (AHEAD) fetch(j + 1);
        eng_wg_wait<1>();
        promote(dd, s);
        if (next) issue(j + 2, dd);
    };
    // Two accumulator sets: block j's product runs while block j - 1 is promoted; none crosses the back edge.
    for (; kt < nfull; kt++) {
        split_at(kt);
        issue(0, d[0]);
        issue(1, d[DB]);
        step(0, d[0], 1);
        step(1, d[DB], 1);
        step(2, d[0], 0);
        if (!AHEAD) fetch(3);
        mult(s);
        eng_wg_wait<0>();
        // Every consumer thread hands the slot back once its products are done (its scales are in registers by now).
        eng_mbar_arrive(&empty[ring.slot]);
        advance(kt);
        if (AHEAD && kt + 1 < nfull) fetch(0);
        promote(d[DB], s);
    }
    for (; kt < KT; kt++) {
        split_at(kt);
#pragma unroll
        for (int j = 0; j < 4; j++) {
            if (kt * 4 + j >= KB) break;
            issue(j, d[0]);
            fetch(j);
            mult(s);
            eng_wg_wait<0>();
            promote(d[0], s);
        }
        eng_mbar_arrive(&empty[ring.slot]);
        advance(kt);
    }
    wgt_store(y, T, N, t0 + tok, n0 + OFF, q, acc, fault);
}

// Parts: the W rows from row OFF as P wgmmas of W / P; two parts are in flight, one promoted while the next runs.
template <int BW, int NWG, int W, int OFF, int P>
__device__ __forceinline__ void wgt_consume_parts(const uint8_t *base, uint64_t *full, uint64_t *empty, int stages,
                                                  int KB, int KT, int wg, int64_t t0, int64_t n0, uint16_t *y,
                                                  int64_t T, int64_t N, int split, int fault) {
    enum { TB = 64 * NWG, SA = TB * ENG_ATOM, STAGE = wgt_tile_bytes(TB, BW), RB = wgt_groups(BW), G0 = OFF / 32 };
    enum { SCB = wgt_scale_bytes(TB, BW), R = W / 2, H = R / P, U = 4 * P, NG = (OFF + W - 1) / 32 - G0 + 1 };
    static_assert(BW % 32 == 0 && W % (8 * P) == 0 && OFF % 8 == 0, "parts of whole n8 tiles, blocks on a group");
    int warp = (threadIdx.x >> 5) & 3, lane = threadIdx.x & 31, g = lane >> 2, q = lane & 3;
    int tok = wg * 64 + warp * 16 + g;
    float acc[R], d[2][H];
#pragma unroll
    for (int i = 0; i < R; i++) acc[i] = 0.0f;
#pragma unroll
    for (int i = 0; i < H; i++) d[0][i] = 0.0f, d[1][i] = 0.0f;
    int split_kt = split ? KT / 2 : -1;
    wgt_ring<STAGE, SCB> ring(base, stages);
    // Unit u of the stage: block u / P, part u % P (rows OFF + (u % P) W / P on), into d[u % 2], one commit group.
    auto issue = [&](int u) {
        eng_wg_fence();
        eng_wgmma(d[u % 2], ring.desc(wg * 64 * ENG_ATOM, u / P),
                  ring.desc(SA + (OFF + (u % P) * (W / P)) * ENG_ATOM, u / P));
        eng_wg_commit();
    };
    // Block j's scales: read one part ahead of their use (fetch), multiplied when block j starts (mult).
    wgt_scales<TB, RB, G0, NG> sv;
    auto fetch = [&](int j) { sv.fetch(ring.sc, j, tok, g); };
    auto mult = [&](float(&s)[NG][2]) { sv.mult(s); };
    // Unit u's products into acc (part h's n8 tiles are the accumulator's tiles h H / 4 on).
    auto promote = [&](int u, const float(&s)[NG][2]) {
        int h = u % P;
        eng_wg_hold(d[u % 2]);
#pragma unroll
        for (int i = 0; i < H / 4; i++) {
            int b = (OFF + h * (W / P) + 8 * i) / 32 - G0, a = h * H + 4 * i;
            acc[a] = __fmaf_rn(d[u % 2][4 * i], s[b][0], acc[a]);
            acc[a + 1] = __fmaf_rn(d[u % 2][4 * i + 1], s[b][0], acc[a + 1]);
            acc[a + 2] = __fmaf_rn(d[u % 2][4 * i + 2], s[b][1], acc[a + 2]);
            acc[a + 3] = __fmaf_rn(d[u % 2][4 * i + 3], s[b][1], acc[a + 3]);
        }
    };
    auto advance = [&](int kt) { ring.advance(full, stages, kt, KT); };
    auto split_at = [&](int kt) { wgt_split(acc, kt, split_kt); };
    eng_mbar_wait<ENG_SLEEP_NS>(&full[0], 0);
    float s[NG][2];
    int kt = 0;
    fetch(0);
    for (; kt < KB / 4; kt++) {
        split_at(kt);
        issue(0);
        issue(1);
#pragma unroll
        for (int u = 0; u < U - 1; u++) {
            if (u % P == 0) mult(s);
            if (u % P == P - 1) fetch(u / P + 1);
            eng_wg_wait<1>();
            promote(u, s);
            if (u + 2 < U) issue(u + 2);
        }
        if (P == 1) mult(s); // one part a block: the last block's products, before the next stage's first read
        eng_wg_wait<0>();
        // The slot's last products are in registers: hand it back before promoting them.
        eng_mbar_arrive(&empty[ring.slot]);
        advance(kt);
        if (kt + 1 < KB / 4) fetch(0); // a tail stage reads its blocks' scales itself
        promote(U - 1, s);
    }
    for (; kt < KT; kt++) {
        split_at(kt);
#pragma unroll
        for (int j = 0; j < 4; j++) { // unrolled, so that each part's accumulator set is known at compile time
            if (kt * 4 + j >= KB) break;
            fetch(j);
            mult(s);
#pragma unroll
            for (int h = 0; h < P; h++) {
                issue(j * P + h);
                eng_wg_wait<0>();
                promote(j * P + h, s);
            }
        }
        eng_mbar_arrive(&empty[ring.slot]);
        advance(kt);
    }
    wgt_store(y, T, N, t0 + tok, n0 + OFF, q, acc, fault);
}

// The one-token-group consumer for a block starting ph rows into its scale group: ph PH, PH + 8, ... 24, else 0.
template <int BW, int DB, int PH>
__device__ __forceinline__ void wgt_consume_at(int ph, const uint8_t *base, uint64_t *full, uint64_t *empty, int stages,
                                               int KB, int KT, int64_t t0, int64_t n0, uint16_t *y, int64_t T,
                                               int64_t N, int split, int fault) {
    if constexpr (PH < 32) {
        if (ph == PH)
            wgt_consume<BW, 1, DB, BW, 0, PH>(base, full, empty, stages, KB, KT, 0, t0, n0, y, T, N, split, fault);
        else
            wgt_consume_at<BW, DB, PH + 8>(ph, base, full, empty, stages, KB, KT, t0, n0, y, T, N, split, fault);
    } else {
        wgt_consume<BW, 1, DB, BW, 0, 0>(base, full, empty, stages, KB, KT, 0, t0, n0, y, T, N, split, fault);
    }
}

// Block: NWG warpgroups of 64 tokens by BW weight rows (WS 2: two of BW / 2 rows, NWG 1), PW producer warps.
template <int BW, int NWG, int PW, int DB, int WS, int PARTS = 1>
__global__ void __launch_bounds__(128 * NWG * WS + 32 * PW, NWG * WS == 1 && PW == 4 ? 2 : 1)
    eng_wkv_wgt(const __grid_constant__ CUtensorMap tx, const __grid_constant__ CUtensorMap tw,
                const uint8_t *__restrict__ xs, const uint8_t *__restrict__ ws, uint16_t *__restrict__ y, int64_t T,
                int64_t N, int64_t K, int stages, int tt, int tail, int sub, int fault) {
    enum { TB = 64 * NWG, SA = TB * ENG_ATOM, STAGE = wgt_tile_bytes(TB, BW), RB = wgt_groups(BW), NC = NWG * WS };
    // A stage's scales as floats: tokens [4][TB] with rows t and t + 8 of each 16 side by side, then weights [4][RB].
    enum { SCB = wgt_scale_bytes(TB, BW), NP = 32 * PW - 1, NI = (TB + NP - 1) / NP, NW = (4 * RB + NP - 1) / NP };
    static_assert(WS == 1 || (NWG == 1 && BW % 32 == 0), "a weight split halves the rows of one token group");
    static_assert(BW % 8 == 0 && (BW % 32 == 0 || NC == 1), "rows start on 8; unaligned starts with one consumer");
    extern __shared__ uint8_t eng_dyn[];
    __shared__ uint64_t full[ENG_WGT_MAXS], empty[ENG_WGT_MAXS];
    // Stages 1024-aligned ([TB][128] tokens, [BW][128] weights), then each stage's scales (SCB bytes).
    uint8_t *base = eng_dyn + ((1024 - (eng_smem(eng_dyn) & 1023)) & 1023);
    int warp = threadIdx.x >> 5;
    int tile;
    int64_t n0;
    int wide = dsf_eng_wgt_tile(blockIdx.x, tt, tail, sub, BW, &tile, &n0);
    int64_t t0 = (int64_t)tile * TB;
    if (n0 >= N) return; // a split tile's block past the last row (N not a multiple of BW): no rows, no barriers
    int KB = (int)(K / 32), KT = (KB + 3) / 4;
    uint8_t *scl = base + (size_t)stages * STAGE;
    eng_ring_init(full, empty, stages, 32 * PW, 128 * NC);
    if (warp >= 4 * NC) {
        // Producers (a warp, or a warpgroup lending its registers): thread 0 starts the copies, the rest copy scales.
        if (PW == 4) asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(NC == 1 ? 24 : 40));
        int p = threadIdx.x - 128 * NC, words = KB % 4 == 0 && ((uintptr_t)xs & 3) == 0;
        // Fixed over the loop: this thread's token scale rows and weight scale row (NULL where it has none).
        const uint8_t *xr[NI], *wr[NW];
#pragma unroll
        for (int r = 0; r < NI; r++) {
            int i = p - 1 + r * NP;
            xr[r] = p > 0 && i < TB && t0 + i < T ? xs + (t0 + i) * KB : NULL;
        }
#pragma unroll
        for (int r = 0; r < NW; r++) {
            int i = p - 1 + r * NP;
            int64_t n = (BW % 32 ? n0 & ~(int64_t)31 : n0) + 32 * (i % RB);
            wr[r] = p > 0 && i < 4 * RB && n < N ? ws + (n / 32) * KB + i / RB : NULL;
        }
        uint64_t pol = eng_evict_first();
        for (int kt = 0, s = 0, use = 0; kt < KT; kt++, s = s + 1 < stages ? s + 1 : (use++, 0)) {
            uint8_t *st = base + (size_t)s * STAGE, *sc = scl + (size_t)s * SCB;
            // A stage's scales are read from global memory before its slot is free, so that wait hides their latency.
            uint32_t v[NI], wb[NW];
#pragma unroll
            for (int r = 0; r < NI; r++) {
                v[r] = 0x7F7F7F7Fu;
                if (xr[r] && words)
                    v[r] = *(const uint32_t *)(xr[r] + 4 * kt);
                else if (xr[r])
                    for (int j = 0; j < 4 && 4 * kt + j < KB; j++)
                        v[r] = (v[r] & ~(0xFFu << 8 * j)) | (uint32_t)xr[r][4 * kt + j] << 8 * j;
            }
#pragma unroll
            for (int r = 0; r < NW; r++) {
                int i = p - 1 + r * NP;
                wb[r] = wr[r] && 4 * kt + i / RB < KB ? wr[r][4 * kt] : 127;
            }
            if (use > 0) eng_mbar_wait<ENG_SLEEP_NS>(&empty[s], (use - 1) & 1);
            if (p == 0) {
                eng_mbar_expect(&full[s], STAGE);
                eng_tma(st, &tx, kt * ENG_ATOM, (int)t0, &full[s]);
                eng_tma_w(st + SA, &tw, kt * ENG_ATOM, (int)n0, &full[s], pol, tt == 1 && wide == BW);
                continue;
            }
#pragma unroll
            for (int r = 0; r < NI; r++) {
                int i = p - 1 + r * NP, at = (i & ~15) | (i & 7) << 1 | (i >> 3 & 1);
                float f[4];
                eng_e8m0x4(v[r], f);
#pragma unroll
                for (int j = 0; j < 4; j++)
                    if (i < TB) ((float *)sc)[j * TB + at] = f[j];
            }
#pragma unroll
            for (int r = 0; r < NW; r++) {
                int i = p - 1 + r * NP;
                if (i < 4 * RB) ((float *)(sc + 16 * TB))[i] = eng_e8m0(fault == DSF_ENG_WRONG ? wb[r] + 1 : wb[r]);
            }
            eng_mbar_arrive(&full[s]);
        }
        return;
    }
    if (PW == 4) asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(NC == 3 ? 152 : 232));
    int split = (fault == DSF_ENG_GEOM && NC >= 2) || (fault == DSF_ENG_BATCH && T > DSF_ENG_SUITE_MAX_ROWS);
    // Consumer warpgroup c: token group c (WS 1) or rows [c CW, (c + 1) CW) of all 64 tokens (WS 2).
    enum { CW = BW / WS };
    // The warpgroup index as a warp-uniform value, so the descriptors stay in uniform registers.
    int c = NC == 1 ? 0 : __shfl_sync(0xffffffffu, warp >> 2, 0);
    if (NWG > 1 && t0 + 64 * c >= T) return wgt_idle(full, empty, stages, KT);
    if constexpr (PARTS == 4 && WS == 1) { // a block of BW / 2 or BW / 4 rows still copies BW (the tail's only)
        enum { H = BW / 2, Q = BW / 4 };
        if (wide == BW)
            wgt_consume_parts<BW, NWG, BW, 0, 4>(base, full, empty, stages, KB, KT, c, t0, n0, y, T, N, split, fault);
        else if (wide == H)
            wgt_consume_parts<BW, NWG, H, 0, 2>(base, full, empty, stages, KB, KT, c, t0, n0, y, T, N, split, fault);
        else
            wgt_consume_parts<BW, NWG, Q, 0, 1>(base, full, empty, stages, KB, KT, c, t0, n0, y, T, N, split, fault);
    } else if constexpr (PARTS > 1 && WS == 1) {
        wgt_consume_parts<BW, NWG, BW, 0, PARTS>(base, full, empty, stages, KB, KT, c, t0, n0, y, T, N, split, fault);
    } else if constexpr (PARTS > 1) {
        if (c == 0)
            wgt_consume_parts<BW, 1, CW, 0, PARTS>(base, full, empty, stages, KB, KT, 0, t0, n0, y, T, N, split, fault);
        else
            wgt_consume_parts<BW, 1, CW, BW - CW, PARTS>(base, full, empty, stages, KB, KT, 0, t0, n0, y, T, N, split,
                                                         fault);
    } else if constexpr (BW % 32 != 0) { // a block starts 0, 8, 16 or 24 rows into a scale group: one consumer for each
        wgt_consume_at<BW, DB, 8>((int)(n0 & 31), base, full, empty, stages, KB, KT, t0, n0, y, T, N, split, fault);
    } else if (WS == 1 || c == 0) {
        wgt_consume<BW, NWG, DB, CW, 0, 0>(base, full, empty, stages, KB, KT, WS == 1 ? c : 0, t0, n0, y, T, N, split,
                                           fault);
    } else {
        wgt_consume<BW, NWG, DB, CW, BW - CW, 0>(base, full, empty, stages, KB, KT, 0, t0, n0, y, T, N, split, fault);
    }
}

typedef void (*wgt_fn)(const CUtensorMap, const CUtensorMap, const uint8_t *, const uint8_t *, uint16_t *, int64_t,
                       int64_t, int64_t, int, int, int, int, int);

// Geometry {4, rows BW, NWG warpgroups, 128 (parts - 1) + 64 (WS - 1) + 32 db + stages, t}; threads 128 NWG WS + 32 PW.
static wgt_fn wgt_pick(const dsf_geom *g) {
    if (g->p[3] < 0 || g->p[3] >= 512) return NULL;
    int bw = g->p[1], nwg = g->p[2], ws = g->p[3] / 64 % 2 + 1, db = g->p[3] / 32 % 2, parts = g->p[3] / 128 + 1;
    int pw = (g->threads - 128 * nwg * ws) / 32;
    if (g->threads != 128 * nwg * ws + 32 * pw || pw < 1 || (parts > 1 && db)) return NULL;
    if (parts == 2 && bw == 128 && nwg == 3 && pw == 4 && ws == 1) return eng_wkv_wgt<128, 3, 4, 0, 1, 2>;
    if (parts == 2 && bw == 224 && nwg == 1 && pw == 4 && ws == 2) return eng_wkv_wgt<224, 1, 4, 0, 2, 2>;
    if (parts == 4 && bw == 256 && nwg == 2 && pw == 4 && ws == 1) return eng_wkv_wgt<256, 2, 4, 0, 1, 4>;
    if (parts > 1) return NULL;
    if (bw == 128 && nwg == 1 && pw == 1 && !db && ws == 1) return eng_wkv_wgt<128, 1, 1, 0, 1>;
    if (bw == 128 && nwg == 2 && pw == 1 && !db && ws == 1) return eng_wkv_wgt<128, 2, 1, 0, 1>;
    if (bw == 128 && nwg == 3 && pw == 4 && !db && ws == 1) return eng_wkv_wgt<128, 3, 4, 0, 1>;
    if (bw == 64 && nwg == 3 && pw == 1 && !db && ws == 1) return eng_wkv_wgt<64, 3, 1, 0, 1>;
    if (bw == 128 && nwg == 2 && pw == 4 && db && ws == 1) return eng_wkv_wgt<128, 2, 4, 1, 1>;
    if (bw == 64 && nwg == 3 && pw == 1 && db && ws == 1) return eng_wkv_wgt<64, 3, 1, 1, 1>;
    if (bw == 64 && nwg == 2 && pw == 4 && db && ws == 1) return eng_wkv_wgt<64, 2, 4, 1, 1>;
    if (bw == 128 && nwg == 1 && pw == 4 && db && ws == 1) return eng_wkv_wgt<128, 1, 4, 1, 1>;
    if (bw == 224 && nwg == 1 && pw == 4 && db && ws == 2) return eng_wkv_wgt<224, 1, 4, 1, 2>;
    if (bw == 104 && nwg == 1 && pw == 4 && db && ws == 1) return eng_wkv_wgt<104, 1, 4, 1, 1>;
    return NULL;
}

const void *dsf_eng_wgt_fn(const dsf_geom *g) {
    return (const void *)wgt_pick(g);
}

int dsf_eng_wgt_launch(void *stream, const dsf_geom *g, const uint8_t *xq, const uint8_t *xs, const uint8_t *w,
                       const uint8_t *ws, uint16_t *y, int64_t T, int64_t N, int64_t K, int fault, dsf_err *e) {
    wgt_fn fn = wgt_pick(g);
    int bw = g->p[1], tb = 64 * g->p[2], stages = g->p[3] % 32;
    if (!fn || stages < 2 || stages > ENG_WGT_MAXS)
        return dsf_fail(e, "engram_wkv geometry %s: no such kernel variant", g->name);
    int parts = g->p[3] / 128 + 1;
    if (g->p[4] && ((g->p[4] != 1 && g->p[4] != 2 && g->p[4] != 4) || parts != 4))
        return dsf_fail(e, "engram_wkv geometry %s: tiles split in %d: 1, 2 or 4, by the four-part kernel only",
                        g->name, g->p[4]);
    // Token tiles vary fastest: the blocks that share a weight tile run together and read it from L2.
    int64_t tt = (T + tb - 1) / tb, F = tt * ((N + bw - 1) / bw), tail = F;
    if (F > INT_MAX / 4) // a split gives at most 4 blocks a tile
        return dsf_fail(e, "engram_wkv geometry %s: %lld tokens by %lld rows exceed the grid", g->name, (long long)T,
                        (long long)N);
    long need = (long)stages * (wgt_tile_bytes(tb, bw) + wgt_scale_bytes(tb, bw)) + 1024;
    CUtensorMap mx, mw;
    int rc = dsf_eng_prep(g, need, xq, w, T, N, K, tb, bw, &mx, &mw, e);
    if (rc) return rc < 0 ? -1 : 0;
    if (dsf_cuda_smem_limit((const void *)fn, g->dyn_smem, "engram_wkv", e)) return -1;
    int sub = 1, slots = 0;
    if (g->p[4] || parts == 4) { // four parts: split the tail, or every tile (or none) as the geometry says
        if (!g->p[4] && dsf_cuda_slots((const void *)fn, g->threads, g->dyn_smem, "engram_wkv", &slots, e)) return -1;
        sub = g->p[4] ? g->p[4] : dsf_eng_wgt_tail_sub(F, slots > 0 ? slots : 1);
        tail = sub == 1 ? F : g->p[4] ? 0 : F - F % slots;
    }
    int64_t blocks = tail + (F - tail) * sub;
    fn<<<(unsigned)blocks, g->threads, g->dyn_smem, (cudaStream_t)stream>>>(mx, mw, xs, ws, y, T, N, K, stages,
                                                                            (int)tt, (int)tail, sub, fault);
    DSF_CUDA_LAUNCHED(e, "engram_wkv");
    return 0;
}
