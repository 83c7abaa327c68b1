#include "io/roles.h"

#include <stdio.h>
#include <string.h>

static int in_list(const int *v, int n, int x) {
    for (int i = 0; i < n; i++)
        if (v[i] == x) return i;
    return -1;
}

// A source list must be strictly increasing, inside the backbone, and name compressing layers.
static int check_list(const dsf_args *a, const char *key, const int *v, int n, int need_ratio, dsf_err *e) {
    char k[96];
    dsf_config_key(a, key, k, sizeof k);
    for (int i = 0; i < n; i++) {
        if (v[i] < 0 || v[i] >= a->n_layers)
            return dsf_fail(e, "%s: layer %d is not a backbone layer (0..%d)", k, v[i], a->n_layers - 1);
        if (i && v[i] <= v[i - 1]) return dsf_fail(e, "%s: entries must be strictly increasing", k);
        if (need_ratio && a->compress_ratios[v[i]] == 0)
            return dsf_fail(e, "%s: layer %d has compress ratio 0 and cannot be a source", k, v[i]);
    }
    return 0;
}

static int last_at_or_before(const int *v, int n, int layer) {
    int best = -1;
    for (int i = 0; i < n; i++)
        if (v[i] <= layer) best = v[i];
    return best;
}

static int build_v41(const dsf_args *a, dsf_roles *o, dsf_err *e) {
    char k[96], k2[96];
    if (check_list(a, "kv_source_layer_ids", a->kv_sources, a->n_kv_sources, 1, e)) return -1;
    if (check_list(a, "index_source_layer_ids", a->index_sources, a->n_index_sources, 1, e)) return -1;
    if (check_list(a, "engram_layer_ids", a->engram_layers, a->n_engram_layers, 0, e)) return -1;
    if (check_list(a, "dspark_target_layer_ids", a->dspark_targets, a->n_dspark_targets, 0, e)) return -1;
    for (int i = 0; i < a->n_kv_sources; i++)
        if (in_list(a->index_sources, a->n_index_sources, a->kv_sources[i]) < 0)
            return dsf_fail(e, "%s: kv source %d is not listed in %s (its indexer owns the index keys)",
                            dsf_config_key(a, "kv_source_layer_ids", k, sizeof k), a->kv_sources[i],
                            dsf_config_key(a, "index_source_layer_ids", k2, sizeof k2));
    int cs = a->candidate_source;
    if (cs >= 0 && in_list(a->index_sources, a->n_index_sources, cs) < 0)
        return dsf_fail(e, "%s: layer %d is not an index source",
                        dsf_config_key(a, "candidate_source_layer_id", k, sizeof k), cs);
    if (cs >= 0 && (a->candidate_topk_blocks <= 0 || a->candidate_block_size <= 0))
        return dsf_fail(e, "%s: candidate_topk_blocks and candidate_block_size must be positive",
                        dsf_config_key(a, "candidate_source_layer_id", k, sizeof k));
    for (int L = 0; L < a->n_layers; L++) {
        dsf_role *r = &o->r[L];
        int ratio = r->compress_ratio;
        r->engram = in_list(a->engram_layers, a->n_engram_layers, L);
        r->dspark_target = in_list(a->dspark_targets, a->n_dspark_targets, L) >= 0;
        if (!ratio) continue;
        int kv = last_at_or_before(a->kv_sources, a->n_kv_sources, L);
        int ix = last_at_or_before(a->index_sources, a->n_index_sources, L);
        dsf_config_key(a, "compress_ratios", k, sizeof k);
        if (kv < 0 || a->compress_ratios[kv] != ratio)
            return dsf_fail(e, "%s: layer %d has ratio %d but no earlier kv source (%s) of that ratio", k, L, ratio,
                            dsf_config_key(a, "kv_source_layer_ids", k2, sizeof k2));
        if (ix < 0 || a->compress_ratios[ix] != ratio)
            return dsf_fail(e, "%s: layer %d has ratio %d but no earlier index source (%s) of that ratio", k, L, ratio,
                            dsf_config_key(a, "index_source_layer_ids", k2, sizeof k2));
        r->kv_source = kv;
        r->index_source = ix;
        r->owns_compressor = kv == L;
        r->compressor_gated = r->owns_compressor && ratio > 1;
        r->owns_indexer = ix == L;
        r->indexer_owns_k = r->owns_indexer && r->owns_compressor;
        r->index_k_source = r->owns_indexer ? kv : -1;
        r->candidate_source = L == cs;
        r->uses_candidates = r->owns_indexer && cs >= 0 && cs < L;
        if (r->uses_candidates && a->compress_ratios[cs] != ratio)
            return dsf_fail(e, "%s: index source %d (ratio %d) would mask to candidates of layer %d (ratio %d)", k, L,
                            ratio, cs, a->compress_ratios[cs]);
    }
    return 0;
}

