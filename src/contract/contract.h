#ifndef DSF_CONTRACT_H
#define DSF_CONTRACT_H
// The kernel contract's record API (DESIGN.md §3); how to add a kernel and its controls: docs/kernel-contract.md.
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "base/pool.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum dsf_backend { DSF_BACKEND_CPU, DSF_BACKEND_CUDA, DSF_BACKEND_COUNT } dsf_backend;

// Element kinds of operands; FP4X2 counts logical elements, two packed per byte (even element in the low nibble).
typedef enum dsf_elem {
    DSF_ELEM_F32,
    DSF_ELEM_BF16,
    DSF_ELEM_E4M3,
    DSF_ELEM_E8M0,
    DSF_ELEM_FP4X2,
    DSF_ELEM_I32,
    DSF_ELEM_I64,
    DSF_ELEM_COUNT
} dsf_elem;

// One case of a suite; the meaning of n, k and blk is the record's (documented beside its cases).
typedef struct dsf_case {
    const char *name;
    int64_t rows;
    int64_t n;
    int64_t k;
    int64_t blk;
} dsf_case;

// How input values are drawn; per-dtype realistic ranges, never zeros, negatives, large values and exact ties.
typedef enum dsf_draw {
    DSF_DRAW_ACT,
    DSF_DRAW_WEIGHT,
    DSF_DRAW_CODES,
    DSF_DRAW_SCALE,
    DSF_DRAW_CUSTOM
} dsf_draw;

typedef enum dsf_dir { DSF_IN, DSF_OUT } dsf_dir;

typedef struct dsf_operand {
    const char *name;
    dsf_elem elem;
    dsf_dir dir;
    // 1 when axis 0 is the case's row axis (count is then per row); 0 for operands shared by all rows (weights).
    int per_row;
    int64_t (*count)(const dsf_case *c);

    dsf_draw draw;
    // DSF_DRAW_CUSTOM: fills `count` elements of buf (host memory, the element kind's bytes) from the seeded rng.
    void (*fill)(void *buf, int64_t count, const dsf_case *c, uint64_t *rng);
} dsf_operand;

// A launch geometry: CPU threads = workers (0 = all); CUDA threads = per block, dyn_smem = declared dynamic smem.
typedef struct dsf_geom {
    const char *name;
    int threads;
    int dyn_smem;
    int p[5]; // the implementation's own parameters (unnamed ones 0)
} dsf_geom;

// What an implementation receives: operand buffers in record order (host memory on CPU, device memory on CUDA).
typedef struct dsf_call {
    void *const *ops;
    const dsf_case *c;
    const dsf_geom *g;
    dsf_pool *pool;
    void *stream;
} dsf_call;

// Measured resources of the compiled function for one geometry (CUDA, from cudaFuncGetAttributes).
typedef struct dsf_func_attrs {
    int regs_per_thread;
    int static_smem;
    int max_threads_per_block;
    int local_bytes;
} dsf_func_attrs;

// Another function a geometry launches: its block size and dynamic shared memory, and (measured) its resources.
typedef struct dsf_launch {
    const char *fn;
    int threads;
    int dyn_smem;
    dsf_func_attrs fa;
} dsf_launch;

// Gates a control can be planted for; DSF_GATE_LIMITS is the limits check.
typedef enum dsf_gate {
    DSF_GATE_NONE = 0,
    DSF_GATE_1 = 1,
    DSF_GATE_2 = 2,
    DSF_GATE_3 = 3,
    DSF_GATE_4 = 4,
    DSF_GATE_LIMITS = 5
} dsf_gate;

typedef struct dsf_impl {
    const char *name;
    dsf_backend backend;
    // Returns 0, or -1 with a message in e (shape or alignment refused, launch error).
    int (*run)(const dsf_call *call, dsf_err *e);
    const dsf_geom *geoms;
    int n_geoms;
    // DSF_GATE_NONE for a real implementation; otherwise the gate this planted control must turn red.
    dsf_gate planted;
    const char *what;
    // CUDA: measured resources of the function one geometry launches; NULL elsewhere.
    int (*attrs)(const dsf_geom *g, dsf_func_attrs *out, dsf_err *e);
    // CUDA: the one target whose instructions the code needs ("sm_90" for sm_90a code), or NULL for every target.
    const char *target;
    // CUDA: the other functions a geometry can launch, up to max in out (fa read if measure): count, or -1; or NULL.
    int (*launches)(const dsf_geom *g, int measure, dsf_launch *out, int max, dsf_err *e);
} dsf_impl;

typedef struct dsf_record {
    const char *name;
    const char *family;
    const char *doc;
    const dsf_operand *ops;
    int n_ops;
    // float64 reference: ins[i] are host inputs (NULL for outputs); out[j] gets the j-th output's logical elements.
    void (*ref)(const void *const *ins, double *const *out, const dsf_case *c);
    const dsf_impl *impls;
    int n_impls;
    const dsf_case *cases;
    int n_cases;
    // Gate 3: rms and max |err| of the first geometry, relative to the reference rms, must not exceed these.
    double rms_bound, max_bound;
} dsf_record;

// Registry (src/contract/registry.c, generated from src/kern/records.def).
size_t dsf_contract_record_count(void);
const dsf_record *dsf_contract_record(size_t i);

// Element helpers shared by the runner, the references and tests.
size_t dsf_elem_bytes(dsf_elem e, int64_t count);
double dsf_elem_decode(dsf_elem e, const void *buf, int64_t i);
const char *dsf_elem_name(dsf_elem e);
const char *dsf_backend_name(dsf_backend b);

#ifdef __cplusplus
}
#endif

#endif
