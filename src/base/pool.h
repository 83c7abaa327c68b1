#ifndef DSF_POOL_H
#define DSF_POOL_H

#ifdef __cplusplus
extern "C" {
#endif
// A fixed thread pool; callers divide work from (tid, n) alone, so a row's arithmetic never depends on n (R2).
typedef struct dsf_pool dsf_pool;

typedef void (*dsf_pool_fn)(void *ctx, int tid, int nthreads);

// Starts a pool of n workers (n <= 0: the number of online CPUs).
dsf_pool *dsf_pool_new(int n);
void dsf_pool_free(dsf_pool *p);
int dsf_pool_size(const dsf_pool *p);
// Runs fn on min(nthreads, size) workers (nthreads <= 0: all); the calling thread is worker 0.
void dsf_pool_run(dsf_pool *p, int nthreads, dsf_pool_fn fn, void *ctx);
// The half-open range [*lo, *hi) of `count` items that worker tid of n takes: contiguous, in order.
void dsf_pool_range(long long count, int tid, int n, long long *lo, long long *hi);

#ifdef __cplusplus
}
#endif

#endif
