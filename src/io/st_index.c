#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/st_internal.h"

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static long shard_of(const char *const *files, size_t n, const char *file) {
    const char *const *p = bsearch(&file, files, n, sizeof *files, cmp_str);
    return p ? (long)(p - files) : -1;
}

// Rule: a weight_map value is a plain file name, so a hostile index cannot reach outside its directory.
static int plain_name(const char *s) {
    return s[0] && strcmp(s, ".") && strcmp(s, "..") && !strchr(s, '/');
}

static char *dir_of(const char *path) {
    const char *slash = strrchr(path, '/');
    if (!slash) return dsf_strdup(".");
    size_t n = slash == path ? 1 : (size_t)(slash - path);
    char *d = dsf_malloc(n + 1);
    memcpy(d, path, n);
    d[n] = 0;
    return d;
}

static const char *first_tensor_of(json_t *wm, const char *file) {
    const char *key;
    json_t *v;
    json_object_foreach(wm, key, v) {
        if (!strcmp(json_string_value(v), file)) return key;
    }
    return "?";
}

static int load_shards(dsf_st *st, const char *index, json_t *wm, const char *const *files, dsf_err *e) {
    char *dir = dir_of(index);
    int rc = 0;
    for (size_t s = 0; s < st->nshards && !rc; s++) {
        size_t n = strlen(dir) + strlen(files[s]) + 2;
        char *path = dsf_malloc(n);
        snprintf(path, n, "%s/%s", dir, files[s]);
        // Rule: every shard the index names exists and is a valid safetensors file.
        if (dsf_st_shard_load(&st->shards[s], path, e))
            rc = dsf_fail_prefix(e, "%s: %s: in shard %s", index, first_tensor_of(wm, files[s]), files[s]);
        free(path);
    }
    free(dir);
    return rc;
}

static int check_coverage(const dsf_st *st, const char *index, json_t *wm, const char *const *files, dsf_err *e) {
    const char *key;
    json_t *v;
    json_object_foreach(wm, key, v) {
        const dsf_tensor *t = dsf_st_find(st, key);
        const char *file = json_string_value(v);
        // Rule: every indexed tensor is stored in the shard the index names.
        if (!t) return dsf_fail(e, "%s: %s: not stored in its shard %s", index, key, file);
        if (t->shard != shard_of(files, st->nshards, file))
            return dsf_fail(e, "%s: %s: indexed in %s but stored in %s", index, key, file, st->shards[t->shard].path);
    }
    if (st->count == json_object_size(wm)) return 0;
    // Rule: every stored tensor is indexed, so a shard cannot smuggle in weights the index does not list.
    for (size_t i = 0; i < st->count; i++) {
        const dsf_tensor *t = &st->tensors[i];
        if (!json_object_get(wm, t->name))
            return dsf_fail(e, "%s: %s: stored but not named in %s", st->shards[t->shard].path, t->name, index);
    }
    return 0;
}

int dsf_st_index_open(const char *index, dsf_st **out, dsf_err *e) {
    *out = NULL;
    json_error_t je;
    // Rule: the index is a JSON object without duplicate keys whose "weight_map" maps names to shard file names.
    json_t *root = json_load_file(index, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return dsf_fail(e, "%s: cannot read the index: %s (line %d, column %d)", index, je.text, je.line, je.column);
    int rc = -1;
    const char **files = NULL;
    dsf_st *st = NULL;
    json_t *wm = json_object_get(root, "weight_map"), *v;
    // The index's "metadata" (total_size) is not checked: the shards' own headers are the authority on sizes.
    const char *key;
    if (!json_is_object(wm) || !json_object_size(wm)) {
        dsf_fail(e, "%s: weight_map is missing, empty or not an object", index);
        goto done;
    }
    size_t n = 0;
    files = dsf_calloc(json_object_size(wm), sizeof *files);
    json_object_foreach(wm, key, v) {
        if (!json_is_string(v) || !plain_name(json_string_value(v))) {
            dsf_fail(e, "%s: %s: the shard must be a file name in the index's directory", index, key);
            goto done;
        }
        files[n++] = json_string_value(v);
    }
    qsort(files, n, sizeof *files, cmp_str);
    size_t nshards = 0;
    for (size_t i = 0; i < n; i++)
        if (!nshards || strcmp(files[i], files[nshards - 1])) files[nshards++] = files[i];
    st = dsf_calloc(1, sizeof *st);
    st->shards = dsf_calloc(nshards, sizeof *st->shards);
    st->nshards = nshards;
    if (load_shards(st, index, wm, files, e) || dsf_st_build(st, e) || check_coverage(st, index, wm, files, e))
        goto done;
    *out = st;
    st = NULL;
    rc = 0;
done:
    dsf_st_close(st);
    free(files);
    json_decref(root);
    return rc;
}
