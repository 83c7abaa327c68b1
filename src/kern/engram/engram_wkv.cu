// engram_wkv on CUDA: per 32-block of K, e4m3 codes become f16 (exact) for two m16n8k16 mma; fp32 promotion in K order.
#include "kern/cuda_check.h"
#include "kern/engram/engram_mma.cuh"

// Direct kernel (decode): a warp owns MW m16 weight tiles x NT n8 token tiles, U blocks a stage through its own ring.
template <int NT, int MW, int U>
__global__ void __launch_bounds__(256) eng_wkv_direct(const uint8_t *__restrict__ xq, const uint8_t *__restrict__ xs,
                                                       const uint8_t *__restrict__ w, const uint8_t *__restrict__ ws,
                                                       uint16_t *__restrict__ y, int64_t T, int64_t N, int64_t K,
                                                       int fault) {
    enum { ROWS = 16 * MW, CPR = 2 * U, CH = ROWS * CPR / 32, STAGE = U * ROWS * 32 };
    static_assert(MW * U <= 32 && (ROWS * CPR) % 32 == 0, "scale prefetch lanes; whole chunks a lane");
    extern __shared__ __align__(16) uint8_t eng_dyn[];
    int lane = threadIdx.x & 31, g = lane >> 2, q = lane & 3;
    int64_t warp = (int64_t)blockIdx.y * (blockDim.x >> 5) + (threadIdx.x >> 5);
    int64_t n0 = warp * 16 * MW, t0 = (int64_t)blockIdx.x * 8 * NT;
    if (n0 >= N) return;
    uint8_t *ring = eng_dyn + (threadIdx.x >> 5) * ENG_RING_BYTES(ROWS, U);
    int KB = (int)(K / 32), nb = (KB + U - 1) / U;
    // Controls split K with a bf16 partial: DSF_ENG_GEOM at 2 or more weight tiles a warp, DSF_ENG_BATCH past 64 rows.
    int split = (fault == DSF_ENG_GEOM && MW >= 2) || (fault == DSF_ENG_BATCH && T > DSF_ENG_SUITE_MAX_ROWS);
    // Rows and tokens past the end read the last valid one: an mma output depends only on its own row and column.
    const uint8_t *ar[NT], *sr[NT][2];
#pragma unroll
    for (int i = 0; i < NT; i++) {
        int64_t t = t0 + 8 * i + g;
        ar[i] = xq + (t < T ? t : T - 1) * K + 8 * q;
#pragma unroll
        for (int h = 0; h < 2; h++) {
            int64_t tc = t0 + 8 * i + 2 * q + h;
            sr[i][h] = xs + (tc < T ? tc : T - 1) * KB;
        }
    }
    // Stage chunks, CH of 16 bytes a lane: chunk k of stage row r is half k % 2 of block k / 2 of that row's U blocks.
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
    // Stage bt (its first `lim` blocks exist) into ring slot bt % ENG_DS; always one commit group.
    auto issue = [&](int bt, int lim) {
        uint8_t *st = ring + (bt % ENG_DS) * STAGE;
        size_t off = (size_t)bt * (U * 32);
#pragma unroll
        for (int c = 0; c < CH; c++) eng_cp16(st + dst[c], src[c] + (blk[c] < lim ? off : 0), blk[c] < lim ? 16 : 0);
        asm volatile("cp.async.commit_group;\n");
    };
    // The lane that prefetches one weight scale of a stage: weight tile lane / U, block lane % U.
    int64_t ws_n = n0 + 16 * (lane / U);
    const uint8_t *ws_row = ws + ((ws_n < N ? ws_n : N - 1) / 32) * KB + lane % U;
    auto wscale = [&](int bt) {
        uint32_t v = bt < nb && bt * U + lane % U < KB ? __ldg(ws_row + bt * U) : 127;
        return eng_e8m0(fault == DSF_ENG_WRONG ? v + 1 : v);
    };
    float acc[MW][NT][4];
#pragma unroll
    for (int j = 0; j < MW; j++)
#pragma unroll
        for (int i = 0; i < NT; i++)
#pragma unroll
            for (int c = 0; c < 4; c++) acc[j][i][c] = 0.0f;
    // One stage of `lim` blocks (U in every full stage, so the checks fold away there).
    auto stage = [&](int bt, int lim, float sw_all) {
        int kb0 = bt * U;
        uint2 xf[U][NT];
        float sa[U][NT][2];
#pragma unroll
        for (int u = 0; u < U; u++) {
            int kb = u < lim ? kb0 + u : kb0;
#pragma unroll
            for (int i = 0; i < NT; i++) {
                xf[u][i] = __ldg((const uint2 *)(ar[i] + (size_t)kb * 32));
#pragma unroll
                for (int h = 0; h < 2; h++) sa[u][i][h] = eng_e8m0(__ldg(sr[i][h] + kb));
            }
        }
        asm volatile("cp.async.wait_group %0;\n" ::"n"(ENG_DS - 2));
        __syncwarp();
        int nx = bt + ENG_DS - 1;
        issue(nx, nx < nb ? (KB - nx * U < U ? KB - nx * U : U) : 0);
        const uint8_t *st = ring + (bt % ENG_DS) * STAGE;
#pragma unroll
        for (int u = 0; u < U; u++) {
            if (u >= lim) break;
            if (split && kb0 + u == KB / 2)
#pragma unroll
                for (int j = 0; j < MW; j++)
#pragma unroll
                    for (int i = 0; i < NT; i++)
#pragma unroll
                        for (int c = 0; c < 4; c++) acc[j][i][c] = dsf_bf16_round(acc[j][i][c]);
            uint32_t xb[NT][4];
#pragma unroll
            for (int i = 0; i < NT; i++) eng_bfrag(xf[u][i], xb[i]);
#pragma unroll
            for (int j = 0; j < MW; j++) {
                float sw = __shfl_sync(0xFFFFFFFFu, sw_all, j * U + u);
                const uint8_t *rw = st + (u * ROWS + 16 * j + g) * 32 + 8 * q;
                uint32_t a[8];
                eng_afrag(*(const uint2 *)rw, *(const uint2 *)(rw + 8 * 32), a);
#pragma unroll
                for (int i = 0; i < NT; i++) {
                    float d[4];
                    eng_block(a, xb[i], d);
                    eng_promote(acc[j][i], d, sa[u][i][0], sa[u][i][1], sw);
                }
            }
        }
    };
#pragma unroll
    for (int s = 0; s < ENG_DS - 1; s++) issue(s, s < nb ? (KB - s * U < U ? KB - s * U : U) : 0);
    float swc = wscale(0);
    int full = KB / U;
    for (int bt = 0; bt < full; bt++) {
        float swn = wscale(bt + 1);
        stage(bt, U, swc);
        swc = swn;
    }
    if (full < nb) stage(full, KB - full * U, swc);
    asm volatile("cp.async.wait_group 0;\n");
#pragma unroll
    for (int j = 0; j < MW; j++)
#pragma unroll
        for (int i = 0; i < NT; i++) eng_store_tile(y, T, N, t0 + 8 * i + 2 * q, n0 + 16 * j + g, acc[j][i], fault);
}

