/*
 * The "normalizer" of a tokenizer.json: loading (dispatch on "type",
 * Sequence, the legacy form without "type") and applying.
 *
 * tokenizers 0.23.2 (normalizers/mod.rs) reads a normalizer as tagged by
 * "type" when the tag names a variant ("Bert" is BertNormalizer's tag),
 * and otherwise as an untagged value: the first of BertNormalizer, Strip,
 * Sequence, Precompiled, Replace and Prepend whose required members are
 * all there with the right JSON types. (The unit types - NFC, Lowercase,
 * ... - need their tag, so an object without "type" can only be one of
 * those six.) Files written by HF carry "type":"BertNormalizer", which is
 * not a tag and so reaches the untagged path; we take it as Bert. A "type"
 * we do not know is refused (PS_EUSAGE) rather than guessed from members,
 * although HF's untagged fallback would sometimes accept it.
 */
#include "tokenize/norm.h"

#include <stdlib.h>
#include <string.h>

json_t *ps_norm_required(const ps_tok_load *c, json_t *obj, const char *jpath, const char *key,
                         int *rc)
{
    json_t *v = json_object_get(obj, key);
    if (!v) {
        *rc = ps_tok_load_fail_key(c, PS_EFORMAT, jpath, key, "missing field");
    }
    return v;
}

int ps_norm_required_bool(const ps_tok_load *c, json_t *obj, const char *jpath, const char *key,
                          bool *out)
{
    int rc = PS_OK;
    if (!ps_norm_required(c, obj, jpath, key, &rc))
        return rc;
    return ps_tok_json_bool(c, obj, jpath, key, out);
}

int ps_norm_required_string(const ps_tok_load *c, json_t *obj, const char *jpath,
                            const char *key, const char **out, size_t *len)
{
    int rc = PS_OK;
    json_t *v = ps_norm_required(c, obj, jpath, key, &rc);
    if (!v)
        return rc;
    if (!json_is_string(v)) {
        return ps_tok_load_fail_key(c, PS_EFORMAT, jpath, key, "expected a string");
    }
    *out = json_string_value(v);
    *len = json_string_length(v);
    return PS_OK;
}

ps_tok_norm *ps_norm_new(size_t size,
                         int (*apply)(const ps_tok_norm *, ps_tok_buf *, ps_tok_buf *),
                         void (*destroy)(ps_tok_norm *))
{
    ps_tok_norm *n = calloc(1, size);
    if (n) {
        n->apply = apply;
        n->destroy = destroy;
    }
    return n;
}

/* ---- Sequence ----------------------------------------------------------- */

typedef struct seq_norm {
    ps_tok_norm base;
    size_t n;
    ps_tok_norm *v[]; /* NULL entries (a nested null) are skipped */
} seq_norm;

static int seq_apply(const ps_tok_norm *n, ps_tok_buf *io, ps_tok_buf *tmp)
{
    const seq_norm *s = (const seq_norm *)n;
    for (size_t i = 0; i < s->n; i++) {
        int rc = ps_tok_norm_apply(s->v[i], io, tmp);
        if (rc)
            return rc;
    }
    return PS_OK;
}

static void seq_destroy(ps_tok_norm *n)
{
    seq_norm *s = (seq_norm *)n;
    for (size_t i = 0; i < s->n; i++)
        ps_tok_norm_free(s->v[i]);
    free(s);
}

static int load_one(const ps_tok_load *c, json_t *j, const char *jpath, int depth,
                    ps_tok_norm **out);

static int seq_load(const ps_tok_load *c, json_t *j, const char *jpath, int depth,
                    ps_tok_norm **out)
{
    int rc = PS_OK;
    json_t *arr = ps_norm_required(c, j, jpath, "normalizers", &rc);
    if (!arr)
        return rc;
    char where[256];
    ps_tok_jpath_key(where, sizeof where, jpath, "normalizers");
    if (!json_is_array(arr))
        return ps_tok_load_fail(c, PS_EFORMAT, where, "expected an array");
    size_t n = json_array_size(arr);
    seq_norm *s = (seq_norm *)ps_norm_new(sizeof *s + n * sizeof s->v[0], seq_apply, seq_destroy);
    if (!s)
        return PS_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        char item[300];
        ps_tok_jpath_idx(item, sizeof item, where, i);
        json_t *e = json_array_get(arr, i);
        if (!json_is_object(e)) { /* HF: null here matches no variant either */
            seq_destroy(&s->base);
            return ps_tok_load_fail(c, PS_EFORMAT, item, "expected a normalizer object");
        }
        if ((rc = load_one(c, e, item, depth + 1, &s->v[i]))) {
            seq_destroy(&s->base);
            return rc;
        }
        s->n = i + 1;
    }
    *out = &s->base;
    return PS_OK;
}

