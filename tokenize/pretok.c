/*
 * Pre-tokenizers of tokenizer.json (HF tokenizers 0.23.2): loading by
 * "type", Sequence, applying one to a list of pieces, and the split
 * behaviours every family shares (NormalizedString::split).
 */
#include "tokenize/pretok.h"
#include "tokenize/unicode.h"

#include <stdlib.h>
#include <string.h>

int ps_pretok_push_ref_grow(ps_tok_pieces *out, size_t off, size_t len, bool at_start)
{
    if (out->n == out->cap) {
        size_t cap = out->cap ? out->cap * 2 : 16;
        ps_tok_piece *v = realloc(out->v, cap * sizeof *v);
        if (!v)
            return PS_ENOMEM;
        out->v = v;
        out->cap = cap;
    }
    out->v[out->n++] = (ps_tok_piece){.off = off, .len = len, .at_start = at_start};
    return PS_OK;
}

static int piece(ps_pretok_emit *e, size_t b, size_t end)
{
    if (end == b)
        return PS_OK; /* PreTokenizedString::split drops empty pieces */
    bool first = e->at_start && b <= e->start_upto;
    if (e->in_pool)
        return ps_pretok_push_ref(e->out, e->base + b, end - b, first);
    ps_tok_pieces *o = e->out;
    size_t len = end - b;
    if (o->n < o->cap && o->pool.cap - o->pool.len > len) { /* the common case, inline */
        memcpy(o->pool.p + o->pool.len, e->src + b, len);
        o->v[o->n++] = (ps_tok_piece){.off = o->pool.len, .len = len, .at_start = first};
        o->pool.len += len;
        return PS_OK;
    }
    return ps_tok_pieces_push(o, e->src + b, len, first);
}

void ps_pretok_emit_init(ps_pretok_emit *e, ps_tok_pieces *out, const char *src, bool at_start,
                         ps_pretok_behavior behavior, bool invert)
{
    memset(e, 0, sizeof *e);
    e->out = out;
    e->src = src;
    e->at_start = at_start;
    e->behavior = behavior;
    e->invert = invert;
}

static int flush(ps_pretok_emit *e)
{
    if (!e->pending)
        return PS_OK;
    e->pending = false;
    return piece(e, e->pb, e->pe);
}

static int hold(ps_pretok_emit *e, size_t b, size_t end, bool m)
{
    int rc = flush(e);
    e->pending = true;
    e->pending_match = m;
    e->pb = b;
    e->pe = end;
    return rc;
}

/* The folds of normalizer.rs, one stretch at a time. MergedWithNext's
 * reverse fold comes down to: a match directly followed by a non-match is
 * joined to it; any other stretch stands alone. */
int ps_pretok_emit_stretch(void *ctx, size_t off, size_t len, bool m)
{
    ps_pretok_emit *e = ctx;
    size_t end = off + len;
    if (e->invert)
        m = !m;
    bool prev = e->prev_match;
    e->prev_match = m;
    switch (e->behavior) {
    case PS_PRETOK_ISOLATED:
        return piece(e, off, end);
    case PS_PRETOK_REMOVED:
        return m ? PS_OK : piece(e, off, end);
    case PS_PRETOK_CONTIGUOUS:
        if (e->pending && e->pending_match == m) {
            e->pe = end;
            return PS_OK;
        }
        return hold(e, off, end, m);
    case PS_PRETOK_MERGED_PREV:
        if (m && !prev && e->pending) {
            e->pe = end;
            return PS_OK;
        }
        return hold(e, off, end, m);
    case PS_PRETOK_MERGED_NEXT:
        if (e->pending && e->pending_match && !m) {
            e->pending = false;
            return piece(e, e->pb, end);
        }
        if (m)
            return hold(e, off, end, m);
        int rc = flush(e);
        return rc ? rc : piece(e, off, end);
    }
    return PS_EINVAL;
}

int ps_pretok_emit_end(ps_pretok_emit *e) { return flush(e); }

/* ---- JSON helpers shared by the families ------------------------------ */

int ps_pretok_require(const ps_tok_load *c, json_t *obj, const char *jpath, const char *key)
{
    json_t *v = json_object_get(obj, key);
    if (v && !json_is_null(v))
        return PS_OK;
    return ps_tok_load_fail_key(c, PS_EFORMAT, jpath, key,
                                v ? "must not be null (HF requires a value)"
                                  : "missing field (HF requires it)");
}

