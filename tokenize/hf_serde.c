/*
 * What HF tokenizers 0.23's deserializer refuses in a tokenizer.json that
 * pairshard's loaders would not otherwise read (checked before either
 * loader runs, so both refuse the same files):
 *
 * - nesting: serde_json parses with a recursion limit of 128, its count
 *   falling by one at each array or object entered and failing when it
 *   reaches 0: a container 128 levels deep (the top-level object is level
 *   1) is "recursion limit exceeded". A Sequence of Sequences of
 *   normalizers, pre-tokenizers or decoders reaches it at 63 levels (each
 *   is an object and its array).
 * - "truncation" (TruncationParams: direction optional, Left or Right;
 *   max_length and stride usize; strategy LongestFirst, OnlyFirst or
 *   OnlySecond) and "padding" (PaddingParams: strategy BatchLongest or
 *   {"Fixed": usize}; direction Left or Right; pad_to_multiple_of null or
 *   usize; pad_id and pad_type_id u32; pad_token a string): each null or an
 *   object with those members of those types (serde's derive; members it
 *   does not know are skipped). pairshard applies neither (callers pass
 *   max_length; the reader pads), but a pad_id of 2^40, -1 or "x" is a file
 *   HF does not load.
 */
#include "tokenize/hf.h"

#include <string.h>

enum { SERDE_DEPTH = 128, JPATH_SHOWN = 96 };

/* The path of the first container at level SERDE_DEPTH under j (at level
 * `level`, path `jpath`) into `at`; true when there is one. */
static bool too_deep(json_t *j, int level, const char *jpath, char *at, size_t atn)
{
    if (!json_is_object(j) && !json_is_array(j))
        return false;
    if (level >= SERDE_DEPTH) {
        snprintf(at, atn, "%s", jpath);
        return true;
    }
    /* the path is written for containers only: a vocabulary's 50,000
     * entries are scalars */
    char sub[1024];
    if (json_is_array(j)) {
        for (size_t i = 0; i < json_array_size(j); i++) {
            json_t *v = json_array_get(j, i);
            if ((json_is_object(v) || json_is_array(v)) &&
                too_deep(v, level + 1, ps_tok_jpath_idx(sub, sizeof sub, jpath, i), at, atn))
                return true;
        }
        return false;
    }
    const char *key;
    json_t *v;
    json_object_foreach(j, key, v)
    {
        if ((json_is_object(v) || json_is_array(v)) &&
            too_deep(v, level + 1, ps_tok_jpath_key(sub, sizeof sub, jpath, key), at, atn))
            return true;
    }
    return false;
}

static int check_depth(const ps_tok_load *c, json_t *root)
{
    char at[1024];
    if (!too_deep(root, 1, "", at, sizeof at))
        return PS_OK;
    /* a path 127 levels long would crowd out the reason: its start */
    if (strlen(at) > JPATH_SHOWN)
        memcpy(at + JPATH_SHOWN - 3, "...", 4);
    return ps_tok_load_fail(c, PS_ELIMIT, at,
                            "nested %d levels deep: HF's parser (serde_json) refuses JSON nested "
                            "deeper than %d levels (recursion limit exceeded)",
                            SERDE_DEPTH, SERDE_DEPTH - 1);
}

/* An unsigned integer member of at most `max` (u32 or usize). */
static int need_uint(const ps_tok_load *c, json_t *obj, const char *jpath, const char *key,
                     uint64_t max, const char *type, bool optional)
{
    json_t *v = json_object_get(obj, key);
    if (!v || (optional && json_is_null(v)))
        return optional ? PS_OK : ps_tok_load_fail_key(c, PS_EFORMAT, jpath, key, "missing");
    if (json_is_integer(v) && json_integer_value(v) >= 0 &&
        (uint64_t)json_integer_value(v) <= max)
        return PS_OK;
    char shown[64] = "";
    if (json_is_integer(v))
        snprintf(shown, sizeof shown, " (%lld)", (long long)json_integer_value(v));
    return ps_tok_load_fail_key(c, PS_EFORMAT, jpath, key,
                                "expected %s, an integer from 0 to %llu%s", type,
                                (unsigned long long)max, shown);
}

