#ifndef DSF_DSV4_INDEX_H
#define DSF_DSV4_INDEX_H
// The V4.1 two-level indexer (spec §3.2.5, §6.2 items 4 and 5): scores, ascending top-k, candidate blocks.
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// score[t] = bf16(sum_h bf16(relu(bf16(q_h . k_t)) * w[h])), fp32 sum in h order; q [heads, dim], keys [n, dim].
void dsf_index_scores(const float *q, const float *w, int heads, int dim, const float *keys, int64_t n, float *score);

// The min(k, n) best of n scores (ties: lower index; -inf ones when needed) into idx, ascending; returns the count.
int64_t dsf_topk_ascending(const float *score, int64_t n, int64_t k, int64_t *idx);

// Candidate blocks of a query seeing len > 0 entries: mask[ceil(len / bs)], 1 for kept blocks; returns the count.
int64_t dsf_candidate_blocks(const float *score, int64_t len, int bs, int64_t topk_blocks, uint8_t *mask);

#ifdef __cplusplus
}
#endif

#endif
