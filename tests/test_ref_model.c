// Runs the float64 reference's self-checks (tests/test_ref.py) under ctest; skips when python3 or NumPy is missing.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

static char repo_root[4096];

static void find_root(void) {
    // CMake compiles this file by absolute path, so the repository root is two levels above it.
    snprintf(repo_root, sizeof repo_root, "%s", __FILE__);
    for (int up = 0; up < 2; up++) {
        char *slash = strrchr(repo_root, '/');
        if (slash)
            *slash = '\0';
        else
            snprintf(repo_root, sizeof repo_root, ".");
    }
}

static void test_reference_self_checks(void) {
    char cmd[8400];
    snprintf(cmd, sizeof cmd, "python3 '%s/tests/test_ref.py'", repo_root);
    int rc = system(cmd);
    TEST_ASSERT_MSG(rc == 0, "%s exited with status %d", cmd, rc);
}

int main(void) {
    find_root();
    if (system("python3 -c 'import numpy' >/dev/null 2>&1") != 0) TEST_SKIP_ALL("python3 with NumPy is not available");
    TEST_RUN(test_reference_self_checks);
    TEST_END();
}
