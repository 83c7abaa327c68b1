#ifndef DSF_ENGRAM_INTERNAL_H
#define DSF_ENGRAM_INTERNAL_H
// Shared by the Engram CPU, CUDA, reference and record files: planted-fault variants and the per-element math.
#include <math.h>

#include "base/quant.h"
#include "kern/engram/engram.h"
#include "kern/engram/engram_kern.h"

// The variant a kernel runs as: DSF_ENG_REAL is the kernel itself; the others exist for the contract's controls.
typedef enum dsf_eng_fault {
    DSF_ENG_REAL,
    DSF_ENG_SKIP,     // gate 1: the last element of the last row is never written
    DSF_ENG_GEOM,     // gate 2: an order or rounding that follows the geometry
    DSF_ENG_WRONG,    // gate 3: a scale exponent off by one, an ignored image mask, ...
    DSF_ENG_BATCH,    // gate 4: a reduction split chosen from the row count
    DSF_ENG_COLS,     // gate 3 (hash): heads in head-major instead of n-gram-major column order
    DSF_ENG_BLOCKING, // gate 3 (hash): blocking by each shift alone, not cumulative
    DSF_ENG_FAULTS
} dsf_eng_fault;

// No Engram suite case has more rows; the BATCH variants change path only in larger calls (gate 4's R+3 call).
#define DSF_ENG_SUITE_MAX_ROWS 64
// fp32 products and sums that nvcc must not contract into fused multiply-adds (the CPU rounds each one too).
#ifdef __CUDA_ARCH__
#define DSF_ENG_MUL(a, b) __fmul_rn((a), (b))
#define DSF_ENG_ADD(a, b) __fadd_rn((a), (b))
#else
#define DSF_ENG_MUL(a, b) ((a) * (b))
#define DSF_ENG_ADD(a, b) ((a) + (b))
#endif

// Partial sums of the gate's reductions: element c goes to partial c % 32; partials then meet in an xor butterfly.
#define DSF_ENG_PARTS 32

// act_quant of one 32-block of a gathered row: codes q with scale byte sb -> codes out and the returned scale byte.
DSF_HD uint8_t dsf_eng_quant_block(const uint8_t *q, uint8_t sb, uint8_t *out, int fault_wrong) {
    float v[32];
    float rs = dsf_e8m0_to_f32(sb);
    for (int i = 0; i < 32; i++) v[i] = dsf_bf16_round(dsf_e4m3_to_f32(q[i]) * rs);
    float s = dsf_act_scale_pow2(dsf_block_amax(v, 32));
    for (int i = 0; i < 32; i++) out[i] = dsf_act_quant_code(v[i], s);
    return (uint8_t)(dsf_e8m0_from_pow2_f32(s) + (fault_wrong ? 1 : 0));
}

// The xor butterfly over the 32 partials, as a warp's shuffles do it; every lane ends with the same sum.
DSF_HD float dsf_eng_tree(float *p) {
    for (int off = DSF_ENG_PARTS / 2; off >= 1; off /= 2)
        for (int j = 0; j < off; j++) p[j] = DSF_ENG_ADD(p[j], p[j + off]);
    return p[0];
}

// The gate of one stream from its three sums (finding 12: rstd first, then sum * rstd * D^-0.5; finding 13).
DSF_HD float dsf_eng_gate_value(float s_hh, float s_kk, float s_d, float fd, float scale_d, float eps) {
    float rstd = DSF_ENG_MUL(1.0f / sqrtf(DSF_ENG_ADD(s_hh / fd, eps)), 1.0f / sqrtf(DSF_ENG_ADD(s_kk / fd, eps)));
    float dot = DSF_ENG_MUL(DSF_ENG_MUL(s_d, rstd), scale_d);
    float a = fabsf(dot) > 1e-6f ? fabsf(dot) : 1e-6f;
    float x = copysignf(sqrtf(a), dot);
    return 1.0f / DSF_ENG_ADD(1.0f, expf(-x));
}

