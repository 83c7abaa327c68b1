#include "io/config.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

// One JSON object being read: its path prefix in messages ("text_config.") and where errors go.
typedef struct jobj {
    json_t *o;
    const char *prefix;
    const char *what;
    dsf_err *e;
} jobj;

const char *dsf_arch_name(dsf_arch a) {
    return a == DSF_ARCH_V4_1 ? "DeepSeek-V4.1-Flash" : "DeepSeek-V4-Flash";
}

const char *dsf_config_key(const dsf_args *a, const char *key, char *buf, size_t n) {
    snprintf(buf, n, "%s%s", a->arch == DSF_ARCH_V4_1 ? "text_config." : "", key);
    return buf;
}

static int bad(const jobj *j, const char *key, const char *why) {
    return dsf_fail(j->e, "%s: %s%s: %s", j->what, j->prefix, key, why);
}

static json_t *field(const jobj *j, const char *key, int required, int *err) {
    json_t *v = json_object_get(j->o, key);
    if (v && json_is_null(v)) v = NULL;
    if (!v && required) *err = bad(j, key, "missing");
    return v;
}

static int get_i64(const jobj *j, const char *key, int required, int64_t def, int64_t lo, int64_t hi, int64_t *out) {
    int err = 0;
    json_t *v = field(j, key, required, &err);
    if (err) return -1;
    if (!v) {
        *out = def;
        return 0;
    }
    int64_t x;
    if (json_is_integer(v)) {
        x = json_integer_value(v);
    } else if (json_is_real(v) && json_real_value(v) == (double)(int64_t)json_real_value(v)) {
        x = (int64_t)json_real_value(v);
    } else {
        return bad(j, key, "expected an integer");
    }
    if (x < lo || x > hi) {
        char why[128];
        snprintf(why, sizeof why, "%lld is outside [%lld, %lld]", (long long)x, (long long)lo, (long long)hi);
        return bad(j, key, why);
    }
    *out = x;
    return 0;
}

static int get_int(const jobj *j, const char *key, int required, int def, int lo, int hi, int *out) {
    int64_t x;
    if (get_i64(j, key, required, def, lo, hi, &x)) return -1;
    *out = (int)x;
    return 0;
}

static int get_num(const jobj *j, const char *key, int required, double def, double *out) {
    int err = 0;
    json_t *v = field(j, key, required, &err);
    if (err) return -1;
    if (!v) {
        *out = def;
        return 0;
    }
    if (!json_is_number(v)) return bad(j, key, "expected a number");
    *out = json_number_value(v);
    return 0;
}

static int get_bool(const jobj *j, const char *key, int required, int def, int *out) {
    int err = 0;
    json_t *v = field(j, key, required, &err);
    if (err) return -1;
    if (!v) {
        *out = def;
        return 0;
    }
    if (!json_is_boolean(v)) return bad(j, key, "expected true or false");
    *out = json_is_true(v);
    return 0;
}

static int get_str(const jobj *j, const char *key, int required, const char *def, char *out, size_t n) {
    int err = 0;
    json_t *v = field(j, key, required, &err);
    if (err) return -1;
    const char *s = def;
    if (v) {
        if (!json_is_string(v)) return bad(j, key, "expected a string");
        s = json_string_value(v);
    }
    if (strlen(s) >= n) return bad(j, key, "string too long");
    memcpy(out, s, strlen(s) + 1);
    return 0;
}

// An integer list; absent and not required gives 0 entries.
static int get_list(const jobj *j, const char *key, int required, int max, int64_t lo, int64_t hi, int64_t *out,
                    int *n) {
    int err = 0;
    json_t *v = field(j, key, required, &err);
    if (err) return -1;
    *n = 0;
    if (!v) return 0;
    if (!json_is_array(v)) return bad(j, key, "expected a list of integers");
    if ((int)json_array_size(v) > max) return bad(j, key, "list too long");
    for (size_t i = 0; i < json_array_size(v); i++) {
        json_t *x = json_array_get(v, i);
        if (!json_is_integer(x)) return bad(j, key, "expected a list of integers");
        int64_t y = json_integer_value(x);
        if (y < lo || y > hi) {
            char why[128];
            snprintf(why, sizeof why, "entry %zu = %lld is outside [%lld, %lld]", i, (long long)y, (long long)lo,
                     (long long)hi);
            return bad(j, key, why);
        }
        out[i] = y;
    }
    *n = (int)json_array_size(v);
    return 0;
}

