// Runs tools/ncu_stalls on a hand-written listing and source page (tests/test_ncu_stalls.py); skips without python3.
#include "test_py.h"

static void test_stall_classes(void) { test_py_script("test_ncu_stalls.py"); }

int main(void) {
    if (system("python3 -c 'pass' >/dev/null 2>&1") != 0) TEST_SKIP_ALL("python3 is not available");
    TEST_RUN(test_stall_classes);
    TEST_END();
}
