#ifndef DSF_TEST_COMPRESS_SIM_H
#define DSF_TEST_COMPRESS_SIM_H
// Drives the compressor like the engine does (streams, chunks, rollback) on one backend; shared by the CPU/CUDA tests.
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "contract/device.h"
#include "contract/draw.h"
#include "kern/compress/compress_internal.h"
#include "test.h"

enum { SIM_MAX_SEG = 16 };

typedef struct sim {
    dsf_backend be;
    dsf_pool *pool;
    void *stream, *scratch, *meta;
    size_t scratch_bytes;
    dsf_cmp_layer L;     // weights in backend memory
    dsf_cmp_layer host;  // the same layer with host weights (reference)
    void *wbuf[6], *hbuf[6];
    int64_t T;           // tokens per stream's sequence
    uint16_t *seq[SIM_MAX_SEG]; // host bf16 [T, D] inputs of each stream (one sequence each)
} sim;

typedef struct sim_stream {
    float *ring, *ring0; // ring0: the allocation when the ring starts inside it (sim_stream_shift), else NULL
    uint16_t *kv, *ik;
} sim_stream;

static void *sim_alloc(sim *s, size_t n) {
    void *p = NULL;
    dsf_err e = {{0}};
    DSF_ASSERT(dsf_dev_alloc(s->be, n ? n : 1, &p, &e) == 0);
    DSF_ASSERT(dsf_dev_fill(s->be, p, 0, n ? n : 1, &e) == 0);
    return p;
}

static void *sim_upload(sim *s, const void *h, size_t n) {
    void *p = sim_alloc(s, n);
    dsf_err e = {{0}};
    DSF_ASSERT(dsf_dev_upload(s->be, p, h, n, &e) == 0);
    return p;
}

static void sim_bf16(uint16_t *p, int64_t n, uint64_t *rng, float lo, float hi, int centred) {
    for (int64_t i = 0; i < n; i++) {
        float u = lo + (hi - lo) * (float)dsf_rng_unit(rng);
        p[i] = dsf_bf16_from_f32(centred ? 1.0f + u : (dsf_rng_next(rng) & 1 ? u : -u));
    }
}

// A layer of the variant (ratio, overlap, quant, v41) with seeded weights, and streams' sequences of T tokens.
static void sim_init(sim *s, dsf_backend be, int ratio, int overlap, dsf_cmp_quant q, int v41, int D, int d, int64_t T,
                     int n_streams, uint64_t seed) {
    memset(s, 0, sizeof *s);
    s->be = be;
    s->T = T;
    dsf_err e = {{0}};
    if (be == DSF_BACKEND_CPU) s->pool = dsf_pool_new(0);
    DSF_ASSERT(dsf_dev_stream(be, &s->stream, &e) == 0);
    dsf_cmp_layer *L = &s->host;
    L->ratio = ratio, L->overlap = overlap, L->dim = D, L->d = d, L->quant = q;
    L->ik = v41 ? (d >= 512 ? 128 : 64) : 0;
    L->cap = dsf_cmp_ring_cap(ratio, overlap, 6);
    L->eps = v41 ? 1e-20f : 1e-6f;
    dsf_cmp_rope_freqs(160000.0, 16.0, 32.0, 1.0, 65536, L->freq);
    int C = dsf_cmp_channels(L);
    uint64_t rng = dsf_rng_seed(seed, "compress-sim", (uint64_t)ratio);
    size_t n[6] = {(size_t)C * D, ratio > 1 ? (size_t)C * D : 0, v41 ? 0 : (size_t)ratio * C, (size_t)d,
                   (size_t)L->ik * d, (size_t)L->ik};
    void *h[6];
    for (int i = 0; i < 6; i++) {
        h[i] = calloc(n[i] + 1, i == 2 ? 4 : 2);
        if (i == 2)
            for (size_t k = 0; k < n[i]; k++) ((float *)h[i])[k] = (float)(dsf_rng_unit(&rng) - 0.5);
        else
            sim_bf16(h[i], (int64_t)n[i], &rng, i == 3 || i == 5 ? -0.1f : 0.0005f,
                     i == 3 || i == 5 ? 0.1f : (float)sqrt(3.0 / (i == 4 ? d : D)), i == 3 || i == 5);
    }
    memcpy(s->hbuf, h, sizeof h);
    dsf_cmp_weights hw = {h[0], ratio > 1 ? h[1] : NULL, v41 ? NULL : h[2], h[3], L->ik ? h[4] : NULL,
                          L->ik ? h[5] : NULL};
    L->w = hw;
    s->L = *L;
    if (be == DSF_BACKEND_CUDA) {
        for (int i = 0; i < 6; i++) s->wbuf[i] = sim_upload(s, h[i], n[i] * (i == 2 ? 4 : 2) + 16);
        dsf_cmp_weights dw = {s->wbuf[0], ratio > 1 ? s->wbuf[1] : NULL, v41 ? NULL : s->wbuf[2], s->wbuf[3],
                              L->ik ? s->wbuf[4] : NULL, L->ik ? s->wbuf[5] : NULL};
        s->L.w = dw;
        s->scratch_bytes = dsf_cmp_scratch_bytes(L, 4096);
        s->scratch = sim_alloc(s, s->scratch_bytes);
        s->meta = sim_alloc(s, 4096);
    }
    for (int k = 0; k < n_streams && k < SIM_MAX_SEG; k++) {
        s->seq[k] = malloc(sizeof(uint16_t) * (size_t)(T * D));
        sim_bf16(s->seq[k], T * D, &rng, 0.02f, 1.7f, 0);
    }
}

