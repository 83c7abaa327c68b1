#ifndef DSF_TEST_ENGRAM_UTIL_H
#define DSF_TEST_ENGRAM_UTIL_H
// Shared by the Engram tests: the tiny V4.1 checkpoint, its hash over a near-identity token map, its bound tables.
#include <stdio.h>
#include <stdlib.h>

#include "io/bind.h"
#include "kern/engram/engram.h"

typedef struct test_engram_tiny {
    dsf_ckpt *c;
    dsf_engram_map m;
    dsf_engram_hash hs;
    dsf_engram_table tb[DSF_ENGRAM_MAX_LAYERS];
} test_engram_tiny;

// Synthesizes the tiny checkpoint into dir ($DSF_BIN or build/dsfold) and opens it; 0, or -1, e set and t->c NULL.
static inline int test_engram_tiny_open(const char *dir, test_engram_tiny *t, dsf_err *e) {
    const char *bin = getenv("DSF_BIN");
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s synth --arch v4.1 --size tiny %s >/dev/null", bin ? bin : "build/dsfold", dir);
    t->c = NULL;
    if (system(cmd) != 0) return dsf_fail(e, "%s failed", cmd);
    if (dsf_ckpt_open(dir, &t->c, e)) return -1;
    const dsf_args *a = &t->c->args;
    int32_t *ids = malloc(sizeof(int32_t) * 129280);
    for (int i = 0; i < 129280; i++) ids[i] = i < 2 ? i : (i - 1 < 99091 ? i - 1 : 99091);
    int rc = dsf_engram_map_from_ids(ids, 129280, a->engram_compressed_vocab_size, &t->m, e);
    free(ids);
    if (rc) {
        dsf_ckpt_close(t->c), t->c = NULL;
        return -1;
    }
    rc = dsf_engram_hash_init(a, &t->m, &t->hs, e);
    for (int l = 0; !rc && l < t->hs.n_layers; l++) {
        const dsf_engram_view *v = &t->c->layers[a->engram_layers[l]].engram;
        rc = dsf_engram_table_bind(v->embed.weight, v->embed.scale, t->hs.rows[l], a->engram_head_dim, &t->tb[l], e);
    }
    if (rc) dsf_engram_map_free(&t->m), dsf_ckpt_close(t->c), t->c = NULL;
    return rc ? -1 : 0;
}

#endif
