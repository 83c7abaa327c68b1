// engram_embed_quant and engram_gate on CUDA: a warp per unit (a 32-block; a token's stream), fixed-order sums.
#include <string.h>

#include "kern/cuda_check.h"
#include "kern/engram/engram_internal.h"

// One lane per element of a 32-block: the block's amax is a warp max (exact in any order), then act_quant.
template <int F>
__global__ void __launch_bounds__(1024) eng_embed_quant(const uint8_t *__restrict__ codes,
                                                         const uint8_t *__restrict__ scales, uint8_t *__restrict__ xq,
                                                         uint8_t *__restrict__ xs, int64_t T, int64_t n) {
    int lane = threadIdx.x & 31;
    int64_t warps = (int64_t)gridDim.x * (blockDim.x >> 5), blocks = T * (n / 32);
    for (int64_t b = (int64_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); b < blocks; b += warps) {
        float v = dsf_bf16_round(dsf_e4m3_to_f32(codes[32 * b + lane]) * dsf_e8m0_to_f32(scales[b]));
        float a = fabsf(v);
        for (int off = 16; off >= 1; off /= 2) a = fmaxf(a, __shfl_xor_sync(0xFFFFFFFFu, a, off));
        float s = dsf_act_scale_pow2(a);
        if (!(F == DSF_ENG_SKIP && b == blocks - 1 && lane == 31)) xq[32 * b + lane] = dsf_act_quant_code(v, s);
        if (lane == 0) xs[b] = (uint8_t)(dsf_e8m0_from_pow2_f32(s) + (F == DSF_ENG_WRONG ? 1 : 0));
    }
}

// Sum over the warp in the butterfly order of dsf_eng_tree; a control climbs the offsets the other way.
__device__ __forceinline__ float eng_warp_sum(float v, int up) {
    if (up)
        for (int off = 1; off <= 16; off *= 2) v = __fadd_rn(v, __shfl_xor_sync(0xFFFFFFFFu, v, off));
    else
        for (int off = 16; off >= 1; off /= 2) v = __fadd_rn(v, __shfl_xor_sync(0xFFFFFFFFu, v, off));
    return v;
}

// One element into a lane's three sums h.h, k.k, h.(q*k weights).k; both gate kernels share these helpers (R1).
__device__ __forceinline__ void eng_gate_add(float s[3], float hv, float kk, float wt) {
    s[0] = __fadd_rn(s[0], __fmul_rn(hv, hv));
    s[1] = __fadd_rn(s[1], __fmul_rn(kk, kk));
    s[2] = __fadd_rn(s[2], __fmul_rn(__fmul_rn(hv, wt), kk));
}

// The per-element weight of the dot: q_norm weight times k_norm weight, rounded to fp32.
__device__ __forceinline__ float eng_gate_wt(uint16_t q, uint16_t k) {
    return __fmul_rn(dsf_bf16_to_f32(q), dsf_bf16_to_f32(k));
}

// A warp's three lane sums to the gate value (butterfly sums, then the spec's formula); 0 for an image token.
__device__ __forceinline__ float eng_gate_finish(float s[3], int up, int64_t D, float scale_d, float eps, int image) {
    float gate = dsf_eng_gate_value(eng_warp_sum(s[0], up), eng_warp_sum(s[1], up), eng_warp_sum(s[2], up), (float)D,
                                    scale_d, eps);
    return image ? 0.0f : gate;
}

// The residual add of one element: bf16(h + gate * value).
__device__ __forceinline__ uint16_t eng_gate_res(float hv, float vv, float gate) {
    return dsf_bf16_from_f32(__fadd_rn(hv, __fmul_rn(gate, vv)));
}

#define ENG_GATE_U 8

