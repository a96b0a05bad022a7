/* Checks shared by the tokenizer targets: what an encoding must satisfy. */
#ifndef PS_FUZZ_TOK_CHECK_H
#define PS_FUZZ_TOK_CHECK_H

#include "pairshard/tokenizer.h"

#include <stdlib.h>
#include <string.h>

/* Every id below vocab_size, lengths within max_length; for BERT's fused
 * path (a vocab.txt, or a tokenizer.json of BERT's shape) token types 0
 * then 1, never back to 0 (a tokenizer.json's template may give any). */
static void fuzz_check_encoding(const ps_tokenizer *tok, const ps_encoding *e, int rc,
                                size_t max_length)
{
    if (rc < 0)
        return;
    if ((size_t)rc != e->len || (max_length && e->len > max_length))
        abort();
    size_t vs = ps_tokenizer_vocab_size(tok);
    ps_tokenizer_options o;
    ps_tokenizer_get_options(tok, &o);
    int bert = o.cls_token != NULL; /* only the fused BERT path names [CLS] */
    int seen1 = 0;
    for (size_t i = 0; i < e->len; i++) {
        if (e->input_ids[i] < 0 || (size_t)e->input_ids[i] >= vs)
            abort();
        if (!ps_tokenizer_id_to_token(tok, e->input_ids[i]) && e->input_ids[i] >= 0) {
            /* ids of a vocab.txt always have a token; a tokenizer.json may
             * leave holes, which id_to_token reports as NULL: allowed. */
        }
        if (e->token_type_ids && bert) {
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
    if (rc > 0) { /* and back to text through the decoder */
        const char *out;
        size_t out_len;
        int32_t *ids = malloc((size_t)rc * sizeof *ids);
        if (!ids)
            return;
        memcpy(ids, enc.input_ids, (size_t)rc * sizeof *ids);
        for (int skip = 0; skip < 2; skip++) {
            int drc = ps_tokenizer_decode(tok, s, ids, (size_t)rc, skip, &out, &out_len, &err);
            FUZZ_CHECK_ERROR(drc, err);
            if (!drc && strlen(out) > out_len)
                abort(); /* NUL-terminated at out_len (it may hold NULs itself) */
        }
        free(ids);
    }
}

/* A loaded tokenizer's last checks: text truncated at max_length and
 * untruncated, with one scratch; then the tokenizer is freed. */
static inline void fuzz_encode_then_free(ps_tokenizer *tok, const char *text, size_t len,
                                         size_t max_length)
{
    ps_tok_scratch *s = ps_tok_scratch_new();
    fuzz_encode_all(tok, s, text, len, max_length);
    fuzz_encode_all(tok, s, text, len, 0);
    ps_tok_scratch_free(s);
    ps_tokenizer_free(tok);
}

#endif
