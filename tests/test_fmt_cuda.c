// The fmt kernels on CUDA against the CPU, bit for bit, at every real CUDA geometry of every case; skips without a GPU.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "contract/contract.h"
#include "contract/device.h"
#include "contract/draw.h"
#include "test.h"

enum { MAX_OPS = 8 };

static dsf_pool *pool;
static void *stream;

static const dsf_impl *real_impl(const dsf_record *r, dsf_backend b) {
    for (int i = 0; i < r->n_impls; i++)
        if (r->impls[i].backend == b && r->impls[i].planted == DSF_GATE_NONE) return &r->impls[i];
    return NULL;
}

static int64_t op_count(const dsf_operand *op, const dsf_case *c) {
    return op->per_row ? op->count(c) * c->rows : op->count(c);
}

static size_t op_bytes(const dsf_operand *op, const dsf_case *c) {
    return dsf_elem_bytes(op->elem, op_count(op, c));
}

// Runs one CUDA geometry on host's inputs, outputs poisoned; returns 0 when every output equals host's (the CPU's).
static int cuda_differs(const dsf_record *r, const dsf_impl *im, const dsf_geom *g, const dsf_case *c,
                        uint8_t *const *host, int poison) {
    void *dev[MAX_OPS] = {0};
    dsf_err e = {{0}};
    int bad = 0;
    for (int i = 0; i < r->n_ops && !bad; i++) {
        size_t n = op_bytes(&r->ops[i], c);
        bad = dsf_dev_alloc(DSF_BACKEND_CUDA, n, &dev[i], &e) ||
              (r->ops[i].dir == DSF_IN ? dsf_dev_upload(DSF_BACKEND_CUDA, dev[i], host[i], n, &e)
                                       : dsf_dev_fill(DSF_BACKEND_CUDA, dev[i], poison, n, &e));
    }
    dsf_call call = {dev, c, g, NULL, stream};
    if (!bad) bad = im->run(&call, &e) || dsf_dev_sync(DSF_BACKEND_CUDA, stream, &e);
    for (int i = 0; i < r->n_ops && !bad; i++) {
        if (r->ops[i].dir != DSF_OUT) continue;
        size_t n = op_bytes(&r->ops[i], c);
        uint8_t *got = malloc(n ? n : 1);
        bad = dsf_dev_download(DSF_BACKEND_CUDA, got, dev[i], n, &e) != 0;
        if (!bad && memcmp(got, host[i], n)) {
            size_t k = 0;
            while (got[k] == host[i][k]) k++;
            fprintf(stderr, "%s %s %s: %s byte %zu is %02x, CPU %02x\n", r->name, c->name, g->name, r->ops[i].name, k,
                    got[k], host[i][k]);
            bad = 1;
        }
        free(got);
    }
    if (e.msg[0]) fprintf(stderr, "%s %s %s: %s\n", r->name, c->name, g->name, e.msg);
    for (int i = 0; i < r->n_ops; i++)
        if (dev[i]) dsf_dev_free(DSF_BACKEND_CUDA, dev[i]);
    return bad;
}

static void check_record(const dsf_record *r) {
    const dsf_impl *cpu = real_impl(r, DSF_BACKEND_CPU), *cuda = real_impl(r, DSF_BACKEND_CUDA);
    TEST_ASSERT_MSG(cpu && cuda && r->n_ops <= MAX_OPS, "%s: needs a real CPU and a real CUDA implementation", r->name);
    if (!cpu || !cuda || r->n_ops > MAX_OPS) return;
    for (int ci = 0; ci < r->n_cases; ci++) {
        const dsf_case *c = &r->cases[ci];
        uint8_t *host[MAX_OPS] = {0};
        uint64_t rng = dsf_rng_seed(77, r->name, (uint64_t)ci);
        for (int i = 0; i < r->n_ops; i++) {
            size_t n = op_bytes(&r->ops[i], c);
            host[i] = calloc(1, n ? n : 1);
            if (r->ops[i].dir == DSF_IN) dsf_draw_operand(&r->ops[i], host[i], op_count(&r->ops[i], c), c, &rng);
        }
        dsf_err e = {{0}};
        dsf_call call = {(void *const *)host, c, &cpu->geoms[0], pool, NULL};
        TEST_ASSERT_MSG(cpu->run(&call, &e) == 0, "%s %s on the CPU: %s", r->name, c->name, e.msg);
        for (int gi = 0; gi < cuda->n_geoms; gi++)
            for (int poison = 0x77; poison <= 0xFF; poison += 0x88)
                TEST_ASSERT_MSG(!cuda_differs(r, cuda, &cuda->geoms[gi], c, host, poison), "%s %s geometry %s", r->name,
                                c->name, cuda->geoms[gi].name);
        for (int i = 0; i < r->n_ops; i++) free(host[i]);
    }
}

static void test_cuda_equals_cpu(void) {
    int seen = 0;
    for (size_t i = 0; i < dsf_contract_record_count(); i++) {
        const dsf_record *r = dsf_contract_record(i);
        if (strcmp(r->family, "fmt")) continue;
        check_record(r);
        seen++;
    }
    TEST_ASSERT(seen == 5);
}

int main(void) {
    char why[256];
    if (!dsf_dev_available(DSF_BACKEND_CUDA, why, sizeof why)) TEST_SKIP_ALL(why);
    dsf_err e = {{0}};
    if (dsf_dev_stream(DSF_BACKEND_CUDA, &stream, &e)) {
        fprintf(stderr, "stream: %s\n", e.msg);
        return 1;
    }
    pool = dsf_pool_new(0);
    TEST_RUN(test_cuda_equals_cpu);
    dsf_pool_free(pool);
    dsf_dev_stream_free(DSF_BACKEND_CUDA, stream);
    TEST_END();
}
