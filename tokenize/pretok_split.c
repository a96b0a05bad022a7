/*
 * The Split pre-tokenizer: a literal string or a regex, one of the five
 * behaviours, optionally inverted. The regexes of GPT-2, Llama-3 and Qwen2
 * (the pre-tokenizer of most decoder LLMs) go through the hand-written
 * scanners of pretok_scan.c, every other one through PCRE2.
 */
#include "tokenize/pretok.h"

#include <stdlib.h>
#include <string.h>

typedef struct split_pt {
    ps_tok_pretok base;
    ps_pretok_scan_kind scan; /* used instead of re when set */
    ps_tok_regex *re;         /* NULL: the literal lit */
    char *lit;
    size_t lit_len;
    ps_pretok_behavior behavior;
    bool invert;
} split_pt;

static void split_destroy(ps_tok_pretok *p)
{
    split_pt *q = (split_pt *)p;
    ps_tok_regex_free(q->re);
    free(q->lit);
    free(q);
}

/* The hot path (every GPT-2 / Llama-3 / Qwen2 model splits Isolated): the
 * text is copied into the pool once and each match points into it. */
static int scan_isolated(ps_pretok_scan_kind k, const char *s, size_t n, bool at_start,
                         ps_tok_pieces *out)
{
    if (ps_tok_buf_put(&out->pool, s, n))
        return PS_ENOMEM;
    size_t base = out->pool.len - n;
    for (size_t i = 0; i < n;) {
        size_t m = ps_pretok_scan_match(k, s, n, i);
        if (ps_pretok_push_ref(out, base + i, m, at_start && i == 0))
            return PS_ENOMEM;
        i += m;
    }
    return PS_OK;
}

static int split_split(const ps_tok_pretok *p, const char *s, size_t n, bool at_start,
                       ps_tok_pieces *out)
{
    const split_pt *q = (const split_pt *)p;
    if (!n)
        return PS_OK;
    if (q->scan && q->behavior == PS_PRETOK_ISOLATED)
        return scan_isolated(q->scan, s, n, at_start, out);
    ps_pretok_emit e;
    ps_pretok_emit_init(&e, out, s, at_start, q->behavior, q->invert);
    int rc = q->scan ? ps_pretok_scan_split(q->scan, s, n, ps_pretok_emit_stretch, &e)
                     : ps_tok_pattern_split(q->re, q->lit, q->lit_len, s, n,
                                            ps_pretok_emit_stretch, &e);
    return rc ? rc : ps_pretok_emit_end(&e);
}

int ps_pretok_split_new(const ps_tok_load *c, const char *jpath, const char *pattern, size_t len,
                        bool is_regex, ps_pretok_behavior behavior, bool invert, bool use_scanner,
                        ps_tok_pretok **out)
{
    split_pt *q = (split_pt *)ps_pretok_new(sizeof *q, split_split, split_destroy);
    if (!q)
        return ps_tok_load_fail(c, PS_ENOMEM, jpath, "out of memory");
    q->behavior = behavior;
    q->invert = invert;
    int rc = PS_OK;
    if (is_regex && use_scanner)
        q->scan = ps_pretok_scan_lookup(pattern, len);
    if (q->scan) {
        /* nothing to compile */
    } else if (is_regex || !len) {
        /* HF escapes a String pattern into a regex; the empty one then
         * matches the empty string everywhere (every character isolated),
         * unlike a literal search, so it goes through the regex engine. */
        rc = ps_tok_regex_compile(c, jpath, pattern, len, &q->re);
    } else if (!(q->lit = malloc(len))) {
        rc = ps_tok_load_fail(c, PS_ENOMEM, jpath, "out of memory");
    } else {
        memcpy(q->lit, pattern, len);
        q->lit_len = len;
    }
    if (rc) {
        split_destroy(&q->base);
        return rc;
    }
    *out = &q->base;
    return PS_OK;
}

int ps_pretok_split_load(const ps_tok_load *c, json_t *j, const char *jpath, ps_tok_pretok **out)
{
    char where[256];
    int rc;
    if ((rc = ps_pretok_require(c, j, jpath, "pattern")) ||
        (rc = ps_pretok_require(c, j, jpath, "invert")))
        return rc;
    ps_pretok_behavior behavior = PS_PRETOK_ISOLATED;
    bool invert = false;
    if ((rc = ps_pretok_behavior_parse(c, j, jpath, true, &behavior)) ||
        (rc = ps_tok_json_bool(c, j, jpath, "invert", &invert)))
        return rc;
    /* SplitPattern is an externally tagged enum: {"String": s} or {"Regex": r}. */
    json_t *pat = json_object_get(j, "pattern");
    ps_tok_jpath_key(where, sizeof where, jpath, "pattern");
    json_t *str = json_object_get(pat, "String"), *re = json_object_get(pat, "Regex");
    if (!json_is_object(pat) || json_object_size(pat) != 1 || (!str && !re))
        return ps_tok_load_fail(c, PS_EFORMAT, where,
                                "expected {\"String\": ...} or {\"Regex\": ...}");
    json_t *v = str ? str : re;
    if (!json_is_string(v)) {
        return ps_tok_load_fail_key(c, PS_EFORMAT, where, str ? "String" : "Regex",
                                    "expected a string");
    }
    return ps_pretok_split_new(c, where, json_string_value(v), json_string_length(v), re != NULL,
                               behavior, invert, true, out);
}
