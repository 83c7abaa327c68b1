// Runs the float64 reference's self-checks (tests/test_ref.py) under ctest; skips when python3 or NumPy is missing.
#include "test_py.h"

static void test_reference_self_checks(void) { test_py_script("test_ref.py"); }

int main(void) {
    if (system("python3 -c 'import numpy' >/dev/null 2>&1") != 0) TEST_SKIP_ALL("python3 with NumPy is not available");
    TEST_RUN(test_reference_self_checks);
    TEST_END();
}
