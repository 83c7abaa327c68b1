// The compressor on CUDA: chunkings across fused, sliced and tiled geometries, batches and rollback: identical bits.
#include "test_compress_sim.h"

static const dsf_geom geoms[] = {{"fused_t128", 128, 0, {1, 0}},         {"tiled64_t128_e5", 128, 0, {2, 0, 5}},
                                 {"auto_t256", 256, 0, {0, 1}},          {"tiled128_t256", 256, 0, {2, 1}},
                                 {"fused_t64", 64, 0, {1, 0}},           {"sliced_gemv_t128", 128, 0, {3, 0, 0, 64}},
                                 {"sliced64_t256", 256, 0, {3, 1}}};

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
}

static void test_batch(void) {
    for (int i = 0; i < 5; i++) sim_test_batch(DSF_BACKEND_CUDA, &small[i], &geoms[2]);
    for (int i = 0; i < 5; i++) sim_test_batch(DSF_BACKEND_CUDA, &small[i], &geoms[0]);
    for (int i = 0; i < 5; i++) sim_test_batch(DSF_BACKEND_CUDA, &small[i], &geoms[5]);
    for (int i = 0; i < 5; i++) sim_test_batch(DSF_BACKEND_CUDA, &small[i], &geoms[6]);
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

// Rings off 16-byte alignment (the staging copies 16 bytes where it can): ratio 128, decode emitters and cmp_pool.
static void test_misaligned(void) {
    sim_test_misaligned(DSF_BACKEND_CUDA, &small[4], &geoms[2]);
    sim_test_misaligned(DSF_BACKEND_CUDA, &small[4], &geoms[1]);
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
    TEST_END();
}
