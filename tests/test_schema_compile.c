/* Tests of schema/compile.c and schema/sql_conn.c: SQL compiled against an
 * in-memory copy of its schema — every class of SQLite's messages, what
 * may follow the one statement, schemas SQLite would refuse as written,
 * and hostile SQL that must never reach the filesystem. (The comparison
 * with Python's sqlite3 on all of Spider is tests/cli/schema_compile.sh.) */
#include "tests/support/testutil.h"

#include "schema/sql_conn.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static ps_schemas *spider;

static int setup(void **state)
{
    (void)state;
    spider = ps_test_schemas("spider/tables.json", "formats/dusql/db_schema.json", NULL);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    ps_schemas_free(spider);
    return 0;
}

/* Compiles `sql` against db_id (of `s`), checking the class; returns the
 * message (static). */
static const char *expect(ps_sql_checker *k, const ps_schemas *s, const char *db_id,
                          const char *sql, size_t len, ps_sql_class want)
{
    static char msg[256];
    ps_error err = {0};
    ps_sql_class cls = PS_SQL_CLASSES;
    const ps_schema *d = ps_schemas_find(s, db_id, strlen(db_id));
    assert_non_null(d);
    assert_int_equal(ps_sql_compile(k, d, sql, len, &cls, msg, sizeof msg, &err), 0);
    if (cls != want)
        fail_msg("'%.*s': class %s (%s), want %s", (int)len, sql, ps_sql_class_name(cls), msg,
                 ps_sql_class_name(want));
    if (want == PS_SQL_OK)
        assert_string_equal(msg, "");
    else
        assert_true(msg[0] != '\0');
    return msg;
}

#define EXPECT(k, db, sql, want) expect(k, spider, db, sql, strlen(sql), want)

static void test_classes(void **state)
{
    (void)state;
    ps_sql_checker *k;
    ps_error err = {0};
    assert_int_equal(ps_sql_checker_create(spider, &k, &err), 0);
    const char *cs = "concert_singer";
    EXPECT(k, cs, "SELECT count(*) FROM singer", PS_SQL_OK);
    /* Spider's own spellings: "..." strings, mixed case, T1 aliases */
    EXPECT(k, cs, "SELECT T2.name FROM singer_in_concert AS T1 JOIN singer AS T2 ON "
                  "T1.singer_id = T2.singer_id WHERE T2.Country = \"France\"",
           PS_SQL_OK);
    assert_string_equal(EXPECT(k, cs, "SELECT", PS_SQL_SYNTAX), "incomplete input");
    assert_string_equal(EXPECT(k, cs, "SELEC name FROM singer", PS_SQL_SYNTAX),
                        "near \"SELEC\": syntax error");
    /* tokenized SQL from SParC/CoSQL */
    EXPECT(k, cs, "SELECT name FROM singer WHERE country ! = \"France\"", PS_SQL_SYNTAX);
    EXPECT(k, cs, "SELECT 'abc", PS_SQL_SYNTAX);
    assert_string_equal(EXPECT(k, cs, "SELECT * FROM singers", PS_SQL_NO_TABLE),
                        "no such table: singers");
    assert_string_equal(EXPECT(k, cs, "SELECT nom FROM singer", PS_SQL_NO_COLUMN),
                        "no such column: nom");
    EXPECT(k, cs, "SELECT name FROM singer JOIN stadium", PS_SQL_AMBIGUOUS);
    EXPECT(k, cs, "SELECT median(age) FROM singer", PS_SQL_NO_FUNCTION);
    EXPECT(k, cs, "SELECT substr(name) FROM singer", PS_SQL_NO_FUNCTION);
    EXPECT(k, cs, "SELECT name FROM singer ORDER BY age INTERSECT SELECT name FROM singer",
           PS_SQL_OTHER);
    /* what may follow the statement: white space, ';', comments */
    EXPECT(k, cs, "SELECT 1 ; ;  -- done\n /* really */ ", PS_SQL_OK);
    EXPECT(k, cs, "SELECT 1; /* open comment", PS_SQL_OK);
    assert_string_equal(EXPECT(k, cs, "SELECT 1; SELECT 2", PS_SQL_MULTIPLE),
                        "more than one statement");
    EXPECT(k, cs, "SELECT 1; DROP TABLE singer", PS_SQL_MULTIPLE);
    assert_string_equal(EXPECT(k, cs, "", PS_SQL_SYNTAX), "empty statement");
    EXPECT(k, cs, "  -- nothing\n ;", PS_SQL_SYNTAX);
    /* the exact length: the bytes after it are not read */
    expect(k, spider, cs, "SELECT age FROM singerXYZ; garbage", 22, PS_SQL_OK);
    /* writes compile (nothing runs) against the memory copy */
    EXPECT(k, cs, "DELETE FROM singer", PS_SQL_OK);
    /* DuSQL: Chinese names, bare */
    EXPECT(k, "中国城市", "select 省份 , count ( * ) from 城市 group by 省份", PS_SQL_OK);
    EXPECT(k, "中国城市", "select 国家 from 城市", PS_SQL_NO_COLUMN);
    /* one checker, every database: connections made once each */
    for (size_t i = 0; i < ps_schemas_count(spider); i++) {
        ps_sql_class cls;
        char msg[64];
        assert_int_equal(ps_sql_compile(k, ps_schemas_at(spider, i), "SELECT 1", 8, &cls, msg,
                                        sizeof msg, &err), 0);
        assert_int_equal(cls, PS_SQL_OK);
    }
    EXPECT(k, cs, "SELECT count(*) FROM stadium", PS_SQL_OK);
    EXPECT(k, "world_1", "SELECT * FROM sqlite_sequence", PS_SQL_NO_TABLE);
    ps_sql_checker_free(k);
    ps_sql_checker_free(NULL);
    assert_string_equal(ps_sql_class_name(PS_SQL_MULTIPLE), "multiple_statements");
    assert_string_equal(ps_sql_class_name(PS_SQL_AMBIGUOUS), "ambiguous_column");
    assert_string_equal(ps_sql_class_name(PS_SQL_CLASSES), "other");
}

