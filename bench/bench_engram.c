// Engram benchmark: page-cache row gather (CPU), kernels at real V4.1 dims (CUDA); prints "BENCH key value" lines.
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "base/formats.h"
#include "kern/engram/engram.h"
#include "kern/engram/engram_kern.h"
#ifdef DSF_HAVE_CUDA
#include "bench_lt.h"
#include "bench_util.h"
#endif

// The most tokens a GPU call here takes (the buffers' size).
enum { TOKENS_MAX = 4096 };

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return rng;
}

// Gather: a table file of `rows` rows in the page cache, random row ids, 2 layers x 24 rows a token.
static void bench_gather(int64_t rows) {
    char path[] = "/tmp/dsf_bench_engram_XXXXXX";
    int fd = mkstemp(path);
    size_t cb = (size_t)rows * 256, sb = (size_t)rows * 8;
    if (fd < 0 || ftruncate(fd, (off_t)(cb + sb))) return;
    uint8_t *m = mmap(NULL, cb + sb, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    for (size_t i = 0; i < cb + sb; i += 4096) m[i] = (uint8_t)i;
    munmap(m, cb + sb);
    const uint8_t *ro = mmap(NULL, cb + sb, PROT_READ, MAP_SHARED, fd, 0);
    dsf_engram_table tb[2] = {{ro, ro + cb, rows, 256}, {ro, ro + cb, rows, 256}};
    int threads[] = {1, 4, 16};
    for (int ti = 0; ti < 3; ti++) {
        dsf_pool *pool = dsf_pool_new(threads[ti]);
        for (int T = 1; T <= 4096; T *= 64) {
            int64_t *ids = malloc(sizeof(int64_t) * (size_t)T * 48);
            uint8_t *codes = malloc((size_t)T * 48 * 256), *sc = malloc((size_t)T * 48 * 8);
            double ts[21];
            dsf_err e;
            for (int r = 0; r < 21; r++) {
                for (int64_t i = 0; i < (int64_t)T * 48; i++) ids[i] = (int64_t)(next() % (uint64_t)rows);
                double t0 = now_s();
                dsf_engram_gather(pool, 0, tb, 2, 24, T, ids, codes, sc, &e);
                ts[r] = now_s() - t0;
            }
            qsort(ts, 21, sizeof ts[0], cmp_d);
            double rps = (double)T * 48 / ts[10];
            printf("BENCH gather_t%d_threads%d_us %.2f\nBENCH gather_t%d_threads%d_rows_per_s %.4g\n", T, threads[ti],
                   ts[10] * 1e6, T, threads[ti], rps);
            free(ids), free(codes), free(sc);
        }
        dsf_pool_free(pool);
    }
    munmap((void *)ro, cb + sb);
    close(fd);
    unlink(path);
}

#ifdef DSF_HAVE_CUDA
// NWC copies of the weights, used in turn, so back-to-back calls never find the last call's weights in L2.
enum { NWC = 3 };

typedef struct gpu {
    uint8_t *w[NWC], *ws[NWC], *codes, *scales, *xq, *xs;
    uint16_t *kv, *kv2, *h, *qw, *kw;
    int32_t *img;
} gpu;

enum { K = 6144, N = 25600, D = 5120, HC = 4 };

static void fill_dev(void *d, size_t n, int kind) {
    uint8_t *h = malloc(n);
    for (size_t i = 0; i < n; i++) {
        uint8_t v = (uint8_t)next();
        if (kind == 0 && (v & 0x7F) == 0x7F) v = 0x3F;
        if (kind == 1) v = (uint8_t)(114 + v % 6);
        if (kind == 2) v = (uint8_t)(110 + v % 20);
        h[i] = v;
    }
    if (kind == 3)
        for (size_t i = 0; i + 1 < n; i += 2) {
            uint16_t b = dsf_bf16_from_f32((float)((double)(next() % 2001) / 1000.0 - 1.0));
            memcpy(h + i, &b, 2);
        }
    CK(cudaMemcpy(d, h, n, cudaMemcpyHostToDevice));
    free(h);
}

typedef struct run_ctx {
    gpu *G;
    int what, T;
    const dsf_geom *g, *gg;
    unsigned calls;
} run_ctx;

// One of: 0 wkv, 1 embed_quant + wkv + gate, 2 gate; geometry g for wkv, gg for the gate.
static int run_once(void *p) {
    run_ctx *c = p;
    gpu *G = c->G;
    int T = c->T;
    dsf_err e;
    int rc = 0;
    unsigned i = c->calls++ % NWC;
    if (c->what == 1)
        rc |= dsf_engram_embed_quant_cuda(0, dsf_engram_cuda_geom(DSF_ENG_ROLE_EMBED_QUANT), G->codes, G->scales, G->xq,
                                          G->xs, T, K, &e);
    if (c->what <= 1) rc |= dsf_engram_wkv_cuda(0, c->g, G->xq, G->xs, G->w[i], G->ws[i], G->kv, T, N, K, &e);
    if (c->what >= 1)
        rc |= dsf_engram_gate_cuda(0, c->gg, G->h, G->kv, G->qw, G->kw, G->img, G->h, T, HC, D, 1e-20f, &e);
    if (rc) fprintf(stderr, "launch: %s\n", e.msg);
    return rc;
}

// Seconds a call: median over 30 trials (after 3 warm-ups) of the mean of back-to-back calls, or of one call alone.
static double time_run(gpu *G, int what, const dsf_geom *g, int T, int alone) {
    run_ctx c = {G, what, T, what == 2 ? NULL : g, what == 2 ? g : dsf_engram_cuda_gate_geom(T), 0};
    return dsf_bench_median_us(0, run_once, &c, 3, 30, alone ? 1 : T <= 64 ? 20 : 4) * 1e-6;
}

#ifdef DSF_BENCH_HAVE_LT
// A row of K values, e4m3 codes (1 byte each) or bf16 (2), as floats.
static void row_f(const void *dev, size_t row, int bf16, float *out) {
    size_t w = bf16 ? 2 : 1;
    uint8_t *h = malloc(w * K);
    CK(cudaMemcpy(h, (const uint8_t *)dev + row * w * K, w * K, cudaMemcpyDeviceToHost));
    for (int k = 0; k < K; k++) {
        uint16_t b = 0;
        if (bf16) memcpy(&b, h + 2 * k, 2);
        out[k] = bf16 ? dsf_bf16_to_f32(b) : dsf_e4m3_to_f32(h[k]);
    }
    free(h);
}

// cuBLASLt's y at 16 sampled outputs against float64 sums of the same values: a bf16 rounding plus 2^-12 of Σ|x·w|.
static int lt_check(const void *x, const void *w, const uint16_t *y, int T, int bf16) {
    float *xr = malloc(sizeof(float) * K), *wr = malloc(sizeof(float) * K);
    int bad = 0;
    for (int i = 0; i < 16 && !bad; i++) {
        int t = (int)(next() % (uint64_t)T), n = (int)(next() % N);
        uint16_t yv;
        row_f(x, (size_t)t, bf16, xr);
        row_f(w, (size_t)n, bf16, wr);
        CK(cudaMemcpy(&yv, y + (size_t)t * N + n, 2, cudaMemcpyDeviceToHost));
        double ref = 0, mag = 0;
        for (int k = 0; k < K; k++) {
            double v = (double)xr[k] * (double)wr[k];
            ref += v, mag += fabs(v);
        }
        double got = dsf_bf16_to_f32(yv);
        bad = !(fabs(got - ref) <= fabs(ref) / 256 + mag / 4096);
        if (bad) fprintf(stderr, "cuBLASLt output [%d, %d] is %g, float64 gives %g\n", t, n, got, ref);
    }
    free(xr), free(wr);
    return bad;
}

// rows x K e4m3 codes with e8m0 scales per 32 x `sg` block (sg 1: a row's own) as bf16, computed on the host.
static uint16_t *dequant_dev(const uint8_t *codes, const uint8_t *sc, size_t rows, size_t sg) {
    size_t n = rows * K, ns = (rows + sg - 1) / sg * (K / 32);
    uint8_t *hc = malloc(n), *hs = malloc(ns);
    uint16_t *hb = malloc(2 * n), *d;
    CK(cudaMemcpy(hc, codes, n, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hs, sc, ns, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; i++) {
        size_t r = i / K, k = i % K;
        hb[i] = dsf_bf16_from_f32(dsf_e4m3_to_f32(hc[i]) * dsf_e8m0_to_f32(hs[r / sg * (K / 32) + k / 32]));
    }
    CK(cudaMalloc((void **)&d, 2 * n));
    CK(cudaMemcpy(d, hb, 2 * n, cudaMemcpyHostToDevice));
    free(hc), free(hs), free(hb);
    return d;
}

// Runs fn continuously for about `s` seconds (the clocks settle where sustained work holds them).
static void soak(int (*fn)(void *), void *ctx, double s) {
    double t0 = now_s();
    while (now_s() - t0 < s) {
        for (int i = 0; i < 16; i++)
            if (fn(ctx)) exit(1);
        CK(cudaDeviceSynchronize());
    }
}

// The rounds of bench_matched: ours (c) and the opened GEMM (lt) in turn, each pair's rounds equally long.
static void matched_rounds(run_ctx *c, dsf_bench_lt *lt, int T, int rounds, int idle_s, const char *pre) {
    // The GEMM runs k calls for each of ours, so that both rounds of a pair last as long (the power limiter's window).
    double k = dsf_bench_median_us(0, run_once, c, 2, 5, 1) / dsf_bench_median_us(0, dsf_bench_lt_run, lt, 2, 5, 1);
    double flops = 2.0 * T * N * K, worst[3] = {1e9, 1e9, 1e9}, ceil[3] = {0, 0, 0};
    // Modes: short rounds after idle_s idle (10 trials of 2 calls), long ones (30 of 4), long after 2 s of itself.
    const char *mode[3] = {"short", "long", "soaked"};
    int trials[3] = {10, 30, 30}, reps[3] = {2, 4, 4};
    printf("BENCH %s_t%d_geom %s\nBENCH %s_idle_s %d\nBENCH %s_calls_ratio %.2f\n", pre, T, c->g->name, pre, idle_s,
           pre, k);
    for (int m = 0; m < 3; m++)
        for (int r = 0; r < rounds; r++) {
            double us[2];
            for (int j = 0; j < 2; j++) {
                int which = (j + r) % 2; // 0 ours, 1 cuBLASLt
                int (*fn)(void *) = which ? dsf_bench_lt_run : run_once;
                void *ctx = which ? (void *)lt : (void *)c;
                int n = which ? (int)lround(reps[m] * k) : reps[m];
                CK(cudaDeviceSynchronize());
                if (m < 2)
                    sleep((unsigned)idle_s);
                else
                    soak(fn, ctx, 2.0);
                us[which] = dsf_bench_median_us(0, fn, ctx, which ? (int)lround(3 * k) : 3, trials[m], n > 0 ? n : 1);
            }
            double tf = flops / us[1] / 1e6, ratio = us[1] / us[0];
            printf("BENCH %s_%s_r%d_wkv_us %.2f\nBENCH %s_%s_r%d_lt_TFLOPs %.1f\nBENCH %s_%s_r%d_of_lt %.3f\n", pre,
                   mode[m], r, us[0], pre, mode[m], r, tf, pre, mode[m], r, ratio);
            if (ratio < worst[m]) worst[m] = ratio;
            if (tf > ceil[m]) ceil[m] = tf;
        }
    for (int m = 0; m < 3; m++)
        printf("BENCH %s_%s_lowest_of_lt %.3f\nBENCH %s_%s_lt_highest_TFLOPs %.1f\n", pre, mode[m], worst[m], pre,
               mode[m], ceil[m]);
}

// The engine's wkv and cuBLASLt's GEMM at T tokens in alternating rounds of equal length (perf.md, "Matched rounds").
static void bench_matched(gpu *G, int T, int rounds, int idle_s, int bf16) {
    run_ctx c = {G, 0, T, dsf_engram_cuda_wkv_geom(T), dsf_engram_cuda_gate_geom(T), 0};
    dsf_bench_lt lt;
    char msg[160];
    const char *pre = bf16 ? "matched_bf16" : "matched";
    // The bf16 peer multiplies the same values dequantised once (as bench_engram_torch.py's wkv): no scales, no blocks.
    const void *x = bf16 ? (const void *)dequant_dev(G->xq, G->xs, (size_t)T, 1) : G->xq, *ws[NWC];
    uint16_t *wb = bf16 ? dequant_dev(G->w[0], G->ws[0], N, 32) : NULL;
    for (int i = 0; i < NWC; i++) ws[i] = bf16 ? (const void *)wb : G->w[i];
    for (int i = 1; bf16 && i < NWC; i++) {
        void *cp;
        CK(cudaMalloc(&cp, (size_t)2 * N * K));
        CK(cudaMemcpy(cp, wb, (size_t)2 * N * K, cudaMemcpyDeviceToDevice));
        ws[i] = cp;
    }
    if (dsf_bench_lt_open(&lt, 0, x, ws, NWC, G->kv2, T, N, K, bf16, msg, sizeof msg)) {
        printf("BENCH %s none (%s)\n", pre, msg);
    } else {
        if (dsf_bench_lt_run(&lt)) exit(1);
        CK(cudaDeviceSynchronize());
        if (lt_check(x, ws[0], G->kv2, T, bf16)) exit(1);
        matched_rounds(&c, &lt, T, rounds, idle_s, pre);
        dsf_bench_lt_close(&lt);
    }
    for (int i = 0; bf16 && i < NWC; i++) CK(cudaFree((void *)ws[i]));
    if (bf16) CK(cudaFree((void *)x));
}
#endif

// n bytes at device pointer d into dir/name; exits naming the file on failure.
static void dump_file(const char *dir, const char *name, const void *d, size_t n) {
    char path[4096];
    uint8_t *h = malloc(n);
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path || !h) {
        fprintf(stderr, "bench_engram: cannot write %s/%s (path too long or no memory)\n", dir, name);
        exit(1);
    }
    CK(cudaMemcpy(h, d, n, cudaMemcpyDeviceToHost));
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(h, 1, n, f) != n || fclose(f)) {
        fprintf(stderr, "bench_engram: cannot write %zu bytes to %s: %s\n", n, path, strerror(errno));
        exit(1);
    }
    free(h);
}

