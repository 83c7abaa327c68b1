#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <utf8proc.h>

#include "base/sha256.h"
#include "tok/tok_engram.h"
#include "tok/tok_internal.h"

#define CACHE_MAGIC "DSFENGM1"

// Rust's char::is_whitespace (the White_Space property), which HF's Strip uses.
static int is_white(int32_t c) {
    return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

static int32_t *to_cps(const char *s, size_t n, size_t *len) {
    int32_t *cp = dsf_malloc((n + 1) * sizeof *cp);
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        utf8proc_ssize_t r = utf8proc_iterate((const utf8proc_uint8_t *)s + i, (utf8proc_ssize_t)(n - i), &cp[k]);
        DSF_ASSERT(r > 0);
        i += (size_t)r;
        k++;
    }
    *len = k;
    return cp;
}

static void put_cp(dsf_tok_buf *b, int32_t c) {
    utf8proc_uint8_t u[4];
    utf8proc_ssize_t k = utf8proc_encode_char(c, u);
    dsf_tok_buf_put(b, u, (size_t)k);
}

static void map_utf8(const char *s, size_t n, utf8proc_option_t opt, dsf_tok_buf *out) {
    utf8proc_uint8_t *r = NULL;
    utf8proc_ssize_t k = utf8proc_map((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n, &r, opt | UTF8PROC_STABLE);
    DSF_ASSERT(k >= 0);
    dsf_tok_buf_put(out, r, (size_t)k);
    free(r);
}

// NFKC, NFD, strip marks, lowercase, [ \t\r\n]+ to one space, a lone space kept via the sentinel, strip.
static void normalize(const char *text, size_t n, dsf_tok_buf *out) {
    dsf_tok_buf a = {0}, b = {0};
    map_utf8(text, n, UTF8PROC_COMPOSE | UTF8PROC_COMPAT, &a);
    map_utf8(a.p ? a.p : "", a.n, UTF8PROC_DECOMPOSE, &b);
    size_t len;
    int32_t *cp = to_cps(b.p ? b.p : "", b.n, &len);
    dsf_tok_buf c = {0};
    int prev_ws = 0;
    for (size_t i = 0; i < len; i++) {
        utf8proc_category_t cat = utf8proc_category(cp[i]);
        if (cat == UTF8PROC_CATEGORY_MN || cat == UTF8PROC_CATEGORY_MC || cat == UTF8PROC_CATEGORY_ME) continue;
        int ws = cp[i] == ' ' || cp[i] == '\t' || cp[i] == '\r' || cp[i] == '\n';
        if (ws && !prev_ws)
            dsf_tok_buf_put(&c, " ", 1);
        else if (cp[i] == 0x130)
            dsf_tok_buf_put(&c, "i\xCC\x87", 3);
        else if (!ws)
            put_cp(&c, utf8proc_tolower(cp[i]));
        prev_ws = ws;
    }
    free(cp);
    if (c.n == 1 && c.p[0] == ' ') {
        dsf_tok_buf_puts(out, " ");
    } else {
        cp = to_cps(c.p ? c.p : "", c.n, &len);
        size_t lo = 0, hi = len;
        while (lo < hi && is_white(cp[lo])) lo++;
        while (hi > lo && is_white(cp[hi - 1])) hi--;
        for (size_t i = lo; i < hi; i++) put_cp(out, cp[i] == 0xE000 ? ' ' : cp[i]);
        free(cp);
    }
    dsf_tok_buf_free(&a), dsf_tok_buf_free(&b), dsf_tok_buf_free(&c);
}

void dsf_tok_engram_key(const dsf_tok *t, int32_t id, dsf_tok_buf *key) {
    const char *p;
    size_t n;
    DSF_ASSERT(!dsf_tok_token_bytes(t, id, &p, &n));
    dsf_tok_buf text = {0};
    dsf_utf8_lossy(p, n, &text);
    size_t start = key->n;
    if (text.n && memmem(text.p, text.n, "\xEF\xBF\xBD", 3)) {
        dsf_tok_buf_puts(key, dsf_tok_token_str(t, id));
    } else {
        normalize(text.p ? text.p : "", text.n, key);
        if (key->n == start) dsf_tok_buf_put(key, text.p, text.n);
    }
    dsf_tok_buf_free(&text);
}

int dsf_tok_engram_build(const dsf_tok *t, int32_t **map, int32_t *n_keys, dsf_err *e) {
    (void)e;
    size_t cap = 1;
    while (cap < (size_t)t->size * 2) cap *= 2;
    int32_t *slot = dsf_malloc(cap * sizeof *slot);
    for (size_t i = 0; i < cap; i++) slot[i] = -1;
    dsf_tok_buf keys = {0};
    size_t *off = dsf_malloc(((size_t)t->size + 1) * sizeof *off);
    int32_t *m = dsf_malloc((size_t)t->size * sizeof *m), next = 0;
    for (int32_t id = 0; id < t->size; id++) {
        size_t start = keys.n;
        dsf_tok_engram_key(t, id, &keys);
        size_t len = keys.n - start, h = dsf_tok_hash(keys.p + start, len) & (cap - 1);
        for (; slot[h] >= 0; h = (h + 1) & (cap - 1)) {
            int32_t k = slot[h];
            if (off[k + 1] - off[k] == len && !memcmp(keys.p + off[k], keys.p + start, len)) break;
        }
        if (slot[h] < 0) {
            slot[h] = next;
            off[next] = start;
            off[++next] = keys.n;
        } else {
            keys.n = start;
        }
        m[id] = slot[h];
    }
    free(slot);
    free(off);
    dsf_tok_buf_free(&keys);
    *map = m;
    *n_keys = next;
    return 0;
}

static void cache_default(const dsf_tok *t, char *out, size_t n) {
    const char *slash = strrchr(t->path, '/');
    int dir = slash ? (int)(slash - t->path + 1) : 0;
    snprintf(out, n, "%.*sengram_map.bin", dir, t->path);
}

// Returns 0 with the map when the cache is whole and made from this very tokenizer.json; -1 otherwise.
static int cache_read(const dsf_tok *t, const char *path, int32_t **map, int32_t *n_keys) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    size_t body = 8 + 64 + 8 + (size_t)t->size * 4, total = body + 32;
    unsigned char *buf = dsf_malloc(total);
    size_t got = fread(buf, 1, total, f);
    int extra = fgetc(f) != EOF;
    fclose(f);
    uint8_t digest[32];
    int32_t hdr[2];
    int ok = got == total && !extra && !memcmp(buf, CACHE_MAGIC, 8) && !memcmp(buf + 8, t->sha, 64);
    if (ok) {
        dsf_sha256(buf, body, digest);
        memcpy(hdr, buf + 72, 8);
        ok = !memcmp(digest, buf + body, 32) && hdr[0] == t->size && hdr[1] > 0;
    }
    if (ok) {
        *map = dsf_malloc((size_t)t->size * 4);
        memcpy(*map, buf + 80, (size_t)t->size * 4);
        *n_keys = hdr[1];
    }
    free(buf);
    return ok ? 0 : -1;
}

