/* The SQLite connections of a ps_sql_checker: one per database used, made
 * on first use, kept until the checker is freed; past PS_SQL_CONN_MAX
 * open, the one used longest ago is closed.
 *
 * Gold SQL is untrusted input: a record may hold ATTACH 'x.db' (which
 * creates a file when run), load_extension('/tmp/x'), PRAGMA
 * writable_schema. Every connection is therefore made so that nothing can
 * reach the filesystem or change a database: ATTACH is limited to zero
 * databases and denied by an authorizer together with DETACH, PRAGMA and
 * the functions that read or write files or load code; extension loading
 * is off; defensive mode is on; query_only is set; files are opened
 * read-only, and immutable unless a write-ahead log must be read (see
 * ps_sql_open_file). The in-memory database is created from the
 * schema before the authorizer is installed. */
#include "schema/sql_conn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

typedef struct conn_slot {
    const ps_schema *db;
    sqlite3 *conn;
    uint64_t used_at; /* the checker's tick at its last use */
} conn_slot;

struct ps_sql_checker {
    const ps_schemas *schemas;
    conn_slot *slots; /* open addressing on the schema's address */
    size_t nslots, used;
    uint64_t tick;
    ps_sql_memo_entry *memo; /* PS_SQL_MEMO entries, made on first use */
};

int ps_sql_checker_create(const ps_schemas *s, ps_sql_checker **out, ps_error *err)
{
    *out = calloc(1, sizeof **out);
    if (!*out)
        return ps_error_set(err, PS_ENOMEM, "SQL checker: out of memory");
    (*out)->schemas = s;
    return 0;
}

void ps_sql_checker_free(ps_sql_checker *k)
{
    if (!k)
        return;
    for (size_t i = 0; i < k->nslots; i++)
        sqlite3_close_v2(k->slots[i].conn);
    free(k->slots);
    free(k->memo);
    free(k);
}

/* The memo's slot of (db, sql): direct-mapped on a 128-bit hash, the
 * database's address as the seed (schemas do not move while a checker
 * lives). What a slot holds is a pure function of its key, so whatever a
 * lookup finds, the result is the one compiling would give. */
static ps_sql_memo_entry *memo_slot(ps_sql_checker *k, const ps_schema *db, const char *sql,
                                    size_t len, XXH128_hash_t *h)
{
    if (!k->memo && !(k->memo = calloc(PS_SQL_MEMO, sizeof *k->memo)))
        return NULL;
    *h = XXH3_128bits_withSeed(sql, len, (XXH64_hash_t)(uintptr_t)db);
    return &k->memo[h->low64 & (PS_SQL_MEMO - 1)];
}

bool ps_sql_memo_get(ps_sql_checker *k, const ps_schema *db, const char *sql, size_t len,
                     ps_sql_class *cls, char *msg, size_t msz)
{
    XXH128_hash_t h;
    ps_sql_memo_entry *e = memo_slot(k, db, sql, len, &h);
    if (!e || !e->used || e->hash_low != h.low64 || e->hash_high != h.high64)
        return false;
    *cls = (ps_sql_class)e->cls;
    ps_sql_message(msg, msz, e->msg);
    return true;
}

void ps_sql_memo_put(ps_sql_checker *k, const ps_schema *db, const char *sql, size_t len,
                     ps_sql_class cls, const char *msg)
{
    XXH128_hash_t h;
    ps_sql_memo_entry *e = memo_slot(k, db, sql, len, &h);
    if (!e || strlen(msg) >= sizeof e->msg) /* a long message is not kept cut */
        return;
    e->used = true;
    e->hash_low = h.low64;
    e->hash_high = h.high64;
    e->cls = (unsigned char)cls;
    memcpy(e->msg, msg, strlen(msg) + 1);
}

void ps_sql_message(char *msg, size_t msz, const char *text)
{
    if (msz)
        snprintf(msg, msz, "%s", text ? text : "");
}

static size_t slot_of(const conn_slot *slots, size_t nslots, const ps_schema *db)
{
    size_t h = (size_t)(((uintptr_t)db >> 4) * 0x9E3779B97F4A7C15ull);
    size_t i = h & (nslots - 1);
    while (slots[i].db && slots[i].db != db)
        i = (i + 1) & (nslots - 1);
    return i;
}

