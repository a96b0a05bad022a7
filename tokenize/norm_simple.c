/*
 * The character-level normalizers of tokenizer.json: Lowercase,
 * StripAccents, Nmt, ByteLevel, Strip, Prepend and Replace, each as
 * tokenizers 0.23.2 applies it (normalizers/{utils,strip,unicode,
 * byte_level,prepend,replace}.rs). Each leaves the bytes it cannot change
 * (an ASCII prefix, usually the whole text) where they are and rebuilds the
 * rest in tmp, then swaps tmp and io.
 */
#include "tokenize/norm.h"

#include <stdlib.h>
#include <string.h>

int ps_norm_map_chars(ps_tok_buf *io, ps_tok_buf *tmp, size_t from, ps_norm_char_fn fn,
                      const void *ctx)
{
    const unsigned char *s = (const unsigned char *)io->p;
    size_t n = io->len;
    tmp->len = 0;
    if (ps_tok_buf_reserve(tmp, n + 16) || ps_tok_buf_put(tmp, s, from))
        return PS_ENOMEM;
    for (size_t i = from; i < n;) {
        uint32_t cp;
        unsigned len = ps_tok_utf8_decode(s + i, n - i, &cp);
        if (!len) { /* invalid UTF-8 (a broken promise): the byte stays */
            if (ps_tok_buf_put(tmp, s + i, 1))
                return PS_ENOMEM;
            i++;
            continue;
        }
        int rc = fn(ctx, cp, tmp);
        if (rc)
            return rc;
        i += len;
    }
    ps_norm_swap(io, tmp);
    return PS_OK;
}

size_t ps_norm_ascii_prefix(const ps_tok_buf *io)
{
    size_t i = 0;
    while (i < io->len && (unsigned char)io->p[i] < 0x80)
        i++;
    return i;
}

static void plain_destroy(ps_tok_norm *n) { free(n); }

static int plain_new(int (*apply)(const ps_tok_norm *, ps_tok_buf *, ps_tok_buf *),
                     ps_tok_norm **out)
{
    ps_tok_norm *n = calloc(1, sizeof *n);
    if (!n)
        return PS_ENOMEM;
    n->apply = apply;
    n->destroy = plain_destroy;
    *out = n;
    return PS_OK;
}

/* ---- Lowercase: Rust's char::to_lowercase, character by character ----- */

int ps_norm_put_lower(ps_tok_buf *out, uint32_t cp)
{
    uint32_t low[3];
    int k = ps_uni_lowercase(cp, low);
    for (int i = 0; i < k; i++)
        if (ps_tok_buf_put_cp(out, low[i]))
            return PS_ENOMEM;
    return PS_OK;
}

static int lower_char(const void *ctx, uint32_t cp, ps_tok_buf *out)
{
    (void)ctx;
    return ps_norm_put_lower(out, cp);
}

static int lowercase_apply(const ps_tok_norm *n, ps_tok_buf *io, ps_tok_buf *tmp)
{
    (void)n;
    size_t i = ps_norm_ascii_prefix(io);
    for (size_t k = 0; k < i; k++)
        if (io->p[k] >= 'A' && io->p[k] <= 'Z')
            io->p[k] = (char)(io->p[k] + 32);
    return i == io->len ? PS_OK : ps_norm_map_chars(io, tmp, i, lower_char, NULL);
}

int ps_norm_lowercase_load(ps_tok_norm **out) { return plain_new(lowercase_apply, out); }

/* ---- StripAccents: drops combining marks (no decomposition first) ----- */

static int strip_mark_char(const void *ctx, uint32_t cp, ps_tok_buf *out)
{
    (void)ctx;
    return ps_uni_is_combining_mark(cp) ? PS_OK : ps_tok_buf_put_cp(out, cp);
}

static int strip_accents_apply(const ps_tok_norm *n, ps_tok_buf *io, ps_tok_buf *tmp)
{
    (void)n;
    size_t i = ps_norm_ascii_prefix(io);
    return i == io->len ? PS_OK : ps_norm_map_chars(io, tmp, i, strip_mark_char, NULL);
}

int ps_norm_strip_accents_load(ps_tok_norm **out) { return plain_new(strip_accents_apply, out); }

/* ---- Nmt: drops some controls, maps odd spaces to ' ' ------------------ */

static bool nmt_drops(uint32_t cp)
{
    return (cp >= 0x01 && cp <= 0x08) || cp == 0x0B || (cp >= 0x0E && cp <= 0x1F) ||
           cp == 0x7F || cp == 0x8F || cp == 0x9F;
}

static bool nmt_spaces(uint32_t cp)
{
    return cp == 0x09 || cp == 0x0A || cp == 0x0C || cp == 0x0D || cp == 0x1680 ||
           (cp >= 0x200B && cp <= 0x200F) || cp == 0x2028 || cp == 0x2029 || cp == 0x2581 ||
           cp == 0xFEFF || cp == 0xFFFD;
}

