#include <stdlib.h>
#include <string.h>

#include "tok/tok_internal.h"

// A pending merge: the pair (a, b) whose left symbol starts at byte pos; ordered by rank, then leftmost.
typedef struct merge_ent {
    uint32_t rank;
    int32_t pos, a, b, merged;
} merge_ent;

static int ent_less(const merge_ent *x, const merge_ent *y) {
    return x->rank != y->rank ? x->rank < y->rank : x->pos < y->pos;
}

static void heap_push(merge_ent *h, size_t *n, merge_ent x) {
    size_t i = (*n)++;
    while (i && ent_less(&x, &h[(i - 1) / 2])) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = x;
}

static merge_ent heap_pop(merge_ent *h, size_t *n) {
    merge_ent top = h[0], x = h[--*n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && ent_less(&h[c + 1], &h[c])) c++;
        if (!ent_less(&h[c], &x)) break;
        h[i] = h[c];
        i = c;
    }
    if (*n) h[i] = x;
    return top;
}

static void push_pair(const dsf_tok *t, merge_ent *h, size_t *nh, const int32_t *id, int32_t l, int32_t r) {
    if (l < 0 || r < 0) return;
    uint64_t m = dsf_tok_merge_lookup(t, id[l], id[r]);
    if (m == UINT64_MAX) return;
    merge_ent x = {(uint32_t)(m >> 32), l, id[l], id[r], (int32_t)(uint32_t)m};
    heap_push(h, nh, x);
}

// Merges the lowest-ranked adjacent pair, leftmost first, until none is left: HF's BPE without dropout.
static void bpe_merge(const dsf_tok *t, const char *p, size_t n, dsf_tok_ids *out) {
    enum { STACK = 128 };
    int32_t s_id[STACK], s_next[STACK], s_prev[STACK];
    merge_ent s_heap[3 * STACK];
    int big = n > STACK;
    int32_t *id = big ? dsf_malloc(n * sizeof *id) : s_id;
    int32_t *next = big ? dsf_malloc(n * sizeof *next) : s_next;
    int32_t *prev = big ? dsf_malloc(n * sizeof *prev) : s_prev;
    merge_ent *h = big ? dsf_malloc(3 * n * sizeof *h) : s_heap;
    size_t nh = 0;
    for (size_t i = 0; i < n; i++) {
        id[i] = t->byte_id[(unsigned char)p[i]];
        next[i] = i + 1 < n ? (int32_t)i + 1 : -1;
        prev[i] = (int32_t)i - 1;
    }
    for (size_t i = 0; i + 1 < n; i++) push_pair(t, h, &nh, id, (int32_t)i, (int32_t)i + 1);
    while (nh) {
        merge_ent x = heap_pop(h, &nh);
        int32_t r = next[x.pos];
        if (id[x.pos] != x.a || r < 0 || id[r] != x.b) continue;
        id[x.pos] = x.merged;
        id[r] = -1;
        next[x.pos] = next[r];
        if (next[r] >= 0) prev[next[r]] = x.pos;
        push_pair(t, h, &nh, id, prev[x.pos], x.pos);
        push_pair(t, h, &nh, id, x.pos, next[x.pos]);
    }
    for (int32_t i = 0; i >= 0; i = next[i]) dsf_tok_ids_push(out, id[i]);
    if (big) {
        free(id);
        free(next);
        free(prev);
        free(h);
    }
}

