// Activation quantisers: hand-worked blocks, floors, saturation, QDQ against dequant(quant), and a double reference.
#include "base/quant.h"
#include "base/rng.h"

#include <math.h>

#include "test.h"

static uint64_t rng_state = 0x13198A2E03707344ull;

static uint64_t rng_next(void)
{
    return dsf_splitmix_next(&rng_state);
}

static uint32_t bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static int same_bits(float a, float b)
{
    return bits_of(a) == bits_of(b);
}

// Checks codes, scale bytes and QDQ values of one act_quant row against hand-worked expectations.
static void check_act(const float *x, size_t n, int blk, const uint8_t *want_q, const uint8_t *want_s,
                      const float *want_qdq)
{
    uint8_t q[256], s[8];
    float out[256];
    dsf_act_quant_row(x, n, blk, q, s);
    dsf_act_qdq_row(x, n, blk, out);
    for (size_t b = 0; b < n / (size_t)blk; b++)
        TEST_ASSERT_MSG(s[b] == want_s[b], "scale %zu: got %u want %u", b, s[b], want_s[b]);
    for (size_t i = 0; i < n; i++) {
        TEST_ASSERT_MSG(q[i] == want_q[i], "x[%zu] = %g: code 0x%02x, want 0x%02x", i, (double)x[i], q[i], want_q[i]);
        TEST_ASSERT_MSG(same_bits(out[i], want_qdq[i]), "x[%zu] = %g: qdq %a, want %a", i, (double)x[i],
                        (double)out[i], (double)want_qdq[i]);
    }
}

static void test_act_hand(void)
{
    float x[64] = {0}, qdq[64] = {0};
    uint8_t q[64] = {0};
    // amax 100: 100*fp32(1/448) = 0.2232 lies in (2^-3, 2^-2], so s = 2^-2, e8m0 byte 125.
    x[5] = -0.0f, q[5] = 0x80, qdq[5] = -0.0f;
    // 100/s = 400 ties 384 (mantissa 100b) and 416 (101b) and goes to the even 384: e4m3 0x7C, QDQ 384/4 = 96.
    x[0] = 100.0f, q[0] = 0x7C, qdq[0] = 96.0f;
    // -2.5/s = -10 = -1.25*2^3: exponent field 3+7 = 10, mantissa 2: 0x80|0x52; 1/s = 4 = 2^2: 0x48.
    x[1] = -2.5f, q[1] = 0xD2, qdq[1] = -2.5f;
    x[2] = 1.0f, q[2] = 0x48, qdq[2] = 1.0f;
    // bf16(0.3) = 0.30078125; /s = 1.203125 lies above the midpoint 1.1875 of 1.125 and 1.25: 1.25 = 0x3A, QDQ 0.3125.
    x[3] = 0.30078125f, q[3] = 0x3A, qdq[3] = 0.3125f;
    // 7/s = 28 = 1.75*2^4: exponent 11, mantissa 6: 0x5E.
    x[4] = 7.0f, q[4] = 0x5E, qdq[4] = 7.0f;
    // Block 1, all 7.0: 7*fp32(1/448) = 2^-6*(1+0.75*2^-24) rounds to 2^-6 exactly, so s = 2^-6 (byte 121), 7/s = 448.
    for (int i = 32; i < 64; i++)
        x[i] = 7.0f, q[i] = 0x7E, qdq[i] = 7.0f;
    const uint8_t s2[2] = {125, 121};
    check_act(x, 64, 32, q, s2, qdq);
    // A block of 7.0546875 (one bf16 step above 7) passes 448*2^-6: s = 2^-5 (byte 122); 225.75 rounds to 224 (0x76).
    for (int i = 0; i < 32; i++)
        x[i] = 7.0546875f, q[i] = 0x76, qdq[i] = 7.0f;
    const uint8_t s1[1] = {122};
    check_act(x, 32, 32, q, s1, qdq);
}

