#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sha256.h"
#include "tok/tok_internal.h"

static pthread_once_t onig_once = PTHREAD_ONCE_INIT;

static void onig_setup(void) {
    OnigEncoding enc = ONIG_ENCODING_UTF8;
    onig_initialize(&enc, 1);
}

static int is_off(json_t *v) {
    return !v || json_is_null(v) || json_is_false(v);
}

static int is_empty_str(json_t *v) {
    return !v || json_is_null(v) || (json_is_string(v) && !json_string_length(v));
}

static int check_model(json_t *m, const char *path, dsf_err *e) {
    if (!json_is_object(m)) return dsf_fail(e, "%s: model: missing or not an object", path);
    json_t *type = json_object_get(m, "type");
    if (!json_is_string(type) || strcmp(json_string_value(type), "BPE"))
        return dsf_fail(e, "%s: model.type: only \"BPE\" is supported", path);
    const char *off[] = {"dropout", "unk_token", "fuse_unk", "byte_fallback", "ignore_merges"};
    for (size_t i = 0; i < sizeof off / sizeof *off; i++)
        if (!is_off(json_object_get(m, off[i])))
            return dsf_fail(e, "%s: model.%s: only null/false is supported", path, off[i]);
    if (!is_empty_str(json_object_get(m, "continuing_subword_prefix")) ||
        !is_empty_str(json_object_get(m, "end_of_word_suffix")))
        return dsf_fail(e, "%s: model: continuing_subword_prefix/end_of_word_suffix are not supported", path);
    return 0;
}

static int check_plain(json_t *root, const char *key, const char *path, int allow_null, dsf_err *e) {
    json_t *v = json_object_get(root, key);
    if (!v || json_is_null(v)) return allow_null ? 0 : dsf_fail(e, "%s: %s: missing (ByteLevel expected)", path, key);
    json_t *type = json_object_get(v, "type");
    if (json_is_string(type) && !strcmp(json_string_value(type), "ByteLevel")) return 0;
    return dsf_fail(e, "%s: %s: only ByteLevel is supported", path, key);
}

static int check_normalizer(json_t *root, const char *path, dsf_err *e) {
    json_t *n = json_object_get(root, "normalizer");
    if (!n || json_is_null(n)) return 0;
    json_t *type = json_object_get(n, "type"), *list = json_object_get(n, "normalizers");
    if (json_is_string(type) && !strcmp(json_string_value(type), "Sequence") && json_is_array(list) &&
        !json_array_size(list))
        return 0;
    return dsf_fail(e, "%s: normalizer: only null or an empty Sequence is supported", path);
}

static int compile_split(dsf_tok *t, json_t *s, size_t k, const char *path, dsf_err *e) {
    json_t *pat = json_object_get(json_object_get(s, "pattern"), "Regex");
    json_t *beh = json_object_get(s, "behavior");
    if (!json_is_string(pat))
        return dsf_fail(e, "%s: pre_tokenizer.pretokenizers[%zu].pattern: only {\"Regex\": ...} is supported", path, k);
    if (!json_is_string(beh) || strcmp(json_string_value(beh), "Isolated") || !is_off(json_object_get(s, "invert")))
        return dsf_fail(e, "%s: pre_tokenizer.pretokenizers[%zu]: only behavior Isolated, invert false", path, k);
    if (t->nsplit == TOK_MAX_SPLITS)
        return dsf_fail(e, "%s: pre_tokenizer: more than %d Split steps", path, TOK_MAX_SPLITS);
    dsf_tok_buf patched = {0};
    char why[256];
    if (dsf_tok_regex_patch(json_string_value(pat), json_string_length(pat), &patched, why, sizeof why)) {
        dsf_tok_buf_free(&patched);
        return dsf_fail(e, "%s: pre_tokenizer.pretokenizers[%zu].pattern: %s", path, k, why);
    }
    const UChar *p = (const UChar *)patched.p;
    OnigErrorInfo info;
    int r =
        onig_new(&t->split[t->nsplit], p, p + patched.n, ONIG_OPTION_NONE, ONIG_ENCODING_UTF8, ONIG_SYNTAX_RUBY, &info);
    dsf_tok_buf_free(&patched);
    if (r != ONIG_NORMAL) {
        UChar msg[ONIG_MAX_ERROR_MESSAGE_LEN];
        onig_error_code_to_str(msg, r, &info);
        return dsf_fail(e, "%s: pre_tokenizer.pretokenizers[%zu].pattern: %s", path, k, (const char *)msg);
    }
    t->nsplit++;
    return 0;
}