static void sim_free(sim *s) {
    for (int i = 0; i < 6; i++) {
        free(s->hbuf[i]);
        if (s->wbuf[i]) dsf_dev_free(s->be, s->wbuf[i]);
    }
    if (s->scratch) dsf_dev_free(s->be, s->scratch);
    if (s->meta) dsf_dev_free(s->be, s->meta);
    for (int k = 0; k < SIM_MAX_SEG; k++) free(s->seq[k]);
    dsf_dev_stream_free(s->be, s->stream);
    if (s->pool) dsf_pool_free(s->pool);
}

static int64_t sim_entries(const sim *s) { return s->T / s->L.ratio + 1; }

static void sim_stream_new(sim *s, sim_stream *st) {
    st->ring0 = NULL;
    st->ring = sim_alloc(s, sizeof(float) * dsf_cmp_ring_floats(&s->L));
    st->kv = sim_alloc(s, 2 * (size_t)(sim_entries(s) * s->L.d));
    st->ik = sim_alloc(s, 2 * (size_t)(sim_entries(s) * (s->L.ik ? s->L.ik : 1)));
    float *h = malloc(sizeof(float) * (dsf_cmp_ring_floats(&s->L) + 1));
    dsf_cmp_ring_reset(&s->L, h);
    dsf_err e = {{0}};
    dsf_dev_upload(s->be, st->ring, h, sizeof(float) * dsf_cmp_ring_floats(&s->L), &e);
    free(h);
}

static void sim_stream_free(sim *s, sim_stream *st) {
    dsf_dev_free(s->be, st->ring0 ? st->ring0 : st->ring), dsf_dev_free(s->be, st->kv), dsf_dev_free(s->be, st->ik);
}

