#include <stdlib.h>
#include <string.h>

#include "tok/tok_internal.h"

void dsf_tok_buf_put(dsf_tok_buf *b, const void *p, size_t n) {
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->n + n + 1) cap *= 2;
        b->p = dsf_realloc(b->p, cap);
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->n, p, n);
    b->n += n;
    b->p[b->n] = 0;
}

void dsf_tok_buf_puts(dsf_tok_buf *b, const char *s) {
    dsf_tok_buf_put(b, s, strlen(s));
}

void dsf_tok_buf_free(dsf_tok_buf *b) {
    free(b->p);
    memset(b, 0, sizeof *b);
}

void dsf_tok_ids_push(dsf_tok_ids *l, int32_t id) {
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 64;
        l->v = dsf_realloc(l->v, l->cap * sizeof *l->v);
    }
    l->v[l->n++] = id;
}

void dsf_tok_ids_free(dsf_tok_ids *l) {
    free(l->v);
    memset(l, 0, sizeof *l);
}

const char *dsf_tok_path(const char *explicit_path) {
    if (explicit_path && *explicit_path) return explicit_path;
    const char *env = getenv("DSF_TOKENIZER");
    return env && *env ? env : DSF_TOK_DEFAULT_PATH;
}

uint64_t dsf_tok_hash(const void *p, size_t n) {
    const unsigned char *s = p;
    uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 0x100000001b3ull;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    return h ^ (h >> 29);
}

// GPT-2's alphabet: printable Latin-1 bytes stand for themselves, the other 68 take U+0100.. in byte order.
static int printable_byte(unsigned b) {
    return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174);
}

uint32_t dsf_tok_byte_char(uint8_t b) {
    if (printable_byte(b)) return b;
    uint32_t k = 0;
    for (unsigned x = 0; x < b; x++) k += !printable_byte(x);
    return 256 + k;
}

int dsf_tok_char_byte(uint32_t cp) {
    if (cp < 256) return printable_byte(cp) ? (int)cp : -1;
    if (cp >= 256 + 68) return -1;
    uint32_t k = 0;
    for (unsigned x = 0; x < 256; x++)
        if (!printable_byte(x) && k++ == cp - 256) return (int)x;
    return -1;
}

// Length of the valid UTF-8 character at s (1..4), or 0 with *bad set to the maximal invalid subpart's length.
static size_t utf8_char(const unsigned char *s, size_t n, size_t *bad) {
    unsigned c = s[0];
    size_t len;
    unsigned lo = 0x80, hi = 0xBF;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else {
        *bad = 1;
        return 0;
    }
    for (size_t i = 1; i < len; i++) {
        unsigned lo_i = i == 1 ? lo : 0x80, hi_i = i == 1 ? hi : 0xBF;
        if (i >= n || s[i] < lo_i || s[i] > hi_i) {
            *bad = i;
            return 0;
        }
    }
    return len;
}

int dsf_utf8_valid(const char *text, size_t n) {
    const unsigned char *s = (const unsigned char *)text;
    size_t i = 0, bad;
    while (i < n) {
        if (s[i] < 0x80) {
            i++;
            continue;
        }
        size_t k = utf8_char(s + i, n - i, &bad);
        if (!k) return 0;
        i += k;
    }
    return 1;
}

void dsf_utf8_lossy(const char *text, size_t n, dsf_tok_buf *out) {
    const unsigned char *s = (const unsigned char *)text;
    size_t i = 0, run = 0, bad;
    while (i < n) {
        size_t k = s[i] < 0x80 ? 1 : utf8_char(s + i, n - i, &bad);
        if (k) {
            i += k;
            continue;
        }
        dsf_tok_buf_put(out, text + run, i - run);
        dsf_tok_buf_put(out, "\xEF\xBF\xBD", 3);
        i += bad;
        run = i;
    }
    dsf_tok_buf_put(out, text + run, n - run);
}

void dsf_tok_trie_free(tok_trie *tr) {
    free(tr->term);
    free(tr->ekey);
    free(tr->echild);
    memset(tr, 0, sizeof *tr);
}

static size_t edge_slot(const tok_trie *tr, uint64_t key) {
    size_t m = tr->ecap - 1, i = dsf_tok_hash64(key) & m;
    while (tr->echild[i] >= 0 && tr->ekey[i] != key) i = (i + 1) & m;
    return i;
}

static void edge_grow(tok_trie *tr) {
    size_t old = tr->ecap;
    uint64_t *ok = tr->ekey;
    int32_t *oc = tr->echild;
    tr->ecap = old ? old * 2 : 1024;
    tr->ekey = dsf_malloc(tr->ecap * sizeof *tr->ekey);
    tr->echild = dsf_malloc(tr->ecap * sizeof *tr->echild);
    for (size_t i = 0; i < tr->ecap; i++) tr->echild[i] = -1;
    for (size_t i = 0; i < old; i++) {
        if (oc[i] < 0) continue;
        size_t j = edge_slot(tr, ok[i]);
        tr->ekey[j] = ok[i];
        tr->echild[j] = oc[i];
    }
    free(ok);
    free(oc);
}

int dsf_tok_trie_add(tok_trie *tr, const char *s, size_t n, int32_t id) {
    if (!n) return -1;
    if (!tr->nnodes) {
        tr->capnodes = 1024;
        tr->term = dsf_malloc((size_t)tr->capnodes * sizeof *tr->term);
        tr->term[0] = -1;
        tr->nnodes = 1;
    }
    int32_t node = 0;
    for (size_t i = 0; i < n; i++) {
        if ((tr->nedges + 1) * 2 > tr->ecap) edge_grow(tr);
        uint64_t key = (uint64_t)node << 8 | (unsigned char)s[i];
        size_t j = edge_slot(tr, key);
        if (tr->echild[j] < 0) {
            if (tr->nnodes == tr->capnodes) {
                tr->capnodes *= 2;
                tr->term = dsf_realloc(tr->term, (size_t)tr->capnodes * sizeof *tr->term);
            }
            tr->term[tr->nnodes] = -1;
            tr->ekey[j] = key;
            tr->echild[j] = tr->nnodes++;
            tr->nedges++;
        }
        node = tr->echild[j];
    }
    tr->first[(unsigned char)s[0]] = 1;
    if (tr->term[node] >= 0) return -1;
    tr->term[node] = id;
    return 0;
}

size_t dsf_tok_trie_longest(const tok_trie *tr, const char *text, size_t n, size_t i, int32_t *id) {
    if (!tr->nnodes || !tr->first[(unsigned char)text[i]]) return 0;
    int32_t node = 0;
    size_t best = 0;
    for (size_t k = i; k < n; k++) {
        uint64_t key = (uint64_t)node << 8 | (unsigned char)text[k];
        size_t j = edge_slot(tr, key);
        if (tr->echild[j] < 0) break;
        node = tr->echild[j];
        if (tr->term[node] >= 0) {
            best = k + 1 - i;
            *id = tr->term[node];
        }
    }
    return best;
}
