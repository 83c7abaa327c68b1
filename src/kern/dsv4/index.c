// Indexer rows on the CPU: scores, then selections with a fixed tie-break (the lower index first).
#include "kern/dsv4/index.h"

#include <math.h>
#include <stdlib.h>

#include "base/err.h"
#include "base/formats.h"

void dsf_index_scores(const float *q, const float *w, int heads, int dim, const float *keys, int64_t n, float *score) {
    for (int64_t t = 0; t < n; t++) {
        const float *k = keys + t * dim;
        float acc = 0.0f;
        for (int h = 0; h < heads; h++) {
            const float *qh = q + (int64_t)h * dim;
            float dot = 0.0f;
            for (int d = 0; d < dim; d++) dot += qh[d] * k[d];
            float v = dsf_bf16_round(dot);
            v = v > 0.0f ? v : 0.0f;
            acc += dsf_bf16_round(v * w[h]);
        }
        score[t] = dsf_bf16_round(acc);
    }
}

// Whether entry a ranks before entry b: a higher score, or an equal score and a lower index.
static int ranks_before(const float *s, int64_t a, int64_t b) {
    return s[a] > s[b] || (s[a] == s[b] && a < b);
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

// Keeps the k best in a heap-free way: a sorted insertion list, fine for the k (<= 2048) the model uses.
static int64_t select_best(const float *s, int64_t n, int64_t k, int64_t *idx) {
    if (k > n) k = n;
    if (k <= 0) return 0;
    int64_t cnt = 0;
    for (int64_t t = 0; t < n; t++) {
        if (cnt == k && !ranks_before(s, t, idx[k - 1])) continue;
        int64_t p = cnt < k ? cnt++ : k - 1;
        while (p > 0 && ranks_before(s, t, idx[p - 1])) {
            idx[p] = idx[p - 1];
            p--;
        }
        idx[p] = t;
    }
    return cnt;
}

int64_t dsf_topk_ascending(const float *score, int64_t n, int64_t k, int64_t *idx) {
    int64_t cnt = select_best(score, n, k, idx);
    qsort(idx, (size_t)cnt, sizeof(int64_t), cmp_i64);
    return cnt;
}

int64_t dsf_candidate_blocks(const float *score, int64_t len, int bs, int64_t topk_blocks, uint8_t *mask) {
    DSF_ASSERT(len > 0 && bs > 0);
    int64_t nb = (len + bs - 1) / bs;
    float *bm = dsf_malloc(sizeof(float) * (size_t)nb);
    int64_t *pick = dsf_malloc(sizeof(int64_t) * (size_t)(topk_blocks < nb ? topk_blocks : nb));
    for (int64_t b = 0; b < nb; b++) {
        float m = -INFINITY;
        for (int64_t t = b * bs; t < (b + 1) * bs && t < len; t++) m = score[t] > m ? score[t] : m;
        bm[b] = m;
        mask[b] = 0;
    }
    bm[(len - 1) / bs] = INFINITY;
    int64_t cnt = select_best(bm, nb, topk_blocks, pick), kept = 0;
    for (int64_t i = 0; i < cnt; i++)
        if (bm[pick[i]] > -INFINITY) {
            mask[pick[i]] = 1;
            kept++;
        }
    free(bm);
    free(pick);
    return kept;
}
