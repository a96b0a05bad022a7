/* A directory in Spider's layout, DIR/<db_id>/<db_id>.sqlite → schemas.
 *
 * A database a tables file already described keeps that schema (it is the
 * one the set's questions were written against) and gains its file, for
 * execution. Any other gets its schema from the file: the tables of
 * sqlite_master (not sqlite_*) in creation order, their columns from
 * table_info (name, declared type, primary key), and foreign_key_list,
 * resolved by name (case-insensitively, as SQLite resolves them). */
#include "schema/sql_conn.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <sys/stat.h>

static int bad_file(const char *path, sqlite3 *c, ps_error *err)
{
    return ps_error_set(err, PS_EFORMAT, "%s: SQLite cannot read its schema: %s", path,
                        sqlite3_errmsg(c));
}

static int add_column(ps_schema *d, size_t *cap, uint32_t table, const char *name,
                      const char *type, bool pk)
{
    if (ps_array_grow(&d->columns, cap, d->n_columns, sizeof *d->columns, 16))
        return PS_ENOMEM;
    ps_schema_column *col = &d->columns[d->n_columns];
    col->name = strdup(name ? name : "");
    col->type = strdup(type ? type : "");
    col->table = table;
    col->primary = pk;
    col->examples = NULL;
    col->natural = NULL; /* a database file has no natural-language names */
    if (!col->name || !col->type) {
        free(col->name);
        free(col->type);
        return PS_ENOMEM;
    }
    d->n_columns++;
    return 0;
}

/* What each_row calls per result row: t is the table the query ran for,
 * *cap the capacity of the array it grows. 0, or a PS_E* code. */
typedef int (*row_fn)(ps_schema *d, size_t t, sqlite3_stmt *st, size_t *cap, const char *path,
                      ps_error *err);

/* Runs `sql` once (per_table false) or once per table of d, with ?1 bound
 * to the table's name, calling row() for each result row. */
static int each_row(sqlite3 *c, const char *path, ps_schema *d, const char *sql, bool per_table,
                    row_fn row, ps_error *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(c, sql, -1, &st, NULL) != SQLITE_OK)
        return bad_file(path, c, err);
    size_t cap = 0, runs = per_table ? d->n_tables : 1;
    int rc = 0;
    for (size_t t = 0; !rc && t < runs; t++) {
        if (per_table) {
            sqlite3_reset(st);
            sqlite3_bind_text(st, 1, d->tables[t], -1, SQLITE_STATIC);
        }
        int r;
        while (!rc && (r = sqlite3_step(st)) == SQLITE_ROW)
            rc = row(d, t, st, &cap, path, err);
        if (!rc && r != SQLITE_DONE)
            rc = bad_file(path, c, err);
    }
    sqlite3_finalize(st);
    return rc;
}

static int table_row(ps_schema *d, size_t t, sqlite3_stmt *st, size_t *cap, const char *path,
                     ps_error *err)
{
    (void)t;
    const char *name = (const char *)sqlite3_column_text(st, 0);
    if (ps_array_grow(&d->tables, cap, d->n_tables, sizeof *d->tables, 8) ||
        !(d->tables[d->n_tables] = strdup(name ? name : "")))
        return ps_error_set(err, PS_ENOMEM, "%s: out of memory", path);
    d->n_tables++;
    return 0;
}

static int column_row(ps_schema *d, size_t t, sqlite3_stmt *st, size_t *cap, const char *path,
                      ps_error *err)
{
    if (add_column(d, cap, (uint32_t)t, (const char *)sqlite3_column_text(st, 0),
                   (const char *)sqlite3_column_text(st, 1), sqlite3_column_int(st, 2) > 0))
        return ps_error_set(err, PS_ENOMEM, "%s: out of memory", path);
    return 0;
}

/* The column of table t named `name` (NULL: the seq-th primary key column
 * of t, for a key that references the primary key implicitly); -1 when
 * there is none. */
static long find_column(const ps_schema *d, long t, const char *name, int seq)
{
    for (size_t c = 0; t >= 0 && c < d->n_columns; c++) {
        if (d->columns[c].table != (uint32_t)t)
            continue;
        if (name ? !strcasecmp(d->columns[c].name, name) : d->columns[c].primary && seq-- == 0)
            return (long)c;
    }
    return -1;
}

static long find_table(const ps_schema *d, const char *name)
{
    for (size_t t = 0; name && t < d->n_tables; t++)
        if (!strcasecmp(d->tables[t], name))
            return (long)t;
    return -1;
}

/* Foreign keys that do not resolve (a table or column that is not there)
 * are left out, as SQLite itself ignores them until they are used. */
