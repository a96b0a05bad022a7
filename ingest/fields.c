/*
 * Extracting question, sql, label and id from one raw record: a JSON object
 * (jansson) or a CSV/TSV row mapped through the header.
 */
#include "ingest/fields.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Looks `name` up in obj: the literal key first, then as a dotted path. */
static json_t *lookup(json_t *obj, const char *name)
{
    json_t *v = json_object_get(obj, name);
    if (v || !strchr(name, '.'))
        return v;
    char part[256];
    const char *p = name;
    while (obj && *p) {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        if (n >= sizeof part || !json_is_object(obj))
            return NULL;
        memcpy(part, p, n);
        part[n] = '\0';
        obj = json_object_get(obj, part);
        p = dot ? dot + 1 : p + n;
    }
    return obj;
}

static const char *type_name(json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a number";
    case JSON_TRUE: case JSON_FALSE: return "a boolean";
    default: return "null";
    }
}

/* Scalar (string, number, boolean) to text; NULL for other types. */
static const char *scalar_text(json_t *v, char *num, size_t numsz, size_t *len)
{
    if (json_is_string(v)) {
        *len = json_string_length(v);
        return json_string_value(v);
    }
    if (json_is_integer(v))
        snprintf(num, numsz, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    else if (json_is_real(v))
        snprintf(num, numsz, "%.17g", json_real_value(v));
    else if (json_is_boolean(v))
        snprintf(num, numsz, "%s", json_is_true(v) ? "true" : "false");
    else
        return NULL;
    *len = strlen(num);
    return num;
}

static int reject(ps_fields *f, const char *reason, const char *fmt, ...) PS_PRINTF(3, 4);
static int reject(ps_fields *f, const char *reason, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    f->reason = reason;
    vsnprintf(f->detail, sizeof f->detail, fmt, ap);
    va_end(ap);
    return 1;
}

void ps_fields_clear(ps_fields *f)
{
    if (f->root)
        json_decref(f->root);
    memset(f, 0, sizeof *f);
}

int ps_fields_from_json(ps_fields *f, const char *data, size_t len, const ps_field_names *names)
{
    ps_fields_clear(f);
    json_error_t jerr;
    f->root = json_loadb(data, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL | JSON_DECODE_ANY, &jerr);
    if (!f->root) {
        f->reason = "bad_json";
        snprintf(f->detail, sizeof f->detail, "invalid JSON at column %d: %s", jerr.column,
                 jerr.text);
        return 1;
    }
    if (!json_is_object(f->root))
        return reject(f, "wrong_type", "the record is %s, expected a JSON object",
                      type_name(f->root));
    json_t *q = lookup(f->root, names->question);
    if (!q || json_is_null(q))
        return reject(f, "missing_field", "no field '%s'%s", names->question,
                      q ? " (it is null)" : "");
    if (!json_is_string(q))
        return reject(f, "wrong_type", "field '%s' is %s, expected a string", names->question,
                      type_name(q));
    f->question = json_string_value(q);
    f->question_len = json_string_length(q);

    json_t *s = NULL;
    const char *sql_name = names->sql;
    if (sql_name) {
        s = lookup(f->root, sql_name);
    } else {
        /* Default: "sql" when it is a string, else "query" (Spider keeps the
         * SQL text in "query" and a parsed tree in "sql"). */
        json_t *a = json_object_get(f->root, "sql"), *b = json_object_get(f->root, "query");
        if (json_is_string(a) || !b) {
            s = a;
            sql_name = "sql";
        } else {
            s = b;
            sql_name = "query";
        }
    }
    if (!s || json_is_null(s))
        return reject(f, "missing_field", "no field '%s'%s",
                      names->sql ? names->sql : "sql' or 'query", s ? " (it is null)" : "");
    if (!json_is_string(s))
        return reject(f, "wrong_type", "field '%s' is %s, expected a string", sql_name,
                      type_name(s));
    f->sql = json_string_value(s);
    f->sql_len = json_string_length(s);

    json_t *l = lookup(f->root, names->label);
    if (l && !json_is_null(l)) {
        f->label = scalar_text(l, f->label_num, sizeof f->label_num, &f->label_len);
        if (!f->label)
            return reject(f, "wrong_type", "label field '%s' is %s, expected a string or number",
                          names->label, type_name(l));
        if (f->label_len == 0 || memchr(f->label, '\0', f->label_len))
            f->label = NULL; /* "" is no label; NUL bytes cannot name one */
    }
    json_t *id = lookup(f->root, names->id);
    if (id && !json_is_null(id)) {
        if (!json_is_string(id) && !json_is_integer(id))
            return reject(f, "wrong_type", "id field '%s' is %s, expected a string or integer",
                          names->id, type_name(id));
        f->id = scalar_text(id, f->id_num, sizeof f->id_num, &f->id_len);
        if (f->id_len == 0 || memchr(f->id, '\0', f->id_len))
            f->id = NULL;
    }
    return 0;
}

static ssize_t column_of(const char *const *cols, size_t ncols, const char *name)
{
    for (size_t i = 0; i < ncols; i++)
        if (strcmp(cols[i], name) == 0)
            return (ssize_t)i;
    return -1;
}

int ps_fields_map_columns(ps_column_map *m, const char *const *cols, size_t ncols,
                          const ps_field_names *names, char *detail, size_t dsz)
{
    m->question = column_of(cols, ncols, names->question);
    if (names->sql) {
        m->sql = column_of(cols, ncols, names->sql);
    } else {
        m->sql = column_of(cols, ncols, "sql");
        if (m->sql < 0)
            m->sql = column_of(cols, ncols, "query");
    }
    m->label = column_of(cols, ncols, names->label);
    m->id = column_of(cols, ncols, names->id);
    if (m->question < 0 || m->sql < 0) {
        snprintf(detail, dsz, "the header has no column '%s'",
                 m->question < 0 ? names->question : (names->sql ? names->sql : "sql' or 'query"));
        return -1;
    }
    return 0;
}

int ps_fields_from_row(ps_fields *f, const char *const *vals, const size_t *lens, size_t n,
                       size_t ncols, const ps_column_map *m)
{
    ps_fields_clear(f);
    if (n != ncols) {
        f->reason = "bad_csv";
        snprintf(f->detail, sizeof f->detail, "the row has %zu fields, the header has %zu", n,
                 ncols);
        return 1;
    }
    f->question = vals[m->question];
    f->question_len = lens[m->question];
    f->sql = vals[m->sql];
    f->sql_len = lens[m->sql];
    if (m->label >= 0 && lens[m->label] > 0 && !memchr(vals[m->label], '\0', lens[m->label])) {
        f->label = vals[m->label];
        f->label_len = lens[m->label];
    }
    if (m->id >= 0 && lens[m->id] > 0 && !memchr(vals[m->id], '\0', lens[m->id])) {
        f->id = vals[m->id];
        f->id_len = lens[m->id];
    }
    return 0;
}
