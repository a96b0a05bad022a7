/* The tables and columns the gold SQL mentions: what schema selection
 * (select.c) is measured against — gold recall, in the build's report —
 * and never what it chooses by.
 *
 * "Mentioned" is decided on the SQL's identifiers, not by parsing it: every
 * bare word ([A-Za-z0-9_$] and any non-ASCII byte) and every quoted name
 * ("..." `...` [...]) outside string literals ('...') and comments counts,
 * compared case-insensitively. `T1.Name` mentions T1 and Name; a word that
 * is an alias or a keyword mentions a table only if one has that name,
 * which keeps more than needed, never less. Spider's "English" (a string
 * in double quotes) counts as a name for the same reason. */
#include "schema/schema.h"

#include <stdlib.h>
#include <utf8proc.h>

/* Appends `n` bytes of `s`, case-folded (ASCII fast; utf8proc's simple
 * lower-case mapping per code point otherwise; invalid bytes as they are),
 * and undoing the doubled quote `q` of a quoted name (0: none). */
static int fold(ps_buf *out, const char *s, size_t n, char q)
{
    const utf8proc_uint8_t *p = (const utf8proc_uint8_t *)s, *end = p + n;
    while (p < end) {
        if (*p < 0x80) {
            char c = (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
            if (ps_buf_putc(out, c))
                return PS_ENOMEM;
            p += q && *p == (unsigned char)q && p + 1 < end && p[1] == *p ? 2 : 1;
            continue;
        }
        utf8proc_int32_t cp;
        utf8proc_ssize_t k = utf8proc_iterate(p, end - p, &cp);
        if (k <= 0) {
            if (ps_buf_putc(out, (char)*p++))
                return PS_ENOMEM;
            continue;
        }
        utf8proc_uint8_t enc[4];
        utf8proc_ssize_t w = utf8proc_encode_char(utf8proc_tolower(cp), enc);
        if (ps_buf_append(out, enc, (size_t)w))
            return PS_ENOMEM;
        p += k;
    }
    return 0;
}

static bool word_byte(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '$' || c >= 0x80;
}

size_t ps_sql_quoted_end(const char *sql, size_t len, size_t i, char close, bool *closed)
{
    for (i++; i < len; i++) {
        if (sql[i] != close)
            continue;
        if (close != ']' && i + 1 < len && sql[i + 1] == close) {
            i++;
            continue;
        }
        if (closed)
            *closed = true;
        return i + 1;
    }
    if (closed)
        *closed = false;
    return len;
}

size_t ps_sql_comment_end(const char *sql, size_t len, size_t i, bool *closed)
{
    if (closed)
        *closed = true;
    if (sql[i] == '-' && i + 1 < len && sql[i + 1] == '-') {
        while (i < len && sql[i] != '\n')
            i++;
        return i;
    }
    if (sql[i] != '/' || i + 1 >= len || sql[i + 1] != '*')
        return i;
    for (size_t j = i + 2; j + 1 < len; j++)
        if (sql[j] == '*' && sql[j + 1] == '/')
            return j + 2;
    if (closed)
        *closed = false;
    return len;
}

/* Every identifier of `sql`, folded, NUL-separated, into `ids`. */
static int scan(const char *sql, size_t len, ps_buf *ids)
{
    size_t i = 0;
    while (i < len) {
        char c = sql[i];
        size_t start = i, end;
        char q = 0;
        size_t past_comment = ps_sql_comment_end(sql, len, i, NULL);
        if (c == '\'') {
            i = ps_sql_quoted_end(sql, len, i, '\'', NULL);
            continue;
        } else if (past_comment != i) {
            i = past_comment;
            continue;
        } else if (c == '"' || c == '`' || c == '[') {
            q = c == '[' ? ']' : c;
            i = ps_sql_quoted_end(sql, len, i, q, NULL);
            start++;
            end = i > start && sql[i - 1] == q ? i - 1 : i;
        } else if (word_byte((unsigned char)c)) {
            while (i < len && word_byte((unsigned char)sql[i]))
                i++;
            end = i;
        } else {
            i++;
            continue;
        }
        if (fold(ids, sql + start, end - start, q == ']' ? 0 : q) || ps_buf_putc(ids, '\0'))
            return PS_ENOMEM;
    }
    return 0;
}

/* Whether `name` (folded into `tmp`) is one of the NUL-separated ids. */
static int mentioned(const ps_buf *ids, const char *name, ps_buf *tmp, bool *yes)
{
    ps_buf_reset(tmp);
    if (fold(tmp, name, strlen(name), 0))
        return PS_ENOMEM;
    *yes = false;
    for (size_t at = 0; at < ids->len && !*yes;) {
        size_t l = strlen(ids->data + at);
        *yes = l == tmp->len && !memcmp(ids->data + at, tmp->data ? tmp->data : "", l);
        at += l + 1;
    }
    return 0;
}

int ps_schema_gold(const ps_schema *s, const char *sql, size_t len, unsigned char *gold_table,
                   unsigned char *gold_column)
{
    ps_buf ids, tmp;
    ps_buf_init(&ids);
    ps_buf_init(&tmp);
    int rc = scan(sql, len, &ids);
    for (size_t t = 0; !rc && t < s->n_tables; t++) {
        bool yes = false;
        rc = mentioned(&ids, s->tables[t], &tmp, &yes);
        gold_table[t] = yes;
    }
    for (size_t c = 0; !rc && c < s->n_columns; c++) {
        bool yes = false;
        if (gold_table[s->columns[c].table])
            rc = mentioned(&ids, s->columns[c].name, &tmp, &yes);
        gold_column[c] = yes;
    }
    ps_buf_free(&ids);
    ps_buf_free(&tmp);
    return rc;
}
