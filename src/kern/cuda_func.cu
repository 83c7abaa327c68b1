// Per-function CUDA helpers of every family: the dynamic shared memory limit, early launch, the compiled resources.
#include <pthread.h>

#include "contract/contract.h"
#include "kern/cuda_check.h"

int dsf_cuda_func_attrs(const void *fn, dsf_func_attrs *out, dsf_err *e) {
    cudaFuncAttributes a;
    DSF_CUDA_TRY(e, cudaFuncGetAttributes(&a, fn));
    out->regs_per_thread = a.numRegs;
    out->static_smem = (int)a.sharedSizeBytes;
    out->max_threads_per_block = a.maxThreadsPerBlock;
    out->local_bytes = (int)a.localSizeBytes;
    return 0;
}

int dsf_cuda_sms(int *dev, int *sms, const char *k, dsf_err *e) {
    static int cache[16]; // each entry written whole, the same value by any thread (relaxed atomics)
    DSF_CUDA_TRY(e, cudaGetDevice(dev));
    if (*dev < 0 || *dev >= 16) return dsf_fail(e, "%s: device %d: only devices 0-15 are supported", k, *dev);
    int n = __atomic_load_n(&cache[*dev], __ATOMIC_RELAXED);
    if (!n) {
        DSF_CUDA_TRY(e, cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, *dev));
        __atomic_store_n(&cache[*dev], n, __ATOMIC_RELAXED);
    }
    *sms = n;
    return 0;
}

// One int per (function, device), at most 64 pairs, under the cache's own lock.
typedef struct fn_cache {
    pthread_mutex_t mu;
    const void *fn[64];
    int dev[64], val[64], n;
} fn_cache;

// The slot of (fn, d): its index, or n where absent; called under c->mu.
static int fn_slot(const fn_cache *c, const void *fn, int d) {
    int i = 0;
    while (i < c->n && (c->fn[i] != fn || c->dev[i] != d)) i++;
    return i;
}

// Stores v in slot i of (fn, d) (fn_slot's, under the same lock); a full cache keeps nothing.
static void fn_store(fn_cache *c, int i, const void *fn, int d, int v) {
    if (i < 64) c->fn[i] = fn, c->dev[i] = d, c->val[i] = v, c->n += i == c->n;
}

// 1 where fn may launch early behind the kernel before it: the device and fn's PTX are sm_90 or later; cached.
int dsf_cuda_pdl_ok(const void *fn, dsf_err *e) {
    static fn_cache c = {PTHREAD_MUTEX_INITIALIZER};
    int d = 0, major = 0, i, r;
    DSF_CUDA_TRY(e, cudaGetDevice(&d));
    pthread_mutex_lock(&c.mu);
    i = fn_slot(&c, fn, d);
    r = i < c.n ? c.val[i] : -1;
    pthread_mutex_unlock(&c.mu);
    if (r >= 0) return r;
    cudaFuncAttributes a;
    DSF_CUDA_TRY(e, cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, d));
    DSF_CUDA_TRY(e, cudaFuncGetAttributes(&a, fn)); // an image JIT-compiled from older PTX has no griddepcontrol.wait
    r = major >= 9 && a.ptxVersion >= 90;
    pthread_mutex_lock(&c.mu);
    fn_store(&c, fn_slot(&c, fn, d), fn, d, r);
    pthread_mutex_unlock(&c.mu);
    return r;
}

// Raises fn's dynamic shared memory limit to bytes once a device (needed once static plus dynamic pass 48 KB).
int dsf_cuda_smem_limit(const void *fn, int bytes, const char *k, dsf_err *e) {
    if (bytes <= 0) return 0;
    static fn_cache c = {PTHREAD_MUTEX_INITIALIZER};
    int rc = 0, i, d = 0;
    DSF_CUDA_TRY(e, cudaGetDevice(&d));
    pthread_mutex_lock(&c.mu);
    i = fn_slot(&c, fn, d);
    if (i == c.n || c.val[i] < bytes) {
        cudaError_t r = cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
        if (r != cudaSuccess)
            rc = dsf_fail(e, "%s: %d bytes of dynamic shared memory refused: %s", k, bytes, cudaGetErrorString(r));
        else
            fn_store(&c, i, fn, d, bytes);
    }
    pthread_mutex_unlock(&c.mu);
    return rc;
}

int dsf_cuda_slots(const void *fn, int threads, int smem, const char *k, int *slots, dsf_err *e) {
    static struct {
        pthread_mutex_t mu;
        const void *fn[64];
        int key[64][3], val[64], n;
    } c = {PTHREAD_MUTEX_INITIALIZER};
    int dev = 0, sms = 0, per = 0, i;
    if (dsf_cuda_sms(&dev, &sms, k, e) || dsf_cuda_smem_limit(fn, smem, k, e)) return -1;
    pthread_mutex_lock(&c.mu);
    for (i = 0; i < c.n; i++)
        if (c.fn[i] == fn && c.key[i][0] == dev && c.key[i][1] == threads && c.key[i][2] == smem) break;
    int hit = i < c.n, v = hit ? c.val[i] : 0;
    pthread_mutex_unlock(&c.mu);
    if (hit) return *slots = v, 0;
    DSF_CUDA_TRY(e, cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, fn, threads, (size_t)smem));
    *slots = per * sms;
    pthread_mutex_lock(&c.mu);
    if (c.n < 64) {
        c.fn[c.n] = fn, c.key[c.n][0] = dev, c.key[c.n][1] = threads, c.key[c.n][2] = smem;
        c.val[c.n++] = *slots;
    }
    pthread_mutex_unlock(&c.mu);
    return 0;
}