/* A member HF gives a default when absent but not when null. */
static int not_null(const ps_tok_load *c, json_t *obj, const char *jpath, const char *key)
{
    json_t *v = json_object_get(obj, key);
    return v ? ps_pretok_require(c, obj, jpath, key) : PS_OK;
}

int ps_pretok_behavior_parse(const ps_tok_load *c, json_t *obj, const char *jpath, bool required,
                             ps_pretok_behavior *out)
{
    static const char *const names[] = {"Removed", "Isolated", "MergedWithPrevious",
                                        "MergedWithNext", "Contiguous"};
    int rc = required ? ps_pretok_require(c, obj, jpath, "behavior")
                      : not_null(c, obj, jpath, "behavior");
    const char *s = NULL;
    if (rc || (rc = ps_tok_json_string(c, obj, jpath, "behavior", &s, NULL)) || !s)
        return rc;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!strcmp(s, names[i])) {
            *out = (ps_pretok_behavior)i;
            return PS_OK;
        }
    return ps_tok_load_fail_key(c, PS_EFORMAT, jpath, "behavior",
                                "unknown behavior '%s' (Removed, Isolated, MergedWithPrevious, "
                                "MergedWithNext or Contiguous)",
                                s);
}

int ps_pretok_json_char(const ps_tok_load *c, json_t *obj, const char *jpath, const char *key,
                        uint32_t *cp)
{
    const char *s = NULL;
    size_t n = 0;
    int rc = ps_tok_json_string(c, obj, jpath, key, &s, &n);
    if (rc || !s)
        return rc;
    if (n && ps_tok_utf8_decode((const unsigned char *)s, n, cp) == n)
        return PS_OK;
    return ps_tok_load_fail_key(c, PS_EFORMAT, jpath, key,
                                "expected a single character, got \"%.40s\"", s);
}

/* ---- Sequence --------------------------------------------------------- */

typedef struct seq {
    ps_tok_pretok base;
    ps_tok_pretok **v; /* never a Sequence: nested ones are flattened */
    size_t n;
} seq;

static void seq_destroy(ps_tok_pretok *p)
{
    seq *q = (seq *)p;
    for (size_t i = 0; i < q->n; i++)
        ps_tok_pretok_free(q->v[i]);
    free(q->v);
    free(q);
}

/* Runs one pre-tokenizer over every piece of io; the result ends in io. */
static int apply_one(const ps_tok_pretok *p, ps_tok_pieces *io, ps_tok_pieces *tmp)
{
    ps_tok_pieces_clear(tmp);
    for (size_t i = 0; i < io->n; i++) {
        const ps_tok_piece *x = &io->v[i];
        int rc = p->split(p, io->pool.p + x->off, x->len, x->at_start, tmp);
        if (rc)
            return rc;
    }
    ps_tok_pieces t = *io;
    *io = *tmp;
    *tmp = t;
    return PS_OK;
}

static int seq_split(const ps_tok_pretok *p, const char *s, size_t n, bool at_start,
                     ps_tok_pieces *out)
{
    ps_tok_pieces a = {0}, b = {0};
    int rc = n ? ps_tok_pieces_push(&a, s, n, at_start) : PS_OK;
    if (!rc)
        rc = ps_tok_pretok_apply(p, &a, &b);
    for (size_t i = 0; !rc && i < a.n; i++)
        rc = ps_tok_pieces_push(out, a.pool.p + a.v[i].off, a.v[i].len, a.v[i].at_start);
    ps_tok_pieces_free(&a);
    ps_tok_pieces_free(&b);
    return rc;
}

static int seq_add(seq *q, ps_tok_pretok *p)
{
    ps_tok_pretok **v = realloc(q->v, (q->n + 1) * sizeof *v);
    if (!v)
        return PS_ENOMEM;
    q->v = v;
    v[q->n++] = p;
    return PS_OK;
}

