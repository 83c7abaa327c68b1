#ifndef DSF_QUANT_H
#define DSF_QUANT_H
// Activation quantisers of spec §3.0 (act_quant, fp4_act_quant): per-block scalar math here, row loops in quant.c.
#include "base/formats.h"

// Block sizes fixed by the spec for the two fp4 variants; act_quant takes its block (32, 64 or 128) as an argument.
#define DSF_FP4_E8M0_BLOCK 32
#define DSF_FP4_E4M3_BLOCK 16

// Largest |x| of a block; NaN elements are skipped (the quantisers are specified for finite bf16 inputs only).
DSF_HD float dsf_block_amax(const float *x, int n)
{
    float m = 0.0f;
    for (int i = 0; i < n; i++) {
        float a = dsf_f32_from_bits(dsf_f32_bits(x[i]) & 0x7FFFFFFFu);
        m = a > m ? a : m;
    }
    return m;
}

// ceil(log2(t)) for a positive normal t from its exponent bits: the exponent, plus 1 if the mantissa is nonzero.
DSF_HD int dsf_log2_ceil_bits(float t)
{
    uint32_t u = dsf_f32_bits(t);
    return (int)((u >> 23) & 0xFFu) - 127 + ((u & 0x007FFFFFu) ? 1 : 0);
}

// 2^e as fp32 for -126 <= e <= 127, built from exponent bits.
DSF_HD float dsf_pow2_f32(int e)
{
    return dsf_f32_from_bits((uint32_t)(e + 127) << 23);
}

// v clamped to [-lim, lim]; a NaN passes through, as torch.clamp lets it.
DSF_HD float dsf_clamp_sym(float v, float lim)
{
    return v > lim ? lim : (v < -lim ? -lim : v);
}

// act_quant scale: amax floored at fp32(1e-4), then 2^ceil(log2(amax * fp32(1/448))); amax/448 agrees for bf16 amax.
DSF_HD float dsf_act_scale_pow2(float amax)
{
    float a = amax > 1e-4f ? amax : 1e-4f;
    return dsf_pow2_f32(dsf_log2_ceil_bits(a * (1.0f / 448.0f)));
}

// e4m3 code of clamp(x/s, +-448); s is a power of two, so IEEE x/s equals x*(1/s) bit for bit.
DSF_HD uint8_t dsf_act_quant_code(float x, float s)
{
    return dsf_e4m3_from_f32(dsf_clamp_sym(x / s, 448.0f));
}

// act_quant QDQ of one element: bf16(e4m3 value * s); the product is exact, the bf16 cast kept as the spec writes it.
DSF_HD float dsf_act_qdq_value(float x, float s)
{
    return dsf_bf16_round(dsf_e4m3_to_f32(dsf_act_quant_code(x, s)) * s);
}

// fp4 E8M0 scale: amax floored at 6*2^-126, then 2^ceil(log2(amax * fp32(1/6))); amax/6 agrees for bf16 amax.
DSF_HD float dsf_fp4_scale_e8m0(float amax)
{
    float a = amax > 0x1.8p-124f ? amax : 0x1.8p-124f;
    return dsf_pow2_f32(dsf_log2_ceil_bits(a * (1.0f / 6.0f)));
}

// fp4 E4M3 scale: amax floored at 6*2^-9, then e4m3_RNE(amax / 6), saturating at 448; amax*fp32(1/6) agrees for bf16.
DSF_HD float dsf_fp4_scale_e4m3(float amax)
{
    float a = amax > 0.01171875f ? amax : 0.01171875f;
    return dsf_e4m3_round(a / 6.0f);
}

// e2m1 code of clamp(x/s, +-6); x/s must be IEEE division (no CUDA fast math): with an E4M3 s, x*(1/s) differs.
DSF_HD uint8_t dsf_fp4_quant_code(float x, float s)
{
    return dsf_e2m1_from_f32(dsf_clamp_sym(x / s, 6.0f));
}

// fp4 QDQ of one element: bf16(e2m1 value * s), exact; it can be an fp32 subnormal, so CUDA must not flush (-ftz).
DSF_HD float dsf_fp4_qdq_value(float x, float s)
{
    return dsf_bf16_round(dsf_e2m1_to_f32(dsf_fp4_quant_code(x, s)) * s);
}

#ifdef __cplusplus
extern "C" {
#endif

// Rows: n a multiple of the block; x holds bf16-representable values; a QDQ's out may be x itself (in place).
void dsf_act_quant_row(const float *x, size_t n, int blk, uint8_t *q, uint8_t *scale);
// Writes bf16 values of e4m3(q) * s as floats: act_quant(x, blk, ue8m0, inplace=True).
void dsf_act_qdq_row(const float *x, size_t n, int blk, float *out);
// Block 32 with E8M0 scale bytes; packed holds n/2 bytes, scale n/32 bytes.
void dsf_fp4_quant_e8m0_row(const float *x, size_t n, uint8_t *packed, uint8_t *scale);
void dsf_fp4_qdq_e8m0_row(const float *x, size_t n, float *out);
// Block 16 with E4M3 scale bytes (the V4.1 compressed KV); packed holds n/2 bytes, scale n/16 bytes.
void dsf_fp4_quant_e4m3_row(const float *x, size_t n, uint8_t *packed, uint8_t *scale);
void dsf_fp4_qdq_e4m3_row(const float *x, size_t n, float *out);

#ifdef __cplusplus
}
#endif

#endif
