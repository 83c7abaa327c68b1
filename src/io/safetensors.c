#include "io/safetensors.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/st_internal.h"

static uint64_t load_le64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

int dsf_st_shard_load(dsf_st_shard *sh, const char *path, dsf_err *e) {
    memset(sh, 0, sizeof *sh);
    sh->path = dsf_strdup(path);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return dsf_fail(e, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
        close(fd);
        return dsf_fail(e, "%s: not a regular file", path);
    }
    // Rule: the file holds at least the 8-byte header length.
    if (sb.st_size < 8) {
        close(fd);
        return dsf_fail(e, "%s: file is %lld bytes, too short for the 8-byte header length", path,
                        (long long)sb.st_size);
    }
    void *map = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    int mmap_errno = errno;
    close(fd);
    if (map == MAP_FAILED) return dsf_fail(e, "%s: cannot mmap: %s", path, strerror(mmap_errno));
    sh->map = map;
    sh->map_size = (size_t)sb.st_size;
    uint64_t n = load_le64(map);
    if (dsf_st_header_len_check(n, path, e)) return -1;
    // Rule: the header fits in the file after the length field.
    if (n > sh->map_size - 8)
        return dsf_fail(e, "%s: header length %" PRIu64 " exceeds the %zu bytes after the length field (truncated?)",
                        path, n, sh->map_size - 8);
    if (dsf_st_header_parse((const char *)map + 8, (size_t)n, sh->map_size - 8 - n, path, &sh->hdr, e)) return -1;
    sh->data = (const uint8_t *)map + 8 + n;
    return 0;
}

void dsf_st_shard_unload(dsf_st_shard *sh) {
    if (sh->map) munmap(sh->map, sh->map_size);
    dsf_st_header_free(sh->hdr);
    free(sh->path);
    memset(sh, 0, sizeof *sh);
}

static uint64_t name_hash(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

int dsf_st_build(dsf_st *st, dsf_err *e) {
    size_t count = 0;
    for (size_t s = 0; s < st->nshards; s++) count += st->shards[s].hdr->count;
    if (count >= UINT32_MAX / 2) return dsf_fail(e, "%s: %zu tensors are too many", st->shards[0].path, count);
    size_t cap = 16;
    while (cap < 2 * count) cap *= 2;
    st->tensors = dsf_calloc(count, sizeof *st->tensors);
    st->slots = dsf_calloc(cap, sizeof *st->slots);
    st->mask = cap - 1;
    for (size_t s = 0; s < st->nshards; s++) {
        const dsf_st_shard *sh = &st->shards[s];
        for (size_t i = 0; i < sh->hdr->count; i++) {
            dsf_tensor *t = &st->tensors[st->count];
            *t = sh->hdr->tensors[i];
            t->data = sh->data + sh->hdr->begin[i];
            t->shard = (int)s;
            size_t slot = name_hash(t->name) & st->mask;
            for (; st->slots[slot]; slot = (slot + 1) & st->mask) {
                const dsf_tensor *o = &st->tensors[st->slots[slot] - 1];
                // Rule: a tensor name appears once in the whole checkpoint.
                if (!strcmp(o->name, t->name))
                    return dsf_fail(e, "%s: %s: also stored in %s", sh->path, t->name, st->shards[o->shard].path);
            }
            st->slots[slot] = (uint32_t)++st->count;
        }
    }
    return 0;
}

const dsf_tensor *dsf_st_find(const dsf_st *st, const char *name) {
    for (size_t slot = name_hash(name) & st->mask; st->slots[slot]; slot = (slot + 1) & st->mask) {
        const dsf_tensor *t = &st->tensors[st->slots[slot] - 1];
        if (!strcmp(t->name, name)) return t;
    }
    return NULL;
}

void dsf_st_close(dsf_st *st) {
    if (!st) return;
    for (size_t s = 0; s < st->nshards; s++) dsf_st_shard_unload(&st->shards[s]);
    free(st->shards);
    free(st->tensors);
    free(st->slots);
    free(st);
}

static int open_file(const char *path, dsf_st **out, dsf_err *e) {
    dsf_st *st = dsf_calloc(1, sizeof *st);
    st->shards = dsf_calloc(1, sizeof *st->shards);
    st->nshards = 1;
    if (dsf_st_shard_load(&st->shards[0], path, e) || dsf_st_build(st, e)) {
        dsf_st_close(st);
        return -1;
    }
    *out = st;
    return 0;
}

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !memcmp(s + n - m, suffix, m);
}

static char *join(const char *dir, const char *name) {
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = dsf_malloc(n);
    snprintf(p, n, "%s/%s", dir, name);
    return p;
}

// Rule: a directory without an index holds exactly one .safetensors file, so a stray second file is never ignored.
static int open_dir(const char *dir, dsf_st **out, dsf_err *e) {
    char *index = join(dir, DSF_ST_INDEX);
    struct stat sb;
    if (!stat(index, &sb)) {
        int rc = dsf_st_index_open(index, out, e);
        free(index);
        return rc;
    }
    free(index);
    DIR *d = opendir(dir);
    if (!d) return dsf_fail(e, "%s: cannot read directory: %s", dir, strerror(errno));
    char *found = NULL;
    size_t n = 0;
    for (struct dirent *de; (de = readdir(d));) {
        if (!ends_with(de->d_name, ".safetensors")) continue;
        if (!n++) found = dsf_strdup(de->d_name);
    }
    closedir(d);
    int rc;
    if (n != 1) {
        rc = dsf_fail(e, "%s: no " DSF_ST_INDEX " and %zu .safetensors files (need the index, or exactly one file)",
                      dir, n);
    } else {
        char *path = join(dir, found);
        rc = open_file(path, out, e);
        free(path);
    }
    free(found);
    return rc;
}

int dsf_st_open(const char *path, dsf_st **out, dsf_err *e) {
    *out = NULL;
    struct stat sb;
    if (stat(path, &sb)) return dsf_fail(e, "%s: cannot open: %s", path, strerror(errno));
    if (S_ISDIR(sb.st_mode)) return open_dir(path, out, e);
    if (ends_with(path, ".index.json")) return dsf_st_index_open(path, out, e);
    return open_file(path, out, e);
}

size_t dsf_st_count(const dsf_st *st) {
    return st->count;
}

const dsf_tensor *dsf_st_at(const dsf_st *st, size_t i) {
    return i < st->count ? &st->tensors[i] : NULL;
}

size_t dsf_st_shard_count(const dsf_st *st) {
    return st->nshards;
}

const char *dsf_st_shard_path(const dsf_st *st, size_t i) {
    return i < st->nshards ? st->shards[i].path : NULL;
}

size_t dsf_st_metadata_count(const dsf_st *st, size_t shard) {
    return shard < st->nshards ? st->shards[shard].hdr->nmeta : 0;
}

const char *dsf_st_metadata_at(const dsf_st *st, size_t shard, size_t i, const char **value) {
    if (i >= dsf_st_metadata_count(st, shard)) return NULL;
    const char **kv = st->shards[shard].hdr->meta;
    if (value) *value = kv[2 * i + 1];
    return kv[2 * i];
}

const char *dsf_st_metadata_get(const dsf_st *st, size_t shard, const char *key) {
    const char *value;
    for (size_t i = 0; i < dsf_st_metadata_count(st, shard); i++)
        if (!strcmp(dsf_st_metadata_at(st, shard, i, &value), key)) return value;
    return NULL;
}
