// dsfold generate: prefill the prompt in one round, then one round per token, with keyed sampling (R4).
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "engine/sample.h"
#include "model/model.h"
#include "tok/chat.h"
#include "tok/tok.h"

static void usage(FILE *f) {
    fprintf(f, "usage: dsfold generate --model DIR (--prompt TEXT [--chat] | --ids 1,2,3) [-n N] [--temperature T]\n"
               "                       [--seed S] [--threads T] [--tokenizer PATH] [--token-map FILE]\n"
               "  --chat        wrap TEXT as one user message of the V4.1 chat template (chat mode, no thinking)\n"
               "  --tokenizer   tokenizer.json for text (default DIR/tokenizer.json, else $DSF_TOKENIZER or "
               DSF_TOK_DEFAULT_PATH ")\n"
               "  --token-map   Engram token map: a tokenizer.json or a dsfold-engram-map file (default "
               "DIR/tokenizer.json, else the fold map of docs/forward.md)\n");
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

// The tokenizer for text: --tokenizer, else the checkpoint's own, else $DSF_TOKENIZER or the default path.
static int open_tokenizer(const char *model, const char *explicit_path, int needed, dsf_tok **tok) {
    char own[4200];
    snprintf(own, sizeof own, "%s/tokenizer.json", model);
    const char *path = explicit_path ? explicit_path : access(own, R_OK) == 0 ? own : dsf_tok_path(NULL);
    dsf_err e;
    *tok = NULL;
    if (!needed && !explicit_path && access(path, R_OK)) return 0;
    if (dsf_tok_open(tok, path, &e) == 0) return 0;
    fprintf(stderr, "generate: %s\n", e.msg);
    return -1;
}

// The prompt's ids: TEXT encoded as it is, or rendered first as one user message in V4.1 chat mode.
static int64_t encode_prompt(const dsf_tok *tok, const char *text, int chat, int32_t **out) {
    dsf_tok_buf in = {0};
    dsf_tok_ids ids = {0};
    dsf_err e;
    int rc = 0;
    if (chat) {
        json_t *msgs = json_pack("[{s:s, s:s}]", "role", "user", "content", text);
        dsf_chat_opts o;
        dsf_chat_opts_default(&o, DSF_CHAT_V41);
        o.thinking = 0;
        rc = !msgs || dsf_chat_render(msgs, &o, &in, &e);
        if (!msgs) snprintf(e.msg, sizeof e.msg, "--prompt is not valid UTF-8");
        json_decref(msgs);
    } else {
        dsf_tok_buf_puts(&in, text);
    }
    if (!rc) rc = dsf_tok_encode(tok, in.p, in.n, &ids, &e);
    dsf_tok_buf_free(&in);
    if (rc) {
        fprintf(stderr, "generate: %s\n", e.msg);
        dsf_tok_ids_free(&ids);
        return -1;
    }
    *out = ids.v;
    return (int64_t)ids.n;
}

int dsf_cmd_generate(int argc, char **argv) {
    const char *model = NULL, *prompt = NULL, *ids_arg = NULL, *tok_path = NULL, *map_path = NULL;
    long n_new = 16, threads = 0;
    double temperature = 0.0;
    unsigned long long seed = 0;
    int have_seed = 0, chat = 0;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(o, "--chat")) {
            chat = 1;
            continue;
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
        else if (!strcmp(o, "--tokenizer"))
            tok_path = v;
        else if (!strcmp(o, "--token-map"))
            map_path = v;
        else {
            fprintf(stderr, "generate: unknown option %s\n", o);
            usage(stderr);
            return 2;
        }
    }
    if (!model || (!prompt == !ids_arg) || n_new < 0 || temperature < 0 || (chat && !prompt)) {
        usage(stderr);
        return 2;
    }
    dsf_tok *tok;
    if (open_tokenizer(model, tok_path, prompt != NULL, &tok)) return 1;
    int32_t *ids = NULL;
    int64_t n_prompt = prompt ? encode_prompt(tok, prompt, chat, &ids) : parse_ids(ids_arg, &ids);
    if (n_prompt < 1) {
        if (n_prompt == 0) fprintf(stderr, "generate: the prompt has no tokens\n");
        free(ids);
        dsf_tok_close(tok);
        return n_prompt == 0 ? 2 : 1;
    }
    dsf_err e = {{0}};
    dsf_model *m = NULL;
    dsf_model_opts mo = {(int)threads, map_path};
    if (dsf_model_open_opts(model, &mo, &m, &e)) {
        fprintf(stderr, "generate: %s\n", e.msg);
        free(ids);
        dsf_tok_close(tok);
        return 1;
    }
    const dsf_args *a = dsf_model_args(m);
    const char *map_src = NULL;
    int64_t map_n;
    if (dsf_model_token_map(m, &map_n, &map_src)) fprintf(stderr, "generate: Engram token map: %s\n", map_src);
    dsf_stream *s = NULL;
    int rc = 1;
    int32_t *reply = malloc(sizeof(int32_t) * (size_t)(n_new + 1));
    float *logits = malloc(sizeof(float) * (size_t)a->vocab_size);
    int64_t n_reply = 0;
    dsf_tok_stream ts = {{0}, 0};
    dsf_tok_buf text = {0};
    if (!have_seed) seed = dsf_sample_seed(ids, n_prompt);
    if (dsf_stream_new(m, n_prompt + n_new + 1, 0, &s, &e)) goto done;
    dsf_round_part part = {s, 0, n_prompt, ids, DSF_LOGITS_LAST, logits};
    dsf_round round = {1, &part, NULL, NULL};
    while (n_reply < n_new) {
        if (dsf_model_forward(m, &round, &e)) goto done;
        int64_t pos = part.pos + part.n;
        int32_t t = dsf_sample(logits, a->vocab_size, (float)temperature, seed, pos);
        if (t == a->eos_id) break;
        reply[n_reply++] = t;
        // Streamed text: only whole UTF-8 characters; an incomplete tail waits for the tokens that finish it.
        if (tok && dsf_tok_stream_push(tok, &ts, t, &text, &e) == 0) {
            fwrite(text.p, 1, text.n, stdout);
            fflush(stdout);
            text.n = 0;
        }
        part = (dsf_round_part){s, pos, 1, &reply[n_reply - 1], DSF_LOGITS_LAST, logits};
    }
    if (tok) {
        dsf_tok_stream_finish(&ts, &text);
        fwrite(text.p, 1, text.n, stdout);
        putchar('\n');
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
    dsf_tok_close(tok);
    dsf_tok_buf_free(&text);
    free(ids);
    free(reply);
    free(logits);
    return rc;
}
