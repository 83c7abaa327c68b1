// Safetensors reader and writer: round trips of every dtype, sharded checkpoints, and a corpus of corrupt files.
#include <dirent.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/sha256.h"
#include "io/safetensors.h"
#include "io/st_internal.h"
#include "test.h"

static char tmpdir[64];

static const char *in_tmp(const char *name) {
    static char ring[8][512];
    static int next;
    char *p = ring[next++ % 8];
    snprintf(p, sizeof ring[0], "%s/%s", tmpdir, name);
    return p;
}

static void write_bytes(const char *path, const void *bytes, size_t n) {
    FILE *f = fopen(path, "wb");
    DSF_ASSERT(f && fwrite(bytes, 1, n, f) == n && fclose(f) == 0);
}

static void write_text(const char *path, const char *text) {
    write_bytes(path, text, strlen(text));
}

static uint8_t *read_bytes(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    DSF_ASSERT(f);
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *p = dsf_malloc(*n);
    DSF_ASSERT(fread(p, 1, *n, f) == *n);
    fclose(f);
    return p;
}

static int exists(const char *path) {
    struct stat sb;
    return !stat(path, &sb);
}

// Writes a file by hand: the header length field (strlen(json) when len is 0), the JSON, data bytes, then cuts it.
static void raw_st(const char *path, const char *json, uint64_t len, size_t data, size_t cut) {
    size_t jn = strlen(json), n = 8 + jn + data;
    uint8_t *p = dsf_malloc(n);
    if (!len) len = jn;
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(len >> (8 * i));
    memcpy(p + 8, json, jn);
    for (size_t i = 0; i < data; i++) p[8 + jn + i] = (uint8_t)(i * 7 + 1);
    write_bytes(path, p, cut ? cut : n);
    free(p);
}

static void expect_fail(const char *path, const char *what, const char *named, const char *tensor) {
    dsf_st *st = NULL;
    dsf_err e = {{0}};
    int rc = dsf_st_open(path, &st, &e);
    TEST_ASSERT_MSG(rc == -1 && !st, "%s opened", path);
    TEST_ASSERT_MSG(strstr(e.msg, named), "'%s' does not name %s", e.msg, named);
    TEST_ASSERT_MSG(strstr(e.msg, what), "'%s' does not say '%s'", e.msg, what);
    if (tensor) TEST_ASSERT_MSG(strstr(e.msg, tensor), "'%s' does not name tensor %s", e.msg, tensor);
    if (getenv("DSF_TEST_VERBOSE")) printf("  %s\n", e.msg);
    dsf_st_close(st);
}

#define T(name, dt, shape, b, e) \
    "\"" name "\":{\"dtype\":\"" dt "\",\"shape\":" shape ",\"data_offsets\":[" b "," e "]}"
#define W0 "layers.0.w"
#define W1 "layers.1.w"
#define OK0 T(W0, "F32", "[2]", "0", "8")

