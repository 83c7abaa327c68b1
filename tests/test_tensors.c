// The tensor table against the released totals (spec §6 finding 21, §1 S2), Engram primes, and synth layouts.
#include "io/config.h"
#include "io/engram_primes.h"
#include "io/roles.h"
#include "io/synth.h"
#include "io/tensors.h"
#include "test.h"

static int table_of(const char *file, dsf_args *a, dsf_roles *r, dsf_tensor_table *t) {
    dsf_err e;
    if (dsf_config_load(file, a, &e) || dsf_roles_build(a, r, &e) || dsf_tensors_build(a, r, t, &e)) {
        fprintf(stderr, "%s\n", e.msg);
        return -1;
    }
    return 0;
}

static const dsf_tspec *find(const dsf_tensor_table *t, const char *name) {
    for (size_t i = 0; i < t->n; i++)
        if (!strcmp(t->t[i].name, name)) return &t->t[i];
    return NULL;
}

static int has(const dsf_tensor_table *t, const char *name, dsf_dtype dt, int64_t d0, int64_t d1) {
    const dsf_tspec *s = find(t, name);
    if (!s) return fprintf(stderr, "no %s\n", name), 0;
    return s->dtype == dt && s->shape[0] == d0 && (s->ndim == 1 ? d1 == 0 : s->shape[1] == d1);
}

static size_t count_suffix(const dsf_tensor_table *t, const char *suffix) {
    size_t n = 0, k = strlen(suffix);
    for (size_t i = 0; i < t->n; i++) {
        size_t m = strlen(t->t[i].name);
        n += m >= k && !strcmp(t->t[i].name + m - k, suffix);
    }
    return n;
}

static dsf_args a;
static dsf_roles r;

static void test_v41_totals(void) {
    dsf_tensor_table t;
    if (table_of("tests/vectors/v41_config.json", &a, &r, &t)) {
        TEST_ASSERT(0);
        return;
    }
    uint64_t by[DSF_DT_COUNT];
    TEST_ASSERT_MSG(t.n == 96085, "%zu tensors", t.n);
    TEST_ASSERT_MSG(dsf_tensors_bytes(&t, by) == 510286023000ull, "%llu bytes",
                    (unsigned long long)dsf_tensors_bytes(&t, NULL));
    size_t text = 0;
    uint64_t text_bytes = 0;
    for (size_t i = 0; i < t.n; i++)
        if (t.t[i].place != DSF_PLACE_VISION) text++, text_bytes += dsf_tspec_nbytes(&t.t[i]);
    TEST_ASSERT_MSG(text == 95819 && text_bytes == 509315486040ull, "text path %zu / %llu", text,
                    (unsigned long long)text_bytes);
    TEST_ASSERT(by[DSF_DT_F16] == 0 && by[DSF_DT_I64] == 0 && by[DSF_DT_I32] == 0);
    TEST_ASSERT(count_suffix(&t, "attn.compressor.wkv.weight") == 4 &&
                count_suffix(&t, "compressor.wgate.weight") == 3);
    TEST_ASSERT(count_suffix(&t, "attn.compressor.norm.weight") == 4 && count_suffix(&t, "indexer.wq_b.weight") == 8);
    TEST_ASSERT(count_suffix(&t, "indexer.wq_b.scale") == 8 && count_suffix(&t, "weights_proj.weight") == 8);
    TEST_ASSERT(count_suffix(&t, "indexer.wk.weight") == 4 && count_suffix(&t, "indexer.k_norm.weight") == 4);
    TEST_ASSERT(count_suffix(&t, "engram.embed.weight") == 2 && count_suffix(&t, "hc_head_fn") == 0);
    TEST_ASSERT(has(&t, "layers.1.engram.embed.weight", DSF_DT_F8_E4M3, 384006168, 256));
    TEST_ASSERT(has(&t, "layers.14.engram.embed.scale", DSF_DT_F8_E8M0, 384016682, 8));
    TEST_ASSERT(has(&t, "layers.1.engram.wkv.scale", DSF_DT_F8_E8M0, 800, 192));
    TEST_ASSERT(has(&t, "layers.0.attn.wq_a.scale", DSF_DT_F8_E8M0, 40, 160));
    TEST_ASSERT(has(&t, "layers.0.attn.wo_a.scale", DSF_DT_F8_E8M0, 256, 128));
    TEST_ASSERT(has(&t, "layers.39.ffn.experts.383.w2.weight", DSF_DT_I8, 5120, 1152));
    TEST_ASSERT(has(&t, "layers.39.ffn.experts.383.w2.scale", DSF_DT_F8_E8M0, 5120, 72));
    TEST_ASSERT(has(&t, "layers.20.attn.compressor.wkv.weight", DSF_DT_BF16, 512, 5120));
    TEST_ASSERT(!find(&t, "layers.20.attn.compressor.wgate.weight") && !find(&t, "layers.24.attn.indexer.wk.weight"));
    TEST_ASSERT(has(&t, "layers.24.attn.indexer.wq_b.scale", DSF_DT_F8_E8M0, 128, 40));
    TEST_ASSERT(has(&t, "mtp.0.main_proj.scale", DSF_DT_F8_E8M0, 160, 480));
    TEST_ASSERT(has(&t, "mtp.1.ffn.gate.bias_vl", DSF_DT_F32, 128, 0) && !find(&t, "mtp.1.main_proj.weight"));
    TEST_ASSERT(has(&t, "mtp.2.confidence_head.proj.weight", DSF_DT_BF16, 1, 5376));
    TEST_ASSERT(has(&t, "mtp.2.markov_head.head.weight", DSF_DT_BF16, 129280, 256));
    TEST_ASSERT(has(&t, "aligner.w1.weight", DSF_DT_BF16, 5120, 9216));
    dsf_tensors_free(&t);
}

