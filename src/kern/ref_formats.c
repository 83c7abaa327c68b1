// The number formats in float64 for the references: fields decoded by hand, rounding by rint on a grid.
#include "kern/ref_formats.h"

#include <math.h>
#include <string.h>

double dsf_ref_round(double v, int digits, int emin) {
    if (v == 0 || !isfinite(v)) return v;
    int ex;
    frexp(v, &ex);
    int e = ex - 1 < emin ? emin : ex - 1;
    double q = ldexp(1.0, e - (digits - 1));
    return rint(v / q) * q;
}

double dsf_ref_round_bf16(double v) {
    double r = dsf_ref_round(v, 8, -126);
    return fabs(r) >= 0x1p128 ? copysign(INFINITY, r) : r;
}

// Rounding before saturating equals the spec's clamp first: whatever is past 448 rounds to 448 or beyond.
double dsf_ref_round_e4m3(double v) {
    double r = dsf_ref_round(v, 4, -6);
    return fabs(r) > 448 ? copysign(448, r) : r;
}

double dsf_ref_round_e2m1(double v) {
    return dsf_ref_round(v, 2, 0);
}

double dsf_ref_clamp(double v, double lim) {
    return v > lim ? lim : v < -lim ? -lim : v;
}

// frexp gives t = f 2^ex with f in [0.5, 1), and f = 0.5 is a power of two.
double dsf_ref_pow2_ceil(double t) {
    int ex;
    double f = frexp(t, &ex);
    return ldexp(1.0, f == 0.5 ? ex - 1 : ex);
}

double dsf_ref_act_scale(double amax) {
    return dsf_ref_pow2_ceil(fmax(amax, 1e-4) / 448);
}

double dsf_ref_fp4_scale_e8m0(double amax) {
    return dsf_ref_pow2_ceil(fmax(amax, 6 * 0x1p-126) / 6);
}

double dsf_ref_fp4_scale_e4m3(double amax) {
    return dsf_ref_round_e4m3(fmax(amax, 6 * 0x1p-9) / 6);
}

static uint16_t bf16_bits(const void *buf, int64_t i) {
    uint16_t h;
    memcpy(&h, (const uint8_t *)buf + 2 * i, 2);
    return h;
}

double dsf_ref_bf16_fields_at(const void *buf, int64_t i) {
    uint16_t h = bf16_bits(buf, i);
    int e = (h >> 7) & 0xFF, m = h & 0x7F;
    double v = e ? ldexp(128 + m, e - 134) : ldexp(m, -133);
    return h & 0x8000 ? -v : v;
}

double dsf_ref_bf16_at(const void *buf, int64_t i) {
    uint16_t h = bf16_bits(buf, i);
    if (((h >> 7) & 0xFF) != 255) return dsf_ref_bf16_fields_at(buf, i);
    double v = h & 0x7F ? NAN : INFINITY;
    return h & 0x8000 ? -v : v;
}

double dsf_ref_e4m3_fields(uint8_t code) {
    int e = (code >> 3) & 15, m = code & 7;
    double v = e ? ldexp(8 + m, e - 10) : ldexp(m, -9);
    return code & 0x80 ? -v : v;
}

double dsf_ref_e4m3(uint8_t code) {
    if ((code & 0x7F) != 0x7F) return dsf_ref_e4m3_fields(code);
    return code & 0x80 ? -NAN : NAN;
}

double dsf_ref_e2m1(uint8_t code) {
    static const double mag[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
    return code & 8 ? -mag[code & 7] : mag[code & 7];
}

double dsf_ref_e8m0(uint8_t b) {
    return b == 255 ? NAN : ldexp(1.0, b - 127);
}
