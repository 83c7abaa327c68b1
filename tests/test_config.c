// config.json parsing for V4 and V4.1, the layer-roles table against spec §2.2, and refusals that name the key.
#include <jansson.h>

#include "io/config.h"
#include "io/roles.h"
#include "test.h"

#define V41 "tests/vectors/v41_config.json"
#define V4 "tests/vectors/v4_config.json"

static void test_v41_values(void) {
    dsf_args a;
    dsf_err e;
    TEST_ASSERT_MSG(!dsf_config_load(V41, &a, &e), "%s", e.msg);
    TEST_ASSERT(a.arch == DSF_ARCH_V4_1);
    TEST_ASSERT(a.dim == 5120 && a.n_layers == 40 && a.n_mtp_layers == 3 && a.vocab_size == 129280);
    TEST_ASSERT(a.n_heads == 64 && a.head_dim == 512 && a.rope_head_dim == 64 && a.q_lora_rank == 1280);
    TEST_ASSERT(a.o_groups == 8 && a.o_lora_rank == 1024 && a.window_size == 128);
    TEST_ASSERT(a.n_routed_experts == 384 && a.n_activated_experts == 6 && a.moe_inter_dim == 2304);
    TEST_ASSERT(a.index_n_heads == 32 && a.index_head_dim == 128 && a.index_topk == 512);
    TEST_ASSERT(a.candidate_source == 20 && a.candidate_topk_blocks == 2048 && a.candidate_block_size == 8);
    TEST_ASSERT(a.n_kv_sources == 4 && a.kv_sources[3] == 20 && a.n_index_sources == 8 && a.index_sources[7] == 36);
    TEST_ASSERT(a.norm_eps == 1e-20 && a.hc_eps == 1e-6 && a.hc_mult == 4 && a.hc_sinkhorn_iters == 20);
    TEST_ASSERT(a.rope_theta == 10000 && a.compress_rope_theta == 160000 && a.rope_factor == 16);
    TEST_ASSERT(a.original_seq_len == 65536 && a.beta_fast == 32 && a.beta_slow == 1);
    TEST_ASSERT(a.n_engram_layers == 2 && a.engram_layers[1] == 14 && a.engram_num_embeddings[0] == 384006168);
    TEST_ASSERT(a.engram_max_ngram_size == 4 && a.engram_n_heads == 8 && a.engram_head_dim == 256);
    TEST_ASSERT(a.engram_vocab_size == 16000000 && a.engram_pad_id == 2 && a.engram_compressed_vocab_size == 99092);
    TEST_ASSERT(a.dspark_block_size == 5 && a.dspark_noise_token_id == 128799 && a.n_dspark_targets == 3);
    TEST_ASSERT(a.dspark_markov_rank == 256 && a.dspark_n_routed_experts == 128 && a.dspark_n_activated_experts == 3);
    TEST_ASSERT(a.vision_n_layers == 32 && a.vision_dim == 1024 && a.image_token_id == 129264);
    TEST_ASSERT(a.fp8_block == 32 && a.fp4_block == 32 && a.n_hash_layers == 0);
    TEST_ASSERT(a.route_scale == 1.5 && a.swiglu_limit == 10.0 && a.norm_topk_prob == 1);
}

