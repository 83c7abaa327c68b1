#ifndef DSF_FMT_RECORD_H
#define DSF_FMT_RECORD_H
// Every fmt record lists the same implementations: the real kernel and one control per gate on each backend.
#include "kern/fmt/fmt_internal.h"

#define DSF_FMT_LEN(a) ((int)(sizeof(a) / sizeof((a)[0])))

// Run wrappers tag_<backend>_<variant> over fn(call, fault, e), one per dsf_fmt_fault.
#define DSF_FMT_RUNS(tag, backend, fn)                                  \
    static int tag##_##backend##_real(const dsf_call *c, dsf_err *e) {  \
        return fn(c, DSF_FMT_REAL, e);                                  \
    }                                                                   \
    static int tag##_##backend##_skip(const dsf_call *c, dsf_err *e) {  \
        return fn(c, DSF_FMT_SKIP_LAST, e);                             \
    }                                                                   \
    static int tag##_##backend##_geom(const dsf_call *c, dsf_err *e) {  \
        return fn(c, DSF_FMT_GEOM, e);                                  \
    }                                                                   \
    static int tag##_##backend##_wrong(const dsf_call *c, dsf_err *e) { \
        return fn(c, DSF_FMT_WRONG, e);                                 \
    }                                                                   \
    static int tag##_##backend##_batch(const dsf_call *c, dsf_err *e) { \
        return fn(c, DSF_FMT_BATCH, e);                                 \
    }

// Attribute callbacks tag_attrs_<variant> over fn(geometry, fault, out, e): the exact function each variant launches.
#define DSF_FMT_ATTRS(tag, fn)                                                       \
    static int tag##_attrs_real(const dsf_geom *g, dsf_func_attrs *o, dsf_err *e) {  \
        return fn(g, DSF_FMT_REAL, o, e);                                            \
    }                                                                                \
    static int tag##_attrs_skip(const dsf_geom *g, dsf_func_attrs *o, dsf_err *e) {  \
        return fn(g, DSF_FMT_SKIP_LAST, o, e);                                       \
    }                                                                                \
    static int tag##_attrs_geom(const dsf_geom *g, dsf_func_attrs *o, dsf_err *e) {  \
        return fn(g, DSF_FMT_GEOM, o, e);                                            \
    }                                                                                \
    static int tag##_attrs_wrong(const dsf_geom *g, dsf_func_attrs *o, dsf_err *e) { \
        return fn(g, DSF_FMT_WRONG, o, e);                                           \
    }                                                                                \
    static int tag##_attrs_batch(const dsf_geom *g, dsf_func_attrs *o, dsf_err *e) { \
        return fn(g, DSF_FMT_BATCH, o, e);                                           \
    }

#define DSF_FMT_BATCH_WHAT "calls of more than 64 rows (no suite case has more) take a path that "

#define DSF_FMT_IMPL(name, backend, run, geoms, gate, what, attrs) \
    { name, backend, run, geoms, DSF_FMT_LEN(geoms), gate, what, attrs, NULL, NULL }

// The CPU entries: the kernel, then controls for gates 1 to 4 with what each plants.
#define DSF_FMT_CPU_IMPLS(tag, geoms, what, skip, geom, wrong, batch)                                                \
    DSF_FMT_IMPL("cpu", DSF_BACKEND_CPU, tag##_cpu_real, geoms, DSF_GATE_NONE, what, NULL),                          \
        DSF_FMT_IMPL("cpu_ctl_skip", DSF_BACKEND_CPU, tag##_cpu_skip, geoms, DSF_GATE_1, skip, NULL),                \
        DSF_FMT_IMPL("cpu_ctl_geom", DSF_BACKEND_CPU, tag##_cpu_geom, geoms, DSF_GATE_2, geom, NULL),                \
        DSF_FMT_IMPL("cpu_ctl_wrong", DSF_BACKEND_CPU, tag##_cpu_wrong, geoms, DSF_GATE_3, wrong, NULL),             \
        DSF_FMT_IMPL("cpu_ctl_batch", DSF_BACKEND_CPU, tag##_cpu_batch, geoms, DSF_GATE_4, DSF_FMT_BATCH_WHAT batch, \
                     NULL)

// The CUDA entries: the kernel, controls for gates 1 to 4, and the kernel itself under a geometry over the limits.
#define DSF_FMT_CUDA_IMPLS(tag, geoms, big, what, skip, geom, wrong, batch)                                          \
    DSF_FMT_IMPL("cuda", DSF_BACKEND_CUDA, tag##_cuda_real, geoms, DSF_GATE_NONE, what, tag##_attrs_real),           \
        DSF_FMT_IMPL("cuda_ctl_skip", DSF_BACKEND_CUDA, tag##_cuda_skip, geoms, DSF_GATE_1, skip, tag##_attrs_skip), \
        DSF_FMT_IMPL("cuda_ctl_geom", DSF_BACKEND_CUDA, tag##_cuda_geom, geoms, DSF_GATE_2, geom, tag##_attrs_geom), \
        DSF_FMT_IMPL("cuda_ctl_wrong", DSF_BACKEND_CUDA, tag##_cuda_wrong, geoms, DSF_GATE_3, wrong,                 \
                     tag##_attrs_wrong),                                                                             \
        DSF_FMT_IMPL("cuda_ctl_batch", DSF_BACKEND_CUDA, tag##_cuda_batch, geoms, DSF_GATE_4,                        \
                     DSF_FMT_BATCH_WHAT batch, tag##_attrs_batch),                                                   \
        DSF_FMT_IMPL(                                                                                                \
            "cuda_ctl_smem", DSF_BACKEND_CUDA, tag##_cuda_real, big, DSF_GATE_LIMITS,                                \
            "the kernel under a geometry declaring 200 KB of dynamic shared memory: fits sm_90 and sm_100 only",     \
            tag##_attrs_real)

#endif
