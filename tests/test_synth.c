// dsfold synth: tiny checkpoints of both arches bind, are reproducible from the seed, and corruption is reported.
#include <jansson.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/sha256.h"
#include "io/bind.h"
#include "io/synth.h"
#include "test.h"

static char root[256];

static int synth(dsf_arch arch, uint64_t seed, const char *name, dsf_synth_report *rep) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s/%s", root, name);
    dsf_synth_opts o = {.arch = arch, .size = DSF_SYNTH_TINY, .seed = seed, .threads = 2};
    dsf_err e;
    if (dsf_synth_write(&o, dir, rep, &e)) {
        fprintf(stderr, "synth %s: %s\n", name, e.msg);
        return -1;
    }
    return 0;
}

static void check_bind(dsf_arch arch, const char *name) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s/%s", root, name);
    dsf_ckpt *c;
    dsf_err e;
    TEST_ASSERT_MSG(!dsf_ckpt_open(dir, &c, &e), "%s", e.msg);
    if (!c) return;
    const dsf_layer_view *L = c->layers;
    TEST_ASSERT(c->args.arch == arch && c->g.embed && c->g.head && c->g.norm);
    TEST_ASSERT(L[0].attn.wq_a.weight && L[0].attn.wq_a.scale && L[0].attn.wo_b.scale && L[0].ffn.gate.weight);
    TEST_ASSERT(L[0].ffn.experts[1].w2.weight && L[0].ffn.experts[1].w2.scale && L[0].ffn.shared_experts.w3.scale);
    TEST_ASSERT(L[0].ffn.experts[1].w2.weight->dtype == DSF_DT_I8 && !L[0].attn.compressor.wkv.weight);
    if (arch == DSF_ARCH_V4_1) {
        TEST_ASSERT(L[1].engram.embed.weight && L[1].engram.embed.scale && L[1].engram.wkv.scale &&
                    !L[0].engram.wkv.weight);
        TEST_ASSERT(L[2].attn.compressor.wgate.weight && L[2].attn.indexer.wk.weight && L[2].attn.indexer.k_norm);
        TEST_ASSERT(!L[3].attn.compressor.wkv.weight && !L[3].attn.indexer.wq_b.weight);
        TEST_ASSERT(L[5].attn.compressor.wkv.weight && !L[5].attn.compressor.wgate.weight);
        TEST_ASSERT(L[7].attn.indexer.wq_b.scale && !L[7].attn.indexer.wk.weight && L[7].ffn.gate.bias_vl);
        TEST_ASSERT(c->mtp[0].main_proj.scale && c->mtp[2].markov_head.head && c->mtp[2].confidence_head.proj);
        TEST_ASSERT(c->mtp[1].ffn.n_experts == c->args.dspark_n_routed_experts && c->g.image_newline);
    } else {
        TEST_ASSERT(L[0].ffn.gate.tid2eid && !L[0].ffn.gate.bias && L[3].ffn.gate.bias && !L[3].ffn.gate.tid2eid);
        TEST_ASSERT(L[2].attn.compressor.ape && L[2].attn.indexer.compressor.ape && L[3].attn.compressor.ape);
        TEST_ASSERT(!L[3].attn.indexer.wq_b.weight && c->mtp[0].e_proj.scale && c->mtp[0].hc_head_fn &&
                    c->g.hc_head_fn);
    }
    dsf_ckpt_close(c);
}

static void test_tiny_binds_and_is_seeded(void) {
    static dsf_synth_report a, b, d;
    dsf_arch arches[2] = {DSF_ARCH_V4_1, DSF_ARCH_V4};
    const char *names[2] = {"v41", "v4"};
    for (int i = 0; i < 2; i++) {
        char same[32], other[32];
        snprintf(same, sizeof same, "%s-again", names[i]);
        snprintf(other, sizeof other, "%s-seed2", names[i]);
        if (synth(arches[i], 1, names[i], &a) || synth(arches[i], 1, same, &b) || synth(arches[i], 2, other, &d)) {
            TEST_ASSERT(0);
            continue;
        }
        TEST_ASSERT(a.n_files >= 5 && a.seconds < 10);
        TEST_ASSERT_MSG(!memcmp(a.total_sha256, b.total_sha256, 32), "%s: same seed, different bytes", names[i]);
        TEST_ASSERT_MSG(memcmp(a.total_sha256, d.total_sha256, 32), "%s: seeds 1 and 2 gave the same bytes", names[i]);
        TEST_ASSERT(!memcmp(a.files[3].sha256, b.files[3].sha256, 32) &&
                    memcmp(a.files[3].sha256, d.files[3].sha256, 32));
        check_bind(arches[i], names[i]);
    }
}

