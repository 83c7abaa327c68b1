#ifndef DSF_TEST_H
#define DSF_TEST_H
// Minimal test harness: TEST_ASSERT reports file:line; every runner ends with "N passed, N failed".
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int dsf_test_passed, dsf_test_failed, dsf_test_cur_failed;

#define TEST_ASSERT(cond)                                                                                  \
    do {                                                                                                   \
        if (!(cond)) {                                                                                     \
            fprintf(stderr, "%s:%d: assertion failed: %s\n", __FILE__, __LINE__, #cond);                   \
            dsf_test_cur_failed = 1;                                                                       \
        }                                                                                                  \
    } while (0)

#define TEST_ASSERT_MSG(cond, ...)                                                                         \
    do {                                                                                                   \
        if (!(cond)) {                                                                                     \
            fprintf(stderr, "%s:%d: assertion failed: %s: ", __FILE__, __LINE__, #cond);                   \
            fprintf(stderr, __VA_ARGS__);                                                                  \
            fputc('\n', stderr);                                                                           \
            dsf_test_cur_failed = 1;                                                                       \
        }                                                                                                  \
    } while (0)

#define TEST_RUN(fn)                                                                                       \
    do {                                                                                                   \
        dsf_test_cur_failed = 0;                                                                           \
        fn();                                                                                              \
        if (dsf_test_cur_failed) {                                                                         \
            dsf_test_failed++;                                                                             \
            fprintf(stderr, "FAIL %s\n", #fn);                                                             \
        } else {                                                                                           \
            dsf_test_passed++;                                                                             \
            printf("ok   %s\n", #fn);                                                                      \
        }                                                                                                  \
    } while (0)

#define TEST_SKIP_ALL(why)                                                                                 \
    do {                                                                                                   \
        printf("SKIP: %s\n0 passed, 0 failed\n", why);                                                     \
        return 77;                                                                                         \
    } while (0)

#define TEST_END()                                                                                         \
    do {                                                                                                   \
        printf("%d passed, %d failed\n", dsf_test_passed, dsf_test_failed);                                \
        return dsf_test_failed ? 1 : 0;                                                                    \
    } while (0)

#endif