/* Schemas SQLite would refuse as written: created anyway. ("text 4", a
 * type that is not one word, was found by tests/fuzz/fuzz_schema_tables.) */
static void test_odd_schemas(void **state)
{
    (void)state;
    const char *j =
        "[{\"db_id\": \"odd\", \"table_names_original\": [\"empty\", \"dup\", \"we\\\"ird\", "
        "\"DUP\", \"order\"], \"column_names_original\": [[-1, \"*\"], [1, \"a\"], [1, \"A\"], "
        "[2, \"x y\"], [3, \"z\"], [4, \"group\"]], \"column_types\": [\"text\", \"number\", "
        "\"text); CREATE TABLE pwned(x); --\", \"text 4\", \"text\", \"time\"]}]";
    ps_schemas *s;
    ps_error err = {0};
    assert_int_equal(ps_schemas_create(&s, &err), 0);
    assert_int_equal(ps_schemas_add_tables_json(s, j, strlen(j), "odd.json", &err), 0);
    ps_buf ddl;
    ps_buf_init(&ddl);
    assert_int_equal(ps_sql_schema_ddl(ps_schemas_at(s, 0), &ddl), 0);
    assert_string_equal(ddl.data, "CREATE TABLE \"empty\" (\"\");\n"
                                  "CREATE TABLE \"dup\" (\"a\" NUMERIC);\n"
                                  "CREATE TABLE \"we\"\"ird\" (\"x y\");\n"
                                  "CREATE TABLE \"order\" (\"group\" TEXT);\n");
    ps_buf_free(&ddl);
    ps_sql_checker *k;
    assert_int_equal(ps_sql_checker_create(s, &k, &err), 0);
    expect(k, s, "odd", "SELECT count(*) FROM empty", 26, PS_SQL_OK);
    const char *q = "SELECT A FROM Dup WHERE a > 1";
    expect(k, s, "odd", q, strlen(q), PS_SQL_OK);
    q = "SELECT \"x y\" FROM \"we\"\"ird\"";
    expect(k, s, "odd", q, strlen(q), PS_SQL_OK);
    q = "SELECT * FROM pwned";
    expect(k, s, "odd", q, strlen(q), PS_SQL_NO_TABLE);
    q = "SELECT `group` FROM [order]";
    expect(k, s, "odd", q, strlen(q), PS_SQL_OK);
    ps_sql_checker_free(k);
    ps_schemas_free(s);
}