static int build_v4(const dsf_args *a, dsf_roles *o, dsf_err *e) {
    char k[96];
    if (a->n_hash_layers > a->n_layers)
        return dsf_fail(e, "num_hash_layers: %d exceeds num_hidden_layers %d", a->n_hash_layers, a->n_layers);
    for (int L = 0; L < a->n_layers; L++) {
        dsf_role *r = &o->r[L];
        int ratio = r->compress_ratio;
        if (ratio != 0 && ratio != 4 && ratio != 128)
            return dsf_fail(e, "%s: layer %d has ratio %d; V4 layers use 0, 4 (CSA) or 128 (HCA)",
                            dsf_config_key(a, "compress_ratios", k, sizeof k), L, ratio);
        r->hash_routed = L < a->n_hash_layers;
        if (!ratio) continue;
        r->kv_source = L;
        r->owns_compressor = 1;
        r->compressor_gated = 1;
        r->compressor_ape = 1;
        r->compressor_overlap = ratio == 4;
        if (ratio == 4) {
            r->index_source = L;
            r->owns_indexer = 1;
            r->indexer_compressor = 1;
        }
    }
    return 0;
}

int dsf_roles_build(const dsf_args *a, dsf_roles *o, dsf_err *e) {
    char k[96];
    int n = a->n_layers + a->n_mtp_layers;
    DSF_ASSERT(n <= DSF_MAX_LAYERS);
    memset(o, 0, sizeof *o);
    o->n = n;
    for (int L = 0; L < n; L++) {
        dsf_role *r = &o->r[L];
        r->layer = L;
        r->stage = L < a->n_layers ? -1 : L - a->n_layers;
        r->compress_ratio = a->compress_ratios[L];
        r->kv_source = r->index_source = r->index_k_source = -1;
        r->engram = -1;
        r->n_experts = a->n_routed_experts;
        r->n_activated = a->n_activated_experts;
        if (a->arch == DSF_ARCH_V4_1 && r->compress_ratio > 2)
            return dsf_fail(e, "%s: layer %d has ratio %d; V4.1 layers use 0, 1 or 2",
                            dsf_config_key(a, "compress_ratios", k, sizeof k), L, r->compress_ratio);
        if (r->stage >= 0) {
            if (r->compress_ratio)
                return dsf_fail(e, "%s: entry %d belongs to MTP/DSpark stage %d and must be 0",
                                dsf_config_key(a, "compress_ratios", k, sizeof k), L, r->stage);
            if (a->arch == DSF_ARCH_V4_1 && a->dspark_n_routed_experts) r->n_experts = a->dspark_n_routed_experts;
            if (a->arch == DSF_ARCH_V4_1 && a->dspark_n_activated_experts)
                r->n_activated = a->dspark_n_activated_experts;
        }
    }
    return a->arch == DSF_ARCH_V4_1 ? build_v41(a, o, e) : build_v4(a, o, e);
}

const char *dsf_role_describe(const dsf_args *a, const dsf_role *r, char *buf, size_t n) {
    char s[160] = "";
    size_t m = 0;
#define PUT(...) m += (size_t)snprintf(s + m, m < sizeof s ? sizeof s - m : 0, __VA_ARGS__)
    if (r->stage >= 0) {
        if (a->arch == DSF_ARCH_V4) {
            PUT("MTP block %d (SWA)", r->stage);
        } else {
            PUT("DSpark stage %d (SWA, %d experts top-%d)", r->stage, r->n_experts, r->n_activated);
            if (r->stage == 0) PUT(", main_proj");
            if (r->stage == a->n_mtp_layers - 1) PUT(", markov+confidence heads");
        }
    } else if (a->arch == DSF_ARCH_V4) {
        const char *kind = r->compress_ratio == 4 ? "CSA r4 + indexer" : r->compress_ratio ? "HCA r128" : "SWA";
        PUT("%s%s", kind, r->hash_routed ? ", hash-routed" : "");
    } else if (!r->compress_ratio) {
        PUT("SWA");
    } else if (r->owns_compressor) {
        PUT("r%d kv+index source", r->compress_ratio);
        if (r->candidate_source) PUT(" + candidate source");
    } else if (r->owns_indexer) {
        PUT("r%d index source%s (keys of %d)", r->compress_ratio, r->uses_candidates ? ", masked" : "",
            r->index_k_source);
    } else {
        PUT("r%d consumer (kv %d, top-k %d)", r->compress_ratio, r->kv_source, r->index_source);
    }
    if (r->engram >= 0) PUT(", Engram");
    if (r->dspark_target) PUT(", DSpark target");
#undef PUT
    snprintf(buf, n, "%s", s);
    return buf;
}
