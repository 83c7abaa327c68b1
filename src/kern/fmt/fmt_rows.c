// The CPU row split of the fmt kernels: chunks of whole rows, dealt contiguously to workers (R1, R2).
#include "kern/fmt/fmt_internal.h"

typedef struct rows_job {
    int64_t rows, chunk;
    dsf_fmt_rows_fn fn;
    void *ctx;
} rows_job;

static void rows_worker(void *ctx, int tid, int nthreads) {
    const rows_job *j = ctx;
    long long lo, hi;
    dsf_pool_range((j->rows + j->chunk - 1) / j->chunk, tid, nthreads, &lo, &hi);
    for (long long c = lo; c < hi; c++) {
        int64_t r0 = c * j->chunk, r1 = r0 + j->chunk;
        j->fn(j->ctx, r0, r1 < j->rows ? r1 : j->rows);
    }
}

void dsf_fmt_rows_run(dsf_pool *pool, int threads, int64_t rows, int64_t chunk, dsf_fmt_rows_fn fn, void *ctx) {
    DSF_ASSERT(chunk > 0);
    rows_job j = {rows, chunk, fn, ctx};
    if (rows <= 0) return;
    if (pool)
        dsf_pool_run(pool, threads, rows_worker, &j);
    else
        rows_worker(&j, 0, 1);
}
