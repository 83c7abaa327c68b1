// The compressor on CUDA: chunkings across fused, sliced and tiled geometries, batches and rollback: identical bits.
#include "test_compress_sim.h"

// Fused geometries with dynamic memory stage the GEMV's weights (auto: where slices are whole lines); the rest do not.
static const dsf_geom geoms[] = {{"fused_t128_ws", 128, DSF_CMP_GEMV_STAGE(128), {1, 0}},
                                 {"tiled64_t128_e5", 128, 0, {2, 0, 5}},
                                 {"auto_t256_ws", 256, DSF_CMP_GEMV_STAGE(256), {0, 1}},
                                 {"tiled128_t256", 256, 0, {2, 1}},
                                 {"fused_t64", 64, 0, {1, 0}},
                                 {"sliced_gemv_t128", 128, 0, {3, 0, 0, 64}},
                                 {"sliced64_t256", 256, 0, {3, 1}},
                                 {"fused_t256_k5", 256, 0, {1, 1, 0, 0, 5}},
                                 {"tiled_g128_t256", 256, 0, {2, 2}},
                                 {"tiled_by_grid_t64", 64, 0, {2, 3}}};

static const sim_variant small[] = {
    {"v41_r2", 2, 0, DSF_CMP_Q_FP4_E4M3, 1, 256, 128, 1500},   {"v41_r1", 1, 0, DSF_CMP_Q_FP4_E4M3, 1, 256, 128, 1100},
    {"v4_r4", 4, 1, DSF_CMP_Q_FP8_NOPE, 0, 256, 128, 1200},    {"v4_r4_idx", 4, 1, DSF_CMP_Q_HAD_FP4, 0, 256, 128, 1200},
    {"v4_r128", 128, 0, DSF_CMP_Q_FP8_NOPE, 0, 256, 128, 2100},
};

static const sim_variant real[] = {
    {"v41_r2_real", 2, 0, DSF_CMP_Q_FP4_E4M3, 1, 5120, 512, 300}, {"v41_r1_real", 1, 0, DSF_CMP_Q_FP4_E4M3, 1, 5120, 512, 200},
    {"v4_r4_real", 4, 1, DSF_CMP_Q_FP8_NOPE, 0, 4096, 512, 300},  {"v4_r4_idx_real", 4, 1, DSF_CMP_Q_HAD_FP4, 0, 4096, 128, 300},
    {"v4_r128_real", 128, 0, DSF_CMP_Q_FP8_NOPE, 0, 4096, 512, 600},
};

static void test_chunkings(void) {
    for (int i = 0; i < 5; i++) sim_test_chunkings(DSF_BACKEND_CUDA, &small[i], geoms, 5);
    for (int i = 0; i < 5; i++) sim_test_chunkings(DSF_BACKEND_CUDA, &real[i], geoms, 5);
    // Chunks of 64 under the sliced GEMV, then the sliced SGEMM: sliced where the ring admits them (ratios 1 and 128).
    for (int i = 0; i < 5; i++) sim_test_chunkings(DSF_BACKEND_CUDA, &small[i], geoms + 1, 5);
    for (int i = 0; i < 5; i++) sim_test_chunkings(DSF_BACKEND_CUDA, &small[i], geoms + 2, 5);
    // V4.1's keys by 5 key blocks (uneven shares) beside the tiled, sliced and automatic (8) ones.
    for (int i = 0; i < 2; i++) sim_test_chunkings(DSF_BACKEND_CUDA, &small[i], geoms + 3, 5);
    // The 128x128 SGEMM (K tiles 8 small, 16 real) against k5's 64x64, then the tile by grid (tile 1 here) against it.
    for (int i = 0; i < 5; i++) sim_test_chunkings(DSF_BACKEND_CUDA, &small[i], geoms + 7, 2);
    for (int i = 0; i < 5; i++) sim_test_chunkings(DSF_BACKEND_CUDA, &real[i], geoms + 7, 2);
    for (int i = 0; i < 5; i++) sim_test_chunkings(DSF_BACKEND_CUDA, &small[i], geoms + 8, 2);
    for (int i = 0; i < 5; i++) sim_test_chunkings(DSF_BACKEND_CUDA, &real[i], geoms + 8, 2);
}

static void test_batch(void) {
    for (int i = 0; i < 5; i++) sim_test_batch(DSF_BACKEND_CUDA, &small[i], &geoms[2]);
    for (int i = 0; i < 5; i++) sim_test_batch(DSF_BACKEND_CUDA, &small[i], &geoms[0]);
    for (int i = 0; i < 5; i++) sim_test_batch(DSF_BACKEND_CUDA, &small[i], &geoms[5]);
    for (int i = 0; i < 5; i++) sim_test_batch(DSF_BACKEND_CUDA, &small[i], &geoms[6]);
    for (int i = 0; i < 2; i++) sim_test_batch(DSF_BACKEND_CUDA, &small[i], &geoms[7]);
}

static void test_rollback(void) {
    for (int i = 0; i < 5; i++) sim_test_rollback(DSF_BACKEND_CUDA, &small[i], &geoms[2]);
    for (int i = 0; i < 5; i++) sim_test_rollback(DSF_BACKEND_CUDA, &small[i], &geoms[5]);
}

static void test_ref(void) {
    for (int i = 0; i < 5; i++) sim_test_ref(DSF_BACKEND_CUDA, &small[i], small[i].ratio == 128 ? 400 : 60, &geoms[2]);
    for (int i = 0; i < 5; i++) sim_test_ref(DSF_BACKEND_CUDA, &real[i], real[i].ratio == 128 ? 130 : 12, &geoms[0]);
}