// Tiled kernel: 128 tokens x 128 rows a block, 8 warps (2 x 4: 64 tokens x 32 rows), stages of 2 K blocks (cp.async).
#define ENG_BM 128
#define ENG_BN 128
#define ENG_ST 2
#define ENG_STAGE_BYTES (2 * (ENG_BM + ENG_BN) * 32)


__global__ void __launch_bounds__(256) eng_wkv_tiled(const uint8_t *__restrict__ xq, const uint8_t *__restrict__ xs,
                                                      const uint8_t *__restrict__ w, const uint8_t *__restrict__ ws,
                                                      uint16_t *__restrict__ y, int64_t T, int64_t N, int64_t K,
                                                      int fault) {
    __shared__ __align__(16) uint8_t tiles[ENG_ST][ENG_STAGE_BYTES];
    __shared__ float sas[ENG_ST][2][ENG_BM];
    __shared__ float sws[ENG_ST][2][ENG_BN / 32];
    int tid = threadIdx.x, lane = tid & 31, g = lane >> 2, q = lane & 3, wid = tid >> 5;
    int wm = wid >> 2, wn = wid & 3;
    int64_t n_base = (int64_t)blockIdx.y * ENG_BN, t_base = (int64_t)blockIdx.x * ENG_BM;
    int64_t KB = K / 32, steps = (KB + 1) / 2;
    float acc[2][8][4];
#pragma unroll
    for (int j = 0; j < 2; j++)
#pragma unroll
        for (int i = 0; i < 8; i++)
#pragma unroll
            for (int c = 0; c < 4; c++) acc[j][i][c] = 0.0f;
    // Stage layout: [k block 0..1][A 128 rows | B 128 rows][32 bytes].
    auto issue = [&](int64_t st, int buf) {
        for (int c = tid; c < 2 * (ENG_BM + ENG_BN) * 2; c += 256) {
            int half = c & 1, row = (c >> 1) % (ENG_BM + ENG_BN), kk = (c >> 1) / (ENG_BM + ENG_BN);
            int64_t kb = st * 2 + kk;
            int isb = row >= ENG_BM;
            int64_t r = isb ? n_base + row - ENG_BM : t_base + row;
            int ok = kb < KB && r < (isb ? N : T);
            const uint8_t *src = (isb ? w : xq) + (ok ? r * K + kb * 32 + 16 * half : 0);
            eng_cp16(&tiles[buf][(kk * (ENG_BM + ENG_BN) + row) * 32 + 16 * half], src, ok ? 16 : 0);
        }
        for (int c = tid; c < 2 * ENG_BM; c += 256) {
            int kk = c / ENG_BM, row = c % ENG_BM;
            int64_t kb = st * 2 + kk, t = t_base + row;
            sas[buf][kk][row] = kb < KB && t < T ? eng_e8m0(xs[t * KB + kb]) : 0.0f;
        }
        if (tid < 2 * (ENG_BN / 32)) {
            int kk = tid / (ENG_BN / 32), nb = tid % (ENG_BN / 32);
            int64_t kb = st * 2 + kk, n = n_base + 32 * nb;
            uint8_t b = kb < KB && n < N ? ws[(n / 32) * KB + kb] : 127;
            if (fault == DSF_ENG_WRONG) b++;
            sws[buf][kk][nb] = eng_e8m0(b);
        }
        asm volatile("cp.async.commit_group;\n");
    };
    for (int s = 0; s < ENG_ST - 1; s++) issue(s, s);
    for (int64_t st = 0; st < steps; st++) {
        asm volatile("cp.async.wait_group %0;\n" ::"n"(ENG_ST - 2));
        __syncthreads();
        if (st + ENG_ST - 1 < steps)
            issue(st + ENG_ST - 1, (int)((st + ENG_ST - 1) % ENG_ST));
        else
            asm volatile("cp.async.commit_group;\n");
        int buf = (int)(st % ENG_ST);
#pragma unroll
        for (int kk = 0; kk < 2; kk++) {
            if (st * 2 + kk >= KB) break;
            const uint8_t *As = &tiles[buf][kk * (ENG_BM + ENG_BN) * 32];
            const uint8_t *Bs = As + ENG_BM * 32;
            uint32_t xb[8][4];
            float sa[8][2];
#pragma unroll
            for (int i = 0; i < 8; i++) {
                int tr = wm * 64 + 8 * i;
                eng_bfrag(*(const uint2 *)(As + (tr + g) * 32 + 8 * q), xb[i]);
                sa[i][0] = sas[buf][kk][tr + 2 * q], sa[i][1] = sas[buf][kk][tr + 2 * q + 1];
            }
            float sw = sws[buf][kk][wn];
#pragma unroll
            for (int j = 0; j < 2; j++) {
                int r0 = wn * 32 + 16 * j + g;
                uint32_t a[8];
                eng_afrag(*(const uint2 *)(Bs + r0 * 32 + 8 * q), *(const uint2 *)(Bs + (r0 + 8) * 32 + 8 * q), a);
#pragma unroll
                for (int i = 0; i < 8; i++) {
                    float d[4];
                    eng_block(a, xb[i], d);
                    eng_promote(acc[j][i], d, sa[i][0], sa[i][1], sw);
                }
            }
        }
    }
    asm volatile("cp.async.wait_group 0;\n");
#pragma unroll
    for (int j = 0; j < 2; j++)
#pragma unroll
        for (int i = 0; i < 8; i++)
            eng_store_tile(y, T, N, t_base + wm * 64 + 8 * i + 2 * q, n_base + wn * 32 + 16 * j + g, acc[j][i], fault);
}

