// One Engram layer on the CPU from gathered rows: embed_quant, wkv, gate with residual add (spec §3.2.6).
#include <stdlib.h>

#include "kern/engram/engram_internal.h"

static const dsf_geom layer_geom = {"engine", 0, 0, {16}};

int dsf_engram_layer_cpu(dsf_pool *pool, const uint8_t *codes, const uint8_t *scales, int64_t T, int64_t n,
                         const uint8_t *w, const uint8_t *ws, const uint16_t *qw, const uint16_t *kw, const int32_t *img,
                         uint16_t *h, int hc, int64_t D, float eps, dsf_err *e) {
    int64_t N = (int64_t)(hc + 1) * D;
    uint8_t *xq = dsf_malloc((size_t)(T * n) + 1), *xs = dsf_malloc((size_t)(T * n / 32) + 1);
    uint16_t *kv = dsf_malloc(sizeof(uint16_t) * (size_t)(T * N) + 2);
    int rc = dsf_engram_embed_quant_cpu(pool, &layer_geom, codes, scales, xq, xs, T, n, e);
    if (!rc) rc = dsf_engram_wkv_cpu(pool, &layer_geom, xq, xs, w, ws, kv, T, N, n, e);
    if (!rc) rc = dsf_engram_gate_cpu(pool, &layer_geom, h, kv, qw, kw, img, h, T, hc, D, eps, e);
    free(xq);
    free(xs);
    free(kv);
    return rc;
}
