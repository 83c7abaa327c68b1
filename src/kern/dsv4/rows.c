// RMSNorm and RoPE rows: plain fp32 loops in a fixed order; no fused multiply-add (ISO C11 keeps contraction off).
#include "kern/dsv4/rows.h"

#include <math.h>

#include "base/formats.h"

void dsf_rmsnorm(const float *x, int64_t ldx, int64_t rows, int64_t n, const float *w, float eps, float *y,
                 int64_t ldy) {
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * ldx;
        float *yr = y + r * ldy;
        float ss = 0.0f;
        for (int64_t i = 0; i < n; i++) ss += xr[i] * xr[i];
        float rs = 1.0f / sqrtf(ss / (float)n + eps);
        for (int64_t i = 0; i < n; i++) yr[i] = dsf_bf16_round(w[i] * (xr[i] * rs));
    }
}

// The YaRN correction dimension of model.py, in double as Python computes it.
static double yarn_corr(double rot, int rd, double base, int64_t orig) {
    return rd * log((double)orig / (rot * 2.0 * M_PI)) / (2.0 * log(base));
}

void dsf_rope_freqs(double base, int rd, int64_t orig_seq_len, double factor, double beta_fast, double beta_slow,
                    float *f) {
    for (int i = 0; i < rd / 2; i++) f[i] = 1.0f / powf((float)base, (float)(2 * i) / (float)rd);
    if (orig_seq_len <= 0) return;
    double lo = floor(yarn_corr(beta_fast, rd, base, orig_seq_len));
    double hi = ceil(yarn_corr(beta_slow, rd, base, orig_seq_len));
    lo = lo > 0 ? lo : 0;
    hi = hi < rd - 1 ? hi : rd - 1;
    if (lo == hi) hi += 0.001;
    for (int i = 0; i < rd / 2; i++) {
        float ramp = ((float)i - (float)lo) / ((float)hi - (float)lo);
        ramp = ramp < 0.0f ? 0.0f : (ramp > 1.0f ? 1.0f : ramp);
        float smooth = 1.0f - ramp;
        f[i] = f[i] / (float)factor * (1.0f - smooth) + f[i] * smooth;
    }
}

void dsf_rope_row(float *x, int heads, int hd, int rd, const float *f, int64_t pos, int inverse) {
    for (int i = 0; i < rd / 2; i++) {
        float ang = (float)pos * f[i];
        float c = cosf(ang), s = sinf(ang);
        if (inverse) s = -s;
        for (int h = 0; h < heads; h++) {
            float *p = x + (int64_t)h * hd + (hd - rd) + 2 * i;
            float a = p[0], b = p[1];
            p[0] = dsf_bf16_round(a * c - b * s);
            p[1] = dsf_bf16_round(a * s + b * c);
        }
    }
}
