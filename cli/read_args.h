/*
 * Shared by `pairshard read` and `pairshard bench-read`: the batching and
 * reading flags (the same flags give the same batches in both), their
 * help text. Numbers are read by cli/args.h. Errors are printed to stderr prefixed
 * with "pairshard CMD: ".
 */
#ifndef PS_CLI_READ_ARGS_H
#define PS_CLI_READ_ARGS_H

#include "pairshard/reader.h"

#include <getopt.h>
#include <stddef.h>
#include <stdint.h>

/* getopt_long value of every shared option: the caller looks the option up
 * by its long name (longopts[idx].name) with ps_read_batching_option. */
#define PS_READ_BATCHING_OPT 1

extern const struct option ps_read_batching_longopts[];
extern const size_t ps_read_batching_longopts_count;
/* The "Batching" and "Reading" sections of both commands' --help. */
extern const char ps_read_batching_help[];

/* Writes the shared options, then the command's own `n_own`, then the
 * terminating zero entry into `out` (room for `cap`). Returns the number
 * of options, or 0 when they do not fit. */
size_t ps_read_longopts(struct option *out, size_t cap, const struct option *own, size_t n_own);

/* Applies one shared option by long name. Returns 0, or -1 after printing
 * why. `seen` collects what was given, for ps_read_batching_finish. */
int ps_read_batching_option(const char *cmd, const char *name, const char *v,
                            ps_reader_options *o, unsigned *seen);

/* Checks the combination. Returns 0 or -1 after printing why. */
int ps_read_batching_finish(const char *cmd, ps_reader_options *o, unsigned seen);

/* Both commands' option loop: the shared options applied on the way, the
 * command's own handed back. */
typedef struct ps_read_parser {
    const char *cmd;
    struct option longopts[32];
    int idx;
    ps_reader_options *o;
    unsigned seen;
    const char *const *dirs; /* the DIR operands (ps_read_finish) */
    size_t n_dirs;
} ps_read_parser;

/* A shared option had a bad value (already reported). */
#define PS_READ_BAD_OPTION (-2)

/* Starts reading argv with the shared options and the command's `own`
 * (getopt restarted, its own messages off); options go into *o. */
void ps_read_parser_init(ps_read_parser *p, const char *cmd, const struct option *own,
                         size_t n_own, ps_reader_options *o);
/* The next option that is not a shared one (its getopt_long value, with
 * optarg set), -1 at the end, or PS_READ_BAD_OPTION. */
int ps_read_getopt(ps_read_parser *p, int argc, char **argv);
/* After the options: the DIR operands (one set, or several read as one
 * mixture) into p->dirs, the first into *dir, and the shared options'
 * combination checked; 0, or -1 after printing why. */
int ps_read_finish(ps_read_parser *p, int argc, char **argv, const char **dir);

/* The rest of both commands' option switch: -h prints `usage` (filled with
 * ps_read_batching_help) and returns PS_EXIT_OK; anything else is reported
 * as an unknown or malformed option and returns PS_EXIT_USAGE. */
int ps_read_help_or_bad(const char *cmd, int c, char **argv, const struct option *longopts,
                        const char *usage);

/* Exit status for a failed ps_reader_open. */
int ps_read_open_status(int rc);

#endif
