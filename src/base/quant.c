// Row loops over the block math of quant.h; each block reads all its inputs before writing, so QDQ works in place.
#include "base/quant.h"

#include "base/err.h"

void dsf_act_quant_row(const float *x, size_t n, int blk, uint8_t *q, uint8_t *scale)
{
    DSF_ASSERT(blk > 0 && n % (size_t)blk == 0);
    for (size_t b = 0; b < n / (size_t)blk; b++) {
        const float *xb = x + b * (size_t)blk;
        float s = dsf_act_scale_pow2(dsf_block_amax(xb, blk));
        scale[b] = dsf_e8m0_from_pow2_f32(s);
        for (int i = 0; i < blk; i++)
            q[b * (size_t)blk + (size_t)i] = dsf_act_quant_code(xb[i], s);
    }
}

void dsf_act_qdq_row(const float *x, size_t n, int blk, float *out)
{
    DSF_ASSERT(blk > 0 && n % (size_t)blk == 0);
    for (size_t b = 0; b < n / (size_t)blk; b++) {
        const float *xb = x + b * (size_t)blk;
        float *ob = out + b * (size_t)blk;
        float s = dsf_act_scale_pow2(dsf_block_amax(xb, blk));
        for (int i = 0; i < blk; i++)
            ob[i] = dsf_act_qdq_value(xb[i], s);
    }
}

// One fp4 row: per block the scale (E8M0 power of two, or E4M3), then codes and scale bytes, or QDQ values.
static void fp4_row(const float *x, size_t n, int e4m3, uint8_t *packed, uint8_t *scale, float *out)
{
    const int blk = e4m3 ? DSF_FP4_E4M3_BLOCK : DSF_FP4_E8M0_BLOCK;
    DSF_ASSERT(n % blk == 0);
    for (size_t b = 0; b < n / blk; b++) {
        const float *xb = x + b * blk;
        float amax = dsf_block_amax(xb, blk);
        float s = e4m3 ? dsf_fp4_scale_e4m3(amax) : dsf_fp4_scale_e8m0(amax);
        if (scale) scale[b] = e4m3 ? dsf_e4m3_from_f32(s) : dsf_e8m0_from_pow2_f32(s);
        for (int i = 0; i < blk; i++) {
            if (packed) dsf_fp4_set(packed, b * blk + (size_t)i, dsf_fp4_quant_code(xb[i], s));
            if (out) out[b * blk + (size_t)i] = dsf_fp4_qdq_value(xb[i], s);
        }
    }
}

void dsf_fp4_quant_e8m0_row(const float *x, size_t n, uint8_t *packed, uint8_t *scale)
{
    fp4_row(x, n, 0, packed, scale, NULL);
}

void dsf_fp4_qdq_e8m0_row(const float *x, size_t n, float *out)
{
    fp4_row(x, n, 0, NULL, NULL, out);
}

void dsf_fp4_quant_e4m3_row(const float *x, size_t n, uint8_t *packed, uint8_t *scale)
{
    fp4_row(x, n, 1, packed, scale, NULL);
}

void dsf_fp4_qdq_e4m3_row(const float *x, size_t n, float *out)
{
    fp4_row(x, n, 1, NULL, NULL, out);
}
