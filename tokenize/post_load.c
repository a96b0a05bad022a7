/*
 * Loading "post_processor" as tokenizers 0.23.2's serde reads it: an
 * untagged enum, whose variants are tried in HF's order (post.c says which
 * check "type"). When none fits, the variant the "type" names is read again
 * to say what is wrong with it.
 *
 * Beyond HF: a type id above 255 or an id above 2^31-1 is refused
 * (PS_EUSAGE; pairshard keeps type ids in a byte and ids in int32), and so
 * is a single template that HF would panic on when it encodes (a special
 * token missing from special_tokens, or sequence $B).
 */
#include "tokenize/hf.h"
#include "tokenize/post_internal.h"

#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 32

typedef int (*variant_fn)(const ps_tok_load *c, json_t *j, const char *jp, ps_tok_post *p,
                          int depth);
static int load_any(const ps_tok_load *c, json_t *j, const char *jp, ps_tok_post **out,
                    int depth);

/* A u32 id as HF reads it; above INT32_MAX is refused. */
static int read_id(const ps_tok_load *c, json_t *v, const char *jp, int32_t *id)
{
    if (!json_is_integer(v) || json_integer_value(v) < 0 ||
        json_integer_value(v) > (json_int_t)UINT32_MAX)
        return ps_tok_load_fail(c, PS_EFORMAT, jp, "expected an id (0 to 4294967295)");
    if (json_integer_value(v) > INT32_MAX)
        return ps_tok_load_fail(c, PS_EUSAGE, jp, "id %lld is above 2147483647",
                                (long long)json_integer_value(v));
    *id = (int32_t)json_integer_value(v);
    return PS_OK;
}

/* "sep"/"cls": a [token, id] pair. */
static int read_pair(const ps_tok_load *c, json_t *o, const char *jp, const char *key,
                     int32_t *id)
{
    int rc = PS_OK;
    char where[256];
    json_t *v = ps_tok_json_need(c, o, jp, key, &rc);
    if (!v)
        return rc;
    ps_tok_jpath_key(where, sizeof where, jp, key);
    if (!json_is_array(v) || json_array_size(v) != 2 || !json_is_string(json_array_get(v, 0)))
        return ps_tok_load_fail(c, PS_EFORMAT, where, "expected [token, id]");
    char w1[300];
    return read_id(c, json_array_get(v, 1), ps_tok_jpath_idx(w1, sizeof w1, where, 1), id);
}

/* A required bool HF checks but pairshard's encoding does not use. */
static int read_req_bool(const ps_tok_load *c, json_t *o, const char *jp, const char *key)
{
    bool b;
    return ps_tok_json_need_bool(c, o, jp, key, &b);
}

static int variant_roberta(const ps_tok_load *c, json_t *j, const char *jp, ps_tok_post *p,
                           int depth)
{
    (void)depth;
    int rc;
    if (!json_is_object(j))
        return ps_tok_load_fail(c, PS_EFORMAT, jp, "expected an object");
    if ((rc = read_pair(c, j, jp, "sep", &p->sep)) || (rc = read_pair(c, j, jp, "cls", &p->cls)) ||
        (rc = read_req_bool(c, j, jp, "trim_offsets")) ||
        (rc = read_req_bool(c, j, jp, "add_prefix_space")))
        return rc;
    p->kind = PS_POST_ROBERTA;
    return PS_OK;
}

static int variant_bert(const ps_tok_load *c, json_t *j, const char *jp, ps_tok_post *p,
                        int depth)
{
    (void)depth;
    int rc;
    if (!json_is_object(j))
        return ps_tok_load_fail(c, PS_EFORMAT, jp, "expected an object");
    if ((rc = read_pair(c, j, jp, "sep", &p->sep)) || (rc = read_pair(c, j, jp, "cls", &p->cls)))
        return rc;
    p->kind = PS_POST_BERT;
    return PS_OK;
}

