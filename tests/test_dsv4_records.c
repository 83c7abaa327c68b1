// The dsv4 float64 references on hand-worked values, and the router draw grid's separation (exact selections).
#include <math.h>
#include <stdint.h>

#include "kern/dsv4/dsv4_ref.h"
#include "kern/ref_formats.h"
#include "test.h"

static void test_formats(void) {
    TEST_ASSERT(dsf_ref_e4m3(0x38) == 1.0 && dsf_ref_e4m3(0x7E) == 448.0 && dsf_ref_e4m3(0x01) == ldexp(1, -9));
    TEST_ASSERT(dsf_ref_e4m3(0xB8) == -1.0 && isnan(dsf_ref_e4m3(0x7F)));
    TEST_ASSERT(dsf_ref_e2m1(0x7) == 6.0 && dsf_ref_e2m1(0xB) == -1.5 && dsf_ref_e8m0(127) == 1.0);
    // Ties to an even mantissa: 1.0625 lies halfway between 1.0 and 1.125; 1.1875 between 1.125 and 1.25.
    TEST_ASSERT(dsf_ref_round_e4m3(1.0625) == 1.0 && dsf_ref_round_e4m3(1.1875) == 1.25 &&
                dsf_ref_round_e4m3(500) == 448);
}

static void test_act_qdq(void) {
    // amax 896 gives s = 2^ceil(log2 2) = 2; 3.3 / 2 = 1.65 rounds to 1.625, back to 3.25.
    float x[2] = {896.0f, 3.3f};
    double q[2];
    dsv4_ref_act_qdq(x, 2, 2, q);
    TEST_ASSERT(q[0] == 896.0 && q[1] == 3.25);
}

static void test_rmsnorm_rope(void) {
    float x[2] = {3.0f, 4.0f}, w[2] = {1.0f, 2.0f}, f[32];
    double y[2];
    dsv4_ref_rmsnorm(x, 1, 2, w, 0.0, y);
    TEST_ASSERT(fabs(y[0] - 3.0 / sqrt(12.5)) < 1e-15 && fabs(y[1] - 8.0 / sqrt(12.5)) < 1e-15);
    dsv4_ref_rope_freqs(10000.0, 0, 64, f);
    TEST_ASSERT(f[0] == 1.0f && f[16] == 0.01f);
    float g[32];
    dsv4_ref_rope_freqs(160000.0, 1, 64, g);
    // YaRN low/high are 15/25 for base 160000: pairs up to 15 keep f, from 25 on f / 16 (exact in fp32).
    float plain[32];
    dsv4_ref_rope_freqs(160000.0, 0, 64, plain);
    TEST_ASSERT(g[15] == plain[15] && g[25] == plain[25] / 16.0f && g[20] < plain[20] && g[20] > plain[20] / 16.0f);
    float v[64] = {0};
    v[0] = 1.0f;
    double r[64];
    dsv4_ref_rope(v, 1, 64, 64, f, 1, 0, r);
    TEST_ASSERT(fabs(r[0] - cos(1.0)) < 1e-15 && fabs(r[1] - sin(1.0)) < 1e-15);
}

static void test_attn(void) {
    // Two equal logits (0) and a sink of 0: each kv row weighs 1/3; an all -1 list gives 0.
    float q[2] = {0.0f, 0.0f}, kv[4] = {3.0f, 0.0f, 0.0f, 6.0f}, sink[1] = {0.0f};
    int32_t idx[3] = {0, -1, 1}, none[2] = {-1, -1};
    double o[2];
    dsv4_ref_attn(q, kv, idx, 3, 1, 2, sink, 1.0, o);
    TEST_ASSERT(fabs(o[0] - 1.0) < 1e-15 && fabs(o[1] - 2.0) < 1e-15);
    dsv4_ref_attn(q, kv, none, 2, 1, 2, sink, 1.0, o);
    TEST_ASSERT(o[0] == 0.0 && o[1] == 0.0);
}

