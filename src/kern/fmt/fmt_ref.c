// float64 references of the fmt family (spec §3.0, §3.2.6): fields decoded by hand, rounding by rint on a grid.
#include <math.h>

#include "kern/fmt/fmt_internal.h"
#include "kern/ref_formats.h"

void dsf_fmt_ref_bf16_round(const void *const *ins, double *const *out, const dsf_case *c) {
    const float *x = ins[0];
    for (int64_t i = 0; i < c->rows * c->n; i++) out[0][i] = dsf_ref_round_bf16((double)x[i]);
}

// One quantiser: the scale of a block from its amax, and the grid its elements round to after x/s is clamped.
typedef struct quant_rule {
    double (*scale)(double amax);
    double (*round)(double v);
    double lim;
} quant_rule;

static void ref_quant(const quant_rule *q, int blk, const void *const *ins, double *const *out, const dsf_case *c) {
    for (int64_t b = 0; b < c->rows * c->n / blk; b++) {
        double amax = 0;
        for (int64_t i = b * blk; i < (b + 1) * blk; i++) amax = fmax(amax, fabs(dsf_ref_bf16_at(ins[0], i)));
        double s = q->scale(amax);
        out[1][b] = s;
        for (int64_t i = b * blk; i < (b + 1) * blk; i++)
            out[0][i] = q->round(dsf_ref_clamp(dsf_ref_bf16_at(ins[0], i) / s, q->lim));
    }
}

void dsf_fmt_ref_act_quant_fp8(const void *const *ins, double *const *out, const dsf_case *c) {
    static const quant_rule rule = {dsf_ref_act_scale, dsf_ref_round_e4m3, 448};
    ref_quant(&rule, (int)c->blk, ins, out, c);
}

void dsf_fmt_ref_fp4_quant_e8m0(const void *const *ins, double *const *out, const dsf_case *c) {
    static const quant_rule rule = {dsf_ref_fp4_scale_e8m0, dsf_ref_round_e2m1, 6};
    ref_quant(&rule, 32, ins, out, c);
}

void dsf_fmt_ref_fp4_quant_e4m3(const void *const *ins, double *const *out, const dsf_case *c) {
    static const quant_rule rule = {dsf_ref_fp4_scale_e4m3, dsf_ref_round_e2m1, 6};
    ref_quant(&rule, 16, ins, out, c);
}

void dsf_fmt_ref_fp8_row_dequant(const void *const *ins, double *const *out, const dsf_case *c) {
    const uint8_t *q = ins[0], *s = ins[1];
    for (int64_t i = 0; i < c->rows * c->n; i++)
        out[0][i] = dsf_ref_round_bf16(dsf_ref_e4m3(q[i]) * dsf_ref_e8m0(s[i / 32]));
}
