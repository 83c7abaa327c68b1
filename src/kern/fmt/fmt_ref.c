// float64 references of the fmt family (spec §3.0, §3.2.6): fields decoded by hand, rounding by rint on a grid.
#include <math.h>
#include <string.h>

#include "kern/fmt/fmt_internal.h"

// Nearest value of a binary format with `digits` significand bits and least normal exponent emin, ties to even.
static double round_format(double v, int digits, int emin) {
    if (v == 0 || !isfinite(v)) return v;
    int ex;
    frexp(v, &ex);
    int e = ex - 1 < emin ? emin : ex - 1;
    double q = ldexp(1.0, e - (digits - 1));
    return rint(v / q) * q;
}

static double round_bf16(double v) {
    double r = round_format(v, 8, -126);
    return fabs(r) >= 0x1p128 ? copysign(INFINITY, r) : r;
}

// e4m3fn saturates at 448 (the spec clamps before rounding; a scale from amax/6 saturates, §4.12).
static double round_e4m3(double v) {
    double r = round_format(v, 4, -6);
    return fabs(r) > 448 ? copysign(448, r) : r;
}

static double round_e2m1(double v) {
    return round_format(v, 2, 0);
}

static double clamp_sym(double v, double lim) {
    return v > lim ? lim : v < -lim ? -lim : v;
}

// 2^ceil(log2(t)) for t > 0, exactly: frexp gives t = f 2^ex with f in [0.5, 1), and f = 0.5 is a power of two.
static double pow2_ceil(double t) {
    int ex;
    double f = frexp(t, &ex);
    return ldexp(1.0, f == 0.5 ? ex - 1 : ex);
}

static double bf16_value(const void *buf, int64_t i) {
    uint16_t h;
    memcpy(&h, (const uint8_t *)buf + 2 * i, 2);
    int e = (h >> 7) & 0xFF, m = h & 0x7F;
    double v = e == 255 ? (m ? NAN : INFINITY) : e ? ldexp(128 + m, e - 134) : ldexp(m, -133);
    return h & 0x8000 ? -v : v;
}

static double e4m3_value(uint8_t c) {
    int e = (c >> 3) & 15, m = c & 7;
    double v = e == 15 && m == 7 ? NAN : e ? ldexp(8 + m, e - 10) : ldexp(m, -9);
    return c & 0x80 ? -v : v;
}

static double e8m0_value(uint8_t b) {
    return b == 255 ? NAN : ldexp(1.0, b - 127);
}

void dsf_fmt_ref_bf16_round(const void *const *ins, double *const *out, const dsf_case *c) {
    const float *x = ins[0];
    for (int64_t i = 0; i < c->rows * c->n; i++) out[0][i] = round_bf16((double)x[i]);
}

// One quantiser: the scale of a block from its amax, and the grid its elements round to after x/s is clamped.
typedef struct quant_rule {
    double (*scale)(double amax);
    double (*round)(double v);
    double lim;
} quant_rule;

static double act_scale(double amax) {
    return pow2_ceil(fmax(amax, 1e-4) / 448);
}
static double fp4_e8m0_scale(double amax) {
    return pow2_ceil(fmax(amax, 6 * 0x1p-126) / 6);
}
static double fp4_e4m3_scale(double amax) {
    return round_e4m3(fmax(amax, 6 * 0x1p-9) / 6);
}

static void ref_quant(const quant_rule *q, int blk, const void *const *ins, double *const *out, const dsf_case *c) {
    for (int64_t b = 0; b < c->rows * c->n / blk; b++) {
        double amax = 0;
        for (int64_t i = b * blk; i < (b + 1) * blk; i++) amax = fmax(amax, fabs(bf16_value(ins[0], i)));
        double s = q->scale(amax);
        out[1][b] = s;
        for (int64_t i = b * blk; i < (b + 1) * blk; i++)
            out[0][i] = q->round(clamp_sym(bf16_value(ins[0], i) / s, q->lim));
    }
}

void dsf_fmt_ref_act_quant_fp8(const void *const *ins, double *const *out, const dsf_case *c) {
    static const quant_rule rule = {act_scale, round_e4m3, 448};
    ref_quant(&rule, (int)c->blk, ins, out, c);
}

void dsf_fmt_ref_fp4_quant_e8m0(const void *const *ins, double *const *out, const dsf_case *c) {
    static const quant_rule rule = {fp4_e8m0_scale, round_e2m1, 6};
    ref_quant(&rule, 32, ins, out, c);
}

void dsf_fmt_ref_fp4_quant_e4m3(const void *const *ins, double *const *out, const dsf_case *c) {
    static const quant_rule rule = {fp4_e4m3_scale, round_e2m1, 6};
    ref_quant(&rule, 16, ins, out, c);
}

void dsf_fmt_ref_fp8_row_dequant(const void *const *ins, double *const *out, const dsf_case *c) {
    const uint8_t *q = ins[0], *s = ins[1];
    for (int64_t i = 0; i < c->rows * c->n; i++) out[0][i] = round_bf16(e4m3_value(q[i]) * e8m0_value(s[i / 32]));
}
