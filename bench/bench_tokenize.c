#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tok/tok.h"

// Encode throughput, one thread, median of runs: the HF reference corpus (hf_corpus.txt), or the lines of a text file.
static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int unhex(const char *s, size_t n, dsf_tok_buf *raw) {
    for (size_t i = 0; i + 1 < n; i += 2) {
        unsigned v;
        if (sscanf(s + i, "%2x", &v) != 1) return -1;
        unsigned char c = (unsigned char)v;
        dsf_tok_buf_put(raw, &c, 1);
    }
    return 0;
}

int main(int argc, char **argv) {
    const char *path = dsf_tok_path(argc > 1 ? argv[1] : NULL);
    int runs = argc > 2 ? atoi(argv[2]) : 5;
    dsf_err e;
    dsf_tok *tok;
    if (dsf_tok_open(&tok, path, &e)) {
        fprintf(stderr, "bench_tokenize: %s\n", e.msg);
        return 1;
    }
    char corpus[4096];
    const char *slash = strrchr(path, '/'), *text_file = argc > 3 ? argv[3] : NULL;
    snprintf(corpus, sizeof corpus, "%.*shf_corpus.txt", slash ? (int)(slash - path + 1) : 0, path);
    if (text_file) snprintf(corpus, sizeof corpus, "%s", text_file);
    FILE *f = fopen(corpus, "r");
    if (!f) {
        fprintf(stderr, "bench_tokenize: %s is missing (run tools/tok_reference.py)\n", corpus);
        return 1;
    }
    dsf_tok_buf all = {0};
    size_t *off = NULL, n = 0, cap = 0;
    char *line = NULL;
    size_t lcap = 0;
    ssize_t len;
    while ((len = getline(&line, &lcap, f)) > 0) {
        char *tab = strchr(line, '\t');
        dsf_tok_buf raw = {0};
        if (text_file) {
            dsf_tok_buf_put(&raw, line, (size_t)len);
        } else if (line[0] == '#' || !tab || unhex(line, (size_t)(tab - line), &raw)) {
            continue;
        }
        if (n + 2 > cap) off = realloc(off, (cap = cap ? cap * 2 : 1024) * sizeof *off);
        off[n++] = all.n;
        dsf_utf8_lossy(raw.p ? raw.p : "", raw.n, &all);
        dsf_tok_buf_free(&raw);
    }
    off[n] = all.n;
    free(line);
    fclose(f);
    dsf_tok_ids ids = {0};
    double *t = calloc((size_t)runs, sizeof *t);
    size_t total_ids = 0;
    for (int r = 0; r < runs; r++) {
        double t0 = now();
        total_ids = 0;
        for (size_t i = 0; i < n; i++) {
            ids.n = 0;
            dsf_tok_encode(tok, all.p + off[i], off[i + 1] - off[i], &ids, NULL);
            total_ids += ids.n;
        }
        t[r] = now() - t0;
    }
    qsort(t, (size_t)runs, sizeof *t, cmp_double);
    double med = t[runs / 2];
    printf("dsfold encode %s: %zu strings, %.2f MB, %zu ids; median of %d runs %.3f s: %.2f MB/s, %.2f M ids/s\n",
           corpus, n, 1e-6 * (double)all.n, total_ids, runs, med, 1e-6 * (double)all.n / med,
           1e-6 * (double)total_ids / med);
    free(t);
    free(off);
    dsf_tok_ids_free(&ids);
    dsf_tok_buf_free(&all);
    dsf_tok_close(tok);
    return 0;
}