// Geometry p[0]: 0 direct, 1 tiled, 2 narrow; p[1] n8 token tiles a warp, p[2] weight tiles, p[3] blocks a stage.
static wkv_fn pick(const dsf_geom *g) {
    if (g->p[0] == 1) return eng_wkv_tiled;
    int nt = g->p[1], mw = g->p[2], u = g->p[3];
    if (g->p[0] == 2) return dsf_eng_decode_fn(g);
#define ENG_PICK(X, W, U)                                                                                             \
    if (nt == X && mw == W && u == U) return eng_wkv_direct<X, W, U>;
    ENG_PICK(1, 1, 4) ENG_PICK(1, 1, 8) ENG_PICK(1, 2, 4) ENG_PICK(1, 2, 8) ENG_PICK(2, 1, 4) ENG_PICK(4, 2, 4)
    ENG_PICK(8, 1, 2)
#undef ENG_PICK
    return NULL;
}

extern "C" int dsf_engram_wkv_cuda_v(void *stream, const dsf_geom *g, const uint8_t *xq, const uint8_t *xs,
                                     const uint8_t *w, const uint8_t *ws, uint16_t *y, int64_t T, int64_t N, int64_t K,
                                     int fault, dsf_err *e) {
    if (T < 0 || N <= 0 || K <= 0 || N % 32 || K % 32)
        return dsf_fail(e, "engram_wkv: T %lld, N %lld, K %lld: N and K must be positive multiples of 32", (long long)T,
                        (long long)N, (long long)K);
    if ((uintptr_t)xq % 16 || (uintptr_t)w % 16 || (uintptr_t)y % 4)
        return dsf_fail(e, "engram_wkv: xq and w need 16-byte alignment, y 4-byte");
    wkv_fn fn = pick(g);
    if (!fn || g->threads < 32 || g->threads > 256 || g->threads % 32 || (g->p[0] == 1 && g->threads != 256))
        return dsf_fail(e, "engram_wkv geometry %s: no such kernel variant", g->name);
    if (T == 0) return 0;
    dim3 grid;
    if (g->p[0] == 1) {
        grid = dim3((unsigned)((T + ENG_BM - 1) / ENG_BM), (unsigned)((N + ENG_BN - 1) / ENG_BN));
    } else {
        int narrow = g->p[0] == 2, tok = narrow ? 8 : 8 * g->p[1];
        int64_t rows_per_block = (int64_t)(g->threads / 32) * (narrow ? 8 : 16) * g->p[2];
        long need = (long)(g->threads / 32) * ENG_RING_BYTES((narrow ? 8 : 16) * g->p[2], g->p[3]);
        if (g->dyn_smem < need)
            return dsf_fail(e, "engram_wkv geometry %s: declares %d bytes of dynamic shared memory, its rings need %ld",
                            g->name, g->dyn_smem, need);
        // Token tiles vary fastest, so the blocks that share weight rows run together and re-read them from L2.
        grid = dim3((unsigned)((T + tok - 1) / tok), (unsigned)((N + rows_per_block - 1) / rows_per_block));
    }
    if (grid.y > 65535) return dsf_fail(e, "engram_wkv: %lld tokens or %lld rows exceed the grid", (long long)T, (long long)N);
    if (g->dyn_smem > 48 * 1024)
        DSF_CUDA_TRY(e, cudaFuncSetAttribute((const void *)fn, cudaFuncAttributeMaxDynamicSharedMemorySize, g->dyn_smem));
    fn<<<grid, g->threads, g->dyn_smem, (cudaStream_t)stream>>>(xq, xs, w, ws, y, T, N, K, fault);
    DSF_CUDA_LAUNCHED(e, "engram_wkv");
    return 0;
}

extern "C" int dsf_engram_wkv_cuda(void *stream, const dsf_geom *g, const uint8_t *xq, const uint8_t *xs,
                                   const uint8_t *w, const uint8_t *ws, uint16_t *y, int64_t T, int64_t N, int64_t K,
                                   dsf_err *e) {
    return dsf_engram_wkv_cuda_v(stream, g, xq, xs, w, ws, y, T, N, K, DSF_ENG_REAL, e);
}

extern "C" int dsf_engram_wkv_cuda_fn_attrs(const dsf_geom *g, dsf_func_attrs *out, dsf_err *e) {
    wkv_fn fn = pick(g);
    if (!fn) return dsf_fail(e, "engram_wkv geometry %s: no such kernel variant", g->name);
    cudaFuncAttributes a;
    DSF_CUDA_TRY(e, cudaFuncGetAttributes(&a, (const void *)fn));
    out->regs_per_thread = a.numRegs;
    out->static_smem = (int)a.sharedSizeBytes;
    out->max_threads_per_block = a.maxThreadsPerBlock;
    out->local_bytes = (int)a.localSizeBytes;
    return 0;
}