static int check_pretok(dsf_tok *t, json_t *root, const char *path, dsf_err *e) {
    json_t *pt = json_object_get(root, "pre_tokenizer");
    json_t *type = json_object_get(pt, "type"), *list = json_object_get(pt, "pretokenizers");
    if (!json_is_string(type) || strcmp(json_string_value(type), "Sequence") || !json_is_array(list) ||
        !json_array_size(list))
        return dsf_fail(e, "%s: pre_tokenizer: a Sequence of Split steps ending in ByteLevel is expected", path);
    size_t n = json_array_size(list);
    for (size_t k = 0; k < n; k++) {
        json_t *s = json_array_get(list, k);
        const char *ty = json_string_value(json_object_get(s, "type"));
        if (k + 1 == n) {
            if (!ty || strcmp(ty, "ByteLevel") || !is_off(json_object_get(s, "add_prefix_space")) ||
                !is_off(json_object_get(s, "use_regex")))
                return dsf_fail(e, "%s: pre_tokenizer: last step must be ByteLevel without prefix space or regex",
                                path);
        } else if (!ty || strcmp(ty, "Split")) {
            return dsf_fail(e, "%s: pre_tokenizer.pretokenizers[%zu]: only Split is supported here", path, k);
        } else if (compile_split(t, s, k, path, e)) {
            return -1;
        }
    }
    return 0;
}

// Byte-level token string to raw bytes; a character outside the alphabet keeps the string's own bytes, as HF does.
static void token_bytes(const char *s, dsf_tok_buf *out) {
    size_t start = out->n;
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        uint32_t cp;
        int k = *p < 0x80 ? 1 : *p < 0xE0 ? 2 : *p < 0xF0 ? 3 : 4;
        cp = k == 1 ? *p : (*p & (0x7F >> k));
        for (int i = 1; i < k && p[i]; i++) cp = cp << 6 | (p[i] & 0x3F);
        int b = dsf_tok_char_byte(cp);
        if (b < 0) {
            out->n = start;
            dsf_tok_buf_puts(out, s);
            return;
        }
        unsigned char c = (unsigned char)b;
        dsf_tok_buf_put(out, &c, 1);
        p += k;
    }
}

static void str_index(dsf_tok *t) {
    t->scap = 1;
    while (t->scap < (size_t)t->size * 2) t->scap *= 2;
    t->shash = dsf_malloc(t->scap * sizeof *t->shash);
    for (size_t i = 0; i < t->scap; i++) t->shash[i] = -1;
    for (int32_t id = 0; id < t->size; id++) {
        const char *s = t->str_blob + t->str_off[id];
        size_t m = t->scap - 1, i = dsf_tok_hash(s, strlen(s)) & m;
        while (t->shash[i] >= 0) i = (i + 1) & m;
        t->shash[i] = id;
    }
}

int32_t dsf_tok_id(const dsf_tok *t, const char *s) {
    size_t m = t->scap - 1, i = dsf_tok_hash(s, strlen(s)) & m;
    for (; t->shash[i] >= 0; i = (i + 1) & m)
        if (!strcmp(t->str_blob + t->str_off[t->shash[i]], s)) return t->shash[i];
    return -1;
}

