#ifndef DSF_DSV4_HC_H
#define DSF_DSV4_HC_H
// mHC (spec §3.0, §6 findings 19, 25): mixes, the Sinkhorn split, hc_pre and hc_post; hc streams of width D.
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// mixes[r, m] = (x[r] . fn[m]) * rsqrt(mean(x[r]^2) + eps) over x [R, hc*D] (stream-major), fn [M, hc*D], fp32.
void dsf_hc_mixes(const float *x, int64_t rows, int64_t width, const float *fn, int m, float eps, float *mixes);

// pre [R, hc], post [R, hc], comb [R, hc, hc] (comb[j][k]) from mixes [R, (2+hc)*hc], scale[3], base[(2+hc)*hc].
void dsf_hc_split(const float *mixes, int64_t rows, int hc, const float *scale, const float *base, int iters, float eps,
                  float *pre, float *post, float *comb);

// y[r] = bf16(sum_j pre[r, j] * x[r, j]) over x [R, hc, D].
void dsf_hc_pre(const float *x, const float *pre, int64_t rows, int hc, int64_t d, float *y);

// out[r, k] = bf16(post[r, k] * f[r] + sum_j comb[r, j, k] * res[r, j]); f [R, D], res and out [R, hc, D].
void dsf_hc_post(const float *f, const float *res, const float *post, const float *comb, int64_t rows, int hc,
                 int64_t d, float *out);

#ifdef __cplusplus
}
#endif

#endif