template <int F>
__global__ void __launch_bounds__(1024) eng_gate(const uint16_t *h, const uint16_t *__restrict__ kv,
                                                  const uint16_t *__restrict__ qw, const uint16_t *__restrict__ kw,
                                                  const int32_t *__restrict__ img, uint16_t *out, int64_t T, int hc,
                                                  int64_t D, float eps, float scale_d) {
    int lane = threadIdx.x & 31;
    int up = (F == DSF_ENG_GEOM && blockDim.x >= 128) || (F == DSF_ENG_BATCH && T > DSF_ENG_SUITE_MAX_ROWS);
    int64_t warps = (int64_t)gridDim.x * (blockDim.x >> 5);
    for (int64_t u = (int64_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); u < T * hc; u += warps) {
        int64_t t = u / hc;
        int k = (int)(u % hc);
        const uint16_t *hr = h + u * D, *key = kv + (t * (hc + 1) + k) * D, *val = kv + (t * (hc + 1) + hc) * D;
        float sums[3] = {0.0f, 0.0f, 0.0f};
        // Loads of ENG_GATE_U strides go out together; each lane still adds its elements c = lane + 32 i in order.
        for (int64_t c0 = 0; c0 < D; c0 += 32 * ENG_GATE_U) {
            float hv[ENG_GATE_U], kk[ENG_GATE_U], wt[ENG_GATE_U];
#pragma unroll
            for (int i = 0; i < ENG_GATE_U; i++) {
                int64_t c = c0 + lane + 32 * i;
                int ok = c < D;
                hv[i] = ok ? dsf_bf16_to_f32(hr[c]) : 0.0f;
                kk[i] = ok ? dsf_bf16_to_f32(key[c]) : 0.0f;
                wt[i] = ok ? eng_gate_wt(qw[k * D + c], kw[k * D + c]) : 0.0f;
            }
#pragma unroll
            for (int i = 0; i < ENG_GATE_U; i++) {
                if (c0 + 32 * i >= D) break;
                eng_gate_add(sums, hv[i], kk[i], wt[i]);
            }
        }
        float gate = eng_gate_finish(sums, up, D, scale_d, eps, img[t] && F != DSF_ENG_WRONG);
        __syncwarp();
        int64_t end = D - (F == DSF_ENG_SKIP && u == T * hc - 1);
        // A batch reads all its h and value elements before it writes (out may be h: each element is read first).
        for (int64_t c0 = 0; c0 < end; c0 += 32 * ENG_GATE_U) {
            float hv[ENG_GATE_U], vv[ENG_GATE_U];
#pragma unroll
            for (int i = 0; i < ENG_GATE_U; i++) {
                int64_t c = c0 + lane + 32 * i;
                hv[i] = c < end ? dsf_bf16_to_f32(hr[c]) : 0.0f;
                vv[i] = c < end ? dsf_bf16_to_f32(val[c]) : 0.0f;
            }
#pragma unroll
            for (int i = 0; i < ENG_GATE_U; i++) {
                int64_t c = c0 + lane + 32 * i;
                if (c < end) out[u * D + c] = eng_gate_res(hv[i], vv[i], gate);
            }
        }
    }
}

