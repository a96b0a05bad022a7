/*
 * cli/build_sources.h — a build config's "sources" (docs/BUILD.md,
 * "Mixtures"): each source's name, inputs and cleaning options, its
 * schemas and template loaded, handed to the build as ps_build_source.
 */
#ifndef PS_CLI_BUILD_SOURCES_H
#define PS_CLI_BUILD_SOURCES_H

#include "cli/clean_args.h"
#include "pipeline/build.h"

#include <jansson.h>

typedef struct ps_cli_sources {
    ps_build_source *src;   /* n of them, for ps_build_config.sources */
    ps_clean_args *args;    /* each source's cleaning options */
    ps_clean_t2s *t2s;      /* each source's schemas and template (owned) */
    size_t n;
    char **owned;           /* paths resolved against the config's folder */
    size_t n_owned;
} ps_cli_sources;

/* `value` resolved against the folder of the config file `config` (a new
 * string kept in *owned), or `value` itself when absolute, '-' or the
 * config is in the current folder. NULL when out of memory. */
const char *ps_cli_config_path(char ***owned, size_t *n_owned, const char *config,
                               const char *value);

/* Whether a config's `key` = `value` names a template file (a path,
 * relative to the config's folder) rather than a preset. */
bool ps_cli_template_file(const char *key, const char *value);

/* Reads the config's "sources" array (`spec`, from the file `config`):
 * every source's options start as `base` (the top-level cleaning options)
 * and take its own members; its inputs are appended to *inputs (which
 * must be empty: top-level inputs and sources do not mix). Loads each
 * source's schemas and template for `layout`. Prints why and returns -1
 * on a bad source; 0 otherwise. */
int ps_cli_sources_load(ps_cli_sources *s, json_t *spec, const char *config,
                        const ps_clean_args *base, int layout, const char ***inputs,
                        size_t *n_inputs, size_t *cap);
/* The effective config's "sources" array: each source's name, inputs (of
 * `inputs`, the build's) and
 * options, as `clean` renders cleaning options and `t2s` text-to-SQL ones
 * (NULL: none). A new reference. */
json_t *ps_cli_sources_config(const ps_cli_sources *s, const char *const *inputs,
                              json_t *(*clean)(const ps_clean_args *a),
                              json_t *(*t2s)(const ps_clean_args *a));
void ps_cli_sources_free(ps_cli_sources *s);

#endif
