#ifndef DSF_DSV4_MOE_H
#define DSF_DSV4_MOE_H
// MoE pieces of spec §6.2 item 6: the sqrt-softplus router with bias-only selection, and the clamped SwiGLU.
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// z [R, E] -> idx [R, k] (top-k of sqrt(softplus(z)) + bias, ties: lower expert) and w [R, k] (unbiased, normed).
void dsf_moe_route(const float *z, int64_t rows, int n_experts, const float *bias, int k, int norm, float route_scale,
                   int32_t *idx, float *w);

// t[r] = bf16(w[r] * (silu(min(g, lim)) * clamp(u, +-lim))) over [R, n]; w NULL: no weight; lim <= 0: no clamp.
void dsf_swiglu(const float *g, const float *u, const float *w, int64_t rows, int64_t n, float limit, float *t);

#ifdef __cplusplus
}
#endif

#endif
