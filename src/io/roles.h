#ifndef DSF_ROLES_H
#define DSF_ROLES_H
// The layer-roles table (spec §2.2, §6 finding 22): what each layer owns and whose caches it reads.
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "io/config.h"

typedef struct dsf_role {
    int layer;          // 0..n_layers + n_mtp_layers - 1; stages follow the backbone
    int stage;          // MTP (V4) / DSpark (V4.1) stage, -1 for a backbone layer
    int compress_ratio; // 0: sliding window only
    int kv_source;      // layer whose compressed KV cache this layer attends to (itself when it owns it), -1 none
    int index_source;   // layer whose top-k this layer uses (itself when it owns an indexer), -1 none
    int index_k_source; // layer whose index keys this layer's indexer scores (V4.1 owner: itself), -1 none
    uint8_t owns_compressor;
    uint8_t compressor_gated;   // has wgate: ratio > 1
    uint8_t compressor_overlap; // V4 ratio 4: overlapping windows, wkv/wgate/ape twice as wide
    uint8_t compressor_ape;     // V4: learned position bias
    uint8_t owns_indexer;
    uint8_t indexer_owns_k;     // V4.1: indexer.wk + indexer.k_norm
    uint8_t indexer_compressor; // V4: indexer.compressor.*, Hadamard rotation of q/k
    uint8_t candidate_source;   // V4.1: publishes candidate blocks
    uint8_t uses_candidates;    // V4.1: index scores masked to the candidate source's blocks
    uint8_t hash_routed;        // V4: ffn.gate.tid2eid instead of ffn.gate.bias
    uint8_t dspark_target;      // V4.1: this layer's input stream feeds DSpark main_proj
    int engram;                 // index into engram_layers, -1 none
    int n_experts, n_activated; // routed experts of this layer's MoE
} dsf_role;

typedef struct dsf_roles {
    int n; // n_layers + n_mtp_layers
    dsf_role r[DSF_MAX_LAYERS];
} dsf_roles;

// Derives every role and refuses configurations whose sources do not line up, naming the key.
int dsf_roles_build(const dsf_args *a, dsf_roles *out, dsf_err *e);
// A short description of a role, e.g. "r2 kv+index source (wk), Engram" or "CSA r4 + indexer, hash-routed".
const char *dsf_role_describe(const dsf_args *a, const dsf_role *r, char *buf, size_t n);

#endif