// One call: segment k feeds rows pos[k] .. pos[k]+len[k]-1 of sequence which[k] (or of alt when alt[k]) to st[k].
static int sim_call(sim *s, int n, sim_stream *const *st, const int *which, const int64_t *pos, const int *len,
                    uint16_t *const *alt, const dsf_geom *g) {
    int D = s->L.dim;
    int64_t rows = 0;
    int max_len = 0;
    for (int k = 0; k < n; k++) rows += len[k], max_len = len[k] > max_len ? len[k] : max_len;
    uint16_t *x = malloc(sizeof(uint16_t) * (size_t)(rows * D + 1));
    int32_t row0[SIM_MAX_SEG + 1];
    int64_t j0[SIM_MAX_SEG], p[SIM_MAX_SEG];
    float *ring[SIM_MAX_SEG];
    uint16_t *kv[SIM_MAX_SEG], *ik[SIM_MAX_SEG];
    row0[0] = 0;
    for (int k = 0; k < n; k++) {
        const uint16_t *src = (alt && alt[k] ? alt[k] : s->seq[which[k]]) + pos[k] * D;
        memcpy(x + (size_t)row0[k] * D, src, sizeof(uint16_t) * (size_t)(len[k] * D));
        row0[k + 1] = row0[k] + len[k];
        j0[k] = 0, p[k] = pos[k], ring[k] = st[k]->ring, kv[k] = st[k]->kv, ik[k] = st[k]->ik;
    }
    dsf_err e = {{0}};
    int rc;
    if (s->be == DSF_BACKEND_CPU) {
        dsf_cmp_batch b = {n, rows, max_len, x, row0, p, ring, kv, ik, j0};
        rc = dsf_cmp_run_cpu(s->pool, g, &s->L, &b, &e);
    } else {
        uint8_t meta[SIM_MAX_SEG * 48 + 128];
        size_t o_row0 = 0, o_p = 128, o_j0 = o_p + 8 * SIM_MAX_SEG, o_ring = o_j0 + 8 * SIM_MAX_SEG;
        size_t o_kv = o_ring + 8 * SIM_MAX_SEG, o_ik = o_kv + 8 * SIM_MAX_SEG;
        memcpy(meta + o_row0, row0, sizeof row0), memcpy(meta + o_p, p, sizeof p), memcpy(meta + o_j0, j0, sizeof j0);
        memcpy(meta + o_ring, ring, sizeof ring), memcpy(meta + o_kv, kv, sizeof kv), memcpy(meta + o_ik, ik, sizeof ik);
        uint8_t *m = s->meta;
        void *dx = sim_upload(s, x, sizeof(uint16_t) * (size_t)(rows * D + 8));
        DSF_ASSERT(dsf_dev_upload(s->be, m, meta, sizeof meta, &e) == 0);
        dsf_cmp_batch b = {n, rows, max_len, dx, (const int32_t *)(m + o_row0), (const int64_t *)(m + o_p),
                           (float *const *)(m + o_ring), (uint16_t *const *)(m + o_kv), (uint16_t *const *)(m + o_ik),
                           (const int64_t *)(m + o_j0)};
        rc = dsf_cmp_run_cuda(s->stream, g, &s->L, &b, s->scratch, s->scratch_bytes, &e);
        if (!rc) rc = dsf_dev_sync(s->be, s->stream, &e);
        dsf_dev_free(s->be, dx);
    }
    if (rc) fprintf(stderr, "compressor call: %s\n", e.msg);
    free(x);
    return rc;
}

// A stream's whole observable state: ring, entries and index keys, on the host.
typedef struct sim_snap {
    uint8_t *p;
    size_t n;
} sim_snap;

static sim_snap sim_snapshot(sim *s, const sim_stream *st) {
    size_t nr = sizeof(float) * dsf_cmp_ring_floats(&s->L), nk = 2 * (size_t)(sim_entries(s) * s->L.d);
    size_t ni = 2 * (size_t)(sim_entries(s) * s->L.ik);
    sim_snap z = {malloc(nr + nk + ni + 1), nr + nk + ni};
    dsf_err e = {{0}};
    dsf_dev_download(s->be, z.p, st->ring, nr, &e);
    dsf_dev_download(s->be, z.p + nr, st->kv, nk, &e);
    if (ni) dsf_dev_download(s->be, z.p + nr + nk, st->ik, ni, &e);
    return z;
}