static int variant_bytelevel(const ps_tok_load *c, json_t *j, const char *jp, ps_tok_post *p,
                             int depth)
{
    (void)depth;
    int rc;
    bool b;
    if ((rc = ps_tok_json_check_type(c, j, jp, "ByteLevel")) ||
        (rc = read_req_bool(c, j, jp, "add_prefix_space")) ||
        (rc = read_req_bool(c, j, jp, "trim_offsets")))
        return rc;
    /* use_regex has a default, but null is not a bool to HF */
    json_t *u = json_object_get(j, "use_regex");
    if (u && json_is_null(u)) {
        return ps_tok_load_fail_key(c, PS_EFORMAT, jp, "use_regex", "expected true or false");
    }
    if ((rc = ps_tok_json_bool(c, j, jp, "use_regex", &b)))
        return rc;
    p->kind = PS_POST_NONE; /* offsets only: ids and type ids unchanged */
    return PS_OK;
}

/* special_tokens: {"NAME": {"id": str, "ids": [u32...], "tokens": [str...]}}
 * (HF does not check that ids and tokens have the same length). */
static int read_specials(const ps_tok_load *c, json_t *m, const char *jp, ps_tok_post *p)
{
    if (!json_is_object(m))
        return ps_tok_load_fail(c, PS_EFORMAT, jp, "expected an object of special tokens");
    p->sp = calloc(json_object_size(m) + 1, sizeof *p->sp);
    if (!p->sp)
        return PS_ENOMEM;
    const char *name;
    json_t *v;
    json_object_foreach(m, name, v) {
        char w[256], wi[300];
        int rc = PS_OK;
        ps_tok_jpath_key(w, sizeof w, jp, name);
        if (!json_is_object(v))
            return ps_tok_load_fail(c, PS_EFORMAT, w, "expected an object");
        json_t *id = ps_tok_json_need(c, v, w, "id", &rc), *ids = id ? ps_tok_json_need(c, v, w, "ids", &rc) : NULL,
               *toks = ids ? ps_tok_json_need(c, v, w, "tokens", &rc) : NULL;
        if (!toks)
            return rc;
        if (!json_is_string(id))
            return ps_tok_load_fail_key(c, PS_EFORMAT, w, "id", "expected a string");
        if (!json_is_array(ids) || !json_is_array(toks))
            return ps_tok_load_fail(c, PS_EFORMAT, w, "'ids' and 'tokens' must be arrays");
        for (size_t i = 0; i < json_array_size(toks); i++)
            if (!json_is_string(json_array_get(toks, i)))
                return ps_tok_load_fail(c, PS_EFORMAT, w, "tokens[%zu]: expected a string", i);
        ps_tok_post_special *s = &p->sp[p->n_sp++];
        s->name = strdup(name);
        s->ids = malloc((json_array_size(ids) + 1) * sizeof *s->ids);
        if (!s->name || !s->ids)
            return PS_ENOMEM;
        char wids[300];
        ps_tok_jpath_key(wids, sizeof wids, w, "ids");
        for (s->n = 0; s->n < json_array_size(ids); s->n++)
            if ((rc = read_id(c, json_array_get(ids, s->n),
                              ps_tok_jpath_idx(wi, sizeof wi, wids, s->n), &s->ids[s->n])))
                return rc;
    }
    return PS_OK;
}

static long find_special(const ps_tok_post *p, const char *name)
{
    for (size_t i = 0; i < p->n_sp; i++)
        if (!strcmp(p->sp[i].name, name))
            return (long)i;
    return -1;
}

/* One piece: {"Sequence": {"id": "A"|"B", "type_id": u32}} or
 * {"SpecialToken": {"id": str, "type_id": u32}} (serde's external tag:
 * exactly one member). *missing: a special token not in the map. */