// Sixteen streams decoding together (sliced: the GEMV, the 64-row SGEMM, auto's 32-row SGEMM) equal each alone (fused).
static void test_decode(void) {
    for (int i = 0; i < 5; i++) sim_test_decode(DSF_BACKEND_CUDA, &small[i], &geoms[5 + i % 2], &geoms[0]);
    for (int i = 0; i < 5; i++) sim_test_decode(DSF_BACKEND_CUDA, &real[i], &geoms[i % 2 ? 2 : 5 + i / 2 % 2], &geoms[0]);
}

// Moves a new stream's ring 4 bytes into a fresh allocation, off 16-byte alignment, with the same contents.
static void sim_stream_shift(sim *s, sim_stream *st) {
    size_t n = sizeof(float) * dsf_cmp_ring_floats(&s->L);
    float *h = malloc(n + sizeof(float));
    dsf_err e = {{0}};
    DSF_ASSERT(dsf_dev_download(s->be, h, st->ring, n, &e) == 0);
    dsf_dev_free(s->be, st->ring);
    st->ring0 = sim_alloc(s, n + sizeof(float));
    st->ring = st->ring0 + 1;
    DSF_ASSERT(dsf_dev_upload(s->be, st->ring, h, n, &e) == 0);
    free(h);
}

// A ring 4 bytes off 16-byte alignment gives the bits of an aligned one: chunks of up to 64, then one token a call.
static void sim_test_misaligned(dsf_backend be, const sim_variant *v, const dsf_geom *g) {
    sim s;
    sim_init(&s, be, v->ratio, v->overlap, v->q, v->v41, v->D, v->d, v->T, 1, 16);
    sim_stream a, b;
    sim_stream_new(&s, &a), sim_stream_new(&s, &b), sim_stream_shift(&s, &b);
    sim_stream *both[2] = {&a, &b};
    for (int k = 0; k < 2; k++) {
        uint64_t rng = dsf_rng_seed(9, v->name, 0);
        TEST_ASSERT(sim_feed(&s, both[k], 0, 0, v->T / 2, 64, &rng, g) == 0);
        TEST_ASSERT(sim_feed(&s, both[k], 0, v->T / 2, v->T, 1, &rng, g) == 0);
    }
    sim_snap x = sim_snapshot(&s, &a), y = sim_snapshot(&s, &b);
    TEST_ASSERT_MSG(sim_same(&x, &y), "%s: a ring off 16-byte alignment (geometry %s) differs", v->name, g->name);
    free(x.p), free(y.p);
    sim_stream_free(&s, &a), sim_stream_free(&s, &b);
    sim_free(&s);
}

// Rings off 16-byte alignment (the staging copies 16 bytes where it can): ratio 128, decode emitters and cmp_pool.
static void test_misaligned(void) {
    sim_test_misaligned(DSF_BACKEND_CUDA, &small[4], &geoms[2]);
    sim_test_misaligned(DSF_BACKEND_CUDA, &small[4], &geoms[1]);
}

// Tile 3 picks by grid: tile 2 for a whole V4 ratio-4 prompt in one call (1800 rows or more), tile 1 for its chunks.
static void test_tile_by_grid(void) {
    static const sim_variant v = {"v4_r4", 4, 1, DSF_CMP_Q_FP8_NOPE, 0, 4096, 512, 1800};
    const dsf_geom *g = &geoms[9];
    sim s;
    dsf_err e;
    int64_t T = v.T;
    int big = -1, chunk = 300, small = -1;
    for (;; T *= 2) { // more rows where the device has so many SMs that 1800 rows stay on tile 1
        sim_init(&s, DSF_BACKEND_CUDA, v.ratio, v.overlap, v.q, v.v41, v.D, v.d, T, 1, 13);
        big = dsf_cmp_cuda_prefill_tile(g, &s.L, T, &e);
        if (big != 1 || T >= 8 * v.T) break;
        sim_free(&s);
    }
    for (; chunk > 1 && (small = dsf_cmp_cuda_prefill_tile(g, &s.L, chunk, &e)) == 2; chunk /= 2) {
    }
    TEST_ASSERT_MSG(big == 2 && small == 1, "%s: tile %d for one call of %lld rows, %d for chunks of up to %d (%s)",
                    v.name, big, (long long)T, small, chunk, big < 0 || small < 0 ? e.msg : "want 2 and 1");
    sim_stream a, b;
    sim_stream_new(&s, &a), sim_stream_new(&s, &b);
    sim_stream *one[1] = {&a};
    int which = 0, len = (int)T;
    int64_t p = 0;
    uint64_t rng = dsf_rng_seed(13, v.name, 0);
    TEST_ASSERT(sim_call(&s, 1, one, &which, &p, &len, NULL, g) == 0);
    TEST_ASSERT(sim_feed(&s, &b, 0, 0, T, chunk, &rng, g) == 0);
    sim_snap x = sim_snapshot(&s, &a), y = sim_snapshot(&s, &b);
    TEST_ASSERT_MSG(sim_same(&x, &y), "%s: one call of %d rows (tile 2) differs from chunks (tile 1)", v.name, len);
    free(x.p), free(y.p);
    sim_stream_free(&s, &a), sim_stream_free(&s, &b);
    sim_free(&s);
}

int main(void) {
    char why[256];
    if (!dsf_dev_available(DSF_BACKEND_CUDA, why, sizeof why)) TEST_SKIP_ALL(why);
    TEST_RUN(test_ref);
    TEST_RUN(test_chunkings);
    TEST_RUN(test_batch);
    TEST_RUN(test_rollback);
    TEST_RUN(test_decode);
    TEST_RUN(test_misaligned);
    TEST_RUN(test_tile_by_grid);
    TEST_END();
}