static int sim_same(const sim_snap *a, const sim_snap *b) { return a->n == b->n && !memcmp(a->p, b->p, a->n); }

// Feeds sequence `which` from `from` to `to` in chunks drawn from rng (max_chunk 1 = one token per call).
static int sim_feed(sim *s, sim_stream *st, int which, int64_t from, int64_t to, int max_chunk, uint64_t *rng,
                    const dsf_geom *g) {
    for (int64_t p = from; p < to;) {
        int len = max_chunk <= 1 ? 1 : 1 + (int)(dsf_rng_next(rng) % (uint64_t)max_chunk);
        if (p + len > to) len = (int)(to - p);
        sim_stream *one[1] = {st};
        if (sim_call(s, 1, one, &which, &p, &len, NULL, g)) return -1;
        p += len;
    }
    return 0;
}


typedef struct sim_variant {
    const char *name;
    int ratio, overlap;
    dsf_cmp_quant q;
    int v41, D, d;
    int64_t T;
} sim_variant;

// Random chunkings (one of them all one-token steps), each under another geometry: identical states and entries.
static void sim_test_chunkings(dsf_backend be, const sim_variant *v, const dsf_geom *geoms, int n_geoms) {
    sim s;
    sim_init(&s, be, v->ratio, v->overlap, v->q, v->v41, v->D, v->d, v->T, 1, 11);
    const int chunks[] = {(int)v->T, 1, 7, 300, 64};
    sim_snap first = {0};
    for (int i = 0; i < 5; i++) {
        sim_stream st;
        sim_stream_new(&s, &st);
        uint64_t rng = dsf_rng_seed(5, v->name, (uint64_t)i);
        int rc = sim_feed(&s, &st, 0, 0, v->T, chunks[i], &rng, &geoms[i % n_geoms]);
        TEST_ASSERT_MSG(rc == 0, "%s: chunking %d failed", v->name, chunks[i]);
        sim_snap z = sim_snapshot(&s, &st);
        if (i == 0)
            first = z;
        else {
            TEST_ASSERT_MSG(sim_same(&first, &z), "%s: chunks of up to %d (geometry %s) differ from one call", v->name,
                            chunks[i], geoms[i % n_geoms].name);
            free(z.p);
        }
        sim_stream_free(&s, &st);
    }
    free(first.p);
    sim_free(&s);
}

// Streams at different positions in one call equal each stream fed alone.
static void sim_test_batch(dsf_backend be, const sim_variant *v, const dsf_geom *g) {
    enum { N = 5 };
    sim s;
    sim_init(&s, be, v->ratio, v->overlap, v->q, v->v41, v->D, v->d, v->T, N, 12);
    sim_stream a[N], b[N];
    sim_stream *pa[N], *pb[N];
    int which[N], len[N];
    int64_t pos[N];
    uint64_t rng = dsf_rng_seed(6, v->name, 0);
    for (int k = 0; k < N; k++) {
        sim_stream_new(&s, &a[k]), sim_stream_new(&s, &b[k]);
        pa[k] = &a[k], pb[k] = &b[k], which[k] = k;
        pos[k] = (int64_t)(dsf_rng_next(&rng) % (uint64_t)(v->T / 2));
        len[k] = k == 0 ? 1 : 1 + (int)(dsf_rng_next(&rng) % (uint64_t)(k == 1 ? 5 : v->T / 2 - 1));
        TEST_ASSERT(sim_feed(&s, &a[k], k, 0, pos[k], (int)v->T, &rng, g) == 0);
        TEST_ASSERT(sim_feed(&s, &b[k], k, 0, pos[k], (int)v->T, &rng, g) == 0);
    }
    TEST_ASSERT(sim_call(&s, N, pa, which, pos, len, NULL, g) == 0);
    for (int k = 0; k < N; k++) {
        TEST_ASSERT(sim_call(&s, 1, &pb[k], &which[k], &pos[k], &len[k], NULL, g) == 0);
        sim_snap x = sim_snapshot(&s, &a[k]), y = sim_snapshot(&s, &b[k]);
        TEST_ASSERT_MSG(sim_same(&x, &y), "%s: stream %d at %lld (+%d) in a batch differs from alone", v->name, k,
                        (long long)pos[k], len[k]);
        free(x.p), free(y.p);
        sim_stream_free(&s, &a[k]), sim_stream_free(&s, &b[k]);
    }
    sim_free(&s);
}

