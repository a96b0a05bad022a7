/* Checks shared by the tokenizer targets: what an encoding must satisfy. */
#ifndef PS_FUZZ_TOK_CHECK_H
#define PS_FUZZ_TOK_CHECK_H

#include "pairshard/tokenizer.h"

#include <stdlib.h>

/* Every id below vocab_size, lengths within max_length, token types 0
 * then 1 (never back to 0). */
static void fuzz_check_encoding(const ps_tokenizer *tok, const ps_encoding *e, int rc,
                                size_t max_length)
{
    if (rc < 0)
        return;
    if ((size_t)rc != e->len || (max_length && e->len > max_length))
        abort();
    size_t vs = ps_tokenizer_vocab_size(tok);
    int seen1 = 0;
    for (size_t i = 0; i < e->len; i++) {
        if (e->input_ids[i] < 0 || (size_t)e->input_ids[i] >= vs)
            abort();
        if (!ps_tokenizer_id_to_token(tok, e->input_ids[i]) && e->input_ids[i] >= 0) {
            /* ids of a vocab.txt always have a token; a tokenizer.json may
             * leave holes, which id_to_token reports as NULL: allowed. */
        }
        if (e->token_type_ids) {
            if (e->token_type_ids[i] > 1 || (seen1 && e->token_type_ids[i] == 0))
                abort();
            seen1 |= e->token_type_ids[i];
        }
    }
}

/* Encodes text as one sequence, as a pair split in the middle, and
 * without special tokens. */
static void fuzz_encode_all(const ps_tokenizer *tok, ps_tok_scratch *s, const char *text,
                            size_t len, size_t max_length)
{
    ps_encoding enc;
    ps_error err = {0};
    int rc = ps_tokenizer_encode(tok, s, text, len, max_length, &enc, &err);
    FUZZ_CHECK_ERROR(rc, err);
    fuzz_check_encoding(tok, &enc, rc, max_length);
    size_t half = len / 2;
    /* Do not split inside a UTF-8 sequence: move to a lead byte. */
    while (half < len && ((unsigned char)text[half] & 0xC0) == 0x80)
        half++;
    rc = ps_tokenizer_encode_pair(tok, s, text, half, text + half, len - half,
                                  max_length ? max_length + 1 : 0, &enc, &err);
    FUZZ_CHECK_ERROR(rc, err);
    fuzz_check_encoding(tok, &enc, rc, max_length ? max_length + 1 : 0);
    rc = ps_tokenizer_tokenize(tok, s, text, len, &enc, &err);
    FUZZ_CHECK_ERROR(rc, err);
    fuzz_check_encoding(tok, &enc, rc, 0);
}

#endif
