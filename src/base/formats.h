#ifndef DSF_FORMATS_H
#define DSF_FORMATS_H
// Number formats of spec §3.0 (bf16, e4m3fn, e8m0, e2m1, fp4 packing) as pure bit functions that CPU and CUDA share.
#include <stddef.h>
#include <stdint.h>

#ifdef __CUDACC__
#define DSF_HD __host__ __device__ __forceinline__
#else
#define DSF_HD static inline
#endif

// Type punning through a union: C11 defines it and nvcc accepts it in device code.
typedef union dsf_f32_pun {
    float f;
    uint32_t u;
} dsf_f32_pun;

DSF_HD uint32_t dsf_f32_bits(float x)
{
    dsf_f32_pun p;
    p.f = x;
    return p.u;
}

DSF_HD float dsf_f32_from_bits(uint32_t u)
{
    dsf_f32_pun p;
    p.u = u;
    return p.f;
}

// Shifts m right by sh bits and rounds what falls off to nearest, ties to an even result; sh >= 32 gives 0.
DSF_HD uint32_t dsf_rne_shr(uint32_t m, int sh)
{
    if (sh <= 0)
        return m;
    if (sh >= 32)
        return 0;
    uint32_t q = m >> sh;
    uint32_t rem = m & ((1u << sh) - 1u);
    uint32_t half = 1u << (sh - 1);
    return q + ((rem > half || (rem == half && (q & 1u))) ? 1u : 0u);
}

// Round to nearest even; overflow gives inf; NaN stays NaN, made quiet, sign and top payload kept.
DSF_HD uint16_t dsf_bf16_from_f32(float x)
{
    uint32_t u = dsf_f32_bits(x);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u)
        return (uint16_t)((u >> 16) | 0x0040u);
    // Adding 0x7FFF plus the kept LSB rounds half to even; a carry into the exponent (up to inf) is the right result.
    u += 0x7FFFu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

DSF_HD float dsf_bf16_to_f32(uint16_t b)
{
    return dsf_f32_from_bits((uint32_t)b << 16);
}

// dsf_bf16_to_f32(dsf_bf16_from_f32(x)).
DSF_HD float dsf_bf16_round(float x)
{
    return dsf_bf16_to_f32(dsf_bf16_from_f32(x));
}

// e4m3fn, RNE incl. subnormals; saturates to +-448 (inf too, as e4m3fn has no inf); NaN gives 0x7F|sign.
DSF_HD uint8_t dsf_e4m3_from_f32(float x)
{
    uint32_t u = dsf_f32_bits(x);
    uint32_t a = u & 0x7FFFFFFFu;
    uint8_t sign = (uint8_t)((u >> 24) & 0x80u);
    if (a > 0x7F800000u)
        return (uint8_t)(sign | 0x7Fu);
    if (a >= 0x43E00000u)
        return (uint8_t)(sign | 0x7Eu);
    uint32_t e = a >> 23;
    if (e >= 121) {
        // fp32 exponent E maps to e4m3 exponent E-120; the rounded (E<<3 | top 3 mantissa bits) may carry upward.
        return (uint8_t)(sign | (uint8_t)(dsf_rne_shr(a, 20) - (120u << 3)));
    }
    // Below 2^-6 the value is counted in units of 2^-9 (e4m3 subnormals); a result of 8 is the smallest normal.
    uint32_t m = (a & 0x007FFFFFu) | (e ? 0x00800000u : 0u);
    int sh = 141 - (int)(e ? e : 1u);
    return (uint8_t)(sign | (uint8_t)dsf_rne_shr(m, sh));
}

// Codes 0x7F and 0xFF are NaN; 0x80 is -0.
DSF_HD float dsf_e4m3_to_f32(uint8_t c)
{
    uint32_t sign = (uint32_t)(c & 0x80u) << 24;
    uint32_t e = ((uint32_t)c >> 3) & 0xFu;
    uint32_t m = (uint32_t)c & 7u;
    if (e == 15 && m == 7)
        return dsf_f32_from_bits(sign | 0x7FC00000u);
    if (e == 0)
        return dsf_f32_from_bits(sign | dsf_f32_bits((float)m * 0.001953125f));
    return dsf_f32_from_bits(sign | ((e + 120u) << 23) | (m << 20));
}

