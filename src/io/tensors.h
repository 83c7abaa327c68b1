#ifndef DSF_TENSORS_H
#define DSF_TENSORS_H
// THE tensor table: every tensor of a V4 / V4.1 checkpoint with dtype and shape; docs/checkpoint.md explains it.
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "io/config.h"
#include "io/roles.h"
#include "io/safetensors.h"

// How synth fills a tensor (docs/synth.md gives the magnitudes and why).
typedef enum dsf_fill {
    DSF_FILL_LINEAR,   // a linear map's weight: U(+-sqrt(3/fan_in)), quantised when FP8/FP4
    DSF_FILL_SCALE,    // the E8M0 scale of the tensor before it, produced while that one is written
    DSF_FILL_NORM,     // RMSNorm weight: 1 + U(+-0.1)
    DSF_FILL_ONES,     // multiplicative weights initialised to one in the reference: 1 + U(+-0.1)
    DSF_FILL_EMBED,    // embedding rows: U(+-sqrt(3)), rms 1
    DSF_FILL_SMALL,    // biases and learned offsets: U(+-0.01)
    DSF_FILL_HC_FN,    // mHC projection: U(+-0.1*sqrt(3/fan_in))
    DSF_FILL_HC_BASE,  // mHC base: comb diagonal 3 +- 0.5, others U(+-0.5)
    DSF_FILL_HC_SCALE, // mHC scales: U(0.5, 1.5)
    DSF_FILL_SINK,     // attention sink logits: U(-1, 1)
    DSF_FILL_APE,      // V4 compressor position bias: U(+-0.1)
    DSF_FILL_TID2EID,  // V4 hash routing: distinct expert ids per token row
    DSF_FILL_ENGRAM,   // Engram table rows: U(+-sqrt(3)) as e4m3 with per-row, per-block E8M0 scales
} dsf_fill;

typedef enum dsf_place {
    DSF_PLACE_GPU,    // weights of the text path
    DSF_PLACE_HOST,   // Engram tables: host memory or disk, rows gathered per round
    DSF_PLACE_VISION, // vision tower, aligner and image delimiters: not used by the text path
} dsf_place;

typedef struct dsf_tspec {
    char name[72];
    dsf_dtype dtype;
    uint8_t ndim;
    uint8_t fill;   // dsf_fill
    uint8_t place;  // dsf_place
    int16_t layer;  // -1 global, else index into the roles (stages follow the backbone)
    int32_t expert; // routed expert index, -1 otherwise
    int32_t slot;   // byte offset of the field in dsf_global_view / dsf_layer_view / dsf_expert_view, -1 none
    int64_t shape[2];
    int64_t fan_in; // logical input width of a linear weight (packed FP4 holds fan_in/2 bytes a row)
} dsf_tspec;

typedef struct dsf_tensor_table {
    size_t n, cap;
    dsf_tspec *t;
} dsf_tensor_table;

// Enumerates in a stable order (globals, vision, layers, stages; a scale right after its weight); -1 on a long name.
int dsf_tensors_build(const dsf_args *a, const dsf_roles *r, dsf_tensor_table *out, dsf_err *e);
void dsf_tensors_free(dsf_tensor_table *t);
int64_t dsf_tspec_numel(const dsf_tspec *t);
size_t dsf_tspec_nbytes(const dsf_tspec *t);
// Logical parameters: packed FP4 counts two a byte, scales count none.
int64_t dsf_tspec_params(const dsf_tspec *t);
// Totals over the table: tensors, bytes, and bytes per dtype (array of DSF_DT_COUNT) when non-NULL.
uint64_t dsf_tensors_bytes(const dsf_tensor_table *t, uint64_t *by_dtype);

#endif
