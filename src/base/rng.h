#ifndef DSF_RNG_H
#define DSF_RNG_H
// splitmix64 (Steele, Lea, Flood, "Fast splittable pseudorandom number generators", 2014): the one mixer here.
#include <stdint.h>

#define DSF_GOLDEN64 0x9E3779B97F4A7C15ull

// The splitmix64 output for counter value z: a pure function, for counter-based streams.
static inline uint64_t dsf_splitmix64(uint64_t z) {
    z += DSF_GOLDEN64;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// The next value of a sequential splitmix64 generator held in *state.
static inline uint64_t dsf_splitmix_next(uint64_t *state) {
    uint64_t z = *state;
    *state += DSF_GOLDEN64;
    return dsf_splitmix64(z);
}

#endif
