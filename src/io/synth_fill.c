#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/formats.h"
#include "base/pool.h"
#include "base/quant.h"
#include "base/rng.h"
#include "io/synth.h"

#define CHUNK_BYTES (32u << 20)

struct dsf_synth_gen {
    const dsf_args *a;
    uint64_t seed;
    dsf_pool *pool;
    uint8_t *scale; // the pending scale bytes of the last quantised weight
    size_t scale_n;
    uint8_t *buf;
    size_t buf_cap;
};

// Uniform in (-1, 1) from 16 bits of splitmix64(key, element / 4): a pure function of the element's index.
static inline float unit(uint64_t key, uint64_t i) {
    uint64_t h = dsf_splitmix64(key + (i >> 2) * DSF_GOLDEN64);
    uint32_t u = (uint32_t)(h >> ((i & 3) * 16)) & 0xFFFFu;
    return ((float)u + 0.5f) * (1.0f / 32768.0f) - 1.0f;
}

static uint64_t name_key(uint64_t seed, const char *name) {
    uint64_t h = 1469598103934665603ull;
    for (; *name; name++) h = (h ^ (uint8_t)*name) * 1099511628211ull;
    return dsf_splitmix64(seed ^ dsf_splitmix64(h));
}

// One tensor being generated: its value rule and layout.
typedef struct job {
    const dsf_synth_gen *g;
    const dsf_tspec *t;
    uint64_t key;
    int64_t rows, cols; // logical; a 1-D tensor is one row
    float amp, offset;  // value = offset + amp * unit
    int64_t r0, r1;     // rows of this chunk; out holds them
    uint8_t *out;
} job;

static float value(const job *j, int64_t r, int64_t c) {
    float u = unit(j->key, (uint64_t)(r * j->cols + c));
    if (j->t->fill != DSF_FILL_HC_BASE) return j->offset + j->amp * u;
    int hc = j->g->a->hc_mult;
    int64_t k = c - 2 * hc;
    return (k >= 0 && k / hc == k % hc ? 3.0f : 0.0f) + 0.5f * u;
}

static void rows_values(const job *j, int64_t r0, int64_t nr, float *x) {
    if (j->t->fill == DSF_FILL_HC_BASE) {
        for (int64_t r = 0; r < nr; r++)
            for (int64_t c = 0; c < j->cols; c++) x[r * j->cols + c] = value(j, r0 + r, c);
        return;
    }
    // One splitmix64 call serves four consecutive elements, exactly as unit() would compute each of them.
    uint64_t i = (uint64_t)(r0 * j->cols), end = i + (uint64_t)(nr * j->cols), h = 0;
    for (float *o = x; i < end; i++, o++) {
        if (o == x || (i & 3) == 0) h = dsf_splitmix64(j->key + (i >> 2) * DSF_GOLDEN64);
        uint32_t u = (uint32_t)(h >> ((i & 3) * 16)) & 0xFFFFu;
        *o = j->offset + j->amp * (((float)u + 0.5f) * (1.0f / 32768.0f) - 1.0f);
    }
}

// FP8 weight: each B x B block gets the power-of-two scale its amax asks for (the activation rule of spec §3.0).
static void gen_fp8_stripe(const job *j, int64_t s, float *x, uint8_t *out) {
    int64_t B = j->g->a->fp8_block, r0 = s * B, nr = j->rows - r0 < B ? j->rows - r0 : B;
    int64_t nbc = (j->cols + B - 1) / B;
    rows_values(j, r0, nr, x);
    for (int64_t bc = 0; bc < nbc; bc++) {
        int64_t c0 = bc * B, nc = j->cols - c0 < B ? j->cols - c0 : B;
        float amax = 0;
        for (int64_t r = 0; r < nr; r++) {
            float m = dsf_block_amax(x + r * j->cols + c0, (int)nc);
            amax = m > amax ? m : amax;
        }
        float sc = dsf_act_scale_pow2(amax);
        j->g->scale[s * nbc + bc] = dsf_e8m0_from_pow2_f32(sc);
        for (int64_t r = 0; r < nr; r++)
            for (int64_t c = c0; c < c0 + nc; c++) out[r * j->cols + c] = dsf_act_quant_code(x[r * j->cols + c], sc);
    }
}

static void gen_row(const job *j, int64_t r, float *x, uint8_t *out) {
    const dsf_tspec *t = j->t;
    const dsf_args *a = j->g->a;
    if (t->fill == DSF_FILL_TID2EID) {
        int64_t *ids = (int64_t *)(void *)out;
        int64_t E = a->n_routed_experts;
        for (int64_t k = 0; k < j->cols; k++) {
            for (uint64_t attempt = 0;; attempt++) {
                uint64_t h = dsf_splitmix64(j->key + ((uint64_t)(r * j->cols + k) << 8) + attempt);
                int64_t e = (int64_t)(h % (uint64_t)E);
                int dup = 0;
                for (int64_t m = 0; m < k; m++) dup |= ids[m] == e;
                if (!dup) {
                    ids[k] = e;
                    break;
                }
            }
        }
        return;
    }
    rows_values(j, r, 1, x);
    if (t->dtype == DSF_DT_I8) {
        dsf_fp4_quant_e8m0_row(x, (size_t)j->cols, out, j->g->scale + r * (j->cols / a->fp4_block));
    } else if (t->dtype == DSF_DT_F8_E4M3) {
        dsf_act_quant_row(x, (size_t)j->cols, a->fp8_block, out, j->g->scale + r * (j->cols / a->fp8_block));
    } else if (t->dtype == DSF_DT_BF16) {
        uint16_t *o = (uint16_t *)(void *)out;
        for (int64_t c = 0; c < j->cols; c++) o[c] = dsf_bf16_from_f32(x[c]);
    } else {
        DSF_ASSERT(t->dtype == DSF_DT_F32);
        memcpy(out, x, (size_t)j->cols * sizeof(float));
    }
}

