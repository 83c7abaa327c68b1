#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sha256.h"
#include "cli/cli.h"
#include "io/synth.h"

static void usage(FILE *f) {
    fprintf(f, "usage: dsfold synth --arch v4.1|v4 --size tiny|small|layer-real [--layers N] [--seed S] "
               "[--threads T] [--quiet] OUT_DIR\n"
               "Writes a structurally real synthetic checkpoint (docs/synth.md) and prints each file's sha256.\n");
}

static int parse_u64(const char *s, unsigned long long *out) {
    char *end;
    if (!*s || *s == '-') return -1;
    *out = strtoull(s, &end, 10);
    return *end ? -1 : 0;
}

int dsf_cmd_synth(int argc, char **argv) {
    dsf_synth_opts o = {.arch = DSF_ARCH_V4_1, .size = DSF_SYNTH_TINY, .seed = 1, .progress = 1};
    const char *dir = NULL;
    int have_arch = 0, have_size = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        unsigned long long x;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--quiet")) {
            o.progress = 0;
        } else if (!strcmp(a, "--arch") && v) {
            if (!strcmp(v, "v4.1"))
                o.arch = DSF_ARCH_V4_1;
            else if (!strcmp(v, "v4"))
                o.arch = DSF_ARCH_V4;
            else
                return fprintf(stderr, "dsfold synth: --arch: unknown '%s' (v4.1 or v4)\n", v), 2;
            have_arch = 1, i++;
        } else if (!strcmp(a, "--size") && v) {
            if (dsf_synth_size_parse(v, &o.size))
                return fprintf(stderr, "dsfold synth: --size: unknown '%s' (tiny, small or layer-real)\n", v), 2;
            have_size = 1, i++;
        } else if (!strcmp(a, "--layers") && v) {
            if (parse_u64(v, &x) || x < 1 || x > 1000)
                return fprintf(stderr, "dsfold synth: --layers: expected a positive integer, got '%s'\n", v), 2;
            o.layers = (int)x, i++;
        } else if (!strcmp(a, "--seed") && v) {
            if (parse_u64(v, &x)) return fprintf(stderr, "dsfold synth: --seed: expected an integer, got '%s'\n", v), 2;
            o.seed = x, i++;
        } else if (!strcmp(a, "--threads") && v) {
            if (parse_u64(v, &x) || x > 4096)
                return fprintf(stderr, "dsfold synth: --threads: expected an integer, got '%s'\n", v), 2;
            o.threads = (int)x, i++;
        } else if (a[0] == '-' || dir) {
            fprintf(stderr, "dsfold synth: unexpected argument '%s'\n", a);
            usage(stderr);
            return 2;
        } else {
            dir = a;
        }
    }
    if (!dir || !have_arch || !have_size) {
        usage(stderr);
        return 2;
    }
    dsf_synth_report *rep = dsf_malloc(sizeof *rep);
    dsf_err e;
    if (dsf_synth_write(&o, dir, rep, &e)) {
        fprintf(stderr, "dsfold synth: %s\n", e.msg);
        free(rep);
        return 1;
    }
    char hex[65];
    for (int i = 0; i < rep->n_files; i++) {
        dsf_sha256_hex(rep->files[i].sha256, hex);
        printf("%s  %s\n", hex, rep->files[i].name);
    }
    dsf_sha256_hex(rep->total_sha256, hex);
    printf("total %s  (%d files, %zu tensors, %llu bytes, %.1f s)\n", hex, rep->n_files, rep->n_tensors,
           (unsigned long long)rep->bytes, rep->seconds);
    free(rep);
    return 0;
}
