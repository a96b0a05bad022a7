/*
 * The Metaspace pre-tokenizer (SentencePiece models: Llama-2, T5, ...):
 * every ' ' becomes the replacement character, one is prepended as
 * prepend_scheme says, and with `split` the text is cut before each
 * replacement character (MergedWithNext).
 */
#include "tokenize/pretok.h"

#include <stdlib.h>
#include <string.h>

typedef enum { PREPEND_ALWAYS, PREPEND_FIRST, PREPEND_NEVER } prepend_scheme;

typedef struct metaspace_pt {
    ps_tok_pretok base;
    char rep[4];
    size_t rep_len;
    prepend_scheme scheme;
    bool split;
} metaspace_pt;

static int ms_split(const ps_tok_pretok *p, const char *s, size_t n, bool at_start,
                    ps_tok_pieces *out)
{
    const metaspace_pt *q = (const metaspace_pt *)p;
    if (!n)
        return PS_OK; /* prepend() leaves an empty string empty */
    /* The rewritten text goes straight into the pool; the pieces point at it. */
    ps_tok_buf *pool = &out->pool;
    size_t rl = q->rep_len;
    if (n > (SIZE_MAX - rl) / rl || ps_tok_buf_reserve(pool, (n + 1) * rl))
        return PS_ENOMEM;
    size_t base = pool->len;
    char *w = pool->p + base;
    /* HF tests starts_with(replacement) after the spaces are replaced. */
    bool starts = s[0] == ' ' || (n >= rl && !memcmp(s, q->rep, rl));
    bool prefix = !starts && (q->scheme == PREPEND_ALWAYS ||
                              (q->scheme == PREPEND_FIRST && at_start));
    if (prefix) {
        memcpy(w, q->rep, rl);
        w += rl;
    }
    for (size_t i = 0; i < n; i++) {
        if (s[i] == ' ') {
            memcpy(w, q->rep, rl);
            w += rl;
        } else {
            *w++ = s[i];
        }
    }
    size_t len = (size_t)(w - (pool->p + base));
    pool->len += len;
    ps_pretok_emit e;
    ps_pretok_emit_init(&e, out, pool->p + base, at_start, PS_PRETOK_MERGED_NEXT, false);
    e.in_pool = true;
    e.base = base;
    e.start_upto = prefix ? rl : 0;
    if (!q->split)
        return ps_pretok_emit_stretch(&e, 0, len, false);
    /* A char pattern: each occurrence is a match of its own. */
    const char *t = pool->p + base;
    size_t prev = 0;
    for (size_t i = 0; i + rl <= len;) {
        const char *hit = memchr(t + i, q->rep[0], len - i);
        if (!hit)
            break;
        i = (size_t)(hit - t);
        if (i + rl > len || memcmp(hit, q->rep, rl)) {
            i++;
            continue;
        }
        int rc;
        if ((i > prev && (rc = ps_pretok_emit_stretch(&e, prev, i - prev, false))) ||
            (rc = ps_pretok_emit_stretch(&e, i, rl, true)))
            return rc;
        i += rl;
        prev = i;
    }
    int rc = prev < len ? ps_pretok_emit_stretch(&e, prev, len - prev, false) : PS_OK;
    return rc ? rc : ps_pretok_emit_end(&e);
}

static void ms_destroy(ps_tok_pretok *p) { free(p); }

static int parse_scheme(const ps_tok_load *c, json_t *j, const char *jpath, prepend_scheme *out)
{
    const char *s = NULL;
    json_t *v = json_object_get(j, "prepend_scheme");
    int rc = v && json_is_null(v) ? ps_pretok_require(c, j, jpath, "prepend_scheme")
                                  : ps_tok_json_string(c, j, jpath, "prepend_scheme", &s, NULL);
    if (rc || !s)
        return rc;
    if (!strcmp(s, "always"))
        *out = PREPEND_ALWAYS;
    else if (!strcmp(s, "first"))
        *out = PREPEND_FIRST;
    else if (!strcmp(s, "never"))
        *out = PREPEND_NEVER;
    else {
        return ps_tok_load_fail_key(c, PS_EFORMAT, jpath, "prepend_scheme",
                                    "unknown prepend_scheme '%s' (always, first or never)", s);
    }
    return PS_OK;
}

int ps_pretok_metaspace_load(const ps_tok_load *c, json_t *j, const char *jpath,
                             ps_tok_pretok **out)
{
    uint32_t rep = 0;
    prepend_scheme scheme = PREPEND_ALWAYS; /* serde default */
    bool split = true, add_prefix_space = true, has_aps = false;
    const char *str_rep = NULL; /* legacy, ignored by HF's deserializer */
    int rc;
    if ((rc = ps_pretok_require(c, j, jpath, "replacement")) ||
        (rc = ps_pretok_json_char(c, j, jpath, "replacement", &rep)) ||
        (rc = parse_scheme(c, j, jpath, &scheme)) ||
        (!json_is_null(json_object_get(j, "split")) && /* Option<bool>: null is absent */
         (rc = ps_tok_json_bool(c, j, jpath, "split", &split))) ||
        (rc = ps_tok_json_string(c, j, jpath, "str_rep", &str_rep, NULL)))
        return rc;
    json_t *aps = json_object_get(j, "add_prefix_space");
    if (aps && !json_is_null(aps)) {
        if ((rc = ps_tok_json_bool(c, j, jpath, "add_prefix_space", &add_prefix_space)))
            return rc;
        has_aps = true;
    }
    /* metaspace.rs: add_prefix_space false demands prepend_scheme "never"
     * (an absent prepend_scheme defaults to "always", so it fails too). */
    if (has_aps && !add_prefix_space && scheme != PREPEND_NEVER) {
        return ps_tok_load_fail_key(c, PS_EFORMAT, jpath, "add_prefix_space",
                                    "add_prefix_space does not match declared prepend_scheme");
    }
    metaspace_pt *q = (metaspace_pt *)ps_pretok_new(sizeof *q, ms_split, ms_destroy);
    if (!q)
        return ps_tok_load_fail(c, PS_ENOMEM, jpath, "out of memory");
    q->rep_len = ps_utf8_encode(rep, q->rep);
    q->scheme = scheme;
    q->split = split;
    *out = &q->base;
    return PS_OK;
}
