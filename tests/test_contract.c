// Tests of the contract runner itself: fixture kernels made to go red at each gate, SUMMARY parsing, known findings.
#include <math.h>
#include <string.h>

#include "contract/report.h"
#include "test.h"

static int64_t n_of(const dsf_case *c) { return c->n; }
static int64_t one(const dsf_case *c) { return (void)c, 1; }

static const dsf_operand ops[] = {
    {"x", DSF_ELEM_F32, DSF_IN, 1, n_of, DSF_DRAW_ACT, NULL},
    {"sum", DSF_ELEM_F32, DSF_OUT, 1, one, DSF_DRAW_ACT, NULL},
};

static void ref(const void *const *ins, double *const *out, const dsf_case *c) {
    const float *x = ins[0];
    for (int64_t r = 0; r < c->rows; r++) {
        double s = 0;
        for (int64_t k = 0; k < c->n; k++) s += x[r * c->n + k];
        out[0][r] = s;
    }
}

// The sum of a row in index order; `chunk` > 0 makes a pairwise order that follows the geometry instead.
static float row_sum(const float *x, int64_t n, int64_t chunk, int64_t skip_tail) {
    float s = 0;
    if (chunk <= 0) {
        for (int64_t k = 0; k < n - skip_tail; k++) s += x[k];
        return s;
    }
    for (int64_t k0 = 0; k0 < n; k0 += chunk) {
        float p = 0;
        for (int64_t k = k0; k < n && k < k0 + chunk; k++) p += x[k];
        s += p;
    }
    return s;
}

typedef struct fx {
    const dsf_call *call;
    int mode;
} fx;

enum { GOOD, SKIP_ROW, PAST_END, ORDER, TAIL, SPLIT, MODIFY_IN };

static void work(void *ctx, int tid, int n) {
    const fx *f = ctx;
    const dsf_case *c = f->call->c;
    float *x = f->call->ops[0], *y = f->call->ops[1];
    long long lo, hi;
    dsf_pool_range(c->rows, tid, n, &lo, &hi);
    for (long long r = lo; r < hi; r++) {
        const float *xr = x + r * c->n;
        if (f->mode == SKIP_ROW && r == c->rows - 1) continue;
        if (f->mode == ORDER)
            y[r] = row_sum(xr, c->n, f->call->g->p[0], 0);
        else if (f->mode == SPLIT && c->rows > 1)
            y[r] = row_sum(xr, c->n, 7, 0);
        else
            y[r] = row_sum(xr, c->n, 0, f->mode == TAIL ? 1 : 0);
        if (f->mode == PAST_END && r == c->rows - 1) y[r + 1] = 0;
        if (f->mode == MODIFY_IN && r == 0) x[0] = 1;
    }
}

#define FIXTURE_RUN(name, mode_)                                                                           \
    static int name(const dsf_call *call, dsf_err *e) {                                                   \
        (void)e;                                                                                           \
        fx f = {call, mode_};                                                                              \
        dsf_pool_run(call->pool, call->g->threads, work, &f);                                              \
        return 0;                                                                                          \
    }
FIXTURE_RUN(run_good, GOOD)
FIXTURE_RUN(run_skip, SKIP_ROW)
FIXTURE_RUN(run_past, PAST_END)
FIXTURE_RUN(run_order, ORDER)
FIXTURE_RUN(run_tail, TAIL)
FIXTURE_RUN(run_split, SPLIT)
FIXTURE_RUN(run_modify, MODIFY_IN)

static const dsf_geom geoms[] = {{"t1", 1, 0, {0}}, {"t2c4", 2, 0, {4}}, {"t3c16", 3, 0, {16}}};
static const dsf_case cases[] = {{"r5n100", 5, 100, 0, 0}, {"r1n33", 1, 33, 0, 0}, {"r17n64", 17, 64, 0, 0}};