static int read_piece(const ps_tok_load *c, json_t *v, const char *jp, const ps_tok_post *p,
                      ps_tok_post_piece *out, bool *missing)
{
    if (!json_is_object(v) || json_object_size(v) != 1)
        return ps_tok_load_fail(c, PS_EFORMAT, jp,
                                "expected {\"Sequence\": ...} or {\"SpecialToken\": ...}");
    bool seq = json_object_get(v, "Sequence") != NULL;
    const char *key = seq ? "Sequence" : "SpecialToken";
    json_t *b = json_object_get(v, key);
    char w[256];
    int rc = PS_OK;
    ps_tok_jpath_key(w, sizeof w, jp, key);
    if (!b)
        return ps_tok_load_fail(c, PS_EFORMAT, jp, "unknown piece (Sequence or SpecialToken)");
    if (!json_is_object(b))
        return ps_tok_load_fail(c, PS_EFORMAT, w, "expected an object");
    json_t *id = ps_tok_json_need(c, b, w, "id", &rc), *ty = id ? ps_tok_json_need(c, b, w, "type_id", &rc) : NULL;
    if (!ty)
        return rc;
    if (!json_is_integer(ty) || json_integer_value(ty) < 0 ||
        json_integer_value(ty) > (json_int_t)UINT32_MAX)
        return ps_tok_load_fail(c, PS_EFORMAT, w, "type_id: expected an integer");
    if (json_integer_value(ty) > 255)
        return ps_tok_load_fail(c, PS_EUSAGE, w, "type_id %lld: above 255 is not supported",
                                (long long)json_integer_value(ty));
    out->type_id = (uint8_t)json_integer_value(ty);
    const char *s = json_string_value(id);
    if (seq && (!s || (strcmp(s, "A") && strcmp(s, "B"))))
        return ps_tok_load_fail(c, PS_EFORMAT, w, "id: expected \"A\" or \"B\"");
    if (!s)
        return ps_tok_load_fail(c, PS_EFORMAT, w, "id: expected a string");
    out->seq = seq && s[0] == 'B';
    out->sp = seq ? -1 : find_special(p, s);
    *missing = !seq && out->sp < 0;
    return PS_OK;
}

/* A template: its pieces, the ids they add, whether one is a missing
 * special token (*missing_at: its index) or sequence B (*b_at). */
static int read_template(const ps_tok_load *c, json_t *j, const char *jp, const char *key,
                         ps_tok_post *p, ps_tok_post_piece **pieces, size_t *n, size_t *added,
                         long *missing_at, long *b_at)
{
    char w[256], wi[300];
    ps_tok_jpath_key(w, sizeof w, jp, key);
    json_t *arr = json_object_get(j, key);
    if (!json_is_array(arr))
        return ps_tok_load_fail(c, PS_EFORMAT, w, "expected an array of pieces");
    *pieces = calloc(json_array_size(arr) + 1, sizeof **pieces);
    if (!*pieces)
        return PS_ENOMEM;
    *missing_at = *b_at = -1;
    for (*n = 0; *n < json_array_size(arr); (*n)++) {
        bool missing = false;
        ps_tok_post_piece *q = &(*pieces)[*n];
        int rc = read_piece(c, json_array_get(arr, *n), ps_tok_jpath_idx(wi, sizeof wi, w, *n), p,
                            q, &missing);
        if (rc)
            return rc;
        if (missing && *missing_at < 0)
            *missing_at = (long)*n;
        if (q->sp < 0 && q->seq && *b_at < 0)
            *b_at = (long)*n;
        *added += q->sp >= 0 ? p->sp[q->sp].n : 0;
    }
    return PS_OK;
}

static int variant_template(const ps_tok_load *c, json_t *j, const char *jp, ps_tok_post *p,
                            int depth)
{
    (void)depth;
    int rc = PS_OK;
    if (!json_is_object(j))
        return ps_tok_load_fail(c, PS_EFORMAT, jp, "expected an object");
    char w[256], wi[300];
    json_t *m = ps_tok_json_need(c, j, jp, "special_tokens", &rc);
    if (!m || !ps_tok_json_need(c, j, jp, "single", &rc) || !ps_tok_json_need(c, j, jp, "pair", &rc))
        return rc;
    if ((rc = read_specials(c, m, ps_tok_jpath_key(w, sizeof w, jp, "special_tokens"), p)))
        return rc;
    long miss, b_at, pmiss, pb;
    if ((rc = read_template(c, j, jp, "single", p, &p->single, &p->n_single, &p->added_single,
                            &miss, &b_at)) ||
        (rc = read_template(c, j, jp, "pair", p, &p->pair, &p->n_pair, &p->added_pair, &pmiss,
                            &pb)))
        return rc;
    (void)pb; /* a pair template may leave out either sequence */
    ps_tok_jpath_key(w, sizeof w, jp, "single");
    if (miss >= 0)
        return ps_tok_load_fail(c, PS_EUSAGE, ps_tok_jpath_idx(wi, sizeof wi, w, (size_t)miss),
                                "special token not in special_tokens (HF panics on encode)");
    if (b_at >= 0)
        return ps_tok_load_fail(c, PS_EUSAGE, ps_tok_jpath_idx(wi, sizeof wi, w, (size_t)b_at),
                                "sequence B in the single template (HF panics on encode)");
    p->pair_broken = pmiss >= 0;
    p->kind = PS_POST_TEMPLATE;
    return PS_OK;
}

