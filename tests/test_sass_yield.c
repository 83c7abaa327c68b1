// Runs tools/sass_yield on a hand-built CUDA ELF (tests/test_sass_yield.py) under ctest; skips without python3.
#include "test_py.h"

static void test_yield_bits(void) { test_py_script("test_sass_yield.py"); }

int main(void) {
    if (system("python3 -c 'pass' >/dev/null 2>&1") != 0) TEST_SKIP_ALL("python3 is not available");
    TEST_RUN(test_yield_bits);
    TEST_END();
}
