#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "contract/device.h"
#include "contract/report.h"

static const char *usage_text =
    "usage: dsfold contract [--backend cpu|cuda|all] [--only FAMILY|KERNEL] [--seed N] [--json FILE] [--list]\n"
    "                       [--known FILE] [--verbose]\n"
    "Checks every registered kernel at every launch geometry: gate 1 launch and coverage, gate 2 geometry bits,\n"
    "gate 3 against float64, gate 4 rows and runs; planted controls must go red at their gate; CUDA limits.\n"
    "Exit status 0 only with no failure, no missed control and no limit problem (docs/kernel-contract.md).\n";

static int matches(const dsf_record *r, const char *only) {
    return !only || !strcmp(only, r->name) || !strcmp(only, r->family);
}

static int impls_on(const dsf_record *r, dsf_backend b, int *reals, int *controls, int *geoms) {
    int n = 0;
    *reals = *controls = *geoms = 0;
    for (int k = 0; k < r->n_impls; k++)
        if (r->impls[k].backend == b) {
            n++;
            *geoms += r->impls[k].n_geoms;
            if (r->impls[k].planted)
                (*controls)++;
            else
                (*reals)++;
        }
    return n;
}

static void list_records(const char *only) {
    for (size_t i = 0; i < dsf_contract_record_count(); i++) {
        const dsf_record *r = dsf_contract_record(i);
        if (!matches(r, only)) continue;
        printf("%-32s family %-8s %d cases  %s\n", r->name, r->family, r->n_cases, r->doc ? r->doc : "");
        for (int b = 0; b < DSF_BACKEND_COUNT; b++) {
            int reals, controls, geoms;
            if (impls_on(r, (dsf_backend)b, &reals, &controls, &geoms))
                printf("    %-4s %d implementations, %d controls, %d geometries\n", dsf_backend_name((dsf_backend)b),
                       reals, controls, geoms);
        }
    }
}

int dsf_cmd_contract(int argc, char **argv) {
    const char *backend = "all", *only = NULL, *json = NULL, *known_path = NULL;
    uint64_t seed = 20261130;
    int list = 0, verbose = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int more = i + 1 < argc;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage_text, stdout);
            return 0;
        } else if (!strcmp(a, "--backend") && more) {
            backend = argv[++i];
        } else if (!strcmp(a, "--only") && more) {
            only = argv[++i];
        } else if (!strcmp(a, "--seed") && more) {
            char *end;
            seed = strtoull(argv[++i], &end, 0);
            if (*end || !*argv[i]) {
                fprintf(stderr, "dsfold contract: --seed wants an integer, got '%s'\n", argv[i]);
                return 2;
            }
        } else if (!strcmp(a, "--json") && more) {
            json = argv[++i];
        } else if (!strcmp(a, "--known") && more) {
            known_path = argv[++i];
        } else if (!strcmp(a, "--list")) {
            list = 1;
        } else if (!strcmp(a, "--verbose")) {
            verbose = 1;
        } else {
            fprintf(stderr, "dsfold contract: unknown or incomplete option '%s'\n%s", a, usage_text);
            return 2;
        }
    }
    int want[DSF_BACKEND_COUNT] = {0};
    if (!strcmp(backend, "all"))
        want[DSF_BACKEND_CPU] = want[DSF_BACKEND_CUDA] = 1;
    else if (!strcmp(backend, "cpu"))
        want[DSF_BACKEND_CPU] = 1;
    else if (!strcmp(backend, "cuda"))
        want[DSF_BACKEND_CUDA] = 1;
    else {
        fprintf(stderr, "dsfold contract: --backend must be cpu, cuda or all, not '%s'\n", backend);
        return 2;
    }
    int found = 0;
    for (size_t i = 0; i < dsf_contract_record_count(); i++) found |= matches(dsf_contract_record(i), only);
    if (!found) {
        fprintf(stderr, "dsfold contract: no family or kernel named '%s' (dsfold contract --list)\n", only);
        return 2;
    }
    if (list) {
        list_records(only);
        return 0;
    }
    dsf_err e = {{0}};
    dsf_known *known;
    if (dsf_known_load(known_path, &known, &e)) {
        fprintf(stderr, "dsfold contract: %s\n", e.msg);
        dsf_known_free(known);
        return 2;
    }
    size_t nrec = dsf_contract_record_count();
    dsf_kernel_result *rs = dsf_calloc(nrec * DSF_BACKEND_COUNT + 1, sizeof *rs);
    const char *skipped[DSF_BACKEND_COUNT + 1] = {0};
    static char skip_msg[DSF_BACKEND_COUNT][300];
    int nres = 0, nskip = 0, bad = 0;
    dsf_pool *pool = dsf_pool_new(0);
    dsf_contract_opts o = {seed, known_path, verbose ? stderr : NULL};
    for (int b = 0; b < DSF_BACKEND_COUNT; b++) {
        if (!want[b]) continue;
        char why[256], dev[256];
        if (!dsf_dev_available((dsf_backend)b, why, sizeof why)) {
            snprintf(skip_msg[b], sizeof skip_msg[b], "%s: skipped: %s", dsf_backend_name((dsf_backend)b), why);
            printf("%s\n", skip_msg[b]);
            skipped[nskip++] = skip_msg[b];
            continue;
        }
        void *stream = NULL;
        if (dsf_dev_stream((dsf_backend)b, &stream, &e)) {
            fprintf(stderr, "dsfold contract: %s: %s\n", dsf_backend_name((dsf_backend)b), e.msg);
            bad = 1;
            continue;
        }
        dsf_dev_describe((dsf_backend)b, dev, sizeof dev);
        printf("%s: %s, seed %llu\n", dsf_backend_name((dsf_backend)b), dev, (unsigned long long)seed);
        dsf_summary s = {0};
        for (size_t i = 0; i < nrec; i++) {
            const dsf_record *r = dsf_contract_record(i);
            int reals, controls, geoms;
            if (!matches(r, only) || !impls_on(r, (dsf_backend)b, &reals, &controls, &geoms)) continue;
            dsf_kernel_result *kr = &rs[nres++];
            dsf_contract_run_record(r, (dsf_backend)b, &o, pool, stream, kr);
            dsf_known_apply(known, kr);
            dsf_report_kernel(stdout, kr);
            fflush(stdout);
            dsf_summary_add(&s, kr);
        }
        dsf_report_summary(stdout, (dsf_backend)b, &s);
        bad |= dsf_contract_exit_status(&s);
        dsf_dev_stream_free((dsf_backend)b, stream);
    }
    if (json && dsf_report_json(json, rs, nres, skipped, &e)) {
        fprintf(stderr, "dsfold contract: %s\n", e.msg);
        bad = 1;
    }
    for (int i = 0; i < nres; i++) dsf_kernel_result_free(&rs[i]);
    free(rs);
    dsf_pool_free(pool);
    dsf_known_free(known);
    return bad ? 1 : 0;
}
