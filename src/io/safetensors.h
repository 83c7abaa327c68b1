#ifndef DSF_SAFETENSORS_H
#define DSF_SAFETENSORS_H
// Safetensors checkpoints: mmap reader (single file or sharded via model.safetensors.index.json), streaming writer.
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

#define DSF_ST_HEADER_MIN 2         // layout: u64 little-endian header length N, N bytes of JSON, the data section
#define DSF_ST_HEADER_MAX 100000000 // N is at most 100 MB (the reference implementation's limit) and file size - 8
#define DSF_ST_HEADER_ALIGN 8       // the writer pads the JSON with spaces to a multiple of 8; readers take any N
#define DSF_ST_INDEX "model.safetensors.index.json" // {"weight_map": {tensor: shard file in the same directory}}

typedef enum dsf_dtype {
    DSF_DT_BF16,    // "BF16" 2 bytes
    DSF_DT_F16,     // "F16" 2 bytes
    DSF_DT_F32,     // "F32" 4 bytes
    DSF_DT_F64,     // "F64" 8 bytes
    DSF_DT_I8,      // "I8" 1 byte; also FP4: packed e2m1 experts are I8 [out, in/2], even element in the low nibble
    DSF_DT_U8,      // "U8" 1 byte
    DSF_DT_I32,     // "I32" 4 bytes
    DSF_DT_I64,     // "I64" 8 bytes
    DSF_DT_F8_E4M3, // "F8_E4M3" 1 byte, e4m3fn
    DSF_DT_F8_E8M0, // "F8_E8M0" 1 byte, 2^(b-127); block scales, [out, in/32] beside FP4 (the binding reinterprets)
    DSF_DT_COUNT
} dsf_dtype;

#define DSF_MAX_DIMS 8

// Returns the safetensors dtype string ("BF16", "F8_E4M3", ...) and the element size in bytes.
const char *dsf_dtype_name(dsf_dtype t);
size_t dsf_dtype_size(dsf_dtype t);
// Parses a dtype string; returns 0 and sets *out, or -1 for an unknown dtype.
int dsf_dtype_parse(const char *s, dsf_dtype *out);

typedef struct dsf_tensor {
    const char *name;
    dsf_dtype dtype;
    int ndim;
    int64_t shape[DSF_MAX_DIMS];
    const void *data; // points into the mmapped file; aligned only as far as the file aligns it
    size_t nbytes;
    int shard; // index into the checkpoint's shard list
} dsf_tensor;

typedef struct dsf_st dsf_st;

// Opens a .safetensors file, or a directory holding model.safetensors.index.json (see st_index.c) or one such file.
int dsf_st_open(const char *path, dsf_st **out, dsf_err *e);
void dsf_st_close(dsf_st *st);
// Tensors are listed shard by shard (shards sorted by file name), each shard's by data offset (ties by name).
size_t dsf_st_count(const dsf_st *st);
const dsf_tensor *dsf_st_at(const dsf_st *st, size_t i);
const dsf_tensor *dsf_st_find(const dsf_st *st, const char *name);
size_t dsf_st_shard_count(const dsf_st *st);
const char *dsf_st_shard_path(const dsf_st *st, size_t i);
int64_t dsf_tensor_numel(const dsf_tensor *t);

// A shard's "__metadata__" string map, in file order; _get returns NULL for an absent key.
size_t dsf_st_metadata_count(const dsf_st *st, size_t shard);
const char *dsf_st_metadata_at(const dsf_st *st, size_t shard, size_t i, const char **value);
const char *dsf_st_metadata_get(const dsf_st *st, size_t shard, const char *key);

// Parses and validates a header in memory (reader, fuzzer); data_size bounds offsets; rules stand in st_header.c.
typedef struct dsf_st_header dsf_st_header;
int dsf_st_header_parse(const char *json, size_t len, uint64_t data_size, const char *file, dsf_st_header **out,
                        dsf_err *e);
void dsf_st_header_free(dsf_st_header *h);

// Streaming writer: declare every tensor, then write their bytes in declaration order.
typedef struct dsf_st_writer dsf_st_writer;
dsf_st_writer *dsf_st_writer_new(void);
int dsf_st_writer_add(dsf_st_writer *w, const char *name, dsf_dtype dtype, int ndim, const int64_t *shape, dsf_err *e);
// Adds a "__metadata__" entry (written before the tensors); call before dsf_st_writer_begin.
int dsf_st_writer_metadata(dsf_st_writer *w, const char *key, const char *value, dsf_err *e);
// Writes the header to path; afterwards dsf_st_writer_data is called with each tensor's bytes (any chunking).
int dsf_st_writer_begin(dsf_st_writer *w, const char *path, dsf_err *e);
int dsf_st_writer_data(dsf_st_writer *w, const void *bytes, size_t n, dsf_err *e);
// Checks every declared byte was written, closes the file; fills sha256 (32 bytes) of the whole file when non-NULL.
int dsf_st_writer_end(dsf_st_writer *w, uint8_t sha256[32], dsf_err *e);
void dsf_st_writer_free(dsf_st_writer *w);

#endif
