// The Engram staging object on CUDA: gathered rows reach the consumer stream intact, in order; skips without a GPU.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "contract/device.h"
#include "kern/engram/engram_stage.h"
#include "test.h"
#include "test_engram_util.h"

#ifdef DSF_HAVE_CUDA
#include <cuda_runtime.h>

#include "io/bind.h"
#include "kern/engram/engram.h"

#define CK(call) TEST_ASSERT_MSG((call) == cudaSuccess, "%s: %s", #call, cudaGetErrorString(cudaGetLastError()))

static char dir[] = "/tmp/dsf_engram_stage_XXXXXX";

static void *dev_buf(size_t n) {
    void *p = NULL;
    CK(cudaMalloc(&p, n ? n : 1));
    return p;
}

// Copies n device bytes on the consumer stream into dst (allocated beforehand), so the read is ordered like a kernel's.
static void read_on(cudaStream_t s, void *dst, const void *src, size_t n) {
    if (n) CK(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, s));
}

// Downloads a read_on copy and compares it with want; returns 1 when equal.
static int same_as(void *dev, const uint8_t *want, size_t n) {
    uint8_t *got = malloc(n ? n : 1);
    CK(cudaMemcpy(got, dev, n, cudaMemcpyDeviceToHost));
    int same = memcmp(got, want, n) == 0;
    free(got);
    return same;
}

