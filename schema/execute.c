/* Running a query on its database file, read-only, with a time limit: the
 * report's ok / empty / error / timeout per record, and the result's
 * fingerprint (rows and a hash of them) that the build compares before
 * and after cleaning (sql_result_regression). The connection is the
 * checker's (opened read-only and immutable, guarded as compile.c's,
 * cached per database); a progress handler stops the query at its
 * deadline. */
#include "schema/sql_conn.h"

#include <ctype.h>
#include <limits.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

/* How many virtual machine steps between two looks at the clock: a few
 * microseconds of work, so a 100 ms limit is kept to well under 1 ms. */
#define PROGRESS_STEPS 1000

const char *ps_exec_status_name(ps_exec_status s)
{
    static const char *const names[] = {"ok", "empty", "error", "timeout", "no_database"};
    return (unsigned)s < sizeof names / sizeof *names ? names[s] : "error";
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

typedef struct deadline {
    uint64_t at_ns;
    bool hit;
} deadline;

static int progress(void *user)
{
    deadline *d = user;
    if (now_ns() >= d->at_ns)
        d->hit = true;
    return d->hit;
}

/* The rows' fingerprint as they come: ordered (a chain, each step the
 * XXH64 of the last value and the row's hash) or as a multiset (a sum of the row hashes, each mixed once
 * more so that no two rows cancel: a sum counts a repeated row twice,
 * where an exclusive or would drop it). */
typedef struct fp {
    bool ordered;
    uint64_t acc; /* the chain, or the sum */
    ps_buf row; /* the row's canonical encoding */
} fp;

static uint64_t mix(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 33);
}

static void put_le64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

/* One row: per column its type byte, then an integer or a double as 8
 * little-endian bytes, text or a blob as a u64 length and its bytes, NULL
 * as nothing. 0 or PS_ENOMEM. */
static int hash_row(fp *f, sqlite3_stmt *st)
{
    int n = sqlite3_column_count(st);
    ps_buf_reset(&f->row);
    for (int i = 0; i < n; i++) {
        int type = sqlite3_column_type(st, i);
        unsigned char h[9] = {(unsigned char)type};
        uint64_t v = 0;
        const void *bytes = NULL;
        if (type == SQLITE_INTEGER) {
            v = (uint64_t)sqlite3_column_int64(st, i);
        } else if (type == SQLITE_FLOAT) {
            double d = sqlite3_column_double(st, i);
            d = d == 0 ? 0 : d; /* -0.0 prints and compares as 0.0 */
            memcpy(&v, &d, 8);
        } else if (type == SQLITE_TEXT || type == SQLITE_BLOB) {
            bytes = type == SQLITE_TEXT ? (const void *)sqlite3_column_text(st, i)
                                        : sqlite3_column_blob(st, i);
            v = (uint64_t)sqlite3_column_bytes(st, i);
        }
        put_le64(h + 1, v);
        size_t hn = type == SQLITE_NULL ? 1 : 9;
        if (ps_buf_append(&f->row, h, hn) || (bytes && ps_buf_append(&f->row, bytes, (size_t)v)))
            return PS_ENOMEM;
    }
    uint64_t rh = XXH64(f->row.data ? f->row.data : "", f->row.len, (uint64_t)n);
    if (f->ordered) {
        unsigned char b[16];
        put_le64(b, f->acc);
        put_le64(b + 8, rh);
        f->acc = XXH64(b, sizeof b, 0);
    } else {
        f->acc += mix(rh);
    }
    return 0;
}

static uint64_t fp_final(fp *f, uint64_t rows)
{
    unsigned char b[16];
    put_le64(b, f->acc);
    put_le64(b + 8, rows);
    return XXH64(b, sizeof b, f->ordered);
}

/* Steps `st` to its end or max_rows rows, hashing them into f (NULL: only
 * counted); the status of the run, or PS_ENOMEM (negative). */
static int run(sqlite3 *c, sqlite3_stmt *st, const deadline *dl, uint64_t max_rows,
               uint64_t *rows, fp *f, char *msg, size_t msz)
{
    int r = SQLITE_DONE;
    while (*rows < max_rows && (r = sqlite3_step(st)) == SQLITE_ROW) {
        if (f && hash_row(f, st))
            return PS_ENOMEM;
        ++*rows;
    }
    if (*rows >= max_rows)
        return PS_EXEC_OK;
    if (r == SQLITE_DONE)
        return *rows ? PS_EXEC_OK : PS_EXEC_EMPTY;
    if (dl->hit) {
        ps_sql_message(msg, msz, "time limit reached");
        return PS_EXEC_TIMEOUT;
    }
    ps_sql_message(msg, msz, sqlite3_errmsg(c));
    return PS_EXEC_ERROR;
}

