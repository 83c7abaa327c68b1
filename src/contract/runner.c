#include "contract/runner.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "contract/device.h"
#include "contract/draw.h"

enum { GUARD = 256, GUARD_BYTE = 0xA5, POISON_A = 0xFF, POISON_B = 0x77, ROW_SAMPLES = 17 };

typedef struct ctx {
    const dsf_record *rec;
    dsf_backend b;
    dsf_pool *pool;
    void *stream;
} ctx;

// Host buffers for one call: inputs drawn, outputs filled by runs.
typedef struct bufs {
    uint8_t *p[16];
    size_t n[16];
} bufs;

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int64_t op_count(const dsf_operand *op, const dsf_case *c) {
    return op->per_row ? op->count(c) * c->rows : op->count(c);
}

static size_t op_row_bytes(const dsf_operand *op, const dsf_case *c) { return dsf_elem_bytes(op->elem, op->count(c)); }

static void bufs_alloc(const dsf_record *rec, const dsf_case *c, bufs *b) {
    DSF_ASSERT(rec->n_ops <= 16);
    for (int i = 0; i < rec->n_ops; i++) {
        b->n[i] = dsf_elem_bytes(rec->ops[i].elem, op_count(&rec->ops[i], c));
        b->p[i] = dsf_calloc(1, b->n[i] ? b->n[i] : 1);
    }
}

static void bufs_free(const dsf_record *rec, bufs *b) {
    for (int i = 0; i < rec->n_ops; i++) free(b->p[i]);
}

static void note(char *dst, const char *fmt, const char *a, const char *b2) {
    if (!dst[0]) snprintf(dst, DSF_DETAIL, fmt, a, b2);
}

// One call with guard zones: returns 0, or 1 with why filled (launch error, guard or input damage).
static int run_once(const ctx *x, const dsf_impl *im, const dsf_geom *g, const dsf_case *c, const bufs *in,
                    int poison, bufs *out, char *why) {
    const dsf_record *rec = x->rec;
    void *dev[16] = {0}, *ops[16] = {0};
    dsf_err e = {{0}};
    int bad = 0;
    for (int i = 0; i < rec->n_ops && !bad; i++) {
        size_t n = in->n[i];
        if (dsf_dev_alloc(x->b, n + 2 * GUARD, &dev[i], &e) || dsf_dev_fill(x->b, dev[i], GUARD_BYTE, n + 2 * GUARD, &e))
            bad = 1;
        else if (rec->ops[i].dir == DSF_IN)
            bad = dsf_dev_upload(x->b, (uint8_t *)dev[i] + GUARD, in->p[i], n, &e) != 0;
        else
            bad = dsf_dev_fill(x->b, (uint8_t *)dev[i] + GUARD, poison, n, &e) != 0;
        ops[i] = (uint8_t *)dev[i] + GUARD;
    }
    if (bad) {
        snprintf(why, DSF_DETAIL, "buffer setup: %.250s", e.msg);
    } else {
        dsf_call call = {ops, c, g, x->pool, x->stream};
        if (im->run(&call, &e) || dsf_dev_sync(x->b, x->stream, &e)) {
            snprintf(why, DSF_DETAIL, "launch failed at %.40s geometry %.40s: %.200s", c->name, g->name, e.msg);
            bad = 1;
        }
    }
    for (int i = 0; i < rec->n_ops && !bad; i++) {
        size_t n = in->n[i];
        uint8_t *h = dsf_malloc(n + 2 * GUARD);
        if (dsf_dev_download(x->b, h, dev[i], n + 2 * GUARD, &e)) {
            snprintf(why, DSF_DETAIL, "download: %.250s", e.msg);
            bad = 1;
        }
        for (size_t k = 0; k < GUARD && !bad; k++)
            if (h[k] != GUARD_BYTE || h[GUARD + n + k] != GUARD_BYTE) {
                snprintf(why, DSF_DETAIL, "write outside operand %s (%s guard byte %zu) at %s geometry %s",
                         rec->ops[i].name, h[k] != GUARD_BYTE ? "leading" : "trailing", k, c->name, g->name);
                bad = 1;
            }
        if (!bad && rec->ops[i].dir == DSF_IN && memcmp(h + GUARD, in->p[i], n)) {
            snprintf(why, DSF_DETAIL, "input %s was modified at %s geometry %s", rec->ops[i].name, c->name, g->name);
            bad = 1;
        }
        if (!bad && rec->ops[i].dir == DSF_OUT) memcpy(out->p[i], h + GUARD, n);
        free(h);
    }
    for (int i = 0; i < rec->n_ops; i++)
        if (dev[i]) dsf_dev_free(x->b, dev[i]);
    return bad;
}

