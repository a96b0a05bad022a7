/*
 * BertNormalizer and BertPreTokenizer fused into one pass over the text.
 *
 * HF runs clean_text, Chinese padding, NFD + mark stripping and lowercasing
 * over the whole string, then splits on whitespace (removed) and
 * punctuation (kept as one-character words). Every step but NFD's
 * canonical reordering maps one character to characters on its own, so we
 * apply the whole chain per input character and build words as we go:
 * ASCII by two 128-entry tables, everything else through unicode.c.
 * Canonical reordering only matters for combining marks that survive
 * stripping; those wait in s->pend until the next starter.
 */
#include "tokenize/tokenize.h"
#include "tokenize/unicode.h"

#include <stdlib.h>
#include <string.h>

static int grow_word(ps_tok_scratch *s, size_t extra)
{
    size_t need;
    if (!ps_size_add(s->word_len, extra, &need))
        return PS_ENOMEM;
    if (need <= s->word_cap)
        return PS_OK;
    size_t cap = s->word_cap ? s->word_cap : 256;
    while (cap < need)
        cap *= 2;
    char *w = realloc(s->word, cap);
    if (!w)
        return PS_ENOMEM;
    s->word = w;
    s->word_cap = cap;
    return PS_OK;
}

static int deliver(const ps_tokenizer *tok, ps_tok_scratch *s, const char *w, size_t len,
                   size_t chars)
{
    if (s->word_fn) {
        int rc = s->word_fn(s->word_ctx, w, len);
        if (rc)
            s->word_rc = rc;
        return rc;
    }
    int rc = ps_tok_wordpiece(tok, s, w, len, chars);
    if (!rc && s->stop_at && s->n - s->seq_start >= s->stop_at) {
        s->stopped = true;
        return 1; /* unwinds the walk; ps_tok_run turns it into success */
    }
    return rc;
}

static int flush_pending(const ps_tokenizer *tok, ps_tok_scratch *s);

static int end_word(const ps_tokenizer *tok, ps_tok_scratch *s)
{
    if (s->pend_n) {
        int rc = flush_pending(tok, s);
        if (rc)
            return rc;
    }
    if (!s->word_len)
        return PS_OK;
    int rc = deliver(tok, s, s->word, s->word_len, s->word_chars);
    s->word_len = 0;
    s->word_chars = 0;
    return rc;
}

static int append_cp(ps_tok_scratch *s, uint32_t cp)
{
    if (s->word_cap - s->word_len < 4) {
        int rc = grow_word(s, 4);
        if (rc)
            return rc;
    }
    s->word_len += ps_utf8_encode(cp, s->word + s->word_len);
    s->word_chars++;
    return PS_OK;
}

/* A character out of the normalizer: lowercase it, then let the
 * pre-tokenizer decide whether it ends, joins or forms a word. */
static int emit_char(const ps_tokenizer *tok, ps_tok_scratch *s, uint32_t cp)
{
    uint32_t low[3];
    int n = 1;
    low[0] = cp;
    if (tok->lowercase)
        n = ps_uni_lowercase(cp, low);
    for (int i = 0; i < n; i++) {
        uint32_t c = low[i];
        int rc;
        if (ps_is_white_space(c)) {
            rc = end_word(tok, s);
        } else if (ps_uni_is_punctuation(c)) {
            if ((rc = end_word(tok, s)) == 0 && (rc = append_cp(s, c)) == 0)
                rc = end_word(tok, s);
        } else {
            rc = append_cp(s, c);
        }
        if (rc)
            return rc;
    }
    return PS_OK;
}

static int flush_pending(const ps_tokenizer *tok, ps_tok_scratch *s)
{
    size_t n = s->pend_n;
    s->pend_n = 0; /* emit_char never adds to the run, so the array is stable */
    for (size_t i = 0; i < n; i++) {
        int rc = emit_char(tok, s, s->pend[i].cp);
        if (rc)
            return rc;
    }
    return PS_OK;
}

/* Queues a surviving non-starter, keeping the run stably sorted by
 * combining class (NFD's canonical ordering). */
