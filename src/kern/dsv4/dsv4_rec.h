#ifndef DSF_DSV4_REC_H
#define DSF_DSV4_REC_H
// Shared pieces of the dsv4 contract records: drawers, the row-chunk runner, geometries and the control plumbing.
#include <stdint.h>

#include "contract/contract.h"
#include "contract/draw.h"

#define LEN(a) ((int)(sizeof(a) / sizeof((a)[0])))
// No case has more rows, so a row-count control switches path only in gate 4's (R+3)-row calls.
#define DSV4_MAX_ROWS 64

// What an implementation plants: nothing (the real kernel) or the defect of the control for gate 1..4.
typedef enum dsv4_fault { DSV4_REAL = 0, DSV4_G1 = 1, DSV4_G2 = 2, DSV4_G3 = 3, DSV4_G4 = 4 } dsv4_fault;

// Row geometries for kernels called on whole rows: {workers 1, 2, 3, all} x rows per chunk in p[0].
extern const dsf_geom dsv4_row_geoms[4];
// Output-chunk geometries of the linears (p[0] outputs per chunk) and row-chunk ones of attention.
extern const dsf_geom dsv4_chunk_geoms[4];

typedef void (*dsv4_rows_fn)(const dsf_call *c, int64_t r0, int64_t r1, int fault);
// Runs fn over the case's rows in chunks of g->p[0] rows, the chunks split over g->threads workers in order.
void dsv4_run_rows(const dsf_call *c, dsv4_rows_fn fn, int fault);

// Lanes of a control's reduction: p[0] for the gate-2 control, 2 above DSV4_MAX_ROWS rows for gate 4, else 1.
int dsv4_lanes(const dsf_call *c, int fault);
// fp32 sum of a[i] * b[i] (b NULL: a[i]^2); lanes > 1: interleaved partials kept in bf16 scratch, added in order.
float dsv4_dot(const float *a, const float *b, int64_t n, int lanes);
// bf16 of v: round to nearest even, or truncation where the gate-2 (p[0] > 1) or gate-4 (rows > 64) control says.
float dsv4_bf16(const dsf_call *c, int fault, float v);

// Drawers (fill callbacks of dsf_operand); each says its range beside its definition.
void dsv4_fill_act(void *buf, int64_t count, const dsf_case *c, uint64_t *rng);
void dsv4_fill_act_rows(void *buf, int64_t count, const dsf_case *c, uint64_t *rng);
void dsv4_fill_normw(void *buf, int64_t count, const dsf_case *c, uint64_t *rng);
void dsv4_fill_e4m3(void *buf, int64_t count, const dsf_case *c, uint64_t *rng);
void dsv4_fill_e8m0(void *buf, int64_t count, const dsf_case *c, uint64_t *rng);
void dsv4_fill_fp4(void *buf, int64_t count, const dsf_case *c, uint64_t *rng);
void dsv4_fill_wk(void *buf, int64_t count, const dsf_case *c, uint64_t *rng);
void dsv4_fill_ties(void *buf, int64_t count, const dsf_case *c, uint64_t *rng);

int64_t dsv4_cnt_n(const dsf_case *c);
int64_t dsv4_cnt_k(const dsf_case *c);
int64_t dsv4_cnt_nk(const dsf_case *c);
int64_t dsv4_cnt_one(const dsf_case *c);

// One implementation of a record: the record's kernel (tag##_go) under one fault.
#define DSV4_RUN(tag, sfx, fault) \
    static int tag##_##sfx(const dsf_call *c, dsf_err *e) { return tag##_go(c, fault, e); }

// Five implementations of a record: the real kernel on CPU and one control per gate, all over `geoms`.
#define DSV4_IMPLS(tag, geoms, what, w1, w2, w3, w4)                                                   \
    DSV4_RUN(tag, real, DSV4_REAL)                                                                     \
    DSV4_RUN(tag, c1, DSV4_G1)                                                                         \
    DSV4_RUN(tag, c2, DSV4_G2)                                                                         \
    DSV4_RUN(tag, c3, DSV4_G3)                                                                         \
    DSV4_RUN(tag, c4, DSV4_G4)                                                                         \
    static const dsf_impl tag##_impls[] = {                                                            \
        {"cpu", DSF_BACKEND_CPU, tag##_real, geoms, 4, DSF_GATE_NONE, what, NULL, NULL, NULL},         \
        {"cpu_ctl_coverage", DSF_BACKEND_CPU, tag##_c1, geoms, 4, DSF_GATE_1, w1, NULL, NULL, NULL},   \
        {"cpu_ctl_geom_order", DSF_BACKEND_CPU, tag##_c2, geoms, 4, DSF_GATE_2, w2, NULL, NULL, NULL}, \
        {"cpu_ctl_math", DSF_BACKEND_CPU, tag##_c3, geoms, 4, DSF_GATE_3, w3, NULL, NULL, NULL},       \
        {"cpu_ctl_row_split", DSF_BACKEND_CPU, tag##_c4, geoms, 4, DSF_GATE_4, w4, NULL, NULL, NULL},  \
    }

#endif
