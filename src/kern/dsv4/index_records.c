// Contract records of the indexer and router selections: scores, ascending top-k, candidate blocks, MoE routing.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/formats.h"
#include "kern/dsv4/dsv4_rec.h"
#include "kern/dsv4/dsv4_ref.h"
#include "kern/dsv4/index.h"
#include "kern/dsv4/moe.h"

// Index scores: case rows (queries), n keys, k = head dim, blk = heads; q [R, H, dim], w [R, H], keys [n, dim].
static void scores_rows(const dsf_call *c, int64_t r0, int64_t r1, int fault) {
    int H = (int)c->c->blk, dim = (int)c->c->k;
    int64_t n = c->c->n;
    const float *q = c->ops[0], *w = c->ops[1], *keys = c->ops[2];
    float *score = c->ops[3];
    int lanes = dsv4_lanes(c, fault);
    for (int64_t r = r0; r < r1; r++) {
        const float *qr = q + r * H * dim, *wr = w + r * H;
        if (fault == DSV4_REAL) {
            dsf_index_scores(qr, wr, H, dim, keys, n, score + r * n);
            continue;
        }
        for (int64_t t = 0; t < (fault == DSV4_G1 ? n - n % 8 : n); t++) {
            float acc = 0.0f;
            for (int h = 0; h < H; h++) {
                float v = dsf_bf16_round(dsv4_dot(qr + (int64_t)h * dim, keys + t * dim, dim, lanes));
                v = v > 0.0f || fault == DSV4_G3 ? v : 0.0f;
                acc += dsf_bf16_round(v * wr[h]);
            }
            score[r * n + t] = dsf_bf16_round(acc);
        }
    }
}
static int scores_go(const dsf_call *c, int fault, dsf_err *e) {
    (void)e;
    dsv4_run_rows(c, scores_rows, fault);
    return 0;
}
DSV4_IMPLS(scores, dsv4_row_geoms, "dsf_index_scores per query on chunks of p[0] rows: bf16 dot, relu, weight, sum",
           "keys in tiles of 8 with no remainder tile: the last n % 8 scores never written",
           "q.k split in p[0] partials kept in bf16 scratch (follows the chunk)", "relu dropped: negative q.k kept",
           "calls of more than 64 rows split q.k in two bf16 partials");

static void scores_ref(const void *const *ins, double *const *out, const dsf_case *c) {
    int H = (int)c->blk, dim = (int)c->k;
    for (int64_t r = 0; r < c->rows; r++)
        dsv4_ref_index_scores((const float *)ins[0] + r * H * dim, (const float *)ins[1] + r * H, H, dim, ins[2], c->n,
                              out[0] + r * c->n);
}

// Head weights as bf16(weights_proj(x)) * 2^-6 (spec §6.2 item 4): U(-2, 2) * 2^-6 in bf16.
static void fill_hw(void *buf, int64_t count, const dsf_case *c, uint64_t *rng) {
    float *x = buf;
    (void)c;
    for (int64_t i = 0; i < count; i++)
        x[i] = dsf_bf16_round((float)((dsf_rng_unit(rng) * 4.0 - 2.0) / 64.0)) + 0x1p-20f;
}

static int64_t cnt_qh(const dsf_case *c) {
    return c->blk * c->k;
}
static int64_t cnt_h(const dsf_case *c) {
    return c->blk;
}

static const dsf_operand scores_ops[] = {
    {"q", DSF_ELEM_F32, DSF_IN, 1, cnt_qh, DSF_DRAW_CUSTOM, dsv4_fill_act},
    {"w", DSF_ELEM_F32, DSF_IN, 1, cnt_h, DSF_DRAW_CUSTOM, fill_hw},
    {"keys", DSF_ELEM_F32, DSF_IN, 0, dsv4_cnt_nk, DSF_DRAW_CUSTOM, dsv4_fill_act},
    {"score", DSF_ELEM_F32, DSF_OUT, 1, dsv4_cnt_n, DSF_DRAW_ACT, NULL},
};

// Cases {name, queries, keys, dim, heads}: V4.1's 32 heads of 128 over 1024 keys, ragged key counts.
static const dsf_case scores_cases[] = {
    {"r1_n1024_d128_h32", 1, 1024, 128, 32}, {"r17_n60_d128_h32", 17, 60, 128, 32}, {"r64_n37_d64_h4", 64, 37, 64, 4},
    {"r5_n45_d128_h8", 5, 45, 128, 8},       {"r2_n9_d128_h32", 2, 9, 128, 32},
};

// Bounds: three bf16 roundings (q.k, times w, the sum: 2^-8 each) on terms whose signs cancel in the head sum.
const dsf_record dsf_rec_dsv4_index_scores = {
    "dsv4_index_scores",
    "dsv4",
    "q [R, H, d], w [R, H], keys [n, d] -> score [R, n] = bf16 sum_h relu(q.k) w_h",
    scores_ops,
    LEN(scores_ops),
    scores_ref,
    scores_impls,
    LEN(scores_impls),
    scores_cases,
    LEN(scores_cases),
    8e-3,
    6e-2,
};

