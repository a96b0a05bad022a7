/*
 * Loading "decoder" as tokenizers 0.23.2's DecoderWrapper deserializer:
 * a "type" that names a decoder selects it, and then its members must be
 * right (every member without a serde default is required); any other
 * value is tried as each decoder in turn, HF's "legacy" untagged path,
 * where only those that do not check "type" can fit (BPEDecoder,
 * WordPiece, CTC, Replace, Strip, in that order).
 */
#include "tokenize/hf.h"
#include "tokenize/decoders_internal.h"
#include "tokenize/unicode.h"

#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 32

typedef int (*dec_fn)(const ps_tok_load *c, json_t *j, const char *jp, ps_tok_dec *d, int depth);
static int load_any(const ps_tok_load *c, json_t *j, const char *jp, ps_tok_dec **out,
                    int depth);

void ps_tok_dec_destroy(ps_tok_decoder *base)
{
    ps_tok_dec *d = (ps_tok_dec *)base;
    if (!d)
        return;
    for (size_t i = 0; i < d->n_kids; i++)
        ps_tok_dec_destroy(&d->kids[i]->base);
    free(d->kids);
    free(d->s1);
    free(d->s2);
    ps_tok_regex_free(d->re);
    free(d);
}

void ps_tok_decoder_free(ps_tok_decoder *d)
{
    if (d)
        d->destroy(d);
}

static int need_string(const ps_tok_load *c, json_t *o, const char *jp, const char *key,
                       char **out, size_t *len)
{
    int rc = PS_OK;
    json_t *v = ps_tok_json_need(c, o, jp, key, &rc);
    if (!v)
        return rc;
    if (!json_is_string(v))
        return ps_tok_load_fail_key(c, PS_EFORMAT, jp, key, "expected a string");
    *len = json_string_length(v);
    *out = malloc(*len + 1);
    if (!*out)
        return PS_ENOMEM;
    memcpy(*out, json_string_value(v), *len + 1);
    return PS_OK;
}

/* A Rust `char`: a string of exactly one character. */
static int need_char(const ps_tok_load *c, json_t *o, const char *jp, const char *key,
                     uint32_t *cp)
{
    int rc = PS_OK;
    json_t *v = ps_tok_json_need(c, o, jp, key, &rc);
    if (!v)
        return rc;
    const unsigned char *s = (const unsigned char *)json_string_value(v);
    size_t n = json_string_length(v);
    if (!s || !n || ps_tok_utf8_decode(s, n, cp) != n)
        return ps_tok_load_fail_key(c, PS_EFORMAT, jp, key, "expected a string of one character");
    return PS_OK;
}

static int d_bpe(const ps_tok_load *c, json_t *j, const char *jp, ps_tok_dec *d, int depth)
{
    (void)depth;
    d->kind = PS_DEC_BPE;
    return need_string(c, j, jp, "suffix", &d->s1, &d->n1);
}

static int d_bytelevel(const ps_tok_load *c, json_t *j, const char *jp, ps_tok_dec *d,
                       int depth)
{
    (void)depth;
    bool b;
    int rc;
    d->kind = PS_DEC_BYTELEVEL;
    if ((rc = ps_tok_json_check_type(c, j, jp, "ByteLevel")) ||
        (rc = ps_tok_json_need_bool(c, j, jp, "add_prefix_space", &b)) ||
        (rc = ps_tok_json_need_bool(c, j, jp, "trim_offsets", &b)))
        return rc;
    json_t *u = json_object_get(j, "use_regex"); /* defaulted, but not null */
    if (u && !json_is_boolean(u))
        return ps_tok_load_fail_key(c, PS_EFORMAT, jp, "use_regex", "expected true or false");
    return PS_OK;
}

static int d_wordpiece(const ps_tok_load *c, json_t *j, const char *jp, ps_tok_dec *d,
                       int depth)
{
    (void)depth;
    d->kind = PS_DEC_WORDPIECE;
    int rc = need_string(c, j, jp, "prefix", &d->s1, &d->n1);
    return rc ? rc : ps_tok_json_need_bool(c, j, jp, "cleanup", &d->cleanup);
}

/* Optional<bool> members: absent or null is None. */
static int opt_bool(const ps_tok_load *c, json_t *j, const char *jp, const char *key, int *out)
{
    json_t *v = json_object_get(j, key);
    bool b;
    *out = -1;
    if (!v || json_is_null(v))
        return PS_OK;
    int rc = ps_tok_json_bool(c, j, jp, key, &b);
    *out = b;
    return rc;
}

