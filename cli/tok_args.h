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

/* Loads the tokenizer; returns 0, or -1 after printing why. */
int ps_tok_source_load(const char *cmd, const ps_tok_source *src, ps_tokenizer **out);

#endif