// Byte (or nibble, for fp4) still holding poison A in run a and poison B in run b: never written.
static int64_t find_unwritten(const dsf_operand *op, const uint8_t *a, const uint8_t *b, size_t n) {
    for (size_t k = 0; k < n; k++) {
        if (op->elem == DSF_ELEM_FP4X2) {
            for (int h = 0; h < 2; h++) {
                int sh = 4 * h;
                if (((a[k] >> sh) & 15) == (POISON_A & 15) && ((b[k] >> sh) & 15) == (POISON_B & 15))
                    return (int64_t)(2 * k + h);
            }
        } else if (a[k] == POISON_A && b[k] == POISON_B) {
            return (int64_t)(k / dsf_elem_bytes(op->elem, 1));
        }
    }
    return -1;
}

typedef struct case_state {
    const dsf_case *c;
    bufs in;
    double *ref[16];
    bufs base;
    int have_base;
} case_state;

static void out_index(const dsf_operand *op, const dsf_case *c, int64_t i, int64_t *row, int64_t *col) {
    int64_t per = op->per_row ? op->count(c) : op_count(op, c);
    *row = per ? i / per : 0;
    *col = per ? i % per : i;
}

// Gate 1 (written, finite where the reference is) and gate 4's repeated run, from two runs with two poisons.
static void check_runs(const ctx *x, case_state *cs, const bufs *a, const bufs *b, const dsf_geom *g,
                       dsf_impl_result *r) {
    const dsf_record *rec = x->rec;
    for (int i = 0, j = 0; i < rec->n_ops; i++) {
        const dsf_operand *op = &rec->ops[i];
        if (op->dir != DSF_OUT) continue;
        int64_t cnt = op_count(op, cs->c), row, col;
        int64_t u = find_unwritten(op, a->p[i], b->p[i], a->n[i]);
        if (u >= 0 && !r->red[1]) {
            out_index(op, cs->c, u, &row, &col);
            r->red[1] = 1;
            snprintf(r->detail[1], DSF_DETAIL, "%s element %lld (row %lld, column %lld) never written at %s geometry %s",
                     op->name, (long long)u, (long long)row, (long long)col, cs->c->name, g->name);
        }
        for (int64_t k = 0; k < cnt && !r->red[1]; k++) {
            double v = dsf_elem_decode(op->elem, a->p[i], k);
            if (!isfinite(v) && isfinite(cs->ref[j][k])) {
                out_index(op, cs->c, k, &row, &col);
                r->red[1] = 1;
                snprintf(r->detail[1], DSF_DETAIL, "%s row %lld column %lld is %g where the reference is %g (%s, %s)",
                         op->name, (long long)row, (long long)col, v, cs->ref[j][k], cs->c->name, g->name);
            }
        }
        if (u < 0 && memcmp(a->p[i], b->p[i], a->n[i]) && !r->red[4]) {
            r->red[4] = 1;
            snprintf(r->detail[4], DSF_DETAIL, "%s differs between two identical runs at %s geometry %s", op->name,
                     cs->c->name, g->name);
        }
        j++;
    }
}

static int first_diff(const dsf_record *rec, const bufs *a, const bufs *b, const dsf_case *c, char *where) {
    for (int i = 0; i < rec->n_ops; i++) {
        const dsf_operand *op = &rec->ops[i];
        if (op->dir != DSF_OUT) continue;
        for (size_t k = 0; k < a->n[i]; k++)
            if (a->p[i][k] != b->p[i][k]) {
                int64_t row, col;
                int64_t el = op->elem == DSF_ELEM_FP4X2 ? (int64_t)k * 2 : (int64_t)(k / dsf_elem_bytes(op->elem, 1));
                out_index(op, c, el, &row, &col);
                snprintf(where, 160, "%s row %lld column %lld", op->name, (long long)row, (long long)col);
                return 1;
            }
    }
    return 0;
}