static int d_metaspace(const ps_tok_load *c, json_t *j, const char *jp, ps_tok_dec *d,
                       int depth)
{
    (void)depth;
    int rc, aps, split;
    d->kind = PS_DEC_METASPACE;
    if ((rc = ps_tok_json_check_type(c, j, jp, "Metaspace")) || (rc = need_char(c, j, jp, "replacement", &d->ch)) ||
        (rc = opt_bool(c, j, jp, "add_prefix_space", &aps)) ||
        (rc = opt_bool(c, j, jp, "split", &split)))
        return rc;
    json_t *ps = json_object_get(j, "prepend_scheme"), *sr = json_object_get(j, "str_rep");
    d->prepend = PS_DEC_PREPEND_ALWAYS;
    if (ps) {
        const char *s = json_string_value(ps);
        if (s && !strcmp(s, "first"))
            d->prepend = PS_DEC_PREPEND_FIRST;
        else if (s && !strcmp(s, "never"))
            d->prepend = PS_DEC_PREPEND_NEVER;
        else if (!s || strcmp(s, "always"))
            return ps_tok_load_fail_key(c, PS_EFORMAT, jp, "prepend_scheme",
                                        "expected \"first\", \"never\" or \"always\"");
    }
    if (sr && !json_is_null(sr) && !json_is_string(sr))
        return ps_tok_load_fail_key(c, PS_EFORMAT, jp, "str_rep", "expected a string");
    if (aps == 0) { /* legacy add_prefix_space=false means "never" */
        if (d->prepend != PS_DEC_PREPEND_NEVER)
            return ps_tok_load_fail(c, PS_EFORMAT, jp,
                                    "add_prefix_space does not match declared prepend_scheme");
        d->prepend = PS_DEC_PREPEND_NEVER;
    }
    return PS_OK;
}

static int d_ctc(const ps_tok_load *c, json_t *j, const char *jp, ps_tok_dec *d, int depth)
{
    (void)depth;
    int rc;
    d->kind = PS_DEC_CTC;
    if ((rc = need_string(c, j, jp, "pad_token", &d->s1, &d->n1)) ||
        (rc = need_string(c, j, jp, "word_delimiter_token", &d->s2, &d->n2)))
        return rc;
    return ps_tok_json_need_bool(c, j, jp, "cleanup", &d->cleanup);
}

static int d_sequence(const ps_tok_load *c, json_t *j, const char *jp, ps_tok_dec *d,
                      int depth)
{
    int rc = PS_OK;
    char w[256], wi[300];
    json_t *arr;
    d->kind = PS_DEC_SEQUENCE;
    if ((rc = ps_tok_json_check_type(c, j, jp, "Sequence")) || !(arr = ps_tok_json_need(c, j, jp, "decoders", &rc)))
        return rc;
    ps_tok_jpath_key(w, sizeof w, jp, "decoders");
    if (!json_is_array(arr))
        return ps_tok_load_fail(c, PS_EFORMAT, w, "expected an array");
    d->kids = calloc(json_array_size(arr) + 1, sizeof *d->kids);
    if (!d->kids)
        return PS_ENOMEM;
    for (size_t i = 0; i < json_array_size(arr); i++) {
        ps_tok_jpath_idx(wi, sizeof wi, w, i);
        if ((rc = load_any(c, json_array_get(arr, i), wi, &d->kids[i], depth + 1)))
            return rc;
        d->n_kids++;
    }
    return PS_OK;
}

/* Replace: pattern {"String": s} (a literal; HF escapes it into a regex,
 * so the empty string matches everywhere) or {"Regex": r}. */
static int d_replace(const ps_tok_load *c, json_t *j, const char *jp, ps_tok_dec *d, int depth)
{
    (void)depth;
    int rc = PS_OK;
    char w[256], wi[300];
    d->kind = PS_DEC_REPLACE;
    json_t *p = ps_tok_json_need(c, j, jp, "pattern", &rc);
    if (!p || (rc = need_string(c, j, jp, "content", &d->s2, &d->n2)))
        return rc;
    ps_tok_jpath_key(w, sizeof w, jp, "pattern");
    json_t *s = json_object_get(p, "String"), *r = json_object_get(p, "Regex");
    if (json_object_size(p) != 1 || !(json_is_string(s) || json_is_string(r)))
        return ps_tok_load_fail(c, PS_EFORMAT, w, "expected {\"String\": ...} or {\"Regex\": ...}");
    if (r)
        return ps_tok_regex_compile(c, ps_tok_jpath_key(wi, sizeof wi, w, "Regex"),
                                    json_string_value(r), json_string_length(r), &d->re);
    if (!json_string_length(s))
        return ps_tok_regex_compile(c, ps_tok_jpath_key(wi, sizeof wi, w, "String"), "", 0,
                                    &d->re);
    d->n1 = json_string_length(s);
    d->s1 = malloc(d->n1 + 1);
    if (!d->s1)
        return PS_ENOMEM;
    memcpy(d->s1, json_string_value(s), d->n1 + 1);
    return PS_OK;
}