static int merge_put(dsf_tok *t, int32_t a, int32_t b, uint64_t val) {
    uint64_t key = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
    size_t m = t->mcap - 1, i = dsf_tok_hash64(key) & m;
    while (t->mval[i] != UINT64_MAX && t->mkey[i] != key) i = (i + 1) & m;
    t->mkey[i] = key;
    t->mval[i] = val;
    return 0;
}

uint64_t dsf_tok_merge_lookup(const dsf_tok *t, int32_t a, int32_t b) {
    uint64_t key = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
    size_t m = t->mcap - 1, i = dsf_tok_hash64(key) & m;
    for (; t->mval[i] != UINT64_MAX; i = (i + 1) & m)
        if (t->mkey[i] == key) return t->mval[i];
    return UINT64_MAX;
}

static int load_merges(dsf_tok *t, json_t *merges, const char *path, dsf_err *e) {
    if (!json_is_array(merges)) return dsf_fail(e, "%s: model.merges: missing or not a list", path);
    size_t n = json_array_size(merges);
    t->mcap = 1;
    while (t->mcap < n * 2 + 2) t->mcap *= 2;
    t->mkey = dsf_malloc(t->mcap * sizeof *t->mkey);
    t->mval = dsf_malloc(t->mcap * sizeof *t->mval);
    memset(t->mval, 0xFF, t->mcap * sizeof *t->mval);
    char pair[2][512];
    for (size_t r = 0; r < n; r++) {
        json_t *m = json_array_get(merges, r);
        if (json_is_string(m)) {
            const char *s = json_string_value(m), *sp = strchr(s, ' ');
            if (!sp || strchr(sp + 1, ' ') || (size_t)(sp - s) >= sizeof pair[0] || strlen(sp + 1) >= sizeof pair[1])
                return dsf_fail(e, "%s: model.merges[%zu]: \"%s\" is not two tokens split by one space", path, r, s);
            memcpy(pair[0], s, (size_t)(sp - s));
            pair[0][sp - s] = 0;
            strcpy(pair[1], sp + 1);
        } else if (json_is_array(m) && json_array_size(m) == 2 && json_is_string(json_array_get(m, 0)) &&
                   json_is_string(json_array_get(m, 1)) && json_string_length(json_array_get(m, 0)) < 512 &&
                   json_string_length(json_array_get(m, 1)) < 512) {
            strcpy(pair[0], json_string_value(json_array_get(m, 0)));
            strcpy(pair[1], json_string_value(json_array_get(m, 1)));
        } else {
            return dsf_fail(e, "%s: model.merges[%zu]: expected \"a b\" or [a, b]", path, r);
        }
        char joined[1024];
        snprintf(joined, sizeof joined, "%s%s", pair[0], pair[1]);
        int32_t a = dsf_tok_id(t, pair[0]), b = dsf_tok_id(t, pair[1]), c = dsf_tok_id(t, joined);
        if (a < 0 || b < 0 || c < 0)
            return dsf_fail(e, "%s: model.merges[%zu]: \"%s\" + \"%s\" is not in the vocab", path, r, pair[0], pair[1]);
        merge_put(t, a, b, (uint64_t)r << 32 | (uint32_t)c);
    }
    return 0;
}

static int check_added(json_t *a, size_t k, const char *path, dsf_err *e) {
    const char *flags[] = {"lstrip", "rstrip", "single_word"};
    for (size_t i = 0; i < sizeof flags / sizeof *flags; i++)
        if (!is_off(json_object_get(a, flags[i])))
            return dsf_fail(e, "%s: added_tokens[%zu].%s: true is not supported (the DeepSeek files have none)", path,
                            k, flags[i]);
    if (!json_is_string(json_object_get(a, "content")) || !json_string_length(json_object_get(a, "content")) ||
        !json_is_integer(json_object_get(a, "id")))
        return dsf_fail(e, "%s: added_tokens[%zu]: needs a non-empty content and an integer id", path, k);
    return 0;
}

