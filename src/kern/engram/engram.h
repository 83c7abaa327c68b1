#ifndef DSF_ENGRAM_H
#define DSF_ENGRAM_H
// Engram host side (spec §3.2.6): token map, hashing, history, gather; T tokens, L layers, C columns, hd head dim.
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "base/pool.h"
#include "io/config.h"
#include "io/safetensors.h"

#ifdef __cplusplus
extern "C" {
#endif

#define DSF_ENGRAM_DEAD (-1)     // history entry of an image-span token
#define DSF_ENGRAM_MAX_LAYERS 4  // Engram layers per model (V4.1 has 2)
#define DSF_ENGRAM_MAX_NGRAM 4   // the hard-coded multipliers have 4 shifts (max_ngram 4)
#define DSF_ENGRAM_MAX_COLS 64   // (max_ngram-1) * n_heads
#define DSF_ENGRAM_MAP_MAGIC "dsfold-engram-map 1"

// The compressed token map: ids[token] is the compressed id; n = len(tokenizer) entries (finding 11).
typedef struct dsf_engram_map {
    int64_t n;
    int64_t n_compressed;
    int32_t *ids;
} dsf_engram_map;

// Reads the text format of docs/engram.md: magic line, "N C", then N ids, one a line, in first-seen order.
int dsf_engram_map_load(const char *path, dsf_engram_map *out, dsf_err *e);
// Checks ids in memory (same rules as the loader) and takes a copy.
int dsf_engram_map_from_ids(const int32_t *ids, int64_t n, int64_t n_compressed, dsf_engram_map *out, dsf_err *e);
void dsf_engram_map_free(dsf_engram_map *m);

// Spec §3.2.6 multipliers of a layer id from the generated table (engram_mult_table.c); 0, or -1 outside it.
int dsf_engram_multipliers(int layer_id, int64_t n_compressed, int64_t mult[DSF_ENGRAM_MAX_NGRAM]);
extern const int64_t dsf_engram_mult_n_compressed;
extern const int dsf_engram_mult_layers;
extern const int64_t dsf_engram_mult_table[][4];

// Everything the hash needs, for all Engram layers; built once at load.
typedef struct dsf_engram_hash {
    int n_layers, max_ngram, n_heads, cols;
    int layer_ids[DSF_ENGRAM_MAX_LAYERS];
    int64_t pad;  // map.ids[engram_pad_id], not the pad id itself (pitfall 11)
    int64_t mult[DSF_ENGRAM_MAX_LAYERS][DSF_ENGRAM_MAX_NGRAM];
    int64_t primes[DSF_ENGRAM_MAX_LAYERS][DSF_ENGRAM_MAX_COLS];  // column order: n-gram major, head minor
    int64_t offsets[DSF_ENGRAM_MAX_LAYERS][DSF_ENGRAM_MAX_COLS]; // exclusive cumulative sum of the primes
    int64_t rows[DSF_ENGRAM_MAX_LAYERS];
} dsf_engram_hash;

// Computes primes by the rule (io/engram_primes.h) and checks the table rows against engram_num_embeddings.
int dsf_engram_hash_init(const dsf_args *a, const dsf_engram_map *map, dsf_engram_hash *h, dsf_err *e);
// The C row ids of one layer from the last max_ngram compressed ids: hist[k] = id at t-k, DEAD for image or t < k.
void dsf_engram_hash_token(const dsf_engram_hash *h, int layer, const int64_t *hist, int64_t *row_ids);

// Per-stream history ring addressed by absolute position; a chunk may start anywhere in [lo, hi+1] (rollback).
typedef struct dsf_engram_hist {
    int64_t cap;  // power of two
    int64_t hi;   // highest position written, -1 when empty
    int64_t *ids; // [cap] compressed id or DEAD, slot pos & (cap-1)
} dsf_engram_hist;

// cap_min: the deepest rollback plus max_ngram; the ring gets the next power of two of max(8, cap_min).
void dsf_engram_hist_init(dsf_engram_hist *s, int64_t cap_min);
void dsf_engram_hist_free(dsf_engram_hist *s);
// Writes positions pos0.. (is_image may be NULL), fills rows [T][L][C]; refuses gaps, deep rollbacks, unmapped ids.
int dsf_engram_hist_step(const dsf_engram_hash *h, const dsf_engram_map *map, dsf_engram_hist *s, int64_t pos0,
                         int64_t T, const int32_t *tokens, const uint8_t *is_image, int64_t *rows, dsf_err *e);

// One layer's table, checked: F8_E4M3 [rows, hd] codes and F8_E8M0 [rows, hd/32] scales, both mmapped.
typedef struct dsf_engram_table {
    const uint8_t *codes;
    const uint8_t *scales;
    int64_t rows;
    int hd;
} dsf_engram_table;

// Checks dtypes, shapes, the row count the prime rule gives, and byte counts; names the tensor in errors.
int dsf_engram_table_bind(const dsf_tensor *weight, const dsf_tensor *scale, int64_t rows, int hd,
                          dsf_engram_table *out, dsf_err *e);

// Gathers rows [T][L][C] into codes [L][T][C*hd], scales [L][T][C*hd/32] on <= threads workers (0: all) of pool.
int dsf_engram_gather(dsf_pool *pool, int threads, const dsf_engram_table *tables, int n_layers, int cols, int64_t T,
                      const int64_t *rows, uint8_t *codes, uint8_t *scales, dsf_err *e);

#ifdef __cplusplus
}
#endif

#endif