ps_tok_pretok *ps_pretok_new(size_t size,
                             int (*split)(const ps_tok_pretok *, const char *, size_t, bool,
                                          ps_tok_pieces *),
                             void (*destroy)(ps_tok_pretok *))
{
    ps_tok_pretok *p = calloc(1, size);
    if (p) {
        p->split = split;
        p->destroy = destroy;
    }
    return p;
}

static int seq_load(const ps_tok_load *c, json_t *j, const char *jpath, ps_tok_pretok **out)
{
    char where[256];
    int rc = ps_pretok_require(c, j, jpath, "pretokenizers");
    if (rc)
        return rc;
    json_t *arr = json_object_get(j, "pretokenizers");
    if (!json_is_array(arr))
        return ps_tok_load_fail_key(c, PS_EFORMAT, jpath, "pretokenizers", "expected an array");
    seq *q = (seq *)ps_pretok_new(sizeof *q, seq_split, seq_destroy);
    if (!q)
        return ps_tok_load_fail(c, PS_ENOMEM, jpath, "out of memory");
    char list[256];
    ps_tok_jpath_key(list, sizeof list, jpath, "pretokenizers");
    for (size_t i = 0; i < json_array_size(arr); i++) {
        ps_tok_pretok *p = NULL;
        rc = ps_tok_pretok_load(c, json_array_get(arr, i),
                                ps_tok_jpath_idx(where, sizeof where, list, i), &p);
        if (rc)
            break;
        if (p && p->destroy == seq_destroy) { /* flatten: apply() then needs no recursion */
            seq *inner = (seq *)p;
            for (size_t k = 0; !rc && k < inner->n; k++)
                if (!(rc = seq_add(q, inner->v[k])))
                    inner->v[k] = NULL;
            seq_destroy(p);
        } else if (p && (rc = seq_add(q, p))) {
            ps_tok_pretok_free(p);
        }
        if (rc) {
            rc = ps_tok_load_fail(c, rc, jpath, "out of memory");
            break;
        }
    }
    if (rc) {
        seq_destroy(&q->base);
        return rc;
    }
    *out = &q->base;
    return PS_OK;
}

/* ---- public entry points ---------------------------------------------- */

int ps_tok_pretok_load(const ps_tok_load *c, json_t *j, const char *jpath, ps_tok_pretok **out)
{
    *out = NULL;
    if (!j || json_is_null(j))
        return PS_OK;
    if (!json_is_object(j))
        return ps_tok_load_fail(c, PS_EFORMAT, jpath, "expected an object or null");
    json_t *tv = json_object_get(j, "type");
    if (!tv)
        return ps_tok_load_fail(c, PS_EFORMAT, jpath, "missing field 'type'");
    const char *type = ps_tok_json_type(j);
    if (!type) {
        return ps_tok_load_fail_key(c, PS_EFORMAT, jpath, "type", "expected a string");
    }
    if (!strcmp(type, "Sequence"))
        return seq_load(c, j, jpath, out);
    if (!strcmp(type, "Split"))
        return ps_pretok_split_load(c, j, jpath, out);
    if (!strcmp(type, "ByteLevel"))
        return ps_pretok_bytelevel_load(c, j, jpath, out);
    if (!strcmp(type, "Metaspace"))
        return ps_pretok_metaspace_load(c, j, jpath, out);
    if (!strcmp(type, "Whitespace") || !strcmp(type, "WhitespaceSplit") ||
        !strcmp(type, "Punctuation") || !strcmp(type, "Digits") ||
        !strcmp(type, "BertPreTokenizer") || !strcmp(type, "CharDelimiterSplit"))
        return ps_pretok_chars_load(c, j, jpath, type, out);
    return ps_tok_load_fail_key(c, PS_EUSAGE, jpath, "type", "'%s' is not supported", type);
}

int ps_tok_pretok_apply(const ps_tok_pretok *p, ps_tok_pieces *io, ps_tok_pieces *tmp)
{
    if (!p)
        return PS_OK;
    if (p->destroy != seq_destroy)
        return apply_one(p, io, tmp);
    const seq *q = (const seq *)p;
    for (size_t i = 0; i < q->n; i++) {
        int rc = apply_one(q->v[i], io, tmp);
        if (rc)
            return rc;
    }
    return PS_OK;
}

void ps_tok_pretok_free(ps_tok_pretok *p)
{
    if (p)
        p->destroy(p);
}
