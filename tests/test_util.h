#ifndef DSF_TEST_UTIL_H
#define DSF_TEST_UTIL_H
// Shared by the CLI tests: running a shell command and reading back what it printed.
#include <stdio.h>

#include "tok/tok.h"

// Runs the shell command and returns its stdout (caller frees) and its pclose status.
static inline char *test_run_stdout(const char *cmd, int *status) {
    FILE *p = popen(cmd, "r");
    dsf_tok_buf out = {0};
    char chunk[4096];
    size_t k;
    while (p && (k = fread(chunk, 1, sizeof chunk, p)) > 0) dsf_tok_buf_put(&out, chunk, k);
    dsf_tok_buf_put(&out, "", 0);
    *status = p ? pclose(p) : -1;
    return out.p;
}

#endif