// Whether entry a ranks before b: higher first; ties by the lower index, or the higher one where `flip` says.
static int before(const float *s, int64_t a, int64_t b, int flip) {
    return s[a] > s[b] || (s[a] == s[b] && (flip ? a > b : a < b));
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

// The control selection: k passes over n, each taking the best untaken entry; returns the count picked.
static int64_t ctl_select(const float *s, int64_t n, int64_t k, int flip, int finite_only, int64_t *out) {
    uint8_t *taken = calloc((size_t)n + 1, 1);
    int64_t cnt = 0;
    for (; cnt < k && cnt < n; cnt++) {
        int64_t best = -1;
        for (int64_t t = 0; t < n; t++)
            if (!taken[t] && (best < 0 || before(s, t, best, flip))) best = t;
        if (finite_only && s[best] == -INFINITY) break;
        taken[best] = 1;
        out[cnt] = best;
    }
    free(taken);
    return cnt;
}

static int flip_of(const dsf_call *c, int fault) {
    return fault == DSV4_G3 || dsv4_lanes(c, fault) > 1;
}

static void topk_rows(const dsf_call *c, int64_t r0, int64_t r1, int fault) {
    int64_t n = c->c->n, k = c->c->k;
    const float *score = c->ops[0];
    int64_t *idx = c->ops[1];
    for (int64_t r = r0; r < r1; r++) {
        int64_t *o = idx + r * k, cnt;
        if (fault == DSV4_REAL) {
            cnt = dsf_topk_ascending(score + r * n, n, k, o);
        } else {
            cnt = ctl_select(score + r * n, n, k, flip_of(c, fault), fault == DSV4_G1, o);
            qsort(o, (size_t)cnt, sizeof *o, cmp_i64);
            if (fault == DSV4_G1) continue;
        }
        for (int64_t i = cnt; i < k; i++) o[i] = -1;
    }
}
static int topk_go(const dsf_call *c, int fault, dsf_err *e) {
    (void)e;
    dsv4_run_rows(c, topk_rows, fault);
    return 0;
}
DSV4_IMPLS(topk, dsv4_row_geoms, "dsf_topk_ascending per query on chunks of p[0] rows, -1 after the count",
           "-inf never picked and the slots past the finite picks left unwritten",
           "chunks of more than one row break ties toward the higher index",
           "ties broken toward the higher index (documented: the lower index first)",
           "calls of more than 64 rows break ties toward the higher index");

static void topk_ref(const void *const *ins, double *const *out, const dsf_case *c) {
    for (int64_t r = 0; r < c->rows; r++)
        dsv4_ref_topk((const float *)ins[0] + r * c->n, c->n, c->k, out[0] + r * c->k);
}

static const dsf_operand topk_ops[] = {
    {"score", DSF_ELEM_F32, DSF_IN, 1, dsv4_cnt_n, DSF_DRAW_CUSTOM, dsv4_fill_ties},
    {"idx", DSF_ELEM_I64, DSF_OUT, 1, dsv4_cnt_k, DSF_DRAW_ACT, NULL},
};

// Cases {name, queries, n scores, k}: top-512 over 4096 compressed entries (real), k > n, tiny and ragged.
static const dsf_case topk_cases[] = {
    {"r1_n4096_k512", 1, 4096, 512, 0}, {"r17_n40_k16", 17, 40, 16, 0}, {"r5_n1000_k512", 5, 1000, 512, 0},
    {"r3_n300_k512", 3, 300, 512, 0},   {"r64_n100_k8", 64, 100, 8, 0}, {"r2_n9_k4", 2, 9, 4, 0},
};

// Bounds: none; a selection is discrete and must equal the reference exactly.
const dsf_record dsf_rec_dsv4_topk = {
    "dsv4_topk",
    "dsv4",
    "score [R, n] -> idx [R, k]: best min(k, n) (ties: lower index), ascending, -1 after",
    topk_ops,
    LEN(topk_ops),
    topk_ref,
    topk_impls,
    LEN(topk_impls),
    topk_cases,
    LEN(topk_cases),
    0,
    0,
};

// Candidate blocks: case rows (queries), n scores, k = top blocks, blk = block size; len [R] visible entries.
static void cand_rows(const dsf_call *c, int64_t r0, int64_t r1, int fault) {
    int64_t n = c->c->n, bs = c->c->blk, nb = (n + bs - 1) / bs;
    const float *score = c->ops[0];
    const int32_t *len = c->ops[1];
    int32_t *mask = c->ops[2];
    uint8_t *m = malloc((size_t)nb);
    float *bm = malloc(sizeof(float) * (size_t)nb);
    int64_t *pick = malloc(sizeof(int64_t) * (size_t)nb);
    for (int64_t r = r0; r < r1; r++) {
        const float *s = score + r * n;
        int64_t L = len[r], lb = (L + bs - 1) / bs, used = fault == DSV4_G1 ? L / bs : lb;
        int32_t *mr = mask + r * nb;
        for (int64_t b = lb; b < nb; b++) mr[b] = 0;
        if (fault == DSV4_REAL) {
            dsf_candidate_blocks(s, L, (int)bs, c->c->k, m);
            for (int64_t b = 0; b < lb; b++) mr[b] = m[b];
            continue;
        }
        for (int64_t b = 0; b < used; b++) {
            bm[b] = -INFINITY;
            for (int64_t t = b * bs; t < (b + 1) * bs && t < L; t++) bm[b] = s[t] > bm[b] ? s[t] : bm[b];
        }
        if (fault != DSV4_G3 && (L - 1) / bs < used) bm[(L - 1) / bs] = INFINITY;
        int64_t cnt = ctl_select(bm, used, c->c->k, flip_of(c, fault == DSV4_G3 ? DSV4_REAL : fault), 1, pick);
        for (int64_t b = 0; b < used; b++) mr[b] = 0;
        for (int64_t i = 0; i < cnt; i++) mr[pick[i]] = 1;
    }
    free(m);
    free(bm);
    free(pick);
}
static int cand_go(const dsf_call *c, int fault, dsf_err *e) {
    (void)e;
    dsv4_run_rows(c, cand_rows, fault);
    return 0;
}
DSV4_IMPLS(cand, dsv4_row_geoms, "dsf_candidate_blocks per query on chunks of p[0] rows, 0 past the visible blocks",
           "the ragged last block (len % 8 != 0) is never scored nor written",
           "chunks of more than one row break block ties toward the higher block",
           "the newest visible block not forced to +inf (spec §6.2 item 5)",
           "calls of more than 64 rows break block ties toward the higher block");

static void cand_ref(const void *const *ins, double *const *out, const dsf_case *c) {
    int64_t nb = (c->n + c->blk - 1) / c->blk;
    const int32_t *len = ins[1];
    for (int64_t r = 0; r < c->rows; r++) {
        double *o = out[0] + r * nb;
        for (int64_t b = 0; b < nb; b++) o[b] = 0;
        dsv4_ref_candidates((const float *)ins[0] + r * c->n, len[r], (int)c->blk, c->k, o);
    }
}

// Scores per row: 24 bf16 levels with -inf at a fifth of positions, or at nine tenths in every third row.
static void fill_cand(void *buf, int64_t count, const dsf_case *c, uint64_t *rng) {
    float *x = buf;
    dsv4_fill_ties(buf, count, c, rng);
    for (int64_t i = 0; i < count; i++)
        if ((i / c->n) % 3 == 1 && dsf_rng_next(rng) % 10 != 0) x[i] = -INFINITY;
}
// Visible lengths 1..n, a third of them multiples of the block.
static void fill_len(void *buf, int64_t count, const dsf_case *c, uint64_t *rng) {
    int32_t *x = buf;
    for (int64_t i = 0; i < count; i++) {
        int64_t v = 1 + (int64_t)(dsf_rng_next(rng) % (uint64_t)c->n);
        if (i % 3 == 2 && v >= c->blk) v -= v % c->blk;
        x[i] = (int32_t)v;
    }
}
static int64_t cnt_blocks(const dsf_case *c) {
    return (c->n + c->blk - 1) / c->blk;
}

static const dsf_operand cand_ops[] = {
    {"score", DSF_ELEM_F32, DSF_IN, 1, dsv4_cnt_n, DSF_DRAW_CUSTOM, fill_cand},
    {"len", DSF_ELEM_I32, DSF_IN, 1, dsv4_cnt_one, DSF_DRAW_CUSTOM, fill_len},
    {"mask", DSF_ELEM_I32, DSF_OUT, 1, cnt_blocks, DSF_DRAW_ACT, NULL},
};

// Cases {name, queries, n, top blocks, block}: V4.1's top 2048 of blocks of 8 over 32768 entries, small ones.
static const dsf_case cand_cases[] = {
    {"r1_n32768_k2048", 1, 32768, 2048, 8}, {"r17_n40_k2", 17, 40, 2, 8}, {"r5_n300_k16", 5, 300, 16, 8},
    {"r64_n100_k3", 64, 100, 3, 8},         {"r3_n9_k1", 3, 9, 1, 8},
};

// Bounds: none; the mask is discrete and must equal the reference exactly.
const dsf_record dsf_rec_dsv4_candidates = {
    "dsv4_candidates",
    "dsv4",
    "score [R, n], len [R] -> mask [R, n/8]: top blocks by max (newest forced), > -inf",
    cand_ops,
    LEN(cand_ops),
    cand_ref,
    cand_impls,
    LEN(cand_impls),
    cand_cases,
    LEN(cand_cases),
    0,
    0,
};