static void test_act_floor(void)
{
    float x[32] = {0}, qdq[32] = {0};
    uint8_t q[32] = {0};
    // amax 2^-20 < 1e-4, so amax = fp32(1e-4); 1e-4*fp32(1/448) = 2.232e-7 lies in (2^-23, 2^-22]: s = 2^-22, byte 105.
    x[0] = 0x1p-20f, q[0] = 0x48, qdq[0] = 0x1p-20f;
    // 3*2^-30 / 2^-22 = 6*2^-9: e4m3 subnormal code 6.
    x[1] = 0x1.8p-29f, q[1] = 0x06, qdq[1] = 0x1.8p-29f;
    // -2^-33/s = -0.25 units of 2^-9, which rounds to -0.
    x[2] = -0x1p-33f, q[2] = 0x80, qdq[2] = -0.0f;
    // 2^-32/s = half a unit of 2^-9: ties to 0; 3*2^-32/s = 1.5 units: ties to 2 units (code 2), QDQ 2^-30.
    x[3] = 0x1p-32f, q[3] = 0x00, qdq[3] = 0.0f;
    x[4] = 0x1.8p-31f, q[4] = 0x02, qdq[4] = 0x1p-30f;
    const uint8_t s[1] = {105};
    check_act(x, 32, 32, q, s, qdq);
    // All zeros: the floor again gives s = 2^-22 and every code is 0.
    float z[32] = {0};
    uint8_t zq[32] = {0};
    check_act(z, 32, 32, zq, s, z);
}

static void test_act_all_equal_128(void)
{
    float x[128], qdq[128];
    uint8_t q[128];
    // amax 3: 3*fp32(1/448) = 0.006696 lies in (2^-8, 2^-7]: s = 2^-7 (byte 120); -3/s = -384 = -1.5*2^8: 0xFC.
    for (int i = 0; i < 128; i++)
        x[i] = -3.0f, q[i] = 0xFC, qdq[i] = -3.0f;
    const uint8_t s[1] = {120};
    check_act(x, 128, 128, q, s, qdq);
}

// Checks one fp4 row (packed codes, scale bytes, QDQ) for either scale variant.
static void check_fp4(int e4m3, const float *x, size_t n, const uint8_t *want_c, const uint8_t *want_s,
                      const float *want_qdq)
{
    uint8_t packed[64], s[8];
    float out[128];
    int blk = e4m3 ? DSF_FP4_E4M3_BLOCK : DSF_FP4_E8M0_BLOCK;
    memset(packed, 0, sizeof packed);
    if (e4m3) {
        dsf_fp4_quant_e4m3_row(x, n, packed, s);
        dsf_fp4_qdq_e4m3_row(x, n, out);
    } else {
        dsf_fp4_quant_e8m0_row(x, n, packed, s);
        dsf_fp4_qdq_e8m0_row(x, n, out);
    }
    for (size_t b = 0; b < n / (size_t)blk; b++)
        TEST_ASSERT_MSG(s[b] == want_s[b], "scale %zu: got 0x%02x want 0x%02x", b, s[b], want_s[b]);
    for (size_t i = 0; i < n; i++) {
        unsigned c = (packed[i / 2] >> (4 * (i % 2))) & 0xF;
        TEST_ASSERT_MSG(c == want_c[i], "x[%zu] = %g: code 0x%x, want 0x%x", i, (double)x[i], c, want_c[i]);
        TEST_ASSERT_MSG(same_bits(out[i], want_qdq[i]), "x[%zu] = %g: qdq %a, want %a", i, (double)x[i],
                        (double)out[i], (double)want_qdq[i]);
    }
}

