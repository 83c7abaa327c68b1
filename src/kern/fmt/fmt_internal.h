#ifndef DSF_FMT_INTERNAL_H
#define DSF_FMT_INTERNAL_H
// Shared by the fmt family's CPU, CUDA and record files: planted-fault variants, the CPU row split, element math.
#include <stdint.h>

#include "base/err.h"
#include "base/pool.h"
#include "base/quant.h"
#include "contract/contract.h"
#include "kern/fmt/bf16_round.h"
#include "kern/fmt/block_quant.h"
#include "kern/fmt/fp8_row_dequant.h"

// The variant a kernel runs as: DSF_FMT_REAL is the kernel itself; the others are its contract controls only.
typedef enum dsf_fmt_fault {
    DSF_FMT_REAL,
    DSF_FMT_SKIP_LAST,
    DSF_FMT_GEOM,
    DSF_FMT_WRONG,
    DSF_FMT_BATCH,
    DSF_FMT_FAULTS
} dsf_fmt_fault;

// No fmt suite case has more rows; the DSF_FMT_BATCH variants switch path only in calls with more (gate 4's R+3).
#define DSF_FMT_SUITE_MAX_ROWS 64

// Scale of one quantisation block from its amax (spec §3.0): a power of two, or an e4m3 value for FP4_E4M3.
DSF_HD float dsf_fmt_quant_scale(int kind, float amax) {
    if (kind == DSF_QUANT_FP8) return dsf_act_scale_pow2(amax);
    return kind == DSF_QUANT_FP4_E8M0 ? dsf_fp4_scale_e8m0(amax) : dsf_fp4_scale_e4m3(amax);
}

// The stored scale byte: e8m0 of a power of two, or the e4m3 code of the scale.
DSF_HD uint8_t dsf_fmt_scale_byte(int kind, float s) {
    return kind == DSF_QUANT_FP4_E4M3 ? dsf_e4m3_from_f32(s) : dsf_e8m0_from_pow2_f32(s);
}

// One element's code: e4m3 for FP8, a 4-bit e2m1 code otherwise.
DSF_HD uint8_t dsf_fmt_quant_code(int kind, float x, float s) {
    return kind == DSF_QUANT_FP8 ? dsf_act_quant_code(x, s) : dsf_fp4_quant_code(x, s);
}

// bf16(e4m3 value * 2^(scale-127)) in fp32 (spec §3.2.6); the product is exact, so is the cast for scales in range.
DSF_HD uint16_t dsf_fmt_dequant_one(uint8_t code, uint8_t scale) {
    return dsf_bf16_from_f32(dsf_e4m3_to_f32(code) * dsf_e8m0_to_f32(scale));
}

// A planted rounding defect: bf16 by truncation toward zero (NaN handled as the real rounding does).
DSF_HD uint16_t dsf_fmt_bf16_toward_zero(float x) {
    uint32_t u = dsf_f32_bits(x);
    return (u & 0x7FFFFFFFu) > 0x7F800000u ? dsf_bf16_from_f32(x) : (uint16_t)(u >> 16);
}

// A planted rounding defect: bf16 rounding half away from zero instead of half to even.
DSF_HD uint16_t dsf_fmt_bf16_half_away(float x) {
    uint32_t u = dsf_f32_bits(x);
    return (u & 0x7FFFFFFFu) > 0x7F800000u ? dsf_bf16_from_f32(x) : (uint16_t)((u + 0x8000u) >> 16);
}

#ifdef __cplusplus
extern "C" {
#endif

typedef void (*dsf_fmt_rows_fn)(void *ctx, int64_t r0, int64_t r1);
// Runs fn over rows [0, rows) in chunks of `chunk` rows; the chunks go contiguously to `threads` workers of pool.
void dsf_fmt_rows_run(dsf_pool *pool, int threads, int64_t rows, int64_t chunk, dsf_fmt_rows_fn fn, void *ctx);

// The shape rules of block_quant, shared by the CPU and CUDA launchers.
int dsf_fmt_quant_check(dsf_quant_kind kind, int blk, int64_t rows, int64_t n, dsf_err *e);

int dsf_bf16_round_cpu_v(dsf_pool *pool, const dsf_geom *g, const float *x, uint16_t *y, int64_t rows, int64_t n,
                         dsf_fmt_fault f, dsf_err *e);
int dsf_block_quant_cpu_v(dsf_pool *pool, const dsf_geom *g, dsf_quant_kind kind, int blk, const uint16_t *x,
                          uint8_t *codes, uint8_t *scales, int64_t rows, int64_t n, dsf_fmt_fault f, dsf_err *e);
int dsf_fp8_row_dequant_cpu_v(dsf_pool *pool, const dsf_geom *g, const uint8_t *q, const uint8_t *s, uint16_t *y,
                              int64_t rows, int64_t n, dsf_fmt_fault f, dsf_err *e);

// CUDA variants (present when DSF_HAVE_CUDA): launchers, and the attributes of the function a geometry launches.
int dsf_bf16_round_cuda_v(void *stream, const dsf_geom *g, const float *x, uint16_t *y, int64_t rows, int64_t n,
                          int fault, dsf_err *e);
int dsf_bf16_round_cuda_attrs(const dsf_geom *g, int fault, dsf_func_attrs *out, dsf_err *e);
int dsf_block_quant_cuda_v(void *stream, const dsf_geom *g, dsf_quant_kind kind, int blk, const uint16_t *x,
                           uint8_t *codes, uint8_t *scales, int64_t rows, int64_t n, int fault, dsf_err *e);
int dsf_block_quant_cuda_attrs(dsf_quant_kind kind, const dsf_geom *g, int fault, dsf_func_attrs *out, dsf_err *e);
int dsf_fp8_row_dequant_cuda_v(void *stream, const dsf_geom *g, const uint8_t *q, const uint8_t *s, uint16_t *y,
                               int64_t rows, int64_t n, int fault, dsf_err *e);
int dsf_fp8_row_dequant_cuda_attrs(const dsf_geom *g, int fault, dsf_func_attrs *out, dsf_err *e);
// Common CUDA launch path: geometry sanity, opt-in shared memory above 48 KB, launch, cudaGetLastError.
int dsf_fmt_cuda_geom_check(const dsf_geom *g, const char *kernel, dsf_err *e);
int dsf_fmt_cuda_launch(const void *fn, int64_t blocks, const dsf_geom *g, void *stream, void **args,
                        const char *kernel, dsf_err *e);

// float64 references (fmt_ref.c), written from spec §3.0 and §3.2.6 with exact double arithmetic.
void dsf_fmt_ref_bf16_round(const void *const *ins, double *const *out, const dsf_case *c);
void dsf_fmt_ref_act_quant_fp8(const void *const *ins, double *const *out, const dsf_case *c);
void dsf_fmt_ref_fp4_quant_e8m0(const void *const *ins, double *const *out, const dsf_case *c);
void dsf_fmt_ref_fp4_quant_e4m3(const void *const *ins, double *const *out, const dsf_case *c);
void dsf_fmt_ref_fp8_row_dequant(const void *const *ins, double *const *out, const dsf_case *c);

#ifdef __cplusplus
}
#endif

#endif
