#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "tok/chat.h"
#include "tok/tok.h"

static void usage(FILE *f) {
    fprintf(f, "usage: dsfold tokenize [--tokenizer PATH] [--text TEXT | --decode [--text IDS]]\n"
               "  text to ids (printed comma-separated); the input is --text or all of stdin\n"
               "  --decode       ids (separated by commas or whitespace) to text, written as raw bytes\n"
               "  --tokenizer    tokenizer.json (default $DSF_TOKENIZER or " DSF_TOK_DEFAULT_PATH ")\n"
               "  --chat FILE    render a JSON array of chat messages (FILE or - for stdin), then tokenize the prompt\n"
               "    --variant v4|v4_0731|v41 (default v41)  --mode thinking|chat (default thinking)  --effort E\n"
               "    --prompt     print the rendered prompt text instead of its ids\n");
}

static void read_all(FILE *f, dsf_tok_buf *out) {
    char chunk[1 << 16];
    size_t k;
    while ((k = fread(chunk, 1, sizeof chunk, f)) > 0) dsf_tok_buf_put(out, chunk, k);
    dsf_tok_buf_put(out, "", 0);
}

static int parse_ids(const char *s, dsf_tok_ids *ids) {
    while (*s) {
        while (*s == ',' || *s == ' ' || *s == '\n' || *s == '\t' || *s == '\r') s++;
        if (!*s) break;
        char *end;
        errno = 0;
        long v = strtol(s, &end, 10);
        if (end == s || errno || v < 0 || v > INT32_MAX) {
            fprintf(stderr, "dsfold tokenize: not a token id: '%.20s'\n", s);
            return -1;
        }
        dsf_tok_ids_push(ids, (int32_t)v);
        s = end;
    }
    return 0;
}

static int render_chat(const char *file, const dsf_chat_opts *o, dsf_tok_buf *out) {
    json_error_t je;
    json_t *m = strcmp(file, "-") ? json_load_file(file, 0, &je) : json_loadf(stdin, 0, &je);
    if (!m) {
        fprintf(stderr, "dsfold tokenize: %s: line %d: %s\n", file, je.line, je.text);
        return -1;
    }
    dsf_err e;
    int rc = dsf_chat_render(m, o, out, &e);
    json_decref(m);
    if (rc) fprintf(stderr, "dsfold tokenize: %s: %s\n", file, e.msg);
    return rc;
}

int dsf_cmd_tokenize(int argc, char **argv) {
    const char *path = NULL, *text = NULL, *chat = NULL;
    int decode = 0, prompt = 0;
    dsf_chat_opts o;
    dsf_chat_opts_default(&o, DSF_CHAT_V41);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--decode")) {
            decode = 1;
        } else if (!strcmp(argv[i], "--prompt")) {
            prompt = 1;
        } else if (!strcmp(argv[i], "--chat") && i + 1 < argc) {
            chat = argv[++i];
        } else if (!strcmp(argv[i], "--variant") && i + 1 < argc) {
            if (dsf_chat_variant_parse(argv[++i], &o.variant)) {
                fprintf(stderr, "dsfold tokenize: --variant must be v4, v4_0731 or v41\n");
                return 2;
            }
        } else if (!strcmp(argv[i], "--mode") && i + 1 < argc) {
            o.thinking = !strcmp(argv[++i], "thinking");
            if (!o.thinking && strcmp(argv[i], "chat")) {
                fprintf(stderr, "dsfold tokenize: --mode must be thinking or chat\n");
                return 2;
            }
        } else if (!strcmp(argv[i], "--effort") && i + 1 < argc) {
            o.effort = argv[++i];
        } else if (!strcmp(argv[i], "--tokenizer") && i + 1 < argc) {
            path = argv[++i];
        } else if (!strcmp(argv[i], "--text") && i + 1 < argc) {
            text = argv[++i];
        } else {
            fprintf(stderr, "dsfold tokenize: unknown or incomplete option '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    dsf_err e = {{0}};
    dsf_tok_buf rendered = {0};
    if (chat && render_chat(chat, &o, &rendered)) {
        dsf_tok_buf_free(&rendered);
        return 1;
    }
    if (chat && prompt) {
        fwrite(rendered.p, 1, rendered.n, stdout);
        dsf_tok_buf_free(&rendered);
        return 0;
    }
    dsf_tok *tok;
    if (dsf_tok_open(&tok, dsf_tok_path(path), &e)) {
        dsf_tok_buf_free(&rendered);
        fprintf(stderr, "dsfold tokenize: %s\n", e.msg);
        return 1;
    }
    dsf_tok_buf in = {0}, out = {0};
    dsf_tok_ids ids = {0};
    if (chat)
        in = rendered;
    else if (text)
        dsf_tok_buf_puts(&in, text);
    else
        read_all(stdin, &in);
    int rc = 0;
    if (decode) {
        rc = parse_ids(in.p, &ids) || dsf_tok_decode(tok, ids.v, ids.n, &out, &e);
        if (!rc) fwrite(out.p, 1, out.n, stdout);
    } else {
        rc = dsf_tok_encode(tok, in.p, in.n, &ids, &e);
        for (size_t i = 0; !rc && i < ids.n; i++) printf(i + 1 < ids.n ? "%d," : "%d", ids.v[i]);
        if (!rc) putchar('\n');
    }
    if (rc && e.msg[0]) fprintf(stderr, "dsfold tokenize: %s\n", e.msg);
    dsf_tok_buf_free(&in), dsf_tok_buf_free(&out), dsf_tok_ids_free(&ids);
    dsf_tok_close(tok);
    return rc ? 1 : 0;
}
