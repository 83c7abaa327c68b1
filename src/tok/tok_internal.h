#ifndef DSF_TOK_INTERNAL_H
#define DSF_TOK_INTERNAL_H
// The loaded tokenizer shared by the tok files: tables by id, the merge table, the added-token tries and the regexes.
#include <oniguruma.h>
#include <pthread.h>

#include "tok/tok.h"

#define TOK_MAX_SPLITS 8
#define TOK_CACHE_SLOTS 16384
#define TOK_CACHE_MAX_BYTES 48

// A byte trie of added-token strings matched leftmost-longest; edges live in one open-addressing table.
typedef struct tok_trie {
    int32_t *term;
    int32_t nnodes, capnodes;
    uint64_t *ekey;
    int32_t *echild;
    size_t ecap, nedges;
    uint8_t first[256];
} tok_trie;

// One cached piece: its bytes (at most TOK_CACHE_MAX_BYTES) and its ids.
typedef struct tok_cache_slot {
    uint8_t len, nids;
    char bytes[TOK_CACHE_MAX_BYTES];
    int32_t ids[TOK_CACHE_MAX_BYTES];
} tok_cache_slot;

struct dsf_tok {
    char *path;
    int32_t size;
    char sha[65];
    char *bytes_blob, *str_blob;
    size_t *bytes_off, *str_off;
    uint8_t *special;
    int32_t byte_id[256];
    uint64_t *mkey;
    uint64_t *mval;
    size_t mcap;
    int32_t *shash;
    size_t scap;
    tok_trie raw, norm;
    regex_t *split[TOK_MAX_SPLITS];
    int nsplit;
    pthread_mutex_t cache_lock;
    tok_cache_slot *cache;
};

uint64_t dsf_tok_hash(const void *p, size_t n);

static inline uint64_t dsf_tok_hash64(uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}
// Pair (a, b) to its merge: rank in the high 32 bits and the merged id in the low 32, or UINT64_MAX.
uint64_t dsf_tok_merge_lookup(const dsf_tok *t, int32_t a, int32_t b);
// The id of a byte string among vocab tokens (by decoded bytes), used for single bytes; -1 when absent.
int dsf_tok_load_tables(dsf_tok *t, const char *path, const char *json_text, size_t n, dsf_err *e);
void dsf_tok_trie_free(tok_trie *tr);
int dsf_tok_trie_add(tok_trie *tr, const char *s, size_t n, int32_t id);
// The longest token starting at text[i], its id in *id; 0 when none starts there.
size_t dsf_tok_trie_longest(const tok_trie *tr, const char *text, size_t n, size_t i, int32_t *id);
// BPE of one pre-tokenized piece (raw bytes), ids appended.
void dsf_tok_bpe(const dsf_tok *t, const char *p, size_t n, dsf_tok_ids *out);
// Bytes of the GPT-2 byte-level alphabet: the code point standing for byte b, and the inverse (-1 if none).
uint32_t dsf_tok_byte_char(uint8_t b);
int dsf_tok_char_byte(uint32_t cp);

// Code points a general-category class gained after Unicode 14.0, up to the version HF's Oniguruma uses.
typedef struct tok_ucd_class {
    char name;
    const uint32_t (*ranges)[2];
    size_t n;
} tok_ucd_class;
extern const tok_ucd_class dsf_tok_ucd_added[];
// Rewrites \p{L|M|N|P|S} in a regex to also match those code points; -1 with a message for a property it can't patch.
int dsf_tok_regex_patch(const char *pat, size_t n, dsf_tok_buf *out, char *why, size_t why_n);

#endif