static void test_fp4_e8m0_hand(void)
{
    float x[64] = {0}, qdq[64] = {0};
    uint8_t c[64] = {0};
    // Block 0, amax 5: 5*fp32(1/6) = 0.833 lies in (2^-1, 2^0]: s = 1 (byte 127), so x/s = x hits every spec tie.
    const float x0[] = {5.0f, 0.75f, 0.25f, -1.75f, 3.5f, 1.25f, 2.5f, -5.0f, 0.5f, 1.5f, 3.0f, -4.0f};
    const uint8_t c0[] = {0x6, 0x2, 0x0, 0xC, 0x6, 0x2, 0x4, 0xE, 0x1, 0x3, 0x5, 0xE};
    const float q0[] = {4.0f, 1.0f, 0.0f, -2.0f, 4.0f, 1.0f, 2.0f, -4.0f, 0.5f, 1.5f, 3.0f, -4.0f};
    for (int i = 0; i < 12; i++)
        x[i] = x0[i], c[i] = c0[i], qdq[i] = q0[i];
    // Block 1, amax 12: 12*fp32(1/6) = 2*(1+2^-25) rounds to 2 exactly, so s = 2 (byte 128).
    const float x1[] = {12.0f, 7.0f, -0.5f, 1.0f, -12.0f, 0.75f};
    // 7/2 = 3.5 ties to 4; -0.5/2 = -0.25 ties to -0; 0.75/2 = 0.375 rounds to 0.5.
    const uint8_t c1[] = {0x7, 0x6, 0x8, 0x1, 0xF, 0x1};
    const float q1[] = {12.0f, 8.0f, -0.0f, 1.0f, -12.0f, 1.0f};
    for (int i = 0; i < 6; i++)
        x[32 + i] = x1[i], c[32 + i] = c1[i], qdq[32 + i] = q1[i];
    const uint8_t s[2] = {127, 128};
    check_fp4(0, x, 64, c, s, qdq);
}

static void test_fp4_e8m0_floor(void)
{
    float x[64] = {0}, qdq[64] = {0};
    uint8_t c[64] = {0};
    // amax 1.5*2^-126 < 6*2^-126: floored; 6*2^-126*fp32(1/6) rounds to 2^-126, so s = 2^-126 (byte 1).
    x[0] = 0x1p-127f, c[0] = 0x1, qdq[0] = 0x1p-127f;
    x[1] = -0x1.8p-126f, c[1] = 0xB, qdq[1] = -0x1.8p-126f;
    // Block 1 is all zeros: the same floor, s = 2^-126, codes 0.
    const uint8_t s[2] = {1, 1};
    check_fp4(0, x, 64, c, s, qdq);
}

static void test_fp4_e4m3_hand(void)
{
    float x[32] = {0}, qdq[32] = {0};
    uint8_t c[32] = {0};
    // Block 0, amax 5: 5/6 = 0.8333 lies between e4m3 0.8125 and 0.875 (midpoint 0.84375): s = 0.8125 = 0x35.
    const float x0[] = {5.0f, 1.0f, -2.0f, 2.03125f, 2.84375f, 0.203125f, 0.609375f, -4.0625f};
    // 5/s = 6.15 clamps to 6; 1/s = 1.23 -> 1; -2/s = -2.46 -> -2; 2.03125/s = 2.5 exactly, ties to 2.
    const uint8_t c0[] = {0x7, 0x2, 0xC, 0x4, 0x6, 0x0, 0x2, 0xE};
    // 2.84375/s = 3.5 ties to 4; 0.203125/s = 0.25 ties to 0; 0.609375/s = 0.75 ties to 1; -4.0625/s = -5 ties to -4.
    const float q0[] = {4.875f, 0.8125f, -1.625f, 1.625f, 3.25f, 0.0f, 0.8125f, -3.25f};
    for (int i = 0; i < 8; i++)
        x[i] = x0[i], c[i] = c0[i], qdq[i] = q0[i];
    // Block 1, all 1.0: 1/6 = 0.1667 rounds to 0.171875 (0x23) above the midpoint 0.1640625; 1/s = 5.82 -> 6.
    for (int i = 16; i < 32; i++)
        x[i] = 1.0f, c[i] = 0x7, qdq[i] = 1.03125f;
    const uint8_t s[2] = {0x35, 0x23};
    check_fp4(1, x, 32, c, s, qdq);
}

