/* Example values of a database's columns, for {schema:ddl_values}: what
 * OmniSQL-style prompts show the model so that it writes 'France' rather
 * than 'france'. Read once, when the databases are loaded, so rendering
 * never touches a file. */
#include "schema/sql_conn.h"

#include <stdlib.h>
#include <string.h>

#define EXAMPLES 3
#define EXAMPLE_CHARS 40
#define ROWS_LOOKED_AT 10000

/* Appends a text value as a quoted SQL literal cut at EXAMPLE_CHARS
 * characters (a cut value ends in "..." inside the quotes). */
static int put_text(ps_buf *out, const unsigned char *v, size_t n)
{
    size_t chars = 0, i = 0;
    int rc = ps_buf_putc(out, '\'');
    for (; !rc && i < n && chars < EXAMPLE_CHARS; i++) {
        if ((v[i] & 0xC0) != 0x80)
            chars++;
        if (chars > EXAMPLE_CHARS)
            break;
        rc = v[i] == '\'' ? ps_buf_puts(out, "''") : v[i] < 0x20 ? ps_buf_putc(out, ' ')
                                                                   : ps_buf_putc(out, (char)v[i]);
    }
    while (!rc && i < n && (v[i] & 0xC0) == 0x80) /* finish the last character */
        rc = ps_buf_putc(out, (char)v[i++]);
    if (!rc && i < n)
        rc = ps_buf_puts(out, "...");
    return rc || ps_buf_putc(out, '\'') ? PS_ENOMEM : 0;
}

/* The examples of column c as one string, or NULL when it has none. */
static int column_examples(sqlite3 *db, const ps_schema *d, size_t c, char **out)
{
    ps_buf q, v;
    ps_buf_init(&q);
    ps_buf_init(&v);
    *out = NULL;
    int rc = ps_buf_puts(&q, "SELECT DISTINCT x FROM (SELECT ") ||
                     ps_sql_put_ident(&q, d->columns[c].name, true) ||
                     ps_buf_puts(&q, " AS x FROM ") ||
                     ps_sql_put_ident(&q, d->tables[d->columns[c].table], true) ||
                     ps_buf_printf(&q, " LIMIT %d) WHERE x IS NOT NULL LIMIT %d", ROWS_LOOKED_AT,
                                   EXAMPLES)
                 ? PS_ENOMEM
                 : 0;
    sqlite3_stmt *st = NULL;
    if (!rc && sqlite3_prepare_v2(db, q.data, -1, &st, NULL) != SQLITE_OK)
        st = NULL; /* a column SQLite cannot select (a generated one...): no examples */
    while (!rc && st && sqlite3_step(st) == SQLITE_ROW) {
        int type = sqlite3_column_type(st, 0);
        if (type == SQLITE_BLOB)
            continue;
        const unsigned char *t = sqlite3_column_text(st, 0);
        size_t n = (size_t)sqlite3_column_bytes(st, 0);
        if (v.len && ps_buf_puts(&v, ", "))
            rc = PS_ENOMEM;
        else if (type == SQLITE_TEXT ? put_text(&v, t, n) : ps_buf_append(&v, t, n))
            rc = PS_ENOMEM;
    }
    sqlite3_finalize(st);
    if (!rc && v.len && !(*out = strndup(v.data, v.len)))
        rc = PS_ENOMEM;
    ps_buf_free(&q);
    ps_buf_free(&v);
    return rc;
}

int ps_schema_read_examples(ps_schema *d, ps_error *err)
{
    sqlite3 *db = NULL;
    int rc = ps_sql_open_file(d->db_path, &db, err);
    for (size_t c = 0; !rc && c < d->n_columns; c++) {
        free(d->columns[c].examples);
        d->columns[c].examples = NULL;
        if (column_examples(db, d, c, &d->columns[c].examples))
            rc = ps_error_set(err, PS_ENOMEM, "%s: out of memory reading example values",
                              d->db_path);
    }
    if (db)
        sqlite3_close_v2(db);
    return rc;
}
