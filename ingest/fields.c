/*
 * Extracting question, sql, label and id from one raw record: a JSON object
 * (jansson) or a CSV/TSV row mapped through the header.
 */
#include "ingest/fields.h"
#include "ingest/json_fast.h"
#include "common/nearest.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ingest.h cannot see PS_EXTRA_FIELDS (fields.h includes it): keep them in step. */
_Static_assert(sizeof(((ps_column_map *)0)->extra) / sizeof(ssize_t) == PS_EXTRA_FIELDS,
               "ps_column_map.extra holds PS_EXTRA_FIELDS columns");

/* Looks `name` up in obj: the literal key first, then as a dotted path. */
json_t *ps_fields_lookup(json_t *obj, const char *name)
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

const char *ps_fields_type_name(json_t *v)
{
    value x = from_jansson(v);
    return type_name(&x);
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

/* The values of one field's candidates (or, for the default sql, of
 * "sql" and "query"), and the one chosen. */
typedef struct picked {
    const value *v;   /* the chosen value (kind V_ABSENT when none) */
    const char *name; /* its name */
} picked;

static const value absent_value = {0};

/* A field every record needs (question, sql): its bytes, or 1 with the
 * record rejected as missing (absent or null, named by the candidates
 * `wanted`) or of the wrong type. */
static int required_string(ps_fields *f, picked p, const char *wanted, const char **str,
                           size_t *len)
{
    if (p.v->kind == V_ABSENT || p.v->kind == V_NULL)
        return reject(f, "missing_field", "no field '%s'%s", wanted,
                      p.v->kind == V_NULL ? " (it is null)" : "");
    if (p.v->kind != V_STRING)
        return reject(f, "wrong_type", "field '%s' is %s, expected a string", p.name,
                      type_name(p.v));
    *str = p.v->str;
    *len = p.v->len;
    return 0;
}

/* The first candidate that exists and is not null; failing that the first
 * that exists (null, for the message); failing that none. Sets the
 * field's PS_HAS_* bit when any candidate exists. */
static picked pick(const ps_field_spec *s, const value *vals, unsigned bit, unsigned *present)
{
    picked p = {&absent_value, s->n ? s->cand[0] : "sql"};
    if (s->n == 0) {
        /* Default: "sql" when it is a string, else "query" (Spider keeps the
         * SQL text in "query" and a parsed tree in "sql"), else BIRD's "SQL". */
        p.v = &vals[0];
        if (vals[0].kind != V_STRING && vals[1].kind != V_ABSENT) {
            p.v = &vals[1];
            p.name = "query";
        } else if (vals[0].kind != V_STRING && vals[2].kind != V_ABSENT) {
            p.v = &vals[2];
            p.name = "SQL";
        }
        if (vals[0].kind != V_ABSENT || vals[1].kind != V_ABSENT || vals[2].kind != V_ABSENT)
            *present |= bit;
        return p;
    }
    const value *null_one = NULL;
    const char *null_name = NULL;
    for (size_t i = 0; i < s->n; i++) {
        if (vals[i].kind == V_ABSENT)
            continue;
        *present |= bit;
        if (vals[i].kind != V_NULL) {
            p.v = &vals[i];
            p.name = s->cand[i];
            return p;
        }
        if (!null_one) {
            null_one = &vals[i];
            null_name = s->cand[i];
        }
    }
    if (null_one) {
        p.v = null_one;
        p.name = null_name;
    }
    return p;
}

/* The database and the template's fields: a database is a string; a
 * template field a string, number or boolean (its JSON text); absent and
 * null leave NULL (the template then names the missing field). */
static int extract_text2sql(ps_fields *f, const ps_field_names *names, const value *at)
{
    unsigned unused = 0;
    if (names->db.n) {
        picked db = pick(&names->db, at, 0, &unused);
        at += names->db.n;
        if (db.v->kind == V_STRING) {
            f->db = db.v->str;
            f->db_len = db.v->len;
        } else if (db.v->kind != V_ABSENT && db.v->kind != V_NULL) {
            return reject(f, "wrong_type", "database field '%s' is %s, expected a string",
                          db.name, type_name(db.v));
        }
    }
    for (size_t i = 0; i < names->n_extra; i++) {
        const value *v = &at[i];
        if (v->kind == V_ABSENT || v->kind == V_NULL)
            continue;
        if (v->kind == V_STRING) {
            f->extra[i] = v->str;
            f->extra_len[i] = v->len;
            continue;
        }
        bool usable;
        f->extra[i] = scalar_text(v, &f->extra_store[i], &f->extra_len[i], &usable);
        if (!f->extra[i])
            return reject(f, "wrong_type", "template field '%s' is %s, expected a string, "
                          "number or boolean", names->extra[i], type_name(v));
    }
    at += names->n_extra;
    if (names->difficulty.n) {
        unsigned unused2 = 0;
        size_t len;
        bool usable = false;
        const char *t = scalar_text(pick(&names->difficulty, at, 0, &unused2).v,
                                    &f->difficulty_store, &len, &usable);
        f->difficulty = t && usable ? t : NULL;
    }
    return 0;
}

/* The decisions shared by both parsers. `vals` holds, in order, the
 * values of the question's, the sql's (default: "sql" and "query"), the
 * label's and the id's candidates. */
static int extract(ps_fields *f, const ps_field_names *names, const value *vals)
{
    const value *at = vals;
    picked q = pick(&names->question, at, PS_HAS_QUESTION, &f->present);
    at += names->question.n;
    picked sql = pick(&names->sql, at, PS_HAS_SQL, &f->present);
    at += names->sql.n ? names->sql.n : PS_DEFAULT_SQL_NAMES;
    picked label = pick(&names->label, at, PS_HAS_LABEL, &f->present);
    at += names->label.n;
    picked id = pick(&names->id, at, PS_HAS_ID, &f->present);
    at += names->id.n;
    f->examined = true;

    if (required_string(f, q, names->question.text, &f->question, &f->question_len) ||
        required_string(f, sql, names->sql.text, &f->sql, &f->sql_len))
        return 1;

    bool usable = false;
    if (label.v->kind != V_ABSENT && label.v->kind != V_NULL) {
        const char *t = scalar_text(label.v, &f->label_store, &f->label_len, &usable);
        if (!t)
            return reject(f, "wrong_type", "label field '%s' is %s, expected a string or number",
                          label.name, type_name(label.v));
        f->label = usable ? t : NULL; /* "" is no label; NUL bytes cannot name one */
    }
    if (id.v->kind != V_ABSENT && id.v->kind != V_NULL) {
        if (id.v->kind != V_STRING && id.v->kind != V_INTEGER)
            return reject(f, "wrong_type", "id field '%s' is %s, expected a string or integer",
                          id.name, type_name(id.v));
        const char *t = scalar_text(id.v, &f->id_store, &f->id_len, &usable);
        f->id = usable ? t : NULL;
    }
    return names->db.n || names->n_extra || names->difficulty.n ? extract_text2sql(f, names, at)
                                                                : 0;
}

int ps_field_spec_parse(ps_field_spec *s, char *text, const char *shown)
{
    memset(s, 0, sizeof *s);
    s->text = shown;
    for (char *p = text;;) {
        char *comma = strchr(p, ',');
        if (comma)
            *comma = '\0';
        if (*p == '\0' || s->n == PS_FIELD_CANDIDATES)
            return -1;
        s->cand[s->n++] = p;
        if (!comma)
            return 0;
        p = comma + 1;
    }
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
    f->db = NULL;
    f->db_len = 0;
    f->difficulty = NULL;
    memset(f->extra, 0, sizeof f->extra);
    memset(f->extra_len, 0, sizeof f->extra_len);
    f->present = 0;
    f->examined = false;
}

void ps_fields_free(ps_fields *f)
{
    ps_fields_clear(f);
    ps_buf_free(&f->scratch);
    ps_buf_free(&f->label_store);
    ps_buf_free(&f->id_store);
    ps_buf_free(&f->difficulty_store);
    for (size_t i = 0; i < PS_EXTRA_FIELDS; i++)
        ps_buf_free(&f->extra_store[i]);
}

/* The names asked of a record, in extract()'s order. */
static size_t wanted_names(const ps_field_names *names, const char **want)
{
    size_t n = 0;
    const ps_field_spec *specs[4] = {&names->question, &names->sql, &names->label, &names->id};
    for (int k = 0; k < 4; k++) {
        if (specs[k]->n == 0) { /* the default sql */
            want[n++] = "sql";
            want[n++] = "query";
            want[n++] = "SQL";
        }
        for (size_t i = 0; i < specs[k]->n; i++)
            want[n++] = specs[k]->cand[i];
    }
    for (size_t i = 0; i < names->db.n; i++)
        want[n++] = names->db.cand[i];
    for (size_t i = 0; i < names->n_extra; i++)
        want[n++] = names->extra[i];
    for (size_t i = 0; i < names->difficulty.n; i++)
        want[n++] = names->difficulty.cand[i];
    return n;
}

#define MAX_WANTED (6 * PS_FIELD_CANDIDATES + PS_DEFAULT_SQL_NAMES + PS_EXTRA_FIELDS)

/* Appends " (fields: a, b, c)" to a missing_field detail, so that the
 * message shows what the record does have. */
static void append_keys(ps_fields *f, const char *data, size_t len)
{
    ps_buf keys;
    ps_buf_init(&keys);
    if (ps_fields_json_keys(f, data, len, &keys) == 0) {
        size_t used = strlen(f->detail);
        int w = snprintf(f->detail + used, sizeof f->detail - used, " (fields: ");
        for (size_t off = 0; w > 0 && off < keys.len; off += strlen(keys.data + off) + 1) {
            used = strlen(f->detail);
            if (sizeof f->detail - used < 16 + strlen(keys.data + off)) {
                snprintf(f->detail + used, sizeof f->detail - used, "%s...", off ? ", " : "");
                break;
            }
            snprintf(f->detail + used, sizeof f->detail - used, "%s%s", off ? ", " : "",
                     keys.data + off);
        }
        used = strlen(f->detail);
        if (used + 2 <= sizeof f->detail)
            snprintf(f->detail + used, sizeof f->detail - used, ")");
    }
    ps_buf_free(&keys);
}

int ps_fields_json_keys(ps_fields *f, const char *data, size_t len, ps_buf *out)
{
    ps_buf_reset(out);
    json_t *root = f->root;
    if (!root) {
        json_error_t jerr;
        root = json_loadb(data, len, JSON_ALLOW_NUL | JSON_DECODE_ANY, &jerr);
    }
    int rc = json_is_object(root) ? 0 : -1;
    const char *key;
    json_t *v;
    if (!rc)
        json_object_foreach(root, key, v)
        {
            (void)v;
            if (ps_buf_append(out, key, strlen(key) + 1))
                rc = -1;
        }
    if (root != f->root)
        json_decref(root);
    return rc;
}

int ps_fields_from_json(ps_fields *f, const char *data, size_t len, const ps_field_names *names)
{
    ps_fields_clear(f);
    const char *want[MAX_WANTED];
    size_t n = wanted_names(names, want);
    value v[MAX_WANTED];
    /* Fast path: flat records, no DOM. */
    ps_json_value fv[MAX_WANTED];
    int rc = ps_json_fast_extract(data, len, want, n, fv, &f->scratch);
    if (rc < 0)
        return rc;
    if (rc == 1) {
        for (size_t i = 0; i < n; i++)
            v[i] = from_fast(&fv[i]);
    } else {
        json_error_t jerr;
        f->root = json_loadb(data, len,
                             JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL | JSON_DECODE_ANY, &jerr);
        if (!f->root) {
            f->reason = "bad_json";
            snprintf(f->detail, sizeof f->detail, "invalid JSON at column %d: %s", jerr.column,
                     jerr.text);
            return 1;
        }
        if (!json_is_object(f->root)) {
            value r = from_jansson(f->root);
            return reject(f, "wrong_type", "the record is %s, expected a JSON object",
                          type_name(&r));
        }
        /* "query" and "SQL" (the default sql's fallbacks) are only ever
         * literal keys. */
        for (size_t i = 0; i < n; i++) {
            bool fallback = names->sql.n == 0 && i > names->question.n &&
                            i < names->question.n + PS_DEFAULT_SQL_NAMES;
            v[i] = from_jansson(fallback ? json_object_get(f->root, want[i])
                                         : ps_fields_lookup(f->root, want[i]));
        }
    }
    rc = extract(f, names, v);
    if (rc == 1 && strcmp(f->reason, "missing_field") == 0)
        append_keys(f, data, len);
    return rc;
}

static ssize_t column_of(const char *const *cols, size_t ncols, const char *name)
{
    for (size_t i = 0; i < ncols; i++)
        if (strcmp(cols[i], name) == 0)
            return (ssize_t)i;
    return -1;
}

/* The column of the first candidate the header has, or -1. */
static ssize_t spec_column(const char *const *cols, size_t ncols, const ps_field_spec *s)
{
    if (s->n == 0) { /* the default sql */
        ssize_t c = column_of(cols, ncols, "sql");
        if (c < 0)
            c = column_of(cols, ncols, "query");
        return c >= 0 ? c : column_of(cols, ncols, "SQL");
    }
    for (size_t i = 0; i < s->n; i++) {
        ssize_t c = column_of(cols, ncols, s->cand[i]);
        if (c >= 0)
            return c;
    }
    return -1;
}

int ps_fields_map_columns(ps_column_map *m, const char *const *cols, size_t ncols,
                          const ps_field_names *names, char *detail, size_t dsz)
{
    m->question = spec_column(cols, ncols, &names->question);
    m->sql = spec_column(cols, ncols, &names->sql);
    m->label = spec_column(cols, ncols, &names->label);
    m->id = spec_column(cols, ncols, &names->id);
    m->db = names->db.n ? spec_column(cols, ncols, &names->db) : -1;
    for (size_t i = 0; i < PS_EXTRA_FIELDS; i++)
        m->extra[i] = i < names->n_extra ? column_of(cols, ncols, names->extra[i]) : -1;
    m->difficulty = names->difficulty.n ? spec_column(cols, ncols, &names->difficulty) : -1;
    if (m->question < 0 || m->sql < 0) {
        const ps_field_spec *s = m->question < 0 ? &names->question : &names->sql;
        int w = snprintf(detail, dsz, "the header has no column '%s' (columns: ", s->text);
        for (size_t i = 0; w > 0 && i < ncols && (size_t)w < dsz; i++)
            w += snprintf(detail + w, dsz - (size_t)w, "%s%s", i ? ", " : "", cols[i]);
        if (w > 0 && (size_t)w < dsz)
            w += snprintf(detail + w, dsz - (size_t)w, ")");
        const char *near = ps_nearest_name(s->n ? s->cand[0] : "sql", cols, ncols);
        if (near && w > 0 && (size_t)w < dsz)
            snprintf(detail + w, dsz - (size_t)w, "; did you mean '%s'?", near);
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
    f->examined = true;
    f->present = PS_HAS_QUESTION | PS_HAS_SQL | (m->label >= 0 ? PS_HAS_LABEL : 0) |
                 (m->id >= 0 ? PS_HAS_ID : 0);
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
    if (m->db >= 0) {
        f->db = vals[m->db];
        f->db_len = lens[m->db];
    }
    ps_buf_reset(&f->difficulty_store);
    if (m->difficulty >= 0 && lens[m->difficulty] > 0 &&
        !memchr(vals[m->difficulty], '\0', lens[m->difficulty]) &&
        !ps_buf_append(&f->difficulty_store, vals[m->difficulty], lens[m->difficulty]) &&
        !ps_buf_putc(&f->difficulty_store, '\0'))
        f->difficulty = f->difficulty_store.data;
    for (size_t i = 0; i < PS_EXTRA_FIELDS; i++) /* a column the header lacks: NULL */
        if (m->extra[i] >= 0) {
            f->extra[i] = vals[m->extra[i]];
            f->extra_len[i] = lens[m->extra[i]];
        }
    return 0;
}

int ps_fields_from_turn(ps_fields *f, json_t *root, json_t *turn, const ps_field_names *names)
{
    ps_fields_clear(f);
    f->root = json_incref(root);
    const char *want[MAX_WANTED];
    size_t n = wanted_names(names, want);
    value v[MAX_WANTED];
    size_t from_turn = names->question.n + names->sql.n;
    for (size_t i = 0; i < n; i++)
        v[i] = from_jansson(ps_fields_lookup(i < from_turn ? turn : root, want[i]));
    return extract(f, names, v);
}
