/*
 * Joining independent sets (docs/BUILD.md, "pairshard merge"): sets built
 * separately — other inputs, templates, cleaning — but with one tokenizer
 * and layout, so their records can be read in one batch, become one set
 * whose records keep their source: each set's sources, or the set itself
 * as one source named after its directory. Names must stay unique:
 * a collision is an error unless --rename says which is which.
 */
#include "pipeline/merge_join.h"
#include "store/inspect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool ps_merge_is_join(json_t *const *ms, const char *const *dirs, size_t n, int *rc,
                      ps_error *err)
{
    size_t parts = 0;
    for (size_t i = 0; i < n; i++)
        parts += json_is_object(json_object_get(ms[i], "part"));
    *rc = 0;
    if (parts && parts < n) {
        size_t k = 0;
        while (k < n && json_is_object(json_object_get(ms[k], "part")))
            k++;
        size_t p = 0;
        while (p < n && !json_is_object(json_object_get(ms[p], "part")))
            p++;
        *rc = ps_error_set(err, PS_EUSAGE, "%s: not a partial set (built without --part), and "
                           "%s is a part of a --part build: merge the parts first, then join "
                           "the sets", dirs[k], dirs[p]);
    }
    return parts == 0;
}

static const char *layout_of(json_t *m)
{
    const char *l = json_string_value(json_object_get(m, "layout"));
    return l ? l : "pair";
}

int ps_merge_join_check(json_t *const *ms, const char *const *dirs, size_t n, ps_error *err)
{
    static const char *const tok_keys[] = {"vocab_sha256", "vocab_size", "id_width"};
    for (size_t i = 1; i < n; i++) {
        if (strcmp(layout_of(ms[0]), layout_of(ms[i])))
            return ps_error_set(err, PS_EUSAGE, "%s is a %s set and %s a %s set: joined sets "
                                "have one layout", dirs[0], layout_of(ms[0]), dirs[i],
                                layout_of(ms[i]));
        json_t *t0 = json_object_get(ms[0], "tokenizer"), *ti = json_object_get(ms[i], "tokenizer");
        for (size_t k = 0; k < sizeof tok_keys / sizeof *tok_keys; k++)
            if (!json_equal(json_object_get(t0, tok_keys[k]), json_object_get(ti, tok_keys[k])))
                return ps_error_set(err, PS_EUSAGE, "%s and %s were tokenized differently "
                                    "(tokenizer \"%s\" differs): joined sets share one "
                                    "tokenizer", dirs[0], dirs[i], tok_keys[k]);
        if (!json_equal(json_object_get(ms[0], "block_records"),
                        json_object_get(ms[i], "block_records")))
            return ps_error_set(err, PS_EUSAGE, "%s and %s differ in \"block_records\": build "
                                "them with the same --block-records to join them", dirs[0],
                                dirs[i]);
    }
    return 0;
}

/* Applies the renames to the list (the last source named `from`). */
static int apply_renames(json_t *list, const ps_merge_opts *o, ps_error *err)
{
    for (size_t k = 0; k < o->n_rename; k++) {
        size_t i = json_array_size(list);
        while (i > 0 && strcmp(json_string_value(json_object_get(json_array_get(list, i - 1),
                                                                 "name")), o->rename_from[k]))
            i--;
        if (i == 0)
            return ps_error_set(err, PS_EUSAGE, "--rename %s=%s: no source is named \"%s\"",
                                o->rename_from[k], o->rename_to[k], o->rename_from[k]);
        json_object_set_new(json_array_get(list, i - 1), "name", json_string(o->rename_to[k]));
    }
    return 0;
}

/* Every name valid (as manifests require) and unique. owner[i]: the set of
 * source i. */
static int check_names(json_t *list, const char *const *dirs, const size_t *owner,
                       ps_error *err)
{
    size_t n = json_array_size(list);
    for (size_t i = 0; i < n; i++) {
        const char *a = json_string_value(json_object_get(json_array_get(list, i), "name"));
        size_t len = strlen(a);
        bool ok = len > 0 && len <= PS_MANIFEST_MAX_SOURCE_NAME;
        for (size_t c = 0; ok && c < len; c++)
            ok = a[c] > ' ' && a[c] <= '~' && a[c] != '=' && a[c] != ',';
        if (!ok)
            return ps_error_set(err, PS_EUSAGE, "%s: source name \"%s\" is not 1..%u printable "
                                "characters without space, '=' or ','; give --rename %s=NAME",
                                dirs[owner[i]], a, PS_MANIFEST_MAX_SOURCE_NAME, a);
        for (size_t j = 0; j < i; j++)
            if (!strcmp(a, json_string_value(json_object_get(json_array_get(list, j), "name"))))
                return ps_error_set(err, PS_EUSAGE, "%s and %s both hold a source named \"%s\"; "
                                    "give --rename %s=NEW_NAME (it renames the later one)",
                                    dirs[owner[j]], dirs[owner[i]], a, a);
    }
    return 0;
}

