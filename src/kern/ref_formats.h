#ifndef DSF_REF_FORMATS_H
#define DSF_REF_FORMATS_H
// The number formats in float64 for the contract references (spec §3.0), from their definitions, never base/formats.h.
#include <stdint.h>

// Nearest value of a binary format with `digits` significand bits and least normal exponent emin, ties to even.
double dsf_ref_round(double v, int digits, int emin);
// The nearest bf16, ties to even; past the largest finite bf16 it is infinite.
double dsf_ref_round_bf16(double v);
// The nearest e4m3fn value, ties to an even mantissa, saturating at +-448 (also for +-inf).
double dsf_ref_round_e4m3(double v);
double dsf_ref_round_e2m1(double v);
// v clamped to [-lim, lim]; NaN passes through.
double dsf_ref_clamp(double v, double lim);
// 2^ceil(log2(t)) for t > 0, exactly.
double dsf_ref_pow2_ceil(double t);
// Block scales from amax: act_quant 2^ceil(log2(max(amax, 1e-4) / 448)); FP4 by E8M0 or by an e4m3 scale (§4.12).
double dsf_ref_act_scale(double amax);
double dsf_ref_fp4_scale_e8m0(double amax);
double dsf_ref_fp4_scale_e4m3(double amax);
// Element i of a bf16 buffer: exponent 255 is inf or NaN.
double dsf_ref_bf16_at(const void *buf, int64_t i);
// Element i of a bf16 buffer by its fields alone: exponent 255 decodes as an ordinary exponent (finite).
double dsf_ref_bf16_fields_at(const void *buf, int64_t i);
// Code decoders: e4m3fn (bias 7, subnormals, 0x7F and 0xFF NaN), e2m1 (spec table), E8M0 (2^(b-127), 255 NaN).
double dsf_ref_e4m3(uint8_t code);
// An e4m3 code by its fields alone: the NaN codes decode as +-480.
double dsf_ref_e4m3_fields(uint8_t code);
double dsf_ref_e2m1(uint8_t code);
double dsf_ref_e8m0(uint8_t b);

#endif
