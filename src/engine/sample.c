// Keyed sampling: the noise of index i at position pos is hashed from (seed, pos, i), never drawn from a stream.
#include "engine/sample.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/rng.h"
#include "base/sha256.h"

uint64_t dsf_sample_seed(const int32_t *ids, int64_t n) {
    uint64_t h = dsf_splitmix64((uint64_t)n);
    for (int64_t i = 0; i < n; i++) h = dsf_splitmix64(h ^ (uint64_t)(uint32_t)ids[i]);
    return h;
}

double dsf_sample_uniform(uint64_t seed, int64_t pos, int64_t index) {
    uint64_t x = dsf_splitmix64(dsf_splitmix64(seed ^ dsf_splitmix64((uint64_t)pos)) ^ (uint64_t)index);
    return (double)((x >> 11) + 1) * 0x1p-53;
}

int32_t dsf_sample(const float *logits, int64_t vocab, float temperature, uint64_t seed, int64_t pos) {
    int64_t best = 0;
    if (temperature <= 0.0f) {
        for (int64_t i = 1; i < vocab; i++)
            if (logits[i] > logits[best]) best = i;
        return (int32_t)best;
    }
    float t = temperature > 1e-5f ? temperature : 1e-5f, m = -INFINITY, sum = 0.0f;
    float *p = dsf_malloc(sizeof(float) * (size_t)vocab);
    for (int64_t i = 0; i < vocab; i++) {
        p[i] = logits[i] / t;
        m = p[i] > m ? p[i] : m;
    }
    for (int64_t i = 0; i < vocab; i++) {
        p[i] = expf(p[i] - m);
        sum += p[i];
    }
    float bestv = -1.0f;
    for (int64_t i = 0; i < vocab; i++) {
        float v = (p[i] / sum) / (float)(-log(dsf_sample_uniform(seed, pos, i)));
        if (v > bestv) {
            bestv = v;
            best = i;
        }
    }
    free(p);
    return (int32_t)best;
}

void dsf_token_sha(const int32_t *ids, int64_t n, char hex[13]) {
    size_t cap = (size_t)n * 12 + 1, len = 0;
    char *s = dsf_malloc(cap);
    s[0] = 0;
    for (int64_t i = 0; i < n; i++) len += (size_t)snprintf(s + len, cap - len, i ? ",%d" : "%d", (int)ids[i]);
    uint8_t d[32];
    char full[65];
    dsf_sha256(s, len, d);
    dsf_sha256_hex(d, full);
    memcpy(hex, full, 12);
    hex[12] = 0;
    free(s);
}
