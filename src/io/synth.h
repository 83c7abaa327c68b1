#ifndef DSF_SYNTH_H
#define DSF_SYNTH_H
// `dsfold synth`: structurally real checkpoints (official names, dtypes, scales, packing, roles) at any size.
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "io/config.h"
#include "io/tensors.h"

typedef enum dsf_synth_size {
    DSF_SYNTH_TINY,       // every role of the arch, tiny dims: CI
    DSF_SYNTH_SMALL,      // every role, mid dims (head_dim 512, 32 experts): CPU forward tests
    DSF_SYNTH_LAYER_REAL, // real dims, few layers, reduced Engram table: GPU benchmarks on a ~24 GiB disk
} dsf_synth_size;

typedef struct dsf_synth_opts {
    dsf_arch arch;
    dsf_synth_size size;
    int layers; // backbone layers, 0 for the size's default
    uint64_t seed;
    int progress; // a \r-updated progress line on stderr
    int threads;  // generator threads, 0 for all CPUs
} dsf_synth_opts;

#define DSF_SYNTH_MAX_FILES 128

typedef struct dsf_synth_file {
    char name[64];
    uint64_t bytes;
    uint8_t sha256[32];
} dsf_synth_file;

typedef struct dsf_synth_report {
    int n_files;
    dsf_synth_file files[DSF_SYNTH_MAX_FILES];
    uint64_t bytes; // all files
    size_t n_tensors;
    uint8_t total_sha256[32]; // sha256 of the "hex  name\n" lines of every file, in the order written
    double seconds;
} dsf_synth_report;

int dsf_synth_size_parse(const char *s, dsf_synth_size *out);
const char *dsf_synth_size_name(dsf_synth_size s);
// The model arguments of a synthetic checkpoint; refuses a layer count that cannot hold the size's roles.
int dsf_synth_args(const dsf_synth_opts *o, dsf_args *a, dsf_err *e);
// Writes config.json, generation_config.json, the shards and model.safetensors.index.json into dir.
int dsf_synth_write(const dsf_synth_opts *o, const char *dir, dsf_synth_report *rep, dsf_err *e);

// Streams one tensor's bytes (a scale's come from its weight, generated just before); chunking never changes them.
typedef int (*dsf_synth_sink)(void *ctx, const void *bytes, size_t n, dsf_err *e);
typedef struct dsf_synth_gen dsf_synth_gen;
dsf_synth_gen *dsf_synth_gen_new(const dsf_args *a, uint64_t seed, int threads);
void dsf_synth_gen_free(dsf_synth_gen *g);
int dsf_synth_gen_tensor(dsf_synth_gen *g, const dsf_tspec *t, dsf_synth_sink sink, void *ctx, dsf_err *e);

#endif
