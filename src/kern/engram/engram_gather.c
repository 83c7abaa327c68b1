// Engram tables: binding checks, and the per-round row gather from mmapped memory with a bounded pool.
#include <string.h>

#include "kern/engram/engram.h"

int dsf_engram_table_bind(const dsf_tensor *weight, const dsf_tensor *scale, int64_t rows, int hd,
                          dsf_engram_table *out, dsf_err *e) {
    memset(out, 0, sizeof *out);
    if (!weight || !scale) return dsf_fail(e, "engram table: %s is missing", weight ? "the scale" : "the weight");
    if (hd <= 0 || hd % 32) return dsf_fail(e, "engram table %s: head dim %d is not a multiple of 32", weight->name, hd);
    if (weight->dtype != DSF_DT_F8_E4M3)
        return dsf_fail(e, "engram table %s is %s, expected F8_E4M3", weight->name, dsf_dtype_name(weight->dtype));
    if (scale->dtype != DSF_DT_F8_E8M0)
        return dsf_fail(e, "engram table %s is %s, expected F8_E8M0", scale->name, dsf_dtype_name(scale->dtype));
    if (weight->ndim != 2 || weight->shape[1] != hd)
        return dsf_fail(e, "engram table %s: expected [rows, %d]", weight->name, hd);
    if (scale->ndim != 2 || scale->shape[1] != hd / 32)
        return dsf_fail(e, "engram table %s: expected [rows, %d]", scale->name, hd / 32);
    if (weight->shape[0] != rows || scale->shape[0] != rows)
        return dsf_fail(e, "engram table %s has %lld rows (scale %lld); the prime rule gives %lld", weight->name,
                        (long long)weight->shape[0], (long long)scale->shape[0], (long long)rows);
    if (weight->nbytes != (size_t)rows * (size_t)hd || scale->nbytes != (size_t)rows * (size_t)(hd / 32) ||
        !weight->data || !scale->data)
        return dsf_fail(e, "engram table %s: %zu data bytes (scale %zu) for %lld rows", weight->name, weight->nbytes,
                        scale->nbytes, (long long)rows);
    out->codes = weight->data;
    out->scales = scale->data;
    out->rows = rows;
    out->hd = hd;
    return 0;
}

typedef struct gather_job {
    const dsf_engram_table *tables;
    int n_layers, cols;
    int64_t T;
    const int64_t *rows;
    uint8_t *codes, *scales;
} gather_job;

// Units are (layer, token) pairs: each copies C rows of hd code bytes and hd/32 scale bytes.
static void gather_worker(void *ctx, int tid, int n) {
    const gather_job *j = ctx;
    long long lo, hi;
    dsf_pool_range((long long)j->n_layers * j->T, tid, n, &lo, &hi);
    for (long long u = lo; u < hi; u++) {
        int l = (int)(u / j->T);
        int64_t t = u % j->T;
        const dsf_engram_table *tb = &j->tables[l];
        size_t hd = (size_t)tb->hd, sb = hd / 32;
        uint8_t *dc = j->codes + (size_t)u * (size_t)j->cols * hd;
        uint8_t *ds = j->scales + (size_t)u * (size_t)j->cols * sb;
        const int64_t *r = j->rows + (t * j->n_layers + l) * j->cols;
        for (int c = 0; c < j->cols; c++) {
            memcpy(dc + (size_t)c * hd, tb->codes + (size_t)r[c] * hd, hd);
            memcpy(ds + (size_t)c * sb, tb->scales + (size_t)r[c] * sb, sb);
        }
    }
}

int dsf_engram_gather(dsf_pool *pool, int threads, const dsf_engram_table *tables, int n_layers, int cols, int64_t T,
                      const int64_t *rows, uint8_t *codes, uint8_t *scales, dsf_err *e) {
    for (int64_t i = 0; i < T * n_layers * cols; i++) {
        int l = (int)((i / cols) % n_layers);
        if (rows[i] < 0 || rows[i] >= tables[l].rows)
            return dsf_fail(e, "engram gather: row id %lld outside the layer's %lld rows", (long long)rows[i],
                            (long long)tables[l].rows);
    }
    for (int l = 1; l < n_layers; l++)
        if (tables[l].hd != tables[0].hd) return dsf_fail(e, "engram gather: layers differ in head dim");
    gather_job j = {tables, n_layers, cols, T, rows, codes, scales};
    if (pool && T * n_layers > 1)
        dsf_pool_run(pool, threads, gather_worker, &j);
    else
        gather_worker(&j, 0, 1);
    return 0;
}
