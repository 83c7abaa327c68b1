#include "base/pool.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/err.h"

struct dsf_pool {
    int n;
    pthread_t *threads;
    pthread_mutex_t mu;
    pthread_cond_t go, done;
    dsf_pool_fn fn;
    void *ctx;
    int active;
    long long generation;
    int pending;
    int stop;
};

typedef struct worker_arg {
    dsf_pool *p;
    int tid;
} worker_arg;

static void *worker_main(void *arg) {
    worker_arg *w = arg;
    dsf_pool *p = w->p;
    int tid = w->tid;
    long long seen = 0;
    free(w);
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stop && p->generation == seen) pthread_cond_wait(&p->go, &p->mu);
        if (p->stop) break;
        seen = p->generation;
        if (tid < p->active) {
            dsf_pool_fn fn = p->fn;
            void *ctx = p->ctx;
            int active = p->active;
            pthread_mutex_unlock(&p->mu);
            fn(ctx, tid, active);
            pthread_mutex_lock(&p->mu);
            if (--p->pending == 0) pthread_cond_signal(&p->done);
        }
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

dsf_pool *dsf_pool_new(int n) {
    if (n <= 0) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        n = c > 0 ? (int)c : 1;
    }
    dsf_pool *p = dsf_calloc(1, sizeof *p);
    p->n = n;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->go, NULL);
    pthread_cond_init(&p->done, NULL);
    p->threads = dsf_calloc((size_t)n, sizeof *p->threads);
    for (int i = 1; i < n; i++) {
        worker_arg *w = dsf_malloc(sizeof *w);
        w->p = p;
        w->tid = i;
        DSF_ASSERT(pthread_create(&p->threads[i], NULL, worker_main, w) == 0);
    }
    return p;
}

void dsf_pool_free(dsf_pool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_broadcast(&p->go);
    pthread_mutex_unlock(&p->mu);
    for (int i = 1; i < p->n; i++) pthread_join(p->threads[i], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->go);
    pthread_cond_destroy(&p->done);
    free(p->threads);
    free(p);
}

int dsf_pool_size(const dsf_pool *p) { return p->n; }

void dsf_pool_run(dsf_pool *p, int nthreads, dsf_pool_fn fn, void *ctx) {
    int n = (nthreads <= 0 || nthreads > p->n) ? p->n : nthreads;
    if (n == 1) {
        fn(ctx, 0, 1);
        return;
    }
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->ctx = ctx;
    p->active = n;
    p->pending = n - 1;
    p->generation++;
    pthread_cond_broadcast(&p->go);
    pthread_mutex_unlock(&p->mu);
    fn(ctx, 0, n);
    pthread_mutex_lock(&p->mu);
    while (p->pending > 0) pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
}

void dsf_pool_range(long long count, int tid, int n, long long *lo, long long *hi) {
    long long base = count / n, extra = count % n;
    *lo = tid * base + (tid < extra ? tid : extra);
    *hi = *lo + base + (tid < extra ? 1 : 0);
}
