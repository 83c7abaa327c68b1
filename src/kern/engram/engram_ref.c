// float64 references of the Engram kernels, written from spec §3.2.6 and §3.0 with fields decoded by hand.
#include <math.h>

#include "kern/engram/engram_internal.h"
#include "kern/ref_formats.h"

// Rows [T, n] of codes with per-32 scales -> bf16 values -> act_quant(32): out[0] code values, out[1] scales.
void dsf_engram_ref_embed_quant(const void *const *ins, double *const *out, const dsf_case *c) {
    const uint8_t *q = ins[0], *s = ins[1];
    for (int64_t b = 0; b < c->rows * c->n / 32; b++) {
        double v[32], amax = 0;
        for (int i = 0; i < 32; i++) {
            v[i] = dsf_ref_round(dsf_ref_e4m3_fields(q[32 * b + i]) * ldexp(1.0, s[b] - 127), 8, -126);
            amax = fmax(amax, fabs(v[i]));
        }
        double sc = dsf_ref_act_scale(amax);
        out[1][b] = sc;
        for (int i = 0; i < 32; i++) out[0][32 * b + i] = dsf_ref_round_e4m3(dsf_ref_clamp(v[i] / sc, 448));
    }
}

// y[t, o] = sum over blocks of (sum of code products) * 2^(xs-127) * 2^(ws-127), case: rows T, n = N, k = K.
void dsf_engram_ref_wkv(const void *const *ins, double *const *out, const dsf_case *c) {
    const uint8_t *xq = ins[0], *xs = ins[1], *w = ins[2], *ws = ins[3];
    int64_t N = c->n, K = c->k, kb_n = K / 32;
    double lut[256];
    for (int i = 0; i < 256; i++) lut[i] = dsf_ref_e4m3_fields((uint8_t)i);
    for (int64_t t = 0; t < c->rows; t++)
        for (int64_t o = 0; o < N; o++) {
            double acc = 0;
            for (int64_t kb = 0; kb < kb_n; kb++) {
                double bs = 0;
                for (int i = 0; i < 32; i++) bs += lut[xq[t * K + 32 * kb + i]] * lut[w[o * K + 32 * kb + i]];
                acc += bs * ldexp(1.0, xs[t * kb_n + kb] - 127) * ldexp(1.0, ws[(o / 32) * kb_n + kb] - 127);
            }
            out[0][t * N + o] = acc;
        }
}

// Per stream: norms of h and key, the gate, then h + gate * value, all in double; case: rows T, n = D, k = hc.
void dsf_engram_ref_gate(const void *const *ins, double *const *out, const dsf_case *c) {
    const void *h = ins[0], *kv = ins[1], *qw = ins[2], *kw = ins[3];
    const int32_t *img = ins[4];
    int64_t D = c->n, hc = c->k;
    for (int64_t t = 0; t < c->rows; t++)
        for (int64_t k = 0; k < hc; k++) {
            double hh = 0, kk = 0, d = 0;
            int64_t hb = (t * hc + k) * D, kb = t * (hc + 1) * D + k * D, vb = t * (hc + 1) * D + hc * D;
            for (int64_t i = 0; i < D; i++) {
                double hv = dsf_ref_bf16_fields_at(h, hb + i), key = dsf_ref_bf16_fields_at(kv, kb + i);
                hh += hv * hv;
                kk += key * key;
                d += hv * dsf_ref_bf16_fields_at(qw, k * D + i) * dsf_ref_bf16_fields_at(kw, k * D + i) * key;
            }
            double dot = d / sqrt(hh / D + 1e-20) / sqrt(kk / D + 1e-20) / sqrt((double)D);
            double g = img[t] ? 0 : 1 / (1 + exp(-copysign(sqrt(fmax(fabs(dot), 1e-6)), dot)));
            for (int64_t i = 0; i < D; i++)
                out[0][hb + i] = dsf_ref_bf16_fields_at(h, hb + i) + g * dsf_ref_bf16_fields_at(kv, vb + i);
        }
}

// Row ids of spec §3.2.6 from hist [T, 4] (id at t-k, -1 for DEAD or before the start); case n = layer id (1, 14).
void dsf_engram_ref_hash(const void *const *ins, double *const *out, const dsf_case *c) {
    static const int64_t mult[2][4] = {{76632096046245, 4839876093313, 35959672319349, 73987337458391},
                                       {67716810739261, 51510806800915, 30921347202721, 82619226485591}};
    static const int64_t first[2] = {16000057, 16000477};
    // The pad is the record's token map entry 2 (engram_records.c builds the map with map[2] = 1).
    const int64_t *hist = ins[0];
    int li = c->n == 14;
    int64_t primes[24], off[24];
    // A layer's 24 primes are consecutive primes from its first one (spec §3.2.6 lists both first primes).
    int64_t x = first[li] - 1, sum = 0;
    for (int col = 0; col < 24; col++) {
        do {
            x++;
            int prime = x > 1;
            for (int64_t f = 2; f * f <= x && prime; f++) prime = x % f != 0;
            if (prime) break;
        } while (1);
        primes[col] = x;
        off[col] = sum;
        sum += x;
    }
    const int64_t pad = 1;
    for (int64_t t = 0; t < c->rows; t++) {
        int64_t tok[4];
        for (int k = 0; k < 4; k++) tok[k] = (k && tok[k - 1] == -1) || hist[t * 4 + k] < 0 ? -1 : hist[t * 4 + k];
        uint64_t hsh = 0;
        for (int n = 2; n <= 4; n++) {
            hsh = 0;
            for (int k = 0; k < n; k++) hsh ^= (uint64_t)(tok[k] < 0 ? pad : tok[k]) * (uint64_t)mult[li][k];
            for (int hd = 0; hd < 8; hd++) {
                int col = (n - 2) * 8 + hd;
                out[0][t * 24 + col] = (double)(hsh % (uint64_t)primes[col] + (uint64_t)off[col]);
            }
        }
    }
}
