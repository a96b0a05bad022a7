/*
 * Internal to post.c and post_load.c: a loaded post-processor, reduced to
 * the one processor that adds tokens (ByteLevel changes no id).
 */
#ifndef PS_TOKENIZE_POST_INTERNAL_H
#define PS_TOKENIZE_POST_INTERNAL_H

#include "tokenize/hf.h"

enum { PS_POST_NONE = 0, PS_POST_TEMPLATE, PS_POST_ROBERTA, PS_POST_BERT };

/* A template piece: a special token (sp >= 0, an index into sp) or
 * sequence `seq` (0: A, 1: B). */
typedef struct ps_tok_post_piece {
    long sp;
    int seq;
    uint8_t type_id;
} ps_tok_post_piece;

typedef struct ps_tok_post_special {
    char *name; /* the key in special_tokens */
    int32_t *ids;
    size_t n;
} ps_tok_post_special;

struct ps_tok_post {
    int kind;
    ps_tok_post_piece *single, *pair;
    size_t n_single, n_pair;
    size_t added_single, added_pair;
    /* The pair template names a special token that is not in the map: HF
     * loads it and panics on a pair, so a pair is refused (PS_EUSAGE). */
    bool pair_broken;
    ps_tok_post_special *sp;
    size_t n_sp;
    int32_t cls, sep; /* Roberta, Bert */
};

#endif
