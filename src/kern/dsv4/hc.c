// mHC rows on the CPU: every sum in index order, fp32 throughout, bf16 only where the streams are stored.
#include "kern/dsv4/hc.h"

#include <math.h>

#include "base/err.h"
#include "base/formats.h"

void dsf_hc_mixes(const float *x, int64_t rows, int64_t width, const float *fn, int m, float eps, float *mixes) {
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * width;
        float ss = 0.0f;
        for (int64_t i = 0; i < width; i++) ss += xr[i] * xr[i];
        float rs = 1.0f / sqrtf(ss / (float)width + eps);
        for (int j = 0; j < m; j++) {
            const float *w = fn + (int64_t)j * width;
            float acc = 0.0f;
            for (int64_t i = 0; i < width; i++) acc += xr[i] * w[i];
            mixes[r * m + j] = acc * rs;
        }
    }
}

static float sigmoidf(float v) {
    return 1.0f / (1.0f + expf(-v));
}

void dsf_hc_split(const float *mixes, int64_t rows, int hc, const float *scale, const float *base, int iters, float eps,
                  float *pre, float *post, float *comb) {
    DSF_ASSERT(hc > 0 && hc <= 16 && iters >= 1);
    int m = (2 + hc) * hc;
    for (int64_t r = 0; r < rows; r++) {
        const float *mx = mixes + r * m;
        float *c = comb + r * hc * hc;
        for (int j = 0; j < hc; j++) {
            pre[r * hc + j] = sigmoidf(mx[j] * scale[0] + base[j]) + eps;
            post[r * hc + j] = 2.0f * sigmoidf(mx[hc + j] * scale[1] + base[hc + j]);
        }
        for (int j = 0; j < hc; j++) {
            float *row = c + j * hc, mxv = -INFINITY, sum = 0.0f;
            for (int k = 0; k < hc; k++) {
                row[k] = mx[2 * hc + j * hc + k] * scale[2] + base[2 * hc + j * hc + k];
                mxv = row[k] > mxv ? row[k] : mxv;
            }
            for (int k = 0; k < hc; k++) {
                row[k] = expf(row[k] - mxv);
                sum += row[k];
            }
            for (int k = 0; k < hc; k++) row[k] = row[k] / sum + eps;
        }
        for (int it = 0; it < iters; it++) {
            if (it > 0)
                for (int j = 0; j < hc; j++) {
                    float s = 0.0f;
                    for (int k = 0; k < hc; k++) s += c[j * hc + k];
                    for (int k = 0; k < hc; k++) c[j * hc + k] /= s + eps;
                }
            for (int k = 0; k < hc; k++) {
                float s = 0.0f;
                for (int j = 0; j < hc; j++) s += c[j * hc + k];
                for (int j = 0; j < hc; j++) c[j * hc + k] /= s + eps;
            }
        }
    }
}

void dsf_hc_pre(const float *x, const float *pre, int64_t rows, int hc, int64_t d, float *y) {
    for (int64_t r = 0; r < rows; r++)
        for (int64_t i = 0; i < d; i++) {
            float acc = 0.0f;
            for (int j = 0; j < hc; j++) acc += pre[r * hc + j] * x[(r * hc + j) * d + i];
            y[r * d + i] = dsf_bf16_round(acc);
        }
}

void dsf_hc_post(const float *f, const float *res, const float *post, const float *comb, int64_t rows, int hc,
                 int64_t d, float *out) {
    for (int64_t r = 0; r < rows; r++)
        for (int k = 0; k < hc; k++)
            for (int64_t i = 0; i < d; i++) {
                float acc = 0.0f;
                for (int j = 0; j < hc; j++) acc += comb[(r * hc + j) * hc + k] * res[(r * hc + j) * d + i];
                out[(r * hc + k) * d + i] = dsf_bf16_round(post[r * hc + k] * f[r * d + i] + acc);
            }
}