static void test_hc(void) {
    // Zero mixes and bases: pre = 0.5 + eps, post = 1, comb = 1/4 everywhere (uniform, already doubly stochastic).
    float mixes[24] = {0}, scale[3] = {1, 1, 1}, base[24] = {0};
    double pre[4], post[4], comb[16];
    dsv4_ref_hc_split(mixes, 4, scale, base, 20, 0.0, pre, post, comb);
    TEST_ASSERT(pre[0] == 0.5 && post[3] == 1.0 && fabs(comb[5] - 0.25) < 1e-15);
    float x[4] = {1, 1, 1, 1}, fn[8] = {1, 0, 0, 0, 1, 1, 1, 1};
    double m[2];
    dsv4_ref_hc_mixes(x, 4, fn, 2, 0.0, m);
    TEST_ASSERT(m[0] == 1.0 && m[1] == 4.0);
}

static void test_selections(void) {
    // Ties go to the lower index; -inf is pickable; the result is ascending with -1 after the count.
    float s[5] = {1.0f, 2.0f, 1.0f, -INFINITY, 2.0f};
    double idx[6];
    TEST_ASSERT(dsv4_ref_topk(s, 5, 3, idx) == 3 && idx[0] == 0 && idx[1] == 1 && idx[2] == 4);
    TEST_ASSERT(dsv4_ref_topk(s, 5, 6, idx) == 5 && idx[3] == 3 && idx[4] == 4 && idx[5] == -1);
    // Blocks of 2 over len 5: maxima {2, 1, +inf forced}; top 2 keeps blocks 0 and 2.
    float c[6] = {2.0f, 0.0f, 1.0f, 1.0f, -INFINITY, 9.0f};
    double mask[3];
    TEST_ASSERT(dsv4_ref_candidates(c, 5, 2, 2, mask) == 2 && mask[0] == 1 && mask[1] == 0 && mask[2] == 1);
    // A block of -inf only is never kept even when the top-k has room.
    float d[4] = {-INFINITY, -INFINITY, 1.0f, 1.0f};
    TEST_ASSERT(dsv4_ref_candidates(d, 4, 2, 4, mask) == 1 && mask[0] == 0 && mask[1] == 1);
}

static void test_route(void) {
    // z = 21 is past the softplus threshold (20): score sqrt(21); the bias picks expert 1, weights are unbiased.
    float z[3] = {21.0f, 0.0f, -30.0f}, bias[3] = {0.0f, 10.0f, 0.0f};
    double idx[2], w[2];
    dsv4_ref_route(z, 3, bias, 2, 1, 1.5, idx, w);
    double s0 = sqrt(21.0), s1 = sqrt(log(2.0));
    TEST_ASSERT(idx[0] == 1 && idx[1] == 0 && fabs(w[0] - 1.5 * s1 / (s0 + s1)) < 1e-15);
    TEST_ASSERT(fabs(dsv4_ref_swiglu(12.0, -15.0, 2.0, 10.0) - 2.0 * 10.0 / (1.0 + exp(-10.0)) * -10.0) < 1e-12);
}

static void test_route_grid_separation(void) {
    // The record draws z on a 1/8 grid in [-4, 4) and bias on a 1/32 grid: distinct sums must sit far above fp32 noise.
    double v[64 * 7], gap = INFINITY;
    for (int a = 0; a < 64; a++)
        for (int b = 0; b < 7; b++) v[a * 7 + b] = sqrt(log1p(exp(a / 8.0 - 4.0))) + b / 32.0 - 3.0 / 32.0;
    for (int i = 0; i < 64 * 7; i++)
        for (int j = 0; j < i; j++)
            if (fabs(v[i] - v[j]) > 0) gap = fmin(gap, fabs(v[i] - v[j]));
    TEST_ASSERT_MSG(gap > 1e-5, "smallest gap %g", gap);
}

int main(void) {
    TEST_RUN(test_formats);
    TEST_RUN(test_act_qdq);
    TEST_RUN(test_rmsnorm_rope);
    TEST_RUN(test_attn);
    TEST_RUN(test_hc);
    TEST_RUN(test_selections);
    TEST_RUN(test_route);
    TEST_RUN(test_route_grid_separation);
    printf("%d passed, %d failed\n", dsf_test_passed, dsf_test_failed);
    return dsf_test_failed ? 1 : 0;
}
