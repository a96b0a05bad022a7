/* Spider-format tables.json → ps_schema (Spider, CSpider, SParC, CoSQL,
 * BIRD's dev_tables.json, DuSQL's db_schema.json).
 *
 * The names kept are the ones SQL writes: table_names_original and
 * column_names_original, or table_names/column_names when a set (DuSQL)
 * has no _original forms. Tables named sqlite_* (Spider ships
 * sqlite_sequence for AUTOINCREMENT databases) are SQLite's own: they are
 * dropped with their columns, and column and key indexes are renumbered. */
#include "schema/schema.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#define TABLES_FILE_MAX ((size_t)256 << 20)

/* What one database object is being turned into, and where it is. */
typedef struct db_parse {
    const char *origin;
    const char *db_id;
    ps_error *err;
    ps_schema *d;
    long *tmap;     /* raw table index → kept index, or -1 */
    long *cmap;     /* raw column index → kept index, or -1 */
    size_t n_raw_tables, n_raw_columns;
} db_parse;

static int bad(db_parse *p, const char *member, const char *why)
{
    return ps_error_set(p->err, PS_EFORMAT, "%s: database '%s': %s: %s", p->origin, p->db_id,
                        member, why);
}

static int nomem(db_parse *p)
{
    return ps_error_set(p->err, PS_ENOMEM, "%s: database '%s': out of memory", p->origin,
                        p->db_id);
}

/* The member `name`, else `fallback` (may be NULL); *used names it. */
static json_t *member2(json_t *o, const char *name, const char *fallback, const char **used)
{
    json_t *v = json_object_get(o, name);
    *used = name;
    if (!v && fallback) {
        v = json_object_get(o, fallback);
        if (v)
            *used = fallback;
    }
    return v;
}

/* Spider's natural-language names ("table_names", "column_names") beside
 * the _original ones the SQL writes: an array of the same length, or NULL
 * (a set without them, or one that has only the natural ones). */
static json_t *natural_of(json_t *o, const char *used, const char *orig, const char *nat,
                          json_t *arr)
{
    json_t *v = strcmp(used, orig) ? NULL : json_object_get(o, nat);
    return json_is_array(v) && json_array_size(v) == json_array_size(arr) ? v : NULL;
}

static bool is_sqlite_internal(const char *name) { return strncasecmp(name, "sqlite_", 7) == 0; }

static int parse_tables(db_parse *p, json_t *o)
{
    const char *mname;
    json_t *arr = member2(o, "table_names_original", "table_names", &mname);
    if (!json_is_array(arr))
        return bad(p, mname, arr ? "not an array" : "missing");
    size_t n = json_array_size(arr);
    p->n_raw_tables = n;
    p->tmap = malloc((n ? n : 1) * sizeof *p->tmap);
    p->d->tables = calloc(n ? n : 1, sizeof *p->d->tables);
    json_t *nat = natural_of(o, mname, "table_names_original", "table_names", arr);
    if (nat && !(p->d->tables_natural = calloc(n ? n : 1, sizeof *p->d->tables_natural)))
        return nomem(p);
    if (!p->tmap || !p->d->tables)
        return nomem(p);
    for (size_t i = 0; i < n; i++) {
        json_t *t = json_array_get(arr, i);
        if (!json_is_string(t)) {
            char m[96];
            snprintf(m, sizeof m, "%s[%zu]", mname, i);
            return bad(p, m, "not a string");
        }
        p->tmap[i] = -1;
        if (is_sqlite_internal(json_string_value(t)))
            continue;
        char *name = strdup(json_string_value(t));
        if (!name)
            return nomem(p);
        p->tmap[i] = (long)p->d->n_tables;
        json_t *tn = nat ? json_array_get(nat, i) : NULL;
        if (json_is_string(tn) &&
            !(p->d->tables_natural[p->d->n_tables] = strdup(json_string_value(tn)))) {
            free(name);
            return nomem(p);
        }
        p->d->tables[p->d->n_tables++] = name;
    }
    return 0;
}

/* One [table index, name] entry of the column list; `type`, `ex` (its
 * entry of pairshard's own column_examples, which a set's embedded
 * schemas.json carries) and `nat` (its entry of column_names) may be
 * NULL. */
