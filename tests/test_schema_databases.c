/* Tests of schema/databases.c and schema/execute.c: a small directory in
 * Spider's layout, made here with the SQLite C API in a temporary
 * directory; schemas read from the files, a tables.json schema that keeps
 * its own and gains its file, and queries run read-only: ok, empty, error,
 * timeout, row limit, writes refused. */
#include "tests/support/testutil.h"

#include "schema/sql_conn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char root[64];

static void make_db(const char *name, const char *sql)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", root, name);
    assert_int_equal(mkdir(path, 0700), 0);
    snprintf(path, sizeof path, "%s/%s/%s.sqlite", root, name, name);
    sqlite3 *c;
    assert_int_equal(sqlite3_open(path, &c), SQLITE_OK);
    char *e = NULL;
    if (sqlite3_exec(c, sql, NULL, NULL, &e) != SQLITE_OK)
        fail_msg("%s: %s", name, e);
    sqlite3_close(c);
}

static int setup(void **state)
{
    (void)state;
    snprintf(root, sizeof root, "/tmp/ps-dbs-XXXXXX");
    if (!mkdtemp(root))
        return -1;
    make_db("shop", "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT, \"home city\" TEXT);"
                    "CREATE TABLE orders (order_id INTEGER, customer_id INTEGER REFERENCES "
                    "customers(id), item TEXT, PRIMARY KEY (order_id, item));"
                    "CREATE TABLE log (id INTEGER PRIMARY KEY AUTOINCREMENT, msg TEXT);"
                    "CREATE TABLE refs (cid INTEGER REFERENCES Customers, gone INTEGER "
                    "REFERENCES nowhere(x));"
                    "CREATE VIEW names AS SELECT name FROM customers;"
                    "INSERT INTO customers VALUES (1, 'Ada', 'London'), (2, 'Alan', 'Wilmslow');"
                    "INSERT INTO log (msg) VALUES ('made');");
    make_db("concert_singer", "CREATE TABLE stadium (Stadium_ID int, Name text);"
                              "INSERT INTO stadium VALUES (1, 'Glebe Park');");
    char path[128];
    snprintf(path, sizeof path, "%s/no_file_here", root);
    return mkdir(path, 0700);
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    return system(cmd);
}

static long col(const ps_schema *d, const char *table, const char *name)
{
    for (size_t i = 0; i < d->n_columns; i++)
        if (!strcmp(d->tables[d->columns[i].table], table) && !strcmp(d->columns[i].name, name))
            return (long)i;
    return -1;
}