int dsf_tok_load_tables(dsf_tok *t, const char *path, const char *text, size_t len, dsf_err *e) {
    json_error_t je;
    json_t *root = json_loadb(text, len, 0, &je);
    if (!root) return dsf_fail(e, "%s: line %d: %s", path, je.line, je.text);
    int rc = -1;
    json_t *model = json_object_get(root, "model"), *vocab = json_object_get(model, "vocab");
    json_t *added = json_object_get(root, "added_tokens");
    if (check_model(model, path, e) || check_normalizer(root, path, e) || check_pretok(t, root, path, e) ||
        check_plain(root, "decoder", path, 0, e) || check_plain(root, "post_processor", path, 1, e))
        goto out;
    if (!json_is_object(vocab)) {
        dsf_fail(e, "%s: model.vocab: missing or not an object", path);
        goto out;
    }
    if (added && !json_is_array(added)) {
        dsf_fail(e, "%s: added_tokens: not a list", path);
        goto out;
    }
    int64_t top = -1;
    const char *key;
    json_t *v;
    json_object_foreach(vocab, key, v) {
        if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) >= (1 << 30)) {
            dsf_fail(e, "%s: model.vocab[\"%s\"]: id must be an integer in [0, 2^30)", path, key);
            goto out;
        }
        if (json_integer_value(v) > top) top = json_integer_value(v);
    }
    for (size_t k = 0; k < json_array_size(added); k++) {
        json_t *a = json_array_get(added, k);
        if (check_added(a, k, path, e)) goto out;
        int64_t id = json_integer_value(json_object_get(a, "id"));
        if (id < 0 || id >= (1 << 30)) {
            dsf_fail(e, "%s: added_tokens[%zu].id: %lld outside [0, 2^30)", path, k, (long long)id);
            goto out;
        }
        if (id > top) top = id;
    }
    t->size = (int32_t)(top + 1);
    const char **strs = dsf_calloc((size_t)t->size, sizeof *strs);
    t->special = dsf_calloc((size_t)t->size, 1);
    json_object_foreach(vocab, key, v) {
        if (strs[json_integer_value(v)]) {
            dsf_fail(e, "%s: model.vocab: id %lld appears twice", path, (long long)json_integer_value(v));
            free(strs);
            goto out;
        }
        strs[json_integer_value(v)] = key;
    }
    uint8_t *is_added = dsf_calloc((size_t)t->size, 1);
    for (size_t k = 0; k < json_array_size(added); k++) {
        json_t *a = json_array_get(added, k);
        int32_t id = (int32_t)json_integer_value(json_object_get(a, "id"));
        const char *content = json_string_value(json_object_get(a, "content"));
        strs[id] = content;
        is_added[id] = 1;
        t->special[id] = json_is_true(json_object_get(a, "special"));
        tok_trie *tr = json_is_true(json_object_get(a, "normalized")) ? &t->norm : &t->raw;
        if (dsf_tok_trie_add(tr, content, strlen(content), id)) {
            dsf_fail(e, "%s: added_tokens[%zu]: content \"%s\" appears twice", path, k, content);
            free(strs);
            free(is_added);
            goto out;
        }
    }
    dsf_tok_buf sb = {0}, bb = {0};
    t->str_off = dsf_malloc(((size_t)t->size + 1) * sizeof *t->str_off);
    t->bytes_off = dsf_malloc(((size_t)t->size + 1) * sizeof *t->bytes_off);
    int32_t hole = -1;
    for (int32_t id = 0; id < t->size; id++) {
        if (!strs[id] && hole < 0) hole = id;
        t->str_off[id] = sb.n;
        t->bytes_off[id] = bb.n;
        dsf_tok_buf_put(&sb, strs[id] ? strs[id] : "", strs[id] ? strlen(strs[id]) + 1 : 1);
        if (is_added[id])
            dsf_tok_buf_puts(&bb, strs[id]);
        else if (strs[id])
            token_bytes(strs[id], &bb);
    }
    t->str_off[t->size] = sb.n;
    t->bytes_off[t->size] = bb.n;
    t->str_blob = sb.p;
    t->bytes_blob = bb.p;
    free(strs);
    free(is_added);
    if (hole >= 0) {
        dsf_fail(e, "%s: no token has id %d (ids must cover 0..%d)", path, hole, t->size - 1);
        goto out;
    }
    str_index(t);
    if (load_merges(t, json_object_get(model, "merges"), path, e)) goto out;
    for (int b = 0; b < 256; b++) {
        char s[4];
        uint32_t cp = dsf_tok_byte_char((uint8_t)b);
        if (cp < 0x80) {
            s[0] = (char)cp, s[1] = 0;
        } else {
            s[0] = (char)(0xC0 | cp >> 6), s[1] = (char)(0x80 | (cp & 0x3F)), s[2] = 0;
        }
        t->byte_id[b] = dsf_tok_id(t, s);
        if (t->byte_id[b] < 0) {
            dsf_fail(e, "%s: model.vocab: byte 0x%02x (\"%s\") has no token, and there is no unk_token", path, b, s);
            goto out;
        }
    }
    rc = 0;
