// Runs tools/sass_banks' check on a hand-written listing (tests/test_sass_banks.py) under ctest; skips without python3.
#include "test_py.h"

static void test_bank_counts(void) { test_py_script("test_sass_banks.py"); }

int main(void) {
    if (system("python3 -c 'pass' >/dev/null 2>&1") != 0) TEST_SKIP_ALL("python3 is not available");
    TEST_RUN(test_bank_counts);
    TEST_END();
}