// Gate 3: first geometry against the float64 reference, relative to the reference rms.
static void check_ref(const ctx *x, case_state *cs, const bufs *a, dsf_impl_result *r) {
    const dsf_record *rec = x->rec;
    for (int i = 0, j = 0; i < rec->n_ops; i++) {
        const dsf_operand *op = &rec->ops[i];
        if (op->dir != DSF_OUT) continue;
        int64_t cnt = op_count(op, cs->c), worst = 0;
        double ss = 0, se = 0, mx = -1;
        int64_t finite = 0;
        for (int64_t k = 0; k < cnt; k++)
            if (isfinite(cs->ref[j][k])) ss += cs->ref[j][k] * cs->ref[j][k], finite++;
        double rms = sqrt(ss / (double)(finite ? finite : 1));
        if (rms == 0 || !isfinite(rms)) rms = 1;
        for (int64_t k = 0; k < cnt; k++) {
            double d = fabs(dsf_elem_decode(op->elem, a->p[i], k) - cs->ref[j][k]);
            if (!isfinite(cs->ref[j][k])) d = 0;
            if (isnan(d)) d = INFINITY;
            se += d * d;
            if (d > mx) mx = d, worst = k;
        }
        double rel_rms = sqrt(se / (double)(cnt ? cnt : 1)) / rms, rel_max = mx / rms;
        if (rel_rms > r->rms) r->rms = rel_rms;
        if (rel_max > r->max || !r->worst[0]) {
            int64_t row, col;
            out_index(op, cs->c, worst, &row, &col);
            r->max = rel_max > r->max ? rel_max : r->max;
            snprintf(r->worst, sizeof r->worst, "%s %s row %lld column %lld", cs->c->name, op->name, (long long)row,
                     (long long)col);
        }
        if ((rel_rms > rec->rms_bound || rel_max > rec->max_bound) && !r->red[3]) {
            int64_t row, col;
            out_index(op, cs->c, worst, &row, &col);
            r->red[3] = 1;
            snprintf(r->detail[3], DSF_DETAIL,
                     "%s at %s: rms %.3g, max %.3g of the reference rms (bounds %.3g, %.3g); worst row %lld column %lld: "
                     "%.9g vs %.9g",
                     op->name, cs->c->name, rel_rms, rel_max, rec->rms_bound, rec->max_bound, (long long)row,
                     (long long)col, dsf_elem_decode(op->elem, a->p[i], worst), cs->ref[j][worst]);
        }
        j++;
    }
}

// Builds the inputs of a call of `rows` rows whose row dst_off+k holds row src[k] of the case; other rows are fresh.
static void build_rows(const ctx *x, case_state *cs, dsf_case *c2, const int64_t *src, int nsrc, int64_t dst_off,
                       bufs *in2, uint64_t *rng) {
    const dsf_record *rec = x->rec;
    bufs_alloc(rec, c2, in2);
    for (int i = 0; i < rec->n_ops; i++) {
        const dsf_operand *op = &rec->ops[i];
        if (op->dir != DSF_IN) continue;
        if (!op->per_row) {
            memcpy(in2->p[i], cs->in.p[i], in2->n[i]);
            continue;
        }
        size_t rb = op_row_bytes(op, cs->c);
        dsf_draw_operand(op, in2->p[i], op_count(op, c2), c2, rng);
        for (int k = 0; k < nsrc; k++) memcpy(in2->p[i] + (size_t)(dst_off + k) * rb, cs->in.p[i] + (size_t)src[k] * rb, rb);
    }
}

// Compares output row src (of the full call) with row dst of a call c2; returns 1 on a difference.
static int rows_differ(const ctx *x, case_state *cs, const bufs *full, const bufs *part, int64_t src, int64_t dst,
                       char *where) {
    const dsf_record *rec = x->rec;
    for (int i = 0; i < rec->n_ops; i++) {
        const dsf_operand *op = &rec->ops[i];
        if (op->dir != DSF_OUT) continue;
        size_t rb = op->per_row ? op_row_bytes(op, cs->c) : full->n[i];
        const uint8_t *a = full->p[i] + (op->per_row ? (size_t)src * rb : 0);
        const uint8_t *b = part->p[i] + (op->per_row ? (size_t)dst * rb : 0);
        if (memcmp(a, b, rb)) {
            snprintf(where, 160, "%s row %lld", op->name, (long long)src);
            return 1;
        }
    }
    return 0;
}

