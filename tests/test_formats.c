// Formats against an independent oracle: value tables built in double from each format's definition, nearest search.
#include "base/formats.h"
#include "base/rng.h"

#include <float.h>
#include <math.h>

#include "test.h"

enum { FMT_BF16, FMT_E4M3, FMT_E2M1 };

static uint64_t rng_state = 0x243F6A8885A308D3ull;

static uint64_t rng_next(void)
{
    return dsf_splitmix_next(&rng_state);
}

static float f32_of(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint32_t bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

// Positive values indexed by code; bf16 ends with the overflow point 2^128 at the inf code 0x7F80 (IEEE rounding).
static double bf16_vals[0x7F81];
static double e4m3_vals[127];
static const double e2m1_vals[8] = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0};

static void build_tables(void)
{
    for (int c = 0; c <= 0x7F80; c++) {
        int e = (c >> 7) & 0xFF, m = c & 0x7F;
        bf16_vals[c] = e == 0 ? ldexp(m, -133) : ldexp(128 + m, e - 134);
    }
    for (int c = 0; c < 127; c++) {
        int e = (c >> 3) & 15, m = c & 7;
        e4m3_vals[c] = e == 0 ? ldexp(m, -9) : ldexp(8 + m, e - 10);
    }
}

// Nearest entry of an ascending table to a >= 0: exact differences in double, ties to the even code, saturating.
static int nearest_code(double a, const double *vals, int count)
{
    int lo = 0, hi = count - 1;
    if (a >= vals[hi])
        return hi;
    while (hi - lo > 1) {
        int mid = (lo + hi) / 2;
        if (vals[mid] <= a)
            lo = mid;
        else
            hi = mid;
    }
    double dlo = a - vals[lo], dhi = vals[hi] - a;
    if (dlo < dhi)
        return lo;
    if (dhi < dlo)
        return hi;
    return (lo & 1) ? hi : lo;
}

// The code the format must give for x, from the oracle; NaN and inf follow the documented rules.
static unsigned expected_code(int fmt, float x)
{
    int neg = signbit(x) != 0;
    double a = fabs((double)x);
    if (fmt == FMT_BF16) {
        if (isinf(x))
            return (neg ? 0x8000u : 0u) | 0x7F80u;
        return (neg ? 0x8000u : 0u) | (unsigned)nearest_code(a, bf16_vals, 0x7F81);
    }
    if (fmt == FMT_E4M3) {
        if (isnan(x))
            return (neg ? 0x80u : 0u) | 0x7Fu;
        return (neg ? 0x80u : 0u) | (unsigned)(isinf(x) ? 126 : nearest_code(a, e4m3_vals, 127));
    }
    if (isnan(x))
        return (neg ? 8u : 0u) | 7u;
    return (neg ? 8u : 0u) | (unsigned)(isinf(x) ? 7 : nearest_code(a, e2m1_vals, 8));
}

static unsigned actual_code(int fmt, float x)
{
    if (fmt == FMT_BF16)
        return dsf_bf16_from_f32(x);
    if (fmt == FMT_E4M3)
        return dsf_e4m3_from_f32(x);
    return dsf_e2m1_from_f32(x);
}

static const char *fmt_name[] = {"bf16", "e4m3", "e2m1"};
static long checked, mismatched;

// Checks one input; a bf16 NaN must stay a quiet NaN of the same sign rather than match a code.
static void check_one(int fmt, float x)
{
    unsigned got = actual_code(fmt, x), want;
    int ok;
    checked++;
    if (fmt == FMT_BF16 && isnan(x)) {
        want = (bits_of(x) >> 16) | 0x40u;
        ok = (got & 0x7F80u) == 0x7F80u && (got & 0x40u) && (got & 0x8000u) == (want & 0x8000u);
    } else {
        want = expected_code(fmt, x);
        ok = got == want;
    }
    if (!ok && mismatched++ < 8)
        TEST_ASSERT_MSG(ok, "%s(%a = 0x%08x): got 0x%x, want 0x%x", fmt_name[fmt], (double)x, bits_of(x), got, want);
}

static void test_bf16_all_patterns(void)
{
    for (uint32_t b = 0; b < 0x10000; b++) {
        float f = dsf_bf16_to_f32((uint16_t)b);
        int neg = (b & 0x8000u) != 0, e = (b >> 7) & 0xFF, m = b & 0x7F;
        if (e == 0xFF && m) {
            TEST_ASSERT_MSG(isnan(f) && (signbit(f) != 0) == neg, "bf16 0x%04x", b);
            TEST_ASSERT_MSG(dsf_bf16_from_f32(f) == (b | 0x40u), "bf16 NaN 0x%04x", b);
            continue;
        }
        double want = e == 0xFF ? INFINITY : bf16_vals[b & 0x7FFF];
        TEST_ASSERT_MSG((double)f == (neg ? -want : want) && (signbit(f) != 0) == neg, "bf16 0x%04x", b);
        TEST_ASSERT_MSG(dsf_bf16_from_f32(f) == b, "bf16 round trip 0x%04x", b);
        TEST_ASSERT_MSG(bits_of(dsf_bf16_round(f)) == bits_of(f), "bf16_round 0x%04x", b);
    }
}

