// The fmt kernels on the CPU: hand-worked values, base/quant.h row functions, geometries, refusals, the references.
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "base/quant.h"
#include "contract/contract.h"
#include "contract/draw.h"
#include "kern/fmt/fmt_internal.h"
#include "test.h"

static dsf_pool *pool;

static const dsf_geom round_geoms[] = {{"serial", 1, 0, {1, 1}}, {"w2", 2, 0, {3, 7}}, {"w4", 4, 0, {1, 4096}}};
static const dsf_geom quant_geoms[] = {{"serial", 1, 0, {1, 1}}, {"w2", 2, 0, {3, 8}}, {"w4", 4, 0, {2, 32}}};
static const dsf_geom dequant_geoms[] = {{"serial", 1, 0, {1, 32}}, {"w2", 2, 0, {3, 64}}, {"w4", 4, 0, {2, 256}}};

static uint16_t bf16_of(float f) {
    return dsf_bf16_from_f32(f);
}

static float f32_of_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static void test_bf16_round_hand(void) {
    static const uint32_t in[] = {0x3F800000u, 0x3F808000u, 0x3F818000u, 0x3F808001u, 0xBF7FFFFFu, 0x80000001u,
                                  0x7F7F8000u, 0x7F7F7FFFu, 0x7FA00000u, 0xFF800000u, 0x00018000u, 0x3F7F8000u};
    static const uint16_t want[] = {0x3F80, 0x3F80, 0x3F82, 0x3F81, 0xBF80, 0x8000,
                                    0x7F80, 0x7F7F, 0x7FE0, 0xFF80, 0x0002, 0x3F80};
    enum { N = sizeof in / sizeof in[0] };
    float x[N];
    for (int i = 0; i < N; i++) x[i] = f32_of_bits(in[i]);
    for (int g = 0; g < 3; g++)
        for (int shape = 0; shape < 2; shape++) {
            uint16_t y[N];
            memset(y, 0xAB, sizeof y);
            dsf_err e;
            int64_t rows = shape ? N : 1, n = shape ? 1 : N;
            TEST_ASSERT(dsf_bf16_round_cpu(pool, &round_geoms[g], x, y, rows, n, &e) == 0);
            for (int i = 0; i < N; i++)
                TEST_ASSERT_MSG(y[i] == want[i], "geometry %s element %d: %04x, want %04x", round_geoms[g].name, i,
                                y[i], want[i]);
        }
}

// Block 1: amax 448, scale 2^0; block 2: amax 480, scale 2^1 with 1.0625/2 a tie to even; block 3: amax floor 1e-4.
static void test_act_quant_hand(void) {
    uint16_t x[96];
    for (int i = 0; i < 96; i++) x[i] = bf16_of(i < 64 ? 0.25f : 0x1p-17f);
    x[0] = bf16_of(448), x[1] = bf16_of(1), x[2] = bf16_of(-2);
    x[32] = bf16_of(480), x[33] = bf16_of(1.0625f), x[34] = bf16_of(-3.25f);
    uint8_t q[96], s[3];
    dsf_err e;
    TEST_ASSERT(dsf_block_quant_cpu(pool, &quant_geoms[1], DSF_QUANT_FP8, 32, x, q, s, 1, 96, &e) == 0);
    TEST_ASSERT(s[0] == 127 && s[1] == 128 && s[2] == 105);
    TEST_ASSERT(q[0] == 0x7E && q[1] == 0x38 && q[2] == 0xC0 && q[3] == 0x28);
    TEST_ASSERT(q[32] == 0x77 && q[33] == 0x30 && q[34] == 0xBD && q[35] == 0x20);
    TEST_ASSERT(q[64] == 0x60 && q[95] == 0x60);
    uint8_t q128[128], s128[1];
    uint16_t x128[128];
    for (int i = 0; i < 128; i++) x128[i] = i < 96 ? x[i] : bf16_of(-0.5f);
    TEST_ASSERT(dsf_block_quant_cpu(pool, &quant_geoms[2], DSF_QUANT_FP8, 128, x128, q128, s128, 1, 128, &e) == 0);
    TEST_ASSERT(s128[0] == 128 && q128[0] == 0x76 && q128[1] == 0x30 && q128[127] == 0xA8);
}