static const struct corrupt {
    const char *file, *json;
    uint64_t len;     // header length field, 0 for the JSON's length
    size_t data, cut; // data bytes after the JSON; the file is cut to `cut` bytes when nonzero
    const char *what, *tensor;
} corrupt[] = {
    {"truncated_file", "{" OK0 "}", 0, 8, 5, "too short", NULL},
    {"truncated_header", "{" OK0 "}", 0, 8, 30, "exceeds the", NULL},
    {"truncated_data", "{" T(W0, "F32", "[4]", "0", "16") "}", 0, 8, 0, "past the 8-byte data section", W0},
    {"absurd_header_length", "{" OK0 "}", 1ull << 63, 8, 0, "exceeds the limit", NULL},
    {"header_over_limit", "{" OK0 "}", 200000000, 8, 0, "exceeds the limit", NULL},
    {"header_longer_than_file", "{" OK0 "}", 1000, 8, 0, "after the length field", NULL},
    {"header_length_one", "{}", 1, 0, 0, "shorter than", NULL},
    {"not_json", "{not json}", 0, 0, 0, "not valid JSON", NULL},
    {"not_object", "[1, 2]", 0, 0, 0, "not a JSON object", NULL},
    {"trailing_garbage", "{}xx", 0, 0, 0, "not valid JSON", NULL},
    {"overlap", "{" OK0 "," T(W1, "F32", "[2]", "4", "12") "}", 0, 12, 0, "overlap tensor " W0, W1},
    {"gap", "{" OK0 "," T(W1, "F32", "[2]", "12", "20") "}", 0, 20, 0, "4 unused bytes", W1},
    {"trailing_bytes", "{" OK0 "}", 0, 12, 0, "4 bytes after the last tensor", W0},
    {"offsets_outside", "{" T(W0, "F32", "[2]", "100", "108") "}", 0, 8, 0, "past the", W0},
    {"size_mismatch", "{" T(W0, "F32", "[3]", "0", "8") "}", 0, 8, 0, "F32 [3] needs 12", W0},
    {"unknown_dtype", "{" T(W0, "F7", "[2]", "0", "8") "}", 0, 8, 0, "unknown dtype 'F7'", W0},
    {"negative_shape", "{" T(W0, "F32", "[-1, 2]", "0", "8") "}", 0, 8, 0, "shape[0]", W0},
    {"float_shape", "{" T(W0, "F32", "[2.0]", "0", "8") "}", 0, 8, 0, "shape[0]", W0},
    {"float_offsets", "{" T(W0, "F32", "[2]", "0.0", "8.0") "}", 0, 8, 0, "data_offsets", W0},
    {"negative_offsets", "{" T(W0, "F32", "[2]", "-8", "0") "}", 0, 8, 0, "data_offsets", W0},
    {"backwards_offsets", "{" T(W0, "U8", "[0]", "8", "0") "}", 0, 8, 0, "run backwards", W0},
    {"too_many_dims", "{" T(W0, "F32", "[1,1,1,1,1,1,1,1,2]", "0", "8") "}", 0, 8, 0, "9 dimensions", W0},
    {"shape_overflow", "{" T(W0, "F32", "[4294967296, 4294967296]", "0", "8") "}", 0, 8, 0, "overflows", W0},
    {"huge_integer", "{" T(W0, "F32", "[2]", "0", "99999999999999999999") "}", 0, 8, 0, "not valid JSON", NULL},
    {"invalid_utf8_name", "{\"\xff\xfe\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]}}", 0, 0, 0,
     "not valid JSON", NULL},
    {"nul_in_name", "{\"a\\u0000b\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]}}", 0, 0, 0,
     "not valid JSON", NULL},
    {"duplicate_name", "{" OK0 "," T(W0, "F32", "[2]", "8", "16") "}", 0, 16, 0, "duplicate", W0},
    {"empty_name", "{" T("", "F32", "[2]", "0", "8") "}", 0, 8, 0, "empty name", NULL},
    {"unknown_field", "{\"" W0 "\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0],\"crc\":1}}", 0, 0, 0,
     "unknown field 'crc'", W0},
    {"missing_dtype", "{\"" W0 "\":{\"shape\":[0],\"data_offsets\":[0,0]}}", 0, 0, 0, "dtype is missing", W0},
    {"entry_not_object", "{\"" W0 "\":5}", 0, 0, 0, "not a JSON object", W0},
    {"metadata_not_string", "{\"__metadata__\":{\"format\":1}," OK0 "}", 0, 8, 0, "'format' is not a string", NULL},
    {"metadata_not_object", "{\"__metadata__\":[]," OK0 "}", 0, 8, 0, "__metadata__ is not", NULL},
};

static void test_corrupt_files(void) {
    for (size_t i = 0; i < sizeof corrupt / sizeof corrupt[0]; i++) {
        const struct corrupt *c = &corrupt[i];
        const char *path = in_tmp(c->file);
        raw_st(path, c->json, c->len, c->data, c->cut);
        expect_fail(path, c->what, path, c->tensor);
    }
}

static void test_not_a_file(void) {
    expect_fail(in_tmp("does_not_exist.safetensors"), "cannot open", "does_not_exist", NULL);
    write_bytes(in_tmp("empty.safetensors"), "", 0);
    expect_fail(in_tmp("empty.safetensors"), "too short", "empty.safetensors", NULL);
}

