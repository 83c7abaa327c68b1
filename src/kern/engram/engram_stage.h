#ifndef DSF_ENGRAM_STAGE_H
#define DSF_ENGRAM_STAGE_H
// Double-buffered pinned staging of gathered Engram rows for the CUDA forward; T tokens, L layers, C cols, hd dim.
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

#ifdef __cplusplus
extern "C" {
#endif

#define DSF_ENGRAM_STAGE_SLOTS 2

typedef struct dsf_engram_stage dsf_engram_stage;

// A slot's buffers; a round of T tokens fills them as the gather does (docs/engram.md, "Staging"), from the start.
typedef struct dsf_engram_stage_bufs {
    uint8_t *codes;  // [L][T][C*hd]
    uint8_t *scales; // [L][T][C*scale_bytes]
} dsf_engram_stage_bufs;

// Pinned host and device buffers for two rounds of up to max_tokens tokens, a copy stream and per-slot events.
int dsf_engram_stage_open(int64_t max_tokens, int layers, int cols, int head_dim, int scale_bytes,
                          dsf_engram_stage **out, dsf_err *e);
void dsf_engram_stage_close(dsf_engram_stage *st);
int64_t dsf_engram_stage_max_tokens(const dsf_engram_stage *st);

// The pinned buffers the gather writes into; first waits until the slot's last upload has finished reading them.
int dsf_engram_stage_host(dsf_engram_stage *st, int slot, dsf_engram_stage_bufs *out, dsf_err *e);
// Copies a round of tokens on the copy stream once the slot's last reader released it; consumer waits for the copy.
int dsf_engram_stage_upload(dsf_engram_stage *st, int slot, int64_t tokens, void *consumer_stream, dsf_err *e);
// Marks on the consumer stream, after the last kernel that reads the slot, where the next upload may overwrite it.
int dsf_engram_stage_release(dsf_engram_stage *st, int slot, void *consumer_stream, dsf_err *e);
// The device buffers of a slot (same layout as the host's); valid on the consumer stream after its upload.
dsf_engram_stage_bufs dsf_engram_stage_device(const dsf_engram_stage *st, int slot);

#ifdef __cplusplus
}
#endif

#endif