static void test_fp4_e4m3_saturation_and_floor(void)
{
    float x[64] = {0}, qdq[64] = {0};
    uint8_t c[64] = {0};
    // Block 0, amax 3072: 3072/6 = 512 saturates the e4m3 scale to 448 (0x7E); 3072/448 = 6.86 clamps to 6.
    x[0] = 3072.0f, c[0] = 0x7, qdq[0] = 2688.0f;
    // -1000/448 = -2.23 -> -2 (QDQ -896); 1/448 -> 0.
    x[1] = -1000.0f, c[1] = 0xC, qdq[1] = -896.0f;
    x[2] = 1.0f, c[2] = 0x0, qdq[2] = 0.0f;
    // Block 1, amax 2720: 2720/6 = 453.3 is finite but rounds to 448 too; 2720/448 = 6.07 clamps to 6.
    x[16] = -2720.0f, c[16] = 0xF, qdq[16] = -2688.0f;
    // Block 2, amax 3*2^-9 < 6*2^-9: floored to s = 2^-9 (0x01); 2^-10/s = 0.5; -3*2^-9/s = -3.
    x[32] = 0x1p-10f, c[32] = 0x1, qdq[32] = 0x1p-10f;
    x[33] = -0x1.8p-8f, c[33] = 0xD, qdq[33] = -0x1.8p-8f;
    // Block 3 is all zeros: s = 2^-9, codes 0.
    const uint8_t s[4] = {0x7E, 0x7E, 0x01, 0x01};
    check_fp4(1, x, 64, c, s, qdq);
}

static void test_fp4_all_equal_negative(void)
{
    float x[32], qdq[32];
    uint8_t c[32];
    // -1.0 everywhere: as for +1.0 above, s = 0.171875 and the code is -6 (0xF), QDQ -1.03125.
    for (int i = 0; i < 16; i++)
        x[i] = -1.0f, c[i] = 0xF, qdq[i] = -1.03125f;
    const uint8_t s[1] = {0x23};
    check_fp4(1, x, 16, c, s, qdq);
    // E8M0: fp32(1/6) = 0.1667 lies in (2^-3, 2^-2], so s = 2^-2 (byte 125) and -1/s = -4 (0xE), QDQ -1 exactly.
    for (int i = 0; i < 32; i++)
        x[i] = -1.0f, c[i] = 0xE, qdq[i] = -1.0f;
    const uint8_t s8[1] = {125};
    check_fp4(0, x, 32, c, s8, qdq);
}

// A random bf16 row whose blocks have magnitudes from 2^-30 to 2^20, with zeros and equal runs mixed in.
static void random_row(float *x, size_t n, int blk)
{
    for (size_t b = 0; b < n / (size_t)blk; b++) {
        int e = 127 - 30 + (int)(rng_next() % 51);
        for (int i = 0; i < blk; i++) {
            uint64_t r = rng_next();
            uint32_t ei = (uint32_t)(e - (int)((r >> 8) % 12));
            uint32_t u = (uint32_t)(r & 1) << 31 | ei << 23 | ((uint32_t)(r >> 20) & 0x7Fu) << 16;
            int kind = (int)((r >> 40) % 16);
            if (kind == 0)
                u = (uint32_t)(r & 1) << 31;
            memcpy(&x[b * (size_t)blk + (size_t)i], &u, sizeof u);
            if (kind == 1 && i > 0)
                x[b * (size_t)blk + (size_t)i] = x[b * (size_t)blk + (size_t)i - 1];
        }
    }
}