// Gate 4: rows against 1-row calls and against the same rows at another offset in a call of another size.
static void check_rows(const ctx *x, case_state *cs, const dsf_impl *im, const bufs *full, dsf_impl_result *r,
                       uint64_t *rng) {
    const dsf_record *rec = x->rec;
    const dsf_case *c = cs->c;
    int has_rows = 0;
    for (int i = 0; i < rec->n_ops; i++) has_rows |= rec->ops[i].per_row;
    if (!has_rows || r->red[4] || r->red[1]) return;
    int64_t pick[ROW_SAMPLES];
    int np = 0;
    for (int64_t k = 0; k < c->rows && np < ROW_SAMPLES; k++)
        if (c->rows <= ROW_SAMPLES || k < 2 || k >= c->rows - 2 || (k % (c->rows / 12 + 1)) == 1) pick[np++] = k;
    char why[DSF_DETAIL] = "", where[160];
    for (int p = 0; p < np && !r->red[4] && !r->red[1]; p++) {
        dsf_case c1 = *c;
        c1.rows = 1;
        bufs in1, out1;
        build_rows(x, cs, &c1, &pick[p], 1, 0, &in1, rng);
        bufs_alloc(rec, &c1, &out1);
        if (run_once(x, im, &im->geoms[0], &c1, &in1, POISON_A, &out1, why)) {
            r->red[1] = 1;
            snprintf(r->detail[1], DSF_DETAIL, "1-row call: %.280s", why);
        } else if (rows_differ(x, cs, full, &out1, pick[p], 0, where)) {
            r->red[4] = 1;
            snprintf(r->detail[4], DSF_DETAIL, "%s at %s differs from the same row in a 1-row call", where, c->name);
        }
        bufs_free(rec, &in1);
        bufs_free(rec, &out1);
    }
    if (r->red[4] || r->red[1]) return;
    dsf_case c2 = *c;
    c2.rows = c->rows + 3;
    int64_t *all = dsf_malloc(sizeof(int64_t) * (size_t)c->rows);
    for (int64_t k = 0; k < c->rows; k++) all[k] = k;
    bufs in2, out2;
    build_rows(x, cs, &c2, all, (int)c->rows, 2, &in2, rng);
    bufs_alloc(rec, &c2, &out2);
    if (run_once(x, im, &im->geoms[0], &c2, &in2, POISON_A, &out2, why)) {
        r->red[1] = 1;
        snprintf(r->detail[1], DSF_DETAIL, "%lld-row call: %.280s", (long long)c2.rows, why);
    }
    for (int64_t k = 0; k < c->rows && !r->red[4] && !r->red[1]; k++)
        if (rows_differ(x, cs, full, &out2, k, k + 2, where)) {
            r->red[4] = 1;
            snprintf(r->detail[4], DSF_DETAIL, "%s at %s differs when it sits at offset %lld of a %lld-row call", where,
                     c->name, (long long)k + 2, (long long)c2.rows);
        }
    free(all);
    bufs_free(rec, &in2);
    bufs_free(rec, &out2);
}

// Runs every geometry of one implementation on one case and applies gates 1-4 to it.
static void run_impl_case(const ctx *x, case_state *cs, const dsf_impl *im, dsf_impl_result *r, uint64_t *rng) {
    const dsf_record *rec = x->rec;
    bufs first, a, b;
    bufs_alloc(rec, cs->c, &first);
    char why[DSF_DETAIL] = "", where[160];
    for (int gi = 0; gi < im->n_geoms; gi++) {
        const dsf_geom *g = &im->geoms[gi];
        bufs_alloc(rec, cs->c, &a);
        bufs_alloc(rec, cs->c, &b);
        if (run_once(x, im, g, cs->c, &cs->in, POISON_A, &a, why) || run_once(x, im, g, cs->c, &cs->in, POISON_B, &b, why)) {
            r->red[1] = 1;
            note(r->detail[1], "%s%s", why, "");
        } else {
            check_runs(x, cs, &a, &b, g, r);
            const bufs *base = NULL;
            if (im->planted == DSF_GATE_NONE && cs->have_base) base = &cs->base;
            if (gi > 0 && !base) base = &first;
            if (base && first_diff(rec, base, &a, cs->c, where) && !r->red[2]) {
                r->red[2] = 1;
                snprintf(r->detail[2], DSF_DETAIL, "geometry %s differs from %s at %s: first at %s", g->name,
                         base == &first ? im->geoms[0].name : "the first implementation's first geometry", cs->c->name,
                         where);
            }
            if (gi == 0) {
                for (int i = 0; i < rec->n_ops; i++) memcpy(first.p[i], a.p[i], a.n[i]);
                if (im->planted == DSF_GATE_NONE && !cs->have_base) {
                    bufs_alloc(rec, cs->c, &cs->base);
                    for (int i = 0; i < rec->n_ops; i++) memcpy(cs->base.p[i], a.p[i], a.n[i]);
                    cs->have_base = 1;
                }
                check_ref(x, cs, &a, r);
            }
        }
        bufs_free(rec, &a);
        bufs_free(rec, &b);
    }
    if (!r->red[1]) check_rows(x, cs, im, &first, r, rng);
    bufs_free(rec, &first);
}

