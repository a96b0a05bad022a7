/*
 * Internal to added.c and added_load.c: the loaded added vocabulary.
 */
#ifndef PS_TOKENIZE_ADDED_INTERNAL_H
#define PS_TOKENIZE_ADDED_INTERNAL_H

#include "tokenize/hf.h"

/* An added token's options, as tokenizer.json gives them. */
typedef struct ps_tok_added_flags {
    bool single_word, lstrip, rstrip, normalized, special;
} ps_tok_added_flags;

/* One id's token (HF's added_tokens_map_r entry). */
typedef struct ps_tok_added_tok {
    char *content; /* NUL-terminated */
    size_t len;
    char *normed; /* content through the normalizer when that changed it, or NULL */
    size_t normed_len;
    int32_t id;
    ps_tok_added_flags f;
} ps_tok_added_tok;

/* content -> id (HF's added_tokens_map); `special`: the content is in HF's
 * special_tokens_set (some entry with it had special=true; never removed). */
typedef struct ps_tok_added_name {
    char *content;
    size_t len;
    int32_t id;
    bool special;
} ps_tok_added_name;

struct ps_tok_added {
    ps_tok_added_tok *toks; /* sorted by id */
    size_t n;
    ps_tok_added_name *map; /* sorted by content */
    size_t n_map;
    /* [0]: patterns of normalized=false tokens, [1]: normalized=true; the
     * trie's values are indices into toks. */
    ps_tok_trie trie[2];
};

#endif
