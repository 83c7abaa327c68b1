// Block quantisation on the CPU: whole rows per worker; a block's amax is kept in g->p[1] lanes, as SIMD would.
#include <math.h>

#include "kern/fmt/fmt_internal.h"

enum { MAX_LANES = 32 };

typedef struct quant_job {
    dsf_quant_kind kind;
    int blk, lanes;
    const uint16_t *x;
    uint8_t *codes, *scales;
    int64_t rows, n;
    dsf_fmt_fault fault;
} quant_job;

int dsf_fmt_quant_check(dsf_quant_kind kind, int blk, int64_t rows, int64_t n, dsf_err *e) {
    static const char *const names[] = {"act_quant_fp8", "fp4_quant_e8m0", "fp4_quant_e4m3"};
    if ((unsigned)kind > DSF_QUANT_FP4_E4M3) return dsf_fail(e, "block_quant: unknown kind %d", (int)kind);
    int ok = kind == DSF_QUANT_FP8 ? (blk == 32 || blk == 64 || blk == 128)
                                   : blk == (kind == DSF_QUANT_FP4_E8M0 ? DSF_FP4_E8M0_BLOCK : DSF_FP4_E4M3_BLOCK);
    if (!ok) return dsf_fail(e, "%s: block %d is not one the spec defines", names[kind], blk);
    if (rows < 0 || n <= 0 || n % blk)
        return dsf_fail(e, "%s: shape [%lld, %lld]: n must be a positive multiple of the block %d", names[kind],
                        (long long)rows, (long long)n, blk);
    return 0;
}

// The amax of one block; the faults shorten the span (batch path) or drop the last lane (wide-lane geometries).
static float block_amax(const quant_job *j, const uint16_t *xb) {
    float lane[MAX_LANES] = {0};
    int span = j->blk, kept = j->lanes;
    if (j->fault == DSF_FMT_BATCH && j->rows > DSF_FMT_SUITE_MAX_ROWS) span = j->blk / 2;
    if (j->fault == DSF_FMT_GEOM && j->lanes >= 8) kept = j->lanes - 1;
    for (int i0 = 0; i0 < span; i0 += j->lanes)
        for (int k = 0; k < j->lanes && i0 + k < span; k++) {
            float a = fabsf(dsf_bf16_to_f32(xb[i0 + k]));
            lane[k] = a > lane[k] ? a : lane[k];
        }
    float m = 0.0f;
    for (int k = 0; k < kept; k++) m = lane[k] > m ? lane[k] : m;
    return m;
}

static void quant_rows(void *ctx, int64_t r0, int64_t r1) {
    const quant_job *j = ctx;
    int64_t nb = j->n / j->blk;
    for (int64_t r = r0; r < r1; r++)
        for (int64_t b = 0; b < nb; b++) {
            int64_t at = r * j->n + b * j->blk;
            const uint16_t *xb = j->x + at;
            float s = dsf_fmt_quant_scale(j->kind, block_amax(j, xb));
            if (j->fault == DSF_FMT_WRONG) s *= 2.0f;
            j->scales[r * nb + b] = dsf_fmt_scale_byte(j->kind, s);
            int skip = j->fault == DSF_FMT_SKIP_LAST && r == j->rows - 1 && b == nb - 1;
            if (j->kind == DSF_QUANT_FP8) {
                for (int i = 0; i < j->blk - skip; i++)
                    j->codes[at + i] = dsf_fmt_quant_code(j->kind, dsf_bf16_to_f32(xb[i]), s);
                continue;
            }
            for (int i = 0; i < j->blk - 2 * skip; i += 2) {
                uint8_t lo = dsf_fmt_quant_code(j->kind, dsf_bf16_to_f32(xb[i]), s);
                uint8_t hi = dsf_fmt_quant_code(j->kind, dsf_bf16_to_f32(xb[i + 1]), s);
                j->codes[(at + i) / 2] = (uint8_t)(lo | hi << 4);
            }
        }
}

int dsf_block_quant_cpu_v(dsf_pool *pool, const dsf_geom *g, dsf_quant_kind kind, int blk, const uint16_t *x,
                          uint8_t *codes, uint8_t *scales, int64_t rows, int64_t n, dsf_fmt_fault f, dsf_err *e) {
    if (dsf_fmt_quant_check(kind, blk, rows, n, e)) return -1;
    if (g->p[0] < 1 || g->p[1] < 1 || g->p[1] > MAX_LANES)
        return dsf_fail(e, "block_quant cpu geometry %s: rows per chunk %d >= 1, lanes %d in 1..%d", g->name, g->p[0],
                        g->p[1], MAX_LANES);
    quant_job j = {kind, blk, g->p[1], x, codes, scales, rows, n, f};
    dsf_fmt_rows_run(pool, g->threads, rows, g->p[0], quant_rows, &j);
    return 0;
}

int dsf_block_quant_cpu(dsf_pool *pool, const dsf_geom *g, dsf_quant_kind kind, int blk, const uint16_t *x,
                        uint8_t *codes, uint8_t *scales, int64_t rows, int64_t n, dsf_err *e) {
    return dsf_block_quant_cpu_v(pool, g, kind, blk, x, codes, scales, rows, n, DSF_FMT_REAL, e);
}