DSF_HD float dsf_e4m3_round(float x)
{
    return dsf_e4m3_to_f32(dsf_e4m3_from_f32(x));
}

// 2^(b-127); 0xFF is NaN; b = 0 is the fp32 subnormal 2^-127.
DSF_HD float dsf_e8m0_to_f32(uint8_t b)
{
    if (b == 0xFF)
        return dsf_f32_from_bits(0x7FC00000u);
    if (b == 0)
        return dsf_f32_from_bits(0x00400000u);
    return dsf_f32_from_bits((uint32_t)b << 23);
}

// s = +2^k with -127 <= k <= 127 gives k+127 (exact); anything else, NaN and zero included, gives 0xFF.
DSF_HD uint8_t dsf_e8m0_from_pow2_f32(float s)
{
    uint32_t u = dsf_f32_bits(s);
    if (u == 0x00400000u)
        return 0;
    if ((u & 0x007FFFFFu) != 0 || u == 0 || u >= 0x7F800000u)
        return 0xFF;
    return (uint8_t)(u >> 23);
}

// Sign in bit 3; saturates to +-6 (inf too); e2m1 has no NaN code, so NaN gives 0x7|sign, our choice.
DSF_HD uint8_t dsf_e2m1_from_f32(float x)
{
    uint32_t u = dsf_f32_bits(x);
    uint8_t sign = (uint8_t)((u >> 28) & 0x8u);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u)
        return (uint8_t)(sign | 7u);
    float a = dsf_f32_from_bits(u & 0x7FFFFFFFu);
    uint8_t c;
    // Ties go to the even code: 0.25->0, 0.75->1, 1.25->1, 1.75->2, 2.5->2, 3.5->4, 5->4 (spec §3.0).
    if (a <= 0.25f)
        c = 0;
    else if (a < 0.75f)
        c = 1;
    else if (a <= 1.25f)
        c = 2;
    else if (a < 1.75f)
        c = 3;
    else if (a <= 2.5f)
        c = 4;
    else if (a < 3.5f)
        c = 5;
    else if (a <= 5.0f)
        c = 6;
    else
        c = 7;
    return (uint8_t)(sign | c);
}

// Codes 0..7 are {0, 0.5, 1, 1.5, 2, 3, 4, 6}, bit 3 the sign; higher bits of code are ignored.
DSF_HD float dsf_e2m1_to_f32(uint8_t code)
{
    uint32_t sign = (uint32_t)(code & 0x8u) << 28;
    uint32_t e = ((uint32_t)code >> 1) & 3u;
    uint32_t m = (uint32_t)code & 1u;
    if (e == 0)
        return dsf_f32_from_bits(sign | (m ? 0x3F000000u : 0u));
    return dsf_f32_from_bits(sign | ((e + 126u) << 23) | (m << 22));
}

DSF_HD float dsf_e2m1_round(float x)
{
    return dsf_e2m1_to_f32(dsf_e2m1_from_f32(x));
}

// Element i of a packed fp4 row: the even element sits in the low nibble.
DSF_HD uint8_t dsf_fp4_get(const uint8_t *packed, size_t i)
{
    return (uint8_t)((packed[i >> 1] >> ((i & 1u) * 4u)) & 0xFu);
}

// Writes the low 4 bits of code as element i and leaves the other nibble of the byte as it was.
DSF_HD void dsf_fp4_set(uint8_t *packed, size_t i, uint8_t code)
{
    unsigned sh = (unsigned)(i & 1u) * 4u;
    packed[i >> 1] = (uint8_t)((packed[i >> 1] & ~(0xFu << sh)) | ((code & 0xFu) << sh));
}

#endif