// Spec §2.2 roles table with §6 finding 22, entry by entry for all 43 layers.
static void test_v41_roles(void) {
    dsf_args a;
    dsf_roles r;
    dsf_err e;
    TEST_ASSERT_MSG(!dsf_config_load(V41, &a, &e), "%s", e.msg);
    TEST_ASSERT_MSG(!dsf_roles_build(&a, &r, &e), "%s", e.msg);
    TEST_ASSERT(r.n == 43);
    for (int L = 0; L < 43; L++) {
        const dsf_role *x = &r.r[L];
        int ratio = L < 2 || L >= 40 ? 0 : L < 20 ? 2 : 1;
        int kv_src = L == 2 || L == 8 || L == 14 || L == 20;
        int idx_src = kv_src || L == 24 || L == 28 || L == 32 || L == 36;
        int kv_of = !ratio ? -1 : L < 8 ? 2 : L < 14 ? 8 : L < 20 ? 14 : 20;
        int topk_of = !ratio ? -1 : L < 24 ? kv_of : L < 28 ? 24 : L < 32 ? 28 : L < 36 ? 32 : 36;
        TEST_ASSERT_MSG(x->compress_ratio == ratio, "layer %d", L);
        TEST_ASSERT_MSG(x->stage == (L >= 40 ? L - 40 : -1), "layer %d", L);
        TEST_ASSERT_MSG(x->owns_compressor == kv_src, "layer %d", L);
        TEST_ASSERT_MSG(x->compressor_gated == (kv_src && L != 20), "layer %d", L);
        TEST_ASSERT_MSG(x->owns_indexer == idx_src, "layer %d", L);
        TEST_ASSERT_MSG(x->indexer_owns_k == kv_src, "layer %d", L);
        TEST_ASSERT_MSG(x->candidate_source == (L == 20), "layer %d", L);
        TEST_ASSERT_MSG(x->uses_candidates == (idx_src && L > 20), "layer %d", L);
        TEST_ASSERT_MSG(x->engram == (L == 1 ? 0 : L == 14 ? 1 : -1), "layer %d", L);
        TEST_ASSERT_MSG(x->kv_source == kv_of, "layer %d: kv_source %d, expected %d", L, x->kv_source, kv_of);
        TEST_ASSERT_MSG(x->index_source == topk_of, "layer %d: index_source %d, expected %d", L, x->index_source,
                        topk_of);
        TEST_ASSERT_MSG(x->index_k_source == (idx_src ? kv_of : -1), "layer %d", L);
        TEST_ASSERT_MSG(x->dspark_target == (L >= 37 && L <= 39), "layer %d", L);
        TEST_ASSERT_MSG(x->n_experts == (L >= 40 ? 128 : 384) && x->n_activated == (L >= 40 ? 3 : 6), "layer %d", L);
        TEST_ASSERT_MSG(!x->hash_routed && !x->compressor_ape && !x->compressor_overlap && !x->indexer_compressor,
                        "layer %d", L);
    }
}

static void test_v4_roles(void) {
    dsf_args a;
    dsf_roles r;
    dsf_err e;
    TEST_ASSERT_MSG(!dsf_config_load(V4, &a, &e), "%s", e.msg);
    TEST_ASSERT(a.arch == DSF_ARCH_V4 && a.dim == 4096 && a.n_layers == 43 && a.n_mtp_layers == 1);
    TEST_ASSERT(a.fp8_block == 128 && a.n_hash_layers == 3 && a.norm_eps == 1e-6 && a.index_n_heads == 64);
    TEST_ASSERT(a.n_routed_experts == 256 && a.moe_inter_dim == 2048 && a.q_lora_rank == 1024);
    TEST_ASSERT_MSG(!dsf_roles_build(&a, &r, &e), "%s", e.msg);
    TEST_ASSERT(r.n == 44);
    for (int L = 0; L < 44; L++) {
        const dsf_role *x = &r.r[L];
        int ratio = L < 2 || L == 43 ? 0 : L % 2 ? 128 : 4;
        TEST_ASSERT_MSG(x->compress_ratio == ratio, "layer %d", L);
        TEST_ASSERT_MSG(x->hash_routed == (L < 3), "layer %d", L);
        TEST_ASSERT_MSG(x->owns_compressor == (ratio > 0) && x->compressor_ape == (ratio > 0), "layer %d", L);
        TEST_ASSERT_MSG(x->compressor_overlap == (ratio == 4), "layer %d", L);
        TEST_ASSERT_MSG(x->owns_indexer == (ratio == 4) && x->indexer_compressor == (ratio == 4), "layer %d", L);
        TEST_ASSERT_MSG(x->stage == (L == 43 ? 0 : -1) && x->engram == -1, "layer %d", L);
    }
}

static void test_round_trip(void) {
    const char *files[] = {V41, V4};
    for (int i = 0; i < 2; i++) {
        dsf_args a, b;
        dsf_err e;
        TEST_ASSERT_MSG(!dsf_config_load(files[i], &a, &e), "%s", e.msg);
        char *json = dsf_config_to_json(&a, "round trip");
        TEST_ASSERT_MSG(!dsf_config_parse(json, strlen(json), "written", &b, &e), "%s", e.msg);
        TEST_ASSERT_MSG(!memcmp(&a, &b, sizeof a), "%s does not survive a write and a read", files[i]);
        free(json);
    }
}

