// engram_wkv with wgmma (sm_90a): e4m3 codes straight to the tensor cores, one m64nNk32 per 32-block, fp32 promotion.
#include <cudaTypedefs.h>
#include <pthread.h>

#include "kern/engram/engram_wg.cuh"

#define ENG_WG_MAXS 16

// Block: NWG consumer warpgroups of 64 weight rows each, then one producer warp; BN tokens; stages of U atoms.
template <int BN, int NWG, int U>
__global__ void __launch_bounds__(128 * NWG + 32)
    eng_wkv_wg(const __grid_constant__ CUtensorMap tw, const __grid_constant__ CUtensorMap tx,
               const uint8_t *__restrict__ xs, const uint8_t *__restrict__ ws, uint16_t *__restrict__ y, int64_t T,
               int64_t N, int64_t K, int stages, int fault) {
    enum { BM = 64 * NWG, SA = U * BM * ENG_ATOM, STAGE = U * (BM + BN) * ENG_ATOM, R = BN / 2, NB = 4 * U };
    // A stage's scales as floats: token scales [NB][BN], then weight scales [NB][BG]; NI of them a producer lane.
    enum { BG = BM / 32, NS = NB * (BN + BG), SCB = 4 * NS, NI = (NS + 30) / 31 };
    extern __shared__ uint8_t eng_dyn[];
    __shared__ uint64_t full[ENG_WG_MAXS], empty[ENG_WG_MAXS];
    // Stages at 1024-byte alignment (the swizzle atom): [U][BM][128] weights, [U][BN][128] tokens; then the scales.
    uint8_t *base = eng_dyn + ((1024 - (eng_smem(eng_dyn) & 1023)) & 1023);
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    int64_t n0 = (int64_t)blockIdx.y * BM, t0 = (int64_t)blockIdx.x * BN;
    int KB = (int)(K / 32), KT = (KB + NB - 1) / NB;
    uint8_t *scl = base + (size_t)stages * STAGE;
    eng_ring_init(full, empty, stages, 32, 128 * NWG);
    if (warp == 4 * NWG) {
        // Producer: lane 0 starts a stage's 2U tensor copies, the other lanes write its scales, once its slot is free.
        uint64_t pol = eng_evict_first();
        for (int kt = 0; kt < KT; kt++) {
            int s = kt % stages, use = kt / stages;
            uint8_t *st = base + (size_t)s * STAGE;
            float *sc = (float *)(scl + (size_t)s * SCB), v[NI];
            // The scales are read before the slot wait, which hides their latency; rows past the end read 0 or 127.
#pragma unroll
            for (int r = 0; r < NI; r++) {
                int i = lane - 1 + 31 * r, j = i < NB * BN ? i / BN : (i - NB * BN) / BG, kb = kt * NB + j;
                int64_t t = t0 + i % BN, n = n0 + 32 * ((i - NB * BN) % BG);
                v[r] = 0.0f;
                if (lane > 0 && i < NB * BN)
                    v[r] = t < T && kb < KB ? eng_e8m0(xs[t * KB + kb]) : 0.0f;
                else if (lane > 0 && i < NS) {
                    uint32_t b = n < N && kb < KB ? ws[(n / 32) * KB + kb] : 127;
                    v[r] = eng_e8m0(fault == DSF_ENG_WRONG ? b + 1 : b);
                }
            }
            if (use > 0) eng_mbar_wait(&empty[s], (use - 1) & 1);
            if (lane == 0) {
                eng_mbar_expect(&full[s], STAGE);
                for (int u = 0; u < U; u++) {
                    int x = (kt * U + u) * ENG_ATOM;
                    eng_tma_w(st + u * BM * ENG_ATOM, &tw, x, (int)n0, &full[s], pol, gridDim.x == 1);
                    eng_tma(st + SA + u * BN * ENG_ATOM, &tx, x, (int)t0, &full[s]);
                }
                continue;
            }
#pragma unroll
            for (int r = 0; r < NI; r++)
                if (lane - 1 + 31 * r < NS) sc[lane - 1 + 31 * r] = v[r];
            eng_mbar_arrive(&full[s]);
        }
        return;
    }
    // The consumers meet once before their loop; without it ptxas serialises the wgmma (C7520, divergent path).
    asm volatile("bar.sync 1, %0;\n" ::"n"(128 * NWG) : "memory");
    int wg = warp >> 2, g = lane >> 2, q = lane & 3, grp = (wg * 64 + (warp & 3) * 16) / 32;
    int split = (fault == DSF_ENG_GEOM && NWG >= 2) || (fault == DSF_ENG_BATCH && T > DSF_ENG_SUITE_MAX_ROWS);
    float acc[R], d[NB][R], pr[NB][BN / 8][2];
#pragma unroll
    for (int i = 0; i < R; i++) {
        acc[i] = 0.0f;
#pragma unroll
        for (int j = 0; j < NB; j++) d[j][i] = 0.0f;
    }
    // Stage kt's blocks as fresh products in one commit group; while they run, this thread reads the stage's sa * sw.
    auto issue = [&](int kt) {
        int s = kt % stages, kb0 = kt * NB;
        const uint8_t *st = base + (size_t)s * STAGE;
        const float *sc = (const float *)(scl + (size_t)s * SCB);
        eng_mbar_wait(&full[s], (kt / stages) & 1);
        eng_wg_fence();
#pragma unroll
        for (int j = 0; j < NB; j++) {
            const uint8_t *a = st + ((j / 4) * BM + wg * 64) * ENG_ATOM, *b = st + SA + (j / 4) * BN * ENG_ATOM;
            if (kb0 + j < KB) eng_wgmma(d[j], eng_desc(a) + 2 * (j & 3), eng_desc(b) + 2 * (j & 3));
        }
        eng_wg_commit();
#pragma unroll
        for (int j = 0; j < NB; j++) {
            float sw = sc[NB * BN + j * BG + grp];
#pragma unroll
            for (int i = 0; i < BN / 8; i++) {
                float2 sa = *(const float2 *)(sc + j * BN + 8 * i + 2 * q);
                pr[j][i][0] = __fmul_rn(sa.x, sw), pr[j][i][1] = __fmul_rn(sa.y, sw);
            }
        }
    };
    // Promotion in K order, acc = fma(d, sa * sw, acc) per element.
    auto promote = [&](int kt) {
        // The controls' split: the first KT / 2 stages end as a bf16 partial (once a stage, not in every block).
        if (split && kt == KT / 2)
#pragma unroll
            for (int i = 0; i < R; i++) acc[i] = dsf_bf16_round(acc[i]);
#pragma unroll
        for (int j = 0; j < NB; j++) {
            if (kt * NB + j >= KB) break;
            eng_wg_hold(d[j]);
#pragma unroll
            for (int i = 0; i < BN / 8; i++) {
                acc[4 * i] = __fmaf_rn(d[j][4 * i], pr[j][i][0], acc[4 * i]);
                acc[4 * i + 1] = __fmaf_rn(d[j][4 * i + 1], pr[j][i][1], acc[4 * i + 1]);
                acc[4 * i + 2] = __fmaf_rn(d[j][4 * i + 2], pr[j][i][0], acc[4 * i + 2]);
                acc[4 * i + 3] = __fmaf_rn(d[j][4 * i + 3], pr[j][i][1], acc[4 * i + 3]);
            }
        }
    };
    // Every consumer thread hands a stage's slot back (each read scales from it) once its products are done.
    for (int kt = 0; kt < KT; kt++) {
        issue(kt);
        eng_wg_wait<0>();
        eng_mbar_arrive(&empty[kt % stages]);
        promote(kt);
    }
    int64_t n = n0 + wg * 64 + (warp & 3) * 16 + g;
#pragma unroll
    for (int i = 0; i < BN / 8; i++) eng_store_tile(y, T, N, t0 + 8 * i + 2 * q, n, acc + 4 * i, fault);
}