static void test_load(void **state)
{
    (void)state;
    ps_schemas *s;
    ps_error err = {0};
    assert_int_equal(ps_schemas_create(&s, &err), 0);
    assert_int_equal(ps_schemas_load_tables(s, ps_test_data("spider/tables.json"), &err), 0);
    if (ps_schemas_load_databases(s, root, &err))
        fail_msg("%s", err.message);
    assert_int_equal(ps_schemas_count(s), 167);
    /* concert_singer keeps the tables.json schema and gains the file */
    const ps_schema *d = ps_schemas_find(s, "concert_singer", 14);
    assert_int_equal(d->n_columns, 21);
    assert_non_null(strstr(d->origin, "tables.json"));
    assert_non_null(d->db_path);
    assert_non_null(strstr(d->db_path, "/concert_singer/concert_singer.sqlite"));
    /* shop from its file: no sqlite_sequence, no view */
    d = ps_schemas_find(s, "shop", 4);
    assert_non_null(d);
    assert_int_equal(d->n_tables, 4);
    assert_string_equal(d->tables[0], "customers");
    assert_string_equal(d->tables[2], "log");
    assert_string_equal(d->tables[3], "refs");
    assert_int_equal(d->n_columns, 10);
    long hc = col(d, "customers", "home city");
    assert_true(hc >= 0);
    assert_string_equal(d->columns[hc].type, "TEXT");
    assert_true(d->columns[col(d, "customers", "id")].primary);
    assert_true(d->columns[col(d, "orders", "order_id")].primary);
    assert_true(d->columns[col(d, "orders", "item")].primary);
    assert_false(d->columns[col(d, "orders", "customer_id")].primary);
    /* orders.customer_id → customers.id; refs.cid → Customers' primary key
     * (implicit); refs.gone → a table that does not exist: left out */
    assert_int_equal(d->n_fks, 2);
    assert_int_equal(d->fks[0].column, col(d, "orders", "customer_id"));
    assert_int_equal(d->fks[0].ref_column, col(d, "customers", "id"));
    assert_int_equal(d->fks[1].column, col(d, "refs", "cid"));
    assert_int_equal(d->fks[1].ref_column, col(d, "customers", "id"));
    assert_string_equal(d->db_path, d->origin);
    /* DDL of a schema read from a file */
    ps_buf b;
    ps_buf_init(&b);
    assert_int_equal(ps_schema_serialize(d, PS_SCHEMA_DDL, NULL, &b), 0);
    assert_non_null(strstr(b.data, "CREATE TABLE orders (\n  order_id INTEGER,\n  customer_id "
                                   "INTEGER,\n  item TEXT,\n  PRIMARY KEY (order_id, item),\n"
                                   "  FOREIGN KEY (customer_id) REFERENCES customers(id)\n);"));
    ps_buf_free(&b);
    /* loading the directory again changes nothing */
    char h1[65], h2[65];
    ps_schemas_get_digest(s, h1);
    assert_int_equal(ps_schemas_load_databases(s, root, &err), 0);
    ps_schemas_get_digest(s, h2);
    assert_string_equal(h1, h2);
    assert_int_equal(ps_schemas_count(s), 167);

    assert_int_equal(ps_schemas_load_databases(s, "/nonexistent/dbs", &err), PS_ENOENT);
    ps_schemas_free(s);
}

static void test_broken(void **state)
{
    (void)state;
    char dir[128], path[256];
    snprintf(dir, sizeof dir, "%s/broken_set", root);
    assert_int_equal(mkdir(dir, 0700), 0);
    snprintf(path, sizeof path, "%s/bad", dir);
    assert_int_equal(mkdir(path, 0700), 0);
    snprintf(path, sizeof path, "%s/bad/bad.sqlite", dir);
    ps_test_write_file(path, "this is not an SQLite database, just some text that is long enough "
                             "to be read\n");
    ps_schemas *s;
    ps_error err = {0};
    assert_int_equal(ps_schemas_create(&s, &err), 0);
    assert_int_equal(ps_schemas_load_databases(s, dir, &err), PS_EFORMAT);
    assert_non_null(strstr(err.message, "bad/bad.sqlite"));
    assert_non_null(strstr(err.message, "not a database"));
    ps_schemas_free(s);
}

