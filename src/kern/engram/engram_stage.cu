#include <stdint.h>
#include <stdlib.h>

#include "kern/cuda_check.h"

extern "C" {
#include "kern/engram/engram_stage.h"
}

// Slot s of host and dev: codes at s*slot_bytes, scales at s*slot_bytes + scales_off; both offsets 256-aligned.
struct dsf_engram_stage {
    int64_t max_tokens;
    size_t codes_per_token, scales_per_token; // L*C*hd, L*C*scale_bytes
    size_t scales_off, slot_bytes;
    uint8_t *host, *dev;
    cudaStream_t copy;
    cudaEvent_t copied[DSF_ENGRAM_STAGE_SLOTS];   // recorded on copy after a slot's upload
    cudaEvent_t released[DSF_ENGRAM_STAGE_SLOTS]; // recorded on the consumer after a slot's last reader
    int in_use[DSF_ENGRAM_STAGE_SLOTS];           // uploaded and not yet released
};

static size_t round_up_256(size_t n) { return (n + 255) & ~(size_t)255; }

static int stage_sizes(dsf_engram_stage *st, int64_t max_tokens, int layers, int cols, int head_dim, int scale_bytes,
                       dsf_err *e) {
    if (max_tokens < 1 || layers < 1 || cols < 1 || head_dim < 1 || scale_bytes < 1)
        return dsf_fail(e, "engram stage: max_tokens %lld, layers %d, cols %d, head_dim %d, scale_bytes %d must be >= 1",
                        (long long)max_tokens, layers, cols, head_dim, scale_bytes);
    size_t lc, codes, scales;
    if (!dsf_size_mul((size_t)layers, (size_t)cols, &lc) || !dsf_size_mul(lc, (size_t)head_dim, &st->codes_per_token) ||
        !dsf_size_mul(lc, (size_t)scale_bytes, &st->scales_per_token) ||
        !dsf_size_mul(st->codes_per_token, (size_t)max_tokens, &codes) ||
        !dsf_size_mul(st->scales_per_token, (size_t)max_tokens, &scales) || codes > SIZE_MAX / 4 ||
        scales > SIZE_MAX / 4)
        return dsf_fail(e, "engram stage: %lld tokens of %d layers x %d cols x %d bytes overflow size_t",
                        (long long)max_tokens, layers, cols, head_dim);
    st->max_tokens = max_tokens;
    st->scales_off = round_up_256(codes);
    st->slot_bytes = st->scales_off + round_up_256(scales);
    return 0;
}

static int stage_alloc(dsf_engram_stage *st, dsf_err *e) {
    size_t total = st->slot_bytes * DSF_ENGRAM_STAGE_SLOTS;
    DSF_CUDA_TRY(e, cudaHostAlloc((void **)&st->host, total, cudaHostAllocDefault));
    DSF_CUDA_TRY(e, cudaMalloc((void **)&st->dev, total));
    // Non-blocking: the copies must not serialise with work on the legacy default stream.
    DSF_CUDA_TRY(e, cudaStreamCreateWithFlags(&st->copy, cudaStreamNonBlocking));
    for (int s = 0; s < DSF_ENGRAM_STAGE_SLOTS; s++) {
        DSF_CUDA_TRY(e, cudaEventCreateWithFlags(&st->copied[s], cudaEventDisableTiming));
        DSF_CUDA_TRY(e, cudaEventCreateWithFlags(&st->released[s], cudaEventDisableTiming));
    }
    return 0;
}

extern "C" int dsf_engram_stage_open(int64_t max_tokens, int layers, int cols, int head_dim, int scale_bytes,
                                     dsf_engram_stage **out, dsf_err *e) {
    *out = NULL;
    dsf_engram_stage *st = (dsf_engram_stage *)dsf_calloc(1, sizeof *st);
    int rc = stage_sizes(st, max_tokens, layers, cols, head_dim, scale_bytes, e);
    if (!rc && stage_alloc(st, e))
        rc = dsf_fail_prefix(e, "engram stage: 2 slots of %zu bytes for %lld tokens: ", st->slot_bytes,
                             (long long)max_tokens);
    if (rc) {
        dsf_engram_stage_close(st);
        return -1;
    }
    *out = st;
    return 0;
}

