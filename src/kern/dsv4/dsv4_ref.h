#ifndef DSF_DSV4_REF_H
#define DSF_DSV4_REF_H
// float64 references of the dsv4 kernels, written from spec §3.0 and §6.2 (never from the C kernels); R rows.
#include <stdint.h>

#include "kern/dsv4/linear.h"

// act_quant QDQ of n values in blocks of blk: amax floor 1e-4, scale 2^ceil(log2(amax / 448)), e4m3 RNE.
void dsv4_ref_act_qdq(const float *x, int64_t n, int blk, double *out);

// y [R, n] = x [R, k] (act-QDQ'd in blocks of 32 for FP8/FP4) times W^T, W as dsf_linw holds it with blk 32.
void dsv4_ref_linear(dsf_lin_kind kind, const float *x, int64_t rows, int64_t n, int64_t k, const uint8_t *q,
                     const uint8_t *s, const float *f, double *y);
void dsv4_ref_rmsnorm(const float *x, int64_t rows, int64_t n, const float *w, double eps, double *y);
// The fp32 frequency table of §6.2 item 7 for rope dims rd (yarn: factor 16, beta 32 / 1, original 65536).
void dsv4_ref_rope_freqs(double base, int yarn, int rd, float *f);
// Rotates the last rd dims of each of `heads` vectors of width hd at pos: y = x elsewhere; angle fp32(pos) * f.
void dsv4_ref_rope(const float *x, int heads, int hd, int rd, const float *f, int64_t pos, int inverse, double *y);
// One query of sparse attention: o[H, hd] over list idx[L] (-1: none) into kv rows; the sink joins the denominator.
void dsv4_ref_attn(const float *q, const float *kv, const int32_t *idx, int64_t L, int heads, int hd, const float *sink,
                   double scale, double *o);
void dsv4_ref_hc_mixes(const float *x, int64_t width, const float *fn, int m, double eps, double *mixes);
// pre[hc], post[hc], comb[hc * hc] of one row from mixes[(2 + hc) * hc]: sigmoid, softmax, Sinkhorn with +eps.
void dsv4_ref_hc_split(const float *mixes, int hc, const float *scale, const float *base, int iters, double eps,
                       double *pre, double *post, double *comb);
// Index scores of one query: sum_h relu(q_h . k_t) * w_h, without the kernel's bf16 rounding points.
void dsv4_ref_index_scores(const float *q, const float *w, int heads, int dim, const float *keys, int64_t n,
                           double *score);
// Best min(k, n) of n (higher score first, then the lower index; -inf pickable), ascending, -1 after; returns count.
int64_t dsv4_ref_topk(const float *score, int64_t n, int64_t k, double *idx);
// Candidate blocks of one query seeing len entries: mask[ceil(len / bs)] of 1.0 / 0.0; returns the kept count.
int64_t dsv4_ref_candidates(const float *score, int64_t len, int bs, int64_t topk, double *mask);
// Router row: idx[k] by sqrt(softplus(z)) + bias (ties: lower expert), w[k] from the unbiased scores, normed, scaled.
void dsv4_ref_route(const float *z, int e, const float *bias, int k, int norm, double scale, double *idx, double *w);
// SwiGLU element: w * silu(min(g, lim)) * clamp(u, -lim, lim).
double dsv4_ref_swiglu(double g, double u, double w, double lim);

#endif
