#ifndef DSF_ENGRAM_KERN_H
#define DSF_ENGRAM_KERN_H
// Engram kernels (spec §3.2.6); T tokens, n = K = C*hd (6144), N = (hc+1)*D (25600), D model dim, hc streams.
#include <stdint.h>

#include "base/err.h"
#include "base/pool.h"
#include "contract/contract.h"

#ifdef __cplusplus
extern "C" {
#endif

// embed_quant: rows e4m3 [T, n] + e8m0 [T, n/32] -> act_quant_32(bf16(q*2^(s-127))): xq, xs; CPU p[0] tokens/chunk.
int dsf_engram_embed_quant_cpu(dsf_pool *pool, const dsf_geom *g, const uint8_t *codes, const uint8_t *scales,
                               uint8_t *xq, uint8_t *xs, int64_t T, int64_t n, dsf_err *e);
// wkv: y bf16 [T, N] = sum in K order of fp32(blocksum) * 2^(xs-127) * 2^(ws-127); w [N, K], ws [N/32, K/32].
int dsf_engram_wkv_cpu(dsf_pool *pool, const dsf_geom *g, const uint8_t *xq, const uint8_t *xs, const uint8_t *w,
                       const uint8_t *ws, uint16_t *y, int64_t T, int64_t N, int64_t K, dsf_err *e);
// gate: out = bf16(h + gate_k * value), h/out [T, hc, D] (out may be h), kv [T, (hc+1)*D], img [T] (docs/engram.md).
int dsf_engram_gate_cpu(dsf_pool *pool, const dsf_geom *g, const uint16_t *h, const uint16_t *kv, const uint16_t *qw,
                        const uint16_t *kw, const int32_t *img, uint16_t *out, int64_t T, int hc, int64_t D,
                        float eps, dsf_err *e);

// CUDA launchers (DSF_HAVE_CUDA): device pointers, stream = cudaStream_t; geometries as in docs/engram.md.
int dsf_engram_embed_quant_cuda(void *stream, const dsf_geom *g, const uint8_t *codes, const uint8_t *scales,
                                uint8_t *xq, uint8_t *xs, int64_t T, int64_t n, dsf_err *e);
int dsf_engram_wkv_cuda(void *stream, const dsf_geom *g, const uint8_t *xq, const uint8_t *xs, const uint8_t *w,
                        const uint8_t *ws, uint16_t *y, int64_t T, int64_t N, int64_t K, dsf_err *e);
int dsf_engram_gate_cuda(void *stream, const dsf_geom *g, const uint16_t *h, const uint16_t *kv, const uint16_t *qw,
                         const uint16_t *kw, const int32_t *img, uint16_t *out, int64_t T, int hc, int64_t D,
                         float eps, dsf_err *e);
// One Engram layer on the CPU from gathered rows [T, n]: embed_quant, wkv, gate into h [T, hc, D] in place.
int dsf_engram_layer_cpu(dsf_pool *pool, const uint8_t *codes, const uint8_t *scales, int64_t T, int64_t n,
                         const uint8_t *w, const uint8_t *ws, const uint16_t *qw, const uint16_t *kw, const int32_t *img,
                         uint16_t *h, int hc, int64_t D, float eps, dsf_err *e);

// The engine's geometries by role (every wkv geometry agrees, and every gate geometry): dsf_engram_cuda_geom's which.
enum { DSF_ENG_ROLE_EMBED_QUANT, DSF_ENG_ROLE_WKV_DECODE, DSF_ENG_ROLE_WKV_PREFILL, DSF_ENG_ROLE_GATE_WARP };
const dsf_geom *dsf_engram_cuda_geom(int which);
// Every CUDA embed_quant geometry, the list the contract checks; *n gets its length.
const dsf_geom *dsf_engram_embed_cuda_geoms(int *n);
// Every CUDA wkv geometry, the list the contract checks (its gate 2: all give the same bits); *n gets its length.
const dsf_geom *dsf_engram_wkv_cuda_geoms(int *n);
// The engine's gate geometry for T tokens: a block per (token, stream) up to this many tokens, else a warp.
#define DSF_ENG_GATE_STAGED_MAX 256
const dsf_geom *dsf_engram_cuda_gate_geom(int64_t T);
// Every CUDA gate geometry, the list the contract checks; *n gets its length.
const dsf_geom *dsf_engram_gate_cuda_geoms(int *n);
// The engine's wkv geometry for T tokens: weights as A up to 8, a weight split up to 64, else two or three warpgroups.
const dsf_geom *dsf_engram_cuda_wkv_geom(int64_t T);

#ifdef __cplusplus
}
#endif

#endif