static void take(ps_tok_post *dst, ps_tok_post *src)
{
    *dst = *src;
    memset(src, 0, sizeof *src);
}

static int variant_sequence(const ps_tok_load *c, json_t *j, const char *jp, ps_tok_post *p,
                            int depth)
{
    int rc = PS_OK;
    char w[256], wi[300];
    json_t *arr;
    if ((rc = ps_tok_json_check_type(c, j, jp, "Sequence")) || !(arr = ps_tok_json_need(c, j, jp, "processors", &rc)))
        return rc;
    ps_tok_jpath_key(w, sizeof w, jp, "processors");
    if (!json_is_array(arr))
        return ps_tok_load_fail(c, PS_EFORMAT, w, "expected an array");
    p->kind = PS_POST_NONE;
    for (size_t i = 0; i < json_array_size(arr); i++) {
        ps_tok_post *q = NULL;
        ps_tok_jpath_idx(wi, sizeof wi, w, i);
        if ((rc = load_any(c, json_array_get(arr, i), wi, &q, depth + 1)))
            return rc;
        if (q->kind != PS_POST_NONE && p->kind != PS_POST_NONE) {
            ps_tok_post_free(q);
            return ps_tok_load_fail(c, PS_EUSAGE, wi,
                                    "a second processor that adds special tokens is not "
                                    "supported");
        }
        if (q->kind != PS_POST_NONE)
            take(p, q);
        ps_tok_post_free(q);
    }
    return PS_OK;
}

static const struct {
    const char *type;
    variant_fn fn;
} variants[] = {
    {"RobertaProcessing", variant_roberta}, {"BertProcessing", variant_bert},
    {"ByteLevel", variant_bytelevel},       {"TemplateProcessing", variant_template},
    {"Sequence", variant_sequence},
};

/* Tries one variant quietly: 1 when it fits (*out set), 0 when not, or
 * PS_ENOMEM / PS_ELIMIT (which no other variant would cure). */
static int try_variant(const ps_tok_load *c, size_t v, json_t *j, const char *jp,
                       ps_tok_post **out, int depth)
{
    ps_error quiet;
    ps_tok_load qc = {c->file, &quiet, NULL};
    ps_tok_post *p = calloc(1, sizeof *p);
    if (!p)
        return PS_ENOMEM;
    int rc = variants[v].fn(&qc, j, jp, p, depth);
    if (!rc) {
        *out = p;
        return 1;
    }
    ps_tok_post_free(p);
    if (rc == PS_ENOMEM || rc == PS_ELIMIT) {
        if (c->err)
            *c->err = quiet;
        return rc;
    }
    return 0;
}

static int load_any(const ps_tok_load *c, json_t *j, const char *jp, ps_tok_post **out,
                    int depth)
{
    if (depth > MAX_DEPTH)
        return ps_tok_load_fail(c, PS_ELIMIT, jp, "Sequences nested deeper than %d", MAX_DEPTH);
    size_t nv = sizeof variants / sizeof *variants;
    for (size_t v = 0; v < nv; v++) {
        int r = try_variant(c, v, j, jp, out, depth);
        if (r)
            return r < 0 ? r : PS_OK;
    }
    /* Nothing fits: let the variant the type names say why. */
    const char *type = ps_tok_json_type(j);
    for (size_t v = 0; type && v < nv; v++) {
        if (strcmp(type, variants[v].type))
            continue;
        ps_tok_post *p = calloc(1, sizeof *p);
        int rc = p ? variants[v].fn(c, j, jp, p, depth) : PS_ENOMEM;
        ps_tok_post_free(p);
        return rc ? rc : ps_tok_load_fail(c, PS_EFORMAT, jp, "not a valid %s", type);
    }
    if (type)
        return ps_tok_load_fail_key(c, PS_EUSAGE, jp, "type", "'%s' is not supported", type);
    return ps_tok_load_fail(c, PS_EFORMAT, jp,
                            "matches no post-processor (RobertaProcessing, BertProcessing, "
                            "ByteLevel, TemplateProcessing, Sequence)");
}

int ps_tok_post_load(const ps_tok_load *c, json_t *j, const char *jpath, ps_tok_post **out)
{
    *out = NULL;
    if (!j || json_is_null(j))
        return PS_OK;
    return load_any(c, j, jpath, out, 0);
}