static ps_exec_status run(ps_sql_checker *k, const ps_schema *d, const char *sql, unsigned ms,
                          uint64_t max_rows, uint64_t *rows, char *msg)
{
    ps_exec_status st;
    ps_error err = {0};
    assert_int_equal(ps_sql_execute(k, d, sql, strlen(sql), ms, max_rows, &st, rows, msg, 256,
                                    &err), 0);
    return st;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void test_execute(void **state)
{
    (void)state;
    ps_schemas *s;
    ps_error err = {0};
    assert_int_equal(ps_schemas_create(&s, &err), 0);
    assert_int_equal(ps_schemas_load_tables(s, ps_test_data("spider/tables.json"), &err), 0);
    assert_int_equal(ps_schemas_load_databases(s, root, &err), 0);
    ps_sql_checker *k;
    assert_int_equal(ps_sql_checker_create(s, &k, &err), 0);
    const ps_schema *shop = ps_schemas_find(s, "shop", 4);
    char msg[256];
    uint64_t rows;
    assert_int_equal(run(k, shop, "SELECT name FROM customers", 1000, 100, &rows, msg), PS_EXEC_OK);
    assert_int_equal(rows, 2);
    assert_string_equal(msg, "");
    assert_int_equal(run(k, shop, "SELECT name FROM names WHERE name = 'Bob'", 1000, 100, &rows,
                         msg), PS_EXEC_EMPTY);
    assert_int_equal(rows, 0);
    assert_int_equal(run(k, shop, "SELECT * FROM nowhere", 1000, 100, &rows, msg), PS_EXEC_ERROR);
    assert_string_equal(msg, "no such table: nowhere");
    /* a recursive CTE that never ends, stopped at 100 ms */
    double t = now_s();
    assert_int_equal(run(k, shop, "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c)"
                                  " SELECT count(*) FROM c", 100, 100, &rows, msg),
                     PS_EXEC_TIMEOUT);
    t = now_s() - t;
    assert_true(t >= 0.099 && t < 2.0);
    assert_string_equal(msg, "time limit reached");
    /* rows counted up to the limit; 0 is no limit */
    const char *many = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 5000)"
                       " SELECT x FROM c";
    assert_int_equal(run(k, shop, many, 1000, 10, &rows, msg), PS_EXEC_OK);
    assert_int_equal(rows, 10);
    assert_int_equal(run(k, shop, many, 1000, 0, &rows, msg), PS_EXEC_OK);
    assert_int_equal(rows, 5000);
    /* the connection is usable after a timeout */
    assert_int_equal(run(k, shop, "SELECT 1", 1000, 10, &rows, msg), PS_EXEC_OK);
    /* writes and hostile statements: refused, the file unchanged */
    char path[256], out[256];
    snprintf(path, sizeof path, "%s/shop/shop.sqlite", root);
    snprintf(out, sizeof out, "VACUUM INTO '%s/copy.sqlite'", root);
    static const char *const writes[] = {"DELETE FROM customers", "DROP TABLE log",
                                         "ATTACH 'x.db' AS x", "PRAGMA writable_schema = 1"};
    for (size_t i = 0; i < sizeof writes / sizeof *writes; i++)
        assert_int_equal(run(k, shop, writes[i], 1000, 10, &rows, msg), PS_EXEC_ERROR);
    assert_int_equal(run(k, shop, out, 1000, 10, &rows, msg), PS_EXEC_ERROR);
    snprintf(out, sizeof out, "%s/copy.sqlite", root);
    assert_int_not_equal(access(out, F_OK), 0);
    assert_int_equal(run(k, shop, "SELECT count(*) FROM customers", 1000, 10, &rows, msg),
                     PS_EXEC_OK);
    /* a tables.json database with a file; one without */
    const ps_schema *cs = ps_schemas_find(s, "concert_singer", 14);
    assert_int_equal(run(k, cs, "SELECT Name FROM stadium", 1000, 10, &rows, msg), PS_EXEC_OK);
    assert_int_equal(rows, 1);
    /* compiled against the file itself (it lacks the other tables) */
    ps_sql_class cls;
    assert_int_equal(ps_sql_compile(k, cs, "SELECT * FROM singer", 20, &cls, msg, 256, &err), 0);
    assert_int_equal(cls, PS_SQL_NO_TABLE);
    const ps_schema *w = ps_schemas_find(s, "world_1", 7);
    assert_int_equal(run(k, w, "SELECT 1", 1000, 10, &rows, msg), PS_EXEC_NO_DATABASE);
    assert_string_equal(ps_exec_status_name(PS_EXEC_TIMEOUT), "timeout");
    assert_string_equal(ps_exec_status_name(PS_EXEC_EMPTY), "empty");
    ps_sql_checker_free(k);
    ps_schemas_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_load),
        cmocka_unit_test(test_broken),
        cmocka_unit_test(test_execute),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