extern "C" void dsf_engram_stage_close(dsf_engram_stage *st) {
    if (!st) return;
    // Errors here cannot be reported; the device sync keeps a consumer still reading a slot from a freed buffer.
    if (st->copy) cudaStreamSynchronize(st->copy);
    if (st->dev) cudaDeviceSynchronize();
    for (int s = 0; s < DSF_ENGRAM_STAGE_SLOTS; s++) {
        if (st->copied[s]) cudaEventDestroy(st->copied[s]);
        if (st->released[s]) cudaEventDestroy(st->released[s]);
    }
    if (st->copy) cudaStreamDestroy(st->copy);
    if (st->dev) cudaFree(st->dev);
    if (st->host) cudaFreeHost(st->host);
    free(st);
}

extern "C" int64_t dsf_engram_stage_max_tokens(const dsf_engram_stage *st) { return st->max_tokens; }

static int check_slot(const dsf_engram_stage *st, int slot, dsf_err *e) {
    if (!st) return dsf_fail(e, "engram stage: no stage");
    if (slot < 0 || slot >= DSF_ENGRAM_STAGE_SLOTS)
        return dsf_fail(e, "engram stage: slot %d outside 0..%d", slot, DSF_ENGRAM_STAGE_SLOTS - 1);
    return 0;
}

static dsf_engram_stage_bufs slot_bufs(uint8_t *base, const dsf_engram_stage *st, int slot) {
    uint8_t *p = base + (size_t)slot * st->slot_bytes;
    dsf_engram_stage_bufs b = {p, p + st->scales_off};
    return b;
}

extern "C" int dsf_engram_stage_host(dsf_engram_stage *st, int slot, dsf_engram_stage_bufs *out, dsf_err *e) {
    if (check_slot(st, slot, e)) return -1;
    // The previous upload's copy is the only GPU reader of the pinned slot; an unrecorded event returns at once.
    DSF_CUDA_TRY(e, cudaEventSynchronize(st->copied[slot]));
    *out = slot_bufs(st->host, st, slot);
    return 0;
}

extern "C" int dsf_engram_stage_upload(dsf_engram_stage *st, int slot, int64_t tokens, void *consumer_stream,
                                       dsf_err *e) {
    if (check_slot(st, slot, e)) return -1;
    if (tokens < 0 || tokens > st->max_tokens)
        return dsf_fail(e, "engram stage: a round of %lld tokens does not fit the %lld the stage holds",
                        (long long)tokens, (long long)st->max_tokens);
    if (st->in_use[slot])
        return dsf_fail(e, "engram stage: slot %d is uploaded again before its reader released it", slot);
    cudaStream_t consumer = (cudaStream_t)consumer_stream;
    dsf_engram_stage_bufs h = slot_bufs(st->host, st, slot), d = slot_bufs(st->dev, st, slot);
    size_t nc = st->codes_per_token * (size_t)tokens, ns = st->scales_per_token * (size_t)tokens;
    // A GPU-side wait: kernels of the previous round may still read the device slot, and the host must not block.
    DSF_CUDA_TRY(e, cudaStreamWaitEvent(st->copy, st->released[slot], 0));
    if (nc) DSF_CUDA_TRY(e, cudaMemcpyAsync(d.codes, h.codes, nc, cudaMemcpyHostToDevice, st->copy));
    if (ns) DSF_CUDA_TRY(e, cudaMemcpyAsync(d.scales, h.scales, ns, cudaMemcpyHostToDevice, st->copy));
    DSF_CUDA_TRY(e, cudaEventRecord(st->copied[slot], st->copy));
    DSF_CUDA_TRY(e, cudaStreamWaitEvent(consumer, st->copied[slot], 0));
    st->in_use[slot] = 1;
    return 0;
}

extern "C" int dsf_engram_stage_release(dsf_engram_stage *st, int slot, void *consumer_stream, dsf_err *e) {
    if (check_slot(st, slot, e)) return -1;
    if (!st->in_use[slot]) return dsf_fail(e, "engram stage: slot %d is released without an upload", slot);
    DSF_CUDA_TRY(e, cudaEventRecord(st->released[slot], (cudaStream_t)consumer_stream));
    st->in_use[slot] = 0;
    return 0;
}

extern "C" dsf_engram_stage_bufs dsf_engram_stage_device(const dsf_engram_stage *st, int slot) {
    DSF_ASSERT(st && slot >= 0 && slot < DSF_ENGRAM_STAGE_SLOTS);
    return slot_bufs(st->dev, st, slot);
}