static int get_int_list(const jobj *j, const char *key, int required, int max, int lo, int hi, int *out, int *n) {
    int64_t tmp[DSF_MAX_LAYERS];
    DSF_ASSERT(max <= DSF_MAX_LAYERS);
    if (get_list(j, key, required, max, lo, hi, tmp, n)) return -1;
    for (int i = 0; i < *n; i++) out[i] = (int)tmp[i];
    return 0;
}

static int sub(const jobj *j, const char *key, int required, const char *prefix, jobj *out) {
    int err = 0;
    json_t *v = field(j, key, required, &err);
    if (err) return -1;
    *out = (jobj){v, prefix, j->what, j->e};
    if (v && !json_is_object(v)) return bad(j, key, "expected an object");
    return 0;
}

#define BIG 1000000000
#define TRY(x)            \
    do {                  \
        if (x) return -1; \
    } while (0)

// The keys both architectures spell the same way (spec §2.1 and §2.2 tables).
static int parse_common(const jobj *t, dsf_args *a) {
    TRY(get_i64(t, "vocab_size", 1, 0, 1, BIG, &a->vocab_size));
    TRY(get_int(t, "hidden_size", 1, 0, 1, BIG, &a->dim));
    TRY(get_int(t, "num_hidden_layers", 1, 0, 1, DSF_MAX_LAYERS - 1, &a->n_layers));
    TRY(get_int(t, "num_nextn_predict_layers", 1, 0, 0, DSF_MAX_LAYERS - 1, &a->n_mtp_layers));
    TRY(get_int(t, "num_attention_heads", 1, 0, 1, 4096, &a->n_heads));
    TRY(get_int(t, "num_key_value_heads", 0, 1, 1, 4096, &a->n_kv_heads));
    TRY(get_int(t, "head_dim", 1, 0, 1, 65536, &a->head_dim));
    TRY(get_int(t, "qk_rope_head_dim", 1, 0, 2, 65536, &a->rope_head_dim));
    TRY(get_int(t, "q_lora_rank", 1, 0, 1, BIG, &a->q_lora_rank));
    TRY(get_int(t, "o_groups", 1, 0, 1, 4096, &a->o_groups));
    TRY(get_int(t, "o_lora_rank", 1, 0, 1, BIG, &a->o_lora_rank));
    TRY(get_int(t, "sliding_window", 1, 0, 1, BIG, &a->window_size));
    int nr = 0;
    TRY(get_int_list(t, "compress_ratios", 1, DSF_MAX_LAYERS, 0, 1 << 20, a->compress_ratios, &nr));
    if (nr != a->n_layers + a->n_mtp_layers) {
        char why[160];
        snprintf(why, sizeof why, "%d entries, expected num_hidden_layers + num_nextn_predict_layers = %d", nr,
                 a->n_layers + a->n_mtp_layers);
        return bad(t, "compress_ratios", why);
    }
    TRY(get_int(t, "index_n_heads", 1, 0, 1, 4096, &a->index_n_heads));
    TRY(get_int(t, "index_head_dim", 1, 0, 1, 65536, &a->index_head_dim));
    TRY(get_int(t, "index_topk", 1, 0, 1, BIG, &a->index_topk));
    TRY(get_num(t, "rope_theta", 1, 0, &a->rope_theta));
    TRY(get_num(t, "compress_rope_theta", 1, 0, &a->compress_rope_theta));
    TRY(get_i64(t, "max_position_embeddings", 1, 0, 1, (int64_t)1 << 40, &a->max_position_embeddings));
    jobj rs;
    char rs_prefix[64];
    snprintf(rs_prefix, sizeof rs_prefix, "%srope_scaling.", t->prefix);
    TRY(sub(t, "rope_scaling", 0, rs_prefix, &rs));
    if (rs.o) {
        char type[16];
        TRY(get_str(&rs, "type", 0, "", type, sizeof type));
        if (!type[0]) TRY(get_str(&rs, "rope_type", 1, "", type, sizeof type));
        if (strcmp(type, "yarn")) return bad(&rs, "rope_type", "only \"yarn\" is supported");
        TRY(get_num(&rs, "factor", 1, 0, &a->rope_factor));
        TRY(get_i64(&rs, "original_max_position_embeddings", 1, 0, 1, (int64_t)1 << 40, &a->original_seq_len));
        TRY(get_num(&rs, "beta_fast", 1, 0, &a->beta_fast));
        TRY(get_num(&rs, "beta_slow", 1, 0, &a->beta_slow));
    } else {
        a->rope_factor = 1, a->original_seq_len = 0, a->beta_fast = 32, a->beta_slow = 1;
    }
    TRY(get_num(t, "rms_norm_eps", 1, 0, &a->norm_eps));
    TRY(get_int(t, "n_routed_experts", 1, 0, 1, 1 << 20, &a->n_routed_experts));
    TRY(get_int(t, "num_experts_per_tok", 1, 0, 1, 1 << 20, &a->n_activated_experts));
    TRY(get_int(t, "n_shared_experts", 1, 0, 0, 16, &a->n_shared_experts));
    TRY(get_int(t, "moe_intermediate_size", 1, 0, 1, BIG, &a->moe_inter_dim));
    TRY(get_str(t, "scoring_func", 1, "", a->score_func, sizeof a->score_func));
    TRY(get_num(t, "routed_scaling_factor", 1, 0, &a->route_scale));
    TRY(get_num(t, "swiglu_limit", 0, 0, &a->swiglu_limit));
    TRY(get_bool(t, "norm_topk_prob", 0, 1, &a->norm_topk_prob));
    TRY(get_int(t, "hc_mult", 1, 0, 1, 64, &a->hc_mult));
    TRY(get_int(t, "hc_sinkhorn_iters", 1, 0, 1, 1000, &a->hc_sinkhorn_iters));
    TRY(get_num(t, "hc_eps", 1, 0, &a->hc_eps));
    return 0;
}