static int nmt_char(const void *ctx, uint32_t cp, ps_tok_buf *out)
{
    (void)ctx;
    if (nmt_drops(cp))
        return PS_OK;
    return ps_tok_buf_put_cp(out, nmt_spaces(cp) ? ' ' : cp);
}

static int nmt_apply(const ps_tok_norm *n, ps_tok_buf *io, ps_tok_buf *tmp)
{
    (void)n;
    size_t i = 0; /* printable ASCII (and NUL, which Nmt keeps) stays */
    while (i < io->len) {
        unsigned char b = (unsigned char)io->p[i];
        if (b >= 0x80 || (b != 0 && b < 0x20) || b == 0x7F)
            break;
        i++;
    }
    return i == io->len ? PS_OK : ps_norm_map_chars(io, tmp, i, nmt_char, NULL);
}

int ps_norm_nmt_load(ps_tok_norm **out) { return plain_new(nmt_apply, out); }

/* ---- ByteLevel: every UTF-8 byte becomes its byte-level character ------ */

static int bytelevel_apply(const ps_tok_norm *n, ps_tok_buf *io, ps_tok_buf *tmp)
{
    (void)n;
    size_t i = 0; /* '!'..'~' stand for themselves */
    while (i < io->len && io->p[i] >= '!' && io->p[i] <= '~')
        i++;
    if (i == io->len)
        return PS_OK;
    tmp->len = 0;
    if (ps_tok_buf_reserve(tmp, i + (io->len - i) * 2) || ps_tok_buf_put(tmp, io->p, i))
        return PS_ENOMEM;
    for (; i < io->len; i++)
        tmp->len += ps_utf8_encode(ps_tok_bytelevel_char((uint8_t)io->p[i]), tmp->p + tmp->len);
    ps_norm_swap(io, tmp);
    return PS_OK;
}

int ps_norm_bytelevel_load(ps_tok_norm **out) { return plain_new(bytelevel_apply, out); }

/* ---- Strip: Rust's char::is_whitespace off either end ------------------ */

typedef struct strip_norm {
    ps_tok_norm base;
    bool left, right;
} strip_norm;

static int strip_apply(const ps_tok_norm *n, ps_tok_buf *io, ps_tok_buf *tmp)
{
    const strip_norm *st = (const strip_norm *)n;
    (void)tmp;
    const unsigned char *s = (const unsigned char *)io->p;
    size_t b = 0, e = io->len;
    uint32_t cp;
    unsigned len;
    while (st->left && b < e && (len = ps_tok_utf8_decode(s + b, e - b, &cp)) &&
           ps_is_white_space(cp))
        b += len;
    while (st->right && e > b) {
        size_t k = e - 1; /* back to the first byte of the last character */
        while (k > b && (s[k] & 0xC0) == 0x80 && e - k < 4)
            k--;
        if (ps_tok_utf8_decode(s + k, e - k, &cp) != e - k || !ps_is_white_space(cp))
            break;
        e = k;
    }
    if (b)
        memmove(io->p, io->p + b, e - b);
    io->len = e - b;
    return PS_OK;
}

int ps_norm_strip_load(const ps_tok_load *c, json_t *j, const char *jpath, ps_tok_norm **out)
{
    bool left, right;
    int rc = ps_norm_required_bool(c, j, jpath, "strip_left", &left);
    if (!rc)
        rc = ps_norm_required_bool(c, j, jpath, "strip_right", &right);
    if (rc)
        return rc;
    strip_norm *st = (strip_norm *)ps_norm_new(sizeof *st, strip_apply, plain_destroy);
    if (!st)
        return PS_ENOMEM;
    st->left = left;
    st->right = right;
    *out = &st->base;
    return PS_OK;
}

/* ---- Prepend: the string before a non-empty text ----------------------- */

typedef struct prepend_norm {
    ps_tok_norm base;
    size_t len;
    char text[]; /* NUL-terminated */
} prepend_norm;

static int prepend_apply(const ps_tok_norm *n, ps_tok_buf *io, ps_tok_buf *tmp)
{
    const prepend_norm *pn = (const prepend_norm *)n;
    (void)tmp;
    if (!io->len || !pn->len)
        return PS_OK;
    if (ps_tok_buf_reserve(io, pn->len))
        return PS_ENOMEM;
    memmove(io->p + pn->len, io->p, io->len);
    memcpy(io->p, pn->text, pn->len);
    io->len += pn->len;
    return PS_OK;
}

int ps_norm_prepend_load(const ps_tok_load *c, json_t *j, const char *jpath, ps_tok_norm **out)
{
    const char *s;
    size_t len;
    int rc = ps_norm_required_string(c, j, jpath, "prepend", &s, &len);
    if (rc)
        return rc;
    prepend_norm *pn =
        (prepend_norm *)ps_norm_new(sizeof *pn + len + 1, prepend_apply, plain_destroy);
    if (!pn)
        return PS_ENOMEM;
    pn->len = len;
    memcpy(pn->text, s, len);
    *out = &pn->base;
    return PS_OK;
}
