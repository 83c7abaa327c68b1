#ifndef DSF_TOK_TEST_UTIL_H
#define DSF_TOK_TEST_UTIL_H
// Shared by the tok tests: opening the real tokenizer (or skipping), hex and id-list parsing of vector lines.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tok/tok.h"

// Opens the tokenizer from $DSF_TOKENIZER or the default path; NULL when the file does not exist (the test skips).
static inline dsf_tok *tok_test_open(void) {
    const char *path = dsf_tok_path(NULL);
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fclose(f);
    dsf_tok *t;
    dsf_err e;
    if (dsf_tok_open(&t, path, &e)) {
        fprintf(stderr, "tokenizer present but failed to load: %s\n", e.msg);
        exit(1);
    }
    return t;
}

// Hex digits (spaces allowed between them) to bytes; returns -1 on a bad digit.
static inline int tok_test_unhex(const char *s, const char *end, dsf_tok_buf *out) {
    int hi = -1;
    for (; s < end; s++) {
        if (*s == ' ') continue;
        int v = *s >= '0' && *s <= '9' ? *s - '0' : *s >= 'a' && *s <= 'f' ? *s - 'a' + 10 : -1;
        if (v < 0) return -1;
        if (hi < 0) {
            hi = v;
        } else {
            unsigned char c = (unsigned char)(hi << 4 | v);
            dsf_tok_buf_put(out, &c, 1);
            hi = -1;
        }
    }
    dsf_tok_buf_put(out, "", 0);
    return hi < 0 ? 0 : -1;
}

// "1,2,3" to ids; an empty string is an empty list.
static inline void tok_test_ids(const char *s, dsf_tok_ids *out) {
    while (*s && *s != '\n') {
        char *end;
        dsf_tok_ids_push(out, (int32_t)strtol(s, &end, 10));
        s = *end == ',' ? end + 1 : end;
    }
}

static inline int tok_test_ids_equal(const dsf_tok_ids *a, const dsf_tok_ids *b) {
    return a->n == b->n && (!a->n || !memcmp(a->v, b->v, a->n * sizeof *a->v));
}

#endif