out:
    json_decref(root);
    return rc;
}

int dsf_tok_open(dsf_tok **out, const char *path, dsf_err *e) {
    *out = NULL;
    pthread_once(&onig_once, onig_setup);
    FILE *f = fopen(path, "rb");
    if (!f)
        return dsf_fail(e, "%s: cannot open tokenizer.json (run tools/fetch_tokenizer, or pass --tokenizer PATH)",
                        path);
    dsf_tok_buf text = {0};
    char chunk[1 << 16];
    size_t k;
    while ((k = fread(chunk, 1, sizeof chunk, f)) > 0) dsf_tok_buf_put(&text, chunk, k);
    int err = ferror(f);
    fclose(f);
    if (err) {
        dsf_tok_buf_free(&text);
        return dsf_fail(e, "%s: read error", path);
    }
    dsf_tok *t = dsf_calloc(1, sizeof *t);
    t->path = dsf_strdup(path);
    uint8_t digest[32];
    dsf_sha256(text.p, text.n, digest);
    dsf_sha256_hex(digest, t->sha);
    pthread_mutex_init(&t->cache_lock, NULL);
    t->cache = dsf_calloc(TOK_CACHE_SLOTS, sizeof *t->cache);
    int rc = dsf_tok_load_tables(t, path, text.p ? text.p : "", text.n, e);
    dsf_tok_buf_free(&text);
    if (rc) {
        dsf_tok_close(t);
        return -1;
    }
    *out = t;
    return 0;
}

void dsf_tok_close(dsf_tok *t) {
    if (!t) return;
    for (int i = 0; i < t->nsplit; i++) onig_free(t->split[i]);
    dsf_tok_trie_free(&t->raw);
    dsf_tok_trie_free(&t->norm);
    pthread_mutex_destroy(&t->cache_lock);
    free(t->cache);
    free(t->bytes_blob);
    free(t->str_blob);
    free(t->bytes_off);
    free(t->str_off);
    free(t->special);
    free(t->mkey);
    free(t->mval);
    free(t->shash);
    free(t->path);
    free(t);
}

int32_t dsf_tok_size(const dsf_tok *t) {
    return t->size;
}

const char *dsf_tok_sha256(const dsf_tok *t) {
    return t->sha;
}

const char *dsf_tok_token_str(const dsf_tok *t, int32_t id) {
    return id >= 0 && id < t->size ? t->str_blob + t->str_off[id] : NULL;
}

int dsf_tok_token_bytes(const dsf_tok *t, int32_t id, const char **p, size_t *n) {
    if (id < 0 || id >= t->size) return -1;
    *p = t->bytes_blob + t->bytes_off[id];
    *n = t->bytes_off[id + 1] - t->bytes_off[id];
    return 0;
}

int dsf_tok_is_special(const dsf_tok *t, int32_t id) {
    return id >= 0 && id < t->size && t->special[id];
}
