// engram_wkv decode kernel with tokens as the A operand (narrow): the engine's choice for 1 to 8 tokens.
#include "kern/engram/engram_mma.cuh"

// Narrow kernel: 8 tokens a warp as A (rows 8-15 zero), MW n8 weight tiles as B; same k slots as the other kernels.
template <int MW, int U>
__global__ void __launch_bounds__(256) eng_wkv_narrow(const uint8_t *__restrict__ xq, const uint8_t *__restrict__ xs,
                                                       const uint8_t *__restrict__ w, const uint8_t *__restrict__ ws,
                                                       uint16_t *__restrict__ y, int64_t T, int64_t N, int64_t K,
                                                       int fault) {
    enum { ROWS = 8 * MW, CPR = 2 * U, CH = ROWS * CPR / 32, STAGE = U * ROWS * 32 };
    static_assert(MW * U <= 32 && (ROWS * CPR) % 32 == 0, "scale prefetch lanes; whole chunks a lane");
    extern __shared__ __align__(16) uint8_t eng_dyn[];
    int lane = threadIdx.x & 31, g = lane >> 2, q = lane & 3;
    int64_t warp = (int64_t)blockIdx.y * (blockDim.x >> 5) + (threadIdx.x >> 5);
    int64_t n0 = warp * ROWS, t = (int64_t)blockIdx.x * 8 + g;
    if (n0 >= N) return;
    uint8_t *ring = eng_dyn + (threadIdx.x >> 5) * ENG_RING_BYTES(ROWS, U);
    int KB = (int)(K / 32), nb = (KB + U - 1) / U;
    int split = (fault == DSF_ENG_GEOM && MW >= 2) || (fault == DSF_ENG_BATCH && T > DSF_ENG_SUITE_MAX_ROWS);
    const uint8_t *ar = xq + (t < T ? t : T - 1) * K + 8 * q, *sr = xs + (t < T ? t : T - 1) * KB;
    const uint8_t *src[CH];
    int dst[CH], blk[CH];
#pragma unroll
    for (int c = 0; c < CH; c++) {
        int idx = lane + 32 * c, r = idx / CPR, k = idx % CPR;
        int64_t n = n0 + r;
        src[c] = w + (n < N ? n : N - 1) * K + 16 * k;
        dst[c] = ((k / 2) * ROWS + r) * 32 + 16 * (k % 2);
        blk[c] = k / 2;
    }
    auto issue = [&](int bt) {
        int lim = bt < nb ? (KB - bt * U < U ? KB - bt * U : U) : 0;
        uint8_t *st = ring + (bt % ENG_DS) * STAGE;
        size_t off = (size_t)bt * (U * 32);
        if (lim == U) {
#pragma unroll
            for (int c = 0; c < CH; c++) eng_cp16(st + dst[c], src[c] + off, 16);
        } else {
#pragma unroll
            for (int c = 0; c < CH; c++) eng_cp16(st + dst[c], src[c] + (blk[c] < lim ? off : 0), blk[c] < lim ? 16 : 0);
        }
        asm volatile("cp.async.commit_group;\n");
    };
    // A stage's weight scales (lane: tile lane / U, block lane % U), token codes and token scales, a stage ahead.
    int64_t ws_n = n0 + 8 * (lane / U);
    const uint8_t *ws_row = ws + ((ws_n < N ? ws_n : N - 1) / 32) * KB + lane % U;
    auto load = [&](int bt, float &sw, uint2 (&xf)[U], float (&sa)[U]) {
        uint32_t v = bt < nb && bt * U + lane % U < KB ? __ldg(ws_row + bt * U) : 127;
        sw = eng_e8m0(fault == DSF_ENG_WRONG ? v + 1 : v);
#pragma unroll
        for (int u = 0; u < U; u++) {
            int kb = bt * U + u < KB ? bt * U + u : KB - 1;
            xf[u] = __ldg((const uint2 *)(ar + (size_t)kb * 32));
            sa[u] = eng_e8m0(__ldg(sr + kb));
        }
    };
    float acc[MW][2];
#pragma unroll
    for (int j = 0; j < MW; j++) acc[j][0] = acc[j][1] = 0.0f;
    auto stage = [&](int bt, int lim, float sw_all, const uint2 (&xf)[U], const float (&sa)[U]) {
        asm volatile("cp.async.wait_group %0;\n" ::"n"(ENG_DS - 2));
        __syncwarp();
        issue(bt + ENG_DS - 1);
        const uint8_t *st = ring + (bt % ENG_DS) * STAGE;
#pragma unroll
        for (int u = 0; u < U; u++) {
            if (u >= lim) break;
            if (split && bt * U + u == KB / 2)
#pragma unroll
                for (int j = 0; j < MW; j++) acc[j][0] = dsf_bf16_round(acc[j][0]), acc[j][1] = dsf_bf16_round(acc[j][1]);
            uint32_t a[8] = {0, 0, 0, 0, 0, 0, 0, 0};
            eng_f16x4(xf[u].x, a[0], a[2]);
            eng_f16x4(xf[u].y, a[4], a[6]);
#pragma unroll
            for (int j = 0; j < MW; j++) {
                float s = __fmul_rn(sa[u], __shfl_sync(0xFFFFFFFFu, sw_all, j * U + u));
                uint32_t b[4];
                eng_bfrag(*(const uint2 *)(st + (u * ROWS + 8 * j + g) * 32 + 8 * q), b);
                float d[4];
                eng_block(a, b, d);
                acc[j][0] = __fmaf_rn(d[0], s, acc[j][0]);
                acc[j][1] = __fmaf_rn(d[1], s, acc[j][1]);
            }
        }
    };
#pragma unroll
    for (int s = 0; s < ENG_DS - 1; s++) issue(s);
    float swc, swn;
    uint2 xc[U], xn[U];
    float sc[U], sn[U];
    load(0, swc, xc, sc);
    int full = KB / U;
    for (int bt = 0; bt < full; bt++) {
        load(bt + 1, swn, xn, sn);
        stage(bt, U, swc, xc, sc);
        swc = swn;
#pragma unroll
        for (int u = 0; u < U; u++) xc[u] = xn[u], sc[u] = sn[u];
    }
    if (full < nb) stage(full, KB - full * U, swc, xc, sc);
    asm volatile("cp.async.wait_group 0;\n");
#pragma unroll
    for (int j = 0; j < MW; j++) {
        int64_t n = n0 + 8 * j + 2 * q;
        eng_store(y, T, N, t, n, acc[j][0], fault);
        eng_store(y, T, N, t, n + 1, acc[j][1], fault);
    }
}

#define ENG_NARROW(W, U)                                                                                              \
    if (mw == W && u == U) return eng_wkv_narrow<W, U>;

wkv_fn dsf_eng_decode_fn(const dsf_geom *g) {
    int mw = g->p[2], u = g->p[3];
    if (g->p[0] == 2) {
        ENG_NARROW(1, 4) ENG_NARROW(2, 4) ENG_NARROW(4, 4) ENG_NARROW(8, 4)
    }
    return NULL;
}