typedef void (*wg_fn)(const CUtensorMap, const CUtensorMap, const uint8_t *, const uint8_t *, uint16_t *, int64_t,
                      int64_t, int64_t, int, int);

// Geometry {3, BN tokens a block, NWG warpgroups, 32 U + stages}: U atoms (4U blocks) a stage.
static wg_fn wg_pick(const dsf_geom *g) {
    static const struct {
        int bn, nwg, u;
        wg_fn fn;
    } fns[] = {{8, 1, 1, eng_wkv_wg<8, 1, 1>},
               {8, 1, 2, eng_wkv_wg<8, 1, 2>},
               {8, 2, 2, eng_wkv_wg<8, 2, 2>},
               {16, 2, 1, eng_wkv_wg<16, 2, 1>},
               {32, 2, 1, eng_wkv_wg<32, 2, 1>}};
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++)
        if (g->p[1] == fns[i].bn && g->p[2] == fns[i].nwg && g->p[3] / 32 == fns[i].u) return fns[i].fn;
    return NULL;
}

// The ring's stages (U atoms of weights and tokens each), then every stage's scales as floats, and the alignment slack.
static long wg_smem(const dsf_geom *g) {
    long bm = 64L * g->p[2], bn = g->p[1], u = g->p[3] / 32;
    return (long)(g->p[3] % 32) * (u * (bm + bn) * ENG_ATOM + 16 * u * (bn + bm / 32)) + 1024;
}

