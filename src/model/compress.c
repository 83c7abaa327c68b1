// The compressor stage of a kv source: one kern/compress call for every stream of the round (docs/compressor.md).
#include <stdlib.h>

#include "base/formats.h"
#include "model/model_internal.h"

// Streams whose rings have the same rows share a call; the kernels compute every row alike, so grouping is free.
void dsf_model_compress(dsf_run *st, int li, const float *x) {
    const dsf_round *rd = st->round;
    const dsf_cmp_layer *c = &st->m->L[li].cmp;
    int P = rd->n_parts, D = c->dim;
    uint16_t *xb = dsf_malloc(sizeof(uint16_t) * (size_t)(st->rows * D));
    int32_t *row0 = dsf_malloc(sizeof(int32_t) * (size_t)(P + 1));
    int64_t *pos = dsf_malloc(sizeof(int64_t) * (size_t)P), *j0 = dsf_calloc((size_t)P, sizeof(int64_t));
    float **ring = dsf_malloc(sizeof(float *) * (size_t)P);
    uint16_t **kv = dsf_malloc(sizeof(uint16_t *) * (size_t)P), **ik = dsf_malloc(sizeof(uint16_t *) * (size_t)P);
    int64_t *first = dsf_malloc(sizeof(int64_t) * (size_t)P);
    uint8_t *done = dsf_calloc((size_t)P, 1);
    for (int i = 0, row = 0; i < P; i++) first[i] = row, row += (int)rd->parts[i].n;
    for (int g = 0; g < P; g++) {
        if (done[g]) continue;
        dsf_cmp_layer L = *c;
        L.cap = dsf_stream_ring_cap(rd->parts[g].stream, c);
        int n = 0, max_len = 0;
        row0[0] = 0;
        for (int i = g; i < P; i++) {
            dsf_stream *s = rd->parts[i].stream;
            if (done[i] || dsf_stream_ring_cap(s, c) != L.cap) continue;
            done[i] = 1;
            int len = (int)rd->parts[i].n;
            for (int64_t k = 0; k < (int64_t)len * D; k++)
                xb[(int64_t)row0[n] * D + k] = dsf_bf16_from_f32(x[first[i] * D + k]);
            pos[n] = rd->parts[i].pos;
            ring[n] = s->ring[li];
            kv[n] = s->ckv[li];
            ik[n] = s->ikey[li];
            max_len = len > max_len ? len : max_len;
            row0[n + 1] = row0[n] + len;
            n++;
        }
        dsf_cmp_batch b = {n, row0[n], max_len, xb, row0, pos, ring, kv, ik, j0};
        dsf_err e;
        int rc = dsf_cmp_run_cpu(st->m->pool, &dsf_cmp_geom_cpu, &L, &b, &e);
        DSF_ASSERT(rc == 0);
    }
    free(xb);
    free(row0);
    free(pos);
    free(j0);
    free(ring);
    free(kv);
    free(ik);
    free(first);
    free(done);
}
