// Compressor speed: decode (1, 8, 64 streams; q = at a non-emitting position), 4096-token prefill; docs/perf.md.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kern/compress/compress_internal.h"

#ifndef DSF_HAVE_CUDA
int main(void) {
    printf("bench_compress: built without CUDA\n");
    return 0;
}
#else
#include "bench_probes.h"
#include "bench_util.h"

enum { REPS = 20, TRIALS = 15 };

// Median over TRIALS of the mean time of REPS back-to-back calls, in microseconds.
typedef int (*call_fn)(void *ctx);
static double time_us(cudaStream_t st, call_fn fn, void *ctx) {
    return dsf_bench_median_us(st, fn, ctx, 3, TRIALS, REPS);
}

typedef struct bctx {
    cudaStream_t st;
    dsf_cmp_layer L;
    dsf_cmp_batch b;
    void *scratch;
    size_t scratch_bytes;
    float *probe;
    const void *rsrc; // cmp_read_probe's bytes (rn16 vectors), blocks and its 3 words (ticket, join)
    int64_t rn16;
    int rblocks;
    unsigned *rscr;
} bctx;

static dsf_geom geom; // dsf_cmp_geom_cuda, or the path and tile given on the command line

static int run_cmp(void *p) {
    bctx *c = p;
    dsf_err e = {{0}};
    if (dsf_cmp_run_cuda(c->st, &geom, &c->L, &c->b, c->scratch, c->scratch_bytes, &e)) {
        fprintf(stderr, "compressor: %s\n", e.msg);
        return -1;
    }
    return 0;
}
static int run_probe(void *p) {
    bctx *c = p;
    dsf_err e = {{0}};
    return dsf_bench_fma_probe(c->st, 132 * 16, 4096, c->probe, &e);
}

static int run_read(void *p) {
    bctx *c = p;
    dsf_err e = {{0}};
    if (dsf_bench_read_probe(c->st, c->rblocks, c->rsrc, c->rn16, c->rscr, &e)) {
        fprintf(stderr, "read probe: %s\n", e.msg);
        return -1;
    }
    return 0;
}
static double graph_us(cudaStream_t st, call_fn fn, void *ctx) {
    return dsf_bench_graph_median_us(st, fn, ctx, 3, TRIALS, REPS);
}

// The read probe over `bytes` (at most 64 MB): best of four grids by stream and as a graph; 16 blocks as a graph.
static void read_probe(bctx *c, double bytes, double *st_us, double *graph, double *g16) {
    static const int grids[] = {132, 264, 528, 1056};
    c->rn16 = (int64_t)((bytes < (64 << 20) ? bytes : (64 << 20)) / 16);
    c->rblocks = 16;
    *g16 = graph_us(c->st, run_read, c);
    *st_us = *graph = 1e30;
    for (int i = 0; i < 4; i++) {
        c->rblocks = grids[i];
        double s = time_us(c->st, run_read, c), g = graph_us(c->st, run_read, c);
        *st_us = s < *st_us ? s : *st_us, *graph = g > 0 && g < *graph ? g : *graph;
    }
    if (*graph > 1e29) *graph = -1.0;
}

// Fills n bf16 at d with values seeded by n alone, so a refill restores the same contents.
static void dev_fill(void *d, size_t n) {
    uint16_t *h = malloc(n * 2);
    uint64_t s = 0x9E3779B97F4A7C15ull ^ n;
    for (size_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        h[i] = dsf_bf16_from_f32(((float)(s >> 40) / 16777216.0f - 0.5f) * 0.05f);
    }
    CK(cudaMemcpy(d, h, n * 2, cudaMemcpyHostToDevice));
    free(h);
}
static void *dev_rand(size_t n) {
    void *d;
    CK(cudaMalloc(&d, n * 2 + 16));
    dev_fill(d, n);
    return d;
}