static void test_e4m3_all_codes(void)
{
    for (unsigned c = 0; c < 256; c++) {
        float f = dsf_e4m3_to_f32((uint8_t)c);
        int neg = (c & 0x80u) != 0;
        if ((c & 0x7Fu) == 0x7Fu) {
            TEST_ASSERT_MSG(isnan(f) && (signbit(f) != 0) == neg, "e4m3 0x%02x", c);
        } else {
            double want = e4m3_vals[c & 0x7Fu];
            TEST_ASSERT_MSG((double)f == (neg ? -want : want) && (signbit(f) != 0) == neg, "e4m3 0x%02x", c);
            TEST_ASSERT_MSG(bits_of(dsf_e4m3_round(f)) == bits_of(f), "e4m3_round 0x%02x", c);
        }
        TEST_ASSERT_MSG(dsf_e4m3_from_f32(f) == c, "e4m3 round trip 0x%02x", c);
    }
    TEST_ASSERT(dsf_e4m3_to_f32(0x7E) == 448.0f && dsf_e4m3_to_f32(0x01) == 0x1p-9f);
    TEST_ASSERT(dsf_e4m3_to_f32(0x08) == 0x1p-6f && dsf_e4m3_to_f32(0x38) == 1.0f && dsf_e4m3_to_f32(0xC4) == -3.0f);
}

static void test_e8m0_all_codes(void)
{
    for (unsigned b = 0; b < 256; b++) {
        float f = dsf_e8m0_to_f32((uint8_t)b);
        if (b == 255)
            TEST_ASSERT(isnan(f));
        else
            TEST_ASSERT_MSG((double)f == ldexp(1.0, (int)b - 127), "e8m0 0x%02x", b);
        TEST_ASSERT_MSG(dsf_e8m0_from_pow2_f32(f) == b, "e8m0 round trip 0x%02x", b);
    }
    const float bad[] = {3.0f, 0.75f, 0.0f, -0.0f, -2.0f, INFINITY, NAN, 0x1p-128f, 0x1p-149f, FLT_MAX, 0x1.8p-127f};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        TEST_ASSERT_MSG(dsf_e8m0_from_pow2_f32(bad[i]) == 0xFF, "e8m0 of %a", (double)bad[i]);
    TEST_ASSERT(dsf_e8m0_from_pow2_f32(1.0f) == 127 && dsf_e8m0_from_pow2_f32(0.25f) == 125);
    TEST_ASSERT(dsf_e8m0_from_pow2_f32(0x1p127f) == 254 && dsf_e8m0_from_pow2_f32(0x1p-126f) == 1);
}

static void test_e2m1_all_codes(void)
{
    for (unsigned c = 0; c < 16; c++) {
        float f = dsf_e2m1_to_f32((uint8_t)c);
        int neg = (c & 8u) != 0;
        double want = e2m1_vals[c & 7u];
        TEST_ASSERT_MSG((double)f == (neg ? -want : want) && (signbit(f) != 0) == neg, "e2m1 0x%x", c);
        TEST_ASSERT_MSG(dsf_e2m1_from_f32(f) == c, "e2m1 round trip 0x%x", c);
        TEST_ASSERT_MSG(dsf_e2m1_to_f32((uint8_t)(c | 0xF0u)) == f, "e2m1 high bits 0x%x", c);
    }
}

