/*
 * Internal to decoders.c and decoders_load.c: one loaded decoder.
 */
#ifndef PS_TOKENIZE_DECODERS_INTERNAL_H
#define PS_TOKENIZE_DECODERS_INTERNAL_H

#include "tokenize/hf.h"

enum {
    PS_DEC_BYTELEVEL = 1,
    PS_DEC_METASPACE,
    PS_DEC_BYTEFALLBACK,
    PS_DEC_FUSE,
    PS_DEC_STRIP,
    PS_DEC_REPLACE,
    PS_DEC_WORDPIECE,
    PS_DEC_BPE,
    PS_DEC_CTC,
    PS_DEC_SEQUENCE
};

enum { PS_DEC_PREPEND_ALWAYS = 0, PS_DEC_PREPEND_FIRST, PS_DEC_PREPEND_NEVER };

typedef struct ps_tok_dec {
    ps_tok_decoder base; /* first: a ps_tok_decoder * is a ps_tok_dec * */
    int kind;
    uint32_t ch;          /* Metaspace replacement, Strip content */
    int prepend;          /* Metaspace prepend_scheme */
    uint64_t start, stop; /* Strip */
    bool cleanup;         /* WordPiece, CTC */
    /* WordPiece prefix, BPEDecoder suffix, CTC pad_token, Replace's
     * literal pattern; s2: CTC word_delimiter_token, Replace content. */
    char *s1, *s2;
    size_t n1, n2;
    ps_tok_regex *re; /* Replace's Regex pattern (or an empty String) */
    struct ps_tok_dec **kids; /* Sequence */
    size_t n_kids;
} ps_tok_dec;

/* The chain function of every kind (decoders.c). */
int ps_tok_dec_chain(const ps_tok_decoder *d, ps_tok_pieces *toks, ps_tok_pieces *tmp);
void ps_tok_dec_destroy(ps_tok_decoder *d);

#endif