static const dsf_impl impls[] = {
    {"good", DSF_BACKEND_CPU, run_good, geoms, 3, DSF_GATE_NONE, NULL, NULL, NULL, NULL},
    {"skip_row", DSF_BACKEND_CPU, run_skip, geoms, 3, DSF_GATE_1, "last row unwritten", NULL, NULL, NULL},
    {"past_end", DSF_BACKEND_CPU, run_past, geoms, 3, DSF_GATE_1, "writes one past the output", NULL, NULL, NULL},
    {"modify_in", DSF_BACKEND_CPU, run_modify, geoms, 3, DSF_GATE_1, "writes its input", NULL, NULL, NULL},
    {"order", DSF_BACKEND_CPU, run_order, geoms, 3, DSF_GATE_2, "order follows geometry", NULL, NULL, NULL},
    {"tail", DSF_BACKEND_CPU, run_tail, geoms, 3, DSF_GATE_3, "dropped tail", NULL, NULL, NULL},
    {"split", DSF_BACKEND_CPU, run_split, geoms, 3, DSF_GATE_4, "split follows row count", NULL, NULL, NULL},
    {"tail_as_gate4", DSF_BACKEND_CPU, run_tail, geoms, 3, DSF_GATE_4, "planted at the wrong gate", NULL, NULL, NULL},
};

static const dsf_record fixture = {"fixture_rowsum", "test", "row sums", ops, 2, ref, impls, 8, cases, 3, 1e-6, 1e-5};

static dsf_pool *pool;

static const dsf_impl_result *find(const dsf_kernel_result *r, const char *name) {
    for (int k = 0; k < r->n_impls; k++)
        if (!strcmp(r->impls[k].impl->name, name)) return &r->impls[k];
    return NULL;
}

static void test_controls_red_at_their_gate(void) {
    dsf_contract_opts o = {1, NULL, NULL};
    dsf_kernel_result r;
    dsf_contract_run_record(&fixture, DSF_BACKEND_CPU, &o, pool, NULL, &r);
    TEST_ASSERT(r.n_impls == 8);
    TEST_ASSERT(!r.failed);
    TEST_ASSERT(r.controls == 7);
    TEST_ASSERT_MSG(r.controls_red == 6, "%d red as planted", r.controls_red);
    const char *names[] = {"skip_row", "past_end", "modify_in", "order", "tail", "split"};
    int gates[] = {1, 1, 1, 2, 3, 4};
    for (int i = 0; i < 6; i++) {
        const dsf_impl_result *ir = find(&r, names[i]);
        TEST_ASSERT(ir && ir->first_red == gates[i] && ir->as_planted);
    }
    const dsf_impl_result *wrong = find(&r, "tail_as_gate4");
    TEST_ASSERT(wrong && wrong->first_red == 3 && !wrong->as_planted);
    const dsf_impl_result *good = find(&r, "good");
    TEST_ASSERT_MSG(good && !good->red[3] && good->rms > 0 && good->rms < 1e-6, "rms %g max %g", good->rms, good->max);
    TEST_ASSERT(strstr(find(&r, "tail")->detail[3], "row") != NULL);
    TEST_ASSERT(strstr(find(&r, "skip_row")->detail[1], "never written") != NULL);
    TEST_ASSERT(strstr(find(&r, "past_end")->detail[1], "trailing guard") != NULL);
    dsf_kernel_result_free(&r);
}

static void test_faulty_real_impl_fails_and_known_findings(void) {
    dsf_impl bad_impls[] = {impls[0], impls[4]};
    bad_impls[1].planted = DSF_GATE_NONE;
    dsf_record bad = fixture;
    bad.name = "fixture_bad";
    bad.impls = bad_impls;
    bad.n_impls = 2;
    dsf_contract_opts o = {2, NULL, NULL};
    dsf_kernel_result r;
    dsf_contract_run_record(&bad, DSF_BACKEND_CPU, &o, pool, NULL, &r);
    TEST_ASSERT(r.failed && r.red[2] && !r.red[1] && !r.red[3] && !r.red[4]);
    dsf_known *k;
    dsf_err e;
    TEST_ASSERT(dsf_known_parse("# a comment\nfixture_bad 2 cpu order follows the geometry\n", "t", &k, &e) == 0);
    dsf_known_apply(k, &r);
    TEST_ASSERT(!r.failed && r.known[2]);
    dsf_known_free(k);
    TEST_ASSERT(dsf_known_parse("fixture_bad 3 cpu listed but passing\n", "t", &k, &e) == 0);
    dsf_known_apply(k, &r);
    TEST_ASSERT(r.failed && r.fixed_findings == 1);
    dsf_known_free(k);
    TEST_ASSERT(dsf_known_parse("fixture_bad 9 cpu bad gate\n", "kf", &k, &e) == -1 && strstr(e.msg, "kf:1") != NULL);
    dsf_known_free(k);
    dsf_kernel_result_free(&r);
}

