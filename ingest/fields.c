/*
 * Extracting question, sql, label and id from one raw record: a JSON object
 * (jansson) or a CSV/TSV row mapped through the header.
 */
#include "ingest/fields.h"
#include "ingest/json_fast.h"

#include <inttypes.h>
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
        /* Empty parts ("a.", ".b", "a..b") name nothing: on a flat record
         * this gives what the fast path gives (absent). */
        if (n == 0 || n >= sizeof part || !json_is_object(obj) || (dot && dot[1] == '\0'))
            return NULL;
        memcpy(part, p, n);
        part[n] = '\0';
        obj = json_object_get(obj, part);
        p = dot ? dot + 1 : p + n;
    }
    return obj;
}

/* A member value, from the fast path or from jansson, so that both paths
 * share every decision and every message below. */
typedef enum { V_ABSENT, V_NULL, V_STRING, V_INTEGER, V_REAL, V_BOOL, V_OBJECT, V_ARRAY } vkind;
typedef struct value {
    vkind kind;
    const char *str; /* V_STRING: bytes (may hold NULs), not NUL-terminated */
    size_t len;
    int64_t integer;
    double real;
    bool truth;
} value;

static value from_jansson(json_t *v)
{
    value x = {0};
    if (!v)
        return x;
    switch (json_typeof(v)) {
    case JSON_OBJECT: x.kind = V_OBJECT; break;
    case JSON_ARRAY: x.kind = V_ARRAY; break;
    case JSON_STRING:
        x.kind = V_STRING;
        x.str = json_string_value(v);
        x.len = json_string_length(v);
        break;
    case JSON_INTEGER: x.kind = V_INTEGER; x.integer = json_integer_value(v); break;
    case JSON_REAL: x.kind = V_REAL; x.real = json_real_value(v); break;
    case JSON_TRUE: x.kind = V_BOOL; x.truth = true; break;
    case JSON_FALSE: x.kind = V_BOOL; break;
    default: x.kind = V_NULL;
    }
    return x;
}

static value from_fast(const ps_json_value *v)
{
    value x = {0};
    switch (v->kind) {
    case PS_JV_STRING: x.kind = V_STRING; x.str = v->str; x.len = v->len; break;
    case PS_JV_NULL: x.kind = V_NULL; break;
    case PS_JV_TRUE: x.kind = V_BOOL; x.truth = true; break;
    case PS_JV_FALSE: x.kind = V_BOOL; break;
    case PS_JV_INTEGER: x.kind = V_INTEGER; x.integer = v->integer; break;
    case PS_JV_REAL: x.kind = V_REAL; x.real = v->real; break;
    default: x.kind = V_ABSENT;
    }
    return x;
}