// Rewrites shard 2 of dir without `drop` and with `reshape` given its transposed shape; updates the index to match.
static int rewrite(const char *dir, const char *drop, const char *reshape) {
    char shard[600], index[600];
    snprintf(shard, sizeof shard, "%s/model-00002-of-00002.safetensors", dir);
    snprintf(index, sizeof index, "%s/model.safetensors.index.json", dir);
    dsf_st *st;
    dsf_err e;
    if (dsf_st_open(shard, &st, &e)) return fprintf(stderr, "%s\n", e.msg), -1;
    dsf_st_writer *w = dsf_st_writer_new();
    int rc = 0;
    for (size_t i = 0; !rc && i < dsf_st_count(st); i++) {
        const dsf_tensor *t = dsf_st_at(st, i);
        if (drop && !strcmp(t->name, drop)) continue;
        int64_t shape[DSF_MAX_DIMS];
        memcpy(shape, t->shape, sizeof shape);
        if (reshape && !strcmp(t->name, reshape)) shape[0] = t->shape[1], shape[1] = t->shape[0];
        rc = dsf_st_writer_add(w, t->name, t->dtype, t->ndim, shape, &e);
    }
    char tmp[640];
    snprintf(tmp, sizeof tmp, "%s.tmp", shard);
    if (!rc) rc = dsf_st_writer_begin(w, tmp, &e);
    for (size_t i = 0; !rc && i < dsf_st_count(st); i++) {
        const dsf_tensor *t = dsf_st_at(st, i);
        if (!(drop && !strcmp(t->name, drop))) rc = dsf_st_writer_data(w, t->data, t->nbytes, &e);
    }
    if (!rc) rc = dsf_st_writer_end(w, NULL, &e);
    dsf_st_writer_free(w);
    dsf_st_close(st);
    if (rc) return fprintf(stderr, "%s\n", e.msg), -1;
    if (rename(tmp, shard)) return -1;
    json_error_t je;
    json_t *idx = json_load_file(index, 0, &je);
    if (!idx) return -1;
    if (drop) json_object_del(json_object_get(idx, "weight_map"), drop);
    rc = json_dump_file(idx, index, JSON_INDENT(2));
    json_decref(idx);
    return rc;
}

static void test_corruption_is_listed(void) {
    static dsf_synth_report rep;
    char dir[512];
    snprintf(dir, sizeof dir, "%s/corrupt", root);
    if (synth(DSF_ARCH_V4_1, 7, "corrupt", &rep)) {
        TEST_ASSERT(0);
        return;
    }
    const char *drop = "layers.9.ffn.experts.3.w2.scale", *bad = "layers.9.attn.wq_b.weight";
    TEST_ASSERT(!rewrite(dir, drop, bad));
    dsf_ckpt *c;
    dsf_err e;
    TEST_ASSERT(dsf_ckpt_open(dir, &c, &e) == -1 && !c);
    TEST_ASSERT_MSG(strstr(e.msg, "missing layers.9.ffn.experts.3.w2.scale"), "%s", e.msg);
    TEST_ASSERT_MSG(strstr(e.msg, "layers.9.attn.wq_b.weight has shape [64,512], expected [512,64]"), "%s", e.msg);
    TEST_ASSERT_MSG(strstr(e.msg, "2 problems") && strstr(e.msg, "1 missing") && strstr(e.msg, "1 wrong shape"), "%s",
                    e.msg);
}

// The dsfold binary (DSF_BIN): info on a good checkpoint exits 0, on a missing or broken one exits 1.
static int run_info(const char *dir) {
    const char *bin = getenv("DSF_BIN");
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "'%s' info '%s' > /dev/null 2>&1", bin, dir);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_info_exit_status(void) {
    if (!getenv("DSF_BIN")) return;
    char dir[512];
    snprintf(dir, sizeof dir, "%s/v41", root);
    TEST_ASSERT(run_info(dir) == 0);
    snprintf(dir, sizeof dir, "%s/v4", root);
    TEST_ASSERT(run_info(dir) == 0);
    snprintf(dir, sizeof dir, "%s/corrupt", root);
    TEST_ASSERT(run_info(dir) == 1);
    snprintf(dir, sizeof dir, "%s/does-not-exist", root);
    TEST_ASSERT(run_info(dir) == 1);
}

int main(void) {
    snprintf(root, sizeof root, "%s/dsf_test_synth_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(root)) TEST_SKIP_ALL("cannot create a temporary directory");
    TEST_RUN(test_tiny_binds_and_is_seeded);
    TEST_RUN(test_corruption_is_listed);
    TEST_RUN(test_info_exit_status);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd)) fprintf(stderr, "could not remove %s\n", root);
    TEST_END();
}
