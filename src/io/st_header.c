#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/st_internal.h"

static const struct {
    const char *name;
    size_t size;
} dtypes[DSF_DT_COUNT] = {
    [DSF_DT_BF16] = {"BF16", 2},       [DSF_DT_F16] = {"F16", 2}, [DSF_DT_F32] = {"F32", 4},
    [DSF_DT_F64] = {"F64", 8},         [DSF_DT_I8] = {"I8", 1},   [DSF_DT_U8] = {"U8", 1},
    [DSF_DT_I32] = {"I32", 4},         [DSF_DT_I64] = {"I64", 8}, [DSF_DT_F8_E4M3] = {"F8_E4M3", 1},
    [DSF_DT_F8_E8M0] = {"F8_E8M0", 1},
};

#define KNOWN_DTYPES "BF16 F16 F32 F64 I8 U8 I32 I64 F8_E4M3 F8_E8M0"
#define METADATA_KEY "__metadata__"

const char *dsf_dtype_name(dsf_dtype t) {
    return (unsigned)t < DSF_DT_COUNT ? dtypes[t].name : "?";
}

size_t dsf_dtype_size(dsf_dtype t) {
    return (unsigned)t < DSF_DT_COUNT ? dtypes[t].size : 0;
}

int dsf_dtype_parse(const char *s, dsf_dtype *out) {
    for (int i = 0; i < DSF_DT_COUNT; i++) {
        if (!strcmp(s, dtypes[i].name)) {
            *out = (dsf_dtype)i;
            return 0;
        }
    }
    return -1;
}

int64_t dsf_tensor_numel(const dsf_tensor *t) {
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++)
        if (t->shape[i] == 0) return 0;
    for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
    return n;
}

typedef struct span {
    uint64_t begin, end;
    const char *name; // the JSON key, alive while the parsed root is
    dsf_tensor t;
} span;

static void shape_str(const dsf_tensor *t, char *buf, size_t cap) {
    size_t at = (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < t->ndim && at < cap; i++)
        at += (size_t)snprintf(buf + at, cap - at, "%s%" PRId64, i ? ", " : "", t->shape[i]);
    if (at < cap) snprintf(buf + at, cap - at, "]");
}

static int get_u64(const json_t *v, uint64_t *out) {
    if (!json_is_integer(v) || json_integer_value(v) < 0) return -1;
    *out = (uint64_t)json_integer_value(v);
    return 0;
}

