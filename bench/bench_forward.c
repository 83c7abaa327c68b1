// CPU forward speed: prefill and decode tokens/s and peak memory on a checkpoint directory (docs/perf.md).
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include "engine/sample.h"
#include "model/model.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench_forward MODEL_DIR [prefill tokens] [decode steps] [threads]\n");
        return 2;
    }
    int prefill = argc > 2 ? atoi(argv[2]) : 256, decode = argc > 3 ? atoi(argv[3]) : 32;
    int threads = argc > 4 ? atoi(argv[4]) : 0;
    dsf_err e;
    dsf_model *m;
    double t0 = now();
    if (dsf_model_open(argv[1], threads, &m, &e)) {
        fprintf(stderr, "bench_forward: %s\n", e.msg);
        return 1;
    }
    double t_open = now() - t0;
    const dsf_args *a = dsf_model_args(m);
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)(prefill + decode));
    for (int i = 0; i < prefill; i++) ids[i] = (int32_t)(dsf_sample_uniform(1, i, 0) * (double)a->vocab_size);
    float *lg = malloc(sizeof(float) * (size_t)a->vocab_size);
    dsf_stream *s;
    if (dsf_stream_new(m, prefill + decode + 1, 0, &s, &e)) return 1;
    dsf_round_part p = {s, 0, prefill, ids, DSF_LOGITS_LAST, lg};
    dsf_round r = {1, &p, NULL, NULL};
    t0 = now();
    if (dsf_model_forward(m, &r, &e)) return 1;
    double t_pre = now() - t0;
    t0 = now();
    for (int i = 0; i < decode; i++) {
        ids[prefill + i] = dsf_sample(lg, a->vocab_size, 0.0f, 0, prefill + i);
        p = (dsf_round_part){s, prefill + i, 1, &ids[prefill + i], DSF_LOGITS_LAST, lg};
        if (dsf_model_forward(m, &r, &e)) return 1;
    }
    double t_dec = now() - t0;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("model %s: dim %d, %d layers, %d experts; open %.2f s\n", argv[1], a->dim, a->n_layers,
           a->n_routed_experts, t_open);
    printf("prefill %d tokens: %.3f s, %.1f tokens/s\n", prefill, t_pre, prefill / t_pre);
    printf("decode %d steps: %.3f s, %.2f tokens/s (with the fp32 head every step)\n", decode, t_dec, decode / t_dec);
    printf("peak RSS %.1f MiB\n", (double)ru.ru_maxrss / 1024.0);
    dsf_stream_free(s);
    dsf_model_close(m);
    free(ids);
    free(lg);
    return 0;
}