static int fk_row(ps_schema *d, size_t t, sqlite3_stmt *st, size_t *cap, const char *path,
                  ps_error *err)
{
    long rt = find_table(d, (const char *)sqlite3_column_text(st, 0));
    long from = find_column(d, (long)t, (const char *)sqlite3_column_text(st, 1), 0);
    long to = find_column(d, rt, (const char *)sqlite3_column_text(st, 2), sqlite3_column_int(st, 3));
    if (from < 0 || to < 0)
        return 0;
    if (ps_array_grow(&d->fks, cap, d->n_fks, sizeof *d->fks, 8))
        return ps_error_set(err, PS_ENOMEM, "%s: out of memory", path);
    d->fks[d->n_fks++] = (ps_schema_fk){(uint32_t)from, (uint32_t)to};
    return 0;
}

/* The tables of sqlite_master (not sqlite_*) in creation order, then their
 * columns, then their foreign keys. */
static int read_schema(sqlite3 *c, const char *path, ps_schema *d, ps_error *err)
{
    int rc = each_row(c, path, d,
                      "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE "
                      "'sqlite\\_%' ESCAPE '\\' ORDER BY rowid",
                      false, table_row, err);
    if (!rc)
        rc = each_row(c, path, d, "SELECT name, type, pk FROM pragma_table_info(?1) ORDER BY cid",
                      true, column_row, err);
    if (!rc)
        rc = each_row(c, path, d,
                      "SELECT \"table\", \"from\", \"to\", seq FROM "
                      "pragma_foreign_key_list(?1) ORDER BY id, seq",
                      true, fk_row, err);
    return rc;
}

/* The schema of the file at `path`, as database `db_id`. */
static int read_database(const char *path, const char *db_id, ps_schema **out, ps_error *err)
{
    sqlite3 *c;
    int rc = ps_sql_open_file(path, &c, err);
    if (rc)
        return rc;
    ps_schema *d = calloc(1, sizeof *d);
    if (!d || !(d->db_id = strdup(db_id)) || !(d->origin = strdup(path)) ||
        !(d->db_path = strdup(path)))
        rc = ps_error_set(err, PS_ENOMEM, "%s: out of memory", path);
    if (!rc)
        rc = read_schema(c, path, d, err);
    sqlite3_close_v2(c);
    if (rc) {
        ps_schema_free(d);
        return rc;
    }
    *out = d;
    return 0;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The entries of `dir` but . and .., sorted (the order of loading, and so
 * of messages, does not depend on the filesystem's). */
static int list_dir(const char *dir, char ***names, size_t *n, ps_error *err)
{
    DIR *dh = opendir(dir);
    if (!dh)
        return ps_error_set(err, ps_errno_code(errno), "%s: cannot open the databases directory: %s",
                            dir, strerror(errno));
    size_t cap = 0;
    int rc = 0;
    struct dirent *e;
    while (!rc && (e = readdir(dh))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        if (ps_array_grow(names, &cap, *n, sizeof **names, 64) ||
            !((*names)[*n] = strdup(e->d_name)))
            rc = ps_error_set(err, PS_ENOMEM, "%s: out of memory", dir);
        else
            ++*n;
    }
    closedir(dh);
    if (*n)
        qsort(*names, *n, sizeof **names, cmp_names);
    return rc;
}

/* One DIR/<name>/<name>.sqlite, when it is there. */
static int load_one(ps_schemas *s, const char *dir, const char *name, ps_error *err)
{
    ps_buf path;
    ps_buf_init(&path);
    if (ps_buf_printf(&path, "%s/%s/%s.sqlite", dir, name, name)) {
        ps_buf_free(&path);
        return ps_error_set(err, PS_ENOMEM, "%s: out of memory", dir);
    }
    struct stat st;
    int rc = 0;
    if (stat(path.data, &st) == 0 && S_ISREG(st.st_mode)) {
        ps_schema *d = NULL;
        rc = read_database(path.data, name, &d, err);
        ps_schema *known = rc ? NULL : ps_schemas_find_mut(s, name, strlen(name));
        if (known) {
            if (!known->db_path) {
                known->db_path = d->db_path;
                d->db_path = NULL;
            }
            ps_schema_free(d);
            if (!strcmp(known->db_path, path.data))
                rc = ps_schema_read_examples(known, err);
        } else if (!rc && !(rc = ps_schema_read_examples(d, err))) {
            rc = ps_schemas_add(s, d, err);
        } else if (d) {
            ps_schema_free(d);
        }
    }
    ps_buf_free(&path);
    return rc;
}

int ps_schemas_load_databases(ps_schemas *s, const char *dir, ps_error *err)
{
    char **names = NULL;
    size_t n = 0;
    int rc = list_dir(dir, &names, &n, err);
    for (size_t i = 0; !rc && i < n; i++)
        rc = load_one(s, dir, names[i], err);
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return rc;
}