static int is_fp8_matrix(const dsf_tspec *t) {
    return t->dtype == DSF_DT_F8_E4M3 && t->fill == DSF_FILL_LINEAR;
}

static void worker(void *ctx, int tid, int n) {
    const job *j = ctx;
    int64_t B = j->g->a->fp8_block;
    size_t row_bytes = dsf_tspec_nbytes(j->t) / (size_t)j->rows;
    int fp8 = is_fp8_matrix(j->t);
    int64_t u0 = fp8 ? j->r0 / B : j->r0, u1 = fp8 ? (j->r1 + B - 1) / B : j->r1;
    long long lo, hi;
    dsf_pool_range(u1 - u0, tid, n, &lo, &hi);
    float *x = dsf_malloc(sizeof(float) * (size_t)j->cols * (size_t)(fp8 ? B : 1));
    for (int64_t u = u0 + lo; u < u0 + hi; u++) {
        if (fp8) {
            gen_fp8_stripe(j, u, x, j->out + (size_t)(u * B - j->r0) * row_bytes);
        } else {
            gen_row(j, u, x, j->out + (size_t)(u - j->r0) * row_bytes);
        }
    }
    free(x);
}

dsf_synth_gen *dsf_synth_gen_new(const dsf_args *a, uint64_t seed, int threads) {
    dsf_synth_gen *g = dsf_calloc(1, sizeof *g);
    g->a = a;
    g->seed = seed;
    g->pool = dsf_pool_new(threads);
    return g;
}

void dsf_synth_gen_free(dsf_synth_gen *g) {
    if (!g) return;
    dsf_pool_free(g->pool);
    free(g->scale);
    free(g->buf);
    free(g);
}

static void set_amp(job *j) {
    const dsf_tspec *t = j->t;
    float fan = (float)(t->fan_in > 0 ? t->fan_in : 1);
    j->offset = 0;
    switch ((dsf_fill)t->fill) {
    case DSF_FILL_LINEAR: j->amp = sqrtf(3.0f / fan); break;
    case DSF_FILL_NORM:
    case DSF_FILL_ONES: j->offset = 1.0f, j->amp = 0.1f; break;
    case DSF_FILL_EMBED:
    case DSF_FILL_ENGRAM: j->amp = sqrtf(3.0f); break;
    case DSF_FILL_SMALL: j->amp = 0.01f; break;
    case DSF_FILL_HC_FN: j->amp = 0.1f * sqrtf(3.0f / fan); break;
    case DSF_FILL_HC_SCALE: j->offset = 1.0f, j->amp = 0.5f; break;
    case DSF_FILL_SINK: j->amp = 1.0f; break;
    case DSF_FILL_APE: j->amp = 0.1f; break;
    default: j->amp = 0.5f; break;
    }
}

int dsf_synth_gen_tensor(dsf_synth_gen *g, const dsf_tspec *t, dsf_synth_sink sink, void *ctx, dsf_err *e) {
    size_t nbytes = dsf_tspec_nbytes(t);
    if (t->fill == DSF_FILL_SCALE) {
        DSF_ASSERT(g->scale && g->scale_n == nbytes);
        int rc = sink(ctx, g->scale, nbytes, e);
        free(g->scale);
        g->scale = NULL;
        g->scale_n = 0;
        return rc;
    }
    job j = {.g = g, .t = t, .key = name_key(g->seed, t->name)};
    j.rows = t->ndim > 1 ? t->shape[0] : 1;
    j.cols = t->ndim > 1 ? t->fan_in : t->shape[0];
    set_amp(&j);
    const dsf_args *a = g->a;
    int64_t B = a->fp8_block;
    free(g->scale);
    g->scale = NULL;
    g->scale_n = 0;
    if (is_fp8_matrix(t)) g->scale_n = (size_t)(((j.rows + B - 1) / B) * ((j.cols + B - 1) / B));
    if (t->fill == DSF_FILL_ENGRAM) g->scale_n = (size_t)(j.rows * (j.cols / B));
    if (t->dtype == DSF_DT_I8) g->scale_n = (size_t)(j.rows * (j.cols / a->fp4_block));
    if (g->scale_n) g->scale = dsf_malloc(g->scale_n);
    size_t row_bytes = nbytes / (size_t)j.rows;
    int64_t step = (int64_t)(CHUNK_BYTES / (row_bytes ? row_bytes : 1));
    if (is_fp8_matrix(t)) step = step / B * B;
    if (step < (is_fp8_matrix(t) ? B : 1)) step = is_fp8_matrix(t) ? B : 1;
    for (int64_t r0 = 0; r0 < j.rows; r0 += step) {
        j.r0 = r0;
        j.r1 = r0 + step < j.rows ? r0 + step : j.rows;
        size_t n = (size_t)(j.r1 - j.r0) * row_bytes;
        if (n > g->buf_cap) g->buf = dsf_realloc(g->buf, g->buf_cap = n);
        j.out = g->buf;
        dsf_pool_run(g->pool, (j.r1 - j.r0) * (int64_t)row_bytes < (1 << 16) ? 1 : 0, worker, &j);
        if (sink(ctx, g->buf, n, e)) return -1;
    }
    return 0;
}