// e2m1 ties of spec §3.0 at scale 1 (amax 6), and an e4m3 scale 7/6 -> 1.125 whose codes saturate at 6.
static void test_fp4_hand(void) {
    static const float v[8] = {6, 0.25f, 0.75f, -1.25f, 2.5f, 5, -3.5f, 0.1f};
    uint16_t x[32];
    for (int i = 0; i < 32; i++) x[i] = bf16_of(i < 8 ? v[i] : 1.75f);
    uint8_t q[16], s[2];
    dsf_err e;
    TEST_ASSERT(dsf_block_quant_cpu(pool, &quant_geoms[0], DSF_QUANT_FP4_E8M0, 32, x, q, s, 1, 32, &e) == 0);
    TEST_ASSERT(s[0] == 127);
    TEST_ASSERT(q[0] == 0x07 && q[1] == 0xA2 && q[2] == 0x64 && q[3] == 0x0E && q[15] == 0x44);
    x[0] = bf16_of(7), x[1] = bf16_of(2.25f), x[16] = bf16_of(3), x[17] = bf16_of(-0.375f), x[18] = bf16_of(0.125f);
    TEST_ASSERT(dsf_block_quant_cpu(pool, &quant_geoms[2], DSF_QUANT_FP4_E4M3, 16, x, q, s, 1, 32, &e) == 0);
    TEST_ASSERT(s[0] == 0x39 && s[1] == 0x30);
    TEST_ASSERT(q[0] == 0x47 && q[8] == 0xA7 && (q[9] & 15) == 0);
}

static void test_dequant_hand(void) {
    uint8_t q[64], s[2] = {128, 110};
    for (int i = 0; i < 64; i++) q[i] = 0x38;
    q[1] = 0xC0, q[2] = 0x80, q[3] = 0x7E, q[32] = 0x01, q[33] = 0x38;
    uint16_t y[64];
    dsf_err e;
    TEST_ASSERT(dsf_fp8_row_dequant_cpu(pool, &dequant_geoms[1], q, s, y, 1, 64, &e) == 0);
    TEST_ASSERT(y[0] == 0x4000 && y[1] == 0xC080 && y[2] == 0x8000 && y[3] == 0x4460);
    TEST_ASSERT(y[32] == 0x3280 && y[33] == 0x3700 && y[63] == 0x3700);
}

static void fill_bf16_row(uint16_t *x, int64_t count, uint64_t *rng) {
    dsf_operand op = {"x", DSF_ELEM_BF16, DSF_IN, 1, NULL, DSF_DRAW_ACT, NULL};
    dsf_case c = {"t", 1, count, 0, 32};
    dsf_draw_operand(&op, x, count, &c, rng);
}

// Every geometry against the row functions of base/quant.h, outputs poisoned first so unwritten bytes show.
static void test_quant_vs_rows(void) {
    enum { R = 7, N = 384 };
    static const struct {
        dsf_quant_kind kind;
        int blk;
    } kinds[] = {{DSF_QUANT_FP8, 32}, {DSF_QUANT_FP8, 128}, {DSF_QUANT_FP4_E8M0, 32}, {DSF_QUANT_FP4_E4M3, 16}};
    static uint16_t x[R * N];
    static float xf[R * N];
    static uint8_t q[R * N], s[R * N / 16], wq[R * N], ws[R * N / 16];
    uint64_t rng = 7;
    fill_bf16_row(x, R * N, &rng);
    for (int i = 0; i < R * N; i++) xf[i] = dsf_bf16_to_f32(x[i]);
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        int blk = kinds[k].blk, fp8 = kinds[k].kind == DSF_QUANT_FP8;
        size_t qrow = fp8 ? N : N / 2, srow = N / (size_t)blk;
        for (int r = 0; r < R; r++) {
            if (fp8)
                dsf_act_quant_row(xf + r * N, N, blk, wq + r * qrow, ws + r * srow);
            else if (kinds[k].kind == DSF_QUANT_FP4_E8M0)
                dsf_fp4_quant_e8m0_row(xf + r * N, N, wq + r * qrow, ws + r * srow);
            else
                dsf_fp4_quant_e4m3_row(xf + r * N, N, wq + r * qrow, ws + r * srow);
        }
        for (int g = 0; g < 3; g++) {
            memset(q, g & 1 ? 0xFF : 0x77, sizeof q);
            memset(s, g & 1 ? 0xFF : 0x77, sizeof s);
            dsf_err e;
            TEST_ASSERT(dsf_block_quant_cpu(pool, &quant_geoms[g], kinds[k].kind, blk, x, q, s, R, N, &e) == 0);
            TEST_ASSERT_MSG(!memcmp(q, wq, R * qrow) && !memcmp(s, ws, R * srow), "kind %d blk %d geometry %s",
                            (int)kinds[k].kind, blk, quant_geoms[g].name);
        }
    }
}