// Loads a vector, applies one edit at a JSON path ("text_config.head_dim"), and expects a refusal naming `want`.
static void refuse(const char *file, const char *path, json_t *value, const char *want) {
    json_error_t je;
    json_t *root = json_load_file(file, 0, &je);
    TEST_ASSERT(root);
    if (!root) return;
    json_t *obj = root;
    char buf[128];
    snprintf(buf, sizeof buf, "%s", path);
    char *key = buf, *dot;
    while ((dot = strchr(key, '.'))) {
        *dot = 0;
        obj = json_object_get(obj, key);
        key = dot + 1;
    }
    if (value)
        json_object_set_new(obj, key, value);
    else
        json_object_del(obj, key);
    char *text = json_dumps(root, 0);
    dsf_args a;
    dsf_err e = {""};
    int rc = dsf_config_parse(text, strlen(text), "config.json", &a, &e);
    TEST_ASSERT_MSG(rc == -1, "edit of %s was accepted", path);
    TEST_ASSERT_MSG(strstr(e.msg, want), "edit of %s: message \"%s\" does not name %s", path, e.msg, want);
    free(text);
    json_decref(root);
}

static void test_refusals(void) {
    refuse(V41, "text_config.compress_ratios", json_pack("[i,i]", 0, 0), "text_config.compress_ratios");
    refuse(V41, "text_config.head_dim", json_integer(64), "text_config.head_dim");
    refuse(V41, "text_config.hidden_size", json_integer(5000), "text_config.hidden_size");
    refuse(V41, "text_config.q_lora_rank", NULL, "text_config.q_lora_rank: missing");
    refuse(V41, "text_config.kv_source_layer_ids", json_pack("[i,i,i,i]", 0, 8, 14, 20),
           "text_config.kv_source_layer_ids");
    refuse(V41, "text_config.index_source_layer_ids", json_pack("[i,i,i,i]", 2, 8, 14, 24),
           "text_config.kv_source_layer_ids");
    refuse(V41, "text_config.engram_num_embeddings", json_pack("[i,i]", 384006168, 384016683),
           "text_config.engram_num_embeddings");
    refuse(V41, "text_config.dspark_target_layer_ids", json_pack("[i,i,i]", 37, 39, 38),
           "text_config.dspark_target_layer_ids");
    refuse(V41, "text_config.candidate_source_layer_id", json_integer(21), "text_config.candidate_source_layer_id");
    refuse(V41, "text_config.num_experts_per_tok", json_integer(400), "text_config.num_experts_per_tok");
    refuse(V41, "text_config", NULL, "text_config: missing");
    refuse(V41, "model_type", json_string("llama"), "model_type");
    refuse(V41, "architectures", json_pack("[s]", "DeepseekV4ForCausalLM"), "architectures");
    refuse(V4, "quantization_config.weight_block_size", json_pack("[i,i]", 128, 64),
           "quantization_config.weight_block_size");
    refuse(V4, "compress_ratios", json_pack("[i,i,i]", 0, 3, 0), "compress_ratios");
    refuse(V4, "num_hash_layers", json_integer(50), "num_hash_layers");
    refuse(V4, "moe_intermediate_size", json_integer(2000), "moe_intermediate_size");
    refuse(V4, "expert_dtype", json_string("fp8"), "expert_dtype");
    dsf_args a;
    dsf_err e;
    TEST_ASSERT(dsf_config_parse("{\"model_type\": ", 15, "x.json", &a, &e) == -1 && strstr(e.msg, "invalid JSON"));
    TEST_ASSERT(dsf_config_load("/nonexistent/dir", &a, &e) == -1 && strstr(e.msg, "/nonexistent/dir"));
}

int main(void) {
    TEST_RUN(test_v41_values);
    TEST_RUN(test_v41_roles);
    TEST_RUN(test_v4_roles);
    TEST_RUN(test_round_trip);
    TEST_RUN(test_refusals);
    TEST_END();
}
