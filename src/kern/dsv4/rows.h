#ifndef DSF_DSV4_ROWS_H
#define DSF_DSV4_ROWS_H
// Row ops of spec §3.0: RMSNorm in fp32 with a bf16 result, RoPE with YaRN (§6.2 item 7) on interleaved pairs.
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// y[r] = bf16(w * (x[r] * rsqrt(mean(x[r]^2) + eps))) for rows of n; x, y may alias; w holds bf16 values.
void dsf_rmsnorm(const float *x, int64_t ldx, int64_t rows, int64_t n, const float *w, float eps, float *y,
                 int64_t ldy);

// Frequencies f[rd/2] of a layer kind: 1/(base^(2i/rd)) in fp32, blended by the YaRN ramp when orig_seq_len > 0.
void dsf_rope_freqs(double base, int rd, int64_t orig_seq_len, double factor, double beta_fast, double beta_slow,
                    float *f);

// Rotates the last rd dims of `heads` vectors of width hd: pair i times cis(fp32(pos) * f[i]) (inverse: conjugate).
void dsf_rope_row(float *x, int heads, int hd, int rd, const float *f, int64_t pos, int inverse);

#ifdef __cplusplus
}
#endif

#endif
