// The whole Engram layer on a tiny synthetic checkpoint: hash, gather, kernels against a float64 reference; R1.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/quant.h"
#include "io/bind.h"
#include "kern/engram/engram.h"
#include "kern/engram/engram_kern.h"
#include "test.h"
#include "test_engram_util.h"

static char dir[] = "/tmp/dsf_engram_synth_XXXXXX";

// float64 reference of one token: rows -> bf16 E -> act_quant -> W in double -> gate in double -> h + gate * value.
static void ref_token(const uint8_t *codes, const uint8_t *scales, int64_t n, const uint8_t *w, const uint8_t *ws,
                      const uint16_t *qw, const uint16_t *kw, int img, const uint16_t *h, int hc, int64_t D,
                      double *out) {
    int64_t N = (hc + 1) * D;
    double *xq = malloc(sizeof(double) * (size_t)n), *kv = malloc(sizeof(double) * (size_t)N);
    double *sa = malloc(sizeof(double) * (size_t)(n / 32));
    for (int64_t b = 0; b < n / 32; b++) {
        float v[32];
        for (int i = 0; i < 32; i++)
            v[i] = dsf_bf16_round(dsf_e4m3_to_f32(codes[32 * b + i]) * dsf_e8m0_to_f32(scales[b]));
        float s = dsf_act_scale_pow2(dsf_block_amax(v, 32));
        sa[b] = s;
        for (int i = 0; i < 32; i++) xq[32 * b + i] = dsf_e4m3_to_f32(dsf_act_quant_code(v[i], s));
    }
    for (int64_t o = 0; o < N; o++) {
        double acc = 0;
        for (int64_t k = 0; k < n; k++)
            acc += xq[k] * dsf_e4m3_to_f32(w[o * n + k]) * sa[k / 32] * dsf_e8m0_to_f32(ws[(o / 32) * (n / 32) + k / 32]);
        kv[o] = acc;
    }
    for (int k = 0; k < hc; k++) {
        double hh = 0, kk = 0, d = 0;
        for (int64_t c = 0; c < D; c++) {
            double hv = dsf_bf16_to_f32(h[k * D + c]), key = kv[k * D + c];
            hh += hv * hv;
            kk += key * key;
            d += hv * dsf_bf16_to_f32(qw[k * D + c]) * dsf_bf16_to_f32(kw[k * D + c]) * key;
        }
        double dot = d / sqrt(hh / D + 1e-20) / sqrt(kk / D + 1e-20) / sqrt((double)D);
        double g = img ? 0 : 1 / (1 + exp(-copysign(sqrt(fmax(fabs(dot), 1e-6)), dot)));
        for (int64_t c = 0; c < D; c++) out[k * D + c] = dsf_bf16_to_f32(h[k * D + c]) + g * kv[hc * D + c];
    }
    free(xq);
    free(kv);
    free(sa);
}

static void test_layer_tiny(void) {
    test_engram_tiny tt;
    dsf_err e = {{0}};
    TEST_ASSERT_MSG(test_engram_tiny_open(dir, &tt, &e) == 0, "%s", e.msg);
    if (!tt.c) return;
    dsf_ckpt *c = tt.c;
    const dsf_args *a = &c->args;
    dsf_engram_map m = tt.m;
    dsf_engram_hash hs = tt.hs;
    dsf_engram_table *tb = tt.tb;
    int L = hs.n_layers, C = hs.cols, hd = a->engram_head_dim, hc = a->hc_mult;
    int64_t n = (int64_t)C * hd, D = a->dim;
    enum { T = 21 };
    int32_t tok[T], img[T];
    uint8_t im8[T];
    for (int i = 0; i < T; i++) {
        tok[i] = (i * 7919 + 13) % 129280;
        im8[i] = (uint8_t)(img[i] = i >= 9 && i < 12);
    }
    int64_t *rows = malloc(sizeof(int64_t) * T * L * C);
    dsf_engram_hist s;
    dsf_engram_hist_init(&s, 0);
    TEST_ASSERT(dsf_engram_hist_step(&hs, &m, &s, 0, T, tok, im8, rows, &e) == 0);
    uint8_t *codes = malloc((size_t)(L * T * n)), *scales = malloc((size_t)(L * T * n / 32));
    dsf_pool *pool = dsf_pool_new(2);
    TEST_ASSERT(dsf_engram_gather(pool, 0, tb, L, C, T, rows, codes, scales, &e) == 0);
    const dsf_engram_view *v = &c->layers[a->engram_layers[0]].engram;
    const uint8_t *w = v->wkv.weight->data, *ws = v->wkv.scale->data;
    const uint16_t *qw = v->q_weight->data, *kw = v->k_weight->data;
    size_t hn = (size_t)(T * hc * D);
    uint16_t *h0 = malloc(2 * hn), *h1 = malloc(2 * hn), *h2 = malloc(2 * hn);
    for (size_t i = 0; i < hn; i++) h0[i] = dsf_bf16_from_f32((float)sin(0.37 * (double)i) * 1.5f);
    memcpy(h1, h0, 2 * hn);
    memcpy(h2, h0, 2 * hn);
    TEST_ASSERT(dsf_engram_layer_cpu(pool, codes, scales, T, n, w, ws, qw, kw, img, h1, hc, D, 1e-20f, &e) == 0);
    for (int t = 0; t < T; t++)
        TEST_ASSERT(dsf_engram_layer_cpu(NULL, codes + t * n, scales + t * n / 32, 1, n, w, ws, qw, kw, img + t,
                                         h2 + (size_t)t * hc * D, hc, D, 1e-20f, &e) == 0);
    TEST_ASSERT_MSG(memcmp(h1, h2, 2 * hn) == 0, "a token's result depends on the tokens beside it");
    double *ref = malloc(sizeof(double) * hn), se = 0, ss = 0, mx = 0;
    for (int t = 0; t < T; t++)
        ref_token(codes + t * n, scales + t * n / 32, n, w, ws, qw, kw, img[t], h0 + (size_t)t * hc * D, hc, D,
                  ref + (size_t)t * hc * D);
    for (size_t i = 0; i < hn; i++) {
        double d = dsf_bf16_to_f32(h1[i]) - ref[i];
        se += d * d, ss += ref[i] * ref[i], mx = fmax(mx, fabs(d));
    }
    double rms = sqrt(ss / (double)hn), moved = 0;
    for (size_t i = 0; i < hn; i++) moved += fabs(ref[i] - dsf_bf16_to_f32(h0[i]));
    printf("     layer 1 (%d tokens): rms err %.3g, max %.3g of the reference rms; mean |update| %.3g\n", T,
           sqrt(se / (double)hn) / rms, mx / rms, moved / (double)hn);
    TEST_ASSERT(sqrt(se / (double)hn) / rms < 4e-3 && mx / rms < 0.05 && moved / (double)hn > 1e-3);
    for (int t = 9; t < 12; t++) TEST_ASSERT(memcmp(h1 + (size_t)t * hc * D, h0 + (size_t)t * hc * D, 2 * hc * D) == 0);
    free(ref);
    free(h0), free(h1), free(h2), free(codes), free(scales), free(rows);
    dsf_pool_free(pool);
    dsf_engram_hist_free(&s);
    dsf_engram_map_free(&m);
    dsf_ckpt_close(c);
}

int main(void) {
    if (!mkdtemp(dir)) TEST_SKIP_ALL("no temporary directory");
    TEST_RUN(test_layer_tiny);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    TEST_END();
}
