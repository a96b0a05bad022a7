/* SQL compiled against its schema: sqlite3_prepare_v2, nothing executed.
 * SQLite's message is kept as it is and also sorted into a few classes
 * (by its prefix) for the statistics. */
#include "schema/sql_conn.h"

#include <limits.h>

const char *ps_sql_class_name(ps_sql_class c)
{
    static const char *const names[PS_SQL_CLASSES] = {
        "ok",           "syntax",           "no_such_table",       "no_such_column",
        "ambiguous_column", "no_such_function", "multiple_statements", "other"};
    return (unsigned)c < PS_SQL_CLASSES ? names[c] : "other";
}

static bool starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* The class of one of SQLite's compile messages. */
static ps_sql_class classify(const char *m)
{
    if (strstr(m, "syntax error") || starts(m, "incomplete input") ||
        starts(m, "unrecognized token"))
        return PS_SQL_SYNTAX;
    if (starts(m, "no such table"))
        return PS_SQL_NO_TABLE;
    if (starts(m, "no such column"))
        return PS_SQL_NO_COLUMN;
    if (starts(m, "ambiguous column name"))
        return PS_SQL_AMBIGUOUS;
    if (starts(m, "no such function") || starts(m, "wrong number of arguments"))
        return PS_SQL_NO_FUNCTION;
    return PS_SQL_OTHER;
}

/* Whether [p, end) holds nothing but white space, ';' and comments: what
 * may follow the one statement a record's SQL must be. */
static bool tail_empty(const char *p, const char *end)
{
    while (p < end) {
        if (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == '\f' || *p == '\v' ||
            *p == ';') {
            p++;
        } else if (*p == '-' && p + 1 < end && p[1] == '-') {
            while (p < end && *p != '\n')
                p++;
        } else if (*p == '/' && p + 1 < end && p[1] == '*') {
            const char *q = p + 2;
            while (q + 1 < end && !(q[0] == '*' && q[1] == '/'))
                q++;
            p = q + 1 < end ? q + 2 : end;
        } else {
            return false;
        }
    }
    return true;
}

static int compile(ps_sql_checker *k, const ps_schema *db, const char *sql, size_t len,
                   ps_sql_class *cls, char *msg, size_t msz, ps_error *err)
{
    sqlite3 *c;
    int rc = ps_sql_conn(k, db, &c, err);
    if (rc)
        return rc;
    ps_sql_message(msg, msz, "");
    if (len > (size_t)INT_MAX / 2) {
        *cls = PS_SQL_OTHER;
        ps_sql_message(msg, msz, "statement too long");
        return 0;
    }
    sqlite3_stmt *st = NULL;
    const char *tail = NULL;
    int r = sqlite3_prepare_v2(c, len ? sql : "", (int)len, &st, &tail);
    if (r == SQLITE_NOMEM)
        return ps_error_set(err, PS_ENOMEM, "database '%s': SQLite is out of memory", db->db_id);
    if (r != SQLITE_OK) {
        *cls = classify(sqlite3_errmsg(c));
        ps_sql_message(msg, msz, sqlite3_errmsg(c));
        return 0;
    }
    if (!st) {
        *cls = PS_SQL_SYNTAX;
        ps_sql_message(msg, msz, "empty statement");
        return 0;
    }
    sqlite3_finalize(st);
    if (len && tail && !tail_empty(tail, sql + len)) {
        *cls = PS_SQL_MULTIPLE;
        ps_sql_message(msg, msz, "more than one statement");
        return 0;
    }
    *cls = PS_SQL_OK;
    return 0;
}

int ps_sql_compile(ps_sql_checker *k, const ps_schema *db, const char *sql, size_t len,
                   ps_sql_class *cls, char *msg, size_t msz, ps_error *err)
{
    if (ps_sql_memo_get(k, db, sql, len, cls, msg, msz))
        return 0;
    char full[512]; /* the whole message for the memo, whatever msz is */
    int rc = compile(k, db, sql, len, cls, full, sizeof full, err);
    if (rc)
        return rc;
    ps_sql_memo_put(k, db, sql, len, *cls, full);
    ps_sql_message(msg, msz, full);
    return 0;
}
