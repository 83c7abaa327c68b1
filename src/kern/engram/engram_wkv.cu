// engram_wkv on CUDA: one FP8 mma.sync m16n8k32 per 32-block of K (one scale block), promoted to fp32 in K order.
#include "kern/cuda_check.h"
#include "kern/engram/engram_internal.h"

// Lane quad q feeds bytes 8q..8q+7 of a block to A and B in both kernels, so they agree bit for bit (docs/engram.md).
__device__ __forceinline__ void eng_mma(const uint32_t a[4], const uint32_t b[2], float d[4]) {
    asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%10,%10,%10,%10};\n"
                 : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(0.0f));
}

__device__ __forceinline__ float eng_e8m0(uint8_t b) {
    return dsf_e8m0_to_f32(b);
}

// Promotion of one block's mma result: acc = fma(d, sa*sw, acc); the product by a power of two is exact.
__device__ __forceinline__ void eng_promote(float acc[4], const float d[4], float sa0, float sa1, float sw) {
    float s0 = __fmul_rn(sa0, sw), s1 = __fmul_rn(sa1, sw);
    acc[0] = __fmaf_rn(d[0], s0, acc[0]);
    acc[1] = __fmaf_rn(d[1], s0, acc[1]);
    acc[2] = __fmaf_rn(d[2], s1, acc[2]);
    acc[3] = __fmaf_rn(d[3], s1, acc[3]);
}

__device__ __forceinline__ void eng_store(uint16_t *y, int64_t T, int64_t N, int64_t t, int64_t n, float v0, float v1,
                                          int fault) {
    if (t >= T || n >= N) return;
    int skip = fault == DSF_ENG_SKIP && t == T - 1 && n + 1 == N - 1;
    if (skip) {
        y[t * N + n] = dsf_bf16_from_f32(v0);
        return;
    }
    uint32_t pk = (uint32_t)dsf_bf16_from_f32(v0) | ((uint32_t)dsf_bf16_from_f32(v1) << 16);
    *(uint32_t *)(y + t * N + n) = pk;
}

// 16-byte weight load that skips L1 (each byte is used once) and asks L2 for the row's whole 256-byte span.
__device__ __forceinline__ uint4 eng_ld_stream(const uint8_t *p) {
    uint4 v;
    asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
    return v;
}

// In: 16 bytes of block q&1 (its 8-byte chunks 2(q>>1), +1); out: chunk q of blocks 0, 1, as the tiled kernel feeds.
__device__ __forceinline__ void eng_pair(uint4 v, int q0, uint2 f[2]) {
    uint32_t s0 = q0 ? v.x : v.z, s1 = q0 ? v.y : v.w;
    uint32_t r0 = __shfl_xor_sync(0xFFFFFFFFu, s0, 1), r1 = __shfl_xor_sync(0xFFFFFFFFu, s1, 1);
    f[0] = q0 ? make_uint2(r0, r1) : make_uint2(v.x, v.y);
    f[1] = q0 ? make_uint2(v.z, v.w) : make_uint2(r0, r1);
}