static int grow(ps_sql_checker *k)
{
    size_t n = k->nslots ? 2 * k->nslots : 16;
    conn_slot *s = calloc(n, sizeof *s);
    if (!s)
        return PS_ENOMEM;
    for (size_t i = 0; i < k->nslots; i++)
        if (k->slots[i].db)
            s[slot_of(s, n, k->slots[i].db)] = k->slots[i];
    free(k->slots);
    k->slots = s;
    k->nslots = n;
    return 0;
}

/* The cache is full: closes the connection used longest ago and
 * re-places the others (open addressing has no deletion; this runs once
 * per database opened past the bound, beside an open that costs far
 * more). A worker meets databases in runs (a set's records are mostly
 * grouped by database), so the bound keeps what a worker holds open
 * (descriptors, SQLite's page caches) whatever the number of databases,
 * at the cost of reopening when more than PS_SQL_CONN_MAX interleave. */
static void evict(ps_sql_checker *k)
{
    size_t old = SIZE_MAX;
    for (size_t i = 0; i < k->nslots; i++)
        if (k->slots[i].db && (old == SIZE_MAX || k->slots[i].used_at < k->slots[old].used_at))
            old = i;
    sqlite3_close_v2(k->slots[old].conn);
    k->slots[old] = (conn_slot){NULL, NULL, 0};
    k->used--;
    conn_slot moved[PS_SQL_CONN_MAX];
    size_t n = 0;
    for (size_t i = 0; i < k->nslots; i++)
        if (k->slots[i].db) {
            moved[n++] = k->slots[i];
            k->slots[i] = (conn_slot){NULL, NULL, 0};
        }
    for (size_t i = 0; i < n; i++)
        k->slots[slot_of(k->slots, k->nslots, moved[i].db)] = moved[i];
}

/* ---- the in-memory database's DDL ----------------------------------------- */

/* A type that can be pasted into a column definition as it is: one plain
 * word that is no keyword ("varchar", "date"). Anything else ("double
 * precision", "varchar(20)", "text primary") is dropped, since a column's
 * type never changes whether a query compiles. */
static bool plain_type(const char *t)
{
    if (!((*t >= 'A' && *t <= 'Z') || (*t >= 'a' && *t <= 'z') || *t == '_'))
        return false;
    size_t n = 1;
    for (; t[n]; n++)
        if (!((t[n] >= 'A' && t[n] <= 'Z') || (t[n] >= 'a' && t[n] <= 'z') ||
              (t[n] >= '0' && t[n] <= '9') || t[n] == '_'))
            return false;
    return !sqlite3_keyword_check(t, (int)n);
}

static const char *sqlite_type(const char *t)
{
    static const char *const map[][2] = {{"number", "NUMERIC"}, {"text", "TEXT"},
                                         {"time", "TEXT"},      {"boolean", "INTEGER"},
                                         {"others", ""}};
    for (size_t i = 0; i < sizeof map / sizeof *map; i++)
        if (!strcasecmp(t, map[i][0]))
            return map[i][1];
    return plain_type(t) ? t : "";
}

/* Whether column c repeats, ASCII-case-insensitively, an earlier column of
 * its table (SQLite: "duplicate column name"). */
static bool dup_column(const ps_schema *db, size_t c)
{
    for (size_t j = 0; j < c; j++)
        if (db->columns[j].table == db->columns[c].table &&
            !strcasecmp(db->columns[j].name, db->columns[c].name))
            return true;
    return false;
}

int ps_sql_schema_ddl(const ps_schema *db, ps_buf *out)
{
    for (size_t t = 0; t < db->n_tables; t++) {
        bool dup = false;
        for (size_t u = 0; u < t && !dup; u++)
            dup = !strcasecmp(db->tables[u], db->tables[t]);
        if (dup)
            continue;
        if (ps_buf_puts(out, "CREATE TABLE ") || ps_sql_put_ident(out, db->tables[t], true) ||
            ps_buf_puts(out, " ("))
            return PS_ENOMEM;
        bool first = true;
        for (size_t c = 0; c < db->n_columns; c++) {
            if (db->columns[c].table != t || dup_column(db, c))
                continue;
            const char *ty = sqlite_type(db->columns[c].type);
            if ((!first && ps_buf_puts(out, ", ")) ||
                ps_sql_put_ident(out, db->columns[c].name, true) ||
                (*ty && (ps_buf_putc(out, ' ') || ps_buf_puts(out, ty))))
                return PS_ENOMEM;
            first = false;
        }
        if ((first && ps_buf_puts(out, "\"\"")) || ps_buf_puts(out, ");\n"))
            return PS_ENOMEM;
    }
    return 0;
}