// Tokens-as-A block b: its token tile and first row, and its rows (returned); tiles from `tail` on split in sub blocks.
DSF_HD int dsf_eng_wgt_tile(int b, int tt, int tail, int sub, int bw, int *tile, int64_t *n0) {
    // Tiles in order, token tiles fastest (tt of them to a row of bw weight rows).
    int part = b >= tail ? (b - tail) % sub : 0, wide = b >= tail ? bw / sub : bw;
    if (b >= tail) b = tail + (b - tail) / sub;
    *tile = b % tt, *n0 = (int64_t)(b / tt) * bw + part * wide;
    return wide;
}

// Blocks a tile of the last wave (F mod S tiles on S slots): 1, 2 or 4, by measured block times (perf.md, Four parts).
static inline int dsf_eng_wgt_tail_sub(int64_t F, int S) {
    static const int cost[3] = {100, 63, 47};
    int64_t r = F % S, best = 0, sub = 1;
    for (int i = 0, k = 1; i < 3; i++, k *= 2) {
        int64_t t = (r * k + S - 1) / S * cost[i];
        if (i == 0 || t < best) best = t, sub = k;
    }
    return (int)sub;
}

#ifdef __cplusplus
extern "C" {
#endif

int dsf_engram_embed_quant_cpu_v(dsf_pool *pool, const dsf_geom *g, const uint8_t *codes, const uint8_t *scales,
                                 uint8_t *xq, uint8_t *xs, int64_t T, int64_t n, int fault, dsf_err *e);
int dsf_engram_wkv_cpu_v(dsf_pool *pool, const dsf_geom *g, const uint8_t *xq, const uint8_t *xs, const uint8_t *w,
                         const uint8_t *ws, uint16_t *y, int64_t T, int64_t N, int64_t K, int fault, dsf_err *e);
int dsf_engram_gate_cpu_v(dsf_pool *pool, const dsf_geom *g, const uint16_t *h, const uint16_t *kv,
                          const uint16_t *qw, const uint16_t *kw, const int32_t *img, uint16_t *out, int64_t T, int hc,
                          int64_t D, float eps, int fault, dsf_err *e);
int dsf_engram_embed_quant_cuda_v(void *stream, const dsf_geom *g, const uint8_t *codes, const uint8_t *scales,
                                  uint8_t *xq, uint8_t *xs, int64_t T, int64_t n, int fault, dsf_err *e);
int dsf_engram_wkv_cuda_v(void *stream, const dsf_geom *g, const uint8_t *xq, const uint8_t *xs, const uint8_t *w,
                          const uint8_t *ws, uint16_t *y, int64_t T, int64_t N, int64_t K, int fault, dsf_err *e);
int dsf_engram_gate_cuda_v(void *stream, const dsf_geom *g, const uint16_t *h, const uint16_t *kv,
                           const uint16_t *qw, const uint16_t *kw, const int32_t *img, uint16_t *out, int64_t T,
                           int hc, int64_t D, float eps, int fault, dsf_err *e);
int dsf_engram_cuda_attrs(int kernel, const dsf_geom *g, int fault, dsf_func_attrs *out, dsf_err *e);

// Runs fn(ctx, u0, u1) over units [0, units) in chunks, dealt contiguously to `threads` workers of pool.
typedef void (*dsf_eng_units_fn)(void *ctx, int64_t u0, int64_t u1);
void dsf_eng_units_run(dsf_pool *pool, int threads, int64_t units, int64_t chunk, dsf_eng_units_fn fn, void *ctx);

// float64 references (engram_ref.c).
void dsf_engram_ref_embed_quant(const void *const *ins, double *const *out, const dsf_case *c);
void dsf_engram_ref_wkv(const void *const *ins, double *const *out, const dsf_case *c);
void dsf_engram_ref_gate(const void *const *ins, double *const *out, const dsf_case *c);
void dsf_engram_ref_hash(const void *const *ins, double *const *out, const dsf_case *c);

#ifdef __cplusplus
}
#endif

#endif
