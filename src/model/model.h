#ifndef DSF_MODEL_H
#define DSF_MODEL_H
// The V4.1 forward of one lane round on the CPU backend (docs/forward.md): any rows from any streams, one path.
#include <stdint.h>

#include "base/err.h"
#include "io/config.h"

typedef struct dsf_model dsf_model;
typedef struct dsf_stream dsf_stream;

typedef struct dsf_model_opts {
    int threads;           // <= 0: every CPU
    const char *token_map; // Engram token map: a tokenizer.json or a map file; NULL: DIR/tokenizer.json, else the fold
} dsf_model_opts;

// Opens and binds a checkpoint directory and prepares the weights; threads <= 0 uses every CPU.
int dsf_model_open(const char *dir, int threads, dsf_model **out, dsf_err *e);
int dsf_model_open_opts(const char *dir, const dsf_model_opts *o, dsf_model **out, dsf_err *e);
void dsf_model_close(dsf_model *m);
const dsf_args *dsf_model_args(const dsf_model *m);
// The Engram token map in use ([*n] compressed ids, NULL without Engram layers) and where it came from.
const int32_t *dsf_model_token_map(const dsf_model *m, int64_t *n, const char **source);

// A stream's caches by absolute position: a round may start in [high water - max_rollback, len], below max_seq.
int dsf_stream_new(const dsf_model *m, int64_t max_seq, int max_rollback, dsf_stream **out, dsf_err *e);
void dsf_stream_free(dsf_stream *s);
int64_t dsf_stream_len(const dsf_stream *s);

typedef enum dsf_logits_want { DSF_LOGITS_NONE, DSF_LOGITS_LAST, DSF_LOGITS_ALL } dsf_logits_want;

// One stream's rows of a round: tokens[0..n-1] at positions pos..pos+n-1.
typedef struct dsf_round_part {
    dsf_stream *stream;
    int64_t pos, n;
    const int32_t *tokens;
    dsf_logits_want want;
    float *logits; // [1 or n, vocab] fp32 when want != NONE
} dsf_round_part;

typedef struct dsf_round {
    int n_parts;
    dsf_round_part *parts; // streams distinct; rows are ordered part by part
    float *hidden;         // optional: [n_layers + 1, rows, hc, D] streams after the embedding and after each layer
    float *pre_mix;        // optional: [n_layers + 1, rows, hc] the collapse weights entering each layer and the head
} dsf_round;

// Runs one round: every part's stream advances to pos + n. Refuses bad positions, tokens or repeated streams.
int dsf_model_forward(dsf_model *m, const dsf_round *r, dsf_err *e);

#endif
