#ifndef DSF_TOK_H
#define DSF_TOK_H
// Byte-level BPE from a Hugging Face tokenizer.json, giving the ids HF tokenizers gives; layout in docs/tokenizer.md.
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

// tools/fetch_tokenizer puts the DeepSeek-V4 tokenizer.json here; $DSF_TOKENIZER or --tokenizer overrides it.
#define DSF_TOK_DEFAULT_PATH "models/tokenizer/tokenizer.json"

typedef struct dsf_tok dsf_tok;

// A growable byte buffer; p is NUL-terminated after every append, n excludes the NUL.
typedef struct dsf_tok_buf {
    char *p;
    size_t n, cap;
} dsf_tok_buf;

// A growable list of token ids.
typedef struct dsf_tok_ids {
    int32_t *v;
    size_t n, cap;
} dsf_tok_ids;

void dsf_tok_buf_put(dsf_tok_buf *b, const void *p, size_t n);
void dsf_tok_buf_puts(dsf_tok_buf *b, const char *s);
void dsf_tok_buf_free(dsf_tok_buf *b);
void dsf_tok_ids_push(dsf_tok_ids *l, int32_t id);
void dsf_tok_ids_free(dsf_tok_ids *l);

// The path to use: explicit if non-NULL, else $DSF_TOKENIZER if set, else DSF_TOK_DEFAULT_PATH.
const char *dsf_tok_path(const char *explicit_path);

// Loads and validates tokenizer.json; any unsupported declaration (normalizer, pre-tokenizer, flag) is an error.
int dsf_tok_open(dsf_tok **out, const char *path, dsf_err *e);
void dsf_tok_close(dsf_tok *t);

// len(tokenizer) in HF terms: ids 0..size-1, added tokens included.
int32_t dsf_tok_size(const dsf_tok *t);
// Lowercase hex sha256 of the tokenizer.json bytes.
const char *dsf_tok_sha256(const dsf_tok *t);
// The id whose token string (vocab key or added-token content) is exactly s, or -1.
int32_t dsf_tok_id(const dsf_tok *t, const char *s);
// The token string as tokenizer.json spells it (byte-level characters for vocab ids), or NULL for a bad id.
const char *dsf_tok_token_str(const dsf_tok *t, int32_t id);
// The bytes an id decodes to; returns 0, or -1 for an id outside 0..size-1.
int dsf_tok_token_bytes(const dsf_tok *t, int32_t id, const char **p, size_t *n);
// 1 when id is an added token with "special": true.
int dsf_tok_is_special(const dsf_tok *t, int32_t id);

// Text to ids, appended to out; invalid UTF-8 is first replaced by U+FFFD per maximal subpart, as Python/Rust do.
int dsf_tok_encode(const dsf_tok *t, const char *text, size_t n, dsf_tok_ids *out, dsf_err *e);
// Ids to the exact bytes they stand for, appended to out; an id outside 0..size-1 is an error.
int dsf_tok_decode(const dsf_tok *t, const int32_t *ids, size_t n, dsf_tok_buf *out, dsf_err *e);

// Appends text with every invalid UTF-8 sequence replaced by U+FFFD, the way Rust's from_utf8_lossy does.
void dsf_utf8_lossy(const char *text, size_t n, dsf_tok_buf *out);
// 1 when the n bytes are valid UTF-8 (no surrogates, no overlongs, at most U+10FFFF).
int dsf_utf8_valid(const char *text, size_t n);

// Streaming decode: complete UTF-8 characters only, an incomplete tail held back until the next token completes it.
typedef struct dsf_tok_stream {
    unsigned char pend[4];
    int npend;
} dsf_tok_stream;

// Appends what id completes; bytes that can never become valid UTF-8 come out as U+FFFD.
int dsf_tok_stream_push(const dsf_tok *t, dsf_tok_stream *s, int32_t id, dsf_tok_buf *out, dsf_err *e);
// End of stream: a held-back incomplete tail becomes U+FFFD.
void dsf_tok_stream_finish(dsf_tok_stream *s, dsf_tok_buf *out);

#endif
