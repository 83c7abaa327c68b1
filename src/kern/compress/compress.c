// Compressor setup: shapes and numerics from the config, weight binding, RoPE table, ring helpers, call checks.
#include <math.h>
#include <string.h>

#include "kern/compress/compress_internal.h"

const dsf_geom dsf_cmp_geom_cpu = {"cpu_all_b8", 0, 0, {8, 0, 0, 0}};
const dsf_geom dsf_cmp_geom_cuda = {"cuda_auto_t256", 256, DSF_CMP_GEMV_STAGE(256), {0, 3, 0, 0}};

int dsf_cmp_ring_cap(int ratio, int overlap, int max_rollback) {
    if (ratio <= 1) return 0;
    int need = (overlap ? 2 : 1) * ratio + (max_rollback > 0 ? max_rollback : 0), cap = 1;
    while (cap < need) cap *= 2;
    return cap;
}

void dsf_cmp_rope_freqs(double base, double factor, double beta_fast, double beta_slow, int64_t orig_len,
                        float out[DSF_CMP_ROPE_DIM / 2]) {
    const int dim = DSF_CMP_ROPE_DIM;
    for (int i = 0; i < dim / 2; i++) out[i] = 1.0f / (float)pow(base, (double)(2 * i) / dim);
    if (orig_len <= 0) return;
    // corr(n) = dim*ln(orig/(2 pi n)) / (2 ln base), as the reference's find_correction_range computes it.
    double lo = floor(dim * log((double)orig_len / (beta_fast * 2 * M_PI)) / (2 * log(base)));
    double hi = ceil(dim * log((double)orig_len / (beta_slow * 2 * M_PI)) / (2 * log(base)));
    lo = lo < 0 ? 0 : lo;
    hi = hi > dim - 1 ? dim - 1 : hi;
    float flo = (float)lo, span = (float)(hi == lo ? hi + 0.001 - lo : hi - lo), fac = (float)factor;
    for (int i = 0; i < dim / 2; i++) {
        float ramp = ((float)i - flo) / span;
        ramp = ramp < 0.0f ? 0.0f : (ramp > 1.0f ? 1.0f : ramp);
        float smooth = 1.0f - ramp, f = out[i];
        out[i] = f / fac * (1.0f - smooth) + f * smooth;
    }
}

static int in_list(const int *l, int n, int v) {
    for (int i = 0; i < n; i++)
        if (l[i] == v) return 1;
    return 0;
}

int dsf_cmp_layer_init(dsf_cmp_layer *L, const dsf_args *a, int layer, int which, int max_rollback, dsf_err *e) {
    memset(L, 0, sizeof *L);
    if (layer < 0 || layer >= a->n_layers + a->n_mtp_layers) return dsf_fail(e, "compressor: no layer %d", layer);
    int r = a->compress_ratios[layer];
    if (r <= 0) return dsf_fail(e, "compressor: layer %d has compress ratio %d", layer, r);
    if (a->rope_head_dim != DSF_CMP_ROPE_DIM)
        return dsf_fail(e, "compressor: rope_head_dim %d, the kernels rotate %d dims", a->rope_head_dim,
                        DSF_CMP_ROPE_DIM);
    L->ratio = r;
    L->dim = a->dim;
    L->eps = (float)a->norm_eps;
    if (a->arch == DSF_ARCH_V4) {
        if (which == 1 && r != 4) return dsf_fail(e, "compressor: layer %d (ratio %d) has no indexer", layer, r);
        L->overlap = r == 4;
        L->d = which == 1 ? a->index_head_dim : a->head_dim;
        L->quant = which == 1 ? DSF_CMP_Q_HAD_FP4 : DSF_CMP_Q_FP8_NOPE;
    } else {
        if (which != 0) return dsf_fail(e, "compressor: V4.1 layer %d has no indexer compressor", layer);
        L->d = a->head_dim;
        L->quant = DSF_CMP_Q_FP4_E4M3;
        L->ik = in_list(a->kv_sources, a->n_kv_sources, layer) ? a->index_head_dim : 0;
    }
    L->cap = dsf_cmp_ring_cap(r, L->overlap, max_rollback);
    dsf_cmp_rope_freqs(a->compress_rope_theta, a->rope_factor, a->beta_fast, a->beta_slow, a->original_seq_len,
                       L->freq);
    return dsf_cmp_layer_check(L, e);
}