static void test_dtypes(void) {
    static const size_t sizes[DSF_DT_COUNT] = {2, 2, 4, 8, 1, 1, 4, 8, 1, 1};
    for (int i = 0; i < DSF_DT_COUNT; i++) {
        dsf_dtype t;
        TEST_ASSERT(dsf_dtype_size((dsf_dtype)i) == sizes[i]);
        TEST_ASSERT(dsf_dtype_parse(dsf_dtype_name((dsf_dtype)i), &t) == 0 && t == (dsf_dtype)i);
    }
    dsf_dtype t;
    TEST_ASSERT(dsf_dtype_parse("F8_E5M2", &t) == -1 && dsf_dtype_parse("bf16", &t) == -1);
    TEST_ASSERT(!strcmp(dsf_dtype_name(DSF_DT_F8_E8M0), "F8_E8M0") && !strcmp(dsf_dtype_name(DSF_DT_BF16), "BF16"));
}

static void test_sha256(void) {
    uint8_t d[32];
    char hex[65];
    dsf_sha256("abc", 3, d);
    dsf_sha256_hex(d, hex);
    TEST_ASSERT(!strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
    dsf_sha256_ctx *s = dsf_sha256_new();
    dsf_sha256_update(s, "a", 1);
    dsf_sha256_update(s, "bc", 2);
    uint8_t d2[32];
    dsf_sha256_final(s, d2);
    TEST_ASSERT(!memcmp(d, d2, 32));
    dsf_sha256_free(dsf_sha256_new());
}

static uint8_t pattern(size_t tensor, size_t i) {
    return (uint8_t)(tensor * 31 + i * 7 + 3);
}

// Declares one tensor of every dtype plus a scalar, an empty and a 4-d tensor, streams their bytes in 7-byte chunks.
static int write_all_dtypes(const char *path, uint8_t sha[32], dsf_err *e) {
    dsf_st_writer *w = dsf_st_writer_new();
    int rc = dsf_st_writer_metadata(w, "format", "pt", e) | dsf_st_writer_metadata(w, "note", "\xc3\xbc", e);
    size_t total = 0;
    for (int i = 0; i < DSF_DT_COUNT + 3; i++) {
        char name[64];
        int64_t shape[4] = {3, 5, 2, 2};
        int ndim = i < DSF_DT_COUNT ? 2 : i == DSF_DT_COUNT ? 0 : i == DSF_DT_COUNT + 1 ? 2 : 4;
        if (i == DSF_DT_COUNT + 1) shape[0] = 0;
        dsf_dtype dt = i < DSF_DT_COUNT ? (dsf_dtype)i : DSF_DT_F32;
        snprintf(name, sizeof name, "layers.%d.%s", i, dsf_dtype_name(dt));
        rc |= dsf_st_writer_add(w, name, dt, ndim, shape, e);
        int64_t n = 1;
        for (int d = 0; d < ndim; d++) n *= shape[d];
        total += (size_t)n * dsf_dtype_size(dt);
    }
    rc |= dsf_st_writer_begin(w, path, e);
    uint8_t *stream = dsf_malloc(total);
    for (size_t i = 0; i < total; i++) stream[i] = pattern(0, i);
    for (size_t at = 0; at < total && !rc; at += 7)
        rc = dsf_st_writer_data(w, stream + at, total - at < 7 ? total - at : 7, e);
    rc |= dsf_st_writer_end(w, sha, e);
    dsf_st_writer_free(w);
    free(stream);
    return rc;
}

static void test_roundtrip_all_dtypes(void) {
    dsf_err e = {{0}};
    uint8_t sha[32], sha2[32], file_sha[32];
    const char *path = in_tmp("all.safetensors"), *path2 = in_tmp("all2.safetensors");
    TEST_ASSERT_MSG(write_all_dtypes(path, sha, &e) == 0, "%s", e.msg);
    TEST_ASSERT_MSG(write_all_dtypes(path2, sha2, &e) == 0, "%s", e.msg);
    TEST_ASSERT(!exists(in_tmp("all.safetensors.tmp")));
    size_t n, n2;
    uint8_t *bytes = read_bytes(path, &n), *bytes2 = read_bytes(path2, &n2);
    dsf_sha256(bytes, n, file_sha);
    TEST_ASSERT(!memcmp(sha, file_sha, 32) && !memcmp(sha, sha2, 32));
    TEST_ASSERT(n == n2 && !memcmp(bytes, bytes2, n));
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = hlen << 8 | bytes[i];
    TEST_ASSERT(hlen % DSF_ST_HEADER_ALIGN == 0 && !memcmp(bytes + 8, "{\"__metadata__\":", 16));
    TEST_ASSERT(bytes[8 + hlen - 1] == ' ' || bytes[8 + hlen - 1] == '}');
    dsf_st *st = NULL;
    TEST_ASSERT_MSG(dsf_st_open(path, &st, &e) == 0, "%s", e.msg);
    if (!st) goto done;
    TEST_ASSERT(dsf_st_count(st) == DSF_DT_COUNT + 3 && dsf_st_shard_count(st) == 1);
    TEST_ASSERT(!strcmp(dsf_st_shard_path(st, 0), path) && !dsf_st_shard_path(st, 1) && !dsf_st_at(st, 99));
    const uint8_t *data0 = bytes + 8 + hlen;
    size_t off = 0;
    for (size_t i = 0; i < dsf_st_count(st); i++) {
        const dsf_tensor *t = dsf_st_at(st, i);
        char name[64];
        dsf_dtype dt = i < DSF_DT_COUNT ? (dsf_dtype)i : DSF_DT_F32;
        snprintf(name, sizeof name, "layers.%zu.%s", i, dsf_dtype_name(dt));
        TEST_ASSERT_MSG(!strcmp(t->name, name), "tensor %zu is %s, not %s", i, t->name, name);
        TEST_ASSERT(t->dtype == dt && t->shard == 0 && dsf_st_find(st, name) == t);
        int64_t numel = i < DSF_DT_COUNT ? 15 : i == DSF_DT_COUNT ? 1 : i == DSF_DT_COUNT + 1 ? 0 : 60;
        TEST_ASSERT(dsf_tensor_numel(t) == numel && t->nbytes == (size_t)numel * dsf_dtype_size(dt));
        TEST_ASSERT(t->ndim == (i < DSF_DT_COUNT ? 2 : i == DSF_DT_COUNT ? 0 : i == DSF_DT_COUNT + 1 ? 2 : 4));
        for (size_t b = 0; b < t->nbytes; b++) TEST_ASSERT(((const uint8_t *)t->data)[b] == pattern(0, off + b));
        TEST_ASSERT(!memcmp(t->data, data0 + off, t->nbytes));
        off += t->nbytes;
    }
    TEST_ASSERT(off == n - 8 - hlen);
    const char *v = NULL;
    TEST_ASSERT(dsf_st_metadata_count(st, 0) == 2 && dsf_st_metadata_count(st, 1) == 0);
    TEST_ASSERT(!strcmp(dsf_st_metadata_at(st, 0, 1, &v), "note") && !strcmp(v, "\xc3\xbc"));
    TEST_ASSERT(!strcmp(dsf_st_metadata_get(st, 0, "format"), "pt") && !dsf_st_metadata_get(st, 0, "x"));
    TEST_ASSERT(!dsf_st_find(st, "layers.0") && !dsf_st_find(st, ""));
    dsf_st_close(st);
done:
    free(bytes);
    free(bytes2);
}

static void test_writer_errors(void) {
    dsf_err e = {{0}};
    int64_t shape[DSF_MAX_DIMS + 1] = {2, 2};
    dsf_st_writer *w = dsf_st_writer_new();
    TEST_ASSERT(dsf_st_writer_add(w, "a", DSF_DT_BF16, 2, shape, &e) == 0);
    TEST_ASSERT(dsf_st_writer_add(w, "a", DSF_DT_BF16, 2, shape, &e) == -1 && strstr(e.msg, "declared twice"));
    TEST_ASSERT(dsf_st_writer_add(w, "", DSF_DT_BF16, 2, shape, &e) == -1);
    TEST_ASSERT(dsf_st_writer_add(w, "__metadata__", DSF_DT_BF16, 2, shape, &e) == -1);
    TEST_ASSERT(dsf_st_writer_add(w, "bad\xff", DSF_DT_BF16, 2, shape, &e) == -1 && strstr(e.msg, "UTF-8"));
    TEST_ASSERT(dsf_st_writer_add(w, "b", DSF_DT_BF16, DSF_MAX_DIMS + 1, shape, &e) == -1);
    shape[1] = -2;
    TEST_ASSERT(dsf_st_writer_add(w, "b", DSF_DT_BF16, 2, shape, &e) == -1 && strstr(e.msg, "negative"));
    shape[0] = shape[1] = INT64_C(1) << 40;
    TEST_ASSERT(dsf_st_writer_add(w, "b", DSF_DT_BF16, 2, shape, &e) == -1 && strstr(e.msg, "overflows"));
    TEST_ASSERT(dsf_st_writer_metadata(w, "k", "\xfe", &e) == -1);
    const char *path = in_tmp("short.safetensors");
    uint8_t bytes[16] = {0};
    TEST_ASSERT(dsf_st_writer_begin(w, path, &e) == 0);
    TEST_ASSERT(dsf_st_writer_add(w, "c", DSF_DT_BF16, 0, shape, &e) == -1);
    TEST_ASSERT(dsf_st_writer_data(w, bytes, 5, &e) == 0);
    TEST_ASSERT(dsf_st_writer_end(w, NULL, &e) == -1 && strstr(e.msg, "5 of 8") && strstr(e.msg, path));
    TEST_ASSERT(!exists(path) && !exists(in_tmp("short.safetensors.tmp")));
    dsf_st_writer_free(w);
    w = dsf_st_writer_new();
    shape[0] = shape[1] = 2;
    TEST_ASSERT(dsf_st_writer_add(w, "a", DSF_DT_BF16, 2, shape, &e) == 0 && dsf_st_writer_begin(w, path, &e) == 0);
    TEST_ASSERT(dsf_st_writer_data(w, bytes, 9, &e) == -1 && strstr(e.msg, "1 more data bytes"));
    TEST_ASSERT(dsf_st_writer_data(w, bytes, 1, &e) == -1 && !exists(path) && !exists(in_tmp("short.safetensors.tmp")));
    dsf_st_writer_free(w);
    w = dsf_st_writer_new();
    TEST_ASSERT(dsf_st_writer_begin(w, in_tmp("no_such_dir/x.safetensors"), &e) == -1 && strstr(e.msg, "no_such_dir"));
    dsf_st_writer_free(w);
    dsf_st_writer_free(NULL);
}

static void test_empty_file(void) {
    dsf_err e = {{0}};
    dsf_st_writer *w = dsf_st_writer_new();
    const char *path = in_tmp("none.safetensors");
    TEST_ASSERT(dsf_st_writer_begin(w, path, &e) == 0 && dsf_st_writer_end(w, NULL, &e) == 0);
    dsf_st_writer_free(w);
    dsf_st *st = NULL;
    TEST_ASSERT_MSG(dsf_st_open(path, &st, &e) == 0, "%s", e.msg);
    TEST_ASSERT(st && dsf_st_count(st) == 0 && !dsf_st_find(st, "a"));
    dsf_st_close(st);
}

static void test_header_parse(void) {
    dsf_err e = {{0}};
    dsf_st_header *h = NULL;
    const char *json = "{" T(W1, "U8", "[4]", "4", "8") "," T(W0, "U8", "[2, 2]", "0", "4") "}  ";
    TEST_ASSERT_MSG(dsf_st_header_parse(json, strlen(json), 8, "mem", &h, &e) == 0, "%s", e.msg);
    TEST_ASSERT(h && h->count == 2 && !strcmp(h->tensors[0].name, W0) && h->begin[1] == 4 && h->nmeta == 0);
    dsf_st_header_free(h);
    TEST_ASSERT(dsf_st_header_parse(json, strlen(json), 9, "mem", &h, &e) == -1 && !h && strstr(e.msg, "mem: 1 "));
    TEST_ASSERT(dsf_st_header_parse("{", 1, 0, "mem", &h, &e) == -1 && strstr(e.msg, "mem: header length 1"));
}

// Three shards of a few tensors each, and an index; `skip` leaves one tensor out of the index.
static void write_sharded(const char *dir, const char *extra_map, const char *skip) {
    mkdir(dir, 0755);
    char path[512], map[4096] = "";
    dsf_err e = {{0}};
    for (int s = 0; s < 3; s++) {
        char file[64];
        snprintf(file, sizeof file, "model-%05d-of-00003.safetensors", s + 1);
        snprintf(path, sizeof path, "%s/%s", dir, file);
        dsf_st_writer *w = dsf_st_writer_new();
        for (int i = 0; i < 3 + s; i++) {
            char name[64];
            int64_t shape[1] = {4 + i};
            snprintf(name, sizeof name, "layers.%d.w%d", s, i);
            DSF_ASSERT(dsf_st_writer_add(w, name, DSF_DT_U8, 1, shape, &e) == 0);
            if (skip && !strcmp(name, skip)) continue;
            size_t at = strlen(map);
            snprintf(map + at, sizeof map - at, "%s\"%s\":\"%s\"", at ? "," : "", name, file);
        }
        DSF_ASSERT(dsf_st_writer_begin(w, path, &e) == 0);
        for (int i = 0; i < 3 + s; i++) {
            uint8_t b[16];
            for (int j = 0; j < 4 + i; j++) b[j] = pattern((size_t)(s * 10 + i), (size_t)j);
            DSF_ASSERT(dsf_st_writer_data(w, b, (size_t)(4 + i), &e) == 0);
        }
        DSF_ASSERT(dsf_st_writer_end(w, NULL, &e) == 0);
        dsf_st_writer_free(w);
    }
    char index[8192];
    snprintf(index, sizeof index, "{\"metadata\":{\"total_size\":1},\"weight_map\":{%s%s}}", map,
             extra_map ? extra_map : "");
    snprintf(path, sizeof path, "%s/%s", dir, DSF_ST_INDEX);
    write_text(path, index);
}

static void test_sharded_roundtrip(void) {
    const char *dir = in_tmp("sharded");
    write_sharded(dir, NULL, NULL);
    char index[512];
    snprintf(index, sizeof index, "%s/%s", dir, DSF_ST_INDEX);
    for (int via = 0; via < 2; via++) {
        dsf_st *st = NULL;
        dsf_err e = {{0}};
        TEST_ASSERT_MSG(dsf_st_open(via ? index : dir, &st, &e) == 0, "%s", e.msg);
        if (!st) continue;
        TEST_ASSERT(dsf_st_count(st) == 3 + 4 + 5 && dsf_st_shard_count(st) == 3);
        TEST_ASSERT(strstr(dsf_st_shard_path(st, 2), "/model-00003-of-00003.safetensors"));
        for (int s = 0; s < 3; s++) {
            for (int i = 0; i < 3 + s; i++) {
                char name[64];
                snprintf(name, sizeof name, "layers.%d.w%d", s, i);
                const dsf_tensor *t = dsf_st_find(st, name);
                TEST_ASSERT_MSG(t && t->shard == s && t->nbytes == (size_t)(4 + i), "%s", name);
                for (int j = 0; t && j < 4 + i; j++)
                    TEST_ASSERT(((const uint8_t *)t->data)[j] == pattern((size_t)(s * 10 + i), (size_t)j));
            }
        }
        TEST_ASSERT(dsf_st_at(st, 3) == dsf_st_find(st, "layers.1.w0"));
        dsf_st_close(st);
    }
}

static void test_sharded_corrupt(void) {
    const char *shard2 = "model-00002-of-00003.safetensors";
    write_sharded(in_tmp("missing"), ",\"extra.w\":\"model-00004-of-00003.safetensors\"", NULL);
    expect_fail(in_tmp("missing"), "model-00004-of-00003.safetensors", DSF_ST_INDEX, "extra.w");
    write_sharded(in_tmp("absent"), ",\"ghost.w\":\"model-00002-of-00003.safetensors\"", NULL);
    expect_fail(in_tmp("absent"), shard2, "absent/" DSF_ST_INDEX, "ghost.w: not stored in its shard");
    write_sharded(in_tmp("unindexed"), NULL, "layers.1.w2");
    expect_fail(in_tmp("unindexed"), "not named in", shard2, "layers.1.w2");
    write_sharded(in_tmp("traversal"), ",\"x\":\"../all.safetensors\"", NULL);
    expect_fail(in_tmp("traversal"), "must be a file name", DSF_ST_INDEX, "x");
    write_sharded(in_tmp("wrong_shard"), ",\"layers.0.w0\":\"model-00002-of-00003.safetensors\"", "layers.0.w0");
    expect_fail(in_tmp("wrong_shard"), "model-00001-of-00003.safetensors", DSF_ST_INDEX, "layers.0.w0: indexed in");
    write_text(in_tmp("wrong_shard/" DSF_ST_INDEX), "{\"weight_map\":{}}");
    expect_fail(in_tmp("wrong_shard"), "weight_map is missing, empty", DSF_ST_INDEX, NULL);
    write_text(in_tmp("wrong_shard/" DSF_ST_INDEX), "{\"weight_map\":");
    expect_fail(in_tmp("wrong_shard"), "cannot read the index", DSF_ST_INDEX, NULL);
    write_sharded(in_tmp("corrupt_shard"), NULL, NULL);
    raw_st(in_tmp("corrupt_shard/model-00001-of-00003.safetensors"), "{" T(W0, "F32", "[4]", "0", "16") "}", 0, 8, 0);
    expect_fail(in_tmp("corrupt_shard"), "model-00001-of-00003.safetensors: " W0 ": data_offsets [0, 16] end past",
                DSF_ST_INDEX, "layers.0.w0: in shard");
}

static void test_duplicate_across_shards(void) {
    const char *dir = in_tmp("dup");
    mkdir(dir, 0755);
    raw_st(in_tmp("dup/a.safetensors"), "{" OK0 "}", 0, 8, 0);
    raw_st(in_tmp("dup/b.safetensors"), "{" OK0 "," T(W1, "U8", "[1]", "8", "9") "}", 0, 9, 0);
    write_text(in_tmp("dup/" DSF_ST_INDEX),
               "{\"weight_map\":{\"" W0 "\":\"a.safetensors\",\"" W1 "\":\"b.safetensors\"}}");
    expect_fail(dir, "also stored in", "b.safetensors", W0);
}

static void test_directory_without_index(void) {
    const char *dir = in_tmp("single");
    mkdir(dir, 0755);
    raw_st(in_tmp("single/one.safetensors"), "{" OK0 "}", 0, 8, 0);
    dsf_st *st = NULL;
    dsf_err e = {{0}};
    TEST_ASSERT_MSG(dsf_st_open(dir, &st, &e) == 0, "%s", e.msg);
    TEST_ASSERT(st && dsf_st_count(st) == 1 && dsf_st_find(st, W0));
    dsf_st_close(st);
    raw_st(in_tmp("single/two.safetensors"), "{" OK0 "}", 0, 8, 0);
    expect_fail(dir, "2 .safetensors files", dir, NULL);
}

static void test_find_many(void) {
    enum { N = 20000 };
    dsf_err e = {{0}};
    const char *path = in_tmp("many.safetensors");
    dsf_st_writer *w = dsf_st_writer_new();
    char name[64];
    int64_t one = 1;
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "layers.%d.ffn.experts.%d.w1.scale", i / 384, i % 384);
        TEST_ASSERT(dsf_st_writer_add(w, name, DSF_DT_U8, 1, &one, &e) == 0);
    }
    TEST_ASSERT(dsf_st_writer_begin(w, path, &e) == 0);
    for (int i = 0; i < N; i++) {
        uint8_t b = (uint8_t)i;
        TEST_ASSERT(dsf_st_writer_data(w, &b, 1, &e) == 0);
    }
    TEST_ASSERT(dsf_st_writer_end(w, NULL, &e) == 0);
    dsf_st_writer_free(w);
    dsf_st *st = NULL;
    TEST_ASSERT_MSG(dsf_st_open(path, &st, &e) == 0, "%s", e.msg);
    if (!st) return;
    int bad = 0;
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "layers.%d.ffn.experts.%d.w1.scale", i / 384, i % 384);
        const dsf_tensor *t = dsf_st_find(st, name);
        bad += !t || *(const uint8_t *)t->data != (uint8_t)i;
        snprintf(name, sizeof name, "layers.%d.ffn.experts.%d.w2.scale", i / 384, i % 384);
        bad += dsf_st_find(st, name) != NULL;
    }
    TEST_ASSERT_MSG(bad == 0, "%d lookups wrong", bad);
    dsf_st_close(st);
}

