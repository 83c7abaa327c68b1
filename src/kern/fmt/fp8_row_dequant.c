// fp8_row_dequant on the CPU: whole rows per worker, inner blocks of g->p[1] elements, one scale load per 32.
#include "kern/fmt/fmt_internal.h"

typedef struct dequant_job {
    const uint8_t *q, *s;
    uint16_t *y;
    int64_t rows, n, block;
    dsf_fmt_fault fault;
} dequant_job;

static void dequant_rows(void *ctx, int64_t r0, int64_t r1) {
    const dequant_job *j = ctx;
    int batch_bug = j->fault == DSF_FMT_BATCH && j->rows > DSF_FMT_SUITE_MAX_ROWS;
    int geom_bug = j->fault == DSF_FMT_GEOM && j->block > 32;
    for (int64_t r = r0; r < r1; r++) {
        const uint8_t *q = j->q + r * j->n, *s = j->s + r * (j->n / 32);
        uint16_t *y = j->y + r * j->n;
        int64_t end = j->n - (j->fault == DSF_FMT_SKIP_LAST && r == j->rows - 1);
        for (int64_t i0 = 0; i0 < end; i0 += j->block)
            for (int64_t b0 = i0; b0 < i0 + j->block && b0 < end; b0 += 32) {
                uint8_t sb = s[(geom_bug ? i0 : batch_bug ? 0 : b0) / 32];
                if (j->fault == DSF_FMT_WRONG) sb = 127;
                int64_t b1 = b0 + 32 < end ? b0 + 32 : end;
                for (int64_t i = b0; i < b1; i++) y[i] = dsf_fmt_dequant_one(q[i], sb);
            }
    }
}

int dsf_fp8_row_dequant_cpu_v(dsf_pool *pool, const dsf_geom *g, const uint8_t *q, const uint8_t *s, uint16_t *y,
                              int64_t rows, int64_t n, dsf_fmt_fault f, dsf_err *e) {
    if (rows < 0 || n <= 0 || n % 32)
        return dsf_fail(e, "fp8_row_dequant: shape [%lld, %lld]: n must be a positive multiple of 32", (long long)rows,
                        (long long)n);
    if (g->p[0] < 1 || g->p[1] < 32 || g->p[1] % 32)
        return dsf_fail(e, "fp8_row_dequant cpu geometry %s: rows per chunk %d >= 1, inner block %d a multiple of 32",
                        g->name, g->p[0], g->p[1]);
    dequant_job j = {q, s, y, rows, n, g->p[1], f};
    dsf_fmt_rows_run(pool, g->threads, rows, g->p[0], dequant_rows, &j);
    return 0;
}

int dsf_fp8_row_dequant_cpu(dsf_pool *pool, const dsf_geom *g, const uint8_t *q, const uint8_t *s, uint16_t *y,
                            int64_t rows, int64_t n, dsf_err *e) {
    return dsf_fp8_row_dequant_cpu_v(pool, g, q, s, y, rows, n, DSF_FMT_REAL, e);
}
