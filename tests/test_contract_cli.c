// dsfold contract end to end: every registered kernel on the CPU, the SUMMARY line, JSON, skips and exit statuses.
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "contract/contract.h"
#include "contract/device.h"
#include "contract/report.h"
#include "test.h"

static const char *bin;
static char dir[64] = "/tmp/dsf_contract_XXXXXX";

// Runs a shell command with stdout to out (NULL: discarded); returns the exit status, or -1.
static int sh(const char *args, const char *out) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' %s >%s 2>/dev/null", bin, args, out ? out : "/dev/null");
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static int find_summary(const char *path, const char *backend, dsf_summary *s) {
    FILE *f = fopen(path, "r");
    char line[1024], be[16];
    int found = 0;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "SUMMARY ", 8) && !dsf_summary_parse(line, be, sizeof be, s) && !strcmp(be, backend))
            found = 1;
    if (f) fclose(f);
    return found;
}

static void test_cpu_contract_passes(void) {
    char out[128], js[128];
    snprintf(out, sizeof out, "%s/cpu.txt", dir);
    snprintf(js, sizeof js, "%s/cpu.json", dir);
    char args[256];
    snprintf(args, sizeof args, "contract --backend cpu --json '%s'", js);
    TEST_ASSERT(sh(args, out) == 0);
    dsf_summary s;
    TEST_ASSERT(find_summary(out, "cpu", &s));
    int cpu_records = 0;
    for (size_t i = 0; i < dsf_contract_record_count(); i++) {
        const dsf_record *r = dsf_contract_record(i);
        for (int k = 0; k < r->n_impls; k++)
            if (r->impls[k].backend == DSF_BACKEND_CPU) {
                cpu_records++;
                break;
            }
    }
    TEST_ASSERT_MSG(s.kernels == cpu_records && s.pass == cpu_records && s.fail == 0, "%d kernels, %d pass, %d records",
                    s.kernels, s.pass, cpu_records);
    TEST_ASSERT(s.controls > 0 && s.missed == 0 && s.red == s.controls && s.limit_problems == 0);
    json_error_t je;
    json_t *root = json_load_file(js, 0, &je);
    TEST_ASSERT(root && (int)json_array_size(json_object_get(root, "kernels")) == cpu_records);
    json_decref(root);
}

static void test_cuda_skips_cleanly_without_gpu(void) {
    char why[256], out[128];
    if (dsf_dev_available(DSF_BACKEND_CUDA, why, sizeof why)) return;
    snprintf(out, sizeof out, "%s/cuda.txt", dir);
    TEST_ASSERT(sh("contract --backend cuda --only bf16_round", out) == 0);
    dsf_summary s;
    TEST_ASSERT(!find_summary(out, "cuda", &s));
    FILE *f = fopen(out, "r");
    char line[512] = "";
    TEST_ASSERT(f && fgets(line, sizeof line, f) && !strncmp(line, "cuda: skipped: ", 15));
    if (f) fclose(f);
}

static void test_usage_errors(void) {
    TEST_ASSERT(sh("contract --only no_such_kernel", NULL) == 2);
    TEST_ASSERT(sh("contract --backend tpu", NULL) == 2);
    TEST_ASSERT(sh("contract --seed x1", NULL) == 2);
    TEST_ASSERT(sh("contract --known /nonexistent/known.txt --only bf16_round --backend cpu", NULL) == 2);
    TEST_ASSERT(sh("contract --list --only fmt", NULL) == 0);
}

static void test_listed_finding_that_passes_is_reported(void) {
    char known[128], out[128], args[512];
    snprintf(known, sizeof known, "%s/known.txt", dir);
    snprintf(out, sizeof out, "%s/known_out.txt", dir);
    FILE *f = fopen(known, "w");
    TEST_ASSERT(f != NULL);
    if (!f) return;
    fputs("bf16_round 2 cpu listed to check the report of a fixed finding\n", f);
    fclose(f);
    snprintf(args, sizeof args, "contract --backend cpu --only bf16_round --known '%s'", known);
    TEST_ASSERT(sh(args, out) == 0);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "grep -q 'now pass: remove them' '%s'", out);
    TEST_ASSERT(system(cmd) == 0);
}

int main(void) {
    bin = getenv("DSF_BIN");
    if (!bin) TEST_SKIP_ALL("DSF_BIN not set (ctest sets it)");
    if (!mkdtemp(dir)) TEST_SKIP_ALL("no temporary directory");
    TEST_RUN(test_cpu_contract_passes);
    TEST_RUN(test_cuda_skips_cleanly_without_gpu);
    TEST_RUN(test_usage_errors);
    TEST_RUN(test_listed_finding_that_passes_is_reported);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd)) fprintf(stderr, "could not remove %s\n", dir);
    TEST_END();
}
