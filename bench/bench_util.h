#ifndef DSF_BENCH_UTIL_H
#define DSF_BENCH_UTIL_H
// CUDA timing for the benches (each bench_*.c builds alone, so the shared pieces are static inline here).
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#define CK(x)                                                                                    \
    do {                                                                                         \
        cudaError_t rc_ = (x);                                                                   \
        if (rc_ != cudaSuccess) {                                                                \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(rc_)); \
            exit(1);                                                                             \
        }                                                                                        \
    } while (0)

// Running total of ns power held the GPU below its application clocks (NVML, opened at run time); -1: unknown.
static inline long long dsf_bench_power_capped_ns(void) {
    static int state; // 0 not tried, 1 ready, -1 unavailable
    static void *dev;
    static int (*viol)(void *, int, unsigned long long *);
    if (state == 0) {
        int (*init)(void) = NULL, (*by_bus)(const char *, void **) = NULL, d = 0;
        char bus[32];
        void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
        state = -1;
        if (lib) {
            *(void **)&init = dlsym(lib, "nvmlInit_v2");
            *(void **)&by_bus = dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2");
            *(void **)&viol = dlsym(lib, "nvmlDeviceGetViolationStatus");
        }
        if (init && by_bus && viol && init() == 0 && cudaGetDevice(&d) == cudaSuccess &&
            cudaDeviceGetPCIBusId(bus, (int)sizeof bus, d) == cudaSuccess && by_bus(bus, &dev) == 0)
            state = 1;
    }
    unsigned long long v[2]; // nvmlViolationTime_t: reference time (µs), violation time (ns)
    return state == 1 && viol(dev, 0, v) == 0 ? (long long)v[1] : -1; // 0: NVML_PERF_POLICY_POWER
}

// Milliseconds capped between two readings of dsf_bench_power_capped_ns; -1 where either is unknown.
static inline double dsf_bench_capped_ms(long long before, long long after) {
    return before >= 0 && after >= 0 ? (double)(after - before) * 1e-6 : -1.0;
}

static inline int dsf_bench_cmp_f(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

// Median over `trials` (at most 64) of the mean time of `reps` back-to-back calls on st, in microseconds.
static inline double dsf_bench_median_us(cudaStream_t st, int (*fn)(void *ctx), void *ctx, int warm, int trials,
                                         int reps) {
    cudaEvent_t a, b;
    float ms[64];
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    for (int w = 0; w < warm; w++)
        if (fn(ctx)) exit(1);
    for (int t = 0; t < trials; t++) {
        CK(cudaEventRecord(a, st));
        for (int i = 0; i < reps; i++)
            if (fn(ctx)) exit(1);
        CK(cudaEventRecord(b, st));
        CK(cudaEventSynchronize(b));
        CK(cudaEventElapsedTime(&ms[t], a, b));
    }
    qsort(ms, (size_t)trials, sizeof(float), dsf_bench_cmp_f);
    cudaEventDestroy(a), cudaEventDestroy(b);
    return ms[trials / 2] * 1e3 / reps;
}

typedef struct dsf_bench_graph {
    cudaStream_t st;
    cudaGraphExec_t x;
} dsf_bench_graph;

static inline int dsf_bench_graph_run(void *p) {
    dsf_bench_graph *g = p;
    return cudaGraphLaunch(g->x, g->st) != cudaSuccess;
}

// As dsf_bench_median_us with the `reps` calls captured once as a CUDA graph, launched whole; -1 if they cannot be.
static inline double dsf_bench_graph_median_us(cudaStream_t st, int (*fn)(void *ctx), void *ctx, int warm, int trials,
                                               int reps) {
    cudaGraph_t g = NULL;
    dsf_bench_graph run = {st, NULL};
    cudaError_t rc = cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal);
    int bad = 0;
    if (rc == cudaSuccess) {
        for (int i = 0; i < reps && !bad; i++) bad = fn(ctx) != 0;
        cudaError_t end = cudaStreamEndCapture(st, &g);
        if (!bad && end == cudaSuccess) rc = cudaGraphInstantiate(&run.x, g, 0);
        else rc = end;
    }
    if (bad || rc != cudaSuccess) {
        fprintf(stderr, "graph capture failed: %s\n", bad ? "a captured call failed" : cudaGetErrorString(rc));
        (void)cudaGetLastError(); // the failed capture's error is not the next launch's
        if (g) cudaGraphDestroy(g);
        return -1.0;
    }
    double us = dsf_bench_median_us(st, dsf_bench_graph_run, &run, warm, trials, 1) / reps;
    cudaGraphExecDestroy(run.x), cudaGraphDestroy(g);
    return us;
}

typedef struct dsf_bench_copy {
    cudaStream_t st;
    void *src, *dst;
    size_t bytes;
} dsf_bench_copy;

static inline int dsf_bench_copy_run(void *p) {
    dsf_bench_copy *c = p;
    return cudaMemcpyAsync(c->dst, c->src, c->bytes, cudaMemcpyDeviceToDevice, c->st) != cudaSuccess;
}

// Device-to-device copy bandwidth of `bytes` on st in GB/s, read plus write, timed as dsf_bench_median_us times.
static inline double dsf_bench_copy_gbps(cudaStream_t st, size_t bytes, int warm, int trials, int reps) {
    dsf_bench_copy c = {st, NULL, NULL, bytes};
    CK(cudaMalloc(&c.src, bytes));
    CK(cudaMalloc(&c.dst, bytes));
    CK(cudaMemset(c.src, 1, bytes));
    double us = dsf_bench_median_us(st, dsf_bench_copy_run, &c, warm, trials, reps);
    CK(cudaFree(c.src));
    CK(cudaFree(c.dst));
    return 2.0 * (double)bytes / (us * 1e3);
}

#endif