static int pend_push(ps_tok_scratch *s, uint32_t cp, int ccc)
{
    if (s->pend_n == s->pend_cap) {
        size_t cap = s->pend_cap ? s->pend_cap * 2 : 16;
        ps_tok_pending *p = realloc(s->pend, cap * sizeof *p);
        if (!p)
            return PS_ENOMEM;
        s->pend = p;
        s->pend_cap = cap;
    }
    size_t i = s->pend_n++;
    while (i > 0 && s->pend[i - 1].ccc > ccc) {
        s->pend[i] = s->pend[i - 1];
        i--;
    }
    s->pend[i] = (ps_tok_pending){cp, ccc};
    return PS_OK;
}

/* After clean_text and Chinese padding: NFD and mark stripping. */
static int decompose(const ps_tokenizer *tok, ps_tok_scratch *s, uint32_t cp)
{
    if (!tok->strip_accents)
        return emit_char(tok, s, cp);
    uint32_t d[4];
    int n = ps_uni_nfd(cp, d);
    for (int i = 0; i < n; i++) {
        int ccc = ps_uni_combining_class(d[i]);
        bool mark = ps_uni_is_nonspacing_mark(d[i]);
        int rc = PS_OK;
        if (ccc == 0) {
            if (s->pend_n)
                rc = flush_pending(tok, s);
            if (!rc && !mark)
                rc = emit_char(tok, s, d[i]);
        } else if (!mark) {
            rc = pend_push(s, d[i], ccc);
        }
        /* a stripped non-starter leaves the order of the others as it was */
        if (rc)
            return rc;
    }
    return PS_OK;
}

static int slow_char(const ps_tokenizer *tok, ps_tok_scratch *s, uint32_t cp)
{
    if (tok->clean) {
        if (cp == 0xFFFD || ps_uni_is_control(cp))
            return PS_OK;
        if (ps_is_white_space(cp))
            return end_word(tok, s);
    }
    if (tok->chinese && ps_uni_is_chinese(cp)) {
        int rc = end_word(tok, s);
        if (!rc)
            rc = decompose(tok, s, cp);
        if (!rc)
            rc = end_word(tok, s);
        return rc;
    }
    return decompose(tok, s, cp);
}

/* Longest special token at p[0..len), or NULL. */
static const ps_tok_special *match_special(const ps_tokenizer *tok, const unsigned char *p,
                                           size_t len)
{
    const ps_tok_special *best = NULL;
    for (size_t k = 0; k < tok->n_specials; k++) {
        const ps_tok_special *sp = &tok->specials[k];
        if (sp->len <= len && (!best || sp->len > best->len) && !memcmp(p, sp->text, sp->len))
            best = sp;
    }
    return best;
}

/* A special token: its id (or, for ps_tokenizer_words, its text). */
static int emit_special(const ps_tokenizer *tok, ps_tok_scratch *s, const ps_tok_special *sp)
{
    (void)tok;
    if (s->word_fn) {
        int rc = s->word_fn(s->word_ctx, sp->text, sp->len);
        if (rc)
            s->word_rc = rc;
        return rc;
    }
    int rc = ps_tok_scratch_reserve(s, 1);
    if (rc)
        return rc;
    /* counts towards stop_at, but (as in HF) only a WordPiece'd word can
     * end the walk: a special token reaching the limit does not */
    s->ids[s->n++] = sp->id;
    return PS_OK;
}

static int utf8_error(ps_error *err, size_t at, int which)
{
    return ps_error_set(err, PS_EUTF8, "invalid UTF-8 at byte %zu of %s", at,
                        which == 2 ? "the second sequence" : "the text");
}

/* One stretch of text. With `specials`, special tokens that start with an
 * ASCII byte are matched here too (that byte's class carries a flag).
 * `base` is the stretch's offset in the caller's text, for messages. */
