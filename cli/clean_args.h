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
/* The long options of a command that cleans (clean, build): -o/--output,
 * -q/--quiet and -h/--help, which both take, then its own n_own, then the
 * cleaning options, into out (room for n_own + PS_CLEAN_LONGOPTS_EXTRA),
 * NULL-terminated. Returns how many there are before the terminator. */
#define PS_CLEAN_LONGOPTS_EXTRA 32
size_t ps_clean_longopts_merge(struct option *out, const struct option *own, size_t n_own);
/* Help lines describing them. */
extern const char ps_clean_args_help[];

#define PS_CLEAN_MAX_SCHEMAS 32

/* What the options set besides ps_clean_options. */
typedef struct ps_clean_args {
    ps_clean_options opts;
    const char *rules_path;
    int sql_norm_set;
    ps_normalization sql_norm;
    /* text-to-SQL inputs: loaded by ps_clean_args_text2sql */
    const char *schema_paths[PS_CLEAN_MAX_SCHEMAS]; /* --schema, repeatable */
    size_t n_schemas;
    const char *databases_dir;  /* --databases */
    const char *template_name;  /* --template: a preset or a file */
    int layout;                 /* the build's ps_layout: a preset's separator (0: pair) */
} ps_clean_args;

/* The schemas and template of a run, owned by the command. */
typedef struct ps_clean_t2s {
    ps_schemas *schemas;   /* NULL without --schema/--databases */
    ps_template *tmpl;     /* NULL without --template */
} ps_clean_t2s;

void ps_clean_args_init(ps_clean_args *a);
/* Applies option `name` (a long name, "label-field" or "label_field") with
 * `value` (NULL for flags). Returns 1 if applied, 0 if `name` is not a
 * cleaning option, -1 after printing why the value is bad. */
int ps_clean_args_apply(ps_clean_args *a, const char *cmd, const char *name, const char *value);
/* Resolves defaults that depend on other options (sql normalisation). */
void ps_clean_args_finish(ps_clean_args *a);
/* After ps_cleaner_create: checks the text-to-SQL options against each
 * other, loads --schema files, --databases and --template into *t and
 * gives them to the cleaner (`cl` NULL: to none; `pairshard build` hands
 * them to the build, whose cleaner takes them). Returns 0, or -1 after printing why (a usage
 * error: a file that does not parse is named with its position). Free *t
 * with ps_clean_t2s_free after the cleaner, in both cases. */
int ps_clean_args_text2sql(const ps_clean_args *a, const char *cmd, ps_cleaner *cl,
                           ps_clean_t2s *t);
void ps_clean_t2s_free(ps_clean_t2s *t);

#endif
