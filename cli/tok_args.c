/* Tokenizer loading (and its load warnings) for the commands that tokenize. */
#include "cli/tok_args.h"
#include "cli/args.h"

#include <stdio.h>
#include <stdlib.h>

int ps_tok_source_load(const char *cmd, const ps_tok_source *src, ps_tokenizer **out)
{
    ps_error err;
    ps_error_clear(&err);
    if (!src->vocab == !src->tokenizer_json) {
        fprintf(stderr, "pairshard %s: give exactly one of --vocab FILE and --tokenizer-json FILE\n",
                cmd);
        return -1;
    }
    int rc;
    if (src->tokenizer_json) {
        if (src->lowercase >= 0) {
            fprintf(stderr,
                    "pairshard %s: --lowercase/--no-lowercase go with --vocab; a tokenizer.json "
                    "carries its own normalizer flags\n",
                    cmd);
            return -1;
        }
        rc = ps_tokenizer_load_json(src->tokenizer_json, out, &err);
    } else {
        ps_tokenizer_options opt;
        ps_tokenizer_options_init(&opt); /* lowercase on: bert-base-uncased */
        if (src->lowercase >= 0)
            opt.lowercase = src->lowercase;
        rc = ps_tokenizer_load_vocab(src->vocab, &opt, out, &err);
    }
    if (rc < 0) {
        fprintf(stderr, "pairshard %s: %s\n", cmd, err.message[0] ? err.message : ps_strerror(rc));
        return -1;
    }
    /* A damaged vocabulary still loads (as in HuggingFace); say what is odd. */
    for (size_t i = 0; i < ps_tokenizer_warning_count(*out); i++)
        fprintf(stderr, "pairshard %s: warning: %s\n", cmd, ps_tokenizer_warning(*out, i));
    return 0;
}

int ps_tok_source_option(const char *cmd, ps_tok_source *src, size_t *max_length, int c,
                         const char *arg)
{
    switch (c) {
    case PS_TOK_OPT_VOCAB: src->vocab = arg; return 1;
    case PS_TOK_OPT_JSON: src->tokenizer_json = arg; return 1;
    case PS_TOK_OPT_LOWER: src->lowercase = 1; return 1;
    case PS_TOK_OPT_NOLOWER: src->lowercase = 0; return 1;
    case PS_TOK_OPT_MAXLEN:
        return ps_args_size(cmd, "max-length", arg, 0, 1u << 31, max_length) ? -1 : 1;
    default: return 0;
    }
}
