#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *help;
} commands[] = {
    {"synth", dsf_cmd_synth, "write a structurally real synthetic checkpoint"},
    {"info", dsf_cmd_info, "describe a checkpoint directory"},
    {"contract", dsf_cmd_contract, "run the kernel contract"},
    {"generate", dsf_cmd_generate, "generate tokens from a prompt on the CPU forward"},
    {"tokenize", dsf_cmd_tokenize, "text to token ids and back with tokenizer.json"},
};

static void usage(FILE *f) {
    fprintf(f, "usage: dsfold COMMAND [ARGS]  (dsfold COMMAND --help for its options)\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].help);
}

int main(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name)) return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "dsfold: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
