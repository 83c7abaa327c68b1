#ifndef DSF_ERR_H
#define DSF_ERR_H
// Two error tiers: dsf_err carries a message for anything a file or request can reach; DSF_ASSERT is for bugs.
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dsf_err {
    char msg[1024];
} dsf_err;

// Writes the message (printf style) into e when e is non-NULL and returns -1, so callers can `return dsf_fail(..)`.
int dsf_fail(dsf_err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
// Prefixes an existing message with more context ("file: tensor: ...") and returns -1.
int dsf_fail_prefix(dsf_err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void dsf_err_clear(dsf_err *e);

__attribute__((noreturn)) void dsf_assert_fail(const char *file, int line, const char *expr);
#define DSF_ASSERT(c) ((c) ? (void)0 : dsf_assert_fail(__FILE__, __LINE__, #c))

// Checked allocation: aborts with file:line on exhaustion, since no caller can recover from a failed small malloc.
void *dsf_malloc_at(size_t n, const char *file, int line);
void *dsf_calloc_at(size_t count, size_t size, const char *file, int line);
void *dsf_realloc_at(void *p, size_t n, const char *file, int line);
char *dsf_strdup_at(const char *s, const char *file, int line);
#define dsf_malloc(n) dsf_malloc_at((n), __FILE__, __LINE__)
#define dsf_calloc(c, s) dsf_calloc_at((c), (s), __FILE__, __LINE__)
#define dsf_realloc(p, n) dsf_realloc_at((p), (n), __FILE__, __LINE__)
#define dsf_strdup(s) dsf_strdup_at((s), __FILE__, __LINE__)

// Overflow-checked size arithmetic: returns 0 and leaves *out untouched on overflow.
int dsf_size_mul(size_t a, size_t b, size_t *out);
int dsf_size_add(size_t a, size_t b, size_t *out);

#ifdef __cplusplus
}
#endif

#endif