// Rolling back k positions (k rows of wrong tokens written first) and feeding again equals feeding straight through.
static void sim_test_rollback(dsf_backend be, const sim_variant *v, const dsf_geom *g) {
    sim s;
    sim_init(&s, be, v->ratio, v->overlap, v->q, v->v41, v->D, v->d, v->T, 2, 13);
    uint64_t rng = dsf_rng_seed(7, v->name, 0);
    for (int trial = 0; trial < 4; trial++) {
        sim_stream a, b;
        sim_stream_new(&s, &a), sim_stream_new(&s, &b);
        int k = 1 + (int)(dsf_rng_next(&rng) % 6);
        int64_t P = k + (int64_t)(dsf_rng_next(&rng) % (uint64_t)(v->T - k - 8)), end = P + 8;
        TEST_ASSERT(sim_feed(&s, &a, 0, 0, end, 64, &rng, g) == 0);
        TEST_ASSERT(sim_feed(&s, &b, 0, 0, P - k, 64, &rng, g) == 0);
        sim_stream *pb[1] = {&b};
        uint16_t *alt[1] = {s.seq[1]};
        int which = 0, len = k;
        int64_t from = P - k;
        TEST_ASSERT(sim_call(&s, 1, pb, &which, &from, &len, alt, g) == 0);
        TEST_ASSERT(sim_feed(&s, &b, 0, P - k, end, 3, &rng, g) == 0);
        sim_snap x = sim_snapshot(&s, &a), y = sim_snapshot(&s, &b);
        TEST_ASSERT_MSG(sim_same(&x, &y), "%s: rollback of %d at %lld differs from straight through", v->name, k,
                        (long long)P);
        free(x.p), free(y.p);
        sim_stream_free(&s, &a), sim_stream_free(&s, &b);
    }
    sim_free(&s);
}

// SIM_MAX_SEG streams decode steps together, each group's last token at a different step: each equals decoding alone.
static void sim_test_decode(dsf_backend be, const sim_variant *v, const dsf_geom *g, const dsf_geom *alone) {
    enum { N = SIM_MAX_SEG, STEPS = 10 };
    sim s;
    int r = v->ratio;
    int64_t T = v->T < 3 * r + STEPS + 20 ? v->T : 3 * r + STEPS + 20; // a few groups: positions past the ring's rows
    sim_init(&s, be, r, v->overlap, v->q, v->v41, v->D, v->d, T, N, 15);
    sim_stream a[N], b[N], *pa[N];
    int which[N], len[N], groups = (int)((T - STEPS) / r) - 1;
    int64_t pos[N];
    uint64_t rng = dsf_rng_seed(8, v->name, 0);
    TEST_ASSERT(groups >= 1);
    for (int k = 0; k < N; k++) {
        sim_stream_new(&s, &a[k]), sim_stream_new(&s, &b[k]);
        pa[k] = &a[k], which[k] = k, len[k] = 1;
        pos[k] = (int64_t)r * (1 + (int64_t)(dsf_rng_next(&rng) % (uint64_t)groups)) - 1 - k % (r < STEPS ? r : STEPS);
        TEST_ASSERT(sim_feed(&s, &a[k], k, 0, pos[k], 64, &rng, alone) == 0);
        TEST_ASSERT(sim_feed(&s, &b[k], k, 0, pos[k], 64, &rng, alone) == 0);
    }
    for (int t = 0; t < STEPS; t++) {
        TEST_ASSERT_MSG(sim_call(&s, N, pa, which, pos, len, NULL, g) == 0, "%s: decode step %d", v->name, t);
        for (int k = 0; k < N; k++) pos[k]++;
    }
    for (int k = 0; k < N; k++) {
        TEST_ASSERT(sim_feed(&s, &b[k], k, pos[k] - STEPS, pos[k], 1, &rng, alone) == 0);
        sim_snap x = sim_snapshot(&s, &a[k]), y = sim_snapshot(&s, &b[k]);
        TEST_ASSERT_MSG(sim_same(&x, &y), "%s: stream %d decoding beside %d others (geometry %s) differs from alone",
                        v->name, k, N - 1, g->name);
        free(x.p), free(y.p);
        sim_stream_free(&s, &a[k]), sim_stream_free(&s, &b[k]);
    }
    sim_free(&s);
}