// cuTensorMapEncodeTiled through the runtime's driver entry point (no link against the driver library).
static PFN_cuTensorMapEncodeTiled_v12000 encode_fn;
static void encoder_find(void) {
    void *p = NULL;
    cudaDriverEntryPointQueryResult q;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q) == cudaSuccess &&
        q == cudaDriverEntryPointSuccess)
        encode_fn = (PFN_cuTensorMapEncodeTiled_v12000)p;
}
static PFN_cuTensorMapEncodeTiled_v12000 encoder(dsf_err *e) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, encoder_find);
    if (!encode_fn) dsf_fail(e, "engram_wkv: the driver offers no cuTensorMapEncodeTiled (CUDA 12 or newer is needed)");
    return encode_fn;
}

// rows x K bytes, row-major, read in boxes of 128 bytes x box_rows with the 128-byte swizzle; rows past the end are 0.
int dsf_eng_tmap(CUtensorMap *m, const void *p, int64_t rows, int64_t K, int box_rows, const char *what, dsf_err *e) {
    PFN_cuTensorMapEncodeTiled_v12000 enc = encoder(e);
    if (!enc) return -1;
    cuuint64_t dim[2] = {(cuuint64_t)K, (cuuint64_t)rows}, stride[1] = {(cuuint64_t)K};
    cuuint32_t box[2] = {ENG_ATOM, (cuuint32_t)box_rows}, step[2] = {1, 1};
    CUresult r =
        enc(m, CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, (void *)p, dim, stride, box, step, CU_TENSOR_MAP_INTERLEAVE_NONE,
            CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS)
        return dsf_fail(e, "engram_wkv: tensor map of %s [%lld, %lld] refused (CUresult %d)", what, (long long)rows,
                        (long long)K, (int)r);
    return 0;
}