/* A serde enum: a unit variant as its name ("Left", or {"Left": null}), a
 * newtype variant holding a usize as {"Fixed": N}. */
static int need_enum(const ps_tok_load *c, json_t *obj, const char *jpath, const char *key,
                     const char *const *units, const char *newtype, bool optional)
{
    json_t *v = json_object_get(obj, key);
    if (!v)
        return optional ? PS_OK : ps_tok_load_fail_key(c, PS_EFORMAT, jpath, key, "missing");
    const char *name = json_is_string(v) ? json_string_value(v) : NULL;
    json_t *inner = NULL;
    if (json_is_object(v) && json_object_size(v) == 1) {
        void *it = json_object_iter(v);
        name = json_object_iter_key(it);
        inner = json_object_iter_value(it);
    }
    for (size_t i = 0; name && units[i]; i++)
        if (!strcmp(name, units[i]) && (!inner || json_is_null(inner)))
            return PS_OK;
    if (name && newtype && !strcmp(name, newtype) && inner && json_is_integer(inner) &&
        json_integer_value(inner) >= 0)
        return PS_OK;
    char list[128] = "";
    size_t n = 0;
    for (size_t i = 0; units[i] && n < sizeof list; i++)
        n += (size_t)snprintf(list + n, sizeof list - n, "%s\"%s\"", i ? ", " : "", units[i]);
    if (newtype && n < sizeof list)
        snprintf(list + n, sizeof list - n, ", {\"%s\": N}", newtype);
    return ps_tok_load_fail_key(c, PS_EFORMAT, jpath, key, "expected one of %s", list);
}

static int check_truncation(const ps_tok_load *c, json_t *t)
{
    static const char *const dirs[] = {"Left", "Right", NULL};
    static const char *const strategies[] = {"LongestFirst", "OnlyFirst", "OnlySecond", NULL};
    if (!json_is_object(t))
        return ps_tok_load_fail(c, PS_EFORMAT, "truncation", "expected an object or null");
    int rc = need_enum(c, t, "truncation", "direction", dirs, NULL, true);
    if (!rc)
        rc = need_uint(c, t, "truncation", "max_length", UINT64_MAX, "a usize", false);
    if (!rc)
        rc = need_enum(c, t, "truncation", "strategy", strategies, NULL, false);
    if (!rc)
        rc = need_uint(c, t, "truncation", "stride", UINT64_MAX, "a usize", false);
    return rc;
}

static int check_padding(const ps_tok_load *c, json_t *p)
{
    static const char *const dirs[] = {"Left", "Right", NULL};
    static const char *const strategies[] = {"BatchLongest", NULL};
    if (!json_is_object(p))
        return ps_tok_load_fail(c, PS_EFORMAT, "padding", "expected an object or null");
    int rc = need_enum(c, p, "padding", "strategy", strategies, "Fixed", false);
    if (!rc)
        rc = need_enum(c, p, "padding", "direction", dirs, NULL, false);
    if (!rc)
        rc = need_uint(c, p, "padding", "pad_to_multiple_of", UINT64_MAX, "a usize", true);
    if (!rc)
        rc = need_uint(c, p, "padding", "pad_id", UINT32_MAX, "a u32", false);
    if (!rc)
        rc = need_uint(c, p, "padding", "pad_type_id", UINT32_MAX, "a u32", false);
    if (!rc && !json_is_string(json_object_get(p, "pad_token")))
        rc = ps_tok_load_fail_key(c, PS_EFORMAT, "padding", "pad_token",
                                  json_object_get(p, "pad_token") ? "expected a string"
                                                                  : "missing");
    return rc;
}

int ps_tok_check_serde(const ps_tok_load *c, json_t *root)
{
    int rc = check_depth(c, root);
    json_t *t = json_object_get(root, "truncation"), *p = json_object_get(root, "padding");
    if (!rc && t && !json_is_null(t))
        rc = check_truncation(c, t);
    if (!rc && p && !json_is_null(p))
        rc = check_padding(c, p);
    return rc;
}