static void test_qdq_equals_dequant_of_quant(void)
{
    enum { N = 512 };
    float x[N], out[N], inplace[N];
    uint8_t q[N], packed[N / 2], s[N / 16];
    long bad = 0;
    const int blks[] = {32, 64, 128};
    for (int it = 0; it < 300; it++) {
        for (int k = 0; k < 3; k++) {
            random_row(x, N, blks[k]);
            dsf_act_quant_row(x, N, blks[k], q, s);
            dsf_act_qdq_row(x, N, blks[k], out);
            memcpy(inplace, x, sizeof x);
            dsf_act_qdq_row(inplace, N, blks[k], inplace);
            for (int i = 0; i < N; i++) {
                float d = dsf_bf16_round(dsf_e4m3_to_f32(q[i]) * dsf_e8m0_to_f32(s[i / blks[k]]));
                bad += !same_bits(out[i], d) || !same_bits(inplace[i], d);
            }
        }
        random_row(x, N, 32);
        dsf_fp4_quant_e8m0_row(x, N, packed, s);
        dsf_fp4_qdq_e8m0_row(x, N, out);
        memcpy(inplace, x, sizeof x);
        dsf_fp4_qdq_e8m0_row(inplace, N, inplace);
        for (int i = 0; i < N; i++) {
            float d = dsf_bf16_round(dsf_e2m1_to_f32(dsf_fp4_get(packed, (size_t)i)) * dsf_e8m0_to_f32(s[i / 32]));
            bad += !same_bits(out[i], d) || !same_bits(inplace[i], d);
        }
        random_row(x, N, 16);
        dsf_fp4_quant_e4m3_row(x, N, packed, s);
        dsf_fp4_qdq_e4m3_row(x, N, out);
        memcpy(inplace, x, sizeof x);
        dsf_fp4_qdq_e4m3_row(inplace, N, inplace);
        for (int i = 0; i < N; i++) {
            float d = dsf_bf16_round(dsf_e2m1_to_f32(dsf_fp4_get(packed, (size_t)i)) * dsf_e4m3_to_f32(s[i / 16]));
            bad += !same_bits(out[i], d) || !same_bits(inplace[i], d);
        }
    }
    TEST_ASSERT_MSG(bad == 0, "%ld QDQ values differ from dequant(quant)", bad);
}

// Nearest value of a positive table to a >= 0, ties to the even index, saturating at the top.
static double nearest(double a, const double *v, int count)
{
    int i = 0;
    while (i + 1 < count && v[i + 1] <= a)
        i++;
    if (i + 1 == count)
        return v[i];
    double dlo = a - v[i], dhi = v[i + 1] - a;
    return (dlo < dhi || (dlo == dhi && !(i & 1))) ? v[i] : v[i + 1];
}

static double e4m3_tab[127];
static const double e2m1_tab[8] = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0};

// 2^ceil(log2(t)) for t > 0 by frexp, the reference for the exponent-bit trick.
static double pow2_ceil(double t)
{
    int k;
    double f = frexp(t, &k);
    return ldexp(1.0, f == 0.5 ? k - 1 : k);
}

static double sgn_nearest(double v, const double *tab, int count)
{
    return v < 0 ? -nearest(-v, tab, count) : nearest(v, tab, count);
}

// Reference QDQ of one block in double: fp32 roundings of the spec are applied where the spec has them.
static void ref_block(int kind, const float *x, int blk, double *out)
{
    double amax = 0;
    for (int i = 0; i < blk; i++)
        amax = fmax(amax, fabs((double)x[i]));
    double s;
    if (kind == 0)
        s = pow2_ceil((float)(fmax(amax, (double)1e-4f) * (double)(float)(1.0 / 448.0)));
    else if (kind == 1)
        s = pow2_ceil((float)(fmax(amax, 6.0 * ldexp(1.0, -126)) * (double)(float)(1.0 / 6.0)));
    else
        s = nearest((float)(fmax(amax, 6.0 * ldexp(1.0, -9)) / 6.0), e4m3_tab, 127);
    for (int i = 0; i < blk; i++) {
        double v = (float)((double)x[i] / s);
        if (kind == 0)
            out[i] = sgn_nearest(fmin(fmax(v, -448.0), 448.0), e4m3_tab, 127) * s;
        else
            out[i] = sgn_nearest(fmin(fmax(v, -6.0), 6.0), e2m1_tab, 8) * s;
    }
}