static int parse_quant(const jobj *top, dsf_args *a, const char *expert_dtype) {
    jobj q;
    TRY(sub(top, "quantization_config", 1, "quantization_config.", &q));
    char s[32];
    TRY(get_str(&q, "quant_method", 1, "", s, sizeof s));
    if (strcmp(s, "fp8")) return bad(&q, "quant_method", "only \"fp8\" is supported");
    TRY(get_str(&q, "scale_fmt", 1, "", s, sizeof s));
    if (strcmp(s, "ue8m0")) return bad(&q, "scale_fmt", "only \"ue8m0\" (E8M0 scale bytes) is supported");
    TRY(get_str(&q, "fmt", 0, "e4m3", s, sizeof s));
    if (strcmp(s, "e4m3")) return bad(&q, "fmt", "only \"e4m3\" is supported");
    int blk[2], n = 0;
    TRY(get_int_list(&q, "weight_block_size", 1, 2, 1, 4096, blk, &n));
    if (n != 2 || blk[0] != blk[1]) return bad(&q, "weight_block_size", "expected two equal entries [B, B]");
    if (blk[0] & (blk[0] - 1)) return bad(&q, "weight_block_size", "block must be a power of two");
    a->fp8_block = blk[0];
    a->fp4_block = 32;
    const char *ed = expert_dtype;
    char buf[32];
    if (!ed) {
        TRY(get_str(&q, "expert_dtype", 1, "", buf, sizeof buf));
        ed = buf;
        if (strcmp(ed, "fp4")) return bad(&q, "expert_dtype", "only \"fp4\" experts are supported");
    }
    return 0;
}

static int parse_v4(const jobj *top, dsf_args *a) {
    a->arch = DSF_ARCH_V4;
    TRY(parse_common(top, a));
    TRY(get_int(top, "num_hash_layers", 1, 0, 0, DSF_MAX_LAYERS, &a->n_hash_layers));
    char ed[16];
    TRY(get_str(top, "expert_dtype", 1, "", ed, sizeof ed));
    if (strcmp(ed, "fp4")) return bad(top, "expert_dtype", "only \"fp4\" experts are supported");
    TRY(parse_quant(top, a, ed));
    TRY(get_int(top, "bos_token_id", 0, 0, 0, BIG, &a->bos_id));
    TRY(get_int(top, "eos_token_id", 0, 1, 0, BIG, &a->eos_id));
    a->pad_id = -1;
    a->candidate_source = -1;
    a->image_token_id = -1;
    return 0;
}