// Spec §3.0 tie table and hand-picked cases, written out so a table error in the oracle cannot hide one.
static void test_hand_cases(void)
{
    const float e2m1_in[] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f, 6.5f, 100.0f, 0.2500001f, -5.0f, -0.1f};
    const unsigned e2m1_out[] = {0, 2, 2, 4, 4, 6, 6, 7, 7, 1, 14, 8};
    for (size_t i = 0; i < sizeof e2m1_in / sizeof e2m1_in[0]; i++)
        TEST_ASSERT_MSG(dsf_e2m1_from_f32(e2m1_in[i]) == e2m1_out[i], "e2m1(%g)", (double)e2m1_in[i]);
    // 464 is the tie between 448 and the absent 480: saturates; 2^-10 ties 0 and 2^-9: to 0; 3*2^-10 ties to 2*2^-9.
    TEST_ASSERT(dsf_e4m3_from_f32(464.0f) == 0x7E && dsf_e4m3_from_f32(1e30f) == 0x7E);
    TEST_ASSERT(dsf_e4m3_from_f32(-INFINITY) == 0xFE && dsf_e4m3_from_f32(-NAN) == 0xFF);
    TEST_ASSERT(dsf_e4m3_from_f32(0x1p-10f) == 0x00 && dsf_e4m3_from_f32(0x1.8p-9f) == 0x02);
    TEST_ASSERT(dsf_e4m3_from_f32(-0x1p-11f) == 0x80 && dsf_e4m3_from_f32(0x1.fp-7f) == 0x08);
    // 400 ties 384 (mantissa 100b) and 416 (101b): to 384; 17 ties 16 and 18: to 16; 19 ties 18 and 20: to 20.
    TEST_ASSERT(dsf_e4m3_from_f32(400.0f) == 0x7C && dsf_e4m3_from_f32(17.0f) == 0x58);
    TEST_ASSERT(dsf_e4m3_from_f32(19.0f) == 0x5A);
    // 1+2^-8 ties 1 and 1+2^-7: to 1 (0x3F80); 1+3*2^-8 ties 1+2^-7 and 1+2^-6: to 1+2^-6 (0x3F82).
    TEST_ASSERT(dsf_bf16_from_f32(1.00390625f) == 0x3F80 && dsf_bf16_from_f32(1.01171875f) == 0x3F82);
    TEST_ASSERT(dsf_bf16_from_f32(FLT_MAX) == 0x7F80 && dsf_bf16_from_f32(-0.0f) == 0x8000);
    TEST_ASSERT(dsf_bf16_from_f32(f32_of(0x7F7F7FFFu)) == 0x7F7F && dsf_bf16_from_f32(f32_of(0x7F7F8000u)) == 0x7F80);
    TEST_ASSERT(dsf_bf16_from_f32(f32_of(0x7F800001u)) == 0x7FC0 && dsf_bf16_from_f32(f32_of(0xFFBF0001u)) == 0xFFFF);
    TEST_ASSERT(dsf_e2m1_from_f32(NAN) == 0x7 && dsf_e2m1_from_f32(-NAN) == 0xF && dsf_e2m1_from_f32(-0.0f) == 0x8);
}

// Number of neighbouring code pairs (c, c+1) per format.
static const int fmt_codes[] = {0x7F80, 126, 7};

static double fmt_val(int fmt, int c)
{
    return fmt == FMT_BF16 ? bf16_vals[c] : fmt == FMT_E4M3 ? e4m3_vals[c] : e2m1_vals[c];
}

// Every midpoint between neighbouring codes, the codes themselves, and 1..3 ulps either side, with both signs.
static void check_boundaries(int fmt)
{
    for (int c = 0; c < fmt_codes[fmt]; c++) {
        float v = (float)fmt_val(fmt, c);
        float mid = (float)((fmt_val(fmt, c) + fmt_val(fmt, c + 1)) / 2);
        TEST_ASSERT_MSG((double)mid == (fmt_val(fmt, c) + fmt_val(fmt, c + 1)) / 2, "midpoint %d not exact", c);
        for (int d = -3; d <= 3; d++) {
            for (int s = 0; s < 2; s++) {
                uint32_t sign = s ? 0x80000000u : 0u;
                check_one(fmt, f32_of(sign | (bits_of(mid) + (uint32_t)d)));
                if (bits_of(v) + (uint32_t)d < 0x7F800000u && (d >= 0 || bits_of(v) >= (uint32_t)-d))
                    check_one(fmt, f32_of(sign | (bits_of(v) + (uint32_t)d)));
            }
        }
    }
    const uint32_t special[] = {0x00000000u, 0x00000001u, 0x007FFFFFu, 0x00800000u, 0x7F7FFFFFu, 0x7F800000u,
                                0x7F800001u, 0x7FC00000u, 0x7FFFFFFFu, 0x3F800000u, 0x43E00000u, 0x43E00001u,
                                0x43DFFFFFu, 0x43E80000u, 0x43F00000u, 0x40C00000u, 0x40C00001u, 0x40DFFFFFu,
                                0x40E00000u, 0x41000000u, 0x3C000000u, 0x3BFFFFFFu, 0x3A800000u, 0x3A000000u};
    for (size_t i = 0; i < sizeof special / sizeof special[0]; i++) {
        check_one(fmt, f32_of(special[i]));
        check_one(fmt, f32_of(special[i] | 0x80000000u));
    }
}