static void test_rounds_tiny(void) {
    test_engram_tiny tt;
    dsf_err e = {{0}};
    TEST_ASSERT_MSG(test_engram_tiny_open(dir, &tt, &e) == 0, "%s", e.msg);
    if (!tt.c) return;
    dsf_ckpt *c = tt.c;
    const dsf_args *a = &c->args;
    dsf_engram_map m = tt.m;
    dsf_engram_hash hs = tt.hs;
    dsf_engram_table *tb = tt.tb;
    int L = hs.n_layers, C = hs.cols, hd = a->engram_head_dim;
    enum { MAX_T = 16, ROUNDS = 7 };
    static const int64_t round_tokens[ROUNDS] = {5, 16, 1, 11, 16, 3, 8};
    dsf_engram_stage *st = NULL;
    TEST_ASSERT_MSG(dsf_engram_stage_open(MAX_T, L, C, hd, hd / 32, &st, &e) == 0, "%s", e.msg);
    if (!st) return;
    TEST_ASSERT(dsf_engram_stage_max_tokens(st) == MAX_T);
    cudaStream_t cons;
    CK(cudaStreamCreateWithFlags(&cons, cudaStreamNonBlocking));
    size_t code_tok = (size_t)L * C * hd, scale_tok = (size_t)L * C * (hd / 32);
    uint8_t *want_c = malloc(code_tok * MAX_T), *want_s = malloc(scale_tok * MAX_T);
    void *got_c = dev_buf(code_tok * MAX_T), *got_s = dev_buf(scale_tok * MAX_T);
    int64_t rows[MAX_T * DSF_ENGRAM_MAX_LAYERS * DSF_ENGRAM_MAX_COLS];
    int32_t tok[MAX_T];
    dsf_engram_hist hist;
    dsf_engram_hist_init(&hist, 0);
    dsf_pool *pool = dsf_pool_new(2);
    int64_t pos = 0;
    for (int r = 0; r < ROUNDS; r++) {
        int slot = r % DSF_ENGRAM_STAGE_SLOTS;
        int64_t T = round_tokens[r];
        for (int64_t t = 0; t < T; t++) tok[t] = (int32_t)(((pos + t) * 7919 + 13) % 129280);
        TEST_ASSERT_MSG(dsf_engram_hist_step(&hs, &m, &hist, pos, T, tok, NULL, rows, &e) == 0, "%s", e.msg);
        pos += T;
        dsf_engram_stage_bufs h;
        TEST_ASSERT_MSG(dsf_engram_stage_host(st, slot, &h, &e) == 0, "%s", e.msg);
        TEST_ASSERT(dsf_engram_gather(pool, 0, tb, L, C, T, rows, h.codes, h.scales, &e) == 0);
        TEST_ASSERT(dsf_engram_gather(pool, 1, tb, L, C, T, rows, want_c, want_s, &e) == 0);
        TEST_ASSERT_MSG(dsf_engram_stage_upload(st, slot, T, cons, &e) == 0, "%s", e.msg);
        dsf_engram_stage_bufs d = dsf_engram_stage_device(st, slot);
        read_on(cons, got_c, d.codes, code_tok * (size_t)T);
        read_on(cons, got_s, d.scales, scale_tok * (size_t)T);
        TEST_ASSERT_MSG(dsf_engram_stage_release(st, slot, cons, &e) == 0, "%s", e.msg);
        CK(cudaStreamSynchronize(cons));
        TEST_ASSERT_MSG(same_as(got_c, want_c, code_tok * (size_t)T), "round %d (slot %d, %lld tokens): codes differ",
                        r, slot, (long long)T);
        TEST_ASSERT_MSG(same_as(got_s, want_s, scale_tok * (size_t)T), "round %d (slot %d, %lld tokens): scales differ",
                        r, slot, (long long)T);
    }
    e.msg[0] = 0;
    TEST_ASSERT(dsf_engram_stage_upload(st, 0, MAX_T + 1, cons, &e) != 0);
    TEST_ASSERT_MSG(strstr(e.msg, "17 tokens") && strstr(e.msg, "16"), "message: %s", e.msg);
    TEST_ASSERT(dsf_engram_stage_upload(st, 2, 1, cons, &e) != 0 && strstr(e.msg, "slot 2"));
    TEST_ASSERT(dsf_engram_stage_release(st, 1, cons, &e) != 0 && strstr(e.msg, "without an upload"));
    TEST_ASSERT(dsf_engram_stage_upload(st, 1, 2, cons, &e) == 0);
    TEST_ASSERT(dsf_engram_stage_upload(st, 1, 2, cons, &e) != 0 && strstr(e.msg, "released"));
    TEST_ASSERT(dsf_engram_stage_release(st, 1, cons, &e) == 0);
    CK(cudaStreamSynchronize(cons));
    printf("     %d rounds of 1..%d tokens, %d layers x %d cols x %d bytes, alternating slots\n", ROUNDS, MAX_T, L, C,
           hd);
    CK(cudaStreamDestroy(cons));
    dsf_engram_stage_close(st);
    free(want_c), free(want_s);
    CK(cudaFree(got_c));
    CK(cudaFree(got_s));
    dsf_pool_free(pool);
    dsf_engram_hist_free(&hist);
    dsf_engram_map_free(&m);
    dsf_ckpt_close(c);
}

static void CUDART_CB hold_stream(void *ms) { usleep((useconds_t)(*(int *)ms) * 1000); }

// Fills back to front, so a copy still reading front to back would meet the new bytes.
static void fill_reverse(uint8_t *p, size_t n, unsigned seed) {
    for (size_t i = n; i-- > 0;) p[i] = (uint8_t)((i * 131u + seed) ^ (i >> 13));
}