// A block per (token, stream): rows staged in shared memory by all threads, eng_gate's lane chains in warp 0.
template <int F>
__global__ void __launch_bounds__(1024) eng_gate_st(const uint16_t *h, const uint16_t *__restrict__ kv,
                                                     const uint16_t *__restrict__ qw, const uint16_t *__restrict__ kw,
                                                     const int32_t *__restrict__ img, uint16_t *out, int64_t T, int hc,
                                                     int64_t D, float eps, float scale_d) {
    extern __shared__ uint4 eng_gst[];
    __shared__ float gate_of;
    const uint16_t *sh = (const uint16_t *)eng_gst, *sk = sh + D, *sq = sk + D, *sw = sq + D;
    int lane = threadIdx.x & 31;
    int up = (F == DSF_ENG_GEOM && blockDim.x >= 128) || (F == DSF_ENG_BATCH && T > DSF_ENG_SUITE_MAX_ROWS);
    int64_t V = D / 8;
    for (int64_t u = blockIdx.x; u < T * hc; u += gridDim.x) {
        int64_t t = u / hc;
        int k = (int)(u % hc);
        const uint16_t *hr = h + u * D, *key = kv + (t * (hc + 1) + k) * D, *val = kv + (t * (hc + 1) + hc) * D;
        for (int64_t i = threadIdx.x; i < 4 * V; i += blockDim.x) {
            const uint16_t *src = i < V ? hr : i < 2 * V ? key : i < 3 * V ? qw + k * D : kw + k * D;
            eng_gst[i] = ((const uint4 *)src)[i % V];
        }
        __syncthreads();
        if (threadIdx.x < 32) {
            float sums[3] = {0.0f, 0.0f, 0.0f};
#pragma unroll 8
            for (int64_t c = lane; c < D; c += 32)
                eng_gate_add(sums, dsf_bf16_to_f32(sh[c]), dsf_bf16_to_f32(sk[c]), eng_gate_wt(sq[c], sw[c]));
            float gate = eng_gate_finish(sums, up, D, scale_d, eps, img[t] && F != DSF_ENG_WRONG);
            if (lane == 0) gate_of = gate;
        }
        __syncthreads();
        float gate = gate_of;
        int64_t end = D - (F == DSF_ENG_SKIP && u == T * hc - 1);
        for (int64_t i = threadIdx.x; i < V; i += blockDim.x) {
            uint4 hv = eng_gst[i], vv = ((const uint4 *)val)[i];
            uint32_t hw[4] = {hv.x, hv.y, hv.z, hv.w}, vw[4] = {vv.x, vv.y, vv.z, vv.w}, ow[4];
#pragma unroll
            for (int j = 0; j < 8; j++) {
                uint16_t a = (uint16_t)(hw[j / 2] >> 16 * (j & 1)), b = (uint16_t)(vw[j / 2] >> 16 * (j & 1));
                uint32_t o = eng_gate_res(dsf_bf16_to_f32(a), dsf_bf16_to_f32(b), gate);
                ow[j / 2] = j & 1 ? ow[j / 2] | o << 16 : o;
            }
            if (8 * i + 8 <= end)
                ((uint4 *)(out + u * D))[i] = make_uint4(ow[0], ow[1], ow[2], ow[3]);
            else
#pragma unroll
                for (int j = 0; j < 8; j++)
                    if (8 * i + j < end) out[u * D + 8 * i + j] = (uint16_t)(ow[j / 2] >> 16 * (j & 1));
        }
        __syncthreads();
    }
}

#define ENG_VARIANTS(k)                                                                                               \
    {(const void *)k<DSF_ENG_REAL>, (const void *)k<DSF_ENG_SKIP>, (const void *)k<DSF_ENG_GEOM>,                      \
     (const void *)k<DSF_ENG_WRONG>, (const void *)k<DSF_ENG_BATCH>}

static const void *const embed_fns[5] = ENG_VARIANTS(eng_embed_quant);
static const void *const gate_fns[5] = ENG_VARIANTS(eng_gate);
static const void *const gate_st_fns[5] = ENG_VARIANTS(eng_gate_st);

// Geometry: threads (a multiple of 32), p[0] grid cap in waves of 132 blocks; the gate's p[1]: 1 staged, 0 a warp.
static int geom_check(const dsf_geom *g, int fault, const char *k, dsf_err *e) {
    if (fault < 0 || fault > DSF_ENG_BATCH) return dsf_fail(e, "%s: no variant %d", k, fault);
    if (g->threads < 32 || g->threads > 1024 || g->threads % 32 || g->p[0] < 1 || g->dyn_smem < 0)
        return dsf_fail(e, "%s geometry %s: %d threads, grid cap %d", k, g->name, g->threads, g->p[0]);
    return 0;
}

// A grid of `per` units a block (capped at p[0] waves of 132 blocks; the kernels stride over the rest).
static int launch(const void *fn, int64_t units, int64_t per, const dsf_geom *g, void *stream, void **args,
                  const char *k, dsf_err *e) {
    int64_t blocks = (units + per - 1) / per;
    if (blocks > (int64_t)g->p[0] * 132) blocks = (int64_t)g->p[0] * 132;
    if (blocks <= 0) return 0;
    if (dsf_cuda_smem_limit(fn, g->dyn_smem, k, e)) return -1;
    DSF_CUDA_TRY(e, cudaLaunchKernel(fn, dim3((unsigned)blocks), dim3((unsigned)g->threads), args, (size_t)g->dyn_smem,
                                     (cudaStream_t)stream));
    DSF_CUDA_LAUNCHED(e, k);
    return 0;
}