/* ---- guards ------------------------------------------------------------- */

static int authorize(void *user, int action, const char *a, const char *b, const char *dbname,
                     const char *trigger)
{
    (void)user, (void)a, (void)dbname, (void)trigger;
    switch (action) {
    case SQLITE_ATTACH:
    case SQLITE_DETACH:
    case SQLITE_PRAGMA:
    case SQLITE_CREATE_VTABLE:
    case SQLITE_DROP_VTABLE:
        return SQLITE_DENY;
    case SQLITE_FUNCTION:
        /* b is the function's name. The file and code ones are not in
         * the library as Debian builds it, but a build with them must
         * refuse them too. */
        if (b && (!strcasecmp(b, "load_extension") || !strcasecmp(b, "readfile") ||
                  !strcasecmp(b, "writefile") || !strcasecmp(b, "edit") ||
                  !strcasecmp(b, "fts3_tokenizer")))
            return SQLITE_DENY;
        return SQLITE_OK;
    default:
        return SQLITE_OK;
    }
}

static void guard(sqlite3 *c)
{
    sqlite3_db_config(c, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, (int *)NULL);
    sqlite3_db_config(c, SQLITE_DBCONFIG_DEFENSIVE, 1, (int *)NULL);
    sqlite3_db_config(c, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, (int *)NULL);
    sqlite3_limit(c, SQLITE_LIMIT_ATTACHED, 0);
    sqlite3_limit(c, SQLITE_LIMIT_SQL_LENGTH, 1 << 20);
    sqlite3_limit(c, SQLITE_LIMIT_LENGTH, 16 << 20);
    sqlite3_limit(c, SQLITE_LIMIT_EXPR_DEPTH, 1000);
    sqlite3_limit(c, SQLITE_LIMIT_COMPOUND_SELECT, 500);
    sqlite3_limit(c, SQLITE_LIMIT_FUNCTION_ARG, 127);
    sqlite3_limit(c, SQLITE_LIMIT_VARIABLE_NUMBER, 999);
    sqlite3_limit(c, SQLITE_LIMIT_TRIGGER_DEPTH, 10);
    sqlite3_set_authorizer(c, authorize, NULL);
}

/* ---- opening -------------------------------------------------------------- */

static int open_memory(const ps_schema *db, sqlite3 **out, ps_error *err)
{
    sqlite3 *c = NULL;
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_MEMORY |
                SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_PRIVATECACHE;
    if (sqlite3_open_v2(":memory:", &c, flags, NULL) != SQLITE_OK) {
        sqlite3_close_v2(c);
        return ps_error_set(err, PS_ENOMEM, "database '%s': SQLite cannot open a memory database",
                            db->db_id);
    }
    sqlite3_db_config(c, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, (int *)NULL);
    ps_buf ddl;
    ps_buf_init(&ddl);
    int rc = ps_sql_schema_ddl(db, &ddl) || ps_buf_puts(&ddl, "PRAGMA query_only=1;") ? PS_ENOMEM
                                                                                       : 0;
    char *emsg = NULL;
    if (!rc && sqlite3_exec(c, ddl.data, NULL, NULL, &emsg) != SQLITE_OK)
        rc = ps_error_set(err, PS_EFORMAT, "database '%s' (%s): SQLite cannot create it: %s",
                          db->db_id, db->origin ? db->origin : "?", emsg ? emsg : "?");
    else if (rc)
        ps_error_set(err, rc, "database '%s': out of memory", db->db_id);
    sqlite3_free(emsg);
    ps_buf_free(&ddl);
    if (rc) {
        sqlite3_close_v2(c);
        return rc;
    }
    guard(c);
    *out = c;
    return 0;
}

/* file:PATH?<query> with the characters a URI gives meaning to escaped. */
static int file_uri(const char *path, const char *query, ps_buf *uri)
{
    int rc = ps_buf_puts(uri, "file:");
    for (const unsigned char *p = (const unsigned char *)path; !rc && *p; p++)
        rc = (*p == '%' || *p == '?' || *p == '#' || *p < 0x20)
                 ? ps_buf_printf(uri, "%%%02X", *p)
                 : ps_buf_putc(uri, (char)*p);
    return rc ? rc : ps_buf_printf(uri, "?%s", query);
}

/* Whether PATH-wal holds frames: 1 (a non-empty regular file), 0 (none,
 * or empty), or PS_EIO naming it when it is not a regular file (SQLite
 * would open a FIFO there and wait for a writer). An empty PATH counts as
 * without a log: SQLite deletes the -wal of an empty database file on
 * open, and nothing beside a user's database may be removed. */
