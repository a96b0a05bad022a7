/*
 * The pairshard command's subcommands. Each takes the arguments after the
 * subcommand name (argv[0] is the subcommand) and returns the process exit
 * status: 0 success, 1 the job ran but found a failure (e.g. a check), 2 a
 * usage or input error (the message is already on stderr).
 */
#ifndef PS_CLI_COMMANDS_H
#define PS_CLI_COMMANDS_H

int ps_cmd_clean(int argc, char **argv);
int ps_cmd_build(int argc, char **argv);
int ps_cmd_merge(int argc, char **argv);
int ps_cmd_inspect(int argc, char **argv);
int ps_cmd_read(int argc, char **argv);
int ps_cmd_bench_read(int argc, char **argv);
int ps_cmd_validate(int argc, char **argv);
int ps_cmd_tokenize(int argc, char **argv);
int ps_cmd_bench_tokenize(int argc, char **argv);
int ps_cmd_version(int argc, char **argv);
int ps_cmd_leakage(int argc, char **argv);

/* Exit statuses shared by all subcommands. */
enum { PS_EXIT_OK = 0, PS_EXIT_FAIL = 1, PS_EXIT_USAGE = 2 };

#endif
