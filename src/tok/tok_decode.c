#include <stdlib.h>
#include <string.h>

#include "tok/tok_internal.h"

int dsf_tok_decode(const dsf_tok *t, const int32_t *ids, size_t n, dsf_tok_buf *out, dsf_err *e) {
    for (size_t i = 0; i < n; i++) {
        const char *p;
        size_t k;
        if (dsf_tok_token_bytes(t, ids[i], &p, &k))
            return dsf_fail(e, "decode: ids[%zu] = %d is outside 0..%d", i, ids[i], t->size - 1);
        dsf_tok_buf_put(out, p, k);
    }
    return 0;
}

// Expected length of the UTF-8 character led by c, 0 for a byte that cannot lead one.
static int lead_len(unsigned char c) {
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) return 2;
    if (c >= 0xE0 && c <= 0xEF) return 3;
    if (c >= 0xF0 && c <= 0xF4) return 4;
    return 0;
}

// 1 while pend[0..n) can still grow into a valid character (the same second-byte limits as dsf_utf8_valid).
static int could_complete(const unsigned char *p, int n) {
    int want = lead_len(p[0]);
    if (!want || n >= want) return 0;
    for (int i = 1; i < n; i++) {
        unsigned lo = 0x80, hi = 0xBF;
        if (i == 1 && p[0] == 0xE0) lo = 0xA0;
        if (i == 1 && p[0] == 0xED) hi = 0x9F;
        if (i == 1 && p[0] == 0xF0) lo = 0x90;
        if (i == 1 && p[0] == 0xF4) hi = 0x8F;
        if (p[i] < lo || p[i] > hi) return 0;
    }
    return 1;
}

int dsf_tok_stream_push(const dsf_tok *t, dsf_tok_stream *s, int32_t id, dsf_tok_buf *out, dsf_err *e) {
    const char *p;
    size_t n;
    if (dsf_tok_token_bytes(t, id, &p, &n)) return dsf_fail(e, "decode: id %d is outside 0..%d", id, t->size - 1);
    unsigned char stack[256];
    size_t total = (size_t)s->npend + n;
    unsigned char *all = total <= sizeof stack ? stack : dsf_malloc(total);
    memcpy(all, s->pend, (size_t)s->npend);
    if (n) memcpy(all + s->npend, p, n);
    size_t keep = total;
    for (size_t back = 1; back <= 3 && back <= total; back++) {
        const unsigned char *q = all + total - back;
        if ((*q & 0xC0) == 0x80) continue;
        if (could_complete(q, (int)back)) keep = total - back;
        break;
    }
    dsf_utf8_lossy((const char *)all, keep, out);
    s->npend = (int)(total - keep);
    memcpy(s->pend, all + keep, (size_t)s->npend);
    if (all != stack) free(all);
    return 0;
}

void dsf_tok_stream_finish(dsf_tok_stream *s, dsf_tok_buf *out) {
    dsf_utf8_lossy((const char *)s->pend, (size_t)s->npend, out);
    s->npend = 0;
}
