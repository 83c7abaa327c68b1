#ifndef DSF_ENGRAM_PRIMES_H
#define DSF_ENGRAM_PRIMES_H
// Engram bucket primes (spec §3.2.6): the one implementation of the prime rule; docs/checkpoint.md states it.
#include <stdint.h>

// Whether x is prime (trial division; x below 2^62).
int dsf_is_prime(int64_t x);
// Fills primes[layer][order - 2][head] (n_layers * (max_ngram - 1) * n_heads entries) and rows[layer].
void dsf_engram_primes(int64_t vocab_size, int n_layers, int max_ngram, int n_heads, int64_t *primes, int64_t *rows);

#endif