static int parse_v41_text(const jobj *t, dsf_args *a) {
    TRY(parse_common(t, a));
    int lim = a->n_layers + a->n_mtp_layers;
    TRY(get_int_list(t, "kv_source_layer_ids", 1, DSF_MAX_LIST, 0, lim, a->kv_sources, &a->n_kv_sources));
    TRY(get_int_list(t, "index_source_layer_ids", 1, DSF_MAX_LIST, 0, lim, a->index_sources, &a->n_index_sources));
    TRY(get_int(t, "candidate_source_layer_id", 0, -1, -1, lim, &a->candidate_source));
    TRY(get_int(t, "candidate_topk_blocks", a->candidate_source >= 0, 0, 0, BIG, &a->candidate_topk_blocks));
    TRY(get_int(t, "candidate_block_size", a->candidate_source >= 0, 0, 0, BIG, &a->candidate_block_size));
    TRY(get_int_list(t, "engram_layer_ids", 1, DSF_MAX_LIST, 0, lim, a->engram_layers, &a->n_engram_layers));
    int ne = 0;
    TRY(get_list(t, "engram_num_embeddings", 1, DSF_MAX_LIST, 1, (int64_t)1 << 40, a->engram_num_embeddings, &ne));
    if (ne != a->n_engram_layers) return bad(t, "engram_num_embeddings", "needs one entry per engram_layer_ids entry");
    int eng = a->n_engram_layers > 0;
    TRY(get_int(t, "engram_max_ngram_size", eng, 0, 2, 16, &a->engram_max_ngram_size));
    TRY(get_int(t, "engram_n_heads", eng, 0, 1, 4096, &a->engram_n_heads));
    TRY(get_int(t, "engram_head_dim", eng, 0, 1, 65536, &a->engram_head_dim));
    TRY(get_i64(t, "engram_vocab_size", eng, 0, 2, (int64_t)1 << 40, &a->engram_vocab_size));
    TRY(get_int(t, "engram_pad_token_id", eng, 2, 0, BIG, &a->engram_pad_id));
    TRY(get_i64(t, "engram_compressed_vocab_size", eng, 0, 1, BIG, &a->engram_compressed_vocab_size));
    int ds = a->n_mtp_layers > 0;
    TRY(get_int(t, "dspark_block_size", ds, 0, 0, 4096, &a->dspark_block_size));
    TRY(get_int(t, "dspark_noise_token_id", ds, 0, 0, BIG, &a->dspark_noise_token_id));
    TRY(get_int_list(t, "dspark_target_layer_ids", ds, DSF_MAX_LIST, 0, lim, a->dspark_targets, &a->n_dspark_targets));
    TRY(get_int(t, "dspark_markov_rank", ds, 0, 1, 65536, &a->dspark_markov_rank));
    TRY(get_int(t, "dspark_n_routed_experts", 0, 0, 0, 1 << 20, &a->dspark_n_routed_experts));
    TRY(get_int(t, "dspark_num_experts_per_tok", 0, 0, 0, 1 << 20, &a->dspark_n_activated_experts));
    return 0;
}

static int parse_vision(const jobj *top, dsf_args *a) {
    jobj v;
    TRY(sub(top, "vision_config", 0, "vision_config.", &v));
    if (!v.o) return 0;
    TRY(get_int(&v, "num_hidden_layers", 1, 0, 0, 4096, &a->vision_n_layers));
    TRY(get_int(&v, "hidden_size", 1, 0, 1, BIG, &a->vision_dim));
    TRY(get_int(&v, "num_attention_heads", 1, 0, 1, 4096, &a->vision_n_heads));
    TRY(get_int(&v, "intermediate_size", 1, 0, 1, BIG, &a->vision_inter_dim));
    TRY(get_int(&v, "patch_size", 1, 0, 1, 4096, &a->vision_patch_size));
    TRY(get_int(&v, "downsample_ratio", 1, 0, 1, 64, &a->vision_downsample_ratio));
    TRY(get_int(&v, "max_image_tokens", 0, 1024, 1, BIG, &a->vision_max_image_tokens));
    TRY(get_i64(&v, "min_pixels", 0, 295936, 1, (int64_t)1 << 40, &a->vision_min_pixels));
    TRY(get_num(&v, "rope_theta", 0, 10000, &a->vision_rope_theta));
    return 0;
}