bool ps_sql_top_order_by(const char *sql, size_t len)
{
    int depth = 0;
    bool order = false; /* the last word was ORDER, at depth 0 */
    for (size_t i = 0; i < len;) {
        char ch = sql[i];
        if (ch == '\'' || ch == '"' || ch == '`' || ch == '[') {
            char close = ch == '[' ? ']' : ch;
            for (i++; i < len && sql[i] != close; i++)
                ;
            i++;
            order = false;
        } else if (ch == '-' && i + 1 < len && sql[i + 1] == '-') {
            while (i < len && sql[i] != '\n')
                i++;
        } else if (ch == '/' && i + 1 < len && sql[i + 1] == '*') {
            for (i += 2; i + 1 < len && !(sql[i] == '*' && sql[i + 1] == '/'); i++)
                ;
            i += 2;
        } else if (isalnum((unsigned char)ch) || ch == '_') {
            size_t s = i;
            while (i < len && (isalnum((unsigned char)sql[i]) || sql[i] == '_'))
                i++;
            bool is_order = i - s == 5 && !strncasecmp(sql + s, "order", 5);
            if (order && i - s == 2 && !strncasecmp(sql + s, "by", 2))
                return true;
            order = depth == 0 && is_order;
        } else {
            depth += ch == '(' ? 1 : ch == ')' && depth > 0 ? -1 : 0;
            if (!isspace((unsigned char)ch))
                order = false;
            i++;
        }
    }
    return false;
}

static int execute(ps_sql_checker *k, const ps_schema *db, const char *sql, size_t len,
                   unsigned timeout_ms, uint64_t max_rows, ps_exec_status *status,
                   uint64_t *rows, fp *f, char *msg, size_t msz, ps_error *err)
{
    *rows = 0;
    ps_sql_message(msg, msz, "");
    if (!db->db_path) {
        *status = PS_EXEC_NO_DATABASE;
        ps_sql_message(msg, msz, "no database file");
        return 0;
    }
    sqlite3 *c;
    int rc = ps_sql_conn(k, db, &c, err);
    if (rc)
        return rc;
    if (len > (size_t)INT_MAX / 2) {
        *status = PS_EXEC_ERROR;
        ps_sql_message(msg, msz, "statement too long");
        return 0;
    }
    sqlite3_stmt *st = NULL;
    int r = sqlite3_prepare_v2(c, len ? sql : "", (int)len, &st, NULL);
    if (r == SQLITE_NOMEM)
        return ps_error_set(err, PS_ENOMEM, "database '%s': SQLite is out of memory", db->db_id);
    if (r != SQLITE_OK || !st) {
        *status = PS_EXEC_ERROR;
        ps_sql_message(msg, msz, st || r != SQLITE_OK ? sqlite3_errmsg(c) : "empty statement");
        return 0;
    }
    if (!sqlite3_stmt_readonly(st)) {
        /* query_only and the read-only file already stop writes; this
         * also stops what writes elsewhere (VACUUM INTO a new file). */
        sqlite3_finalize(st);
        *status = PS_EXEC_ERROR;
        ps_sql_message(msg, msz, "not a read-only statement");
        return 0;
    }
    if (!max_rows) /* no limit */
        max_rows = UINT64_MAX;
    deadline dl = {now_ns() + (uint64_t)timeout_ms * 1000000u, false};
    sqlite3_progress_handler(c, PROGRESS_STEPS, progress, &dl);
    int s = run(c, st, &dl, max_rows, rows, f, msg, msz);
    sqlite3_progress_handler(c, 0, NULL, NULL);
    sqlite3_finalize(st);
    if (s < 0)
        return ps_error_set(err, PS_ENOMEM, "database '%s': out of memory", db->db_id);
    *status = (ps_exec_status)s;
    return 0;
}

int ps_sql_execute(ps_sql_checker *k, const ps_schema *db, const char *sql, size_t len,
                   unsigned timeout_ms, uint64_t max_rows, ps_exec_status *status,
                   uint64_t *rows, char *msg, size_t msz, ps_error *err)
{
    return execute(k, db, sql, len, timeout_ms, max_rows, status, rows, NULL, msg, msz, err);
}

int ps_sql_execute_fp(ps_sql_checker *k, const ps_schema *db, const char *sql, size_t len,
                      unsigned timeout_ms, uint64_t max_rows, ps_exec_result *res, char *msg,
                      size_t msz, ps_error *err)
{
    fp f = {.ordered = ps_sql_top_order_by(sql, len)};
    ps_buf_init(&f.row);
    int rc = execute(k, db, sql, len, timeout_ms, max_rows, &res->status, &res->rows, &f, msg,
                     msz, err);
    res->hash = !rc && res->status == PS_EXEC_OK ? fp_final(&f, res->rows) : 0;
    if (rc || res->status != PS_EXEC_OK)
        res->rows = 0;
    ps_buf_free(&f.row);
    return rc;
}
