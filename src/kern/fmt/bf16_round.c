// bf16_round on the CPU: whole rows per worker, each row walked in inner blocks of g->p[1] elements.
#include "kern/fmt/fmt_internal.h"

typedef enum rounding { ROUND_EVEN, ROUND_TOWARD_ZERO, ROUND_HALF_AWAY } rounding;

typedef struct round_job {
    const float *x;
    uint16_t *y;
    int64_t rows, n, block;
    rounding mode;
    int skip_last;
} round_job;

static void round_rows(void *ctx, int64_t r0, int64_t r1) {
    const round_job *j = ctx;
    for (int64_t r = r0; r < r1; r++) {
        const float *x = j->x + r * j->n;
        uint16_t *y = j->y + r * j->n;
        int64_t end = j->n - (j->skip_last && r == j->rows - 1);
        for (int64_t i0 = 0; i0 < end; i0 += j->block) {
            int64_t i1 = i0 + j->block < end ? i0 + j->block : end;
            switch (j->mode) {
            case ROUND_EVEN:
                for (int64_t i = i0; i < i1; i++) y[i] = dsf_bf16_from_f32(x[i]);
                break;
            case ROUND_TOWARD_ZERO:
                for (int64_t i = i0; i < i1; i++) y[i] = dsf_fmt_bf16_toward_zero(x[i]);
                break;
            case ROUND_HALF_AWAY:
                for (int64_t i = i0; i < i1; i++) y[i] = dsf_fmt_bf16_half_away(x[i]);
                break;
            }
        }
    }
}

int dsf_bf16_round_cpu_v(dsf_pool *pool, const dsf_geom *g, const float *x, uint16_t *y, int64_t rows, int64_t n,
                         dsf_fmt_fault f, dsf_err *e) {
    if (rows < 0 || n < 0) return dsf_fail(e, "bf16_round: bad shape [%lld, %lld]", (long long)rows, (long long)n);
    if (g->p[0] < 1 || g->p[1] < 1)
        return dsf_fail(e, "bf16_round cpu geometry %s: rows per chunk %d and inner block %d must be >= 1", g->name,
                        g->p[0], g->p[1]);
    round_job j = {x, y, rows, n, g->p[1], ROUND_EVEN, f == DSF_FMT_SKIP_LAST};
    if ((f == DSF_FMT_GEOM && g->p[1] >= 64) || (f == DSF_FMT_BATCH && rows > DSF_FMT_SUITE_MAX_ROWS))
        j.mode = ROUND_TOWARD_ZERO;
    if (f == DSF_FMT_WRONG) j.mode = ROUND_HALF_AWAY;
    dsf_fmt_rows_run(pool, g->threads, rows, g->p[0], round_rows, &j);
    return 0;
}

int dsf_bf16_round_cpu(dsf_pool *pool, const dsf_geom *g, const float *x, uint16_t *y, int64_t rows, int64_t n,
                       dsf_err *e) {
    return dsf_bf16_round_cpu_v(pool, g, x, y, rows, n, DSF_FMT_REAL, e);
}
