/* A schema as text a model reads: {schema:picard} and {schema:ddl}. The
 * exact formats, with examples, are in docs/CLEANING.md ("Text-to-SQL
 * inputs: schema serializations"). */
#include "schema/schema.h"

#include <sqlite3.h>
#include <utf8proc.h>

static bool keep_table(const ps_schema_mask *m, size_t t)
{
    return !m || !m->keep_table || m->keep_table[t];
}

/* A column is kept when it and its table are. */
static bool keep_column(const ps_schema *s, const ps_schema_mask *m, size_t c)
{
    return keep_table(m, s->columns[c].table) && (!m || !m->keep_column || m->keep_column[c]);
}

static bool plain_word(const char *name)
{
    if (!((*name >= 'A' && *name <= 'Z') || (*name >= 'a' && *name <= 'z') || *name == '_'))
        return false;
    for (const char *p = name + 1; *p; p++)
        if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
              *p == '_'))
            return false;
    return true;
}

int ps_sql_put_ident(ps_buf *out, const char *name, bool always)
{
    size_t len = strlen(name);
    /* A keyword as a bare name (a table called "order") would not parse
     * as DDL, so it is quoted too. */
    if (!always && plain_word(name) && !sqlite3_keyword_check(name, (int)len))
        return ps_buf_append(out, name, len);
    int rc = ps_buf_putc(out, '"');
    for (const char *p = name; !rc && *p; p++)
        rc = *p == '"' ? ps_buf_append(out, "\"\"", 2) : ps_buf_putc(out, *p);
    return rc ? rc : ps_buf_putc(out, '"');
}

/* Appends `s` lower-cased as Python's str.lower() does for the names of
 * real schemas: every code point's simple lower-case mapping (utf8proc).
 * Bytes that are not UTF-8 are copied as they are. */
