// The compressor on the CPU: any chunking, batching, decoding together and rollback: identical bits; near float64.
#include "test_compress_sim.h"

static const dsf_geom geoms[] = {{"w1_b1", 1, 0, {1}}, {"all_b8", 0, 0, {8}}, {"w2_b4", 2, 0, {4}}, {"w3_b2", 3, 0, {2}}};

static const sim_variant small[] = {
    {"v41_r2", 2, 0, DSF_CMP_Q_FP4_E4M3, 1, 256, 128, 1500},   {"v41_r1", 1, 0, DSF_CMP_Q_FP4_E4M3, 1, 256, 128, 1100},
    {"v4_r4", 4, 1, DSF_CMP_Q_FP8_NOPE, 0, 256, 128, 1200},    {"v4_r4_idx", 4, 1, DSF_CMP_Q_HAD_FP4, 0, 256, 128, 1200},
    {"v4_r128", 128, 0, DSF_CMP_Q_FP8_NOPE, 0, 256, 128, 2100},
};

static const sim_variant real[] = {
    {"v41_r2_real", 2, 0, DSF_CMP_Q_FP4_E4M3, 1, 5120, 512, 6},  {"v41_r1_real", 1, 0, DSF_CMP_Q_FP4_E4M3, 1, 5120, 512, 4},
    {"v4_r4_real", 4, 1, DSF_CMP_Q_FP8_NOPE, 0, 4096, 512, 12},  {"v4_r4_idx_real", 4, 1, DSF_CMP_Q_HAD_FP4, 0, 4096, 128, 12},
    {"v4_r128_real", 128, 0, DSF_CMP_Q_FP8_NOPE, 0, 4096, 512, 130},
};

// The tiny synthetic model's width: the CPU path takes D = 64 (a multiple of 32); the CUDA launch check refuses it.
static const sim_variant narrow[] = {
    {"v41_r2_d64", 2, 0, DSF_CMP_Q_FP4_E4M3, 1, 64, 128, 300},
    {"v41_r1_d64", 1, 0, DSF_CMP_Q_FP4_E4M3, 1, 64, 128, 300},
};

static void test_narrow(void) {
    for (int i = 0; i < 2; i++) {
        sim_test_ref(DSF_BACKEND_CPU, &narrow[i], narrow[i].T, &geoms[1]);
        sim_test_chunkings(DSF_BACKEND_CPU, &narrow[i], geoms, 4);
    }
    dsf_cmp_layer L = {.ratio = 2, .dim = 64, .d = 128, .ik = 128, .cap = 8, .quant = DSF_CMP_Q_FP4_E4M3};
    uint16_t w = 0;
    L.w.wkv = L.w.wgate = L.w.norm = L.w.wk = L.w.k_norm = &w;
    dsf_cmp_batch b = {0};
    dsf_err e;
    TEST_ASSERT(dsf_cmp_batch_check_dims(&L, &b, DSF_CMP_SLICES, &e) == 0);
    TEST_ASSERT(dsf_cmp_batch_check(&L, &b, &e) == -1 && strstr(e.msg, "multiple of 256"));
}

static void test_chunkings(void) {
    for (int i = 0; i < 5; i++) sim_test_chunkings(DSF_BACKEND_CPU, &small[i], geoms, 4);
}

static void test_batch(void) {
    for (int i = 0; i < 5; i++) sim_test_batch(DSF_BACKEND_CPU, &small[i], &geoms[1]);
}

static void test_rollback(void) {
    for (int i = 0; i < 5; i++) sim_test_rollback(DSF_BACKEND_CPU, &small[i], &geoms[1]);
}

static void test_decode(void) {
    for (int i = 0; i < 5; i++) sim_test_decode(DSF_BACKEND_CPU, &small[i], &geoms[1 + i % 3], &geoms[0]);
}

static void test_ref_small(void) {
    for (int i = 0; i < 5; i++) sim_test_ref(DSF_BACKEND_CPU, &small[i], small[i].ratio == 128 ? 400 : 60, &geoms[1]);
}

static void test_ref_real(void) {
    for (int i = 0; i < 5; i++) sim_test_ref(DSF_BACKEND_CPU, &real[i], real[i].T, &geoms[1]);
}

// The tests can fail: a late emission rule or a missing reset gives other bits than the reference and the straight run.
static void test_controls_differ(void) {
    dsf_cmp_layer L;
    memset(&L, 0, sizeof L);
    L.ratio = 4, L.overlap = 1, L.d = 128;
    int64_t q[8];
    int off[8];
    TEST_ASSERT(dsf_cmp_group(&L, 0, 0, q, off) == 4 && q[0] == 0 && off[0] == 128);
    TEST_ASSERT(dsf_cmp_group(&L, 0, 1, q, off) == 8 && q[0] == -4 && off[0] == 0);
    TEST_ASSERT(dsf_cmp_group(&L, 3, 0, q, off) == 8 && q[0] == 8 && q[4] == 12 && off[4] == 128);
    TEST_ASSERT(dsf_cmp_emits(4, 3, 0) == 0 && dsf_cmp_emits(4, 4, 0) == -1 && dsf_cmp_emits(4, 4, 1) == 0);
    TEST_ASSERT(dsf_cmp_emits(1, 0, 0) == 0 && dsf_cmp_emits(2, 0, 0) == -1 && dsf_cmp_emits(2, 1, 0) == 0);
    TEST_ASSERT(dsf_cmp_ring_cap(2, 0, 6) == 8 && dsf_cmp_ring_cap(4, 1, 6) == 16 && dsf_cmp_ring_cap(128, 0, 6) == 256);
    TEST_ASSERT(dsf_cmp_ring_cap(1, 0, 6) == 0);
}

