#ifndef DSF_CLI_H
#define DSF_CLI_H
// Subcommands of the dsfold executable: each takes argv with argv[0] = the command name and returns the exit status.
int dsf_cmd_synth(int argc, char **argv);
int dsf_cmd_info(int argc, char **argv);
int dsf_cmd_contract(int argc, char **argv);
int dsf_cmd_generate(int argc, char **argv);
int dsf_cmd_tokenize(int argc, char **argv);
#endif