static int put_lower(ps_buf *out, const char *s)
{
    const utf8proc_uint8_t *p = (const utf8proc_uint8_t *)s;
    size_t len = strlen(s);
    while (len) {
        if (*p < 0x80) {
            char c = (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
            if (ps_buf_putc(out, c))
                return PS_ENOMEM;
            p++, len--;
            continue;
        }
        utf8proc_int32_t cp;
        utf8proc_ssize_t n = utf8proc_iterate(p, (utf8proc_ssize_t)len, &cp);
        if (n <= 0) {
            if (ps_buf_putc(out, (char)*p))
                return PS_ENOMEM;
            p++, len--;
            continue;
        }
        utf8proc_uint8_t enc[4];
        utf8proc_ssize_t w = utf8proc_encode_char(utf8proc_tolower(cp), enc);
        if (ps_buf_append(out, enc, (size_t)w))
            return PS_ENOMEM;
        p += n, len -= (size_t)n;
    }
    return 0;
}

/* PICARD's "peteshaw" serialization with the db_id and without database
 * content: " | db_id | table : col , col | table : ...", names lower-cased,
 * the db_id as it is. Only kept tables appear, and only their kept
 * columns (a kept table whose columns are all dropped shows "table : "). */
static int picard(const ps_schema *s, const ps_schema_mask *m, ps_buf *out)
{
    int rc = ps_buf_puts(out, " | ");
    if (!rc)
        rc = ps_buf_puts(out, s->db_id);
    for (size_t t = 0; !rc && t < s->n_tables; t++) {
        if (!keep_table(m, t))
            continue;
        rc = ps_buf_puts(out, " | ");
        if (!rc)
            rc = put_lower(out, s->tables[t]);
        if (!rc)
            rc = ps_buf_puts(out, " : ");
        bool first = true;
        for (size_t c = 0; !rc && c < s->n_columns; c++) {
            if (s->columns[c].table != t || !keep_column(s, m, c))
                continue;
            if (!first)
                rc = ps_buf_puts(out, " , ");
            if (!rc)
                rc = put_lower(out, s->columns[c].name);
            first = false;
        }
    }
    return rc;
}

/* Where a CREATE TABLE body stands: whether a line was written, and the
 * comment (a column's example values) that goes after the next comma. */
typedef struct ddl_body {
    bool first;
    const char *comment;
} ddl_body;

/* The comment owed to the line before, as " -- example values: ...". */
static int ddl_comment(ps_buf *out, ddl_body *b)
{
    int rc = b->comment ? ps_buf_puts(out, " -- example values: ") ||
                              ps_buf_puts(out, b->comment)
                        : 0;
    b->comment = NULL;
    return rc;
}

/* ",\n  " before every line of a CREATE TABLE body but the first (the
 * line before's comment after its comma). */
static int ddl_sep(ps_buf *out, ddl_body *b)
{
    int rc = b->first ? ps_buf_puts(out, "\n  ")
                      : ps_buf_putc(out, ',') || ddl_comment(out, b) || ps_buf_puts(out, "\n  ");
    b->first = false;
    return rc;
}

static int ddl_keys(const ps_schema *s, const ps_schema_mask *m, size_t t, ps_buf *out,
                    ddl_body *b)
{
    int rc = 0;
    bool pk_open = false;
    for (size_t c = 0; !rc && c < s->n_columns; c++) {
        if (s->columns[c].table != t || !s->columns[c].primary || !keep_column(s, m, c))
            continue;
        if (!pk_open)
            rc = ddl_sep(out, b) || ps_buf_puts(out, "PRIMARY KEY (");
        else
            rc = ps_buf_puts(out, ", ");
        pk_open = true;
        if (!rc)
            rc = ps_sql_put_ident(out, s->columns[c].name, false);
    }
    if (!rc && pk_open)
        rc = ps_buf_putc(out, ')');
    for (size_t k = 0; !rc && k < s->n_fks; k++) {
        const ps_schema_fk *fk = &s->fks[k];
        if (s->columns[fk->column].table != t || !keep_column(s, m, fk->column) ||
            !keep_column(s, m, fk->ref_column))
            continue;
        rc = ddl_sep(out, b) || ps_buf_puts(out, "FOREIGN KEY (") ||
             ps_sql_put_ident(out, s->columns[fk->column].name, false) ||
             ps_buf_puts(out, ") REFERENCES ") ||
             ps_sql_put_ident(out, s->tables[s->columns[fk->ref_column].table], false) ||
             ps_buf_putc(out, '(') || ps_sql_put_ident(out, s->columns[fk->ref_column].name, false) ||
             ps_buf_putc(out, ')');
    }
    return rc ? PS_ENOMEM : 0;
}

static int ddl_table(const ps_schema *s, const ps_schema_mask *m, size_t t, bool values,
                     ps_buf *out)
{
    int rc = ps_buf_puts(out, "CREATE TABLE ") || ps_sql_put_ident(out, s->tables[t], false) ||
             ps_buf_puts(out, " (");
    ddl_body b = {true, NULL};
    for (size_t c = 0; !rc && c < s->n_columns; c++) {
        if (s->columns[c].table != t || !keep_column(s, m, c))
            continue;
        rc = ddl_sep(out, &b) || ps_sql_put_ident(out, s->columns[c].name, false);
        if (!rc && *s->columns[c].type)
            rc = ps_buf_putc(out, ' ') || ps_buf_puts(out, s->columns[c].type);
        b.comment = values ? s->columns[c].examples : NULL;
    }
    if (!rc)
        rc = ddl_keys(s, m, t, out, &b);
    if (!rc)
        rc = b.first ? ps_buf_puts(out, ");") : ddl_comment(out, &b) || ps_buf_puts(out, "\n);");
    return rc ? PS_ENOMEM : 0;
}

/* DAIL-SQL/OmniSQL-style DDL: one CREATE TABLE per kept table, columns
 * with their types (and, with `values`, a comment of example values after
 * each column's line), then PRIMARY KEY and FOREIGN KEY lines; tables
 * separated by a blank line. */
static int ddl(const ps_schema *s, const ps_schema_mask *m, bool values, ps_buf *out)
{
    bool first = true;
    for (size_t t = 0; t < s->n_tables; t++) {
        if (!keep_table(m, t))
            continue;
        if ((!first && ps_buf_puts(out, "\n\n")) || ddl_table(s, m, t, values, out))
            return PS_ENOMEM;
        first = false;
    }
    return 0;
}

int ps_schema_serialize(const ps_schema *s, ps_schema_style style, const ps_schema_mask *mask,
                        ps_buf *out)
{
    if (ps_buf_reserve(out, 64))
        return PS_ENOMEM;
    if (style == PS_SCHEMA_PICARD)
        return picard(s, mask, out);
    return ddl(s, mask, style == PS_SCHEMA_DDL_VALUES, out);
}