// Checks both kernels share (declared shared memory, int32 coordinates), then the tensor maps; 1: no tokens.
int dsf_eng_prep(const dsf_geom *g, long need, const uint8_t *xq, const uint8_t *w, int64_t T, int64_t N, int64_t K,
                 int x_rows, int w_rows, CUtensorMap *mx, CUtensorMap *mw, dsf_err *e) {
    if (g->dyn_smem < need)
        return dsf_fail(e,
                        "engram_wkv geometry %s: declares %d bytes of dynamic shared memory, its stages and their "
                        "scales need %ld",
                        g->name, g->dyn_smem, need);
    if (T == 0) return 1;
    if (N > INT32_MAX || T > INT32_MAX || K > INT32_MAX)
        return dsf_fail(e, "engram_wkv: [%lld, %lld] x [%lld, %lld] exceeds a tensor map's int32 coordinates",
                        (long long)T, (long long)K, (long long)N, (long long)K);
    return dsf_eng_tmap(mx, xq, T, K, x_rows, "xq", e) || dsf_eng_tmap(mw, w, N, K, w_rows, "w", e) ? -1 : 0;
}

extern "C" int dsf_engram_wkv_cuda_v(void *stream, const dsf_geom *g, const uint8_t *xq, const uint8_t *xs,
                                     const uint8_t *w, const uint8_t *ws, uint16_t *y, int64_t T, int64_t N, int64_t K,
                                     int fault, dsf_err *e) {
    if (T < 0 || N <= 0 || K <= 0 || N % 32 || K % 32)
        return dsf_fail(e, "engram_wkv: T %lld, N %lld, K %lld: N and K must be positive multiples of 32", (long long)T,
                        (long long)N, (long long)K);
    if ((uintptr_t)xq % 16 || (uintptr_t)w % 16 || (uintptr_t)y % 4)
        return dsf_fail(e, "engram_wkv: xq and w need 16-byte alignment, y 4-byte");
    if (g->p[0] == 4) return dsf_eng_wgt_launch(stream, g, xq, xs, w, ws, y, T, N, K, fault, e);
    wg_fn fn = g->p[0] == 3 ? wg_pick(g) : NULL;
    int bn = g->p[1], nwg = g->p[2], stages = g->p[3] % 32;
    if (!fn || g->threads != 128 * nwg + 32 || stages < 2 || stages > ENG_WG_MAXS)
        return dsf_fail(e, "engram_wkv geometry %s: no such kernel variant", g->name);
    CUtensorMap mw, mx;
    int rc = dsf_eng_prep(g, wg_smem(g), xq, w, T, N, K, bn, 64 * nwg, &mx, &mw, e);
    if (rc) return rc < 0 ? -1 : 0;
    dim3 grid((unsigned)((T + bn - 1) / bn), (unsigned)((N + 64 * nwg - 1) / (64 * nwg)));
    if (grid.y > 65535) return dsf_fail(e, "engram_wkv: %lld rows exceed the grid", (long long)N);
    if (dsf_cuda_smem_limit((const void *)fn, g->dyn_smem, "engram_wkv", e)) return -1;
    fn<<<grid, g->threads, g->dyn_smem, (cudaStream_t)stream>>>(mw, mx, xs, ws, y, T, N, K, stages, fault);
    DSF_CUDA_LAUNCHED(e, "engram_wkv");
    return 0;
}

extern "C" int dsf_engram_wkv_cuda(void *stream, const dsf_geom *g, const uint8_t *xq, const uint8_t *xs,
                                   const uint8_t *w, const uint8_t *ws, uint16_t *y, int64_t T, int64_t N, int64_t K,
                                   dsf_err *e) {
    return dsf_engram_wkv_cuda_v(stream, g, xq, xs, w, ws, y, T, N, K, DSF_ENG_REAL, e);
}

extern "C" int dsf_engram_wkv_cuda_fn_attrs(const dsf_geom *g, dsf_func_attrs *out, dsf_err *e) {
    const void *fn = g->p[0] == 3 ? (const void *)wg_pick(g) : g->p[0] == 4 ? dsf_eng_wgt_fn(g) : NULL;
    if (!fn) return dsf_fail(e, "engram_wkv geometry %s: no such kernel variant", g->name);
    return dsf_cuda_func_attrs(fn, out, e);
}
