/*
 * Replace: every match of a pattern becomes `content` (normalizers/
 * replace.rs). HF compiles both kinds of pattern into one Oniguruma regex:
 * {"Regex": r} as it is, {"String": s} escaped. A non-empty string is
 * matched here as a literal (the same leftmost, non-overlapping matches,
 * without a regex); the empty string is the empty regex, which matches at
 * every character boundary ("ab" -> "_a_b_"), so it is compiled as one.
 */
#include "tokenize/norm.h"

#include <stdlib.h>
#include <string.h>

typedef struct replace_norm {
    ps_tok_norm base;
    ps_tok_regex *re; /* NULL: the literal `lit` */
    char *lit, *content;
    size_t lit_len, content_len;
} replace_norm;

typedef struct replace_ctx {
    const replace_norm *r;
    const char *s;
    ps_tok_buf *out;
} replace_ctx;

static int put_stretch(void *ctx, size_t off, size_t len, bool is_match)
{
    replace_ctx *x = ctx;
    if (is_match)
        return ps_tok_buf_put(x->out, x->r->content, x->r->content_len);
    return ps_tok_buf_put(x->out, x->s + off, len);
}

/* Whether the literal lit[0..m) (m > 0) occurs in s[0..n). */
static bool contains(const char *s, size_t n, const char *lit, size_t m)
{
    for (size_t i = 0; n - i >= m;) {
        const char *hit = memchr(s + i, lit[0], n - i - m + 1);
        if (!hit)
            return false;
        if (!memcmp(hit, lit, m))
            return true;
        i = (size_t)(hit - s) + 1;
    }
    return false;
}

static int replace_apply(const ps_tok_norm *n, ps_tok_buf *io, ps_tok_buf *tmp)
{
    const replace_norm *r = (const replace_norm *)n;
    /* HF's find_matches gives empty text one non-matching stretch: an empty
     * regex does not put `content` into an empty string */
    if (!io->len)
        return PS_OK;
    if (!r->re && (io->len < r->lit_len ||
                   !contains(io->p, io->len, r->lit, r->lit_len)))
        return PS_OK; /* the common case: nothing to replace, nothing copied */
    tmp->len = 0;
    if (ps_tok_buf_reserve(tmp, io->len + 16))
        return PS_ENOMEM;
    replace_ctx x = {r, io->p, tmp};
    int rc = ps_tok_pattern_split(r->re, r->lit, r->lit_len, io->p, io->len, put_stretch, &x);
    if (rc)
        return rc;
    ps_norm_swap(io, tmp);
    return PS_OK;
}

static void replace_destroy(ps_tok_norm *n)
{
    replace_norm *r = (replace_norm *)n;
    ps_tok_regex_free(r->re);
    free(r->lit);
    free(r->content);
    free(r);
}

/* `pattern` is {"String": s} or {"Regex": r}: exactly one key. */
static int read_pattern(const ps_tok_load *c, json_t *p, const char *jpath, bool *is_regex,
                        const char **s, size_t *len)
{
    char where[256];
    ps_tok_jpath_key(where, sizeof where, jpath, "pattern");
    if (!json_is_object(p) || json_object_size(p) != 1)
        return ps_tok_load_fail(c, PS_EFORMAT, where,
                                "expected {\"String\": ...} or {\"Regex\": ...}");
    json_t *v = json_object_get(p, "String");
    *is_regex = v == NULL;
    if (!v && !(v = json_object_get(p, "Regex"))) {
        const char *key = json_object_iter_key(json_object_iter(p));
        return ps_tok_load_fail(c, PS_EFORMAT, where,
                                "unknown variant '%s', expected 'String' or 'Regex'", key);
    }
    if (!json_is_string(v)) {
        return ps_tok_load_fail_key(c, PS_EFORMAT, where, *is_regex ? "Regex" : "String",
                                    "expected a string");
    }
    *s = json_string_value(v);
    *len = json_string_length(v);
    return PS_OK;
}

int ps_norm_replace_load(const ps_tok_load *c, json_t *j, const char *jpath, ps_tok_norm **out)
{
    int rc = PS_OK;
    json_t *pat = ps_norm_required(c, j, jpath, "pattern", &rc);
    if (!pat)
        return rc;
    bool is_regex = false;
    const char *ps = NULL, *content = NULL;
    size_t plen = 0, clen = 0;
    if ((rc = read_pattern(c, pat, jpath, &is_regex, &ps, &plen)) ||
        (rc = ps_norm_required_string(c, j, jpath, "content", &content, &clen)))
        return rc;
    replace_norm *r = (replace_norm *)ps_norm_new(sizeof *r, replace_apply, replace_destroy);
    if (!r)
        return PS_ENOMEM;
    r->lit_len = plen;
    r->content_len = clen;
    if (!(r->lit = ps_strndup(ps, plen)) || !(r->content = ps_strndup(content, clen))) {
        replace_destroy(&r->base);
        return PS_ENOMEM;
    }
    if (is_regex || plen == 0) {
        char where[256];
        ps_tok_jpath_key(where, sizeof where, jpath, is_regex ? "pattern.Regex" : "pattern.String");
        if ((rc = ps_tok_regex_compile(c, where, ps, plen, &r->re))) {
            replace_destroy(&r->base);
            return rc;
        }
    }
    *out = &r->base;
    return PS_OK;
}
