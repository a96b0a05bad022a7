/*
 * Encodings as HF's TokenizerImpl::encode builds them for BERT: tokenize
 * each sequence, truncate (longest_first, max_length minus the special
 * tokens the post-processor adds), then lay out [CLS] A [SEP] (B [SEP]).
 */
#include "tokenize/hf.h"
#include "tokenize/tokenize.h"

#include <string.h>

/* HF's truncate_encodings, LongestFirst, for a pair whose lengths are
 * *na (first) and *nb (second) and whose budget is `max` (max_length less
 * the special tokens). The lengths are those ps_tok_run leaves with its
 * early stop (see there), as tokenizers 0.23 counts them. */
void ps_tok_longest_first(size_t *na, size_t *nb, size_t max)
{
    if (*na + *nb <= max)
        return;
    size_t n1 = *na, n2 = *nb;
    bool swap = n1 > n2;
    if (swap) { /* n1 is the shorter */
        size_t t = n1;
        n1 = n2;
        n2 = t;
    }
    if (n1 > max)
        n2 = n1;
    else
        n2 = n1 > max - n1 ? n1 : max - n1;
    if (n1 + n2 > max) {
        n1 = max / 2;
        n2 = n1 + max % 2;
    }
    if (swap) {
        size_t t = n1;
        n1 = n2;
        n2 = t;
    }
    /* Encoding::truncate never lengthens */
    if (n1 < *na)
        *na = n1;
    if (n2 < *nb)
        *nb = n2;
}

static int need_specials(const ps_tokenizer *tok, ps_error *err)
{
    if (tok->cls_id < 0)
        return ps_error_set(err, PS_EINVAL, "the vocabulary lacks the token '%s'", tok->cls);
    if (tok->sep_id < 0)
        return ps_error_set(err, PS_EINVAL, "the vocabulary lacks the token '%s'", tok->sep);
    return PS_OK;
}

/* Tokenizes one sequence onto the end of s->ids. With max_length set, HF
 * 0.23 stops after the first WordPiece'd word that brings the sequence to
 * max_length ids (special tokens count but do not stop it); the pair split
 * below depends on those lengths (measured on the binding), so we stop
 * there too. */
static int run_into(const ps_tokenizer *tok, ps_tok_scratch *s, const char *text, size_t len,
                    int which, size_t max_length, ps_error *err)
{
    s->word_fn = NULL;
    s->seq_start = s->n;
    s->stop_at = max_length;
    if (!text && len)
        return ps_error_set(err, PS_EINVAL, "NULL text with a non-zero length");
    return ps_tok_run(tok, s, text ? text : "", len, which, err);
}

int ps_tok_finish_encoding(ps_tok_scratch *s, bool truncated, ps_encoding *out)
{
    if (out) {
        out->input_ids = s->ids;
        out->token_type_ids = s->types;
        out->len = s->n;
        out->truncated = truncated;
    }
    return s->n > INT32_MAX ? PS_ELIMIT : (int)s->n;
}