static void test_round_and_dequant_vs_elements(void) {
    enum { R = 5, N = 352 };
    static float x[R * N];
    static uint16_t y[R * N], want[R * N];
    static uint8_t q[R * N], s[R * N / 32];
    uint64_t rng = 11;
    for (int i = 0; i < R * N; i++) {
        uint32_t u = (uint32_t)dsf_rng_next(&rng);
        x[i] = f32_of_bits((u & 0x807FFFFFu) | (uint32_t)(100 + u % 56) << 23);
        q[i] = ((u >> 8) & 0x7F) == 0x7F ? 0 : (uint8_t)(u >> 8);
        if (i < R * N / 32) s[i] = (uint8_t)(112 + u % 24);
    }
    for (int g = 0; g < 3; g++) {
        dsf_err e;
        memset(y, g & 1 ? 0xFF : 0x77, sizeof y);
        TEST_ASSERT(dsf_bf16_round_cpu(pool, &round_geoms[g], x, y, R, N, &e) == 0);
        for (int i = 0; i < R * N; i++) want[i] = dsf_bf16_from_f32(x[i]);
        TEST_ASSERT_MSG(!memcmp(y, want, sizeof y), "bf16_round geometry %s", round_geoms[g].name);
        memset(y, g & 1 ? 0xFF : 0x77, sizeof y);
        TEST_ASSERT(dsf_fp8_row_dequant_cpu(pool, &dequant_geoms[g], q, s, y, R, N, &e) == 0);
        for (int i = 0; i < R * N; i++) want[i] = dsf_bf16_from_f32(dsf_e4m3_to_f32(q[i]) * dsf_e8m0_to_f32(s[i / 32]));
        TEST_ASSERT_MSG(!memcmp(y, want, sizeof y), "fp8_row_dequant geometry %s", dequant_geoms[g].name);
    }
}

static void test_refusals(void) {
    uint16_t x[64] = {0}, y[64];
    uint8_t q[64], s[4];
    float xf[64] = {0};
    dsf_err e;
    dsf_geom lanes0 = {"lanes0", 1, 0, {1, 0}}, lanes33 = {"lanes33", 1, 0, {1, 33}}, b48 = {"b48", 1, 0, {1, 48}};
    TEST_ASSERT(dsf_block_quant_cpu(pool, &quant_geoms[0], DSF_QUANT_FP8, 32, x, q, s, 1, 48, &e) == -1);
    TEST_ASSERT(strstr(e.msg, "multiple of the block 32") != NULL);
    TEST_ASSERT(dsf_block_quant_cpu(pool, &quant_geoms[0], DSF_QUANT_FP4_E8M0, 16, x, q, s, 1, 32, &e) == -1);
    TEST_ASSERT(dsf_block_quant_cpu(pool, &quant_geoms[0], DSF_QUANT_FP8, 48, x, q, s, 1, 48, &e) == -1);
    TEST_ASSERT(dsf_block_quant_cpu(pool, &lanes0, DSF_QUANT_FP8, 32, x, q, s, 1, 32, &e) == -1);
    TEST_ASSERT(dsf_block_quant_cpu(pool, &lanes33, DSF_QUANT_FP8, 32, x, q, s, 1, 32, &e) == -1);
    TEST_ASSERT(dsf_fp8_row_dequant_cpu(pool, &b48, q, s, y, 1, 64, &e) == -1);
    TEST_ASSERT(dsf_fp8_row_dequant_cpu(pool, &dequant_geoms[0], q, s, y, 1, 48, &e) == -1);
    TEST_ASSERT(dsf_bf16_round_cpu(pool, &round_geoms[0], xf, y, -1, 4, &e) == -1);
}

static const dsf_record *find(const char *name) {
    for (size_t i = 0; i < dsf_contract_record_count(); i++)
        if (!strcmp(dsf_contract_record(i)->name, name)) return dsf_contract_record(i);
    return NULL;
}