// Direct kernel (decode): a warp owns MT m16 token tiles x NW n8 row tiles and streams its rows' K, U blocks a batch.
template <int MT, int NW, int U>
__global__ void __launch_bounds__(256) eng_wkv_direct(const uint8_t *__restrict__ xq, const uint8_t *__restrict__ xs,
                                                       const uint8_t *__restrict__ w, const uint8_t *__restrict__ ws,
                                                       uint16_t *__restrict__ y, int64_t T, int64_t N, int64_t K,
                                                       int fault) {
    int lane = threadIdx.x & 31, g = lane >> 2, q = lane & 3, q0 = q & 1;
    int64_t warp = (int64_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    int64_t n0 = warp * 8 * NW, t0 = (int64_t)blockIdx.y * 16 * MT;
    if (n0 >= N) return;
    int64_t KB = K / 32;
    // Controls split K with a bf16 partial: DSF_ENG_GEOM at 2 or more row tiles a warp, DSF_ENG_BATCH in large calls.
    int split = (fault == DSF_ENG_GEOM && NW >= 2) || (fault == DSF_ENG_BATCH && T > DSF_ENG_SUITE_MAX_ROWS);
    const uint8_t *wr[NW], *ar[MT][2], *sr[MT][2];
#pragma unroll
    for (int j = 0; j < NW; j++) {
        int64_t n = n0 + 8 * j + g;
        wr[j] = n < N ? w + n * K + 32 * q0 + 16 * (q >> 1) : NULL;
    }
#pragma unroll
    for (int m = 0; m < MT; m++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            int64_t t = t0 + 16 * m + g + 8 * h;
            ar[m][h] = t < T ? xq + t * K + 8 * q : NULL;
            sr[m][h] = t < T ? xs + t * KB : NULL;
        }
    // The lane that prefetches one weight scale byte of the batch: row tile lane / U, block lane % U.
    int64_t ws_n = n0 + 8 * (lane / U);
    const uint8_t *ws_row = lane < NW * U && ws_n < N ? ws + (ws_n / 32) * KB + lane % U : NULL;
    float acc[MT][NW][4];
#pragma unroll
    for (int m = 0; m < MT; m++)
#pragma unroll
        for (int j = 0; j < NW; j++)
#pragma unroll
            for (int i = 0; i < 4; i++) acc[m][j][i] = 0.0f;
    for (int64_t kb0 = 0; kb0 < KB; kb0 += U) {
        uint4 bv[NW][U / 2];
#pragma unroll
        for (int j = 0; j < NW; j++)
#pragma unroll
            for (int p = 0; p < U / 2; p++)
                bv[j][p] = wr[j] && kb0 + 2 * p + q0 < KB ? eng_ld_stream(wr[j] + (kb0 + 2 * p) * 32)
                                                         : make_uint4(0, 0, 0, 0);
        uint32_t wsb = ws_row && kb0 + lane % U < KB ? __ldg(ws_row + kb0) : 127;
        if (fault == DSF_ENG_WRONG) wsb++;
        uint2 af[U][MT][2];
        float sa[U][MT][2];
#pragma unroll
        for (int u = 0; u < U; u++)
#pragma unroll
            for (int m = 0; m < MT; m++)
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    int ok = ar[m][h] && kb0 + u < KB;
                    af[u][m][h] = ok ? __ldg((const uint2 *)(ar[m][h] + (kb0 + u) * 32)) : make_uint2(0, 0);
                    sa[u][m][h] = ok ? eng_e8m0(__ldg(sr[m][h] + kb0 + u)) : 0.0f;
                }
#pragma unroll
        for (int p = 0; p < U / 2; p++) {
            uint2 bf[NW][2];
#pragma unroll
            for (int j = 0; j < NW; j++) eng_pair(bv[j][p], q0, bf[j]);
#pragma unroll
            for (int b = 0; b < 2; b++) {
                int u = 2 * p + b;
                int64_t kb = kb0 + u;
                if (kb >= KB) break;
                if (split && kb == KB / 2)
#pragma unroll
                    for (int m = 0; m < MT; m++)
#pragma unroll
                        for (int j = 0; j < NW; j++)
#pragma unroll
                            for (int i = 0; i < 4; i++) acc[m][j][i] = dsf_bf16_round(acc[m][j][i]);
                float sw[NW];
#pragma unroll
                for (int j = 0; j < NW; j++) sw[j] = eng_e8m0((uint8_t)__shfl_sync(0xFFFFFFFFu, wsb, j * U + u));
#pragma unroll
                for (int m = 0; m < MT; m++) {
                    uint32_t a[4] = {af[u][m][0].x, af[u][m][1].x, af[u][m][0].y, af[u][m][1].y};
#pragma unroll
                    for (int j = 0; j < NW; j++) {
                        uint32_t bb[2] = {bf[j][b].x, bf[j][b].y};
                        float d[4];
                        eng_mma(a, bb, d);
                        eng_promote(acc[m][j], d, sa[u][m][0], sa[u][m][1], sw[j]);
                    }
                }
            }
        }
    }
#pragma unroll
    for (int m = 0; m < MT; m++)
#pragma unroll
        for (int j = 0; j < NW; j++) {
            int64_t t = t0 + 16 * m + g, n = n0 + 8 * j + 2 * q;
            float *a = acc[m][j];
            eng_store(y, T, N, t, n, a[0], a[1], fault);
            eng_store(y, T, N, t + 8, n, a[2], a[3], fault);
        }
}

// Tiled kernel: 128 tokens x 128 rows a block, 8 warps (2 x 4), double-buffered stages of 2 K blocks (cp.async).
#define ENG_BM 128
#define ENG_BN 128
#define ENG_ST 2
#define ENG_STAGE_BYTES (2 * (ENG_BM + ENG_BN) * 32)

__device__ __forceinline__ void eng_cp16(void *smem, const void *gmem, int bytes) {
    unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(bytes));
}

