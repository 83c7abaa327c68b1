// The staging object without CUDA: every entry point refuses, so the CPU-only build links its callers.
#include "kern/engram/engram_stage.h"

#ifndef DSF_HAVE_CUDA
int dsf_engram_stage_open(int64_t max_tokens, int layers, int cols, int head_dim, int scale_bytes,
                          dsf_engram_stage **out, dsf_err *e) {
    (void)max_tokens, (void)layers, (void)cols, (void)head_dim, (void)scale_bytes;
    *out = NULL;
    return dsf_fail(e, "engram stage: this build has no CUDA backend");
}

void dsf_engram_stage_close(dsf_engram_stage *st) { (void)st; }

int64_t dsf_engram_stage_max_tokens(const dsf_engram_stage *st) {
    (void)st;
    return 0;
}

int dsf_engram_stage_host(dsf_engram_stage *st, int slot, dsf_engram_stage_bufs *out, dsf_err *e) {
    (void)st, (void)slot, (void)out;
    return dsf_fail(e, "engram stage: this build has no CUDA backend");
}

int dsf_engram_stage_upload(dsf_engram_stage *st, int slot, int64_t tokens, void *consumer_stream, dsf_err *e) {
    (void)st, (void)slot, (void)tokens, (void)consumer_stream;
    return dsf_fail(e, "engram stage: this build has no CUDA backend");
}

int dsf_engram_stage_release(dsf_engram_stage *st, int slot, void *consumer_stream, dsf_err *e) {
    (void)st, (void)slot, (void)consumer_stream;
    return dsf_fail(e, "engram stage: this build has no CUDA backend");
}

dsf_engram_stage_bufs dsf_engram_stage_device(const dsf_engram_stage *st, int slot) {
    (void)st, (void)slot;
    dsf_engram_stage_bufs b = {NULL, NULL};
    return b;
}
#endif
