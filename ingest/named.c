/*
 * Fields the user named that an input does not have. A misspelt field
 * (--label-field dbid for Spider's db_id) must not give a run whose every
 * record is silently unlabelled or rejected: the cleaner notes, per input,
 * which named fields any record had and the keys records had instead, and
 * once the input has been read it is an error naming the field, the input,
 * the keys and the nearest one.
 */
#include "common/nearest.h"
#include "ingest/fields.h"
#include "ingest/ingest.h"

#include <stdlib.h>
#include <string.h>

#define MAX_KEYS 64 /* keys remembered per input, for the message */

struct ps_named_inputs {
    struct named_input {
        char *path;
        unsigned present; /* PS_HAS_* seen in any record */
        uint64_t examined; /* records that were objects or rows */
        ps_buf keys;       /* NUL-separated, first seen first, no repeats */
        size_t nkeys;
    } *v;
    size_t n;
};

int ps_named_inputs_create(ps_named_inputs **out)
{
    *out = calloc(1, sizeof **out);
    return *out ? 0 : PS_ENOMEM;
}

void ps_named_inputs_free(ps_named_inputs *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n; i++) {
        free(t->v[i].path);
        ps_buf_free(&t->v[i].keys);
    }
    free(t->v);
    free(t);
}

static struct named_input *entry(ps_named_inputs *t, const char *path)
{
    if (t->n && strcmp(t->v[t->n - 1].path, path) == 0)
        return &t->v[t->n - 1];
    for (size_t i = 0; i < t->n; i++)
        if (strcmp(t->v[i].path, path) == 0)
            return &t->v[i];
    struct named_input *nv = realloc(t->v, (t->n + 1) * sizeof *nv);
    if (!nv)
        return NULL;
    t->v = nv;
    struct named_input *e = &t->v[t->n];
    memset(e, 0, sizeof *e);
    if (!(e->path = strdup(path)))
        return NULL;
    t->n++;
    return e;
}

static bool has_key(const struct named_input *e, const char *key)
{
    for (size_t off = 0; off < e->keys.len; off += strlen(e->keys.data + off) + 1)
        if (strcmp(e->keys.data + off, key) == 0)
            return true;
    return false;
}

int ps_named_inputs_note(ps_named_inputs *t, const char *input, bool examined, unsigned present,
                         const char *keys, size_t keys_len)
{
    struct named_input *e = entry(t, input);
    if (!e)
        return PS_ENOMEM;
    if (examined) {
        e->examined++;
        e->present |= present;
    }
    for (size_t off = 0; off < keys_len && e->nkeys < MAX_KEYS; off += strlen(keys + off) + 1) {
        if (has_key(e, keys + off))
            continue;
        if (ps_buf_append(&e->keys, keys + off, strlen(keys + off) + 1))
            return PS_ENOMEM;
        e->nkeys++;
    }
    return 0;
}

/* The message for field `what` (spec s) missing from input e. */
static int missing(const struct named_input *e, const char *what, const ps_field_spec *s,
                   ps_error *err)
{
    const char *keys[MAX_KEYS];
    size_t n = 0;
    char list[300] = "";
    size_t used = 0;
    for (size_t off = 0; off < e->keys.len && n < MAX_KEYS; off += strlen(e->keys.data + off) + 1) {
        keys[n++] = e->keys.data + off;
        int w = snprintf(list + used, sizeof list - used, "%s%s", used ? ", " : "",
                         e->keys.data + off);
        used = w > 0 && used + (size_t)w < sizeof list ? used + (size_t)w : used;
    }
    const char *near = NULL;
    for (size_t i = 0; !near && i < s->n; i++)
        near = ps_nearest_name(s->cand[i], keys, n);
    return ps_error_set(err, PS_EUSAGE,
                        "%s: no record has the %s field '%s' (its records have: %s)%s%s%s",
                        e->path, what, s->text, n ? list : "no readable fields",
                        near ? "; did you mean '" : "", near ? near : "", near ? "'?" : "");
}

int ps_named_inputs_check(const ps_named_inputs *t, const ps_field_names *names, unsigned named,
                          const char *input, ps_error *err)
{
    static const struct {
        unsigned named, has;
        const char *what;
    } F[] = {{PS_NAMED_QUESTION, PS_HAS_QUESTION, "question"},
             {PS_NAMED_SQL, PS_HAS_SQL, "sql"},
             {PS_NAMED_LABEL, PS_HAS_LABEL, "label"},
             {PS_NAMED_ID, PS_HAS_ID, "id"}};
    const ps_field_spec *specs[4] = {&names->question, &names->sql, &names->label, &names->id};
    for (size_t i = 0; t && i < t->n; i++) {
        const struct named_input *e = &t->v[i];
        if ((input && strcmp(input, e->path) != 0) || e->examined == 0)
            continue;
        for (int k = 0; k < 4; k++)
            if ((named & F[k].named) && specs[k]->n && !(e->present & F[k].has))
                return missing(e, F[k].what, specs[k], err);
    }
    return 0;
}