// 64-bit FNV-1a of n device bytes, continuing from h.
static uint64_t fnv_dev(uint64_t h, const void *d, size_t n) {
    unsigned char *p = malloc(n);
    CK(cudaMemcpy(p, d, n, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001B3ull;
    free(p);
    return h;
}

// One call on freshly reset rings, entries, keys and scratch; the hash of everything it writes.
static uint64_t digest(bctx *c, void *rings, size_t ring_n, void *kv, size_t kv_bytes, void *ik, size_t ik_bytes) {
    dev_fill(rings, ring_n);
    CK(cudaMemset(kv, 0, kv_bytes));
    CK(cudaMemset(ik, 0, ik_bytes));
    CK(cudaMemset(c->scratch, 0, c->scratch_bytes));
    if (run_cmp(c)) exit(1);
    CK(cudaStreamSynchronize(c->st));
    return fnv_dev(fnv_dev(fnv_dev(0xCBF29CE484222325ull, rings, ring_n * 2), kv, kv_bytes), ik, ik_bytes);
}

typedef struct variant {
    const char *name;
    int ratio, overlap, v41, D, d;
    dsf_cmp_quant q;
} variant;

int main(int argc, char **argv) {
    static const variant vs[] = {
        {"v41_r2", 2, 0, 1, 5120, 512, DSF_CMP_Q_FP4_E4M3},  {"v41_r1", 1, 0, 1, 5120, 512, DSF_CMP_Q_FP4_E4M3},
        {"v4_r4", 4, 1, 0, 4096, 512, DSF_CMP_Q_FP8_NOPE},   {"v4_r4_idx", 4, 1, 0, 4096, 128, DSF_CMP_Q_HAD_FP4},
        {"v4_r128", 128, 0, 0, 4096, 512, DSF_CMP_Q_FP8_NOPE},
    };
    int rows_of[] = {1, 8, 64, 4096, 1, 8, 64}, n_rows = 7;
    geom = dsf_cmp_geom_cuda;
    if (argc > 2) geom.p[0] = atoi(argv[2]);
    if (geom.p[0] >= 2) geom.dyn_smem = 0; // the default memory stages the fused GEMV; a tiled SGEMM would take it
    if (argc > 3) geom.p[1] = atoi(argv[3]);
    if (argc > 4) rows_of[0] = atoi(argv[4]), n_rows = 1;
    if (argc > 5) geom.p[3] = atoi(argv[5]);
    if (argc > 6) geom.p[4] = atoi(argv[6]);
    if (argc > 7) geom.p[2] = atoi(argv[7]);
    int bad = geom.p[0] < 0 || geom.p[0] > 3 || geom.p[1] < 0 || geom.p[1] > 3 || geom.p[3] < 0 || geom.p[4] < 0 ||
              geom.p[4] > DSF_CMP_KEY_BLOCKS_MAX || geom.p[2] < 0 || geom.p[2] > 8;
    if (argc > 8 || bad || geom.p[3] > DSF_CMP_FUSED_MAX_ROWS || rows_of[0] < 1 || rows_of[0] > 4096) {
        fprintf(stderr, "usage: bench_compress [VARIANT [PATH 0-3 [TILE 0-3 [ROWS 1-4096 [GEMV_ROWS 0-64 "
                        "[KEY_BLOCKS 0-16 [ENTRIES 0-8]]]]]]]\n");
        return 2;
    }
    int dev;
    if (cudaGetDevice(&dev) != cudaSuccess) {
        printf("BENCH gpu none\n");
        return 0;
    }
    bctx c;
    memset(&c, 0, sizeof c);
    CK(cudaStreamCreate(&c.st));
    CK(cudaMalloc((void **)&c.probe, 16));
    double copy_gbs = dsf_bench_copy_gbps(c.st, (size_t)1 << 30, 3, TRIALS, REPS);
    double fma_tf = 132.0 * 16 * 256 * 4096 * 8 * 2 / (time_us(c.st, run_probe, &c) * 1e6);
    printf("copy %.0f GB/s (read+write), fp32 FMA %.1f TFLOP/s; path %d tile %d gemv %d key blocks %d entries %d\n",
           copy_gbs, fma_tf, geom.p[0], geom.p[1], geom.p[3], geom.p[4], geom.p[2]);
    // What any one-launch call pays: the bare launch and ticket, by stream and from a CUDA graph (perf.md, issue 4).
    void *rbuf;
    CK(cudaMalloc(&rbuf, (size_t)64 << 20));
    CK(cudaMemset(rbuf, 1, (size_t)64 << 20));
    CK(cudaMalloc((void **)&c.rscr, 16));
    CK(cudaMemset(c.rscr, 0, 16));
    c.rsrc = rbuf;
    for (int k = 0; k < 3; k++) { // an empty kernel of 1 and 132 blocks, then 132 blocks meeting at the ticket
        static const char *what[] = {"empty_1", "empty_132", "ticket_132"};
        c.rn16 = k < 2 ? -1 : 0, c.rblocks = k ? 132 : 1;
        printf("BENCH launch_%s_us %.2f\nBENCH launch_%s_graph_us %.2f\n", what[k], time_us(c.st, run_read, &c),
               what[k], graph_us(c.st, run_read, &c));
    }
    printf("%-10s %5s %10s %10s %10s %9s %8s %8s %8s\n", "variant", "rows", "median_us", "MB", "GFLOP", "GB/s",
           "bw_ratio", "TFLOP/s", "fma_rat");
    for (size_t vi = 0; vi < sizeof vs / sizeof vs[0]; vi++) {
        const variant *v = &vs[vi];
        if (argc > 1 && !strstr(v->name, argv[1])) continue;
        dsf_cmp_layer *L = &c.L;
        memset(L, 0, sizeof *L);
        L->ratio = v->ratio, L->overlap = v->overlap, L->dim = v->D, L->d = v->d, L->quant = v->q;
        L->ik = v->v41 ? 128 : 0, L->cap = dsf_cmp_ring_cap(v->ratio, v->overlap, 6), L->eps = 1e-6f;
        dsf_cmp_rope_freqs(160000.0, 16.0, 32.0, 1.0, 65536, L->freq);
        int C = dsf_cmp_channels(L), O = dsf_cmp_proj_outputs(L);
        L->w.wkv = dev_rand((size_t)C * v->D);
        L->w.wgate = v->ratio > 1 ? dev_rand((size_t)C * v->D) : NULL;
        L->w.norm = dev_rand((size_t)v->d);
        if (!v->v41) {
            float *ape;
            CK(cudaMalloc((void **)&ape, sizeof(float) * (size_t)(v->ratio * C)));
            CK(cudaMemset(ape, 0, sizeof(float) * (size_t)(v->ratio * C)));
            L->w.ape = ape;
        }
        if (L->ik) L->w.wk = dev_rand((size_t)L->ik * v->d), L->w.k_norm = dev_rand((size_t)L->ik);
        for (int ri = 0; ri < n_rows; ri++) {
            int rows = rows_of[ri], pre = ri == 3 || (n_rows == 1 && rows > 64), S = pre ? 1 : rows, len = rows / S;
            int quiet = ri > 3;
            if (quiet && v->ratio == 1) continue;
            int64_t E = dsf_cmp_entry_slots(v->ratio, len);
            size_t rf = dsf_cmp_ring_floats(L);
            int32_t *row0 = malloc(sizeof(int32_t) * (S + 1));
            int64_t *pos = malloc(sizeof(int64_t) * S), *j0 = malloc(sizeof(int64_t) * S);
            void **ptr = malloc(sizeof(void *) * 3 * S);
            size_t ring_n = (rf ? rf : 1) * (size_t)S * 2, kv_bytes = 2 * (size_t)(E * v->d * S);
            size_t ik_bytes = 2 * (size_t)(E * 128 * S) + 2;
            float *rings = dev_rand(ring_n);
            uint16_t *kv, *ik;
            CK(cudaMalloc((void **)&kv, kv_bytes));
            CK(cudaMalloc((void **)&ik, ik_bytes));
            for (int s = 0; s <= S; s++) {
                row0[s] = s * len;
                if (s == S) break;
                pos[s] = pre ? 0 : (int64_t)(1000 + s) * v->ratio + v->ratio - 1 - quiet;
                j0[s] = pos[s] / v->ratio;
                ptr[s] = rings + (size_t)s * rf, ptr[S + s] = kv + (size_t)(s * E * v->d), ptr[2 * S + s] = ik + s * E * 128;
            }
            void *d_row0, *d_pos, *d_j0, *d_ptr, *x = dev_rand((size_t)rows * v->D);
            CK(cudaMalloc(&d_row0, 4 * (S + 1)));
            CK(cudaMalloc(&d_pos, 8 * S));
            CK(cudaMalloc(&d_j0, 8 * S));
            CK(cudaMalloc(&d_ptr, sizeof(void *) * 3 * S));
            CK(cudaMemcpy(d_row0, row0, 4 * (S + 1), cudaMemcpyHostToDevice));
            CK(cudaMemcpy(d_pos, pos, 8 * S, cudaMemcpyHostToDevice));
            CK(cudaMemcpy(d_j0, j0, 8 * S, cudaMemcpyHostToDevice));
            CK(cudaMemcpy(d_ptr, ptr, sizeof(void *) * 3 * S, cudaMemcpyHostToDevice));
            dsf_cmp_batch b = {S, rows, len, x, d_row0, d_pos, (float *const *)d_ptr,
                               (uint16_t *const *)d_ptr + S, (uint16_t *const *)d_ptr + 2 * S, d_j0};
            c.b = b;
            c.scratch_bytes = dsf_cmp_scratch_bytes(L, rows);
            CK(cudaMalloc(&c.scratch, c.scratch_bytes));
            CK(cudaMemset(c.scratch, 0, c.scratch_bytes));
            long long cap0 = dsf_bench_power_capped_ns();
            double us = time_us(c.st, run_cmp, &c);
            long long cap1 = dsf_bench_power_capped_ns();
            int64_t em = pre ? rows / v->ratio : quiet ? 0 : S;
            double bytes = 2.0 * O * v->D + 2.0 * rows * v->D + (v->ratio > 1 ? 4.0 * O * (rows < S * L->cap ? rows : S * L->cap) : 0) +
                           2.0 * em * (v->d + L->ik) + (L->ik && em ? 2.0 * L->ik * v->d : 0) +
                           (pre ? 0.0 : 8.0 * em * v->d * ((v->overlap ? 2 : 1) * v->ratio - 1));
            double flops = 2.0 * rows * O * v->D + 2.0 * em * L->ik * v->d;
            printf("%-10s %4d%c %10.2f %10.2f %10.3f %9.0f %8.2f %8.2f %8.2f\n", v->name, rows, quiet ? 'q' : ' ', us, bytes / 1e6, flops / 1e9,
                   bytes / (us * 1e3), (bytes / (copy_gbs * 1e3)) / us, flops / (us * 1e6), flops / (us * 1e6) / fma_tf);
            // How long power held the clocks down while this row was timed (-1: NVML cannot tell; bench_util.h).
            printf("BENCH %s_%d%s_power_capped_ms %.1f\n", v->name, rows, quiet ? "q" : "",
                   dsf_bench_capped_ms(cap0, cap1));
            if (!pre) // decode calls from a CUDA graph, as an engine that captures its decode step would launch them
                printf("BENCH %s_%d%s_graph_us %.2f\n", v->name, rows, quiet ? "q" : "", graph_us(c.st, run_cmp, &c));
            if (!pre && !quiet && rows == 1) { // the least a call reading the same bytes can take (the read probe)
                double rs, rg, r16;
                read_probe(&c, bytes, &rs, &rg, &r16);
                printf("BENCH %s_1_read_probe_us %.2f\nBENCH %s_1_read_probe_graph_us %.2f\n", v->name, rs, v->name,
                       rg);
                printf("BENCH %s_1_read_probe_16_blocks_graph_us %.2f\n", v->name, r16);
            }
            uint64_t h = digest(&c, rings, ring_n, kv, kv_bytes, ik, ik_bytes);
            printf("BENCH %s_%d%s_digest %016llx\n", v->name, rows, quiet ? "q" : "", (unsigned long long)h);
            if (digest(&c, rings, ring_n, kv, kv_bytes, ik, ik_bytes) != h)
                printf("BENCH %s_%d%s_digest_unstable 1\n", v->name, rows, quiet ? "q" : "");
            cudaFree(c.scratch), cudaFree(x), cudaFree(d_row0), cudaFree(d_pos), cudaFree(d_j0), cudaFree(d_ptr);
            cudaFree(rings), cudaFree(kv), cudaFree(ik);
            free(row0), free(pos), free(j0), free(ptr);
        }
    }
    cudaFree(rbuf), cudaFree(c.rscr);
    return 0;
}
#endif
