// Engram n-gram hashing (spec §3.2.6, pitfall 11): multipliers, primes and offsets at load, per-stream history.
#include <stdlib.h>
#include <string.h>

#include "io/engram_primes.h"
#include "kern/engram/engram.h"

int dsf_engram_multipliers(int layer_id, int64_t n_compressed, int64_t mult[DSF_ENGRAM_MAX_NGRAM]) {
    if (n_compressed != dsf_engram_mult_n_compressed || layer_id < 0 || layer_id >= dsf_engram_mult_layers) return -1;
    memcpy(mult, dsf_engram_mult_table[layer_id], sizeof dsf_engram_mult_table[layer_id]);
    return 0;
}

int dsf_engram_hash_init(const dsf_args *a, const dsf_engram_map *map, dsf_engram_hash *h, dsf_err *e) {
    memset(h, 0, sizeof *h);
    if (a->n_engram_layers < 1 || a->n_engram_layers > DSF_ENGRAM_MAX_LAYERS)
        return dsf_fail(e, "engram: %d Engram layers, need 1..%d", a->n_engram_layers, DSF_ENGRAM_MAX_LAYERS);
    if (a->engram_max_ngram_size != DSF_ENGRAM_MAX_NGRAM)
        return dsf_fail(e, "engram: engram_max_ngram_size %d, the known multipliers have %d shifts",
                        a->engram_max_ngram_size, DSF_ENGRAM_MAX_NGRAM);
    int cols = (a->engram_max_ngram_size - 1) * a->engram_n_heads;
    if (cols > DSF_ENGRAM_MAX_COLS) return dsf_fail(e, "engram: %d hash columns, at most %d", cols, DSF_ENGRAM_MAX_COLS);
    if (map->n_compressed != a->engram_compressed_vocab_size)
        return dsf_fail(e, "engram: the token map has %lld compressed ids, engram_compressed_vocab_size is %lld",
                        (long long)map->n_compressed, (long long)a->engram_compressed_vocab_size);
    if (a->engram_pad_id < 0 || a->engram_pad_id >= map->n)
        return dsf_fail(e, "engram: engram_pad_token_id %d is outside the token map (%lld entries)", a->engram_pad_id,
                        (long long)map->n);
    h->n_layers = a->n_engram_layers;
    h->max_ngram = a->engram_max_ngram_size;
    h->n_heads = a->engram_n_heads;
    h->cols = cols;
    h->pad = map->ids[a->engram_pad_id];
    int64_t primes[DSF_ENGRAM_MAX_LAYERS * DSF_ENGRAM_MAX_COLS];
    dsf_engram_primes(a->engram_vocab_size, h->n_layers, h->max_ngram, h->n_heads, primes, h->rows);
    for (int l = 0; l < h->n_layers; l++) {
        h->layer_ids[l] = a->engram_layers[l];
        if (h->rows[l] != a->engram_num_embeddings[l])
            return dsf_fail(e, "engram: layer %d: the prime rule gives %lld table rows, the config says %lld",
                            a->engram_layers[l], (long long)h->rows[l], (long long)a->engram_num_embeddings[l]);
        if (dsf_engram_multipliers(a->engram_layers[l], map->n_compressed, h->mult[l]))
            return dsf_fail(e, "engram: no hash multipliers for layer %d with %lld compressed ids (tools/gen_engram_multipliers)",
                            a->engram_layers[l], (long long)map->n_compressed);
        int64_t off = 0;
        for (int c = 0; c < cols; c++) {
            h->primes[l][c] = primes[l * cols + c];
            h->offsets[l][c] = off;
            off += h->primes[l][c];
        }
    }
    return 0;
}

void dsf_engram_hash_token(const dsf_engram_hash *h, int layer, const int64_t *hist, int64_t *row_ids) {
    uint64_t acc = 0;
    int blocked = 0;
    for (int k = 0; k < h->max_ngram; k++) {
        // Blocking is cumulative: once a shift is DEAD or before the start, every longer shift is pad too.
        blocked |= hist[k] < 0;
        uint64_t tok = (uint64_t)(blocked ? h->pad : hist[k]);
        acc ^= tok * (uint64_t)h->mult[layer][k];
        if (k == 0) continue;
        for (int hd = 0; hd < h->n_heads; hd++) {
            int c = (k - 1) * h->n_heads + hd;
            row_ids[c] = (int64_t)(acc % (uint64_t)h->primes[layer][c]) + h->offsets[layer][c];
        }
    }
}

void dsf_engram_hist_init(dsf_engram_hist *s, int64_t cap_min) {
    s->cap = 8;
    while (s->cap < cap_min) s->cap *= 2;
    s->hi = -1;
    s->ids = dsf_calloc((size_t)s->cap, sizeof *s->ids);
}

void dsf_engram_hist_free(dsf_engram_hist *s) {
    free(s->ids);
    s->ids = NULL;
}

int dsf_engram_hist_step(const dsf_engram_hash *h, const dsf_engram_map *map, dsf_engram_hist *s, int64_t pos0,
                         int64_t T, const int32_t *tokens, const uint8_t *is_image, int64_t *rows, dsf_err *e) {
    int back = h->max_ngram - 1;
    if (pos0 < 0 || pos0 > s->hi + 1)
        return dsf_fail(e, "engram history: chunk at position %lld, but only positions up to %lld are written",
                        (long long)pos0, (long long)s->hi);
    if (pos0 > 0 && pos0 - back <= s->hi - s->cap)
        return dsf_fail(e, "engram history: rollback to %lld is deeper than the ring of %lld holds (written to %lld)",
                        (long long)pos0, (long long)s->cap, (long long)s->hi);
    for (int64_t i = 0; i < T; i++)
        if (tokens[i] < 0 || tokens[i] >= map->n)
            return dsf_fail(e, "engram: token id %d at position %lld is outside the token map (%lld entries)",
                            tokens[i], (long long)(pos0 + i), (long long)map->n);
    int64_t mask = s->cap - 1;
    for (int64_t i = 0; i < T; i++) {
        int64_t t = pos0 + i;
        s->ids[t & mask] = is_image && is_image[i] ? DSF_ENGRAM_DEAD : map->ids[tokens[i]];
        s->hi = t;
        int64_t hist[DSF_ENGRAM_MAX_NGRAM];
        for (int k = 0; k < h->max_ngram; k++) hist[k] = t >= k ? s->ids[(t - k) & mask] : DSF_ENGRAM_DEAD;
        for (int l = 0; l < h->n_layers; l++)
            dsf_engram_hash_token(h, l, hist, rows + (i * h->n_layers + l) * h->cols);
    }
    return 0;
}
