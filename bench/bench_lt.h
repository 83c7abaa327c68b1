#ifndef DSF_BENCH_LT_H
#define DSF_BENCH_LT_H
// A peer GEMM in the benchmark's own process: cuBLASLt, e4m3 (the FP8 ceiling) or bf16, opened at run time.
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#if defined(__has_include)
#if __has_include(<cublasLt.h>)
#include <cublasLt.h>
#define DSF_BENCH_HAVE_LT 1
#endif
#endif

#ifdef DSF_BENCH_HAVE_LT
// y[T, N] bf16 = x[T, K] · w[N, K]^T, e4m3 (unit scales, no fast accumulation, as torch._scaled_mm) or bf16 (as @).
typedef struct dsf_bench_lt {
    cudaStream_t st;
    cublasLtHandle_t h;
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t la, lb, lc;
    cublasLtMatmulAlgo_t algo;
    cublasLtMatmulPreference_t p;
    void *lib, *ws, *one;
    size_t ws_bytes;
    const void *x, *const *w;
    void *y;
    int nw;
    unsigned calls;
    cublasStatus_t (*matmul)(cublasLtHandle_t, cublasLtMatmulDesc_t, const void *, const void *, cublasLtMatrixLayout_t,
                             const void *, cublasLtMatrixLayout_t, const void *, const void *, cublasLtMatrixLayout_t,
                             void *, cublasLtMatrixLayout_t, const cublasLtMatmulAlgo_t *, void *, size_t,
                             cudaStream_t);
} dsf_bench_lt;

