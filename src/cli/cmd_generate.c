// dsfold generate: prefill the prompt in one round, then one round per token, with keyed sampling (R4).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "engine/sample.h"
#include "model/model.h"

static void usage(FILE *f) {
    fprintf(f, "usage: dsfold generate --model DIR (--prompt TEXT | --ids 1,2,3) [-n N] [--temperature T] "
               "[--seed S] [--threads T]\n");
}

// Parses "1,2,3" into ids; returns the count or -1 with a message.
static int64_t parse_ids(const char *s, int32_t **out) {
    int64_t n = 0, cap = 16;
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)cap);
    while (*s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < 0 || v > 0x7FFFFFFF || (*end && *end != ',')) {
            fprintf(stderr, "generate: --ids: expected comma-separated token ids, got '%s'\n", s);
            free(ids);
            return -1;
        }
        if (n == cap) ids = realloc(ids, sizeof(int32_t) * (size_t)(cap *= 2));
        ids[n++] = (int32_t)v;
        s = *end ? end + 1 : end;
    }
    *out = ids;
    return n;
}

int dsf_cmd_generate(int argc, char **argv) {
    const char *model = NULL, *prompt = NULL, *ids_arg = NULL;
    long n_new = 16, threads = 0;
    double temperature = 0.0;
    unsigned long long seed = 0;
    int have_seed = 0;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
            usage(stdout);
            return 0;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "generate: %s needs a value\n", o);
            return 2;
        }
        const char *v = argv[++i];
        if (!strcmp(o, "--model"))
            model = v;
        else if (!strcmp(o, "--prompt"))
            prompt = v;
        else if (!strcmp(o, "--ids"))
            ids_arg = v;
        else if (!strcmp(o, "-n"))
            n_new = strtol(v, NULL, 10);
        else if (!strcmp(o, "--temperature"))
            temperature = strtod(v, NULL);
        else if (!strcmp(o, "--seed"))
            seed = strtoull(v, NULL, 10), have_seed = 1;
        else if (!strcmp(o, "--threads"))
            threads = strtol(v, NULL, 10);
        else {
            fprintf(stderr, "generate: unknown option %s\n", o);
            usage(stderr);
            return 2;
        }
    }
    if (!model || (!prompt == !ids_arg) || n_new < 0 || temperature < 0) {
        usage(stderr);
        return 2;
    }
    if (prompt) {
        fprintf(stderr, "generate: --prompt needs the tokenizer, which this build does not have yet; use --ids\n");
        return 2;
    }
    int32_t *ids;
    int64_t n_prompt = parse_ids(ids_arg, &ids);
    if (n_prompt < 1) {
        if (n_prompt == 0) fprintf(stderr, "generate: --ids: no token ids\n");
        return 2;
    }
    dsf_err e = {{0}};
    dsf_model *m;
    if (dsf_model_open(model, (int)threads, &m, &e)) {
        fprintf(stderr, "generate: %s\n", e.msg);
        free(ids);
        return 1;
    }
    const dsf_args *a = dsf_model_args(m);
    dsf_stream *s = NULL;
    int rc = 1;
    int32_t *reply = malloc(sizeof(int32_t) * (size_t)(n_new + 1));
    float *logits = malloc(sizeof(float) * (size_t)a->vocab_size);
    int64_t n_reply = 0;
    if (!have_seed) seed = dsf_sample_seed(ids, n_prompt);
    if (dsf_stream_new(m, n_prompt + n_new + 1, 0, &s, &e)) goto done;
    dsf_round_part part = {s, 0, n_prompt, ids, DSF_LOGITS_LAST, logits};
    dsf_round round = {1, &part, NULL, NULL};
    for (;;) {
        if (dsf_model_forward(m, &round, &e)) goto done;
        if (n_reply == n_new) break;
        int64_t pos = part.pos + part.n;
        int32_t tok = dsf_sample(logits, a->vocab_size, (float)temperature, seed, pos);
        if (tok == a->eos_id) break;
        reply[n_reply++] = tok;
        if (n_reply == n_new) break;
        part = (dsf_round_part){s, pos, 1, &reply[n_reply - 1], DSF_LOGITS_LAST, logits};
    }
    char sha[13];
    dsf_token_sha(reply, n_reply, sha);
    printf("ids ");
    for (int64_t i = 0; i < n_reply; i++) printf(i ? ",%d" : "%d", (int)reply[i]);
    printf("\ntoken_sha %s\n", sha);
    rc = 0;
done:
    if (rc) fprintf(stderr, "generate: %s\n", e.msg);
    dsf_stream_free(s);
    dsf_model_close(m);
    free(ids);
    free(reply);
    free(logits);
    return rc;
}