json_t *ps_merge_join_sources(json_t *const *ms, const char *const *dirs, size_t n,
                              const ps_merge_opts *opts, uint32_t *offsets, ps_error *err)
{
    json_t *list = json_array();
    size_t *owner = NULL, cap = 0;
    int rc = list ? 0 : ps_error_set(err, PS_ENOMEM, "out of memory");
    for (size_t i = 0; !rc && i < n; i++) {
        offsets[i] = (uint32_t)json_array_size(list);
        json_t *own = json_object_get(ms[i], "sources");
        if (json_is_array(own)) {
            json_array_extend(list, own); /* shared references; deep-copied below */
        } else {
            char *name = ps_dir_name(dirs[i]);
            if (!name) {
                rc = ps_error_set(err, PS_ENOMEM, "out of memory");
                break;
            }
            json_t *tot = json_object_get(ms[i], "totals");
            json_t *acct = json_object_get(ms[i], "accounting");
            json_t *records = json_object_get(tot, "records");
            json_t *tokens = json_object_get(tot, "tokens");
            json_t *e = records && tokens
                            ? json_pack("{sssOsOso}", "name", name, "records", records, "tokens",
                                        tokens, "accounting",
                                        acct ? json_incref(acct) : json_object())
                            : NULL;
            free(name);
            if (!e || json_array_append_new(list, e)) {
                rc = ps_error_set(err, records && tokens ? PS_ENOMEM : PS_EUSAGE,
                                  "%s: manifest.json has no totals: its records cannot be "
                                  "counted as a source", dirs[i]);
                break;
            }
        }
        size_t now = json_array_size(list);
        if (now > PS_MAX_SOURCES) {
            rc = ps_error_set(err, PS_EUSAGE, "more than %u sources", PS_MAX_SOURCES);
            break;
        }
        if (now > cap) {
            size_t *no = realloc(owner, (now + 16) * sizeof *owner);
            if (!no) {
                rc = ps_error_set(err, PS_ENOMEM, "out of memory");
                break;
            }
            owner = no;
            cap = now + 16;
        }
        for (size_t k = offsets[i]; k < now; k++)
            owner[k] = i;
    }
    json_t *copy = rc ? NULL : json_deep_copy(list);
    json_decref(list);
    if (!rc && !copy)
        rc = ps_error_set(err, PS_ENOMEM, "out of memory");
    if (!rc)
        rc = apply_renames(copy, opts, err);
    if (!rc)
        rc = check_names(copy, dirs, owner, err);
    free(owner);
    if (rc) {
        json_decref(copy);
        return NULL;
    }
    return copy;
}

void ps_merge_json_add(json_t *a, json_t *b, bool concat_arrays)
{
    if (json_is_object(a) && json_is_object(b)) {
        const char *k;
        json_t *bv;
        json_object_foreach(b, k, bv)
        {
            json_t *av = json_object_get(a, k);
            if (!av)
                json_object_set(a, k, bv);
            else if (json_is_integer(av) && json_is_integer(bv))
                json_object_set_new(a, k, json_integer(json_integer_value(av) +
                                                       json_integer_value(bv)));
            else if (concat_arrays && json_is_array(av) && json_is_array(bv))
                json_array_extend(av, bv);
            else
                ps_merge_json_add(av, bv, concat_arrays);
        }
    } else if (json_is_array(a) && json_is_array(b)) {
        for (size_t i = 0; i < json_array_size(a) && i < json_array_size(b); i++) {
            json_t *av = json_array_get(a, i), *bv = json_array_get(b, i);
            if (json_is_integer(av) && json_is_integer(bv))
                json_array_set_new(a, i, json_integer(json_integer_value(av) +
                                                      json_integer_value(bv)));
            else
                ps_merge_json_add(av, bv, concat_arrays);
        }
    }
}