// Real V4.1 sizes: the consumer waits for the copy, the host waits for the copy, the copy waits for the reader.
static void test_ordering_real(void) {
    enum { T = 2048, L = 2, C = 24, HD = 256, SB = 8 };
    dsf_engram_stage *st = NULL;
    dsf_err e = {{0}};
    TEST_ASSERT_MSG(dsf_engram_stage_open(T, L, C, HD, SB, &st, &e) == 0, "%s", e.msg);
    if (!st) return;
    cudaStream_t cons;
    CK(cudaStreamCreateWithFlags(&cons, cudaStreamNonBlocking));
    size_t nc = (size_t)T * L * C * HD, ns = (size_t)T * L * C * SB;
    uint8_t *a_c = malloc(nc), *a_s = malloc(ns), *b_c = malloc(nc), *b_s = malloc(ns);
    fill_reverse(a_c, nc, 7), fill_reverse(a_s, ns, 9), fill_reverse(b_c, nc, 77), fill_reverse(b_s, ns, 99);
    void *r1c = dev_buf(nc), *r1s = dev_buf(ns), *r2c = dev_buf(nc), *r2s = dev_buf(ns), *r3c = dev_buf(nc),
         *r3s = dev_buf(ns);
    dsf_engram_stage_bufs d = dsf_engram_stage_device(st, 0), h;
    CK(cudaMemset(d.codes, 0xA5, nc));
    CK(cudaMemset(d.scales, 0xA5, ns));
    CK(cudaDeviceSynchronize());
    TEST_ASSERT(dsf_engram_stage_host(st, 0, &h, &e) == 0);
    memcpy(h.codes, a_c, nc), memcpy(h.scales, a_s, ns);
    TEST_ASSERT(dsf_engram_stage_upload(st, 0, T, cons, &e) == 0);
    read_on(cons, r1c, d.codes, nc), read_on(cons, r1s, d.scales, ns);
    TEST_ASSERT(dsf_engram_stage_host(st, 0, &h, &e) == 0);
    fill_reverse(h.codes, nc, 77), fill_reverse(h.scales, ns, 99);
    int ms = 150;
    CK(cudaLaunchHostFunc(cons, hold_stream, &ms));
    read_on(cons, r2c, d.codes, nc), read_on(cons, r2s, d.scales, ns);
    TEST_ASSERT(dsf_engram_stage_release(st, 0, cons, &e) == 0);
    TEST_ASSERT(dsf_engram_stage_upload(st, 0, T, cons, &e) == 0);
    read_on(cons, r3c, d.codes, nc), read_on(cons, r3s, d.scales, ns);
    TEST_ASSERT(dsf_engram_stage_release(st, 0, cons, &e) == 0);
    CK(cudaStreamSynchronize(cons));
    int ok1 = same_as(r1c, a_c, nc) & same_as(r1s, a_s, ns), ok2 = same_as(r2c, a_c, nc) & same_as(r2s, a_s, ns);
    int ok3 = same_as(r3c, b_c, nc) & same_as(r3s, b_s, ns);
    TEST_ASSERT_MSG(ok1, "the consumer read before the copy, or the host wrote during it");
    TEST_ASSERT_MSG(ok2, "the next copy overwrote a slot its reader had not released");
    TEST_ASSERT_MSG(ok3, "the second round did not arrive");
    printf("     %d tokens (%zu + %zu bytes a slot): copy, host and reader ordering hold\n", T, nc, ns);
    CK(cudaStreamDestroy(cons));
    dsf_engram_stage_close(st);
    free(a_c), free(a_s), free(b_c), free(b_s);
    void *bufs[6] = {r1c, r1s, r2c, r2s, r3c, r3s};
    for (int i = 0; i < 6; i++) CK(cudaFree(bufs[i]));
}
#else
// Without CUDA the object refuses with a message, so a caller links and reports instead of crashing.
static void test_refuses_without_cuda(void) {
    dsf_engram_stage *st = NULL;
    dsf_err e = {{0}};
    TEST_ASSERT(dsf_engram_stage_open(4, 2, 24, 256, 8, &st, &e) != 0 && strstr(e.msg, "no CUDA"));
}
#endif

int main(void) {
#ifndef DSF_HAVE_CUDA
    TEST_RUN(test_refuses_without_cuda);
    if (dsf_test_failed) TEST_END();
#endif
    char why[256];
    if (!dsf_dev_available(DSF_BACKEND_CUDA, why, sizeof why)) TEST_SKIP_ALL(why);
#ifdef DSF_HAVE_CUDA
    if (!mkdtemp(dir)) TEST_SKIP_ALL("no temporary directory");
    TEST_RUN(test_rounds_tiny);
    TEST_RUN(test_ordering_real);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
#endif
    TEST_END();
}