__global__ void __launch_bounds__(256) eng_wkv_tiled(const uint8_t *__restrict__ xq, const uint8_t *__restrict__ xs,
                                                      const uint8_t *__restrict__ w, const uint8_t *__restrict__ ws,
                                                      uint16_t *__restrict__ y, int64_t T, int64_t N, int64_t K,
                                                      int fault) {
    __shared__ __align__(16) uint8_t tiles[ENG_ST][ENG_STAGE_BYTES];
    __shared__ float sas[ENG_ST][2][ENG_BM];
    __shared__ float sws[ENG_ST][2][ENG_BN / 32];
    int tid = threadIdx.x, lane = tid & 31, g = lane >> 2, q = lane & 3, wid = tid >> 5;
    int wm = wid >> 2, wn = wid & 3;
    int64_t n_base = (int64_t)blockIdx.x * ENG_BN, t_base = (int64_t)blockIdx.y * ENG_BM;
    int64_t KB = K / 32, steps = (KB + 1) / 2;
    float acc[4][4][4];
    for (int m = 0; m < 4; m++)
        for (int j = 0; j < 4; j++)
            for (int i = 0; i < 4; i++) acc[m][j][i] = 0.0f;
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
        for (int kk = 0; kk < 2 && st * 2 + kk < KB; kk++) {
            const uint8_t *As = &tiles[buf][kk * (ENG_BM + ENG_BN) * 32];
            const uint8_t *Bs = As + ENG_BM * 32;
            uint32_t b[4][2];
            for (int j = 0; j < 4; j++) {
                uint2 v = *(const uint2 *)(Bs + (wn * 32 + 8 * j + g) * 32 + 8 * q);
                b[j][0] = v.x, b[j][1] = v.y;
            }
            float sw = sws[buf][kk][wn];
            for (int m = 0; m < 4; m++) {
                int r0 = wm * 64 + 16 * m + g;
                uint2 lo = *(const uint2 *)(As + r0 * 32 + 8 * q), hi = *(const uint2 *)(As + (r0 + 8) * 32 + 8 * q);
                uint32_t a[4] = {lo.x, hi.x, lo.y, hi.y};
                float sa0 = sas[buf][kk][r0], sa1 = sas[buf][kk][r0 + 8];
                for (int j = 0; j < 4; j++) {
                    float d[4];
                    eng_mma(a, b[j], d);
                    eng_promote(acc[m][j], d, sa0, sa1, sw);
                }
            }
        }
    }
    asm volatile("cp.async.wait_group 0;\n");
    for (int m = 0; m < 4; m++)
        for (int j = 0; j < 4; j++) {
            int64_t t = t_base + wm * 64 + 16 * m + g, n = n_base + wn * 32 + 8 * j + 2 * q;
            float *a = acc[m][j];
            eng_store(y, T, N, t, n, a[0], a[1], fault);
            eng_store(y, T, N, t + 8, n, a[2], a[3], fault);
        }
}

typedef void (*wkv_fn)(const uint8_t *, const uint8_t *, const uint8_t *, const uint8_t *, uint16_t *, int64_t,
                       int64_t, int64_t, int);

// Geometry p[0]: 0 direct, 1 tiled; direct p[1] = m16 tiles per warp (1, 2, 4), p[2] = n8 tiles per warp (1, 2, 4).
static wkv_fn pick(const dsf_geom *g) {
    if (g->p[0] == 1) return eng_wkv_tiled;
    int mt = g->p[1], nw = g->p[2];
#define ENG_PICK(M, W, U)                                                                                             \
    if (mt == M && nw == W) return eng_wkv_direct<M, W, U>;
    ENG_PICK(1, 1, 8) ENG_PICK(1, 2, 8) ENG_PICK(1, 4, 4) ENG_PICK(2, 2, 4) ENG_PICK(4, 1, 2) ENG_PICK(4, 2, 2)
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
        grid = dim3((unsigned)((N + ENG_BN - 1) / ENG_BN), (unsigned)((T + ENG_BM - 1) / ENG_BM));
    } else {
        int64_t rows_per_block = (int64_t)(g->threads / 32) * 8 * g->p[2];
        grid = dim3((unsigned)((N + rows_per_block - 1) / rows_per_block), (unsigned)((T + 16 * g->p[1] - 1) / (16 * g->p[1])));
    }
    if (grid.y > 65535) return dsf_fail(e, "engram_wkv: %lld tokens exceed the grid", (long long)T);
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
