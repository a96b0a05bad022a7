/*
 * Shared by `pairshard tokenize` and `pairshard bench-tokenize`: loading
 * the tokenizer the options name. Errors are printed
 * to stderr prefixed with "pairshard CMD: ".
 */
#ifndef PS_CLI_TOK_ARGS_H
#define PS_CLI_TOK_ARGS_H

#include "pairshard/tokenizer.h"

#include <stddef.h>

typedef struct ps_tok_source {
    const char *vocab;          /* --vocab FILE */
    const char *tokenizer_json; /* --tokenizer-json FILE */
    int lowercase;              /* --lowercase 1, --no-lowercase 0, unset -1 */
} ps_tok_source;

/* The options naming the tokenizer, shared by both commands' tables: their
 * getopt_long values, and the entries (ending in a comma) to put first. */
enum {
    PS_TOK_OPT_VOCAB = 256,
    PS_TOK_OPT_JSON,
    PS_TOK_OPT_LOWER,
    PS_TOK_OPT_NOLOWER,
    PS_TOK_OPT_MAXLEN,
    PS_TOK_OPT_OWN /* a command's own options start here */
};
#define PS_TOK_SOURCE_LONGOPTS                                                                     \
    {"vocab", required_argument, NULL, PS_TOK_OPT_VOCAB},                                          \
        {"tokenizer-json", required_argument, NULL, PS_TOK_OPT_JSON},                              \
        {"lowercase", no_argument, NULL, PS_TOK_OPT_LOWER},                                        \
        {"no-lowercase", no_argument, NULL, PS_TOK_OPT_NOLOWER},                                   \
        {"max-length", required_argument, NULL, PS_TOK_OPT_MAXLEN},

/* Applies option c if it is one of the above (max-length into
 * *max_length). Returns 1 when applied, 0 when c is not one of them, -1
 * after printing why its value is bad. */
int ps_tok_source_option(const char *cmd, ps_tok_source *src, size_t *max_length, int c,
                         const char *arg);

/* Loads the tokenizer; returns 0, or -1 after printing why. */
int ps_tok_source_load(const char *cmd, const ps_tok_source *src, ps_tokenizer **out);

#endif