static void test_summary_line_shape(void) {
    dsf_summary s = {12, 11, 1, 0, 31, 30, 1, 2, 5210.4, 12.2}, p;
    char buf[512] = {0}, be[16];
    FILE *f = fmemopen(buf, sizeof buf, "w");
    dsf_report_summary(f, DSF_BACKEND_CUDA, &s);
    fclose(f);
    TEST_ASSERT(!strcmp(buf, "SUMMARY cuda: 12 kernels: 11 pass gates 1-4, 1 fail, 0 known findings; 31 controls: 30 "
                             "red as planted, 1 missed; 2 limit problems; gates 5210 ms, limits 12 ms\n"));
    TEST_ASSERT(dsf_summary_parse(buf, be, sizeof be, &p) == 0);
    TEST_ASSERT(!strcmp(be, "cuda") && p.kernels == 12 && p.fail == 1 && p.missed == 1 && p.limit_problems == 2);
    TEST_ASSERT(dsf_summary_parse("SUMMARY cpu: 3 kernels: 3 pass gates 1-4, 1 fail, 0 known findings; 0 controls: 0 "
                                  "red as planted, 0 missed; 0 limit problems; gates 1 ms, limits 0 ms",
                                  be, sizeof be, &p) == -1);
    TEST_ASSERT(dsf_contract_exit_status(&s) == 1);
    dsf_summary ok = {3, 3, 0, 0, 9, 9, 0, 0, 1, 1}, known = {3, 2, 0, 1, 9, 9, 0, 0, 1, 1};
    TEST_ASSERT(dsf_contract_exit_status(&ok) == 0 && dsf_contract_exit_status(&known) == 0);
    dsf_summary missed = ok, limits = ok;
    missed.missed = 1, missed.red = 8, limits.limit_problems = 1;
    TEST_ASSERT(dsf_contract_exit_status(&missed) == 1 && dsf_contract_exit_status(&limits) == 1);
}

static int fake_attrs(const dsf_geom *g, dsf_func_attrs *a, dsf_err *e) {
    (void)e;
    a->regs_per_thread = g->p[0];
    a->static_smem = 0;
    a->max_threads_per_block = 1024;
    return 0;
}

static int failing_attrs(const dsf_geom *g, dsf_func_attrs *a, dsf_err *e) {
    (void)a;
    return dsf_fail(e, "no attributes for %s", g->name);
}

static void test_limits(void) {
    static const dsf_geom ok[] = {{"b256", 256, 16384, {64}}};
    static const dsf_geom big_smem[] = {{"smem200k", 256, 200 * 1024, {32}}};
    static const dsf_geom many_threads[] = {{"t2048", 2048, 0, {32}}};
    static const dsf_geom heavy_regs[] = {{"t1024r128", 1024, 0, {128}}};
    dsf_impl im = {"k", DSF_BACKEND_CUDA, run_good, ok, 1, DSF_GATE_NONE, NULL, fake_attrs, NULL, NULL};
    char d[DSF_DETAIL] = "";
    TEST_ASSERT(dsf_contract_limits(&im, 1, d, sizeof d) == 0);
    im.geoms = big_smem;
    TEST_ASSERT_MSG(dsf_contract_limits(&im, 0, d, sizeof d) == 4, "%s", d);
    d[0] = 0;
    im.geoms = many_threads;
    TEST_ASSERT(dsf_contract_limits(&im, 0, d, sizeof d) == 6 && strstr(d, "threads") != NULL);
    d[0] = 0;
    im.geoms = heavy_regs;
    TEST_ASSERT(dsf_contract_limits(&im, 0, d, sizeof d) == 0);
    TEST_ASSERT(dsf_contract_limits(&im, 1, d, sizeof d) == 6 && strstr(d, "registers") != NULL);
    // Code for one target is held to that target alone: 200 KB fits sm_90, and sm_86's 99 KB is not asked.
    d[0] = 0;
    im.geoms = big_smem, im.target = "sm_90";
    TEST_ASSERT_MSG(dsf_contract_limits(&im, 0, d, sizeof d) == 0, "%s", d);
    im.target = "sm_86";
    TEST_ASSERT(dsf_contract_limits(&im, 0, d, sizeof d) == 1 && strstr(d, "sm_86") != NULL);
    d[0] = 0;
    im.geoms = ok, im.target = "sm90";
    TEST_ASSERT_MSG(dsf_contract_limits(&im, 0, d, sizeof d) == 1 && strstr(d, "sm90 is not in the limits"), "%s", d);
    // Attributes that cannot be read on a GPU are a problem that says why; two problems are joined by "; ".
    const char *one = "k b256: attributes unreadable: no attributes for b256";
    const char *two = "k t0: attributes unreadable: no attributes for t0; "
                      "k t0: declares 0 threads per block (at least 1)";
    static const dsf_geom none[] = {{"t0", 0, 0, {32}}};
    d[0] = 0;
    im.target = NULL, im.attrs = failing_attrs;
    TEST_ASSERT_MSG(dsf_contract_limits(&im, 1, d, sizeof d) == 1 && !strcmp(d, one), "%s", d);
    d[0] = 0;
    im.geoms = none;
    TEST_ASSERT_MSG(dsf_contract_limits(&im, 1, d, sizeof d) == 2 && !strcmp(d, two), "%s", d);
    // A buffer with no room for a second problem keeps the first whole and no dangling separator.
    size_t first = strlen(two) - strlen("; k t0: declares 0 threads per block (at least 1)");
    d[0] = 0;
    TEST_ASSERT_MSG(dsf_contract_limits(&im, 1, d, first + 3) == 2 && strlen(d) == first && !strncmp(d, two, first),
                    "%s", d);
}

