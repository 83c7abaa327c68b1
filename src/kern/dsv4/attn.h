#ifndef DSF_DSV4_ATTN_H
#define DSF_DSV4_ATTN_H
// Sparse attention with a sink, exactly per spec §6.2 item 3: MQA over listed KV rows, blocks of 64 list entries.
#include <stdint.h>

#include "base/pool.h"
#include "contract/contract.h"

#ifdef __cplusplus
extern "C" {
#endif

#define DSF_ATTN_BLOCK 64

// q [R, H, hd]; kv [R, L] row pointers (NULL = index -1); sink [H]; o [R, H, hd]; g: threads, p[0] rows per chunk.
void dsf_sparse_attn(dsf_pool *pool, const dsf_geom *g, const float *q, const float *const *kv, int64_t rows, int heads,
                     int hd, int64_t list_len, const float *sink, float scale, float *o);

#ifdef __cplusplus
}
#endif

#endif