/* Hostile gold SQL: refused, and nothing appears on disk (the working
 * directory is an empty temporary one, where relative names would land). */
static void test_hostile(void **state)
{
    (void)state;
    char dir[] = "/tmp/ps-hostile-XXXXXX", cwd[4096];
    assert_non_null(mkdtemp(dir));
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir(dir), 0);
    ps_sql_checker *k;
    ps_error err = {0};
    assert_int_equal(ps_sql_checker_create(spider, &k, &err), 0);
    const char *cs = "concert_singer";
    static const char *const refused[] = {
        "ATTACH DATABASE 'evil.db' AS e",
        "ATTACH DATABASE '/tmp/ps-hostile-evil.db' AS e",
        "DETACH DATABASE main",
        "SELECT load_extension('./evil')",
        "SELECT load_extension('/tmp/evil.so', 'entry')",
        "PRAGMA writable_schema = 1",
        "PRAGMA table_info(singer)",
        "PRAGMA main.journal_mode = WAL",
        "CREATE VIRTUAL TABLE v USING fts5(x)",
    };
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
        const char *m = EXPECT(k, cs, refused[i], PS_SQL_OTHER);
        if (!strstr(m, "not authorized") && !strstr(m, "no such module") &&
            !strstr(m, "too many attached"))
            fail_msg("'%s': %s", refused[i], m);
    }
    EXPECT(k, cs, "SELECT readfile('/etc/passwd')", PS_SQL_NO_FUNCTION);
    EXPECT(k, cs, "SELECT writefile('x', 'y')", PS_SQL_NO_FUNCTION);
    ps_sql_checker_free(k);
    assert_int_equal(ps_test_count_entries(dir, ""), 0);
    assert_int_not_equal(access("/tmp/ps-hostile-evil.db", F_OK), 0);
    assert_int_equal(chdir(cwd), 0);
    assert_int_equal(rmdir(dir), 0);
}

/* One checker per thread, the schemas shared: every thread compiles a
 * query naming each database's first table, and serializes the schema,
 * with the others at work (clean under ThreadSanitizer: make BUILD=build/tsan
 * SANITIZE=thread build/tsan/tests/test_schema_compile). */
static void *compile_all(void *arg)
{
    long *bad = arg;
    ps_sql_checker *k;
    ps_error err = {0};
    if (ps_sql_checker_create(spider, &k, &err)) {
        ++*bad;
        return NULL;
    }
    ps_buf q, b;
    ps_buf_init(&q);
    ps_buf_init(&b);
    for (size_t i = 0; i < ps_schemas_count(spider); i++) {
        const ps_schema *d = ps_schemas_at(spider, i);
        ps_buf_reset(&q);
        ps_buf_reset(&b);
        ps_sql_class cls;
        char msg[128];
        if (ps_buf_puts(&q, "SELECT count(*) FROM ") || ps_sql_put_ident(&q, d->tables[0], true) ||
            ps_sql_compile(k, d, q.data, q.len, &cls, msg, sizeof msg, &err) || cls != PS_SQL_OK ||
            ps_schema_serialize(d, PS_SCHEMA_DDL, NULL, &b))
            ++*bad;
    }
    ps_buf_free(&q);
    ps_buf_free(&b);
    ps_sql_checker_free(k);
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    pthread_t th[4];
    long bad[4] = {0};
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&th[i], NULL, compile_all, &bad[i]), 0);
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(bad[i], 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_classes),
        cmocka_unit_test(test_odd_schemas),
        cmocka_unit_test(test_hostile),
        cmocka_unit_test(test_threads),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