static int parse_entry(const char *file, const char *name, json_t *v, uint64_t data_size, span *s, dsf_err *e) {
    const char *key;
    json_t *field;
    if (!json_is_object(v)) return dsf_fail(e, "%s: %s: entry is not a JSON object", file, name);
    // Rule: an entry holds exactly dtype, shape and data_offsets, so a misspelt field is not silently ignored.
    json_object_foreach(v, key, field) {
        if (strcmp(key, "dtype") && strcmp(key, "shape") && strcmp(key, "data_offsets"))
            return dsf_fail(e, "%s: %s: unknown field '%s'", file, name, key);
    }
    const json_t *dt = json_object_get(v, "dtype");
    if (!json_is_string(dt)) return dsf_fail(e, "%s: %s: dtype is missing or not a string", file, name);
    // Rule: the dtype is one of the table in safetensors.h; FP4 arrives as I8 and the binding layer reinterprets it.
    if (dsf_dtype_parse(json_string_value(dt), &s->t.dtype))
        return dsf_fail(e, "%s: %s: unknown dtype '%s' (known: " KNOWN_DTYPES ")", file, name, json_string_value(dt));
    const json_t *sh = json_object_get(v, "shape");
    if (!json_is_array(sh)) return dsf_fail(e, "%s: %s: shape is missing or not an array", file, name);
    // Rule: at most DSF_MAX_DIMS dimensions; shape [] is a scalar of one element.
    if (json_array_size(sh) > DSF_MAX_DIMS)
        return dsf_fail(e, "%s: %s: shape has %zu dimensions, more than %d", file, name, json_array_size(sh),
                        DSF_MAX_DIMS);
    s->t.ndim = (int)json_array_size(sh);
    uint64_t need = dsf_dtype_size(s->t.dtype);
    for (int i = 0; i < s->t.ndim; i++) {
        uint64_t d;
        // Rule: every dimension is a non-negative integer (zero gives an empty tensor holding no bytes).
        if (get_u64(json_array_get(sh, (size_t)i), &d))
            return dsf_fail(e, "%s: %s: shape[%d] is not a non-negative integer", file, name, i);
        // Rule: elements × element size is computed with overflow checks and must fit in int64.
        if (d && need > (uint64_t)INT64_MAX / d)
            return dsf_fail(e, "%s: %s: shape overflows 64-bit byte counts", file, name);
        need *= d;
        s->t.shape[i] = (int64_t)d;
    }
    const json_t *off = json_object_get(v, "data_offsets");
    uint64_t b, en;
    // Rule: data_offsets is [begin, end] of non-negative integers, relative to the start of the data section.
    if (!json_is_array(off) || json_array_size(off) != 2 || get_u64(json_array_get(off, 0), &b) ||
        get_u64(json_array_get(off, 1), &en))
        return dsf_fail(e, "%s: %s: data_offsets is missing or not [begin, end] of non-negative integers", file, name);
    if (b > en) return dsf_fail(e, "%s: %s: data_offsets [%" PRIu64 ", %" PRIu64 "] run backwards", file, name, b, en);
    // Rule: the tensor's bytes lie inside the data section.
    if (en > data_size)
        return dsf_fail(e,
                        "%s: %s: data_offsets [%" PRIu64 ", %" PRIu64 "] end past the %" PRIu64
                        "-byte data section (truncated file?)",
                        file, name, b, en, data_size);
    // Rule: end - begin equals the product of the shape times the element size.
    if (en - b != need) {
        char shape[256];
        shape_str(&s->t, shape, sizeof shape);
        return dsf_fail(
            e, "%s: %s: data_offsets [%" PRIu64 ", %" PRIu64 "] span %" PRIu64 " bytes but %s %s needs %" PRIu64, file,
            name, b, en, en - b, dsf_dtype_name(s->t.dtype), shape, need);
    }
    s->begin = b;
    s->end = en;
    s->name = name;
    s->t.name = name;
    s->t.nbytes = (size_t)need;
    return 0;
}

static int span_cmp(const void *pa, const void *pb) {
    const span *a = pa, *b = pb;
    if (a->begin != b->begin) return a->begin < b->begin ? -1 : 1;
    if (a->end != b->end) return a->end < b->end ? -1 : 1;
    return strcmp(a->name, b->name);
}

// Rule: sorted by offset, tensors tile the data section exactly, no overlap, gap or trailing byte (as the reference).
static int check_tiling(const char *file, const span *s, size_t n, uint64_t data_size, dsf_err *e) {
    uint64_t at = 0;
    size_t last = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i].begin < at)
            return dsf_fail(
                e, "%s: %s: data_offsets [%" PRIu64 ", %" PRIu64 "] overlap tensor %s [%" PRIu64 ", %" PRIu64 "]", file,
                s[i].name, s[i].begin, s[i].end, s[last].name, s[last].begin, s[last].end);
        if (s[i].begin > at)
            return dsf_fail(e, "%s: %s: %" PRIu64 " unused bytes before it (the data section must be contiguous)", file,
                            s[i].name, s[i].begin - at);
        if (s[i].end > s[i].begin) last = i;
        at = s[i].end;
    }
    if (at != data_size)
        return dsf_fail(e, "%s: %" PRIu64 " bytes after the last tensor %s (the data section must be contiguous)", file,
                        data_size - at, n ? s[n - 1].name : "(none)");
    return 0;
}

