// The MoE sublayer (spec §6.2 item 6): per row, fp32 sum of bf16 expert outputs by ascending expert, shared last.
#include <stdlib.h>
#include <string.h>

#include "base/formats.h"
#include "kern/dsv4/moe.h"
#include "model/model_internal.h"

// y = w2(bf16(w * swiglu(w1 x, w3 x))) for n gathered rows; w NULL for the shared expert.
static void expert_rows(dsf_pool *pool, const dsf_linw *w1, const dsf_linw *w2, const dsf_linw *w3, const float *x,
                        const float *w, int64_t n, float limit, float *y) {
    int64_t I = w1->n;
    float *g = dsf_malloc(sizeof(float) * (size_t)(n * I)), *u = dsf_malloc(sizeof(float) * (size_t)(n * I));
    dsf_linear(pool, NULL, w1, x, n, g);
    dsf_linear(pool, NULL, w3, x, n, u);
    dsf_swiglu(g, u, w, n, I, limit, g);
    dsf_linear(pool, NULL, w2, g, n, y);
    free(g);
    free(u);
}

void dsf_model_ffn(dsf_run *st, int li, const float *x, float *out) {
    const dsf_args *a = st->m->a;
    const dsf_layer_w *L = &st->m->L[li];
    dsf_pool *pool = st->m->pool;
    int64_t R = st->rows, D = a->dim;
    int E = L->role->n_experts, k = L->role->n_activated;
    float limit = (float)a->swiglu_limit;
    float *z = dsf_malloc(sizeof(float) * (size_t)(R * E)), *wt = dsf_malloc(sizeof(float) * (size_t)(R * k));
    int32_t *idx = dsf_malloc(sizeof(int32_t) * (size_t)(R * k));
    dsf_linear(pool, NULL, &L->gate, x, R, z);
    dsf_moe_route(z, R, E, L->gate_bias, k, a->norm_topk_prob, (float)a->route_scale, idx, wt);
    float *acc = dsf_calloc((size_t)(R * D), sizeof(float));
    float *xe = dsf_malloc(sizeof(float) * (size_t)(R * D)), *ye = dsf_malloc(sizeof(float) * (size_t)(R * D));
    float *we = dsf_malloc(sizeof(float) * (size_t)R);
    int64_t *rows = dsf_malloc(sizeof(int64_t) * (size_t)R);
    for (int e = 0; e < E; e++) {
        int64_t n = 0;
        for (int64_t r = 0; r < R; r++)
            for (int i = 0; i < k; i++)
                if (idx[r * k + i] == e) {
                    memcpy(xe + n * D, x + r * D, sizeof(float) * (size_t)D);
                    we[n] = wt[r * k + i];
                    rows[n++] = r;
                }
        if (!n) continue;
        expert_rows(pool, &L->w1[e], &L->w2[e], &L->w3[e], xe, we, n, limit, ye);
        for (int64_t i = 0; i < n; i++)
            for (int64_t c = 0; c < D; c++) acc[rows[i] * D + c] += ye[i * D + c];
    }
    expert_rows(pool, &L->s_w1, &L->s_w2, &L->s_w3, x, NULL, R, limit, ye);
    for (int64_t i = 0; i < R * D; i++) out[i] = dsf_bf16_round(acc[i] + ye[i]);
    free(z);
    free(wt);
    free(idx);
    free(acc);
    free(xe);
    free(ye);
    free(we);
    free(rows);
}
