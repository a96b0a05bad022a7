/*
 * Decoders of a tokenizer.json, as tokenizers 0.23.2's decode_chain: each
 * rewrites the list of token strings; decode joins what is left. Every
 * function mirrors one of HF's decoders (decoders/ in its source, and the Decoder impls of
 * ByteLevel, Metaspace and Replace) step for step, including the quirks:
 * Metaspace drops every replacement character of the first token, not only
 * a leading one; ByteFallback turns a run of <0xXX> tokens that is not
 * valid UTF-8 into one U+FFFD per byte; ByteLevel turns invalid UTF-8 into
 * U+FFFD per maximal invalid subpart (Rust's from_utf8_lossy).
 */
#include "tokenize/hf.h"
#include "tokenize/decoders_internal.h"
#include "tokenize/unicode.h"

#include <stdlib.h>
#include <string.h>

#define TOK(t, i) ((t)->pool.p + (t)->v[i].off)
#define TLEN(t, i) ((t)->v[i].len)

static void swap(ps_tok_pieces *a, ps_tok_pieces *b)
{
    ps_tok_pieces x = *a;
    *a = *b;
    *b = x;
}

static const char *find(const char *s, size_t n, const char *pat, size_t pn)
{
    for (size_t i = 0; i + pn <= n; i++) {
        const char *h = memchr(s + i, pat[0], n - i - pn + 1);
        if (!h)
            return NULL;
        if (!memcmp(h, pat, pn))
            return h;
        i = (size_t)(h - s);
    }
    return NULL;
}

/* Rust's str::replace: every non-overlapping occurrence from the left; an
 * empty pattern matches before every character and at the end. */
static int rust_replace(ps_tok_buf *o, const char *s, size_t n, const char *pat, size_t pn,
                        const char *rep, size_t rn)
{
    size_t i = 0;
    if (!pn) {
        while (i < n) {
            size_t l = 1;
            while (i + l < n && ((unsigned char)s[i + l] & 0xC0) == 0x80)
                l++;
            if (ps_tok_buf_put(o, rep, rn) || ps_tok_buf_put(o, s + i, l))
                return PS_ENOMEM;
            i += l;
        }
        return ps_tok_buf_put(o, rep, rn);
    }
    while (i < n) {
        const char *hit = find(s + i, n - i, pat, pn);
        size_t upto = hit ? (size_t)(hit - s) : n;
        if (ps_tok_buf_put(o, s + i, upto - i))
            return PS_ENOMEM;
        if (!hit)
            break;
        if (ps_tok_buf_put(o, rep, rn))
            return PS_ENOMEM;
        i = upto + pn;
    }
    return PS_OK;
}

/* Length of the maximal prefix of a valid UTF-8 sequence at s[0..n) that
 * is not a whole one (>= 1): what Rust's from_utf8_lossy replaces by one
 * U+FFFD. */
static size_t invalid_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t need;
    unsigned lo = 0x80, hi = 0xBF; /* range of the second byte */
    if (c >= 0xC2 && c <= 0xDF)
        need = 2;
    else if (c >= 0xE0 && c <= 0xEF)
        need = 3, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
    else if (c >= 0xF0 && c <= 0xF4)
        need = 4, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
    else
        return 1;
    size_t i = 1;
    for (; i < need && i < n; i++) {
        unsigned b = s[i];
        if (b < (i == 1 ? lo : 0x80) || b > (i == 1 ? hi : 0xBF))
            break;
    }
    return i;
}

static int put_lossy(ps_tok_buf *o, const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        uint32_t cp;
        unsigned l = ps_tok_utf8_decode(s + i, n - i, &cp);
        if (l) {
            if (ps_tok_buf_put(o, s + i, l))
                return PS_ENOMEM;
            i += l;
        } else {
            if (ps_tok_buf_put_cp(o, 0xFFFD))
                return PS_ENOMEM;
            i += invalid_len(s + i, n - i);
        }
    }
    return PS_OK;
}

static bool valid_utf8(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        unsigned l = ps_tok_utf8_decode(s + i, n - i, &cp);
        if (!l)
            return false;
        i += l;
    }
    return true;
}

/* ByteLevel: each token's characters back to bytes (a token with a
 * character outside the alphabet keeps its own bytes), all as one string. */
