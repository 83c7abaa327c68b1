#include "io/engram_primes.h"

#include "base/err.h"

int dsf_is_prime(int64_t x) {
    if (x < 2) return 0;
    if (x % 2 == 0) return x == 2;
    if (x % 3 == 0) return x == 3;
    for (int64_t f = 5; f <= x / f; f += 6)
        if (x % f == 0 || x % (f + 2) == 0) return 0;
    return 1;
}

void dsf_engram_primes(int64_t vocab_size, int n_layers, int max_ngram, int n_heads, int64_t *primes, int64_t *rows) {
    DSF_ASSERT(vocab_size >= 1 && max_ngram >= 2 && n_heads >= 1);
    int per_layer = (max_ngram - 1) * n_heads;
    // Draws take consecutive primes from vocab_size up, so "not used yet" is exactly "above the largest drawn".
    int64_t top = 0;
    for (int l = 0; l < n_layers; l++) {
        rows[l] = 0;
        for (int o = 0; o < max_ngram - 1; o++) {
            int64_t cur = vocab_size - 1;
            for (int h = 0; h < n_heads; h++) {
                int64_t c = (cur > top ? cur : top) + 1;
                while (!dsf_is_prime(c)) c++;
                top = c;
                cur = c;
                primes[(int64_t)l * per_layer + o * n_heads + h] = c;
                rows[l] += c;
            }
        }
    }
}