static int run_segment(const ps_tokenizer *tok, ps_tok_scratch *s, const unsigned char *p,
                       size_t len, size_t base, int which, bool specials, ps_error *err)
{
    size_t i = 0;
    int rc = PS_OK;
    while (i < len) {
        unsigned c = p[i];
        if (c < 0x80) {
            unsigned cls = tok->ascii_class[c];
            if (PS_UNLIKELY(cls & PS_TOK_SPECIAL_START)) {
                const ps_tok_special *sp;
                if (specials && (sp = match_special(tok, p + i, len - i))) {
                    if ((rc = end_word(tok, s)) || (rc = emit_special(tok, s, sp)))
                        return rc;
                    i += sp->len;
                    continue;
                }
                cls &= ~(unsigned)PS_TOK_SPECIAL_START;
            }
            switch (cls) {
            case PS_TOK_WORD: {
                /* the common case: a run of ASCII word bytes, copied (and
                 * lowercased) in one tight loop */
                if (PS_UNLIKELY(s->pend_n) && (rc = flush_pending(tok, s)))
                    return rc;
                if (PS_UNLIKELY(s->word_cap - s->word_len < len - i) && (rc = grow_word(s, len - i)))
                    return rc;
                char *w = s->word + s->word_len;
                size_t start = i;
                do {
                    *w++ = (char)tok->ascii_map[p[i]];
                    i++;
                } while (i < len && p[i] < 0x80 && tok->ascii_class[p[i]] == PS_TOK_WORD);
                s->word_len += i - start;
                s->word_chars += i - start;
                continue;
            }
            case PS_TOK_SPACE:
                if ((rc = end_word(tok, s)))
                    return rc;
                break;
            case PS_TOK_PUNCT: {
                if ((rc = end_word(tok, s)))
                    return rc;
                char ch = (char)c;
                if ((rc = deliver(tok, s, &ch, 1, 1)))
                    return rc;
                break;
            }
            default: /* dropped control character */
                break;
            }
            i++;
            continue;
        }
        uint32_t cp;
        unsigned n = ps_tok_utf8_decode(p + i, len - i, &cp);
        if (!n)
            return utf8_error(err, base + i, which);
        if ((rc = slow_char(tok, s, cp)))
            return rc;
        i += n;
    }
    return end_word(tok, s);
}

int ps_tok_utf8_check(const char *text, size_t len, int which, ps_error *err)
{
    const unsigned char *p = (const unsigned char *)text;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        unsigned n = p[i] < 0x80 ? 1 : ps_tok_utf8_decode(p + i, len - i, &cp);
        if (!n)
            return utf8_error(err, i, which);
        i += n;
    }
    return PS_OK;
}

/* Gives errors raised below the error-reporting layer their message. */
static int fail_rc(const ps_tokenizer *tok, const ps_tok_scratch *s, int rc, ps_error *err)
{
    if (rc > 0 && s->stopped)
        return PS_OK;
    if (rc == PS_ENOMEM)
        return ps_error_set(err, rc, "out of memory while tokenizing");
    if (rc == PS_EINVAL && s->fail == PS_EINVAL)
        return ps_error_set(err, rc, "a word needs the unk token '%s', which the vocabulary lacks",
                            tok->unk);
    return rc;
}

int ps_tok_run(const ps_tokenizer *tok, ps_tok_scratch *s, const char *text, size_t len,
               int which, ps_error *err)
{
    const unsigned char *p = (const unsigned char *)text;
    s->word_len = s->word_chars = s->pend_n = 0;
    s->fail = 0;
    s->stopped = false;
    bool specials = tok->match_specials && tok->n_specials;
    int rc;
    if (!specials || tok->specials_ascii) { /* one pass, specials matched inline */
        rc = run_segment(tok, s, p, len, 0, which, specials, err);
    } else { /* a special starts with a non-ASCII byte: split first */
        size_t seg = 0, i = 0;
        rc = PS_OK;
        while (i < len && !rc) {
            const ps_tok_special *sp;
            if (!tok->special_first[p[i]] || !(sp = match_special(tok, p + i, len - i))) {
                i++;
                continue;
            }
            if (!(rc = run_segment(tok, s, p + seg, i - seg, seg, which, false, err)))
                rc = emit_special(tok, s, sp);
            i += sp->len;
            seg = i;
        }
        if (!rc)
            rc = run_segment(tok, s, p + seg, len - seg, seg, which, false, err);
    }
    /* after an early stop the rest must still be valid UTF-8, so that whether
     * a record is rejected does not depend on max_length */
    if (rc > 0 && s->stopped)
        return ps_tok_utf8_check((const char *)p, len, which, err);
    return rc ? fail_rc(tok, s, rc, err) : PS_OK;
}
