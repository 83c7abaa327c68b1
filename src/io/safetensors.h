#ifndef DSF_SAFETENSORS_H
#define DSF_SAFETENSORS_H
// Safetensors checkpoints: mmap reader (single file or sharded via model.safetensors.index.json) and a streaming writer.
// File layout: u64 little-endian header length N, N bytes of UTF-8 JSON, then the data section.
// (The full layout, dtype table and validation rules are documented in safetensors.c's top comment lines.)
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

typedef enum dsf_dtype {
    DSF_DT_BF16,
    DSF_DT_F16,
    DSF_DT_F32,
    DSF_DT_F64,
    DSF_DT_I8,
    DSF_DT_U8,
    DSF_DT_I32,
    DSF_DT_I64,
    DSF_DT_F8_E4M3,
    DSF_DT_F8_E8M0,
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
    const void *data;  // points into the mmapped file
    size_t nbytes;
    int shard;  // index into the checkpoint's shard list
} dsf_tensor;

typedef struct dsf_st dsf_st;

// Opens a single .safetensors file, or a directory holding model.safetensors.index.json (or one .safetensors file).
int dsf_st_open(const char *path, dsf_st **out, dsf_err *e);
void dsf_st_close(dsf_st *st);
size_t dsf_st_count(const dsf_st *st);
const dsf_tensor *dsf_st_at(const dsf_st *st, size_t i);
const dsf_tensor *dsf_st_find(const dsf_st *st, const char *name);
size_t dsf_st_shard_count(const dsf_st *st);
const char *dsf_st_shard_path(const dsf_st *st, size_t i);
int64_t dsf_tensor_numel(const dsf_tensor *t);

// Parses and validates a header already in memory (used by the reader and the fuzzer); file_size bounds the offsets.
typedef struct dsf_st_header dsf_st_header;
int dsf_st_header_parse(const char *json, size_t len, uint64_t data_size, const char *file, dsf_st_header **out,
                        dsf_err *e);
void dsf_st_header_free(dsf_st_header *h);

// Streaming writer: declare every tensor, then write their bytes in declaration order.
typedef struct dsf_st_writer dsf_st_writer;
dsf_st_writer *dsf_st_writer_new(void);
int dsf_st_writer_add(dsf_st_writer *w, const char *name, dsf_dtype dtype, int ndim, const int64_t *shape,
                      dsf_err *e);
// Writes the header to path; afterwards dsf_st_writer_data is called with each tensor's bytes (any chunking).
int dsf_st_writer_begin(dsf_st_writer *w, const char *path, dsf_err *e);
int dsf_st_writer_data(dsf_st_writer *w, const void *bytes, size_t n, dsf_err *e);
// Checks every declared byte was written, closes the file; fills sha256 (32 bytes) of the whole file when non-NULL.
int dsf_st_writer_end(dsf_st_writer *w, uint8_t sha256[32], dsf_err *e);
void dsf_st_writer_free(dsf_st_writer *w);

#endif