// One call from position 0 against the float64 reference: entries and keys within the contract's bounds.
static void sim_test_ref(dsf_backend be, const sim_variant *v, int64_t T, const dsf_geom *g) {
    sim s;
    sim_init(&s, be, v->ratio, v->overlap, v->q, v->v41, v->D, v->d, T, 1, 14);
    sim_stream st;
    sim_stream_new(&s, &st);
    int which = 0, len = (int)T;
    int64_t p0 = 0;
    sim_stream *one[1] = {&st};
    TEST_ASSERT(sim_call(&s, 1, one, &which, &p0, &len, NULL, g) == 0);
    int64_t E = sim_entries(&s), nr = (int64_t)dsf_cmp_ring_floats(&s.L);
    double *ring = calloc((size_t)nr + 1, sizeof(double)), *kv = calloc((size_t)(E * v->d) + 1, sizeof(double));
    double *ik = calloc((size_t)(E * (s.L.ik + 1)) + 1, sizeof(double));
    float *rh = malloc(sizeof(float) * (size_t)(nr + 1));
    dsf_cmp_ring_reset(&s.host, rh);
    for (int64_t i = 0; i < nr; i++) ring[i] = rh[i];
    dsf_cmp_ref_segment(&s.host, s.seq[0], T, 0, ring, kv, ik);
    sim_snap z = sim_snapshot(&s, &st);
    const uint16_t *got = (const uint16_t *)(z.p + sizeof(float) * (size_t)nr);
    const uint16_t *gik = got + E * v->d;
    double se = 0, ss = 0, mx = 0, sk = 0, ssk = 0, rs = 0, rr = 0;
    for (int64_t i = 0; i < E * v->d; i++) {
        double dlt = dsf_bf16_to_f32(got[i]) - kv[i];
        se += dlt * dlt, ss += kv[i] * kv[i], mx = fabs(dlt) > mx ? fabs(dlt) : mx;
    }
    for (int64_t i = 0; i < E * s.L.ik; i++) {
        double dlt = dsf_bf16_to_f32(gik[i]) - ik[i];
        sk += dlt * dlt, ssk += ik[i] * ik[i];
    }
    const float *gr = (const float *)z.p;
    for (int64_t i = 0; i < nr; i++)
        if (isfinite(ring[i])) rs += (gr[i] - ring[i]) * (gr[i] - ring[i]), rr += ring[i] * ring[i];
    double rel = sqrt(se / (ss + 1e-300)), relk = ssk > 0 ? sqrt(sk / ssk) : 0, relr = rr > 0 ? sqrt(rs / rr) : 0;
    double relmax = mx / sqrt(ss / (double)(E * v->d) + 1e-300);
    TEST_ASSERT_MSG(ss > 0 && rel < 0.02 && relmax < 2.5 && relk < 0.02 && relr < 1e-5,
                    "%s T=%lld: entries rms %.3g max %.3g, keys rms %.3g, ring rms %.3g", v->name, (long long)T, rel,
                    relmax, relk, relr);
    free(z.p), free(ring), free(kv), free(ik), free(rh);
    sim_stream_free(&s, &st);
    sim_free(&s);
}

#endif
