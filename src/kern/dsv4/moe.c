// Router and SwiGLU rows on the CPU, fp32 in the reference's operation order.
#include "kern/dsv4/moe.h"

#include <math.h>

#include "base/err.h"
#include "base/formats.h"

static float softplus_f(float x) {
    return x > 20.0f ? x : log1pf(expf(x));
}

void dsf_moe_route(const float *z, int64_t rows, int n_experts, const float *bias, int k, int norm, float route_scale,
                   int32_t *idx, float *w) {
    DSF_ASSERT(k > 0 && k <= n_experts && n_experts <= 4096);
    float s[4096], b[4096];
    for (int64_t r = 0; r < rows; r++) {
        for (int e = 0; e < n_experts; e++) {
            s[e] = sqrtf(softplus_f(z[r * n_experts + e]));
            b[e] = bias ? s[e] + bias[e] : s[e];
        }
        int32_t *ir = idx + r * k;
        float *wr = w + r * k;
        for (int i = 0; i < k; i++) {
            int best = -1;
            for (int e = 0; e < n_experts; e++) {
                int taken = 0;
                for (int j = 0; j < i; j++) taken |= ir[j] == e;
                if (!taken && (best < 0 || b[e] > b[best])) best = e;
            }
            ir[i] = best;
            wr[i] = s[best];
        }
        if (norm && k > 1) {
            float sum = 0.0f;
            for (int i = 0; i < k; i++) sum += wr[i];
            for (int i = 0; i < k; i++) wr[i] = wr[i] / (sum + 1e-20f);
        }
        for (int i = 0; i < k; i++) wr[i] *= route_scale;
    }
}

void dsf_swiglu(const float *g, const float *u, const float *w, int64_t rows, int64_t n, float limit, float *t) {
    for (int64_t r = 0; r < rows; r++)
        for (int64_t i = 0; i < n; i++) {
            float gv = g[r * n + i], uv = u[r * n + i];
            if (limit > 0.0f) {
                uv = uv > limit ? limit : (uv < -limit ? -limit : uv);
                gv = gv > limit ? limit : gv;
            }
            float v = gv / (1.0f + expf(-gv)) * uv;
            t[r * n + i] = dsf_bf16_round(w ? w[r] * v : v);
        }
}
