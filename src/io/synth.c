#include "io/synth.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "base/sha256.h"
#include "io/roles.h"
#include "io/safetensors.h"

#define SHARD_MAX (4ull << 30)

// Where the bytes of the shard being written go, and the progress line over all of them.
typedef struct writer {
    dsf_st_writer *w;
    uint64_t done, total;
    double t0, last;
    int progress, shard, n_shards;
} writer;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void progress(writer *w, int final) {
    double t = now();
    if (!w->progress || (!final && t - w->last < 0.25)) return;
    w->last = t;
    double gb = 1e-9 * (double)w->done, rate = gb / (t - w->t0 > 1e-9 ? t - w->t0 : 1e-9);
    fprintf(stderr, "\rsynth: shard %d/%d  %.2f / %.2f GB (%3.0f%%)  %.2f GB/s%s", w->shard + 1, w->n_shards, gb,
            1e-9 * (double)w->total, w->total ? 100.0 * (double)w->done / (double)w->total : 100.0, rate,
            final ? "\n" : "");
    fflush(stderr);
}

static int sink(void *ctx, const void *bytes, size_t n, dsf_err *e) {
    writer *w = ctx;
    if (dsf_st_writer_data(w->w, bytes, n, e)) return -1;
    w->done += n;
    progress(w, 0);
    return 0;
}

static void record(dsf_synth_report *rep, const char *name, uint64_t bytes, const uint8_t sha[32]) {
    DSF_ASSERT(rep->n_files < DSF_SYNTH_MAX_FILES);
    dsf_synth_file *f = &rep->files[rep->n_files++];
    snprintf(f->name, sizeof f->name, "%s", name);
    f->bytes = bytes;
    memcpy(f->sha256, sha, 32);
    rep->bytes += bytes;
}

static int write_text(const char *dir, const char *name, const char *text, dsf_synth_report *rep, dsf_err *e) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) return dsf_fail(e, "%s: cannot create: %s", path, strerror(errno));
    size_t n = strlen(text);
    int bad = fwrite(text, 1, n, f) != n || fputc('\n', f) == EOF;
    bad |= fclose(f) != 0;
    if (bad) return dsf_fail(e, "%s: write failed", path);
    uint8_t sha[32];
    dsf_sha256_ctx *s = dsf_sha256_new();
    dsf_sha256_update(s, text, n);
    dsf_sha256_update(s, "\n", 1);
    dsf_sha256_final(s, sha);
    record(rep, name, n + 1, sha);
    return 0;
}

static int make_dir(const char *dir, dsf_err *e) {
    struct stat sb;
    if (!stat(dir, &sb)) return S_ISDIR(sb.st_mode) ? 0 : dsf_fail(e, "%s: exists and is not a directory", dir);
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", dir);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(tmp, 0755) && errno != EEXIST) return dsf_fail(e, "%s: cannot create: %s", tmp, strerror(errno));
        *p = '/';
    }
    if (mkdir(tmp, 0755) && errno != EEXIST) return dsf_fail(e, "%s: cannot create: %s", dir, strerror(errno));
    return 0;
}

// Shards left by an earlier synth into the same directory would confuse a reader listing the directory.
static void remove_old_shards(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *ent;
    char path[4096];
    while ((ent = readdir(d))) {
        const char *n = ent->d_name;
        size_t len = strlen(n);
        if (!strncmp(n, "model-", 6) && len > 12 && !strcmp(n + len - 12, ".safetensors")) {
            snprintf(path, sizeof path, "%s/%s", dir, n);
            remove(path);
        }
    }
    closedir(d);
}

// Cuts the table into n shards of about equal bytes (at most SHARD_MAX each), never between a weight and its scale.
static int plan_shards(const dsf_tensor_table *t, uint64_t total, int *first) {
    int n = (int)((total + SHARD_MAX - 1) / SHARD_MAX);
    if (n < 2) n = 2;
    DSF_ASSERT(n < DSF_SYNTH_MAX_FILES - 4);
    int s = 0;
    uint64_t acc = 0;
    first[0] = 0;
    for (size_t i = 0; i < t->n; i++) {
        if (s + 1 < n && acc >= total / (uint64_t)n * (uint64_t)(s + 1) && t->t[i].fill != DSF_FILL_SCALE)
            first[++s] = (int)i;
        acc += dsf_tspec_nbytes(&t->t[i]);
    }
    first[s + 1] = (int)t->n;
    return s + 1;
}

static int write_shard(const char *path, const dsf_tensor_table *t, int i0, int i1, dsf_synth_gen *g, writer *w,
                       uint8_t sha[32], dsf_err *e) {
    w->w = dsf_st_writer_new();
    int rc = dsf_st_writer_metadata(w->w, "format", "pt", e);
    for (int i = i0; !rc && i < i1; i++) {
        const dsf_tspec *s = &t->t[i];
        rc = dsf_st_writer_add(w->w, s->name, s->dtype, s->ndim, s->shape, e);
    }
    if (!rc) rc = dsf_st_writer_begin(w->w, path, e);
    for (int i = i0; !rc && i < i1; i++) rc = dsf_synth_gen_tensor(g, &t->t[i], sink, w, e);
    if (!rc) rc = dsf_st_writer_end(w->w, sha, e);
    dsf_st_writer_free(w->w);
    w->w = NULL;
    return rc;
}

