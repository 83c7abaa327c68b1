// The compressor on the CPU: projection of row blocks, then every emission, then the ring rows; one order for all.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kern/compress/compress_internal.h"

typedef struct cpu_job {
    const dsf_cmp_layer *L;
    const dsf_cmp_batch *b;
    int fault, wide, skip_slice, O, C;
    int64_t block;
    float *ws;          // [R, O] projected rows: kv [C] then score+ape [C]
    int32_t *row_seg;   // [R]
    int64_t n_em;
    int32_t *em_seg;    // [n_em]
    int64_t *em_j;      // [n_em]
} cpu_job;

static void project_rows(const cpu_job *j, int64_t r0, int64_t r1) {
    const dsf_cmp_layer *L = j->L;
    const dsf_cmp_batch *b = j->b;
    int D = L->dim;
    float *xb = dsf_malloc(sizeof(float) * (size_t)(r1 - r0) * (size_t)D);
    for (int64_t t = r0; t < r1; t++)
        for (int k = 0; k < D; k++) xb[(t - r0) * D + k] = dsf_bf16_to_f32(b->x[t * D + k]);
    for (int o = 0; o < j->O; o++) {
        const uint16_t *w = o < j->C ? L->w.wkv + (size_t)o * D : L->w.wgate + (size_t)(o - j->C) * D;
        for (int64_t t = r0; t < r1; t++) {
            float v = dsf_cmp_dot(xb + (t - r0) * D, w, D, j->skip_slice);
            if (o >= j->C && L->w.ape && j->fault != DSF_CMP_NO_APE) {
                int s = j->row_seg[t];
                int64_t p = b->pos[s] + (t - b->row0[s]);
                v = v + L->w.ape[(p % L->ratio) * j->C + (o - j->C)];
            }
            j->ws[t * j->O + o] = v;
        }
    }
    free(xb);
}

static void project_worker(void *ctx, int tid, int n) {
    const cpu_job *j = ctx;
    long long lo, hi, nb = (j->b->rows + j->block - 1) / j->block;
    dsf_pool_range(nb, tid, n, &lo, &hi);
    for (long long c = lo; c < hi; c++) {
        int64_t r0 = c * j->block, r1 = r0 + j->block;
        project_rows(j, r0, r1 < j->b->rows ? r1 : j->b->rows);
    }
}

// The row of position q of segment s: this call's projection, or the ring for earlier positions.
static const float *row_of(const cpu_job *j, int s, int64_t q) {
    const dsf_cmp_batch *b = j->b;
    int64_t p0 = b->pos[s], len = b->row0[s + 1] - b->row0[s];
    if (q >= p0 && q < p0 + len) return j->ws + (b->row0[s] + (q - p0)) * j->O;
    return b->ring[s] + (size_t)(q & (j->L->cap - 1)) * 2 * j->C;
}

// RoPE of the last 64 of n dims at pos, then the quantisation of kind (-1 none), then the NaN control.
static void finish(const dsf_cmp_layer *L, float *v, int n, int64_t pos, int kind, int blk, int had, int fault) {
    for (int i = 0; i < DSF_CMP_ROPE_DIM / 2; i++) dsf_cmp_rope_pair(v + n - DSF_CMP_ROPE_DIM + 2 * i, pos, L->freq[i]);
    if (had) {
        for (int h = 1; h < n; h *= 2)
            for (int i = 0; i < n / 2; i++) dsf_cmp_hadamard_pair(v, h, i);
        float sc = dsf_cmp_hadamard_scale(n);
        for (int c = 0; c < n; c++) v[c] = dsf_bf16_round(DSF_CMP_MUL(v[c], sc));
    }
    int qn = kind == 0 ? n - DSF_CMP_ROPE_DIM : n;
    for (int c = 0; c < qn; c += blk) dsf_cmp_qdq_block(v + c, blk, kind);
    if (fault == DSF_CMP_NAN) v[n - 1] = NAN;
}

static void emit_one(const cpu_job *j, int s, int64_t jj) {
    const dsf_cmp_layer *L = j->L;
    const dsf_cmp_batch *b = j->b;
    int d = L->d, r = L->ratio;
    float v[DSF_CMP_MAX_D], lat[DSF_CMP_MAX_D], k[DSF_CMP_MAX_IK];
    if (r == 1) {
        const float *row = row_of(j, s, jj);
        for (int c = 0; c < d; c++) v[c] = dsf_bf16_round(row[c]);
    } else {
        int64_t q[2 * DSF_CMP_MAX_RATIO];
        int off[2 * DSF_CMP_MAX_RATIO];
        dsf_cmp_tok t[2 * DSF_CMP_MAX_RATIO];
        int n = dsf_cmp_group(L, jj, j->fault == DSF_CMP_NO_RESET, q, off);
        for (int i = 0; i < n; i++) t[i].row = row_of(j, s, q[i]), t[i].off = off[i];
        for (int c = 0; c < d; c++) v[c] = dsf_bf16_round(dsf_cmp_pool(t, n, j->C, c, j->wide));
    }
    float inv = dsf_cmp_inv_rms(dsf_cmp_sumsq(v, d), d, L->eps);
    for (int c = 0; c < d; c++) v[c] = lat[c] = dsf_cmp_norm_elem(v[c], inv, L->w.norm[c]);
    int64_t rpos = jj * r + (r == 1 && j->wide ? 1 : 0);
    int kind = dsf_cmp_quant_kind(L);
    finish(L, v, d, rpos, kind, dsf_cmp_quant_blk(kind), kind == 1, j->fault);
    uint16_t *out = b->kv[s] + (size_t)(jj - b->j0[s]) * d;
    for (int c = 0; c < d; c++) out[c] = dsf_bf16_from_f32(v[c]);
    if (!L->ik) return;
    for (int o = 0; o < L->ik; o++) k[o] = dsf_bf16_round(dsf_cmp_dot(lat, L->w.wk + (size_t)o * d, d, 0));
    inv = dsf_cmp_inv_rms(dsf_cmp_sumsq(k, L->ik), L->ik, L->eps);
    for (int o = 0; o < L->ik; o++) k[o] = dsf_cmp_norm_elem(k[o], inv, L->w.k_norm[o]);
    finish(L, k, L->ik, jj * r, 1, dsf_cmp_quant_blk(1), 0, j->fault);
    uint16_t *ko = b->ik[s] + (size_t)(jj - b->j0[s]) * L->ik;
    for (int o = 0; o < L->ik; o++) ko[o] = dsf_bf16_from_f32(k[o]);
}