int dsf_cmp_channels(const dsf_cmp_layer *L) { return (L->overlap ? 2 : 1) * L->d; }
int dsf_cmp_proj_outputs(const dsf_cmp_layer *L) { return (L->ratio > 1 ? 2 : 1) * dsf_cmp_channels(L); }
size_t dsf_cmp_ring_floats(const dsf_cmp_layer *L) { return (size_t)L->cap * 2 * (size_t)dsf_cmp_channels(L); }

int dsf_cmp_layer_check(const dsf_cmp_layer *L, dsf_err *e) {
    int r = L->ratio;
    if (r != 1 && r != 2 && r != 4 && r != DSF_CMP_MAX_RATIO) return dsf_fail(e, "compressor: ratio %d", r);
    if (L->overlap && r != 4) return dsf_fail(e, "compressor: overlap needs ratio 4, not %d", r);
    if (L->dim <= 0 || L->dim % DSF_CMP_SLICES)
        return dsf_fail(e, "compressor: model dim %d must be a positive multiple of %d", L->dim, DSF_CMP_SLICES);
    if (L->d < DSF_CMP_ROPE_DIM || L->d > DSF_CMP_MAX_D || L->d % 64)
        return dsf_fail(e, "compressor: entry dims %d must be a multiple of 64 in 64..%d", L->d, DSF_CMP_MAX_D);
    if (L->quant == DSF_CMP_Q_HAD_FP4 && (L->d & (L->d - 1)))
        return dsf_fail(e, "compressor: Hadamard over %d dims needs a power of two", L->d);
    if ((unsigned)L->quant > DSF_CMP_Q_FP4_E4M3) return dsf_fail(e, "compressor: quantisation %d", (int)L->quant);
    if (L->ik && (L->ik < DSF_CMP_ROPE_DIM || L->ik > DSF_CMP_MAX_IK || L->ik % 64))
        return dsf_fail(e, "compressor: index-key dims %d must be a multiple of 64 in 64..%d", L->ik, DSF_CMP_MAX_IK);
    int span = (L->overlap ? 2 : 1) * r;
    if (r > 1 && (L->cap < span || (L->cap & (L->cap - 1))))
        return dsf_fail(e, "compressor: ring of %d rows, need a power of two >= %d", L->cap, span);
    if (r == 1 && L->cap != 0) return dsf_fail(e, "compressor: ratio 1 keeps no ring (cap %d)", L->cap);
    return 0;
}

static int want(const dsf_tensor *t, const char *what, dsf_dtype dt, int64_t d0, int64_t d1, dsf_err *e) {
    if (!t) return dsf_fail(e, "compressor: %s is not bound", what);
    int nd = d1 ? 2 : 1;
    if (t->dtype != dt || t->ndim != nd || t->shape[0] != d0 || (nd == 2 && t->shape[1] != d1))
        return dsf_fail(e, "compressor: %s (%s) has dtype %d and shape [%lld%s%lld], expected dtype %d [%lld, %lld]",
                        what, t->name ? t->name : "?", (int)t->dtype, (long long)t->shape[0], nd == 2 ? ", " : "",
                        nd == 2 ? (long long)t->shape[1] : 0LL, (int)dt, (long long)d0, (long long)d1);
    if ((uintptr_t)t->data % (dt == DSF_DT_F32 ? 4 : 2)) return dsf_fail(e, "compressor: %s is misaligned", what);
    return 0;
}