static int wal_frames(const char *path, ps_error *err)
{
    struct stat st;
    if (stat(path, &st) == 0 && st.st_size == 0)
        return 0;
    ps_buf wal;
    ps_buf_init(&wal);
    if (ps_buf_printf(&wal, "%s-wal", path)) {
        ps_buf_free(&wal);
        return ps_error_set(err, PS_ENOMEM, "%s: out of memory", path);
    }
    int rc = 0;
    if (stat(wal.data, &st) == 0)
        rc = !S_ISREG(st.st_mode) ? ps_error_set(err, PS_EIO, "%s: not a regular file (%s)",
                                                  wal.data, ps_file_kind((unsigned)st.st_mode))
                                  : st.st_size > 0;
    ps_buf_free(&wal);
    return rc;
}

/* A database without a write-ahead log is opened immutable: no locks, no
 * journal looked for, nothing written. With one (a table created since the
 * last checkpoint lives only in PATH-wal), immutable would ignore the log
 * and read an older database than SQLite's own read-only open does. That
 * open, though, maps PATH-shm, creating it when missing (a write in the
 * user's folder) and failing when the folder is read-only. So the log is
 * read the way SQLite reads it without shared memory: exclusive locking
 * mode set before the first read keeps the WAL index in this process's
 * heap (no -shm is ever opened), on the unix-none VFS, whose locks are
 * no-ops as immutable's are (an exclusive lock needs a writable file).
 * The file and the log are opened read-only, and no checkpoint is tried
 * on close, so the log is never folded in or removed. */
static const char *const OPEN_SQL[2] = {
    "PRAGMA query_only=1",
    "PRAGMA locking_mode=EXCLUSIVE; PRAGMA query_only=1; SELECT count(*) FROM sqlite_schema",
};

int ps_sql_open_file(const char *path, sqlite3 **out, ps_error *err)
{
    int wal = wal_frames(path, err);
    if (wal < 0)
        return wal;
    ps_buf uri;
    ps_buf_init(&uri);
    if (file_uri(path, wal ? "mode=ro&vfs=unix-none" : "mode=ro&immutable=1", &uri)) {
        ps_buf_free(&uri);
        return ps_error_set(err, PS_ENOMEM, "%s: out of memory", path);
    }
    sqlite3 *c = NULL;
    int flags = SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX |
                SQLITE_OPEN_PRIVATECACHE;
    int r = sqlite3_open_v2(uri.data, &c, flags, NULL);
    ps_buf_free(&uri);
    if (r == SQLITE_OK) {
        sqlite3_db_config(c, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, (int *)NULL);
        sqlite3_db_config(c, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, (int *)NULL);
        r = sqlite3_exec(c, OPEN_SQL[wal], NULL, NULL, NULL);
    }
    if (r != SQLITE_OK) {
        int rc = ps_error_set(err, PS_EIO, "%s: SQLite cannot open it read-only%s: %s", path,
                              wal ? " with its write-ahead log" : "",
                              c ? sqlite3_errmsg(c) : sqlite3_errstr(r));
        sqlite3_close_v2(c);
        return rc;
    }
    *out = c;
    return 0;
}

static int open_file(const ps_schema *db, sqlite3 **out, ps_error *err)
{
    int rc = ps_sql_open_file(db->db_path, out, err);
    if (!rc)
        guard(*out);
    return rc;
}

int ps_sql_conn(ps_sql_checker *k, const ps_schema *db, sqlite3 **out, ps_error *err)
{
    if (k->nslots) {
        size_t i = slot_of(k->slots, k->nslots, db);
        if (k->slots[i].db) {
            k->slots[i].used_at = ++k->tick;
            *out = k->slots[i].conn;
            return 0;
        }
    }
    if (k->used == PS_SQL_CONN_MAX)
        evict(k);
    if (2 * (k->used + 1) > k->nslots && grow(k))
        return ps_error_set(err, PS_ENOMEM, "SQL checker: out of memory");
    sqlite3 *c = NULL;
    int rc = db->db_path ? open_file(db, &c, err) : open_memory(db, &c, err);
    if (rc)
        return rc;
    size_t i = slot_of(k->slots, k->nslots, db);
    k->slots[i] = (conn_slot){db, c, ++k->tick};
    k->used++;
    *out = c;
    return 0;
}