#ifdef DSF_HAVE_CUDA
// The functions the contract's limits gate reads beside a CUDA geometry's main one, without a device (measure 0).
static void test_cuda_launches(void) {
    const dsf_geom tiled = {"tiled128_t256_e8", 256, 0, {2, 1, 8}}, fused = {"fused_t128", 128, 0, {1, 0, 0}};
    const dsf_geom bad = {"bad_t48", 48, 0, {1, 0, 0}};
    dsf_launch l[8];
    dsf_err e;
    // Tiled, 64x64 tiles: the K-tile-16 GEMM is the main function, so its K-tile-8 sibling comes first.
    int n = dsf_cmp_cuda_launches(&tiled, 0, l, 8, &e);
    TEST_ASSERT_MSG(n == 5, "%d: %s", n, n < 0 ? e.msg : "");
    TEST_ASSERT(!strcmp(l[0].fn, "cmp_gemm_kt8") && l[0].threads == 64 && !strcmp(l[1].fn, "cmp_pool"));
    TEST_ASSERT(l[1].threads == 256 && !strcmp(l[2].fn, "cmp_emit_w") && l[2].threads == 256);
    TEST_ASSERT(l[2].fa.regs_per_thread == 0 && l[2].fa.max_threads_per_block == 0);
    // Fused, 32x64 tiles: one GEMM for both K tiles (listed once), the emitter at its largest block of 8 warps.
    n = dsf_cmp_cuda_launches(&fused, 0, l, 8, &e);
    TEST_ASSERT_MSG(n == 5 && !strcmp(l[0].fn, "cmp_gemm") && l[0].threads == 32, "%d", n);
    TEST_ASSERT(!strcmp(l[1].fn, "cmp_pool") && l[1].threads == 128 && l[2].threads == 256);
    TEST_ASSERT(!strcmp(l[3].fn, "cmp_ring_rows") && !strcmp(l[4].fn, "cmp_ring_reset"));
    TEST_ASSERT(dsf_cmp_cuda_launches(&fused, 0, l, 3, &e) == -1 && strstr(e.msg, "fused_t128"));
    TEST_ASSERT(dsf_cmp_cuda_launches(&bad, 0, l, 8, &e) == -1 && strstr(e.msg, "bad_t48"));
    // Automatic: both paths' GEMMs, the 32-row sliced tile, the GEMV and the folding kernel beside the tiled path's.
    const dsf_geom aut = {"auto_t128", 128, 0, {0, 1, 0, 0}}, sgemm = {"sliced64_t128", 128, 0, {3, 1, 0, 0}};
    dsf_launch m[16];
    n = dsf_cmp_cuda_launches(&aut, 0, m, 16, &e);
    TEST_ASSERT_MSG(n == 11, "%d: %s", n, n < 0 ? e.msg : "");
    TEST_ASSERT(!strcmp(m[4].fn, "cmp_gemm_sliced_32rows") && m[4].threads == 32 && !strcmp(m[5].fn, "cmp_sgemv"));
    TEST_ASSERT(m[5].threads == 64 && !strcmp(m[6].fn, "cmp_fused_fold") && m[6].threads == 128);
    // Sliced by the SGEMM only (p[3] 0): no GEMV; the folding kernel is the main function, not listed again.
    n = dsf_cmp_cuda_launches(&sgemm, 0, m, 16, &e);
    TEST_ASSERT_MSG(n == 8 && !strcmp(m[2].fn, "cmp_gemm_sliced") && !strcmp(m[4].fn, "cmp_pool"), "%d", n);
    for (int i = 0; i < n; i++) TEST_ASSERT(strcmp(m[i].fn, "cmp_sgemv") && strcmp(m[i].fn, "cmp_fused_fold"));
    // Automatic with the GEMV's staging: the staged instance is the main one, the unstaged one listed without memory.
    const dsf_geom ws = {"auto_t256_ws", 256, DSF_CMP_GEMV_STAGE(256), {0, 1, 0, 0}};
    n = dsf_cmp_cuda_launches(&ws, 0, m, 16, &e);
    TEST_ASSERT_MSG(n == 12 && !strcmp(m[7].fn, "cmp_fused_gemv") && m[7].threads == 256, "%d", n);
    TEST_ASSERT(m[7].dyn_smem == 0 && m[0].dyn_smem == 0 && m[6].dyn_smem == 0);
}
#endif

int main(void) {
#ifdef DSF_HAVE_CUDA
    TEST_RUN(test_cuda_launches);
#endif
    TEST_RUN(test_controls_differ);
    TEST_RUN(test_ref_small);
    TEST_RUN(test_ref_real);
    TEST_RUN(test_chunkings);
    TEST_RUN(test_batch);
    TEST_RUN(test_rollback);
    TEST_RUN(test_decode);
    TEST_RUN(test_narrow);
    TEST_END();
}
