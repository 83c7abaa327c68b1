#ifndef DSF_COMPRESS_INTERNAL_H
#define DSF_COMPRESS_INTERNAL_H
// Shared by the compressor's CPU, CUDA, reference and record files: fault variants and the float64 reference.
#include "kern/compress/compress.h"
#include "kern/compress/compress_math.h"

#ifdef __cplusplus
extern "C" {
#endif

// Entries one segment of len rows from position p0 can emit: slots of j - floor(p0/r) for j up to (p0+len-1)/r.
int64_t dsf_cmp_entry_slots(int ratio, int64_t len);

// The CUDA kernels' vector loads need D a multiple of 8 * DSF_CMP_SLICES; the CPU needs DSF_CMP_SLICES.
int dsf_cmp_batch_check(const dsf_cmp_layer *L, const dsf_cmp_batch *b, dsf_err *e);
int dsf_cmp_batch_check_dims(const dsf_cmp_layer *L, const dsf_cmp_batch *b, int dim_multiple, dsf_err *e);
int dsf_cmp_run_cpu_v(dsf_pool *pool, const dsf_geom *g, const dsf_cmp_layer *L, const dsf_cmp_batch *b, int fault,
                      dsf_err *e);
int dsf_cmp_run_cuda_v(void *stream, const dsf_geom *g, const dsf_cmp_layer *L, const dsf_cmp_batch *b, void *scratch,
                       size_t scratch_bytes, int fault, dsf_err *e);
// The contract's view of a call: n_seg streams of len rows each, rings copied in to out, entries at j - floor(p0/r).
int dsf_cmp_contract_cuda(void *stream, const dsf_geom *g, const dsf_cmp_layer *L, int n_seg, int64_t len,
                          const uint16_t *x, const int64_t *pos, const float *ring_in, float *ring_out, uint16_t *kv,
                          uint16_t *ik, int fault, dsf_err *e);
int dsf_cmp_cuda_attrs(const dsf_geom *g, int fault, dsf_func_attrs *out, dsf_err *e);
int dsf_cmp_cuda_launches(const dsf_geom *g, int measure, dsf_launch *out, int max, dsf_err *e);

// float64 reference of one segment x [len, D]: ring [cap, 2C] updated in place, entries kv/ik at slot j - floor(p0/r).
void dsf_cmp_ref_segment(const dsf_cmp_layer *L, const uint16_t *x, int64_t len, int64_t p0, double *ring,
                         double *kv, double *ik);

#ifdef __cplusplus
}
#endif

#endif