static int d_fuse(const ps_tok_load *c, json_t *j, const char *jp, ps_tok_dec *d, int depth)
{
    (void)depth;
    d->kind = PS_DEC_FUSE;
    return ps_tok_json_check_type(c, j, jp, "Fuse");
}

static int d_bytefallback(const ps_tok_load *c, json_t *j, const char *jp, ps_tok_dec *d,
                          int depth)
{
    (void)depth;
    d->kind = PS_DEC_BYTEFALLBACK;
    return ps_tok_json_check_type(c, j, jp, "ByteFallback");
}

static int d_strip(const ps_tok_load *c, json_t *j, const char *jp, ps_tok_dec *d, int depth)
{
    (void)depth;
    int rc = PS_OK;
    d->kind = PS_DEC_STRIP;
    if ((rc = need_char(c, j, jp, "content", &d->ch)) || !ps_tok_json_need(c, j, jp, "start", &rc) ||
        !ps_tok_json_need(c, j, jp, "stop", &rc))
        return rc;
    if ((rc = ps_tok_json_uint(c, j, jp, "start", UINT64_MAX >> 1, &d->start)))
        return rc;
    if ((rc = ps_tok_json_uint(c, j, jp, "stop", UINT64_MAX >> 1, &d->stop)))
        return rc;
    if (json_is_null(json_object_get(j, "start")) || json_is_null(json_object_get(j, "stop")))
        return ps_tok_load_fail(c, PS_EFORMAT, jp, "'start' and 'stop' may not be null");
    return PS_OK;
}

/* HF's order of the untagged enum; legacy: may fit without the type. */
static const struct {
    const char *type;
    dec_fn fn;
    bool legacy;
} decs[] = {
    {"BPEDecoder", d_bpe, true},     {"ByteLevel", d_bytelevel, false},
    {"WordPiece", d_wordpiece, true}, {"Metaspace", d_metaspace, false},
    {"CTC", d_ctc, true},            {"Sequence", d_sequence, false},
    {"Replace", d_replace, true},    {"Fuse", d_fuse, false},
    {"Strip", d_strip, true},        {"ByteFallback", d_bytefallback, false},
};

static int run(const ps_tok_load *c, size_t k, json_t *j, const char *jp, ps_tok_dec **out,
               int depth)
{
    ps_tok_dec *d = calloc(1, sizeof *d);
    if (!d)
        return PS_ENOMEM;
    d->base.chain = ps_tok_dec_chain;
    d->base.destroy = ps_tok_dec_destroy;
    int rc = decs[k].fn(c, j, jp, d, depth);
    if (rc) {
        ps_tok_dec_destroy(&d->base);
        return rc;
    }
    *out = d;
    return PS_OK;
}

static int load_any(const ps_tok_load *c, json_t *j, const char *jp, ps_tok_dec **out,
                    int depth)
{
    size_t nd = sizeof decs / sizeof *decs;
    if (depth > MAX_DEPTH)
        return ps_tok_load_fail(c, PS_ELIMIT, jp, "Sequences nested deeper than %d", MAX_DEPTH);
    if (!json_is_object(j))
        return ps_tok_load_fail(c, PS_EFORMAT, jp, "expected an object");
    const char *type = ps_tok_json_type(j);
    for (size_t k = 0; type && k < nd; k++)
        if (!strcmp(type, decs[k].type))
            return run(c, k, j, jp, out, depth);
    for (size_t k = 0; k < nd; k++) { /* legacy: the first that fits, quietly */
        if (!decs[k].legacy)
            continue;
        ps_error quiet;
        ps_tok_load qc = {c->file, &quiet, NULL};
        int rc = run(&qc, k, j, jp, out, depth);
        if (rc == PS_OK)
            return rc;
        if (rc == PS_ENOMEM) {
            if (c->err)
                *c->err = quiet;
            return rc;
        }
    }
    if (type)
        return ps_tok_load_fail_key(c, PS_EUSAGE, jp, "type", "'%s' is not supported", type);
    return ps_tok_load_fail(c, PS_EFORMAT, jp, "matches no decoder (no \"type\")");
}

int ps_tok_decoder_load(const ps_tok_load *c, json_t *j, const char *jpath,
                        ps_tok_decoder **out)
{
    *out = NULL;
    if (!j || json_is_null(j))
        return PS_OK;
    ps_tok_dec *d = NULL;
    int rc = load_any(c, j, jpath, &d, 0);
    if (!rc)
        *out = &d->base;
    return rc;
}