// Random inputs: uniform bit patterns, values with exponents around the format's range, and near-midpoints.
static void check_random(int fmt, long per_kind)
{
    const int elo[] = {0, 127 - 14, 127 - 4}, ehi[] = {254, 127 + 10, 127 + 4};
    for (long i = 0; i < per_kind; i++) {
        uint64_t r = rng_next();
        check_one(fmt, f32_of((uint32_t)r));
        uint32_t e = (uint32_t)(elo[fmt] + (int)((r >> 32) % (uint64_t)(ehi[fmt] - elo[fmt] + 1)));
        check_one(fmt, f32_of((uint32_t)(r >> 63) << 31 | e << 23 | ((uint32_t)(r >> 9) & 0x7FFFFFu)));
        uint64_t r2 = rng_next();
        int c = (int)(r2 % (uint64_t)fmt_codes[fmt]);
        float mid = (float)((fmt_val(fmt, c) + fmt_val(fmt, c + 1)) / 2);
        int d = (int)((r2 >> 32) % 9) - 4;
        check_one(fmt, f32_of((uint32_t)(r2 >> 63) << 31 | (bits_of(mid) + (uint32_t)d)));
    }
}

static void run_oracle(int fmt)
{
    checked = mismatched = 0;
    check_boundaries(fmt);
    check_random(fmt, 400000);
    TEST_ASSERT_MSG(mismatched == 0, "%s: %ld of %ld inputs differ from the oracle", fmt_name[fmt], mismatched,
                    checked);
    TEST_ASSERT(checked >= 1000000);
    printf("     %s: %ld inputs checked against the oracle\n", fmt_name[fmt], checked);
}

static void test_bf16_oracle(void)
{
    run_oracle(FMT_BF16);
}

static void test_e4m3_oracle(void)
{
    run_oracle(FMT_E4M3);
}

static void test_e2m1_oracle(void)
{
    run_oracle(FMT_E2M1);
}

// The oracle itself must reject a wrong rounding, or the comparisons above prove nothing.
static void test_oracle_catches_faults(void)
{
    TEST_ASSERT(expected_code(FMT_E4M3, 400.0f) == 0x7C && expected_code(FMT_E4M3, 400.5f) == 0x7D);
    TEST_ASSERT(expected_code(FMT_E2M1, 2.5f) == 4 && expected_code(FMT_E2M1, f32_of(0x40200001u)) == 5);
    TEST_ASSERT(expected_code(FMT_BF16, 1.00390625f) == 0x3F80);
    TEST_ASSERT(expected_code(FMT_BF16, f32_of(0x3F808001u)) == 0x3F81);
    TEST_ASSERT(expected_code(FMT_BF16, f32_of(0x7F7F8000u)) == 0x7F80 && expected_code(FMT_E4M3, 1e9f) == 0x7E);
    long miss = 0;
    for (int i = 0; i < 100000; i++) {
        float x = f32_of((uint32_t)rng_next());
        if (isnan(x))
            continue;
        uint32_t truncated = bits_of(x) >> 16;
        if (!isinf(x) && truncated != expected_code(FMT_BF16, x))
            miss++;
    }
    TEST_ASSERT_MSG(miss > 10000, "truncation agreed with round-to-nearest too often (%ld misses)", miss);
}

static void test_fp4_packing(void)
{
    uint8_t p[64];
    uint8_t model[128];
    memset(p, 0, sizeof p);
    dsf_fp4_set(p, 0, 0x3);
    dsf_fp4_set(p, 1, 0xA);
    TEST_ASSERT(p[0] == 0xA3);
    dsf_fp4_set(p, 0, 0xF5);
    TEST_ASSERT(p[0] == 0xA5 && dsf_fp4_get(p, 0) == 0x5 && dsf_fp4_get(p, 1) == 0xA);
    dsf_fp4_set(p, 3, 0x7);
    TEST_ASSERT(p[1] == 0x70 && p[2] == 0);
    memset(p, 0xEE, sizeof p);
    memset(model, 0xE, sizeof model);
    for (int it = 0; it < 20000; it++) {
        uint64_t r = rng_next();
        size_t i = (size_t)(r % 128);
        uint8_t c = (uint8_t)((r >> 8) & 0xFF);
        dsf_fp4_set(p, i, c);
        model[i] = c & 0xF;
    }
    for (size_t i = 0; i < 128; i++) {
        TEST_ASSERT_MSG(dsf_fp4_get(p, i) == model[i], "element %zu", i);
        TEST_ASSERT_MSG(((p[i / 2] >> (4 * (i % 2))) & 0xF) == model[i], "nibble of element %zu", i);
    }
}

int main(void)
{
    build_tables();
    TEST_RUN(test_bf16_all_patterns);
    TEST_RUN(test_e4m3_all_codes);
    TEST_RUN(test_e8m0_all_codes);
    TEST_RUN(test_e2m1_all_codes);
    TEST_RUN(test_hand_cases);
    TEST_RUN(test_oracle_catches_faults);
    TEST_RUN(test_bf16_oracle);
    TEST_RUN(test_e4m3_oracle);
    TEST_RUN(test_e2m1_oracle);
    TEST_RUN(test_fp4_packing);
    TEST_END();
}
