#ifndef DSF_ENGRAM_RECORD_H
#define DSF_ENGRAM_RECORD_H
// Helpers of the Engram record files: run and attribute wrappers per planted variant, implementation entries.
#include "kern/engram/engram_internal.h"

#define DSF_ENG_LEN(a) ((int)(sizeof(a) / sizeof((a)[0])))

#define DSF_ENG_RUN(name, fn, fault)                            \
    static int name(const dsf_call *c, dsf_err *e) {            \
        return fn(c, fault, e);                                 \
    }

#define DSF_ENG_ATTRS(name, kernel, fault)                                   \
    static int name(const dsf_geom *g, dsf_func_attrs *o, dsf_err *e) {      \
        return dsf_engram_cuda_attrs(kernel, g, fault, o, e);                \
    }

#define DSF_ENG_IMPL(name, backend, run, geoms, gate, what, attrs) \
    { name, backend, run, geoms, DSF_ENG_LEN(geoms), gate, what, attrs, NULL, NULL }
// An implementation whose code exists for one CUDA target only (sm_90a instructions: "sm_90").
#define DSF_ENG_IMPL_ON(name, run, geoms, gate, what, attrs, target) \
    { name, DSF_BACKEND_CUDA, run, geoms, DSF_ENG_LEN(geoms), gate, what, attrs, target, NULL }

#endif