static char *index_json(const dsf_tensor_table *t, const int *first, int n, uint64_t total) {
    json_t *root = json_object(), *map = json_object();
    json_object_set_new(root, "metadata", json_pack("{s:I}", "total_size", (json_int_t)total));
    char name[64];
    for (int s = 0; s < n; s++) {
        snprintf(name, sizeof name, "model-%05d-of-%05d.safetensors", s + 1, n);
        for (int i = first[s]; i < first[s + 1]; i++) json_object_set_new(map, t->t[i].name, json_string(name));
    }
    json_object_set_new(root, "weight_map", map);
    char *out = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(root);
    DSF_ASSERT(out);
    return out;
}

static void total_sha(dsf_synth_report *rep) {
    dsf_sha256_ctx *s = dsf_sha256_new();
    char hex[65], line[160];
    for (int i = 0; i < rep->n_files; i++) {
        dsf_sha256_hex(rep->files[i].sha256, hex);
        int n = snprintf(line, sizeof line, "%s  %s\n", hex, rep->files[i].name);
        dsf_sha256_update(s, line, (size_t)n);
    }
    dsf_sha256_final(s, rep->total_sha256);
}

static int write_all(const dsf_synth_opts *o, const dsf_args *a, const dsf_tensor_table *t, const char *dir,
                     dsf_synth_report *rep, dsf_err *e) {
    char note[96];
    snprintf(note, sizeof note, "dsfold synth --arch %s --size %s --layers %d --seed %llu",
             a->arch == DSF_ARCH_V4_1 ? "v4.1" : "v4", dsf_synth_size_name(o->size), a->n_layers,
             (unsigned long long)o->seed);
    char *cfg = dsf_config_to_json(a, note);
    int rc = write_text(dir, "config.json", cfg, rep, e);
    free(cfg);
    if (rc) return -1;
    char gen[160];
    if (a->pad_id >= 0) {
        snprintf(gen, sizeof gen, "{\n  \"bos_token_id\": %d,\n  \"eos_token_id\": %d,\n  \"pad_token_id\": %d\n}",
                 a->bos_id, a->eos_id, a->pad_id);
    } else {
        snprintf(gen, sizeof gen, "{\n  \"bos_token_id\": %d,\n  \"eos_token_id\": %d\n}", a->bos_id, a->eos_id);
    }
    if (write_text(dir, "generation_config.json", gen, rep, e)) return -1;
    uint64_t total = dsf_tensors_bytes(t, NULL);
    int first[DSF_SYNTH_MAX_FILES];
    int n = plan_shards(t, total, first);
    char *idx = index_json(t, first, n, total);
    rc = write_text(dir, DSF_ST_INDEX, idx, rep, e);
    free(idx);
    if (rc) return -1;
    writer w = {.total = total, .t0 = now(), .progress = o->progress, .n_shards = n};
    dsf_synth_gen *g = dsf_synth_gen_new(a, o->seed, o->threads);
    for (int s = 0; !rc && s < n; s++) {
        char name[64], path[4096];
        uint8_t sha[32];
        snprintf(name, sizeof name, "model-%05d-of-%05d.safetensors", s + 1, n);
        snprintf(path, sizeof path, "%s/%s", dir, name);
        w.shard = s;
        uint64_t before = w.done;
        rc = write_shard(path, t, first[s], first[s + 1], g, &w, sha, e);
        if (rc) break;
        struct stat sb;
        record(rep, name, stat(path, &sb) ? w.done - before : (uint64_t)sb.st_size, sha);
    }
    progress(&w, 1);
    dsf_synth_gen_free(g);
    return rc;
}

int dsf_synth_write(const dsf_synth_opts *o, const char *dir, dsf_synth_report *rep, dsf_err *e) {
    double t0 = now();
    memset(rep, 0, sizeof *rep);
    dsf_args *a = dsf_malloc(sizeof *a);
    dsf_roles *r = dsf_malloc(sizeof *r);
    dsf_tensor_table t = {0};
    int rc = -1;
    if (dsf_synth_args(o, a, e) || dsf_roles_build(a, r, e) || dsf_tensors_build(a, r, &t, e)) goto out;
    if (make_dir(dir, e)) goto out;
    remove_old_shards(dir);
    rep->n_tensors = t.n;
    rc = write_all(o, a, &t, dir, rep, e);
    total_sha(rep);
    rep->seconds = now() - t0;
out:
    dsf_tensors_free(&t);
    free(r);
    free(a);
    return rc;
}