// The float64 references on hand-worked values, independent of the kernels.
static void test_references(void) {
    const dsf_record *rb = find("bf16_round"), *ra = find("act_quant_fp8"), *r4 = find("fp4_quant_e4m3");
    TEST_ASSERT(rb && ra && r4);
    if (!rb || !ra || !r4) return;
    float x[4] = {f32_of_bits(0x3F808000u), f32_of_bits(0x3F818000u), f32_of_bits(0x7F7F8000u), -1e-45f};
    double y[4], q[128], s[1];
    const void *ins[3] = {x, NULL, NULL};
    double *outs[2] = {y, NULL};
    dsf_case c = {"hand", 1, 4, 0, 0};
    rb->ref(ins, outs, &c);
    TEST_ASSERT(y[0] == 1.0 && y[1] == 1.015625 && isinf(y[2]) && y[3] == 0 && signbit(y[3]));
    uint16_t xb[128];
    for (int i = 0; i < 128; i++) xb[i] = bf16_of(i ? 1.0625f : -480);
    ins[0] = xb, outs[0] = q, outs[1] = s;
    dsf_case c8 = {"hand", 1, 128, 0, 128};
    ra->ref(ins, outs, &c8);
    TEST_ASSERT(s[0] == 2 && q[0] == -240 && q[1] == 0.5 && q[127] == 0.5);
    dsf_case c4 = {"hand", 1, 16, 0, 16};
    for (int i = 0; i < 16; i++) xb[i] = bf16_of(i ? 0.375f : 7);
    r4->ref(ins, outs, &c4);
    TEST_ASSERT(s[0] == 1.125 && q[0] == 6 && q[1] == 0.5);
}

// Gate-4 controls rely on it: suites stay within DSF_FMT_SUITE_MAX_ROWS rows and reach it.
static void test_suites_and_batch_variants(void) {
    for (size_t i = 0; i < dsf_contract_record_count(); i++) {
        const dsf_record *r = dsf_contract_record(i);
        if (strcmp(r->family, "fmt")) continue;
        int64_t most = 0;
        for (int k = 0; k < r->n_cases; k++) most = r->cases[k].rows > most ? r->cases[k].rows : most;
        TEST_ASSERT_MSG(most == DSF_FMT_SUITE_MAX_ROWS, "%s: largest case has %lld rows", r->name, (long long)most);
    }
    enum { N = 64 };
    static uint16_t x[(DSF_FMT_SUITE_MAX_ROWS + 1) * N];
    static uint8_t q[2][sizeof x / 2], s[2][sizeof x / 2 / 32];
    uint64_t rng = 3;
    fill_bf16_row(x, (DSF_FMT_SUITE_MAX_ROWS + 1) * N, &rng);
    for (int64_t rows = DSF_FMT_SUITE_MAX_ROWS; rows <= DSF_FMT_SUITE_MAX_ROWS + 1; rows++) {
        dsf_err e;
        TEST_ASSERT(dsf_block_quant_cpu_v(pool, &quant_geoms[0], DSF_QUANT_FP8, 32, x, q[0], s[0], rows, N,
                                          DSF_FMT_REAL, &e) == 0);
        TEST_ASSERT(dsf_block_quant_cpu_v(pool, &quant_geoms[0], DSF_QUANT_FP8, 32, x, q[1], s[1], rows, N,
                                          DSF_FMT_BATCH, &e) == 0);
        int same = !memcmp(q[0], q[1], (size_t)(rows * N)) && !memcmp(s[0], s[1], (size_t)(rows * N / 32));
        TEST_ASSERT_MSG(same == (rows <= DSF_FMT_SUITE_MAX_ROWS), "%lld rows: batch variant same=%d", (long long)rows,
                        same);
    }
}

int main(void) {
    pool = dsf_pool_new(4);
    TEST_RUN(test_bf16_round_hand);
    TEST_RUN(test_act_quant_hand);
    TEST_RUN(test_fp4_hand);
    TEST_RUN(test_dequant_hand);
    TEST_RUN(test_quant_vs_rows);
    TEST_RUN(test_round_and_dequant_vs_elements);
    TEST_RUN(test_refusals);
    TEST_RUN(test_references);
    TEST_RUN(test_suites_and_batch_variants);
    dsf_pool_free(pool);
    TEST_END();
}