static int is_control(const dsf_impl *im) { return im->planted != DSF_GATE_NONE; }

void dsf_contract_run_record(const dsf_record *rec, dsf_backend b, const dsf_contract_opts *o, dsf_pool *pool,
                             void *stream, dsf_kernel_result *out) {
    memset(out, 0, sizeof *out);
    out->rec = rec;
    out->backend = b;
    out->impls = dsf_calloc((size_t)rec->n_impls + 1, sizeof *out->impls);
    for (int pass = 0; pass < 2; pass++)
        for (int k = 0; k < rec->n_impls; k++)
            if (rec->impls[k].backend == b && is_control(&rec->impls[k]) == pass)
                out->impls[out->n_impls++].impl = &rec->impls[k];
    ctx x = {rec, b, pool, stream};
    double t0 = now_ms();
    for (int ci = 0; ci < rec->n_cases && out->n_impls; ci++) {
        case_state cs = {.c = &rec->cases[ci]};
        uint64_t rng = dsf_rng_seed(o->seed, rec->name, (uint64_t)ci);
        const void *ins[16] = {0};
        double *refs[16] = {0};
        bufs_alloc(rec, cs.c, &cs.in);
        for (int i = 0, j = 0; i < rec->n_ops; i++) {
            const dsf_operand *op = &rec->ops[i];
            if (op->dir == DSF_IN) {
                dsf_draw_operand(op, cs.in.p[i], op_count(op, cs.c), cs.c, &rng);
                ins[i] = cs.in.p[i];
            } else {
                cs.ref[j] = dsf_calloc((size_t)op_count(op, cs.c) + 1, sizeof(double));
                refs[j] = cs.ref[j];
                j++;
            }
        }
        rec->ref(ins, refs, cs.c);
        if (o->progress) fprintf(o->progress, "  %s %s case %s\n", dsf_backend_name(b), rec->name, cs.c->name);
        for (int k = 0; k < out->n_impls; k++) run_impl_case(&x, &cs, out->impls[k].impl, &out->impls[k], &rng);
        bufs_free(rec, &cs.in);
        if (cs.have_base) bufs_free(rec, &cs.base);
        for (int j = 0; j < 16; j++) free(cs.ref[j]);
    }
    out->gate_ms = now_ms() - t0;
    t0 = now_ms();
    char why[64];
    int have_gpu = b == DSF_BACKEND_CUDA && dsf_dev_available(b, why, sizeof why);
    for (int k = 0; k < out->n_impls; k++) {
        dsf_impl_result *r = &out->impls[k];
        if (b == DSF_BACKEND_CUDA && dsf_contract_limits(r->impl, have_gpu, r->detail[5], DSF_DETAIL)) r->red[5] = 1;
        if (is_control(r->impl)) {
            out->controls++;
            for (int g = 1; g <= 5 && !r->first_red; g++)
                if (r->red[g]) r->first_red = g;
            r->as_planted = r->first_red == (int)r->impl->planted;
            out->controls_red += r->as_planted;
        } else {
            for (int g = 1; g <= 5; g++) out->red[g] |= r->red[g];
            out->limit_problems += r->red[5];
        }
    }
    out->limits_ms = now_ms() - t0;
    for (int g = 1; g <= 5; g++) out->failed |= out->red[g];
}

void dsf_kernel_result_free(dsf_kernel_result *r) {
    free(r->impls);
    r->impls = NULL;
}