extern "C" int dsf_engram_embed_quant_cuda_v(void *stream, const dsf_geom *g, const uint8_t *codes,
                                             const uint8_t *scales, uint8_t *xq, uint8_t *xs, int64_t T, int64_t n,
                                             int fault, dsf_err *e) {
    if (geom_check(g, fault, "engram_embed_quant", e)) return -1;
    if (T < 0 || n <= 0 || n % 32)
        return dsf_fail(e, "engram_embed_quant: shape [%lld, %lld]: n must be a positive multiple of 32",
                        (long long)T, (long long)n);
    void *args[] = {&codes, &scales, &xq, &xs, &T, &n};
    return launch(embed_fns[fault], T * (n / 32), g->threads / 32, g, stream, args, "engram_embed_quant", e);
}

extern "C" int dsf_engram_embed_quant_cuda(void *stream, const dsf_geom *g, const uint8_t *codes,
                                           const uint8_t *scales, uint8_t *xq, uint8_t *xs, int64_t T, int64_t n,
                                           dsf_err *e) {
    return dsf_engram_embed_quant_cuda_v(stream, g, codes, scales, xq, xs, T, n, DSF_ENG_REAL, e);
}

extern "C" int dsf_engram_gate_cuda_v(void *stream, const dsf_geom *g, const uint16_t *h, const uint16_t *kv,
                                      const uint16_t *qw, const uint16_t *kw, const int32_t *img, uint16_t *out,
                                      int64_t T, int hc, int64_t D, float eps, int fault, dsf_err *e) {
    if (geom_check(g, fault, "engram_gate", e)) return -1;
    if (g->p[1] != 0 && g->p[1] != 1) return dsf_fail(e, "engram_gate geometry %s: no such kernel variant", g->name);
    if (T < 0 || hc < 1 || D <= 0 || D % DSF_ENG_PARTS)
        return dsf_fail(e, "engram_gate: T %lld, hc %d, D %lld: D must be a positive multiple of %d", (long long)T, hc,
                        (long long)D, DSF_ENG_PARTS);
    if ((uintptr_t)h % 2 || (uintptr_t)out % 2 || (uintptr_t)kv % 2)
        return dsf_fail(e, "engram_gate: bf16 operands are misaligned");
    float scale_d = (float)(1.0 / sqrt((double)D));
    void *args[] = {&h, &kv, &qw, &kw, &img, &out, &T, &hc, &D, &eps, &scale_d};
    if (g->p[1] != 1) return launch(gate_fns[fault], T * hc, g->threads / 32, g, stream, args, "engram_gate", e);
    // The staged kernel: 16-byte rows, its staging (four rows of D bf16) within the geometry's shared memory.
    if (((uintptr_t)h | (uintptr_t)out | (uintptr_t)kv | (uintptr_t)qw | (uintptr_t)kw) % 16)
        return dsf_fail(e, "engram_gate geometry %s: h, kv, q/k weights and out need 16-byte alignment", g->name);
    if ((int64_t)g->dyn_smem < 8 * D)
        return dsf_fail(e, "engram_gate geometry %s: declares %d bytes of dynamic shared memory, D %lld needs %lld",
                        g->name, g->dyn_smem, (long long)D, (long long)(8 * D));
    return launch(gate_st_fns[fault], T * hc, 1, g, stream, args, "engram_gate", e);
}

extern "C" int dsf_engram_gate_cuda(void *stream, const dsf_geom *g, const uint16_t *h, const uint16_t *kv,
                                    const uint16_t *qw, const uint16_t *kw, const int32_t *img, uint16_t *out,
                                    int64_t T, int hc, int64_t D, float eps, dsf_err *e) {
    return dsf_engram_gate_cuda_v(stream, g, h, kv, qw, kw, img, out, T, hc, D, eps, DSF_ENG_REAL, e);
}

