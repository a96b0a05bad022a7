/* Running a query on its database file, read-only, with a time limit: the
 * report's ok / empty / error / timeout per record (information, not a
 * gate). The connection is the checker's (opened read-only and immutable,
 * guarded as compile.c's); a progress handler stops the query at its
 * deadline. */
#include "schema/sql_conn.h"

#include <limits.h>
#include <time.h>

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

/* Steps `st` to its end or max_rows rows; the status of the run. */
static ps_exec_status run(sqlite3 *c, sqlite3_stmt *st, const deadline *dl, uint64_t max_rows,
                          uint64_t *rows, char *msg, size_t msz)
{
    int r = SQLITE_DONE;
    while (*rows < max_rows && (r = sqlite3_step(st)) == SQLITE_ROW)
        ++*rows;
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

int ps_sql_execute(ps_sql_checker *k, const ps_schema *db, const char *sql, size_t len,
                   unsigned timeout_ms, uint64_t max_rows, ps_exec_status *status,
                   uint64_t *rows, char *msg, size_t msz, ps_error *err)
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
    *status = run(c, st, &dl, max_rows, rows, msg, msz);
    sqlite3_progress_handler(c, 0, NULL, NULL);
    sqlite3_finalize(st);
    return 0;
}