static void test_against_double_reference(void)
{
    for (int c = 0; c < 127; c++)
        e4m3_tab[c] = (c >> 3) == 0 ? ldexp(c & 7, -9) : ldexp(8 + (c & 7), (c >> 3) - 10);
    enum { N = 256 };
    float x[N], out[N];
    double ref[N];
    long bad = 0, checked = 0;
    const int blks[] = {32, 32, 16};
    for (int it = 0; it < 3000; it++) {
        for (int kind = 0; kind < 3; kind++) {
            random_row(x, N, blks[kind]);
            if (kind == 0)
                dsf_act_qdq_row(x, N, 32, out);
            else if (kind == 1)
                dsf_fp4_qdq_e8m0_row(x, N, out);
            else
                dsf_fp4_qdq_e4m3_row(x, N, out);
            for (int b = 0; b < N; b += blks[kind])
                ref_block(kind, x + b, blks[kind], ref + b);
            for (int i = 0; i < N; i++, checked++) {
                if ((double)out[i] != ref[i] && bad++ < 5)
                    TEST_ASSERT_MSG(0, "kind %d x[%d] = %a: got %a, reference %a", kind, i, (double)x[i],
                                    (double)out[i], ref[i]);
            }
        }
    }
    TEST_ASSERT_MSG(bad == 0, "%ld of %ld values differ from the double reference", bad, checked);
}

// The block helpers give the same scales as the hand-worked values, so a CUDA kernel calling them matches too.
static void test_block_helpers(void)
{
    TEST_ASSERT(dsf_act_scale_pow2(100.0f) == 0.25f && dsf_act_scale_pow2(0.0f) == 0x1p-22f);
    TEST_ASSERT(dsf_act_scale_pow2(448.0f) == 1.0f && dsf_act_scale_pow2(448.00003f) == 2.0f);
    TEST_ASSERT(dsf_fp4_scale_e8m0(6.0f) == 1.0f && dsf_fp4_scale_e8m0(6.0000005f) == 2.0f);
    TEST_ASSERT(dsf_fp4_scale_e8m0(0.0f) == 0x1p-126f && dsf_fp4_scale_e4m3(0.0f) == 0x1p-9f);
    TEST_ASSERT(dsf_fp4_scale_e4m3(1e30f) == 448.0f && dsf_fp4_scale_e4m3(5.0f) == 0.8125f);
    TEST_ASSERT(dsf_log2_ceil_bits(1.0f) == 0 && dsf_log2_ceil_bits(1.0000001f) == 1 && dsf_log2_ceil_bits(0.3f) == -1);
    float blk[4] = {-7.0f, 2.0f, -0.0f, 6.5f};
    TEST_ASSERT(dsf_block_amax(blk, 4) == 7.0f);
}

// For every bf16 amax the spec's scale forms agree: amax*fp32(1/448) or amax/448, amax*fp32(1/6) or amax/6.
static void test_scale_forms_agree_on_all_bf16(void)
{
    long bad = 0;
    for (uint32_t b = 1; b < 0x7F80; b++) {
        float a = dsf_bf16_to_f32((uint16_t)b);
        float a8 = a > 1e-4f ? a : 1e-4f, a4 = a > 0x1.8p-124f ? a : 0x1.8p-124f;
        float a3 = a > 0.01171875f ? a : 0.01171875f;
        bad += dsf_log2_ceil_bits(a8 * (1.0f / 448.0f)) != dsf_log2_ceil_bits(a8 / 448.0f);
        bad += dsf_log2_ceil_bits(a4 * (1.0f / 6.0f)) != dsf_log2_ceil_bits(a4 / 6.0f);
        bad += dsf_e4m3_from_f32(a3 * (1.0f / 6.0f)) != dsf_e4m3_from_f32(a3 / 6.0f);
    }
    TEST_ASSERT_MSG(bad == 0, "%ld bf16 amax values give different scales", bad);
}

int main(void)
{
    TEST_RUN(test_act_hand);
    TEST_RUN(test_act_floor);
    TEST_RUN(test_act_all_equal_128);
    TEST_RUN(test_fp4_e8m0_hand);
    TEST_RUN(test_fp4_e8m0_floor);
    TEST_RUN(test_fp4_e4m3_hand);
    TEST_RUN(test_fp4_e4m3_saturation_and_floor);
    TEST_RUN(test_fp4_all_equal_negative);
    TEST_RUN(test_block_helpers);
    TEST_RUN(test_scale_forms_agree_on_all_bf16);
    TEST_RUN(test_qdq_equals_dequant_of_quant);
    TEST_RUN(test_against_double_reference);
    TEST_END();
}
