// The compressed token map file (docs/engram.md) until the tokenizer provides it; ids must be in first-seen order.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kern/engram/engram.h"

int dsf_engram_map_from_ids(const int32_t *ids, int64_t n, int64_t n_compressed, dsf_engram_map *out, dsf_err *e) {
    memset(out, 0, sizeof *out);
    if (n < 3 || n_compressed < 1 || n_compressed > n)
        return dsf_fail(e, "engram map: %lld entries with %lld compressed ids", (long long)n, (long long)n_compressed);
    int64_t next = 0;
    for (int64_t i = 0; i < n; i++) {
        // New compressed ids are handed out in first-seen order, so an id is at most one above all before it.
        if (ids[i] < 0 || ids[i] > next || ids[i] >= n_compressed)
            return dsf_fail(e, "engram map: entry %lld is %d; ids run 0..%lld in first-seen order (next new id %lld)",
                            (long long)i, ids[i], (long long)n_compressed - 1, (long long)next);
        if (ids[i] == next) next++;
    }
    if (next != n_compressed)
        return dsf_fail(e, "engram map: %lld distinct compressed ids, the header says %lld", (long long)next,
                        (long long)n_compressed);
    out->n = n;
    out->n_compressed = n_compressed;
    out->ids = dsf_malloc(sizeof(int32_t) * (size_t)n);
    memcpy(out->ids, ids, sizeof(int32_t) * (size_t)n);
    return 0;
}

int dsf_engram_map_load(const char *path, dsf_engram_map *out, dsf_err *e) {
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "r");
    if (!f) return dsf_fail(e, "%s: %s", path, strerror(errno));
    char line[64];
    long long n = 0, c = 0;
    int rc = -1;
    int32_t *ids = NULL;
    if (!fgets(line, sizeof line, f) || strncmp(line, DSF_ENGRAM_MAP_MAGIC, strlen(DSF_ENGRAM_MAP_MAGIC)) ||
        (line[strlen(DSF_ENGRAM_MAP_MAGIC)] != '\n' && line[strlen(DSF_ENGRAM_MAP_MAGIC)] != 0)) {
        dsf_fail(e, "%s: not an engram map (first line must be \"%s\")", path, DSF_ENGRAM_MAP_MAGIC);
        goto done;
    }
    if (fscanf(f, "%lld %lld", &n, &c) != 2 || n < 3 || n > (1 << 24) || c < 1) {
        dsf_fail(e, "%s: line 2 must be \"entries compressed\" with 3 <= entries <= 2^24", path);
        goto done;
    }
    ids = dsf_malloc(sizeof(int32_t) * (size_t)n);
    for (long long i = 0; i < n; i++) {
        long long v;
        if (fscanf(f, "%lld", &v) != 1 || v < 0 || v > 0x7FFFFFFF) {
            dsf_fail(e, "%s: entry %lld of %lld is missing or not a non-negative id", path, i, n);
            goto done;
        }
        ids[i] = (int32_t)v;
    }
    int ch;
    while ((ch = fgetc(f)) != EOF)
        if (ch != ' ' && ch != '\n' && ch != '\r' && ch != '\t') {
            dsf_fail(e, "%s: data after the %lld entries", path, n);
            goto done;
        }
    if (dsf_engram_map_from_ids(ids, n, c, out, e)) {
        dsf_fail_prefix(e, "%s", path);
        goto done;
    }
    rc = 0;
done:
    free(ids);
    fclose(f);
    return rc;
}

void dsf_engram_map_free(dsf_engram_map *m) {
    free(m->ids);
    memset(m, 0, sizeof *m);
}