// Two more launched functions: one of 64 threads, one of p[1] threads and p[2] bytes of smem; p[1] < 0 fails.
static int fake_launches(const dsf_geom *g, int measure, dsf_launch *out, int max, dsf_err *e) {
    if (max < 2 || g->p[1] < 0) return dsf_fail(e, "fake launches of %s", g->name);
    out[0] = (dsf_launch){"small", 64, 0, {32, 1024, 1024, 0}};
    out[1] = (dsf_launch){"second", g->p[1], g->p[2], {measure ? g->p[3] : 0, 4096, 1024, 0}};
    return 2;
}

// The limits gate holds each other launch of a geometry to the targets' limits, naming the function.
static void test_limits_launches(void) {
    static const dsf_geom fits[] = {{"fits", 256, 0, {32, 256, 1024, 64}}};
    static const dsf_geom wide[] = {{"wide", 256, 0, {32, 2048, 0, 32}}};
    static const dsf_geom smem[] = {{"smem", 256, 0, {32, 256, 120 * 1024, 32}}};
    static const dsf_geom regs[] = {{"regs", 256, 0, {32, 1024, 0, 128}}};
    dsf_impl im = {"k", DSF_BACKEND_CUDA, run_good, fits, 1, DSF_GATE_NONE, NULL, fake_attrs, NULL, fake_launches};
    char d[DSF_DETAIL] = "";
    TEST_ASSERT_MSG(dsf_contract_limits(&im, 1, d, sizeof d) == 0, "%s", d);
    im.geoms = wide;
    TEST_ASSERT_MSG(dsf_contract_limits(&im, 0, d, sizeof d) == 6 && strstr(d, "wide second: threads 2048"), "%s", d);
    d[0] = 0;
    // 120 KB plus 4 KB static: over the 99 KB of sm_86, sm_89 and sm_120, within sm_80, sm_90 and sm_100.
    im.geoms = smem;
    TEST_ASSERT_MSG(dsf_contract_limits(&im, 0, d, sizeof d) == 3 && strstr(d, "sm_86 smem second"), "%s", d);
    d[0] = 0;
    im.geoms = regs;
    TEST_ASSERT_MSG(dsf_contract_limits(&im, 0, d, sizeof d) == 0, "%s", d);
    TEST_ASSERT_MSG(dsf_contract_limits(&im, 1, d, sizeof d) == 6 && strstr(d, "regs second: block needs"), "%s", d);
    d[0] = 0;
    static const dsf_geom broken[] = {{"broken", 256, 0, {32, -1, 0, 32}}};
    im.geoms = broken;
    TEST_ASSERT_MSG(dsf_contract_limits(&im, 0, d, sizeof d) == 1 && strstr(d, "unreadable: fake launches of broken"),
                    "%s", d);
}

int main(void) {
    pool = dsf_pool_new(3);
    TEST_RUN(test_controls_red_at_their_gate);
    TEST_RUN(test_faulty_real_impl_fails_and_known_findings);
    TEST_RUN(test_summary_line_shape);
    TEST_RUN(test_limits);
    TEST_RUN(test_limits_launches);
    dsf_pool_free(pool);
    TEST_END();
}