// Frees what dsf_bench_lt_open made, whether or not it succeeded (each destroy named in the library, if opened).
static inline void dsf_bench_lt_close(dsf_bench_lt *c) {
    if (c->lib) {
#define DSF_LT_FREE(f, o)                               \
    do {                                                \
        if (o) ((__typeof__(f) *)dlsym(c->lib, #f))(o); \
    } while (0)
        DSF_LT_FREE(cublasLtMatmulPreferenceDestroy, c->p);
        DSF_LT_FREE(cublasLtMatrixLayoutDestroy, c->lc);
        DSF_LT_FREE(cublasLtMatrixLayoutDestroy, c->lb);
        DSF_LT_FREE(cublasLtMatrixLayoutDestroy, c->la);
        DSF_LT_FREE(cublasLtMatmulDescDestroy, c->op);
        DSF_LT_FREE(cublasLtDestroy, c->h);
#undef DSF_LT_FREE
        dlclose(c->lib);
    }
    if (c->ws) cudaFree(c->ws);
    if (c->one) cudaFree(c->one);
    memset(c, 0, sizeof *c);
}

// Opens cuBLASLt and plans the GEMM; the nw weight copies are used in turn. 0, or -1 with why in msg (all freed).
static inline int dsf_bench_lt_open(dsf_bench_lt *c, cudaStream_t st, const void *x, const void *const *w, int nw,
                                    void *y, int T, int N, int K, int bf16, char *msg, size_t msg_len) {
    memset(c, 0, sizeof *c);
    c->st = st, c->x = x, c->w = w, c->nw = nw, c->y = y;
    void *lib = dlopen("libcublasLt.so.13", RTLD_NOW | RTLD_LOCAL);
    if (!lib) lib = dlopen("libcublasLt.so", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return snprintf(msg, msg_len, "cannot open libcublasLt: %s", dlerror()), -1;
    c->lib = lib;
#define DSF_LT_SYM(f) ((__typeof__(f) *)dlsym(lib, #f))
    __typeof__(cublasLtCreate) *create = DSF_LT_SYM(cublasLtCreate);
    __typeof__(cublasLtMatmulDescCreate) *desc = DSF_LT_SYM(cublasLtMatmulDescCreate);
    __typeof__(cublasLtMatmulDescSetAttribute) *dset = DSF_LT_SYM(cublasLtMatmulDescSetAttribute);
    __typeof__(cublasLtMatrixLayoutCreate) *layout = DSF_LT_SYM(cublasLtMatrixLayoutCreate);
    __typeof__(cublasLtMatmulPreferenceCreate) *pref = DSF_LT_SYM(cublasLtMatmulPreferenceCreate);
    __typeof__(cublasLtMatmulPreferenceSetAttribute) *pset = DSF_LT_SYM(cublasLtMatmulPreferenceSetAttribute);
    __typeof__(cublasLtMatmulAlgoGetHeuristic) *heur = DSF_LT_SYM(cublasLtMatmulAlgoGetHeuristic);
#undef DSF_LT_SYM
    *(void **)&c->matmul = dlsym(lib, "cublasLtMatmul");
    if (!create || !desc || !dset || !layout || !pref || !pset || !heur || !c->matmul ||
        !dlsym(lib, "cublasLtMatmulPreferenceDestroy") || !dlsym(lib, "cublasLtMatrixLayoutDestroy") ||
        !dlsym(lib, "cublasLtMatmulDescDestroy") || !dlsym(lib, "cublasLtDestroy"))
        return dsf_bench_lt_close(c), snprintf(msg, msg_len, "libcublasLt lacks a function this benchmark calls"), -1;
    // Column-major: y^T [N, T] = op(A) [N, K] · x^T [K, T], A being w read as K x N and transposed (FP8 needs TN).
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    int8_t fast = 0;
    float one = 1.0f;
    cublasLtMatmulHeuristicResult_t r;
    int found = 0, step = 0;
    uint64_t ws_bytes = (uint64_t)32 << 20;
    c->ws_bytes = (size_t)ws_bytes;
    if (cudaMalloc(&c->ws, c->ws_bytes) != cudaSuccess || cudaMalloc(&c->one, sizeof one) != cudaSuccess ||
        cudaMemcpy(c->one, &one, sizeof one, cudaMemcpyHostToDevice) != cudaSuccess)
        return dsf_bench_lt_close(c), snprintf(msg, msg_len, "cannot allocate cuBLASLt's workspace"), -1;
    // Each call's status in turn; step names the first that failed (scales on the device, as torch._scaled_mm's).
    cublasStatus_t st_ = CUBLAS_STATUS_SUCCESS;
#define DSF_LT_STEP(call) \
    if (st_ == CUBLAS_STATUS_SUCCESS) step++, st_ = (call)
    DSF_LT_STEP(create(&c->h));
    DSF_LT_STEP(desc(&c->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    DSF_LT_STEP(dset(c->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    DSF_LT_STEP(dset(c->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    if (!bf16) {
        DSF_LT_STEP(dset(c->op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof fast));
        DSF_LT_STEP(dset(c->op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &c->one, sizeof c->one));
        DSF_LT_STEP(dset(c->op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &c->one, sizeof c->one));
    }
    DSF_LT_STEP(layout(&c->la, bf16 ? CUDA_R_16BF : CUDA_R_8F_E4M3, (uint64_t)K, (uint64_t)N, K));
    DSF_LT_STEP(layout(&c->lb, bf16 ? CUDA_R_16BF : CUDA_R_8F_E4M3, (uint64_t)K, (uint64_t)T, K));
    DSF_LT_STEP(layout(&c->lc, CUDA_R_16BF, (uint64_t)N, (uint64_t)T, N));
    DSF_LT_STEP(pref(&c->p));
    DSF_LT_STEP(pset(c->p, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes, sizeof ws_bytes));
    DSF_LT_STEP(heur(c->h, c->op, c->la, c->lb, c->lc, c->lc, c->p, 1, &r, &found));
#undef DSF_LT_STEP
    if (st_ != CUBLAS_STATUS_SUCCESS || found < 1)
        return dsf_bench_lt_close(c),
               snprintf(msg, msg_len, "cuBLASLt: no %s GEMM plan for %d x %d x %d (step %d, status %d, %d found)",
                        bf16 ? "bf16" : "e4m3", T, N, K, step, (int)st_, found),
               -1;
    c->algo = r.algo;
    return 0;
}

// One GEMM on the next weight copy; nonzero if cuBLASLt refuses it.
static inline int dsf_bench_lt_run(void *p) {
    dsf_bench_lt *c = p;
    float one = 1.0f, zero = 0.0f;
    const void *w = c->w[c->calls++ % (unsigned)c->nw];
    return c->matmul(c->h, c->op, &one, w, c->la, c->x, c->lb, &zero, c->y, c->lc, c->y, c->lc, &c->algo, c->ws,
                     c->ws_bytes, c->st) != CUBLAS_STATUS_SUCCESS;
}
#endif

#endif
