#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "io/bind.h"

static void human(char *buf, size_t n, double bytes) {
    const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (bytes >= 1024 && u < 4) bytes /= 1024, u++;
    snprintf(buf, n, u ? "%.2f %s" : "%.0f %s", bytes, unit[u]);
}

static void count(char *buf, size_t n, uint64_t x) {
    if (x >= 1000000000ull)
        snprintf(buf, n, "%.3f B", 1e-9 * (double)x);
    else
        snprintf(buf, n, "%.3f M", 1e-6 * (double)x);
}

static void print_args(const dsf_args *a) {
    printf("architecture  %s (%s)\n", dsf_arch_name(a->arch),
           a->arch == DSF_ARCH_V4_1 ? "deepseek_v41" : "deepseek_v4");
    printf("dims          hidden %d, %d layers + %d %s, %d heads x %d (rope %d), q_lora %d, o %dx%d, window %d\n",
           a->dim, a->n_layers, a->n_mtp_layers, a->arch == DSF_ARCH_V4_1 ? "DSpark stages" : "MTP", a->n_heads,
           a->head_dim, a->rope_head_dim, a->q_lora_rank, a->o_groups, a->o_lora_rank, a->window_size);
    printf("moe           %d experts top-%d, inter %d, 1 shared; indexer %d x %d top-%d; vocab %lld; fp8 block %d\n",
           a->n_routed_experts, a->n_activated_experts, a->moe_inter_dim, a->index_n_heads, a->index_head_dim,
           a->index_topk, (long long)a->vocab_size, a->fp8_block);
    if (a->n_engram_layers)
        printf("engram        %d layers, %d heads x %d, n-grams 2..%d, vocab start %lld\n", a->n_engram_layers,
               a->engram_n_heads, a->engram_head_dim, a->engram_max_ngram_size, (long long)a->engram_vocab_size);
    if (a->vision_n_layers)
        printf("vision        %d layers, dim %d (not used by the text path)\n", a->vision_n_layers, a->vision_dim);
}

static void print_roles(const dsf_args *a, const dsf_roles *r) {
    char buf[200];
    printf("\nlayer  ratio  role\n");
    for (int L = 0; L < r->n; L++) {
        const dsf_role *x = &r->r[L];
        char id[16];
        if (x->stage < 0)
            snprintf(id, sizeof id, "%d", L);
        else
            snprintf(id, sizeof id, "mtp.%d", x->stage);
        printf("%-6s %5d  %s\n", id, x->compress_ratio, dsf_role_describe(a, x, buf, sizeof buf));
    }
}

// KV bytes per token of the bf16 caches the reference keeps, and the fixed per-sequence windows.
static void print_memory(const dsf_args *a, const dsf_roles *r, const dsf_tensor_table *t) {
    uint64_t place[3] = {0}, params[3] = {0}, by_dtype[DSF_DT_COUNT];
    for (size_t i = 0; i < t->n; i++) {
        place[t->t[i].place] += dsf_tspec_nbytes(&t->t[i]);
        params[t->t[i].place] += (uint64_t)dsf_tspec_params(&t->t[i]);
    }
    uint64_t total = dsf_tensors_bytes(t, by_dtype);
    char h[32];
    human(h, sizeof h, (double)total);
    printf("\ntensors       %zu, %llu bytes (%s)\n", t->n, (unsigned long long)total, h);
    for (int d = 0; d < DSF_DT_COUNT; d++) {
        if (!by_dtype[d]) continue;
        size_t n = 0;
        for (size_t i = 0; i < t->n; i++) n += t->t[i].dtype == (dsf_dtype)d;
        human(h, sizeof h, (double)by_dtype[d]);
        printf("  %-8s    %zu tensors, %llu bytes (%s)\n", dsf_dtype_name((dsf_dtype)d), n,
               (unsigned long long)by_dtype[d], h);
    }
    char p0[24], p1[24], p2[24];
    count(p0, sizeof p0, params[0]), count(p1, sizeof p1, params[1]), count(p2, sizeof p2, params[2]);
    printf("parameters    %s text path, %s Engram tables, %s vision\n", p0, p1, p2);
    double kv = 0, window = 0;
    for (int L = 0; L < r->n; L++) {
        const dsf_role *x = &r->r[L];
        window += (double)a->window_size * a->head_dim * 2;
        if (!x->owns_compressor) continue;
        kv += (double)a->head_dim * 2 / x->compress_ratio;
        if (x->indexer_owns_k || x->indexer_compressor) kv += (double)a->index_head_dim * 2 / x->compress_ratio;
    }
    if (a->n_engram_layers) kv += 8;
    human(h, sizeof h, (double)place[0]);
    printf("memory        GPU weights %s", h);
    human(h, sizeof h, (double)place[1]);
    printf(", host Engram tables %s", h);
    human(h, sizeof h, (double)place[2]);
    printf(", vision %s (as stored)\n", h);
    human(h, sizeof h, window);
    printf("              KV %.1f bytes/token (bf16 compressed caches%s) + %s a sequence (windows)\n", kv,
           a->n_engram_layers ? ", Engram history" : "", h);
}

int dsf_cmd_info(int argc, char **argv) {
    if (argc != 2 || argv[1][0] == '-') {
        FILE *f = argc == 2 && !strcmp(argv[1], "--help") ? stdout : stderr;
        fprintf(f, "usage: dsfold info DIR\nDescribes a checkpoint: architecture, layer roles, tensors, memory, "
                   "problems against the tensor table.\n");
        return f == stdout ? 0 : 2;
    }
    const char *dir = argv[1];
    dsf_err e;
    dsf_args *a = dsf_malloc(sizeof *a);
    dsf_roles *r = dsf_malloc(sizeof *r);
    dsf_tensor_table t = {0};
    int rc = 1;
    if (dsf_config_load(dir, a, &e) || dsf_roles_build(a, r, &e) || dsf_tensors_build(a, r, &t, &e)) {
        fprintf(stderr, "dsfold info: %s\n", e.msg);
        goto out;
    }
    printf("checkpoint    %s\n", dir);
    print_args(a);
    print_roles(a, r);
    print_memory(a, r, &t);
    dsf_st *st = NULL;
    if (dsf_st_open(dir, &st, &e)) {
        printf("\nproblems      %s\n", e.msg);
        goto out;
    }
    printf("\nshards        %zu files, %zu tensors\n", dsf_st_shard_count(st), dsf_st_count(st));
    if (dsf_bind_check(&t, st, NULL, &e)) {
        printf("problems      %s\n", e.msg);
    } else {
        printf("problems      none: every tensor matches the table\n");
        rc = 0;
    }
    dsf_st_close(st);
out:
    dsf_tensors_free(&t);
    free(r);
    free(a);
    return rc;
}
