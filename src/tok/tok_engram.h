#ifndef DSF_TOK_ENGRAM_H
#define DSF_TOK_ENGRAM_H
// Engram's compressed token map (spec 3.2.6 item 1): each id to the first-seen index of its normalised text.
#include "tok/tok.h"

// The number of distinct keys the V4.1 Engram tables are sized for (spec 3.2.6; engram vocab of the config).
#define DSF_TOK_ENGRAM_KEYS 99092

// The key of one id: its decoded text normalised, or the raw token string when the text holds U+FFFD.
void dsf_tok_engram_key(const dsf_tok *t, int32_t id, dsf_tok_buf *key);

// Builds map[0..size-1] (caller frees); *n_keys gets the number of distinct keys. No cache involved.
int dsf_tok_engram_build(const dsf_tok *t, int32_t **map, int32_t *n_keys, dsf_err *e);

// The map from a checked cache (NULL: engram_map.bin beside tokenizer.json), else built and cached (docs/tokenizer.md).
int dsf_tok_engram_map(const dsf_tok *t, const char *cache_path, int32_t expect_keys, int32_t **map, int32_t *n_keys,
                       dsf_err *e);

#endif