static void test_v4_totals(void) {
    dsf_tensor_table t;
    if (table_of("tests/vectors/v4_config.json", &a, &r, &t)) {
        TEST_ASSERT(0);
        return;
    }
    TEST_ASSERT_MSG(t.n == 69187, "%zu tensors", t.n);
    TEST_ASSERT_MSG(dsf_tensors_bytes(&t, NULL) == 159609485896ull, "%llu bytes",
                    (unsigned long long)dsf_tensors_bytes(&t, NULL));
    TEST_ASSERT(count_suffix(&t, "attn.compressor.ape") == 41 && count_suffix(&t, "indexer.compressor.ape") == 21);
    TEST_ASSERT(count_suffix(&t, "gate.tid2eid") == 3 && count_suffix(&t, "gate.bias") == 41);
    TEST_ASSERT(has(&t, "layers.0.ffn.gate.tid2eid", DSF_DT_I64, 129280, 6));
    TEST_ASSERT(has(&t, "layers.0.attn.wq_a.scale", DSF_DT_F8_E8M0, 8, 32));
    TEST_ASSERT(has(&t, "layers.0.ffn.experts.0.w1.weight", DSF_DT_I8, 2048, 2048));
    TEST_ASSERT(has(&t, "layers.0.ffn.shared_experts.w1.scale", DSF_DT_F8_E8M0, 16, 32));
    TEST_ASSERT(has(&t, "layers.2.attn.compressor.ape", DSF_DT_F32, 4, 1024));
    TEST_ASSERT(has(&t, "layers.3.attn.compressor.wkv.weight", DSF_DT_BF16, 512, 4096));
    TEST_ASSERT(has(&t, "layers.2.attn.indexer.compressor.wgate.weight", DSF_DT_BF16, 256, 4096));
    TEST_ASSERT(has(&t, "mtp.0.hc_head_fn", DSF_DT_F32, 4, 16384) && has(&t, "hc_head_scale", DSF_DT_F32, 1, 0));
    TEST_ASSERT(has(&t, "mtp.0.e_proj.scale", DSF_DT_F8_E8M0, 32, 32) && !find(&t, "mtp.0.ffn.gate.tid2eid"));
    dsf_tensors_free(&t);
}