extern "C" int dsf_engram_wkv_cuda_fn_attrs(const dsf_geom *g, dsf_func_attrs *out, dsf_err *e);

extern "C" int dsf_engram_cuda_attrs(int kernel, const dsf_geom *g, int fault, dsf_func_attrs *out, dsf_err *e) {
    if (kernel == 1) return dsf_engram_wkv_cuda_fn_attrs(g, out, e);
    if (fault < 0 || fault > DSF_ENG_BATCH) return dsf_fail(e, "engram: no variant %d", fault);
    const void *fn = kernel == 0 ? embed_fns[fault] : g->p[1] == 1 ? gate_st_fns[fault] : gate_fns[fault];
    return dsf_cuda_func_attrs(fn, out, e);
}

// The engine's geometries: the public roles (engram_kern.h), then wkv at 9-64 tokens, the staged gate, wkv by 192.
static const int ROLE_WKV_64 = DSF_ENG_ROLE_GATE_WARP + 1, ROLE_GATE_STAGED = ROLE_WKV_64 + 1,
                 ROLE_WKV_192 = ROLE_GATE_STAGED + 1, ROLES = ROLE_WKV_192 + 1;
// Each role names a geometry of the contract's lists, so that the engine runs only geometries the contract checks.
static const struct {
    const char *name;
    const dsf_geom *(*list)(int *n);
} engine_roles[ROLES] = {
    {"t256_w64", dsf_engram_embed_cuda_geoms},                // DSF_ENG_ROLE_EMBED_QUANT
    {"wg_b8_w1_u1_s4", dsf_engram_wkv_cuda_geoms},            // DSF_ENG_ROLE_WKV_DECODE: up to 8 tokens
    {"wgt_w256_x2_pw4_s4_p4", dsf_engram_wkv_cuda_geoms},     // DSF_ENG_ROLE_WKV_PREFILL: 128 tokens by 256 rows
    {"t256_w64", dsf_engram_gate_cuda_geoms},                 // DSF_ENG_ROLE_GATE_WARP
    {"wgt_w224_x1_ws2_pw4_s4_hs", dsf_engram_wkv_cuda_geoms}, // ROLE_WKV_64: 9 to 64 tokens
    {"st_t512_w8", dsf_engram_gate_cuda_geoms},               // ROLE_GATE_STAGED
    {"wgt_w128_x3_pw4_s4_hs", dsf_engram_wkv_cuda_geoms},     // ROLE_WKV_192: 129 to 192 tokens, one tile of 192
};

// A role's geometry, found by name in its list (a role whose name is missing there is a broken build: it aborts).
static const dsf_geom *engine_geom(int role) {
    int n = 0;
    const dsf_geom *l = engine_roles[role].list(&n);
    for (int i = 0; i < n; i++)
        if (!strcmp(l[i].name, engine_roles[role].name)) return &l[i];
    DSF_ASSERT(!"an engine role names a geometry its contract list lacks");
    return NULL;
}

extern "C" const dsf_geom *dsf_engram_cuda_geom(int which) {
    return which >= 0 && which < ROLE_WKV_64 ? engine_geom(which) : NULL;
}

extern "C" const dsf_geom *dsf_engram_cuda_gate_geom(int64_t T) {
    return engine_geom(T <= DSF_ENG_GATE_STAGED_MAX ? ROLE_GATE_STAGED : DSF_ENG_ROLE_GATE_WARP);
}

extern "C" const dsf_geom *dsf_engram_cuda_wkv_geom(int64_t T) {
    if (T <= 64) return engine_geom(T <= 8 ? DSF_ENG_ROLE_WKV_DECODE : ROLE_WKV_64);
    // Tiles of 128 tokens by 256 rows, the last wave's split, were faster at every size measured but 129-192 (perf.md).
    return engine_geom(T > 128 && T <= 192 ? ROLE_WKV_192 : DSF_ENG_ROLE_WKV_PREFILL);
}