int dsf_cmp_layer_bind(dsf_cmp_layer *L, const dsf_compressor_view *cv, const dsf_indexer_view *iv, dsf_err *e) {
    int C = dsf_cmp_channels(L);
    memset(&L->w, 0, sizeof L->w);
    if (want(cv->wkv.weight, "wkv", DSF_DT_BF16, C, L->dim, e) || want(cv->norm, "norm", DSF_DT_BF16, L->d, 0, e))
        return -1;
    L->w.wkv = cv->wkv.weight->data;
    L->w.norm = cv->norm->data;
    if (L->ratio > 1) {
        if (want(cv->wgate.weight, "wgate", DSF_DT_BF16, C, L->dim, e)) return -1;
        L->w.wgate = cv->wgate.weight->data;
    }
    if (L->quant != DSF_CMP_Q_FP4_E4M3) {
        if (want(cv->ape, "ape", DSF_DT_F32, L->ratio, C, e)) return -1;
        L->w.ape = cv->ape->data;
    }
    if (L->ik) {
        if (!iv) return dsf_fail(e, "compressor: index-key owner without an indexer view");
        if (want(iv->wk.weight, "indexer.wk", DSF_DT_BF16, L->ik, L->d, e) ||
            want(iv->k_norm, "indexer.k_norm", DSF_DT_BF16, L->ik, 0, e))
            return -1;
        L->w.wk = iv->wk.weight->data;
        L->w.k_norm = iv->k_norm->data;
    }
    return 0;
}

void dsf_cmp_ring_reset(const dsf_cmp_layer *L, float *ring) {
    int C = dsf_cmp_channels(L);
    for (int q = 0; q < L->cap; q++)
        for (int c = 0; c < C; c++) ring[(size_t)q * 2 * C + c] = 0.0f, ring[(size_t)q * 2 * C + C + c] = -INFINITY;
}

int64_t dsf_cmp_entry_slots(int ratio, int64_t len) { return len <= 0 ? 0 : (len + ratio - 2) / ratio + 1; }

int dsf_cmp_batch_check_dims(const dsf_cmp_layer *L, const dsf_cmp_batch *b, int dim_multiple, dsf_err *e) {
    if (dsf_cmp_layer_check(L, e)) return -1;
    if (L->dim % dim_multiple)
        return dsf_fail(e, "compressor: model dim %d must be a multiple of %d on this backend", L->dim, dim_multiple);
    if (!L->w.wkv || !L->w.norm || (L->ratio > 1 && !L->w.wgate) || (L->ik && (!L->w.wk || !L->w.k_norm)) ||
        (L->quant != DSF_CMP_Q_FP4_E4M3 && !L->w.ape))
        return dsf_fail(e, "compressor: weights missing for ratio %d", L->ratio);
    if (b->n_seg < 0 || b->rows < 0 || b->max_len < 0 || (b->rows > 0 && b->max_len <= 0))
        return dsf_fail(e, "compressor: batch of %d segments, %lld rows, longest %d", b->n_seg, (long long)b->rows,
                        b->max_len);
    if (b->n_seg > 0 && (!b->x || !b->row0 || !b->pos || !b->kv || !b->j0 || (L->ratio > 1 && !b->ring) ||
                         (L->ik && !b->ik)))
        return dsf_fail(e, "compressor: batch arrays missing");
    return 0;
}

int dsf_cmp_batch_check(const dsf_cmp_layer *L, const dsf_cmp_batch *b, dsf_err *e) {
    return dsf_cmp_batch_check_dims(L, b, 8 * DSF_CMP_SLICES, e);
}

#ifndef DSF_HAVE_CUDA
size_t dsf_cmp_scratch_bytes(const dsf_cmp_layer *L, int64_t rows) {
    return 256 + sizeof(float) * (size_t)(rows > 0 ? rows : 1) * (size_t)dsf_cmp_proj_outputs(L);
}

int dsf_cmp_run_cuda(void *stream, const dsf_geom *g, const dsf_cmp_layer *L, const dsf_cmp_batch *b, void *scratch,
                     size_t scratch_bytes, dsf_err *e) {
    (void)stream, (void)g, (void)L, (void)b, (void)scratch, (void)scratch_bytes;
    return dsf_fail(e, "compressor: this build has no CUDA backend");
}

int dsf_cmp_ring_reset_cuda(void *stream, const dsf_cmp_layer *L, float *ring, dsf_err *e) {
    (void)stream, (void)L, (void)ring;
    return dsf_fail(e, "compressor: this build has no CUDA backend");
}

int dsf_cmp_cuda_prefill_tile(const dsf_geom *g, const dsf_cmp_layer *L, int64_t rows, dsf_err *e) {
    (void)g, (void)L, (void)rows;
    return dsf_fail(e, "compressor: this build has no CUDA backend");
}
#endif
