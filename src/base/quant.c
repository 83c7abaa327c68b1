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

void dsf_fp4_quant_e8m0_row(const float *x, size_t n, uint8_t *packed, uint8_t *scale)
{
    const int blk = DSF_FP4_E8M0_BLOCK;
    DSF_ASSERT(n % blk == 0);
    for (size_t b = 0; b < n / blk; b++) {
        const float *xb = x + b * blk;
        float s = dsf_fp4_scale_e8m0(dsf_block_amax(xb, blk));
        scale[b] = dsf_e8m0_from_pow2_f32(s);
        for (int i = 0; i < blk; i++)
            dsf_fp4_set(packed, b * blk + (size_t)i, dsf_fp4_quant_code(xb[i], s));
    }
}

void dsf_fp4_qdq_e8m0_row(const float *x, size_t n, float *out)
{
    const int blk = DSF_FP4_E8M0_BLOCK;
    DSF_ASSERT(n % blk == 0);
    for (size_t b = 0; b < n / blk; b++) {
        float s = dsf_fp4_scale_e8m0(dsf_block_amax(x + b * blk, blk));
        for (int i = 0; i < blk; i++)
            out[b * blk + (size_t)i] = dsf_fp4_qdq_value(x[b * blk + (size_t)i], s);
    }
}

void dsf_fp4_quant_e4m3_row(const float *x, size_t n, uint8_t *packed, uint8_t *scale)
{
    const int blk = DSF_FP4_E4M3_BLOCK;
    DSF_ASSERT(n % blk == 0);
    for (size_t b = 0; b < n / blk; b++) {
        const float *xb = x + b * blk;
        float s = dsf_fp4_scale_e4m3(dsf_block_amax(xb, blk));
        scale[b] = dsf_e4m3_from_f32(s);
        for (int i = 0; i < blk; i++)
            dsf_fp4_set(packed, b * blk + (size_t)i, dsf_fp4_quant_code(xb[i], s));
    }
}

void dsf_fp4_qdq_e4m3_row(const float *x, size_t n, float *out)
{
    const int blk = DSF_FP4_E4M3_BLOCK;
    DSF_ASSERT(n % blk == 0);
    for (size_t b = 0; b < n / blk; b++) {
        float s = dsf_fp4_scale_e4m3(dsf_block_amax(x + b * blk, blk));
        for (int i = 0; i < blk; i++)
            out[b * blk + (size_t)i] = dsf_fp4_qdq_value(x[b * blk + (size_t)i], s);
    }
}
