/*
 * tokenize/unk_words.c — which words became [UNK], and why. The encode
 * path only counts [UNK] ids; a record that holds some is walked again
 * here (words only), so records without [UNK] pay nothing for the
 * diagnosis.
 */
#include "common/unicode.h"
#include "tokenize/hf.h"
#include "tokenize/tokenize.h"
#include "tokenize/unicode.h"

#include <stdlib.h>

typedef struct unk_filter {
    const ps_tokenizer *tok;
    ps_tok_scratch *s;
    ps_word_fn fn;
    void *ctx;
} unk_filter;

/* True when WordPiece turns the normalized word into [UNK] (a word is
 * either all pieces or one [UNK]). Uses s->ids from s->n on, then drops
 * what it wrote. */
/* The same for a tokenizer.json pipeline: the piece goes through the
 * model alone, and any unk id in it counts (BPE and Unigram may mix
 * pieces and unk within one word). */
static int piece_is_unk(const ps_tokenizer *tok, ps_tok_scratch *s, const char *w, size_t len,
                        bool *unk)
{
    struct ps_tok_hfwork *hw = ps_tok_hfwork_of(s);
    if (!hw)
        return PS_ENOMEM;
    const ps_tok_model *m = tok->hf->model;
    hw->unk_probe.n = 0;
    *unk = false;
    if (!len)
        return PS_OK;
    int rc = m->encode(m, &hw->model_slot, w, len, &hw->unk_probe, NULL);
    for (size_t i = 0; !rc && i < hw->unk_probe.n && !*unk; i++)
        *unk = hw->unk_probe.v[i] == tok->unk_id;
    return rc;
}

static int word_is_unk(const ps_tokenizer *tok, ps_tok_scratch *s, const char *w, size_t len,
                       bool *unk)
{
    if (tok->hf)
        return piece_is_unk(tok, s, w, len, unk);
    size_t mark = s->n;
    int rc = ps_tok_wordpiece(tok, s, w, len, ps_utf8_count(w, len));
    *unk = !rc && s->n == mark + 1 && s->ids[mark] == tok->unk_id;
    s->n = mark;
    return rc;
}

/* BPE and Unigram encode a piece into known tokens and unk tokens side by
 * side, so the word that "became [UNK]" is the span from its first to its
 * last character that is unk by itself: "▁<" of T5 is "<" (the marker ▁
 * is a token of its own). WordPiece and WordLevel lose the whole word. A
 * word with no such character is reported whole. */
static int unk_span(const ps_tokenizer *tok, ps_tok_scratch *s, const char **w, size_t *len)
{
    ps_tok_model_kind kind = tok->hf ? tok->hf->model->kind : PS_TOK_MODEL_WORDPIECE;
    if (kind != PS_TOK_MODEL_BPE && kind != PS_TOK_MODEL_UNIGRAM)
        return 0;
    size_t first = SIZE_MAX, last = 0;
    for (size_t i = 0; i < *len;) {
        uint32_t cp;
        unsigned k = ps_tok_utf8_decode((const unsigned char *)*w + i, *len - i, &cp);
        bool unk = false;
        int rc = k ? piece_is_unk(tok, s, *w + i, k, &unk) : 0;
        if (rc)
            return rc;
        if (!k)
            return 0; /* not UTF-8: leave it whole */
        if (unk) {
            first = first == SIZE_MAX ? i : first;
            last = i + k;
        }
        i += k;
    }
    if (first != SIZE_MAX) {
        *w += first;
        *len = last - first;
    }
    return 0;
}

static int filter_word(void *ctx, const char *w, size_t len)
{
    unk_filter *f = ctx;
    bool unk;
    int rc = word_is_unk(f->tok, f->s, w, len, &unk);
    if (!rc && unk)
        rc = unk_span(f->tok, f->s, &w, &len);
    if (rc)
        return rc;
    return unk ? f->fn(f->ctx, w, len) : 0;
}

int ps_tokenizer_unk_words(const ps_tokenizer *tok, ps_tok_scratch *s, const char *text,
                           size_t len, ps_word_fn fn, void *ctx, ps_error *err)
{
    if (!tok || !s || !fn || (!text && len))
        return ps_error_set(err, PS_EINVAL, "ps_tokenizer_unk_words: bad arguments");
    if (tok->unk_id < 0)
        return 0; /* nothing can become [UNK] (encode fails instead) */
    unk_filter f = {tok, s, fn, ctx};
    s->n = 0;
    return ps_tokenizer_words(tok, s, text, len, filter_word, &f, err);
}

/* Writes the word with every letter lower-cased (full Unicode mapping) to
 * out, which has room for 12 bytes per input byte (an input code point of
 * >= 1 byte lowers to <= 3 code points of <= 4 bytes); returns the length,
 * or SIZE_MAX for invalid UTF-8. */
static size_t lowercase_into(const char *w, size_t len, char *out)
{
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        uint32_t cp, low[3];
        unsigned k = ps_tok_utf8_decode((const unsigned char *)w + i, len - i, &cp);
        if (!k)
            return SIZE_MAX;
        int m = ps_uni_lowercase(cp, low);
        for (int j = 0; j < m; j++)
            n += ps_utf8_encode(low[j], out + n);
        i += k;
    }
    return n;
}

static bool lower_fits(const ps_tokenizer *tok, ps_tok_scratch *s, const char *w, size_t len)
{
    char stack[512];
    size_t need = len * 12 + 4; /* 3 code points of 4 bytes per input byte, at worst */
    char *low = need <= sizeof stack ? stack : malloc(need);
    if (!low)
        return false;
    size_t n = lowercase_into(w, len, low);
    bool unk = true;
    if (n != SIZE_MAX && (n != len || memcmp(low, w, len)))
        word_is_unk(tok, s, low, n, &unk);
    if (low != stack)
        free(low);
    return !unk;
}

static bool html_escaped(const ps_tokenizer *tok, const char *w, size_t len)
{
    static const char *const ent[][2] = {{"<", "&lt;"}, {">", "&gt;"}, {"&", "&amp;"},
                                         {"\"", "&quot;"}, {"'", "&#39;"}};
    for (size_t i = 0; i < sizeof ent / sizeof ent[0]; i++)
        if (len == 1 && w[0] == ent[i][0][0])
            return ps_tok_vocab_find(tok->hf ? &tok->hf->model->vocab : &tok->vocab, ent[i][1],
                                     strlen(ent[i][1])) >= 0;
    return false;
}

static bool has_typographic(const char *w, size_t len)
{
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        unsigned k = ps_tok_utf8_decode((const unsigned char *)w + i, len - i, &cp);
        if (!k)
            return false;
        if (ps_is_typographic(cp))
            return true;
        i += k;
    }
    return false;
}

int ps_tokenizer_unk_hint(const ps_tokenizer *tok, ps_tok_scratch *s, const char *word, size_t len)
{
    if (!tok || !s || !word || !len)
        return PS_UNK_HINT_NONE;
    if (html_escaped(tok, word, len))
        return PS_UNK_HINT_HTML;
    if (!tok->lowercase && lower_fits(tok, s, word, len))
        return PS_UNK_HINT_LOWERCASE;
    if (has_typographic(word, len))
        return PS_UNK_HINT_RULES;
    return PS_UNK_HINT_NONE;
}