void dsf_tok_bpe(const dsf_tok *t, const char *p, size_t n, dsf_tok_ids *out) {
    if (!n) return;
    if (n == 1) {
        dsf_tok_ids_push(out, t->byte_id[(unsigned char)p[0]]);
        return;
    }
    dsf_tok *mt = (dsf_tok *)t;
    tok_cache_slot *slot = NULL;
    if (n <= TOK_CACHE_MAX_BYTES) {
        slot = &mt->cache[dsf_tok_hash(p, n) & (TOK_CACHE_SLOTS - 1)];
        pthread_mutex_lock(&mt->cache_lock);
        if (slot->len == n && !memcmp(slot->bytes, p, n)) {
            for (int i = 0; i < slot->nids; i++) dsf_tok_ids_push(out, slot->ids[i]);
            pthread_mutex_unlock(&mt->cache_lock);
            return;
        }
        pthread_mutex_unlock(&mt->cache_lock);
    }
    size_t start = out->n;
    bpe_merge(t, p, n, out);
    if (slot) {
        pthread_mutex_lock(&mt->cache_lock);
        slot->len = (uint8_t)n;
        slot->nids = (uint8_t)(out->n - start);
        memcpy(slot->bytes, p, n);
        memcpy(slot->ids, out->v + start, (out->n - start) * sizeof *out->v);
        pthread_mutex_unlock(&mt->cache_lock);
    }
}

typedef struct enc_ctx {
    const dsf_tok *t;
    dsf_tok_ids *out;
    OnigRegion *region;
    int err;
} enc_ctx;

// Split step `level` (Isolated): each match and each gap between matches goes on to the next step; empties drop.
static void pretok(enc_ctx *c, const char *p, size_t n, int level) {
    if (!n) return;
    if (level == c->t->nsplit) {
        dsf_tok_bpe(c->t, p, n, c->out);
        return;
    }
    const UChar *s = (const UChar *)p, *end = s + n;
    size_t pos = 0, last = 0;
    while (pos < n) {
        int r = onig_search(c->t->split[level], s, end, s + pos, end, c->region, ONIG_OPTION_NONE);
        if (r == ONIG_MISMATCH) break;
        if (r < 0) {
            c->err = r;
            return;
        }
        size_t ms = (size_t)c->region->beg[0], me = (size_t)c->region->end[0];
        if (me == ms) {
            pos = ms + 1;
            while (pos < n && (p[pos] & 0xC0) == 0x80) pos++;
            continue;
        }
        pretok(c, p + last, ms - last, level + 1);
        pretok(c, p + ms, me - ms, level + 1);
        last = pos = me;
    }
    pretok(c, p + last, n - last, level + 1);
}

// Added tokens of one trie, leftmost-longest; the gaps go to the next stage (the normalized trie, then splitting).
static void split_added(enc_ctx *c, const char *p, size_t n, int stage) {
    const tok_trie *tr = stage == 0 ? &c->t->raw : &c->t->norm;
    size_t i = 0, last = 0;
    while (i < n) {
        int32_t id;
        size_t k = dsf_tok_trie_longest(tr, p, n, i, &id);
        if (!k) {
            i++;
            continue;
        }
        if (i > last) {
            if (stage == 0)
                split_added(c, p + last, i - last, 1);
            else
                pretok(c, p + last, i - last, 0);
        }
        dsf_tok_ids_push(c->out, id);
        i += k;
        last = i;
    }
    if (last < n) {
        if (stage == 0)
            split_added(c, p + last, n - last, 1);
        else
            pretok(c, p + last, n - last, 0);
    }
}

int dsf_tok_encode(const dsf_tok *t, const char *text, size_t n, dsf_tok_ids *out, dsf_err *e) {
    dsf_tok_buf clean = {0};
    if (!dsf_utf8_valid(text, n)) {
        dsf_utf8_lossy(text, n, &clean);
        text = clean.p;
        n = clean.n;
    }
    enc_ctx c = {t, out, onig_region_new(), 0};
    split_added(&c, text, n, 0);
    onig_region_free(c.region, 1);
    dsf_tok_buf_free(&clean);
    if (c.err) {
        UChar msg[ONIG_MAX_ERROR_MESSAGE_LEN];
        onig_error_code_to_str(msg, c.err);
        return dsf_fail(e, "tokenizer: pre-tokenizer regex search failed: %s", (const char *)msg);
    }
    return 0;
}
