#ifndef DSF_SAMPLE_H
#define DSF_SAMPLE_H
// Keyed sampling (DESIGN.md R4, spec §6.2 item 10): a sample is a pure function of (seed, position, logits row).
#include <stdint.h>

// The default seed of a request: a hash of its prompt's token ids.
uint64_t dsf_sample_seed(const int32_t *ids, int64_t n);

// The counter-based uniform in (0, 1] of (seed, position, vocabulary index): splitmix64 finalisers, no state.
double dsf_sample_uniform(uint64_t seed, int64_t pos, int64_t index);

// T <= 0: argmax (ties: lowest id); else argmax of softmax(logits / max(T, 1e-5))_i / -log(uniform(seed, pos, i)).
int32_t dsf_sample(const float *logits, int64_t vocab, float temperature, uint64_t seed, int64_t pos);

// token_sha: the first 12 hex digits of SHA-256 over the ids in decimal joined by commas; hex has 13 bytes.
void dsf_token_sha(const int32_t *ids, int64_t n, char hex[13]);

#endif
