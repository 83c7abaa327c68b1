// float64 references of the dsv4 kernels from spec §3.0 / §6.2: exact sums, no fp32 or bf16 rounding points.
#include "kern/dsv4/dsv4_ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kern/ref_formats.h"

void dsv4_ref_act_qdq(const float *x, int64_t n, int blk, double *out) {
    for (int64_t b = 0; b < n; b += blk) {
        double amax = 1e-4;
        for (int64_t i = b; i < b + blk && i < n; i++) amax = fabs(x[i]) > amax ? fabs(x[i]) : amax;
        double s = dsf_ref_act_scale(amax);
        for (int64_t i = b; i < b + blk && i < n; i++) out[i] = dsf_ref_round_e4m3(dsf_ref_clamp(x[i] / s, 448)) * s;
    }
}

void dsv4_ref_linear(dsf_lin_kind kind, const float *x, int64_t rows, int64_t n, int64_t k, const uint8_t *q,
                     const uint8_t *s, const float *f, double *y) {
    double *xq = malloc(sizeof(double) * (size_t)k);
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * k;
        if (kind == DSF_LIN_FP8 || kind == DSF_LIN_FP4)
            dsv4_ref_act_qdq(xr, k, 32, xq);
        else
            for (int64_t i = 0; i < k; i++) xq[i] = xr[i];
        for (int64_t o = 0; o < n; o++) {
            double acc = 0;
            for (int64_t i = 0; i < k; i++) {
                double w;
                if (kind == DSF_LIN_FP8)
                    w = dsf_ref_e4m3(q[o * k + i]) * dsf_ref_e8m0(s[(o / 32) * (k / 32) + i / 32]);
                else if (kind == DSF_LIN_FP4)
                    w = dsf_ref_e2m1((uint8_t)(q[(o * k + i) / 2] >> (i % 2 ? 4 : 0)) & 0xF) *
                        dsf_ref_e8m0(s[o * (k / 32) + i / 32]);
                else
                    w = f[o * k + i];
                acc += xq[i] * w;
            }
            y[r * n + o] = acc;
        }
    }
    free(xq);
}

void dsv4_ref_rmsnorm(const float *x, int64_t rows, int64_t n, const float *w, double eps, double *y) {
    for (int64_t r = 0; r < rows; r++) {
        double ss = 0;
        for (int64_t i = 0; i < n; i++) ss += (double)x[r * n + i] * x[r * n + i];
        double rs = 1.0 / sqrt(ss / (double)n + eps);
        for (int64_t i = 0; i < n; i++) y[r * n + i] = (double)w[i] * x[r * n + i] * rs;
    }
}

void dsv4_ref_rope_freqs(double base, int yarn, int rd, float *f) {
    for (int i = 0; i < rd / 2; i++) f[i] = (float)(1.0 / (double)(float)pow(base, (double)(2 * i) / rd));
    if (!yarn) return;
    double corr_fast = rd * log(65536.0 / (2 * M_PI * 32.0)) / (2 * log(base));
    double corr_slow = rd * log(65536.0 / (2 * M_PI * 1.0)) / (2 * log(base));
    double low = fmax(floor(corr_fast), 0.0), high = fmin(ceil(corr_slow), rd - 1.0);
    if (high == low) high += 0.001;
    for (int i = 0; i < rd / 2; i++) {
        float ramp = (float)(((float)i - (float)low) / (float)(high - low));
        ramp = fminf(fmaxf(ramp, 0.0f), 1.0f);
        float keep = 1.0f - ramp, scaled = f[i] / 16.0f;
        f[i] = scaled * (1.0f - keep) + f[i] * keep;
    }
}

void dsv4_ref_rope(const float *x, int heads, int hd, int rd, const float *f, int64_t pos, int inverse, double *y) {
    for (int64_t i = 0; i < (int64_t)heads * hd; i++) y[i] = x[i];
    for (int i = 0; i < rd / 2; i++) {
        double ang = (float)((double)(float)pos * (double)f[i]), c = cos(ang), s = inverse ? -sin(ang) : sin(ang);
        for (int h = 0; h < heads; h++) {
            int64_t at = (int64_t)h * hd + hd - rd + 2 * i;
            y[at] = (double)x[at] * c - (double)x[at + 1] * s;
            y[at + 1] = (double)x[at] * s + (double)x[at + 1] * c;
        }
    }
}

void dsv4_ref_attn(const float *q, const float *kv, const int32_t *idx, int64_t L, int heads, int hd, const float *sink,
                   double scale, double *o) {
    double *s = malloc(sizeof(double) * (size_t)(L ? L : 1));
    for (int h = 0; h < heads; h++) {
        const float *qh = q + (int64_t)h * hd;
        double m = -INFINITY, den = 0;
        double *oh = o + (int64_t)h * hd;
        for (int64_t i = 0; i < L; i++) {
            s[i] = -INFINITY;
            if (idx[i] < 0) continue;
            double d = 0;
            for (int c = 0; c < hd; c++) d += (double)qh[c] * kv[(int64_t)idx[i] * hd + c];
            s[i] = d * scale;
            m = s[i] > m ? s[i] : m;
        }
        for (int c = 0; c < hd; c++) oh[c] = 0;
        if (m == -INFINITY) continue;
        for (int64_t i = 0; i < L; i++) {
            if (idx[i] < 0) continue;
            double p = exp(s[i] - m);
            den += p;
            for (int c = 0; c < hd; c++) oh[c] += p * kv[(int64_t)idx[i] * hd + c];
        }
        den += exp(sink[h] - m);
        for (int c = 0; c < hd; c++) oh[c] /= den;
    }
    free(s);
}