static const char *type_name(const value *v)
{
    switch (v->kind) {
    case V_OBJECT: return "an object";
    case V_ARRAY: return "an array";
    case V_STRING: return "a string";
    case V_INTEGER: return "an integer";
    case V_REAL: return "a number";
    case V_BOOL: return "a boolean";
    default: return "null";
    }
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

/* Copies a scalar's text into `store` as a NUL-terminated string and
 * returns it, or NULL for a non-scalar. "" and text holding a NUL byte
 * cannot name a label or id: *usable is false for them. */
static const char *scalar_text(const value *v, ps_buf *store, size_t *len, bool *usable)
{
    ps_buf_reset(store);
    int rc;
    switch (v->kind) {
    case V_STRING: rc = ps_buf_append(store, v->str, v->len); break;
    case V_INTEGER: rc = ps_buf_printf(store, "%" PRId64, v->integer); break;
    case V_REAL: rc = ps_buf_printf(store, "%.17g", v->real); break;
    case V_BOOL: rc = ps_buf_puts(store, v->truth ? "true" : "false"); break;
    default: return NULL;
    }
    if (rc)
        return NULL;
    *len = store->len;
    *usable = store->len > 0 && memchr(store->data, '\0', store->len) == NULL;
    return store->data;
}

/* The decisions shared by both parsers. `vals`: question, sql, query,
 * label, id (sql/query: the configured sql field is in "sql" when set). */
static int extract(ps_fields *f, const ps_field_names *names, const value *q, const value *sql,
                   const value *query, const value *label, const value *id)
{
    if (q->kind == V_ABSENT || q->kind == V_NULL)
        return reject(f, "missing_field", "no field '%s'%s", names->question,
                      q->kind == V_NULL ? " (it is null)" : "");
    if (q->kind != V_STRING)
        return reject(f, "wrong_type", "field '%s' is %s, expected a string", names->question,
                      type_name(q));
    f->question = q->str;
    f->question_len = q->len;

    const value *s = sql;
    const char *sql_name = names->sql ? names->sql : "sql";
    if (!names->sql && sql->kind != V_STRING && query->kind != V_ABSENT) {
        /* Default: "sql" when it is a string, else "query" (Spider keeps the
         * SQL text in "query" and a parsed tree in "sql"). */
        s = query;
        sql_name = "query";
    }
    if (s->kind == V_ABSENT || s->kind == V_NULL)
        return reject(f, "missing_field", "no field '%s'%s",
                      names->sql ? names->sql : "sql' or 'query",
                      s->kind == V_NULL ? " (it is null)" : "");
    if (s->kind != V_STRING)
        return reject(f, "wrong_type", "field '%s' is %s, expected a string", sql_name,
                      type_name(s));
    f->sql = s->str;
    f->sql_len = s->len;

    bool usable = false;
    if (label->kind != V_ABSENT && label->kind != V_NULL) {
        const char *t = scalar_text(label, &f->label_store, &f->label_len, &usable);
        if (!t)
            return reject(f, "wrong_type", "label field '%s' is %s, expected a string or number",
                          names->label, type_name(label));
        f->label = usable ? t : NULL; /* "" is no label; NUL bytes cannot name one */
    }
    if (id->kind != V_ABSENT && id->kind != V_NULL) {
        if (id->kind != V_STRING && id->kind != V_INTEGER)
            return reject(f, "wrong_type", "id field '%s' is %s, expected a string or integer",
                          names->id, type_name(id));
        const char *t = scalar_text(id, &f->id_store, &f->id_len, &usable);
        f->id = usable ? t : NULL;
    }
    return 0;
}

void ps_fields_clear(ps_fields *f)
{
    if (f->root)
        json_decref(f->root);
    f->root = NULL;
    f->question = f->sql = f->label = f->id = NULL;
    f->question_len = f->sql_len = f->label_len = f->id_len = 0;
    f->reason = NULL;
    f->detail[0] = '\0';
}

void ps_fields_free(ps_fields *f)
{
    ps_fields_clear(f);
    ps_buf_free(&f->scratch);
    ps_buf_free(&f->label_store);
    ps_buf_free(&f->id_store);
}

int ps_fields_from_json(ps_fields *f, const char *data, size_t len, const ps_field_names *names)
{
    ps_fields_clear(f);
    /* Fast path: flat records, no DOM. */
    const char *want[5] = {names->question, names->sql ? names->sql : "sql", "query",
                           names->label, names->id};
    ps_json_value fv[5];
    int rc = ps_json_fast_extract(data, len, want, 5, fv, &f->scratch);
    if (rc < 0)
        return rc;
    if (rc == 1) {
        value v[5];
        for (int i = 0; i < 5; i++)
            v[i] = from_fast(&fv[i]);
        return extract(f, names, &v[0], &v[1], &v[2], &v[3], &v[4]);
    }
    json_error_t jerr;
    f->root = json_loadb(data, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL | JSON_DECODE_ANY,
                         &jerr);
    if (!f->root) {
        f->reason = "bad_json";
        snprintf(f->detail, sizeof f->detail, "invalid JSON at column %d: %s", jerr.column,
                 jerr.text);
        return 1;
    }
    if (!json_is_object(f->root)) {
        value r = from_jansson(f->root);
        return reject(f, "wrong_type", "the record is %s, expected a JSON object", type_name(&r));
    }
    value q = from_jansson(lookup(f->root, names->question));
    value sql = from_jansson(lookup(f->root, want[1]));
    value query = from_jansson(json_object_get(f->root, "query"));
    value label = from_jansson(lookup(f->root, names->label));
    value id = from_jansson(lookup(f->root, names->id));
    return extract(f, names, &q, &sql, &query, &label, &id);
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
