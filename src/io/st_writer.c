#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sha256.h"
#include "io/safetensors.h"

enum { W_DECLARING, W_WRITING, W_DONE };

struct dsf_st_writer {
    json_t *tensors; // name -> {dtype, shape, data_offsets}, in declaration order
    json_t *meta;    // "__metadata__" entries
    uint64_t total, written;
    int state;
    FILE *f;
    char *path, *tmp; // bytes go to tmp, renamed to path once complete, so a failed write leaves no plausible file
    dsf_sha256_ctx *sha;
};

dsf_st_writer *dsf_st_writer_new(void) {
    dsf_st_writer *w = dsf_calloc(1, sizeof *w);
    w->tensors = json_object();
    w->meta = json_object();
    DSF_ASSERT(w->tensors && w->meta);
    return w;
}

static void abandon(dsf_st_writer *w) {
    if (w->f) {
        fclose(w->f);
        w->f = NULL;
        remove(w->tmp);
    }
    dsf_sha256_free(w->sha);
    w->sha = NULL;
    w->state = W_DONE;
}

void dsf_st_writer_free(dsf_st_writer *w) {
    if (!w) return;
    abandon(w);
    json_decref(w->tensors);
    json_decref(w->meta);
    free(w->path);
    free(w->tmp);
    free(w);
}

int dsf_st_writer_add(dsf_st_writer *w, const char *name, dsf_dtype dtype, int ndim, const int64_t *shape, dsf_err *e) {
    if (w->state != W_DECLARING) return dsf_fail(e, "writer: %s: tensors are declared before begin", name);
    if (!name[0] || !strcmp(name, "__metadata__")) return dsf_fail(e, "writer: '%s' is not a tensor name", name);
    if (json_object_get(w->tensors, name)) return dsf_fail(e, "writer: %s: declared twice", name);
    if ((unsigned)dtype >= DSF_DT_COUNT) return dsf_fail(e, "writer: %s: dtype %d is unknown", name, (int)dtype);
    if (ndim < 0 || ndim > DSF_MAX_DIMS) return dsf_fail(e, "writer: %s: %d dimensions", name, ndim);
    uint64_t nbytes = dsf_dtype_size(dtype);
    json_t *dims = json_array();
    for (int i = 0; i < ndim; i++) {
        uint64_t d = (uint64_t)shape[i];
        if (shape[i] < 0 || (d && nbytes > (uint64_t)INT64_MAX / d)) {
            json_decref(dims);
            return dsf_fail(e, "writer: %s: shape[%d] = %" PRId64 " is negative or overflows", name, i, shape[i]);
        }
        nbytes *= d;
        json_array_append_new(dims, json_integer(shape[i]));
    }
    if (nbytes > (uint64_t)INT64_MAX - w->total) {
        json_decref(dims);
        return dsf_fail(e, "writer: %s: the file would pass 2^63 bytes", name);
    }
    json_t *info = json_pack("{s:s, s:o, s:[I, I]}", "dtype", dsf_dtype_name(dtype), "shape", dims, "data_offsets",
                             (json_int_t)w->total, (json_int_t)(w->total + nbytes));
    DSF_ASSERT(info);
    if (json_object_set_new(w->tensors, name, info)) return dsf_fail(e, "writer: a tensor name is not valid UTF-8");
    w->total += nbytes;
    return 0;
}

int dsf_st_writer_metadata(dsf_st_writer *w, const char *key, const char *value, dsf_err *e) {
    if (w->state != W_DECLARING) return dsf_fail(e, "writer: metadata %s: set before begin", key);
    json_t *v = json_string(value);
    if (!v) return dsf_fail(e, "writer: metadata %s: the value is not valid UTF-8", key);
    if (json_object_set_new(w->meta, key, v)) return dsf_fail(e, "writer: a metadata key is not valid UTF-8");
    return 0;
}

static int put(dsf_st_writer *w, const void *bytes, size_t n, dsf_err *e) {
    if (n && fwrite(bytes, 1, n, w->f) != n) {
        int err = errno;
        abandon(w);
        return dsf_fail(e, "%s: write failed: %s", w->path, strerror(err));
    }
    dsf_sha256_update(w->sha, bytes, n);
    return 0;
}

int dsf_st_writer_begin(dsf_st_writer *w, const char *path, dsf_err *e) {
    if (w->state != W_DECLARING) return dsf_fail(e, "%s: writer already begun", path);
    w->state = W_WRITING;
    w->path = dsf_strdup(path);
    w->tmp = dsf_malloc(strlen(path) + 5);
    sprintf(w->tmp, "%s.tmp", path);
    json_t *root = json_object();
    if (json_object_size(w->meta)) json_object_set(root, "__metadata__", w->meta);
    json_object_update(root, w->tensors);
    char *text = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    DSF_ASSERT(text);
    size_t len = strlen(text), padded = (len + DSF_ST_HEADER_ALIGN - 1) / DSF_ST_HEADER_ALIGN * DSF_ST_HEADER_ALIGN;
    if (padded > DSF_ST_HEADER_MAX) {
        free(text);
        w->state = W_DONE;
        return dsf_fail(e, "%s: header of %zu bytes exceeds the limit of %d", path, padded, DSF_ST_HEADER_MAX);
    }
    w->f = fopen(w->tmp, "wb");
    if (!w->f) {
        free(text);
        w->state = W_DONE;
        return dsf_fail(e, "%s: cannot create: %s", w->tmp, strerror(errno));
    }
    setvbuf(w->f, NULL, _IOFBF, 1 << 20);
    w->sha = dsf_sha256_new();
    uint8_t le[8];
    for (int i = 0; i < 8; i++) le[i] = (uint8_t)((uint64_t)padded >> (8 * i));
    static const char spaces[DSF_ST_HEADER_ALIGN] = "        ";
    int rc = put(w, le, 8, e) || put(w, text, len, e) || put(w, spaces, padded - len, e) ? -1 : 0;
    free(text);
    return rc;
}

int dsf_st_writer_data(dsf_st_writer *w, const void *bytes, size_t n, dsf_err *e) {
    if (w->state != W_WRITING) return dsf_fail(e, "%s: writer is not writing", w->path ? w->path : "writer");
    if (n > w->total - w->written) {
        abandon(w);
        return dsf_fail(e, "%s: %zu more data bytes than the %" PRIu64 " declared", w->path,
                        n - (size_t)(w->total - w->written), w->total);
    }
    w->written += n;
    return put(w, bytes, n, e);
}

int dsf_st_writer_end(dsf_st_writer *w, uint8_t sha256[32], dsf_err *e) {
    if (w->state != W_WRITING) return dsf_fail(e, "%s: writer is not writing", w->path ? w->path : "writer");
    if (w->written != w->total) {
        abandon(w);
        return dsf_fail(e, "%s: %" PRIu64 " of %" PRIu64 " declared data bytes written", w->path, w->written, w->total);
    }
    int bad = fclose(w->f);
    int err = errno;
    w->f = NULL;
    if (bad || rename(w->tmp, w->path)) {
        if (!bad) err = errno;
        remove(w->tmp);
        abandon(w);
        return dsf_fail(e, "%s: cannot finish the file: %s", w->path, strerror(err));
    }
    uint8_t digest[32];
    dsf_sha256_final(w->sha, digest);
    w->sha = NULL;
    w->state = W_DONE;
    if (sha256) memcpy(sha256, digest, 32);
    return 0;
}