// The committed seed corpus stays meaningful: valid_* files open, every other file fails with a message naming it.
static void test_committed_corpus(void) {
    DIR *d = opendir("tests/corrupt");
    TEST_ASSERT_MSG(d, "tests/corrupt is missing (the test runs from the source directory)");
    if (!d) return;
    int files = 0;
    for (struct dirent *de; (de = readdir(d));) {
        if (de->d_name[0] == '.') continue;
        char path[512];
        snprintf(path, sizeof path, "tests/corrupt/%s", de->d_name);
        files++;
        if (strncmp(de->d_name, "valid_", 6)) {
            expect_fail(path, "", path, NULL);
            continue;
        }
        dsf_st *st = NULL;
        dsf_err e = {{0}};
        TEST_ASSERT_MSG(dsf_st_open(path, &st, &e) == 0, "%s", e.msg);
        dsf_st_close(st);
    }
    closedir(d);
    TEST_ASSERT(files >= (int)(sizeof corrupt / sizeof corrupt[0]));
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

// Writes the corrupt single files and one valid file into dir, as the fuzzer's seed corpus (tests/corrupt/).
static int write_corpus(const char *dir) {
    char path[512];
    for (size_t i = 0; i < sizeof corrupt / sizeof corrupt[0]; i++) {
        snprintf(path, sizeof path, "%s/%s.safetensors", dir, corrupt[i].file);
        raw_st(path, corrupt[i].json, corrupt[i].len, corrupt[i].data, corrupt[i].cut);
    }
    snprintf(path, sizeof path, "%s/valid_all_dtypes.safetensors", dir);
    dsf_err e;
    uint8_t sha[32];
    if (write_all_dtypes(path, sha, &e)) return fprintf(stderr, "%s\n", e.msg), 1;
    snprintf(path, sizeof path, "%s/valid_two.safetensors", dir);
    raw_st(path, "{" OK0 "," T(W1, "U8", "[1]", "8", "9") "}", 0, 9, 0);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "--write-corpus")) return write_corpus(argv[2]);
    snprintf(tmpdir, sizeof tmpdir, "/tmp/dsf_st_XXXXXX");
    if (!mkdtemp(tmpdir)) return perror("mkdtemp"), 1;
    TEST_RUN(test_dtypes);
    TEST_RUN(test_sha256);
    TEST_RUN(test_roundtrip_all_dtypes);
    TEST_RUN(test_empty_file);
    TEST_RUN(test_writer_errors);
    TEST_RUN(test_header_parse);
    TEST_RUN(test_corrupt_files);
    TEST_RUN(test_not_a_file);
    TEST_RUN(test_sharded_roundtrip);
    TEST_RUN(test_sharded_corrupt);
    TEST_RUN(test_duplicate_across_shards);
    TEST_RUN(test_directory_without_index);
    TEST_RUN(test_find_many);
    TEST_RUN(test_committed_corpus);
    nftw(tmpdir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    TEST_END();
}
