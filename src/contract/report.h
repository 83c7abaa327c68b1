#ifndef DSF_CONTRACT_REPORT_H
#define DSF_CONTRACT_REPORT_H
// Contract output: a line per kernel, the SUMMARY line per backend (DESIGN.md §3), and the JSON report.
#include <stdio.h>

#include "contract/runner.h"

typedef struct dsf_summary {
    int kernels, pass, fail, known;
    int controls, red, missed;
    int limit_problems;
    double gate_ms, limits_ms;
} dsf_summary;

void dsf_report_kernel(FILE *f, const dsf_kernel_result *r);
void dsf_summary_add(dsf_summary *s, const dsf_kernel_result *r);
void dsf_report_summary(FILE *f, dsf_backend b, const dsf_summary *s);
// Writes every kernel result as JSON to path; returns 0 or -1 with a message naming the file.
int dsf_report_json(const char *path, const dsf_kernel_result *rs, int n, const char *const *skipped, dsf_err *e);
// 0 only with no failure, no missed control and no limit problem; else 1.
int dsf_contract_exit_status(const dsf_summary *s);
// Parses a SUMMARY line back into s; returns 0 when the line has exactly the documented shape.
int dsf_summary_parse(const char *line, char *backend, size_t bn, dsf_summary *s);

#endif