static void test_engram_primes(void) {
    int64_t primes[48], rows[2];
    dsf_engram_primes(16000000, 2, 4, 8, primes, rows);
    TEST_ASSERT_MSG(rows[0] == 384006168 && rows[1] == 384016682, "%lld %lld", (long long)rows[0], (long long)rows[1]);
    TEST_ASSERT(primes[0] == 16000057 && primes[7] == 16000183 && primes[8] == 16000189 && primes[23] == 16000463);
    TEST_ASSERT(primes[24] == 16000477 && primes[31] == 16000627 && primes[32] == 16000667);
    TEST_ASSERT(primes[39] == 16000769 && primes[40] == 16000781 && primes[47] == 16000889);
    int64_t off = 0, want[4] = {128000880, 256002934, 128004290, 256009984}, got[4];
    for (int l = 0; l < 2; l++, off = 0)
        for (int c = 0; c < 24; c++) {
            if (c == 8) got[2 * l] = off;
            if (c == 16) got[2 * l + 1] = off;
            off += primes[24 * l + c];
        }
    TEST_ASSERT(!memcmp(got, want, sizeof want));
    TEST_ASSERT(dsf_is_prime(2) && dsf_is_prime(16000057) && !dsf_is_prime(15999999) && !dsf_is_prime(1));
}

// Synth's layouts at the real layer counts reproduce the released role lists.
static void test_synth_layouts(void) {
    dsf_args real, s;
    dsf_err e;
    dsf_synth_opts o = {.arch = DSF_ARCH_V4_1, .size = DSF_SYNTH_SMALL, .layers = 40};
    TEST_ASSERT_MSG(!dsf_synth_args(&o, &s, &e), "%s", e.msg);
    TEST_ASSERT(!dsf_config_load("tests/vectors/v41_config.json", &real, &e));
    TEST_ASSERT(!memcmp(s.compress_ratios, real.compress_ratios, sizeof(int) * 43));
    TEST_ASSERT(s.n_kv_sources == 4 && !memcmp(s.kv_sources, real.kv_sources, sizeof(int) * 4));
    TEST_ASSERT(s.n_index_sources == 8 && !memcmp(s.index_sources, real.index_sources, sizeof(int) * 8));
    TEST_ASSERT(s.candidate_source == 20 && s.n_engram_layers == 2 && s.engram_layers[0] == 1);
    TEST_ASSERT(s.engram_layers[1] == 14 && s.n_dspark_targets == 3 && s.dspark_targets[0] == 37);
    o = (dsf_synth_opts){.arch = DSF_ARCH_V4, .size = DSF_SYNTH_TINY, .layers = 43};
    TEST_ASSERT_MSG(!dsf_synth_args(&o, &s, &e), "%s", e.msg);
    TEST_ASSERT(!dsf_config_load("tests/vectors/v4_config.json", &real, &e));
    TEST_ASSERT(!memcmp(s.compress_ratios, real.compress_ratios, sizeof(int) * 44) && s.n_hash_layers == 3);
    o = (dsf_synth_opts){.arch = DSF_ARCH_V4_1, .size = DSF_SYNTH_TINY, .layers = 9};
    TEST_ASSERT(dsf_synth_args(&o, &s, &e) == -1 && strstr(e.msg, "--layers 9") && strstr(e.msg, "at least 10"));
    o = (dsf_synth_opts){.arch = DSF_ARCH_V4_1, .size = DSF_SYNTH_LAYER_REAL, .layers = 1};
    TEST_ASSERT(dsf_synth_args(&o, &s, &e) == -1 && strstr(e.msg, "at least 2"));
    for (int n = 2; n <= 12; n++) {
        o = (dsf_synth_opts){.arch = DSF_ARCH_V4_1, .size = DSF_SYNTH_LAYER_REAL, .layers = n};
        TEST_ASSERT_MSG(!dsf_synth_args(&o, &s, &e), "layer-real --layers %d: %s", n, e.msg);
        o.arch = DSF_ARCH_V4;
        TEST_ASSERT_MSG(!dsf_synth_args(&o, &s, &e), "v4 layer-real --layers %d: %s", n, e.msg);
    }
}

int main(void) {
    TEST_RUN(test_v41_totals);
    TEST_RUN(test_v4_totals);
    TEST_RUN(test_engram_primes);
    TEST_RUN(test_synth_layouts);
    TEST_END();
}
