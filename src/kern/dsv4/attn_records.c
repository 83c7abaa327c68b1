// Contract record of sparse attention with a sink (spec §6.2 item 3) at the real head width 512; controls per gate.
#include <math.h>
#include <stdlib.h>

#include "base/formats.h"
#include "kern/dsv4/attn.h"
#include "kern/dsv4/dsv4_rec.h"
#include "kern/dsv4/dsv4_ref.h"

#define HD 512

// Operands q [R, H, 512], kv [n, 512], idx [R, L] (-1: none), sink [H] | o [R, H, 512]; case blk = H.
enum { OP_Q, OP_KV, OP_IDX, OP_SINK, OP_O };

static float scale_of(void) {
    return (float)(1.0 / sqrt((double)HD));
}

// The control kernel for one (row, head): list blocks of `blk` entries, optional fp32 P, sink scaled or not.
static void ctl_head(const dsf_call *c, int64_t r, int h, int fault, float *acc) {
    int64_t L = c->c->k, H = c->c->blk;
    const float *q = (const float *)c->ops[OP_Q] + (r * H + h) * HD, *kv = c->ops[OP_KV];
    const int32_t *idx = (const int32_t *)c->ops[OP_IDX] + r * L;
    float *o = (float *)c->ops[OP_O] + (r * H + h) * HD, s[1024], m = -1e30f, sum = 0.0f, sc = scale_of();
    int64_t blk = fault == DSV4_G2 ? 16 * c->g->p[0] : DSF_ATTN_BLOCK;
    int fp32p = fault == DSV4_G4 && c->c->rows > DSV4_MAX_ROWS, any = 0;
    for (int d = 0; d < HD; d++) acc[d] = 0.0f;
    for (int64_t i = 0; i < L && i < DSF_ATTN_BLOCK; i++) any |= idx[i] >= 0;
    if (fault == DSV4_G1 && !any) return;
    for (int64_t b0 = 0; b0 < L; b0 += blk) {
        int64_t n = L - b0 < blk ? L - b0 : blk;
        float mb = m, bsum = 0.0f;
        for (int64_t i = 0; i < n; i++) {
            s[i] = idx[b0 + i] < 0 ? -INFINITY : dsv4_dot(q, kv + (int64_t)idx[b0 + i] * HD, HD, 1) * sc;
            mb = s[i] > mb ? s[i] : mb;
        }
        float alpha = expf(m - mb);
        for (int d = 0; d < HD; d++) acc[d] *= alpha;
        for (int64_t i = 0; i < n; i++) {
            float p = expf(s[i] - mb);
            bsum += p;
            if (idx[b0 + i] < 0) continue;
            float pv = fp32p ? p : dsf_bf16_round(p);
            for (int d = 0; d < HD; d++) acc[d] += pv * kv[(int64_t)idx[b0 + i] * HD + d];
        }
        sum = sum * alpha + bsum;
        m = mb;
    }
    float sink = ((const float *)c->ops[OP_SINK])[h];
    sum += expf((fault == DSV4_G3 ? sink * sc : sink) - m);
    for (int d = 0; d < HD; d++) o[d] = dsf_bf16_round(acc[d] / sum);
}

static void ctl_rows(const dsf_call *c, int64_t r0, int64_t r1, int fault) {
    float acc[HD];
    for (int64_t r = r0; r < r1; r++)
        for (int h = 0; h < (int)c->c->blk; h++) ctl_head(c, r, h, fault, acc);
}

