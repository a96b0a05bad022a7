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

static int clean_char(const void *ctx, uint32_t cp, ps_tok_buf *out)
{
    const bert_norm *b = ctx;
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
    if (b->strip && ps_uni_is_nonspacing_mark(cp))
        return PS_OK;
    if (!b->lower)
        return ps_tok_buf_put_cp(out, cp);
    uint32_t low[3];
    int k = ps_uni_lowercase(cp, low);
    for (int i = 0; i < k; i++)
        if (ps_tok_buf_put_cp(out, low[i]))
            return PS_ENOMEM;
    return PS_OK;
}

/* The whole normalizer on ASCII text, in place. */
static void bert_ascii(const bert_norm *b, ps_tok_buf *io)
{
    size_t w = 0;
    for (size_t i = 0; i < io->len; i++) {
        char c = io->p[i];
        if (b->clean) {
            if (c == '\t' || c == '\n' || c == '\r')
                c = ' ';
            else if ((unsigned char)c < 0x20 || c == 0x7F)
                continue; /* NUL and the C0 controls (\v and \f too: dropped before mapping) */
        }
        if (b->lower && c >= 'A' && c <= 'Z')
            c = (char)(c + 32);
        io->p[w++] = c;
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
    bert_norm *b = calloc(1, sizeof *b);
    if (!b)
        return PS_ENOMEM;
    b->base.apply = bert_apply;
    b->base.destroy = bert_destroy;
    b->clean = clean;
    b->chinese = chinese;
    b->strip = strip;
    b->lower = lower;
    *out = &b->base;
    return PS_OK;
}