static int parse_column(db_parse *p, const char *mname, size_t i, json_t *c, json_t *type,
                        json_t *ex, json_t *nat)
{
    char m[96];
    snprintf(m, sizeof m, "%s[%zu]", mname, i);
    json_t *ti = json_array_get(c, 0), *nm = json_array_get(c, 1);
    if (!json_is_array(c) || json_array_size(c) != 2 || !json_is_integer(ti) || !json_is_string(nm))
        return bad(p, m, "expected [table index, name]");
    json_int_t t = json_integer_value(ti);
    p->cmap[i] = -1;
    if (t == -1) /* Spider's "*" */
        return 0;
    if (t < 0 || (size_t)t >= p->n_raw_tables)
        return bad(p, m, "table index out of range");
    if (type && !json_is_string(type)) {
        snprintf(m, sizeof m, "column_types[%zu]", i);
        return bad(p, m, "not a string");
    }
    if (p->tmap[t] < 0)
        return 0; /* a column of a sqlite_* table */
    ps_schema_column *col = &p->d->columns[p->d->n_columns];
    col->name = strdup(json_string_value(nm));
    col->type = strdup(type ? json_string_value(type) : "");
    if (!col->name || !col->type) {
        free(col->name);
        free(col->type);
        return nomem(p);
    }
    col->table = (uint32_t)p->tmap[t];
    col->primary = false;
    col->examples = NULL;
    p->cmap[i] = (long)p->d->n_columns++;
    if (json_is_string(ex) && !(col->examples = strdup(json_string_value(ex))))
        return nomem(p);
    json_t *nn = json_array_get(nat, 1);
    if (json_is_integer(json_array_get(nat, 0)) && json_is_string(nn) &&
        !(col->natural = strdup(json_string_value(nn))))
        return nomem(p);
    return 0;
}

static int parse_columns(db_parse *p, json_t *o)
{
    const char *mname;
    json_t *arr = member2(o, "column_names_original", "column_names", &mname);
    if (!json_is_array(arr))
        return bad(p, mname, arr ? "not an array" : "missing");
    json_t *types = json_object_get(o, "column_types");
    json_t *examples = json_object_get(o, "column_examples");
    json_t *nat = natural_of(o, mname, "column_names_original", "column_names", arr);
    size_t n = json_array_size(arr);
    if (examples && (!json_is_array(examples) || json_array_size(examples) != n))
        return bad(p, "column_examples", "not one entry per entry of the column list");
    if (types && (!json_is_array(types) || json_array_size(types) != n))
        return bad(p, "column_types", json_is_array(types)
                                          ? "not one type per entry of the column list"
                                          : "not an array");
    p->n_raw_columns = n;
    p->cmap = malloc((n ? n : 1) * sizeof *p->cmap);
    p->d->columns = calloc(n ? n : 1, sizeof *p->d->columns);
    if (!p->cmap || !p->d->columns)
        return nomem(p);
    for (size_t i = 0; i < n; i++) {
        int rc = parse_column(p, mname, i, json_array_get(arr, i),
                              types ? json_array_get(types, i) : NULL,
                              examples ? json_array_get(examples, i) : NULL,
                              nat ? json_array_get(nat, i) : NULL);
        if (rc)
            return rc;
    }
    return 0;
}

/* A raw column index from JSON: -1 when it is out of range. */
static long raw_column(db_parse *p, json_t *v)
{
    if (!json_is_integer(v))
        return -1;
    json_int_t c = json_integer_value(v);
    return c >= 0 && (size_t)c < p->n_raw_columns ? (long)c : -1;
}

/* primary_keys: each entry a column index, or an array of them (a
 * composite key, as BIRD writes it). */