static int parse_v41(const jobj *top, dsf_args *a) {
    a->arch = DSF_ARCH_V4_1;
    jobj t;
    TRY(sub(top, "text_config", 1, "text_config.", &t));
    char mt[64];
    TRY(get_str(&t, "model_type", 0, "deepseek_v41_text", mt, sizeof mt));
    if (strcmp(mt, "deepseek_v41_text")) return bad(&t, "model_type", "expected \"deepseek_v41_text\"");
    TRY(parse_v41_text(&t, a));
    TRY(parse_quant(top, a, NULL));
    TRY(parse_vision(top, a));
    TRY(get_int(top, "image_token_id", 0, 129264, -1, BIG, &a->image_token_id));
    TRY(get_int(top, "bos_token_id", 0, 0, 0, BIG, &a->bos_id));
    TRY(get_int(top, "eos_token_id", 0, 1, 0, BIG, &a->eos_id));
    TRY(get_int(top, "pad_token_id", 0, 2, 0, BIG, &a->pad_id));
    return 0;
}

// model_type decides the layout; architectures, when present, must agree with it.
static int parse_top(json_t *root, const char *what, dsf_args *a, dsf_err *e) {
    jobj top = {root, "", what, e};
    if (!json_is_object(root)) return dsf_fail(e, "%s: expected a JSON object", what);
    char mt[64];
    TRY(get_str(&top, "model_type", 1, "", mt, sizeof mt));
    const char *want_arch;
    if (!strcmp(mt, "deepseek_v4")) {
        want_arch = "DeepseekV4ForCausalLM";
    } else if (!strcmp(mt, "deepseek_v41")) {
        want_arch = "DeepseekV41ForCausalLM";
    } else {
        return dsf_fail(e,
                        "%s: model_type: unknown architecture \"%s\" (dsfold reads \"deepseek_v4\" and "
                        "\"deepseek_v41\")",
                        what, mt);
    }
    json_t *arch = json_object_get(root, "architectures");
    if (arch) {
        if (!json_is_array(arch) || json_array_size(arch) != 1 || !json_is_string(json_array_get(arch, 0)))
            return bad(&top, "architectures", "expected a list of one string");
        const char *s = json_string_value(json_array_get(arch, 0));
        if (strcmp(s, want_arch))
            return dsf_fail(e, "%s: architectures: \"%s\" does not match model_type \"%s\" (expected \"%s\")", what, s,
                            mt, want_arch);
    }
    memset(a, 0, sizeof *a);
    return !strcmp(mt, "deepseek_v4") ? parse_v4(&top, a) : parse_v41(&top, a);
}

int dsf_config_parse(const char *json, size_t len, const char *what, dsf_args *a, dsf_err *e) {
    json_error_t je;
    json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) return dsf_fail(e, "%s: invalid JSON at line %d: %s", what, je.line, je.text);
    int rc = parse_top(root, what, a, e);
    json_decref(root);
    if (rc) return -1;
    if (dsf_args_check(a, e)) return dsf_fail_prefix(e, "%s", what);
    return 0;
}

int dsf_config_load(const char *path, dsf_args *a, dsf_err *e) {
    char file[4096];
    struct stat sb;
    if (stat(path, &sb)) return dsf_fail(e, "%s: no such file or directory", path);
    if (S_ISDIR(sb.st_mode)) {
        snprintf(file, sizeof file, "%s/config.json", path);
    } else {
        snprintf(file, sizeof file, "%s", path);
    }
    FILE *f = fopen(file, "rb");
    if (!f) return dsf_fail(e, "%s: cannot open", file);
    size_t cap = 1 << 16, n = 0;
    char *buf = dsf_malloc(cap);
    for (;;) {
        if (n == cap) buf = dsf_realloc(buf, cap *= 2);
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
        if (n > (1u << 24)) {
            fclose(f);
            free(buf);
            return dsf_fail(e, "%s: larger than 16 MiB, not a config.json", file);
        }
    }
    int err = ferror(f);
    fclose(f);
    if (err) {
        free(buf);
        return dsf_fail(e, "%s: read error", file);
    }
    int rc = dsf_config_parse(buf, n, file, a, e);
    free(buf);
    return rc;
}
