#include "io/bind.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// An open-addressing set of the table's names, so extra checkpoint tensors are found in one pass.
typedef struct name_set {
    size_t cap;
    const char **slot;
} name_set;

static uint64_t fnv1a(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

static void set_init(name_set *s, const dsf_tensor_table *t) {
    s->cap = 16;
    while (s->cap < 2 * t->n) s->cap *= 2;
    s->slot = dsf_calloc(s->cap, sizeof *s->slot);
    for (size_t i = 0; i < t->n; i++) {
        size_t j = fnv1a(t->t[i].name) & (s->cap - 1);
        while (s->slot[j]) j = (j + 1) & (s->cap - 1);
        s->slot[j] = t->t[i].name;
    }
}

static int set_has(const name_set *s, const char *name) {
    for (size_t j = fnv1a(name) & (s->cap - 1); s->slot[j]; j = (j + 1) & (s->cap - 1))
        if (!strcmp(s->slot[j], name)) return 1;
    return 0;
}

// The problem list: as many entries as fit in the message, the rest only counted.
typedef struct problems {
    char text[760];
    size_t len, listed, total;
} problems;

static void note(problems *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(problems *p, const char *fmt, ...) {
    p->total++;
    if (p->listed >= 20) return;
    char item[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(item, sizeof item, fmt, ap);
    va_end(ap);
    size_t n = strlen(item);
    if (p->len + n + 2 >= sizeof p->text) return;
    memcpy(p->text + p->len, p->listed ? "; " : "", p->listed ? 2 : 0);
    p->len += p->listed ? 2 : 0;
    memcpy(p->text + p->len, item, n + 1);
    p->len += n;
    p->listed++;
}

static void shape_str(char *buf, size_t n, int ndim, const int64_t *shape) {
    size_t m = (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < ndim && m < n; i++)
        m += (size_t)snprintf(buf + m, n - m, "%s%lld", i ? "," : "", (long long)shape[i]);
    if (m < n) snprintf(buf + m, n - m, "]");
}

int dsf_bind_check(const dsf_tensor_table *t, const dsf_st *st, dsf_bind_report *rep, dsf_err *e) {
    dsf_bind_report r = {0};
    problems p = {.len = 0};
    p.text[0] = 0;
    for (size_t i = 0; i < t->n; i++) {
        const dsf_tspec *s = &t->t[i];
        const dsf_tensor *x = dsf_st_find(st, s->name);
        if (!x) {
            r.missing++;
            note(&p, "missing %s", s->name);
            continue;
        }
        if (x->dtype != s->dtype) {
            r.wrong_dtype++;
            note(&p, "%s is %s, expected %s", s->name, dsf_dtype_name(x->dtype), dsf_dtype_name(s->dtype));
        }
        int same = x->ndim == s->ndim;
        for (int d = 0; same && d < s->ndim; d++) same = x->shape[d] == s->shape[d];
        if (!same) {
            char got[96], want[96];
            shape_str(got, sizeof got, x->ndim, x->shape);
            shape_str(want, sizeof want, s->ndim, s->shape);
            r.wrong_shape++;
            note(&p, "%s has shape %s, expected %s", s->name, got, want);
        }
    }
    name_set set;
    set_init(&set, t);
    for (size_t i = 0; i < dsf_st_count(st); i++) {
        const dsf_tensor *x = dsf_st_at(st, i);
        if (!set_has(&set, x->name)) {
            r.unexpected++;
            note(&p, "unexpected %s", x->name);
        }
    }
    free(set.slot);
    if (rep) *rep = r;
    if (!p.total) return 0;
    return dsf_fail(e,
                    "%zu problems against the tensor table (%zu missing, %zu unexpected, %zu wrong dtype, %zu wrong "
                    "shape): %s%s",
                    p.total, r.missing, r.unexpected, r.wrong_dtype, r.wrong_shape, p.text,
                    p.listed < p.total ? "; ..." : "");
}

static void bind_views(dsf_ckpt *c) {
    const dsf_tensor_table *t = &c->table;
    int64_t n_exp = 0;
    for (int L = 0; L < c->n_layers; L++) n_exp += c->roles.r[L].n_experts;
    c->expert_mem = dsf_calloc((size_t)n_exp, sizeof *c->expert_mem);
    c->layers = dsf_calloc((size_t)c->n_layers, sizeof *c->layers);
    c->mtp = c->layers + c->args.n_layers;
    dsf_expert_view *next = c->expert_mem;
    for (int L = 0; L < c->n_layers; L++) {
        c->layers[L].role = &c->roles.r[L];
        c->layers[L].ffn.n_experts = c->roles.r[L].n_experts;
        c->layers[L].ffn.experts = next;
        next += c->roles.r[L].n_experts;
    }
    for (size_t i = 0; i < t->n; i++) {
        const dsf_tspec *s = &t->t[i];
        if (s->slot < 0) continue;
        char *base;
        if (s->layer < 0) {
            base = (char *)&c->g;
        } else if (s->expert >= 0) {
            base = (char *)&c->layers[s->layer].ffn.experts[s->expert];
        } else {
            base = (char *)&c->layers[s->layer];
        }
        const dsf_tensor *x = dsf_st_find(c->st, s->name);
        DSF_ASSERT(x);
        memcpy(base + s->slot, &x, sizeof x);
    }
}

int dsf_ckpt_open(const char *dir, dsf_ckpt **out, dsf_err *e) {
    dsf_ckpt *c = dsf_calloc(1, sizeof *c);
    *out = NULL;
    if (dsf_config_load(dir, &c->args, e)) goto fail;
    c->n_layers = c->args.n_layers + c->args.n_mtp_layers;
    if (dsf_roles_build(&c->args, &c->roles, e)) goto fail;
    if (dsf_tensors_build(&c->args, &c->roles, &c->table, e)) goto fail;
    if (dsf_st_open(dir, &c->st, e)) goto fail;
    if (dsf_bind_check(&c->table, c->st, NULL, e)) {
        dsf_fail_prefix(e, "%s", dir);
        goto fail;
    }
    bind_views(c);
    *out = c;
    return 0;
fail:
    dsf_ckpt_close(c);
    return -1;
}

void dsf_ckpt_close(dsf_ckpt *c) {
    if (!c) return;
    if (c->st) dsf_st_close(c->st);
    dsf_tensors_free(&c->table);
    free(c->layers);
    free(c->expert_mem);
    free(c);
}
