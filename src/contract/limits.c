#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "contract/runner.h"

// The most functions an implementation's launches hook may list beside its main one.
enum { MAX_LAUNCHES = 16 };

// Per-target limits from the CUDA C Programming Guide's compute-capability tables (docs/kernel-contract.md).
typedef struct target {
    const char *name;
    int max_threads;
    int smem_default;
    int smem_optin;
    int max_regs;
    int regfile;
} target;

static const target targets[] = {
    {"sm_80", 1024, 48 * 1024, 163 * 1024, 255, 65536},  {"sm_86", 1024, 48 * 1024, 99 * 1024, 255, 65536},
    {"sm_89", 1024, 48 * 1024, 99 * 1024, 255, 65536},  {"sm_90", 1024, 48 * 1024, 227 * 1024, 255, 65536},
    {"sm_100", 1024, 48 * 1024, 227 * 1024, 255, 65536}, {"sm_120", 1024, 48 * 1024, 99 * 1024, 255, 65536},
};

size_t dsf_contract_target_count(void) { return sizeof targets / sizeof targets[0]; }

// One problem appended to detail ("; " between problems), printf-style; the compiler checks the arguments.
__attribute__((format(printf, 3, 4))) static void add(char *detail, size_t n, const char *fmt, ...) {
    size_t len = strlen(detail);
    if (len + (len ? 3 : 1) >= n) return; // room for the separator and at least one character of the problem
    if (len) len += (size_t)snprintf(detail + len, n - len, "; ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail + len, n - len, fmt, ap);
    va_end(ap);
}

// Registers are allocated per warp in units of 256; a block fits only if all its warps' registers fit the file.
static long block_regs(int regs, int threads) {
    long warps = (threads + 31) / 32;
    long per_warp = ((long)regs * 32 + 255) / 256 * 256;
    return warps * per_warp;
}

// One function of geometry g (named fn) at its block size and dynamic shared memory against each target it may run on.
static int check_fn(const dsf_impl *im, const dsf_geom *g, const char *fn, long threads, long dyn_smem,
                    const dsf_func_attrs *fa, int measured, char *detail, size_t n) {
    int problems = 0;
    char who[96];
    if (fn)
        snprintf(who, sizeof who, "%s %s", g->name, fn);
    else
        snprintf(who, sizeof who, "%s", g->name);
    if (measured && fa->max_threads_per_block < threads) {
        add(detail, n, "%s %s: %ld threads exceed the compiled function's %d", im->name, who, threads,
            fa->max_threads_per_block);
        problems++;
    }
    for (size_t t = 0; t < sizeof targets / sizeof targets[0]; t++) {
        const target *tg = &targets[t];
        if (im->target && strcmp(im->target, tg->name)) continue;
        long smem = dyn_smem + fa->static_smem;
        if (threads > tg->max_threads) {
            add(detail, n, "%s %s: threads %ld over the limit %d", tg->name, who, threads, tg->max_threads);
            problems++;
        }
        if (smem > tg->smem_optin) {
            add(detail, n, "%s %s: shared memory %ld over the limit %d", tg->name, who, smem, tg->smem_optin);
            problems++;
        }
        if (measured && fa->regs_per_thread > tg->max_regs) {
            add(detail, n, "%s %s: registers %d over the limit %d", tg->name, who, fa->regs_per_thread, tg->max_regs);
            problems++;
        }
        if (measured && block_regs(fa->regs_per_thread, (int)threads) > tg->regfile) {
            add(detail, n, "%s %s: block needs %ld registers, file holds %d", tg->name, who,
                block_regs(fa->regs_per_thread, (int)threads), tg->regfile);
            problems++;
        }
    }
    return problems;
}

int dsf_contract_limits(const dsf_impl *im, int have_gpu, char *detail, size_t n) {
    int problems = 0;
    for (int gi = 0; gi < im->n_geoms; gi++) {
        const dsf_geom *g = &im->geoms[gi];
        dsf_func_attrs fa = {0};
        dsf_err e = {{0}};
        int measured = have_gpu && im->attrs && im->attrs(g, &fa, &e) == 0;
        if (have_gpu && im->attrs && !measured) {
            add(detail, n, "%s %s: attributes unreadable: %s", im->name, g->name, e.msg);
            problems++;
        }
        if (g->threads <= 0) {
            add(detail, n, "%s %s: declares %d threads per block (at least 1)", im->name, g->name, g->threads);
            problems++;
        }
        int known = !im->target;
        for (size_t t = 0; t < sizeof targets / sizeof targets[0]; t++)
            known |= im->target && !strcmp(im->target, targets[t].name);
        if (!known) {
            add(detail, n, "%s %s: target %s is not in the limits table", im->name, g->name, im->target);
            problems++;
        }
        problems += check_fn(im, g, NULL, g->threads, g->dyn_smem, &fa, measured, detail, n);
        if (!im->launches) continue;
        dsf_launch more[MAX_LAUNCHES];
        int k = im->launches(g, have_gpu, more, MAX_LAUNCHES, &e);
        if (k < 0) {
            add(detail, n, "%s %s: its other launches unreadable: %s", im->name, g->name, e.msg);
            problems++;
        }
        for (int i = 0; i < k && i < MAX_LAUNCHES; i++) {
            const dsf_launch *l = &more[i];
            problems += check_fn(im, g, l->fn, l->threads, l->dyn_smem, &l->fa, have_gpu, detail, n);
        }
    }
    return problems;
}
