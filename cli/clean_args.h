/*
 * The cleaning options shared by `pairshard clean` and `pairshard build`:
 * one table of names, one parser, one help text, so both commands accept
 * exactly the same spelling.
 */
#ifndef PS_CLI_CLEAN_ARGS_H
#define PS_CLI_CLEAN_ARGS_H

#include "pairshard/clean.h"

#include <getopt.h>

/* Long options for getopt_long; their `val`s are >= PS_CLEAN_OPT_BASE. */
#define PS_CLEAN_OPT_BASE 1000
extern const struct option ps_clean_longopts[];
extern const size_t ps_clean_longopts_count;
/* Help lines describing them. */
extern const char ps_clean_args_help[];

/* What the options set besides ps_clean_options. */
typedef struct ps_clean_args {
    ps_clean_options opts;
    const char *rules_path;
    int sql_norm_set;
    ps_normalization sql_norm;
} ps_clean_args;

void ps_clean_args_init(ps_clean_args *a);
/* Applies option `name` (a long name, "label-field" or "label_field") with
 * `value` (NULL for flags). Returns 1 if applied, 0 if `name` is not a
 * cleaning option, -1 after printing why the value is bad. */
int ps_clean_args_apply(ps_clean_args *a, const char *cmd, const char *name, const char *value);
/* Resolves defaults that depend on other options (sql normalisation). */
void ps_clean_args_finish(ps_clean_args *a);

#endif