static void cache_write(const dsf_tok *t, const char *path, const int32_t *map, int32_t n_keys) {
    dsf_tok_buf b = {0};
    int32_t hdr[2] = {t->size, n_keys};
    dsf_tok_buf_put(&b, CACHE_MAGIC, 8);
    dsf_tok_buf_put(&b, t->sha, 64);
    dsf_tok_buf_put(&b, hdr, 8);
    dsf_tok_buf_put(&b, map, (size_t)t->size * 4);
    uint8_t digest[32];
    dsf_sha256(b.p, b.n, digest);
    dsf_tok_buf_put(&b, digest, 32);
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp%d", path, (int)getpid());
    FILE *f = fopen(tmp, "wb");
    if (f) {
        int ok = fwrite(b.p, 1, b.n, f) == b.n;
        ok = !fclose(f) && ok;
        if (!ok || rename(tmp, path)) unlink(tmp);
    }
    dsf_tok_buf_free(&b);
}

int dsf_tok_engram_map(const dsf_tok *t, const char *cache_path, int32_t expect_keys, int32_t **map, int32_t *n_keys,
                       dsf_err *e) {
    char path[4096];
    if (cache_path)
        snprintf(path, sizeof path, "%s", cache_path);
    else
        cache_default(t, path, sizeof path);
    *map = NULL;
    int fresh = cache_read(t, path, map, n_keys) != 0;
    if (fresh && dsf_tok_engram_build(t, map, n_keys, e)) return -1;
    if (expect_keys > 0 && *n_keys != expect_keys) {
        free(*map);
        *map = NULL;
        return dsf_fail(e, "%s: Engram token map has %d distinct keys, the model needs %d (another tokenizer?)",
                        t->path, *n_keys, expect_keys);
    }
    if (fresh) cache_write(t, path, *map, *n_keys);
    return 0;
}
