#ifndef DSF_CONTRACT_RUNNER_H
#define DSF_CONTRACT_RUNNER_H
// The contract runner: runs gates 1-4 and the limits check for one record on one backend, and reports.
#include <stdio.h>

#include "contract/contract.h"

#define DSF_DETAIL 320

// Verdict of one implementation (real or control) over the whole suite.
typedef struct dsf_impl_result {
    const dsf_impl *impl;
    int red[6];
    char detail[6][DSF_DETAIL];
    double rms, max;
    char worst[128];
    // For a control: the first gate that went red (0 = none), and whether that is the planted one.
    int first_red;
    int as_planted;
} dsf_impl_result;

typedef struct dsf_kernel_result {
    const dsf_record *rec;
    dsf_backend backend;
    dsf_impl_result *impls;
    int n_impls;
    // Over the real implementations: red gates (1..4, 5 = limits) and whether each red is a listed finding.
    int red[6];
    int known[6];
    int fixed_findings;
    int failed;
    int limit_problems;
    int controls, controls_red;
    double gate_ms, limits_ms;
    char error[DSF_DETAIL];
} dsf_kernel_result;

typedef struct dsf_contract_opts {
    uint64_t seed;
    const char *known_path;
    // Optional: print progress lines to this stream.
    FILE *progress;
} dsf_contract_opts;

// Runs every gate of rec on backend b; the caller frees with dsf_kernel_result_free.
void dsf_contract_run_record(const dsf_record *rec, dsf_backend b, const dsf_contract_opts *o, dsf_pool *pool,
                             void *stream, dsf_kernel_result *out);
void dsf_kernel_result_free(dsf_kernel_result *r);
// The limits check of one CUDA implementation's geometries; returns problems found and appends details.
int dsf_contract_limits(const dsf_impl *im, int have_gpu, char *detail, size_t n);

// Known findings: "kernel gate backend reason" lines; gate is 1..4 or limits.
typedef struct dsf_known dsf_known;
// Loads path, or the findings built into the binary from src/contract/known_findings.txt when path is NULL.
int dsf_known_load(const char *path, dsf_known **out, dsf_err *e);
int dsf_known_parse(const char *text, const char *origin, dsf_known **out, dsf_err *e);
void dsf_known_free(dsf_known *k);
int dsf_known_has(const dsf_known *k, const char *kernel, int gate, dsf_backend b);
void dsf_known_apply(const dsf_known *k, dsf_kernel_result *r);

#endif