int ps_tokenizer_encode_pair(const ps_tokenizer *tok, ps_tok_scratch *s, const char *a,
                             size_t a_len, const char *b, size_t b_len, size_t max_length,
                             ps_encoding *out, ps_error *err)
{
    if (!tok || !s)
        return ps_error_set(err, PS_EINVAL, "NULL tokenizer or scratch");
    if (tok->hf)
        return ps_tok_hf_encode(tok, s, a, a_len, b, b_len, true, true, max_length, out, err);
    if (max_length && max_length < 3)
        return ps_error_set(err, PS_EINVAL, "max_length %zu is below the 3 special tokens of a pair",
                            max_length);
    int rc = need_specials(tok, err);
    if (rc)
        return rc;
    s->n = 0;
    if ((rc = ps_tok_scratch_reserve(s, 3)))
        return ps_error_set(err, rc, "out of memory");
    s->ids[s->n++] = tok->cls_id;
    if ((rc = run_into(tok, s, a, a_len, 1, max_length, err)))
        return rc;
    size_t na = s->n - 1;
    if ((rc = run_into(tok, s, b, b_len, 2, max_length, err)))
        return rc;
    size_t nb = s->n - 1 - na;
    if ((rc = ps_tok_scratch_reserve(s, 2)))
        return ps_error_set(err, rc, "out of memory");
    size_t ka = na, kb = nb;
    if (max_length)
        ps_tok_longest_first(&ka, &kb, max_length - 3);
    /* ids: [CLS] a(0..na) b(0..nb) -> [CLS] a(0..ka) [SEP] b(0..kb) [SEP] */
    memmove(s->ids + 2 + ka, s->ids + 1 + na, kb * sizeof *s->ids);
    s->ids[1 + ka] = tok->sep_id;
    s->ids[2 + ka + kb] = tok->sep_id;
    s->n = 3 + ka + kb;
    memset(s->types, 0, 2 + ka);
    memset(s->types + 2 + ka, 1, kb + 1);
    /* A walk that stopped early holds >= max_length ids, over the pair's
     * budget, so it is always cut here too. */
    return ps_tok_finish_encoding(s, ka < na || kb < nb, out);
}

int ps_tokenizer_encode(const ps_tokenizer *tok, ps_tok_scratch *s, const char *text,
                        size_t len, size_t max_length, ps_encoding *out, ps_error *err)
{
    if (!tok || !s)
        return ps_error_set(err, PS_EINVAL, "NULL tokenizer or scratch");
    if (tok->hf)
        return ps_tok_hf_encode(tok, s, text, len, NULL, 0, false, true, max_length, out, err);
    if (max_length && max_length < 2)
        return ps_error_set(err, PS_EINVAL, "max_length %zu is below the 2 special tokens",
                            max_length);
    int rc = need_specials(tok, err);
    if (rc)
        return rc;
    s->n = 0;
    if ((rc = ps_tok_scratch_reserve(s, 2)))
        return ps_error_set(err, rc, "out of memory");
    s->ids[s->n++] = tok->cls_id;
    if ((rc = run_into(tok, s, text, len, 1, max_length, err)))
        return rc;
    size_t n = s->n - 1, full = n;
    if ((rc = ps_tok_scratch_reserve(s, 1)))
        return ps_error_set(err, rc, "out of memory");
    if (max_length && n > max_length - 2)
        n = max_length - 2;
    s->ids[1 + n] = tok->sep_id;
    s->n = n + 2;
    memset(s->types, 0, s->n);
    return ps_tok_finish_encoding(s, n < full, out);
}

int ps_tokenizer_tokenize(const ps_tokenizer *tok, ps_tok_scratch *s, const char *text,
                          size_t len, ps_encoding *out, ps_error *err)
{
    if (!tok || !s)
        return ps_error_set(err, PS_EINVAL, "NULL tokenizer or scratch");
    if (tok->hf)
        return ps_tok_hf_encode(tok, s, text, len, NULL, 0, false, false, 0, out, err);
    s->n = 0;
    int rc = run_into(tok, s, text, len, 1, 0, err);
    if (rc)
        return rc;
    if ((rc = ps_tok_scratch_reserve(s, 1)))
        return ps_error_set(err, rc, "out of memory");
    memset(s->types, 0, s->n);
    return ps_tok_finish_encoding(s, false, out); /* no special tokens, no truncation */
}

int ps_tokenizer_words(const ps_tokenizer *tok, ps_tok_scratch *s, const char *text, size_t len,
                       ps_word_fn fn, void *ctx, ps_error *err)
{
    if (!tok || !s || !fn || (!text && len))
        return ps_error_set(err, PS_EINVAL, "ps_tokenizer_words: bad arguments");
    if (tok->hf)
        return ps_tok_hf_words(tok, s, text, len, fn, ctx, err);
    s->word_fn = fn;
    s->word_ctx = ctx;
    s->stop_at = 0;
    s->word_rc = 0;
    int rc = ps_tok_run(tok, s, text ? text : "", len, 1, err);
    s->word_fn = NULL;
    return rc;
}