// The engine's wkv at T tokens and its inputs as raw files in dir, for bench_engram_torch.py --check.
static void dump_wkv(gpu *G, int T, const char *dir) {
    const dsf_geom *g = dsf_engram_cuda_wkv_geom(T);
    dsf_err e;
    if (dsf_engram_wkv_cuda(0, g, G->xq, G->xs, G->w[0], G->ws[0], G->kv, T, N, K, &e)) {
        fprintf(stderr, "bench_engram: wkv: %s\n", e.msg);
        exit(1);
    }
    CK(cudaDeviceSynchronize());
    dump_file(dir, "x.e4m3", G->xq, (size_t)T * K);
    dump_file(dir, "x_scale.e8m0", G->xs, (size_t)T * K / 32);
    dump_file(dir, "w.e4m3", G->w[0], (size_t)N * K);
    dump_file(dir, "w_scale.e8m0", G->ws[0], (size_t)(N / 32) * (K / 32));
    dump_file(dir, "y.bf16", G->kv, (size_t)T * N * 2);
    printf("BENCH dump_t%d_geom %s\nBENCH dump_t%d_shape %d %d %d\n", T, g->name, T, T, N, K);
}

// Every geometry at every size, or (only_T > 0) one named geometry at one size, for a profiler.
static void bench_gpu(int only_T, const char *only_geom, int matched, int idle_s, int bf16, const char *dump) {
    int dev;
    if (cudaGetDevice(&dev) != cudaSuccess) {
        printf("BENCH gpu none\n");
        if (dump) exit(1); // nothing written: a dump must not look done
        return;
    }
    gpu G;
    for (int i = 0; i < NWC; i++) {
        CK(cudaMalloc((void **)&G.w[i], (size_t)N * K));
        CK(cudaMalloc((void **)&G.ws[i], (size_t)(N / 32) * (K / 32)));
        fill_dev(G.w[i], (size_t)N * K, 0);
        fill_dev(G.ws[i], (size_t)(N / 32) * (K / 32), 1);
    }
    CK(cudaMalloc((void **)&G.codes, (size_t)TOKENS_MAX * K));
    CK(cudaMalloc((void **)&G.scales, (size_t)TOKENS_MAX * K / 32));
    CK(cudaMalloc((void **)&G.xq, (size_t)TOKENS_MAX * K));
    CK(cudaMalloc((void **)&G.xs, (size_t)TOKENS_MAX * K / 32));
    CK(cudaMalloc((void **)&G.kv, (size_t)TOKENS_MAX * N * 2));
    CK(cudaMalloc((void **)&G.kv2, (size_t)TOKENS_MAX * N * 2));
    CK(cudaMalloc((void **)&G.h, (size_t)TOKENS_MAX * HC * D * 2));
    CK(cudaMalloc((void **)&G.qw, (size_t)HC * D * 2));
    CK(cudaMalloc((void **)&G.kw, (size_t)HC * D * 2));
    CK(cudaMalloc((void **)&G.img, (size_t)TOKENS_MAX * 4));
    CK(cudaMemset(G.img, 0, (size_t)TOKENS_MAX * 4));
    fill_dev(G.codes, (size_t)TOKENS_MAX * K, 0);
    fill_dev(G.scales, (size_t)TOKENS_MAX * K / 32, 2);
    fill_dev(G.h, (size_t)TOKENS_MAX * HC * D * 2, 3);
    fill_dev(G.qw, (size_t)HC * D * 2, 3);
    fill_dev(G.kw, (size_t)HC * D * 2, 3);
    dsf_err e;
    if (dsf_engram_embed_quant_cuda(0, dsf_engram_cuda_geom(DSF_ENG_ROLE_EMBED_QUANT), G.codes, G.scales, G.xq, G.xs,
                                    TOKENS_MAX, K, &e))
        exit(1);
    if (dump) {
        dump_wkv(&G, only_T, dump);
        return;
    }
    printf("BENCH copy_GBps %.1f\n", dsf_bench_copy_gbps(0, (size_t)1 << 30, 2, 10, 1));
    if (matched) {
#ifdef DSF_BENCH_HAVE_LT
        bench_matched(&G, only_T, matched, idle_s, bf16);
#else
        printf("BENCH matched none (built without cublasLt.h)\n");
#endif
        return;
    }
    int NG;
    const dsf_geom *geoms = dsf_engram_wkv_cuda_geoms(&NG);
    // Above 256 tokens only the tokens-as-A kernels run; every size checks the first geometry against the last.
    if (only_T > 0 && only_geom) {
        for (int gi = 0; gi < NG; gi++)
            if (!strcmp(geoms[gi].name, only_geom)) {
                printf("BENCH wkv_t%d_%s_us %.2f\n", only_T, only_geom, time_run(&G, 0, &geoms[gi], only_T, 0) * 1e6);
                return;
            }
        fprintf(stderr, "bench_engram: no geometry %s\n", only_geom);
        exit(2);
    }
    int Ts[] = {1, 8, 64, 4096}, nT = 4;
    if (only_T > 0) Ts[0] = only_T, nT = 1;
    for (int ti = 0; ti < nT; ti++) {
        int T = Ts[ti];
        double best = 1e9, bcap = -1;
        const char *bname = "";
        for (int gi = 0; gi < NG; gi++) {
            if (T > 256 && geoms[gi].p[0] == 3) continue;
            long long c0 = dsf_bench_power_capped_ns();
            double t = time_run(&G, 0, &geoms[gi], T, 0);
            long long c1 = dsf_bench_power_capped_ns();
            printf("BENCH wkv_t%d_%s_us %.2f\n", T, geoms[gi].name, t * 1e6);
            if (t < best) best = t, bname = geoms[gi].name, bcap = dsf_bench_capped_ms(c0, c1);
        }
        const dsf_geom *bg = NULL;
        for (int gi = 0; gi < NG; gi++)
            if (!strcmp(geoms[gi].name, bname)) bg = &geoms[gi];
        double bytes = (double)N * K + (double)(N / 32) * (K / 32) + (double)T * K * 1.03 + (double)T * N * 2;
        double flops = 2.0 * T * N * K;
        printf("BENCH wkv_t%d_best %s\nBENCH wkv_t%d_us %.2f\nBENCH wkv_t%d_GBps %.1f\nBENCH wkv_t%d_TFLOPs %.1f\n", T,
               bname, T, best * 1e6, T, bytes / best / 1e9, T, flops / best / 1e12);
        printf("BENCH wkv_t%d_alone_us %.2f\n", T, time_run(&G, 0, bg, T, 1) * 1e6);
        // How long power held the clocks down while the best geometry was timed (-1: NVML cannot tell).
        printf("BENCH wkv_t%d_best_power_capped_ms %.1f\n", T, bcap);
        // The layer as the engine runs it: its own wkv geometry for T tokens, not this run's fastest.
        const dsf_geom *eg = dsf_engram_cuda_wkv_geom(T);
        double tl = time_run(&G, 1, eg, T, 0);
        double lbytes = bytes + (double)T * K * 1.03 * 2 + (double)T * HC * D * 4 + (double)T * N * 2;
        printf("BENCH layer_t%d_us %.2f\nBENCH layer_t%d_GBps %.1f\n", T, tl * 1e6, T, lbytes / tl / 1e9);
        printf("BENCH layer_t%d_wkv_geom %s\n", T, eg->name);
        int NGG;
        const dsf_geom *gg = dsf_engram_gate_cuda_geoms(&NGG);
        for (int gi = 0; gi < NGG; gi++)
            printf("BENCH gate_t%d_%s_us %.2f\n", T, gg[gi].name, time_run(&G, 2, &gg[gi], T, 0) * 1e6);
        size_t yb = (size_t)T * N * 2;
        uint16_t *y1 = malloc(yb), *y2 = malloc(yb);
        if (dsf_engram_wkv_cuda(0, &geoms[0], G.xq, G.xs, G.w[0], G.ws[0], G.kv, T, N, K, &e) ||
            dsf_engram_wkv_cuda(0, &geoms[NG - 1], G.xq, G.xs, G.w[0], G.ws[0], G.kv2, T, N, K, &e))
            exit(1);
        CK(cudaMemcpy(y1, G.kv, yb, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(y2, G.kv2, yb, cudaMemcpyDeviceToHost));
        printf("BENCH wkv_t%d_%s_equals_%s %d\n", T, geoms[0].name, geoms[NG - 1].name, memcmp(y1, y2, yb) == 0);
        free(y1), free(y2);
    }
}
#endif

// bench_engram [ROWS [TOKENS [GEOMETRY | matched[_bf16] [ROUNDS [IDLE]] | dump DIR]]]: gather rows; one size; a case.
int main(int argc, char **argv) {
    int64_t rows = argc > 1 ? atoll(argv[1]) : 4000000;
    int only_T = argc > 2 ? atoi(argv[2]) : 0;
    if (argc > 2 && (only_T < 1 || only_T > TOKENS_MAX)) {
        fprintf(stderr, "bench_engram: TOKENS is %s; it must be 1 to %d\n", argv[2], TOKENS_MAX);
        return 2;
    }
    if (only_T <= 0) {
        printf("BENCH gather_table_rows %lld\n", (long long)rows);
        bench_gather(rows);
    }
#ifdef DSF_HAVE_CUDA
    int bf16 = argc > 3 && !strcmp(argv[3], "matched_bf16"), m = argc > 3 && (bf16 || !strcmp(argv[3], "matched"));
    int matched = m ? (argc > 4 ? atoi(argv[4]) : 3) : 0, idle_s = argc > 5 ? atoi(argv[5]) : 3;
    if (m && (only_T < 1 || matched < 1 || matched > 16 || idle_s < 0)) {
        fprintf(stderr, "bench_engram: matched needs TOKENS, 1 to 16 ROUNDS and IDLE seconds of 0 or more\n");
        return 2;
    }
    const char *dump = argc > 3 && !strcmp(argv[3], "dump") ? argv[4] : NULL;
    if (argc > 3 && !strcmp(argv[3], "dump") && (only_T < 1 || argc < 5)) {
        fprintf(stderr, "bench_engram: dump needs TOKENS and a directory\n");
        return 2;
    }
    bench_gpu(only_T, matched || dump ? NULL : argc > 3 ? argv[3] : NULL, matched, idle_s, bf16, dump);
#else
    if (argc > 3) {
        fprintf(stderr, "bench_engram: %s needs a CUDA build\n", argv[3]);
        return 2;
    }
#endif
    return 0;
}
