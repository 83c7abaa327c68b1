// Runs tools/sass_yield on a hand-built CUDA ELF (tests/test_sass_yield.py) and, in a CUDA build, on dsfold itself.
#include "test_py.h"

static void test_yield_bits(void) { test_py_script("test_sass_yield.py"); }

#ifdef DSF_HAVE_CUDA
// The build's step ran: the built dsfold's Engram prefill kernels carry the hints (`--check` exits 0, 1 or 2 if not).
static void test_built_binary(void) {
    const char *bin = getenv("DSF_BIN");
    TEST_ASSERT_MSG(bin != NULL, "DSF_BIN is not set (ctest sets it to the built dsfold)");
    if (!bin) return;
    char args[4400];
    snprintf(args, sizeof args, "--check --kernel eng_wkv_wgt '%s'", bin);
    test_py_run("tools/sass_yield", args);
}
#endif

int main(void) {
    if (system("python3 -c 'pass' >/dev/null 2>&1") != 0) TEST_SKIP_ALL("python3 is not available");
    TEST_RUN(test_yield_bits);
#ifdef DSF_HAVE_CUDA
    TEST_RUN(test_built_binary);
#endif
    TEST_END();
}
