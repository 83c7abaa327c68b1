// float64 reference (spec §3.1.4, §3.2.4, §3.2.5, §3.0): exact sums in double, rounded only where the spec rounds.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kern/compress/compress_internal.h"
#include "kern/ref_formats.h"

static void norm_d(double *v, int n, const uint16_t *w, double eps) {
    double ss = 0;
    for (int c = 0; c < n; c++) ss += v[c] * v[c];
    double inv = 1.0 / sqrt(ss / n + eps);
    for (int c = 0; c < n; c++) v[c] = dsf_ref_round_bf16(v[c] * inv * dsf_bf16_to_f32(w[c]));
}

// RoPE at the spec's fp32 angle, fp32(pos) * f in fp32; the rotation itself in double.
static void rope_d(const dsf_cmp_layer *L, double *v, int n, int64_t pos) {
    for (int i = 0; i < DSF_CMP_ROPE_DIM / 2; i++) {
        double *p = v + n - DSF_CMP_ROPE_DIM + 2 * i, a = p[0], b = p[1];
        double ang = (double)((float)pos * L->freq[i]);
        p[0] = dsf_ref_round_bf16(a * cos(ang) - b * sin(ang));
        p[1] = dsf_ref_round_bf16(a * sin(ang) + b * cos(ang));
    }
}

// The spec's QDQ on bf16 values: their scales and codes are exact in fp32, so the fp32 quantisers define them.
static void qdq_d(double *v, int from, int to, int blk, int kind) {
    float f[64];
    for (int c = from; c < to; c += blk) {
        for (int i = 0; i < blk; i++) f[i] = (float)v[c + i];
        dsf_cmp_qdq_block(f, blk, kind);
        for (int i = 0; i < blk; i++) v[c + i] = f[i];
    }
}

static void hadamard_d(double *v, int n) {
    for (int h = 1; h < n; h *= 2)
        for (int a = 0; a < n; a += 2 * h)
            for (int i = a; i < a + h; i++) {
                double x = v[i], y = v[i + h];
                v[i] = x + y;
                v[i + h] = x - y;
            }
    for (int c = 0; c < n; c++) v[c] = dsf_ref_round_bf16(v[c] / sqrt((double)n));
}

void dsf_cmp_ref_segment(const dsf_cmp_layer *L, const uint16_t *x, int64_t len, int64_t p0, double *ring,
                         double *kv, double *ik) {
    int D = L->dim, d = L->d, r = L->ratio, C = dsf_cmp_channels(L), O = dsf_cmp_proj_outputs(L);
    double *rows = dsf_malloc(sizeof(double) * (size_t)(len ? len : 1) * (size_t)O);
    for (int64_t t = 0; t < len; t++)
        for (int o = 0; o < O; o++) {
            const uint16_t *w = o < C ? L->w.wkv + (size_t)o * D : L->w.wgate + (size_t)(o - C) * D;
            double acc = 0;
            for (int k = 0; k < D; k++) acc += (double)dsf_bf16_to_f32(x[t * D + k]) * dsf_bf16_to_f32(w[k]);
            if (o >= C && L->w.ape) acc += L->w.ape[((p0 + t) % r) * C + (o - C)];
            rows[t * O + o] = acc;
        }
    double v[DSF_CMP_MAX_D], k[DSF_CMP_MAX_IK];
    for (int64_t t = 0; t < len; t++) {
        int64_t p = p0 + t, j = (p + 1) % r == 0 ? p / r : -1, slot = j - p0 / r;
        if (j < 0) continue;
        if (r == 1) {
            for (int c = 0; c < d; c++) v[c] = dsf_ref_round_bf16(rows[t * O + c]);
        } else {
            int64_t q[2 * DSF_CMP_MAX_RATIO];
            int off[2 * DSF_CMP_MAX_RATIO];
            int n = dsf_cmp_group(L, j, 0, q, off);
            for (int c = 0; c < d; c++) {
                double m = -INFINITY, sum = 0, acc = 0;
                for (int i = 0; i < n; i++) {
                    const double *row = q[i] >= p0 ? rows + (q[i] - p0) * O : ring + (q[i] & (L->cap - 1)) * 2 * C;
                    m = fmax(m, row[C + off[i] + c]);
                }
                for (int i = 0; i < n; i++) {
                    const double *row = q[i] >= p0 ? rows + (q[i] - p0) * O : ring + (q[i] & (L->cap - 1)) * 2 * C;
                    double ex = exp(row[C + off[i] + c] - m);
                    sum += ex;
                    acc += ex * row[off[i] + c];
                }
                v[c] = dsf_ref_round_bf16(acc / sum);
            }
        }
        norm_d(v, d, L->w.norm, L->eps);
        if (L->ik) {
            for (int o = 0; o < L->ik; o++) {
                double acc = 0;
                for (int c = 0; c < d; c++) acc += v[c] * dsf_bf16_to_f32(L->w.wk[(size_t)o * d + c]);
                k[o] = dsf_ref_round_bf16(acc);
            }
            norm_d(k, L->ik, L->w.k_norm, L->eps);
            rope_d(L, k, L->ik, j * r);
            qdq_d(k, 0, L->ik, 32, 1);
            memcpy(ik + slot * L->ik, k, sizeof(double) * (size_t)L->ik);
        }
        rope_d(L, v, d, j * r);
        if (L->quant == DSF_CMP_Q_FP8_NOPE) qdq_d(v, 0, d - DSF_CMP_ROPE_DIM, 64, 0);
        if (L->quant == DSF_CMP_Q_HAD_FP4) hadamard_d(v, d), qdq_d(v, 0, d, 32, 1);
        if (L->quant == DSF_CMP_Q_FP4_E4M3) qdq_d(v, 0, d, 16, 2);
        memcpy(kv + slot * d, v, sizeof(double) * (size_t)d);
    }
    for (int64_t p = p0 + len - L->cap > p0 ? p0 + len - L->cap : p0; r > 1 && p < p0 + len; p++)
        memcpy(ring + (p & (L->cap - 1)) * 2 * C, rows + (p - p0) * O, sizeof(double) * 2 * (size_t)C);
    free(rows);
}
