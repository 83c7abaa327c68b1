#include "base/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int dsf_fail(dsf_err *e, const char *fmt, ...) {
    if (e) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->msg, sizeof e->msg, fmt, ap);
        va_end(ap);
    }
    return -1;
}

int dsf_fail_prefix(dsf_err *e, const char *fmt, ...) {
    if (e) {
        char prefix[512], old[sizeof e->msg];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(prefix, sizeof prefix, fmt, ap);
        va_end(ap);
        memcpy(old, e->msg, sizeof old);
        size_t n = strlen(prefix);
        if (n > sizeof e->msg - 3) n = sizeof e->msg - 3;
        memcpy(e->msg, prefix, n);
        memcpy(e->msg + n, ": ", 2);
        size_t rest = sizeof e->msg - n - 3;
        size_t m = strnlen(old, rest);
        memcpy(e->msg + n + 2, old, m);
        e->msg[n + 2 + m] = 0;
    }
    return -1;
}

void dsf_err_clear(dsf_err *e) {
    if (e) e->msg[0] = 0;
}

void dsf_assert_fail(const char *file, int line, const char *expr) {
    fprintf(stderr, "dsfold: internal error at %s:%d: %s\n", file, line, expr);
    abort();
}

static void *oom(size_t n, const char *file, int line) {
    fprintf(stderr, "dsfold: out of memory allocating %zu bytes at %s:%d\n", n, file, line);
    abort();
}

void *dsf_malloc_at(size_t n, const char *file, int line) {
    void *p = malloc(n ? n : 1);
    return p ? p : oom(n, file, line);
}

void *dsf_calloc_at(size_t count, size_t size, const char *file, int line) {
    void *p = calloc(count ? count : 1, size ? size : 1);
    return p ? p : oom(count * size, file, line);
}

void *dsf_realloc_at(void *p, size_t n, const char *file, int line) {
    void *q = realloc(p, n ? n : 1);
    return q ? q : oom(n, file, line);
}

char *dsf_strdup_at(const char *s, const char *file, int line) {
    size_t n = strlen(s) + 1;
    char *p = dsf_malloc_at(n, file, line);
    memcpy(p, s, n);
    return p;
}

int dsf_size_mul(size_t a, size_t b, size_t *out) {
    if (a && b > SIZE_MAX / a) return 0;
    *out = a * b;
    return 1;
}

int dsf_size_add(size_t a, size_t b, size_t *out) {
    if (b > SIZE_MAX - a) return 0;
    *out = a + b;
    return 1;
}