static void emit_worker(void *ctx, int tid, int n) {
    const cpu_job *j = ctx;
    long long lo, hi;
    dsf_pool_range(j->n_em, tid, n, &lo, &hi);
    for (long long i = lo; i < hi; i++) emit_one(j, j->em_seg[i], j->em_j[i]);
}

// The entries a call emits, in segment and position order; LATE skips groups whose rows it cannot reach.
static void list_emissions(cpu_job *j) {
    const dsf_cmp_batch *b = j->b;
    int late = j->fault == DSF_CMP_LATE;
    j->em_seg = dsf_malloc(sizeof(int32_t) * (size_t)(b->rows + 1));
    j->em_j = dsf_malloc(sizeof(int64_t) * (size_t)(b->rows + 1));
    for (int s = 0; s < b->n_seg; s++) {
        int64_t p0 = b->pos[s], len = b->row0[s + 1] - b->row0[s];
        for (int64_t t = 0; t < len; t++) {
            int64_t jj = dsf_cmp_emits(j->L->ratio, p0 + t, late);
            if (jj < 0 || (late && (jj < b->j0[s] || (j->L->ratio == 1 && jj < p0)))) continue;
            j->em_seg[j->n_em] = s;
            j->em_j[j->n_em++] = jj;
        }
    }
}

int dsf_cmp_run_cpu_v(dsf_pool *pool, const dsf_geom *g, const dsf_cmp_layer *L, const dsf_cmp_batch *b, int fault,
                      dsf_err *e) {
    if (dsf_cmp_batch_check_dims(L, b, DSF_CMP_SLICES, e)) return -1;
    if (g->p[0] < 1 || g->p[0] > 64)
        return dsf_fail(e, "compressor cpu geometry %s: %d rows per block, need 1..64", g->name, g->p[0]);
    if (b->rows == 0) return 0;
    cpu_job j = {L, b, fault, g->p[0] >= 4, fault == DSF_CMP_BATCH && b->n_seg > DSF_CMP_SUITE_MAX_SEG,
                 dsf_cmp_proj_outputs(L), dsf_cmp_channels(L), g->p[0], NULL, NULL, 0, NULL, NULL};
    if (fault != DSF_CMP_GEOM) j.wide = 0;
    j.ws = dsf_malloc(sizeof(float) * (size_t)b->rows * (size_t)j.O);
    j.row_seg = dsf_malloc(sizeof(int32_t) * (size_t)b->rows);
    for (int s = 0; s < b->n_seg; s++) {
        if (b->row0[s + 1] < b->row0[s] || b->row0[s + 1] > b->rows || b->pos[s] < 0) {
            free(j.ws);
            free(j.row_seg);
            return dsf_fail(e, "compressor: segment %d: rows %d..%d of %lld at position %lld", s, b->row0[s],
                            b->row0[s + 1], (long long)b->rows, (long long)b->pos[s]);
        }
        for (int32_t t = b->row0[s]; t < b->row0[s + 1]; t++) j.row_seg[t] = s;
    }
    if (pool)
        dsf_pool_run(pool, g->threads, project_worker, &j);
    else
        project_worker(&j, 0, 1);
    list_emissions(&j);
    if (pool)
        dsf_pool_run(pool, g->threads, emit_worker, &j);
    else
        emit_worker(&j, 0, 1);
    for (int s = 0; s < b->n_seg && L->ratio > 1; s++) {
        int64_t p0 = b->pos[s], end = p0 + b->row0[s + 1] - b->row0[s];
        for (int64_t p = end - L->cap > p0 ? end - L->cap : p0; p < end; p++)
            memcpy(b->ring[s] + (size_t)(p & (L->cap - 1)) * 2 * j.C, j.ws + (b->row0[s] + (p - p0)) * j.O,
                   sizeof(float) * 2 * (size_t)j.C);
    }
    free(j.ws);
    free(j.row_seg);
    free(j.em_seg);
    free(j.em_j);
    return 0;
}

int dsf_cmp_run_cpu(dsf_pool *pool, const dsf_geom *g, const dsf_cmp_layer *L, const dsf_cmp_batch *b, dsf_err *e) {
    return dsf_cmp_run_cpu_v(pool, g, L, b, DSF_CMP_REAL, e);
}