static int attn_go(const dsf_call *c, int fault, dsf_err *e) {
    int64_t R = c->c->rows, L = c->c->k;
    if (c->c->blk < 1 || c->c->n < 1 || L > 1024) return dsf_fail(e, "sparse_attn: heads, kv rows, list <= 1024");
    if (fault != DSV4_REAL) {
        dsv4_run_rows(c, ctl_rows, fault);
        return 0;
    }
    const float *kv = c->ops[OP_KV];
    const int32_t *idx = c->ops[OP_IDX];
    const float **list = malloc(sizeof(float *) * (size_t)(R * L));
    for (int64_t i = 0; i < R * L; i++) list[i] = idx[i] < 0 ? NULL : kv + (int64_t)idx[i] * HD;
    dsf_sparse_attn(c->pool, c->g, c->ops[OP_Q], (const float *const *)list, R, (int)c->c->blk, HD, L, c->ops[OP_SINK],
                    scale_of(), c->ops[OP_O]);
    free(list);
    return 0;
}
DSV4_IMPLS(attn, dsv4_chunk_geoms, "rows in chunks of p[0] per worker, list blocks of 64, online softmax from -1e30",
           "a head whose first list block is all -1 exits before writing (an early exit for empty lists)",
           "list blocks of 16 * p[0] entries: the online-softmax rescaling points follow the chunk",
           "the sink multiplied by the softmax scale (spec: it is not)",
           "calls of more than 64 rows keep P in fp32 for P.V (the bf16 cast skipped)");

static void attn_ref(const void *const *ins, double *const *out, const dsf_case *c) {
    int64_t L = c->k, H = c->blk;
    for (int64_t r = 0; r < c->rows; r++)
        dsv4_ref_attn((const float *)ins[OP_Q] + r * H * HD, ins[OP_KV], (const int32_t *)ins[OP_IDX] + r * L, L,
                      (int)H, HD, ins[OP_SINK], 1.0 / sqrt((double)HD), out[0] + r * H * HD);
}

// Lists: kv rows with an eighth -1; every 5th row opens with 64 x -1 (decode at p < 64), every 7th is all -1.
static void fill_idx(void *buf, int64_t count, const dsf_case *c, uint64_t *rng) {
    int32_t *x = buf;
    for (int64_t i = 0; i < count; i++) {
        int64_t row = i / c->k, col = i % c->k;
        int dead = (row % 5 == 3 && col < DSF_ATTN_BLOCK) || row % 7 == 6 || dsf_rng_next(rng) % 8 == 0;
        x[i] = dead ? -1 : (int32_t)(dsf_rng_next(rng) % (uint64_t)c->n);
    }
}

static int64_t cnt_q(const dsf_case *c) {
    return c->blk * HD;
}
static int64_t cnt_kv(const dsf_case *c) {
    return c->n * HD;
}
static int64_t cnt_heads(const dsf_case *c) {
    return c->blk;
}

static const dsf_operand attn_ops[] = {
    {"q", DSF_ELEM_F32, DSF_IN, 1, cnt_q, DSF_DRAW_CUSTOM, dsv4_fill_act},
    {"kv", DSF_ELEM_F32, DSF_IN, 0, cnt_kv, DSF_DRAW_CUSTOM, dsv4_fill_act},
    {"idx", DSF_ELEM_I32, DSF_IN, 1, dsv4_cnt_k, DSF_DRAW_CUSTOM, fill_idx},
    {"sink", DSF_ELEM_F32, DSF_IN, 0, cnt_heads, DSF_DRAW_CUSTOM, dsv4_fill_act},
    {"o", DSF_ELEM_F32, DSF_OUT, 1, cnt_q, DSF_DRAW_ACT, NULL},
};

// Cases {name, rows, kv rows, list length, heads}: the real list (128 window + 512 top-k) on 8 heads, tiny, ragged.
static const dsf_case attn_cases[] = {
    {"r1_kv700_l640_h8", 1, 700, 640, 8}, {"r17_kv40_l24_h4", 17, 40, 24, 4}, {"r5_kv300_l192_h8", 5, 300, 192, 8},
    {"r1_kv9_l16_h4", 1, 9, 16, 4},       {"r64_kv70_l65_h2", 64, 70, 65, 2},
};

// Bounds: bf16 P (2^-8 relative per probability) and a bf16 output (2^-8); the max covers outputs at 8x the rms.
const dsf_record dsf_rec_dsv4_sparse_attn = {
    "dsv4_sparse_attn",
    "dsv4",
    "q [R, H, 512], kv [n, 512], idx [R, L] (-1 none), sink [H] -> o [R, H, 512]",
    attn_ops,
    LEN(attn_ops),
    attn_ref,
    attn_impls,
    LEN(attn_impls),
    attn_cases,
    LEN(attn_cases),
    6e-3,
    4e-2,
};