static int chain_bytelevel(ps_tok_pieces *t, ps_tok_pieces *tmp, ps_tok_buf *w)
{
    ps_tok_buf bytes = {0};
    int rc = PS_OK;
    for (size_t i = 0; i < t->n && !rc; i++) {
        const unsigned char *s = (const unsigned char *)TOK(t, i);
        size_t n = TLEN(t, i), mark = bytes.len;
        for (size_t k = 0; k < n && !rc;) {
            uint32_t cp = 0;
            unsigned l = ps_tok_utf8_decode(s + k, n - k, &cp);
            int b = l ? ps_tok_bytelevel_byte(cp) : -1;
            if (b < 0) { /* not all in the alphabet: the token as it is */
                bytes.len = mark;
                rc = ps_tok_buf_put(&bytes, s, n);
                break;
            }
            unsigned char ub = (unsigned char)b;
            rc = ps_tok_buf_put(&bytes, &ub, 1);
            k += l;
        }
    }
    w->len = 0;
    if (!rc)
        rc = put_lossy(w, (const unsigned char *)bytes.p, bytes.len);
    ps_tok_buf_free(&bytes);
    if (!rc)
        rc = ps_tok_pieces_push(tmp, w->p ? w->p : "", w->len, false);
    return rc;
}

/* A finished run of <0xXX> bytes: the string, or U+FFFD per byte. */
static int flush_bytes(ps_tok_pieces *tmp, ps_tok_buf *run)
{
    int rc = PS_OK;
    if (!run->len)
        return rc;
    if (valid_utf8((const unsigned char *)run->p, run->len)) {
        rc = ps_tok_pieces_push(tmp, run->p, run->len, false);
    } else {
        for (size_t i = 0; i < run->len && !rc; i++)
            rc = ps_tok_pieces_push(tmp, "\xEF\xBF\xBD", 3, false);
    }
    run->len = 0;
    return rc;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* "<0xXX>": Rust's u8::from_str_radix(XX, 16), which takes a '+' sign. */
static int byte_token(const char *s, size_t n)
{
    if (n != 6 || memcmp(s, "<0x", 3) || s[5] != '>')
        return -1;
    if (s[3] == '+')
        return hexval(s[4]);
    int h = hexval(s[3]), l = hexval(s[4]);
    return h < 0 || l < 0 ? -1 : h * 16 + l;
}

static int chain_bytefallback(ps_tok_pieces *t, ps_tok_pieces *tmp, ps_tok_buf *run)
{
    int rc = PS_OK;
    run->len = 0;
    for (size_t i = 0; i < t->n && !rc; i++) {
        int b = byte_token(TOK(t, i), TLEN(t, i));
        if (b >= 0) {
            unsigned char ub = (unsigned char)b;
            rc = ps_tok_buf_put(run, &ub, 1);
            continue;
        }
        if (!(rc = flush_bytes(tmp, run)))
            rc = ps_tok_pieces_push(tmp, TOK(t, i), TLEN(t, i), false);
    }
    return rc ? rc : flush_bytes(tmp, run);
}

static int chain_fuse(ps_tok_pieces *t, ps_tok_pieces *tmp, ps_tok_buf *w)
{
    w->len = 0;
    for (size_t i = 0; i < t->n; i++)
        if (ps_tok_buf_put(w, TOK(t, i), TLEN(t, i)))
            return PS_ENOMEM;
    return ps_tok_pieces_push(tmp, w->p ? w->p : "", w->len, false);
}

/* Strip: up to `start` leading and `stop` trailing `ch` characters. Where
 * HF's loop indexes past the token or its cut crosses over, HF panics: the
 * decode fails with PS_EINVAL. */
static int strip_one(const ps_tok_dec *d, const char *s, size_t n, size_t *from, size_t *to)
{
    size_t nchar = 0, start_cut = 0, stop_cut;
    for (size_t i = 0; i < n; i++)
        nchar += ((unsigned char)s[i] & 0xC0) != 0x80;
    size_t b = 0, k = 0;
    *from = 0;
    for (; k < nchar && k < d->start; k++) {
        uint32_t cp;
        unsigned l = ps_tok_utf8_decode((const unsigned char *)s + b, n - b, &cp);
        if (!l || cp != d->ch)
            break;
        b += l;
        start_cut = k + 1;
        *from = b;
    }
    stop_cut = nchar;
    *to = n;
    size_t e = n;
    for (uint64_t i = 0; i < d->stop; i++) {
        if (i >= nchar)
            return PS_EINVAL; /* HF: index out of bounds */
        size_t cb = e - 1;
        while (cb > 0 && ((unsigned char)s[cb] & 0xC0) == 0x80)
            cb--;
        uint32_t cp = 0;
        ps_tok_utf8_decode((const unsigned char *)s + cb, e - cb, &cp);
        if (cp != d->ch)
            break;
        stop_cut = nchar - (size_t)i - 1;
        *to = e = cb;
    }
    return start_cut > stop_cut ? PS_EINVAL : PS_OK; /* HF: slice index panic */
}

static int chain_strip(const ps_tok_dec *d, ps_tok_pieces *t, ps_tok_pieces *tmp)
{
    for (size_t i = 0; i < t->n; i++) {
        size_t from, to;
        int rc = strip_one(d, TOK(t, i), TLEN(t, i), &from, &to);
        if (rc || (rc = ps_tok_pieces_push(tmp, TOK(t, i) + from, to - from, false)))
            return rc;
    }
    return PS_OK;
}

static int chain_metaspace(const ps_tok_dec *d, ps_tok_pieces *t, ps_tok_pieces *tmp,
                           ps_tok_buf *w)
{
    for (size_t i = 0; i < t->n; i++) {
        const unsigned char *s = (const unsigned char *)TOK(t, i);
        size_t n = TLEN(t, i);
        bool drop = i == 0 && d->prepend != PS_DEC_PREPEND_NEVER;
        w->len = 0;
        for (size_t k = 0; k < n;) {
            uint32_t cp = 0;
            unsigned l = ps_tok_utf8_decode(s + k, n - k, &cp);
            if (!l)
                l = 1;
            int rc = PS_OK;
            if (cp != d->ch)
                rc = ps_tok_buf_put(w, s + k, l);
            else if (!drop)
                rc = ps_tok_buf_put(w, " ", 1);
            if (rc)
                return rc;
            k += l;
        }
        if (ps_tok_pieces_push(tmp, w->p ? w->p : "", w->len, false))
            return PS_ENOMEM;
    }
    return PS_OK;
}

typedef struct replace_ctx {
    const ps_tok_dec *d;
    const char *s;
    ps_tok_buf *w;
} replace_ctx;

static int replace_stretch(void *ctx, size_t off, size_t len, bool is_match)
{
    replace_ctx *r = ctx;
    if (is_match)
        return ps_tok_buf_put(r->w, r->d->s2, r->d->n2);
    return ps_tok_buf_put(r->w, r->s + off, len);
}

static int chain_replace(const ps_tok_dec *d, ps_tok_pieces *t, ps_tok_pieces *tmp,
                         ps_tok_buf *w)
{
    for (size_t i = 0; i < t->n; i++) {
        w->len = 0;
        replace_ctx r = {d, TOK(t, i), w};
        int rc = PS_OK;
        if (TLEN(t, i)) /* HF: an empty token stays empty, whatever the pattern */
            rc = ps_tok_pattern_split(d->re, d->s1, d->n1, TOK(t, i), TLEN(t, i),
                                      replace_stretch, &r);
        if (rc || (rc = ps_tok_pieces_push(tmp, w->p ? w->p : "", w->len, false)))
            return rc;
    }
    return PS_OK;
}

/* HF's wordpiece::cleanup: these replacements, in this order. */
static int cleanup(ps_tok_buf *w, ps_tok_buf *x)
{
    static const char *const pairs[][2] = {
        {" .", "."},   {" ?", "?"},     {" !", "!"},     {" ,", ","},
        {" ' ", "'"},  {" n't", "n't"}, {" 'm", "'m"},   {" do not", " don't"},
        {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"},
    };
    for (size_t k = 0; k < sizeof pairs / sizeof *pairs; k++) {
        x->len = 0;
        if (rust_replace(x, w->p ? w->p : "", w->len, pairs[k][0], strlen(pairs[k][0]),
                         pairs[k][1], strlen(pairs[k][1])))
            return PS_ENOMEM;
        ps_tok_buf t = *w;
        *w = *x;
        *x = t;
    }
    return PS_OK;
}

static int chain_wordpiece(const ps_tok_dec *d, ps_tok_pieces *t, ps_tok_pieces *tmp,
                           ps_tok_buf *w, ps_tok_buf *x)
{
    for (size_t i = 0; i < t->n; i++) {
        const char *s = TOK(t, i);
        size_t n = TLEN(t, i);
        w->len = 0;
        int rc = PS_OK;
        if (i && n >= d->n1 && !memcmp(s, d->s1, d->n1))
            rc = ps_tok_buf_put(w, s + d->n1, n - d->n1);
        else if (i)
            rc = ps_tok_buf_put(w, " ", 1) ? PS_ENOMEM : ps_tok_buf_put(w, s, n);
        else
            rc = ps_tok_buf_put(w, s, n);
        if (!rc && d->cleanup)
            rc = cleanup(w, x);
        if (rc || (rc = ps_tok_pieces_push(tmp, w->p ? w->p : "", w->len, false)))
            return rc;
    }
    return PS_OK;
}

static int chain_bpe(const ps_tok_dec *d, ps_tok_pieces *t, ps_tok_pieces *tmp, ps_tok_buf *w)
{
    for (size_t i = 0; i < t->n; i++) {
        const char *rep = i + 1 == t->n ? "" : " ";
        w->len = 0;
        if (rust_replace(w, TOK(t, i), TLEN(t, i), d->s1, d->n1, rep, strlen(rep)) ||
            ps_tok_pieces_push(tmp, w->p ? w->p : "", w->len, false))
            return PS_ENOMEM;
    }
    return PS_OK;
}

static int chain_ctc(const ps_tok_dec *d, ps_tok_pieces *t, ps_tok_pieces *tmp, ps_tok_buf *w,
                     ps_tok_buf *x)
{
    for (size_t i = 0; i < t->n; i++) {
        if (i && TLEN(t, i) == TLEN(t, i - 1) && !memcmp(TOK(t, i), TOK(t, i - 1), TLEN(t, i)))
            continue; /* itertools' dedup: runs of equal tokens count once */
        w->len = 0;
        if (rust_replace(w, TOK(t, i), TLEN(t, i), d->s1, d->n1, "", 0))
            return PS_ENOMEM;
        if (d->cleanup) {
            if (cleanup(w, x))
                return PS_ENOMEM;
            x->len = 0;
            if (rust_replace(x, w->p ? w->p : "", w->len, d->s2, d->n2, " ", 1))
                return PS_ENOMEM;
            ps_tok_buf s = *w;
            *w = *x;
            *x = s;
        }
        if (w->len && ps_tok_pieces_push(tmp, w->p, w->len, false))
            return PS_ENOMEM;
    }
    return PS_OK;
}

static int chain_one(const ps_tok_dec *d, ps_tok_pieces *t, ps_tok_pieces *tmp, ps_tok_buf *w,
                     ps_tok_buf *x)
{
    switch (d->kind) {
    case PS_DEC_BYTELEVEL:
        return chain_bytelevel(t, tmp, w);
    case PS_DEC_METASPACE:
        return chain_metaspace(d, t, tmp, w);
    case PS_DEC_BYTEFALLBACK:
        return chain_bytefallback(t, tmp, w);
    case PS_DEC_FUSE:
        return chain_fuse(t, tmp, w);
    case PS_DEC_STRIP:
        return chain_strip(d, t, tmp);
    case PS_DEC_REPLACE:
        return chain_replace(d, t, tmp, w);
    case PS_DEC_WORDPIECE:
        return chain_wordpiece(d, t, tmp, w, x);
    case PS_DEC_BPE:
        return chain_bpe(d, t, tmp, w);
    case PS_DEC_CTC:
        return chain_ctc(d, t, tmp, w, x);
    default:
        return PS_EINVAL;
    }
}

static int chain_rec(const ps_tok_dec *d, ps_tok_pieces *t, ps_tok_pieces *tmp, ps_tok_buf *w,
                     ps_tok_buf *x)
{
    if (d->kind == PS_DEC_SEQUENCE) {
        for (size_t k = 0; k < d->n_kids; k++) {
            int rc = chain_rec(d->kids[k], t, tmp, w, x);
            if (rc)
                return rc;
        }
        return PS_OK;
    }
    ps_tok_pieces_clear(tmp);
    int rc = chain_one(d, t, tmp, w, x);
    if (!rc)
        swap(t, tmp);
    return rc;
}

int ps_tok_dec_chain(const ps_tok_decoder *d, ps_tok_pieces *toks, ps_tok_pieces *tmp)
{
    ps_tok_buf w = {0}, x = {0};
    int rc = chain_rec((const ps_tok_dec *)d, toks, tmp, &w, &x);
    ps_tok_buf_free(&w);
    ps_tok_buf_free(&x);
    return rc;
}

int ps_tok_decode(const ps_tok_decoder *d, ps_tok_pieces *toks, ps_tok_pieces *tmp,
                  ps_tok_buf *out)
{
    out->len = 0;
    int rc = d ? d->chain(d, toks, tmp) : PS_OK;
    for (size_t i = 0; i < toks->n && !rc; i++) {
        if (!d && i && ps_tok_buf_put(out, " ", 1)) /* HF without a decoder: join(" ") */
            return PS_ENOMEM;
        rc = ps_tok_buf_put(out, TOK(toks, i), TLEN(toks, i));
    }
    if (!rc && ps_tok_buf_reserve(out, 0) == PS_OK)
        out->p[out->len] = '\0';
    return rc;
}