static int parse_primary(db_parse *p, json_t *o)
{
    json_t *arr = json_object_get(o, "primary_keys");
    if (!arr)
        return 0;
    if (!json_is_array(arr))
        return bad(p, "primary_keys", "not an array");
    for (size_t i = 0; i < json_array_size(arr); i++) {
        json_t *e = json_array_get(arr, i);
        size_t k = json_is_array(e) ? json_array_size(e) : 1;
        for (size_t j = 0; j < k; j++) {
            long c = raw_column(p, json_is_array(e) ? json_array_get(e, j) : e);
            if (c < 0) {
                char m[64];
                snprintf(m, sizeof m, "primary_keys[%zu]", i);
                return bad(p, m, "not a column index in range");
            }
            if (p->cmap[c] >= 0)
                p->d->columns[p->cmap[c]].primary = true;
        }
    }
    return 0;
}

static int parse_foreign(db_parse *p, json_t *o)
{
    json_t *arr = json_object_get(o, "foreign_keys");
    if (!arr)
        return 0;
    if (!json_is_array(arr))
        return bad(p, "foreign_keys", "not an array");
    size_t n = json_array_size(arr);
    p->d->fks = calloc(n ? n : 1, sizeof *p->d->fks);
    if (!p->d->fks)
        return nomem(p);
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(arr, i);
        long a = json_is_array(e) && json_array_size(e) == 2 ? raw_column(p, json_array_get(e, 0))
                                                             : -1;
        long b = a >= 0 ? raw_column(p, json_array_get(e, 1)) : -1;
        if (a < 0 || b < 0) {
            char m[64];
            snprintf(m, sizeof m, "foreign_keys[%zu]", i);
            return bad(p, m, "expected [column index, referenced column index] in range");
        }
        if (p->cmap[a] < 0 || p->cmap[b] < 0)
            continue; /* a key of a dropped sqlite_* table */
        p->d->fks[p->d->n_fks].column = (uint32_t)p->cmap[a];
        p->d->fks[p->d->n_fks].ref_column = (uint32_t)p->cmap[b];
        p->d->n_fks++;
    }
    return 0;
}

static int parse_db(json_t *o, size_t index, const char *origin, ps_schema **out, ps_error *err)
{
    json_t *id = json_object_get(o, "db_id");
    if (!json_is_object(o) || !json_is_string(id) || !json_string_length(id))
        return ps_error_set(err, PS_EFORMAT, "%s: database #%zu: %s", origin, index,
                            json_is_object(o) ? "db_id missing, empty or not a string"
                                              : "not an object");
    db_parse p = {.origin = origin, .db_id = json_string_value(id), .err = err};
    p.d = calloc(1, sizeof *p.d);
    if (!p.d)
        return nomem(&p);
    int rc = 0;
    if (!(p.d->db_id = strdup(p.db_id)) || !(p.d->origin = strdup(origin)))
        rc = nomem(&p);
    if (!rc)
        rc = parse_tables(&p, o);
    if (!rc)
        rc = parse_columns(&p, o);
    if (!rc)
        rc = parse_primary(&p, o);
    if (!rc)
        rc = parse_foreign(&p, o);
    free(p.tmap);
    free(p.cmap);
    if (rc) {
        ps_schema_free(p.d);
        return rc;
    }
    *out = p.d;
    return 0;
}

int ps_schemas_add_tables_json(ps_schemas *s, const char *text, size_t len, const char *origin,
                               ps_error *err)
{
    if (!origin)
        origin = "<tables>";
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return ps_error_set(err, PS_EFORMAT, "%s: not JSON: line %d, column %d: %s", origin,
                            je.line, je.column, je.text);
    int rc = 0;
    if (!json_is_array(root))
        rc = ps_error_set(err, PS_EFORMAT,
                          "%s: expected a JSON array of databases (Spider's tables.json)", origin);
    for (size_t i = 0; !rc && i < json_array_size(root); i++) {
        ps_schema *d = NULL;
        rc = parse_db(json_array_get(root, i), i, origin, &d, err);
        if (!rc)
            rc = ps_schemas_add(s, d, err);
    }
    json_decref(root);
    return rc;
}

int ps_schemas_load_tables(ps_schemas *s, const char *path, ps_error *err)
{
    char *text;
    size_t len;
    int rc = ps_file_read_all(path, "tables file", TABLES_FILE_MAX, &text, &len, err);
    if (rc)
        return rc;
    rc = ps_schemas_add_tables_json(s, text, len, path, err);
    free(text);
    return rc;
}
