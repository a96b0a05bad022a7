/*
 * BertNormalizer as a standalone normalizer (normalizers/bert.rs), for
 * files whose pipeline is not exactly BERT's (those keep the fused path of
 * pretokenize.c). HF runs four whole-string passes in this order:
 * clean_text (drop U+0000, U+FFFD and controls, then whitespace -> ' '),
 * handle_chinese_chars (' ' around each CJK ideograph), strip_accents (NFD,
 * then drop nonspacing marks; null follows `lowercase`) and lowercase. The
 * first two are per character and run as one pass; NFD reorders marks, so
 * accents are a pass of their own; lowercasing joins the mark filter.
 * All-ASCII text takes one in-place pass (no ASCII character decomposes,
 * is a mark or a CJK ideograph).
 */
#include "tokenize/norm.h"

#include <stdlib.h>

typedef struct bert_norm {
    ps_tok_norm base;
    bool clean, chinese, strip, lower;
} bert_norm;

/* HF's is_whitespace: tab, newline, carriage return or White_Space. */
static bool bert_space(uint32_t cp) { return ps_is_white_space(cp); }

/* clean_text on an ASCII character (-1: dropped). */
static int ascii_clean(int c)
{
    if (c == '\t' || c == '\n' || c == '\r')
        return ' ';
    /* NUL and the other C0 controls (\v and \f too: dropped before mapping) */
    return c < 0x20 || c == 0x7F ? -1 : c;
}

/* One ASCII character through the whole normalizer (-1: dropped). */
static int ascii_char(const bert_norm *b, int c)
{
    if (b->clean && (c = ascii_clean(c)) < 0)
        return -1;
    return b->lower && c >= 'A' && c <= 'Z' ? c + 32 : c;
}

static int clean_char(const void *ctx, uint32_t cp, ps_tok_buf *out)
{
    const bert_norm *b = ctx;
    if (cp < 0x80) { /* no ASCII character is CJK; lowercasing comes later */
        int c = b->clean ? ascii_clean((int)cp) : (int)cp;
        char ch = (char)c;
        return c < 0 ? PS_OK : ps_tok_buf_put(out, &ch, 1);
    }
    if (b->clean) {
        if (cp == 0 || cp == 0xFFFD || ps_uni_is_control(cp))
            return PS_OK;
        if (bert_space(cp))
            cp = ' ';
    }
    if (b->chinese && ps_uni_is_chinese(cp)) {
        char u[6] = {' '};
        unsigned n = ps_utf8_encode(cp, u + 1);
        u[n + 1] = ' ';
        return ps_tok_buf_put(out, u, n + 2);
    }
    return ps_tok_buf_put_cp(out, cp);
}

static int accent_lower_char(const void *ctx, uint32_t cp, ps_tok_buf *out)
{
    const bert_norm *b = ctx;
    if (cp < 0x80) { /* cleaned already: only the case can change */
        char ch = (char)(b->lower && cp >= 'A' && cp <= 'Z' ? cp + 32 : cp);
        return ps_tok_buf_put(out, &ch, 1);
    }
    if (b->strip && ps_uni_is_nonspacing_mark(cp))
        return PS_OK;
    return b->lower ? ps_norm_put_lower(out, cp) : ps_tok_buf_put_cp(out, cp);
}

/* The whole normalizer on ASCII text, in place. */
static void bert_ascii(const bert_norm *b, ps_tok_buf *io)
{
    size_t w = 0;
    for (size_t i = 0; i < io->len; i++) {
        int c = ascii_char(b, (unsigned char)io->p[i]);
        if (c >= 0)
            io->p[w++] = (char)c;
    }
    io->len = w;
}

static int bert_apply(const ps_tok_norm *n, ps_tok_buf *io, ps_tok_buf *tmp)
{
    const bert_norm *b = (const bert_norm *)n;
    if (ps_norm_ascii_prefix(io) == io->len) {
        bert_ascii(b, io);
        return PS_OK;
    }
    int rc = PS_OK;
    if (b->clean || b->chinese)
        rc = ps_norm_map_chars(io, tmp, 0, clean_char, b);
    if (!rc && b->strip)
        rc = ps_norm_nf_apply(PS_NF_D, io, tmp);
    if (!rc && (b->strip || b->lower))
        rc = ps_norm_map_chars(io, tmp, 0, accent_lower_char, b);
    return rc;
}

static void bert_destroy(ps_tok_norm *n) { free(n); }

int ps_norm_bert_load(const ps_tok_load *c, json_t *j, const char *jpath, ps_tok_norm **out)
{
    bool clean, chinese, lower, strip;
    int rc;
    if ((rc = ps_norm_required_bool(c, j, jpath, "clean_text", &clean)) ||
        (rc = ps_norm_required_bool(c, j, jpath, "handle_chinese_chars", &chinese)) ||
        (rc = ps_norm_required_bool(c, j, jpath, "lowercase", &lower)))
        return rc;
    strip = lower; /* strip_accents: null or absent follows lowercase */
    if (!json_is_null(json_object_get(j, "strip_accents")) &&
        (rc = ps_tok_json_bool(c, j, jpath, "strip_accents", &strip)))
        return rc;
    bert_norm *b = (bert_norm *)ps_norm_new(sizeof *b, bert_apply, bert_destroy);
    if (!b)
        return PS_ENOMEM;
    b->clean = clean;
    b->chinese = chinese;
    b->strip = strip;
    b->lower = lower;
    *out = &b->base;
    return PS_OK;
}
