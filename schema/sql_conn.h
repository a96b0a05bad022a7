/* schema/sql_conn.h — the SQLite connections of a ps_sql_checker, shared
 * by compile.c and execute.c. Internal to schema/. */
#ifndef PS_SCHEMA_SQL_CONN_H
#define PS_SCHEMA_SQL_CONN_H

#include "schema/schema.h"

#include <sqlite3.h>

/* The connection for `db`, made on first use: the .sqlite file read-only
 * when the schema has one (db_path), else an in-memory database made from
 * the schema. Either way: no ATTACH, no PRAGMA, no extension loading (an
 * authorizer), query_only. 0, or PS_ENOMEM / PS_EIO (named) when the
 * database cannot be set up. */
#define PS_SQL_CONN_MAX 128 /* connections a checker (a worker) keeps open */
int ps_sql_conn(ps_sql_checker *k, const ps_schema *db, sqlite3 **out, ps_error *err);

/* The CREATE TABLE statements that make `db` in SQLite (what the in-memory
 * database runs), into `out` (appended). Every identifier quoted; names
 * that SQLite would call duplicates (ASCII case folded) kept once; a table
 * without columns gets one column named "" (SQLite needs one, and no SQL
 * names it); Spider's types mapped to SQLite's (number NUMERIC, text and
 * time TEXT, boolean INTEGER, others none), any other type kept only when
 * it is one plain word that is no keyword. 0 or PS_ENOMEM. */
int ps_sql_schema_ddl(const ps_schema *db, ps_buf *out);

/* Opens the SQLite file `path` read-only (a URI, so that nothing is ever
 * written beside it): immutable, or, when `path`-wal holds frames, with
 * the log read into this process's memory (no -shm made or used; see
 * sql_conn.c), extension loading off, query_only;
 * without the authorizer (the loader reads PRAGMAs). 0 or PS_EIO/PS_ENOMEM
 * naming the file. */
int ps_sql_open_file(const char *path, sqlite3 **out, ps_error *err);

/* A checker's memo of compile results, so that a query met again (Spider
 * repeats a query for each paraphrase of its question; the raw and cleaned
 * SQL are often the same text) is not compiled again. */
#define PS_SQL_MEMO 4096 /* entries, a power of two */
typedef struct ps_sql_memo_entry {
    uint64_t hash_low, hash_high;
    bool used;
    unsigned char cls;
    char msg[182]; /* messages this long or longer are not memoised */
} ps_sql_memo_entry;

/* Whether (db, sql) was compiled before; then *cls and msg are its result. */
bool ps_sql_memo_get(ps_sql_checker *k, const ps_schema *db, const char *sql, size_t len,
                     ps_sql_class *cls, char *msg, size_t msz);
/* Remembers a result (best effort: nothing when out of memory). */
void ps_sql_memo_put(ps_sql_checker *k, const ps_schema *db, const char *sql, size_t len,
                     ps_sql_class cls, const char *msg);

/* Copies SQLite's message into msg (msz bytes, may be 0). */
void ps_sql_message(char *msg, size_t msz, const char *text);

#endif