static int check_metadata(const char *file, json_t *m, size_t *bytes, dsf_err *e) {
    const char *key;
    json_t *v;
    // Rule: "__metadata__" is an object mapping strings to strings.
    if (!json_is_object(m)) return dsf_fail(e, "%s: " METADATA_KEY " is not a JSON object", file);
    json_object_foreach(m, key, v) {
        if (!json_is_string(v)) return dsf_fail(e, "%s: " METADATA_KEY ": value of '%s' is not a string", file, key);
        *bytes += strlen(key) + json_string_length(v) + 2;
    }
    return 0;
}

static char *put(char **at, const char *s) {
    size_t n = strlen(s) + 1;
    char *p = memcpy(*at, s, n);
    *at += n;
    return p;
}

int dsf_st_header_len_check(uint64_t n, const char *file, dsf_err *e) {
    // Rule: the header length N is at least 2, the length of "{}".
    if (n < DSF_ST_HEADER_MIN) return dsf_fail(e, "%s: header length %" PRIu64 " is shorter than \"{}\"", file, n);
    // Rule: N is at most 100 MB, so a hostile length cannot make the parser allocate without bound.
    if (n > DSF_ST_HEADER_MAX)
        return dsf_fail(e, "%s: header length %" PRIu64 " exceeds the limit of %d bytes", file, n, DSF_ST_HEADER_MAX);
    return 0;
}

int dsf_st_header_parse(const char *json, size_t len, uint64_t data_size, const char *file, dsf_st_header **out,
                        dsf_err *e) {
    *out = NULL;
    if (dsf_st_header_len_check(len, file, e)) return -1;
    json_error_t je;
    // Rule: the header is one JSON object; jansson rejects invalid UTF-8 (names included) and duplicate keys.
    json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) return dsf_fail(e, "%s: header is not valid JSON: %s (header byte %d)", file, je.text, je.position);
    int rc = -1;
    span *spans = NULL;
    dsf_st_header *h = NULL;
    json_t *meta = NULL, *v;
    const char *key;
    size_t n = 0, bytes = 0;
    if (!json_is_object(root)) {
        dsf_fail(e, "%s: header is not a JSON object", file);
        goto done;
    }
    spans = dsf_calloc(json_object_size(root), sizeof *spans);
    json_object_foreach(root, key, v) {
        if (!strcmp(key, METADATA_KEY)) {
            meta = v;
            if (check_metadata(file, meta, &bytes, e)) goto done;
            continue;
        }
        // Rule: a tensor name is non-empty.
        if (!key[0]) {
            dsf_fail(e, "%s: a tensor has an empty name", file);
            goto done;
        }
        if (parse_entry(file, key, v, data_size, &spans[n], e)) goto done;
        bytes += strlen(key) + 1;
        n++;
    }
    qsort(spans, n, sizeof *spans, span_cmp);
    if (check_tiling(file, spans, n, data_size, e)) goto done;
    h = dsf_calloc(1, sizeof *h);
    h->count = n;
    h->tensors = dsf_calloc(n, sizeof *h->tensors);
    h->begin = dsf_calloc(n, sizeof *h->begin);
    h->strings = dsf_malloc(bytes);
    char *at = h->strings;
    for (size_t i = 0; i < n; i++) {
        h->tensors[i] = spans[i].t;
        h->tensors[i].name = put(&at, spans[i].name);
        h->begin[i] = spans[i].begin;
    }
    if (meta) {
        h->nmeta = json_object_size(meta);
        h->meta = dsf_calloc(2 * h->nmeta, sizeof *h->meta);
        size_t i = 0;
        json_object_foreach(meta, key, v) {
            h->meta[i++] = put(&at, key);
            h->meta[i++] = put(&at, json_string_value(v));
        }
    }
    *out = h;
    rc = 0;
done:
    free(spans);
    json_decref(root);
    return rc;
}

void dsf_st_header_free(dsf_st_header *h) {
    if (!h) return;
    free(h->tensors);
    free(h->begin);
    free(h->meta);
    free(h->strings);
    free(h);
}