void dsv4_ref_hc_mixes(const float *x, int64_t width, const float *fn, int m, double eps, double *mixes) {
    double ss = 0;
    for (int64_t i = 0; i < width; i++) ss += (double)x[i] * x[i];
    double rs = 1.0 / sqrt(ss / (double)width + eps);
    for (int j = 0; j < m; j++) {
        double d = 0;
        for (int64_t i = 0; i < width; i++) d += (double)x[i] * fn[(int64_t)j * width + i];
        mixes[j] = d * rs;
    }
}

static double sigmoid(double v) {
    return 1.0 / (1.0 + exp(-v));
}

void dsv4_ref_hc_split(const float *mixes, int hc, const float *scale, const float *base, int iters, double eps,
                       double *pre, double *post, double *comb) {
    for (int j = 0; j < hc; j++) {
        pre[j] = sigmoid((double)mixes[j] * scale[0] + base[j]) + eps;
        post[j] = 2.0 * sigmoid((double)mixes[hc + j] * scale[1] + base[hc + j]);
    }
    for (int j = 0; j < hc; j++) {
        double mx = -INFINITY, sum = 0, *row = comb + j * hc;
        for (int k = 0; k < hc; k++) {
            row[k] = (double)mixes[2 * hc + j * hc + k] * scale[2] + base[2 * hc + j * hc + k];
            mx = fmax(mx, row[k]);
        }
        for (int k = 0; k < hc; k++) sum += exp(row[k] - mx);
        for (int k = 0; k < hc; k++) row[k] = exp(row[k] - mx) / sum + eps;
    }
    for (int it = 0; it < iters; it++)
        for (int pass = it ? 0 : 1; pass < 2; pass++)
            for (int a = 0; a < hc; a++) {
                double sum = 0;
                for (int b = 0; b < hc; b++) sum += pass ? comb[b * hc + a] : comb[a * hc + b];
                for (int b = 0; b < hc; b++) *(pass ? &comb[b * hc + a] : &comb[a * hc + b]) /= sum + eps;
            }
}

void dsv4_ref_index_scores(const float *q, const float *w, int heads, int dim, const float *keys, int64_t n,
                           double *score) {
    for (int64_t t = 0; t < n; t++) {
        double acc = 0;
        for (int h = 0; h < heads; h++) {
            double d = 0;
            for (int c = 0; c < dim; c++) d += (double)q[(int64_t)h * dim + c] * keys[t * dim + c];
            acc += (d > 0 ? d : 0) * w[h];
        }
        score[t] = acc;
    }
}

typedef struct ranked {
    double v;
    int64_t i;
} ranked;

static int by_rank(const void *a, const void *b) {
    const ranked *x = a, *y = b;
    if (x->v != y->v) return x->v > y->v ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

static int by_index(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

// Sorts n values by rank (higher first, then the lower index) into rk.
static void rank_all(const double *v, int64_t n, ranked *rk) {
    for (int64_t i = 0; i < n; i++) rk[i] = (ranked){v[i], i};
    qsort(rk, (size_t)n, sizeof *rk, by_rank);
}

int64_t dsv4_ref_topk(const float *score, int64_t n, int64_t k, double *idx) {
    ranked *rk = malloc(sizeof *rk * (size_t)(n ? n : 1));
    double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) v[i] = score[i];
    rank_all(v, n, rk);
    int64_t cnt = k < n ? k : n;
    for (int64_t i = 0; i < k; i++) idx[i] = i < cnt ? (double)rk[i].i : -1.0;
    qsort(idx, (size_t)cnt, sizeof(double), by_index);
    free(rk);
    free(v);
    return cnt;
}

int64_t dsv4_ref_candidates(const float *score, int64_t len, int bs, int64_t topk, double *mask) {
    int64_t nb = (len + bs - 1) / bs, kept = 0;
    double *bm = malloc(sizeof(double) * (size_t)nb);
    ranked *rk = malloc(sizeof *rk * (size_t)nb);
    for (int64_t b = 0; b < nb; b++) {
        bm[b] = -INFINITY;
        for (int64_t t = b * bs; t < (b + 1) * bs && t < len; t++) bm[b] = fmax(bm[b], score[t]);
        mask[b] = 0;
    }
    bm[(len - 1) / bs] = INFINITY;
    rank_all(bm, nb, rk);
    for (int64_t i = 0; i < nb && i < topk; i++)
        if (rk[i].v > -INFINITY) mask[rk[i].i] = 1, kept++;
    free(bm);
    free(rk);
    return kept;
}

void dsv4_ref_route(const float *z, int e, const float *bias, int k, int norm, double scale, double *idx, double *w) {
    double *s = malloc(sizeof(double) * (size_t)e), *b = malloc(sizeof(double) * (size_t)e), sum = 0;
    ranked *rk = malloc(sizeof *rk * (size_t)e);
    for (int i = 0; i < e; i++) {
        s[i] = sqrt(z[i] > 20 ? (double)z[i] : log1p(exp((double)z[i])));
        b[i] = s[i] + (bias ? bias[i] : 0.0);
    }
    rank_all(b, e, rk);
    for (int i = 0; i < k; i++) idx[i] = (double)rk[i].i, w[i] = s[rk[i].i], sum += w[i];
    for (int i = 0; i < k; i++) w[i] = (norm && k > 1 ? w[i] / (sum + 1e-20) : w[i]) * scale;
    free(s);
    free(b);
    free(rk);
}

double dsv4_ref_swiglu(double g, double u, double w, double lim) {
    if (lim > 0) {
        g = g > lim ? lim : g;
        u = u > lim ? lim : (u < -lim ? -lim : u);
    }
    return w * g / (1.0 + exp(-g)) * u;
}
