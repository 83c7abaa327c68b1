#ifndef DSF_TEST_PY_H
#define DSF_TEST_PY_H
// Shared by the tests that run a Python script of tests/ under ctest.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

// The repository root, two levels above this header (CMake compiles by absolute path, so __FILE__ is absolute here).
static void test_py_root(char *root, size_t n) {
    snprintf(root, n, "%s", __FILE__);
    for (int up = 0; up < 2; up++) {
        char *slash = strrchr(root, '/');
        if (slash)
            *slash = '\0';
        else
            snprintf(root, n, ".");
    }
}

// Runs python3 on the repository's file rel with args (already quoted) and asserts it exits 0.
static void test_py_run(const char *rel, const char *args) {
    char root[4096], cmd[8400];
    test_py_root(root, sizeof root);
    snprintf(cmd, sizeof cmd, "python3 '%s/%s' %s", root, rel, args);
    int rc = system(cmd);
    TEST_ASSERT_MSG(rc == 0, "%s exited with status %d", cmd, rc);
}

// Runs python3 on tests/<script> and asserts it exits 0.
static void test_py_script(const char *script) {
    char rel[512];
    snprintf(rel, sizeof rel, "tests/%s", script);
    test_py_run(rel, "");
}

#endif
