#ifndef DSF_ST_INTERNAL_H
#define DSF_ST_INTERNAL_H
// Structures shared by the safetensors reader files (st_header.c, safetensors.c, st_index.c); not a public API.
#include "io/safetensors.h"

struct dsf_st_header {
    size_t count;
    dsf_tensor *tensors; // sorted by data offset; data is NULL and shard 0 until a shard owns the header
    uint64_t *begin;     // each tensor's offset in the data section
    size_t nmeta;
    const char **meta; // nmeta (key, value) pairs of "__metadata__", in file order
    char *strings;     // one block holding every name, metadata key and value
};

typedef struct dsf_st_shard {
    char *path;
    void *map;
    size_t map_size;
    const uint8_t *data; // the data section inside map
    dsf_st_header *hdr;
} dsf_st_shard;

struct dsf_st {
    dsf_st_shard *shards;
    size_t nshards;
    dsf_tensor *tensors; // every shard's tensors, shard by shard
    size_t count;
    uint32_t *slots; // open-addressing name table holding tensor index + 1, 0 for empty
    size_t mask;
};

// Checks a header length N against DSF_ST_HEADER_MIN and DSF_ST_HEADER_MAX.
int dsf_st_header_len_check(uint64_t n, const char *file, dsf_err *e);
// Maps one file read-only and parses its header; on failure the caller still calls dsf_st_shard_unload.
int dsf_st_shard_load(dsf_st_shard *sh, const char *path, dsf_err *e);
void dsf_st_shard_unload(dsf_st_shard *sh);
// Fills st->tensors and the name table from loaded shards; a name stored twice is an error naming both shards.
int dsf_st_build(dsf_st *st, dsf_err *e);
int dsf_st_index_open(const char *index_path, dsf_st **out, dsf_err *e);

#endif