/* ---- dispatch ------------------------------------------------------------ */

/* Whether obj has all of keys (NULL-terminated), each of JSON type `type`. */
static bool has_members(json_t *obj, json_type type, const char *const *keys)
{
    for (; *keys; keys++) {
        json_t *v = json_object_get(obj, *keys);
        if (!v || !(json_typeof(v) == type ||
                    (type == JSON_TRUE && json_typeof(v) == JSON_FALSE)))
            return false;
    }
    return true;
}

/* The type an object without "type" is read as, HF's untagged order. */
static const char *legacy_type(json_t *j)
{
    static const char *const bert[] = {"clean_text", "handle_chinese_chars", "lowercase", NULL};
    static const char *const strip[] = {"strip_left", "strip_right", NULL};
    static const char *const seq[] = {"normalizers", NULL};
    static const char *const pre[] = {"precompiled_charsmap", NULL};
    static const char *const repl[] = {"content", NULL};
    static const char *const prep[] = {"prepend", NULL};
    json_t *sa = json_object_get(j, "strip_accents");
    if (has_members(j, JSON_TRUE, bert) && (!sa || json_is_boolean(sa) || json_is_null(sa)))
        return "Bert";
    if (has_members(j, JSON_TRUE, strip))
        return "Strip";
    if (has_members(j, JSON_ARRAY, seq))
        return "Sequence";
    if (json_object_get(j, pre[0]))
        return "Precompiled";
    if (has_members(j, JSON_STRING, repl) && json_is_object(json_object_get(j, "pattern")))
        return "Replace";
    if (has_members(j, JSON_STRING, prep))
        return "Prepend";
    return NULL;
}

static int load_one(const ps_tok_load *c, json_t *j, const char *jpath, int depth,
                    ps_tok_norm **out)
{
    *out = NULL;
    if (!json_is_object(j))
        return ps_tok_load_fail(c, PS_EFORMAT, jpath, "expected a normalizer object or null");
    if (depth > 64) /* a Sequence nested this deep is an attack, not a model */
        return ps_tok_load_fail(c, PS_ELIMIT, jpath, "normalizers nested more than 64 deep");
    json_t *tj = json_object_get(j, "type");
    const char *type = json_is_string(tj) ? json_string_value(tj) : NULL;
    if (tj && !type)
        return ps_tok_load_fail_key(c, PS_EFORMAT, jpath, "type", "expected a string");
    if (!type && !(type = legacy_type(j)))
        return ps_tok_load_fail(c, PS_EFORMAT, jpath,
                                "no \"type\", and the members match no normalizer");
    if (!strcmp(type, "Bert") || !strcmp(type, "BertNormalizer"))
        return ps_norm_bert_load(c, j, jpath, out);
    if (!strcmp(type, "Sequence"))
        return seq_load(c, j, jpath, depth, out);
    if (!strcmp(type, "Strip"))
        return ps_norm_strip_load(c, j, jpath, out);
    if (!strcmp(type, "Replace"))
        return ps_norm_replace_load(c, j, jpath, out);
    if (!strcmp(type, "Prepend"))
        return ps_norm_prepend_load(c, j, jpath, out);
    if (!strcmp(type, "Precompiled"))
        return ps_tok_precompiled_load(c, j, jpath, out);
    static const struct {
        const char *name;
        int form; /* a ps_nf_form, or -1.. for the other unit types */
    } units[] = {{"NFC", PS_NF_C},   {"NFD", PS_NF_D},     {"NFKC", PS_NF_KC},
                 {"NFKD", PS_NF_KD}, {"Lowercase", -1},    {"StripAccents", -2},
                 {"Nmt", -3},        {"ByteLevel", -4}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(type, units[i].name))
            continue;
        switch (units[i].form) {
        case -1: return ps_norm_lowercase_load(out);
        case -2: return ps_norm_strip_accents_load(out);
        case -3: return ps_norm_nmt_load(out);
        case -4: return ps_norm_bytelevel_load(out);
        default: return ps_norm_nf_load((ps_nf_form)units[i].form, out);
        }
    }
    return ps_tok_load_fail_key(c, PS_EUSAGE, jpath, "type", "'%s' is not a supported normalizer",
                                type);
}

int ps_tok_norm_load(const ps_tok_load *c, json_t *j, const char *jpath, ps_tok_norm **out)
{
    *out = NULL;
    if (!j || json_is_null(j))
        return PS_OK;
    return load_one(c, j, jpath, 0, out);
}

int ps_tok_norm_apply(const ps_tok_norm *n, ps_tok_buf *io, ps_tok_buf *tmp)
{
    return n ? n->apply(n, io, tmp) : PS_OK;
}

void ps_tok_norm_free(ps_tok_norm *n)
{
    if (n)
        n->destroy(n);
}
