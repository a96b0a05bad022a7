/* Execution before and after cleaning: the result fingerprint
 * (schema/execute.c) on a database made here, the result regressions the
 * statistics count and the gate check that names their rules
 * (validate/sql_stats.c, checks_sql.c), their JSON round trip, and the
 * shard's exec database (store/) with what --verify says of a damaged one. */
#include "tests/support/testutil.h"
#include "tests/support/validate_fixture.h"
#include "schema/schema.h"
#include "store/inspect.h"
#include "validate/vsql.h"

#include <dirent.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PS_TEST_DBS 150

/* DIR/shop/shop.sqlite: t(x, y) with a repeated row, loaded as schemas. */
static ps_schemas *shop(char **dir)
{
    *dir = ps_test_tmpdir("exec");
    char path[4096];
    snprintf(path, sizeof path, "%s/shop", *dir);
    assert_int_equal(mkdir(path, 0755), 0);
    strcat(path, "/shop.sqlite");
    sqlite3 *c;
    assert_int_equal(sqlite3_open(path, &c), SQLITE_OK);
    assert_int_equal(sqlite3_exec(c,
                                  "CREATE TABLE t (x INTEGER, y TEXT);"
                                  "INSERT INTO t VALUES (1, 'France'), (2, 'Spain'), (3, 'France'),"
                                  " (3, 'France'), (4, NULL);",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(c);
    ps_schemas *s;
    ps_error err = {0};
    assert_int_equal(ps_schemas_create(&s, &err), 0);
    assert_int_equal(ps_schemas_load_databases(s, *dir, &err), 0);
    return s;
}

static ps_exec_result run(ps_sql_checker *k, const ps_schema *db, const char *sql, unsigned ms)
{
    ps_exec_result r;
    char msg[256];
    ps_error err = {0};
    assert_int_equal(ps_sql_execute_fp(k, db, sql, strlen(sql), ms, 100000, &r, msg, sizeof msg,
                                       &err), 0);
    return r;
}

static void test_fingerprint(void **state)
{
    (void)state;
    char *dir;
    ps_schemas *s = shop(&dir);
    const ps_schema *db = ps_schemas_find(s, "shop", 4);
    assert_non_null(db);
    ps_sql_checker *k;
    ps_error err = {0};
    assert_int_equal(ps_sql_checker_create(s, &k, &err), 0);
    ps_exec_result a = run(k, db, "SELECT x, y FROM t", 2000);
    assert_int_equal(a.status, PS_EXEC_OK);
    assert_int_equal(a.rows, 5);
    /* row order does not count without ORDER BY ... */
    ps_exec_result b = run(k, db, "SELECT x, y FROM t ORDER BY x DESC", 2000);
    ps_exec_result c = run(k, db, "SELECT * FROM (SELECT x, y FROM t ORDER BY x DESC)", 2000);
    assert_true(c.hash == a.hash);
    /* ... and does with one at the top level */
    ps_exec_result d = run(k, db, "SELECT x, y FROM t ORDER BY x ASC", 2000);
    assert_true(b.hash != d.hash);
    /* a repeated row counts (an exclusive or would cancel the pair) */
    ps_exec_result e = run(k, db, "SELECT DISTINCT x, y FROM t", 2000);
    assert_int_equal(e.rows, 4);
    ps_exec_result f = run(k, db, "SELECT x, y FROM t WHERE rowid <> 4 OR x = 3 AND rowid = 4 "
                                  "UNION ALL SELECT 99, 'x' WHERE 0", 2000);
    assert_true(f.hash == a.hash);
    ps_exec_result g = run(k, db, "SELECT x, y FROM t UNION ALL SELECT 3, 'France'", 2000);
    assert_true(g.hash != a.hash);
    /* the SQLite type counts: 1 is not '1', NULL is not '' */
    assert_true(run(k, db, "SELECT 1", 2000).hash != run(k, db, "SELECT '1'", 2000).hash);
    assert_true(run(k, db, "SELECT NULL", 2000).hash != run(k, db, "SELECT ''", 2000).hash);
    /* the case of a literal changes the answer, not the compile */
    ps_exec_result up = run(k, db, "SELECT count(*) FROM t WHERE y = 'France'", 2000);
    ps_exec_result low = run(k, db, "SELECT count(*) FROM t WHERE y = 'france'", 2000);
    assert_int_equal(up.rows, 1);
    assert_int_equal(low.rows, 1);
    assert_true(up.hash != low.hash);
    assert_int_equal(run(k, db, "SELECT y FROM t WHERE y = 'france'", 2000).status, PS_EXEC_EMPTY);
    assert_int_equal(run(k, db, "SELECT nope FROM t", 2000).status, PS_EXEC_ERROR);
    /* a query that would run for hours stops at its limit */
    time_t t0 = time(NULL);
    ps_exec_result slow = run(k, db, "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 "
                                     "FROM c WHERE n < 1000000000) SELECT count(*) FROM c", 200);
    assert_int_equal(slow.status, PS_EXEC_TIMEOUT);
    assert_true(time(NULL) - t0 < 20);
    ps_sql_checker_free(k);
    ps_schemas_free(s);
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    free(dir);
}

static size_t open_fds(void)
{
    size_t n = 0;
    DIR *d = opendir("/proc/self/fd");
    assert_non_null(d);
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

/* More databases than a worker keeps open: every query still runs (the
 * one used longest ago is closed and reopened when met again), with the
 * same result, and the descriptors held stay under the bound. */
static void test_connection_bound(void **state)
{
    (void)state;
    enum { DBS = PS_TEST_DBS };
    char *dir = ps_test_tmpdir("execbound");
    char path[4096];
    for (int i = 0; i < DBS; i++) {
        snprintf(path, sizeof path, "%s/d%03d", dir, i);
        assert_int_equal(mkdir(path, 0755), 0);
        snprintf(path, sizeof path, "%s/d%03d/d%03d.sqlite", dir, i, i);
        sqlite3 *c;
        assert_int_equal(sqlite3_open(path, &c), SQLITE_OK);
        char sql[128];
        snprintf(sql, sizeof sql, "CREATE TABLE t (v); INSERT INTO t VALUES (%d);", i);
        assert_int_equal(sqlite3_exec(c, sql, NULL, NULL, NULL), SQLITE_OK);
        sqlite3_close(c);
    }
    ps_schemas *s;
    ps_error err = {0};
    assert_int_equal(ps_schemas_create(&s, &err), 0);
    assert_int_equal(ps_schemas_load_databases(s, dir, &err), 0);
    ps_sql_checker *k;
    assert_int_equal(ps_sql_checker_create(s, &k, &err), 0);
    size_t before = open_fds();
    uint64_t first[DBS];
    for (int round = 0; round < 3; round++)
        for (int i = 0; i < DBS; i++) {
            char id[16];
            snprintf(id, sizeof id, "d%03d", i);
            const ps_schema *db = ps_schemas_find(s, id, 4);
            assert_non_null(db);
            ps_exec_result r = run(k, db, "SELECT v FROM t", 2000);
            assert_int_equal(r.status, PS_EXEC_OK);
            if (round == 0)
                first[i] = r.hash;
            else
                assert_true(first[i] == r.hash);
        }
    size_t held = open_fds() - before;
    if (held > 128)
        fail_msg("%zu descriptors held for %d databases", held, DBS);
    assert_true(first[0] != first[1]);
    ps_sql_checker_free(k);
    ps_schemas_free(s);
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    free(dir);
}

static void test_top_order_by(void **state)
{
    (void)state;
    static const struct { const char *sql; bool want; } C[] = {
        {"SELECT a FROM t ORDER BY a", true},
        {"select a from t order\n by a desc limit 3", true},
        {"SELECT a FROM (SELECT a FROM t ORDER BY a)", false},
        {"SELECT rank() OVER (ORDER BY a) FROM t", false},
        {"SELECT 'ORDER BY' FROM t", false},
        {"SELECT \"order\" FROM t -- ORDER BY a\n", false},
        {"SELECT a FROM t /* ORDER BY */ WHERE a IN (SELECT b FROM u ORDER BY b)", false},
        {"SELECT a FROM t UNION SELECT b FROM u ORDER BY 1", true},
        {"SELECT [order] FROM t", false},
        {"SELECT border, by FROM t", false},
    };
    for (size_t i = 0; i < sizeof C / sizeof *C; i++)
        if (ps_sql_top_order_by(C[i].sql, strlen(C[i].sql)) != C[i].want)
            fail_msg("%s: expected %d", C[i].sql, C[i].want);
}

static const char *const RULES[2] = {"lower-literals", "fold-spaces"};

/* Four records: one unchanged, one whose literal a rule lowered (another
 * hash), one only re-spaced (same fingerprint), one whose raw SQL failed
 * (not compared). */
static ps_vsql *stats(void)
{
    ps_vsql *v = ps_vsql_new(RULES, 2);
    assert_non_null(v);
    static const unsigned char lowered[2] = {2, 0}, spaced[2] = {0, 2};
    ps_vsql_record r[4] = {
        {.id = "a", .label = "x", .raw_class = 0, .clean_class = 0, .exec_status = PS_EXEC_OK,
         .exec_rows = 2, .ran_before = 1, .exec_before = PS_EXEC_OK, .exec_before_rows = 2,
         .exec_before_hash = 7, .exec_hash = 7},
        {.id = "b", .label = "x", .raw_class = 0, .clean_class = 0, .touched = lowered,
         .exec_status = PS_EXEC_EMPTY, .ran_before = 1, .exec_before = PS_EXEC_OK,
         .exec_before_rows = 1, .exec_before_hash = 9},
        {.id = "c", .label = "y", .raw_class = 0, .clean_class = 0, .touched = spaced,
         .exec_status = PS_EXEC_OK, .exec_rows = 3, .ran_before = 1, .exec_before = PS_EXEC_OK,
         .exec_before_rows = 3, .exec_before_hash = 5, .exec_hash = 5},
        {.id = "d", .raw_class = 0, .clean_class = 0, .touched = lowered,
         .exec_status = PS_EXEC_OK, .exec_rows = 1, .exec_hash = 4, .ran_before = 1,
         .exec_before = PS_EXEC_ERROR},
    };
    for (int i = 0; i < 4; i++)
        assert_int_equal(ps_vsql_add(v, &r[i]), 0);
    return v;
}

static void test_result_regressions(void **state)
{
    (void)state;
    ps_vsql *v = stats();
    assert_int_equal(v->result_compared, 3);
    assert_int_equal(v->result_regressions, 1);
    assert_int_equal(v->rule_result_regressions[0], 1);
    assert_int_equal(v->rule_result_regressions[1], 0);
    assert_int_equal(v->exec_before[PS_EXEC_ERROR], 1);
    /* the JSON round trip keeps every count, the labels' statuses too */
    json_t *j = ps_vsql_to_json(v);
    ps_vsql *back;
    ps_error err = {0};
    assert_int_equal(ps_vsql_from_json(j, &back, &err), 0);
    json_t *j2 = ps_vsql_to_json(back);
    assert_true(json_equal(j, j2));
    json_t *reg = json_object_get(json_object_get(json_object_get(j, "execution"), "result"),
                                  "regressions");
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(reg, "by_rule"), 0), "rule")),
                        "lower-literals");
    /* a regression count past the compared ones is refused */
    json_object_set_new(reg, "count", json_integer(4));
    ps_vsql *bad = NULL;
    assert_int_equal(ps_vsql_from_json(j, &bad, &err), PS_EFORMAT);
    json_decref(j), json_decref(j2);
    /* the gate: fails naming the rule, the record and both fingerprints */
    ps_vconfig *c = ps_vconfig_new();
    synth s;
    synth_plain(&s, 200);
    ps_vreport *r = synth_build(&s, c);
    assert_int_equal(ps_validate_sql(c, v, r, &err), 0);
    assert_int_equal(verdict(r, "sql_result_regression"), PS_VV_FAIL);
    assert_explains(r, "sql_result_regression", "changed by rule 'lower-literals' (1)");
    assert_explains(r, "sql_result_regression", "e.g. 'b' (before: ok, 1 row, 0000000000000009; "
                                                "after: empty, 0 rows");
    ps_vreport_free(r);
    /* a build without the raw SQL run has no such check */
    r = synth_build(&s, c);
    ps_vsql *plain = ps_vsql_new(RULES, 2);
    ps_vsql_record q = {.id = "e", .raw_class = 0, .clean_class = 0, .exec_status = PS_EXEC_OK,
                        .exec_rows = 1};
    assert_int_equal(ps_vsql_add(plain, &q), 0);
    assert_int_equal(ps_validate_sql(c, plain, r, &err), 0);
    for (size_t i = 0; i < r->n; i++)
        assert_string_not_equal(r->checks[i].name, "sql_result_regression");
    char *rj = ps_vreport_json(r);
    assert_null(strstr(rj, "sql_result_regression"));
    free(rj);
    ps_vreport_free(r);
    synth_free(&s);
    ps_vconfig_free(c);
    ps_vsql_free(plain);
    ps_vsql_free(back);
    ps_vsql_free(v);
}

static void test_exec_db(void **state)
{
    (void)state;
    char *dir = ps_test_tmpdir("execdb");
    char path[4096];
    snprintf(path, sizeof path, "%s/shard-00000.mdb", dir);
    ps_shard_writer *w;
    ps_error err = {0};
    assert_int_equal(ps_shard_writer_open(&w, path, &err), 0);
    assert_int_equal(ps_shard_writer_enable_exec(w, &err), 0);
    unsigned char fps[3 * PS_EXEC_ENTRY_BYTES];
    for (int i = 0; i < 3; i++)
        ps_exec_entry_encode(fps + i * PS_EXEC_ENTRY_BYTES, 0, (unsigned)i, 1, 10 + i, 20 + i,
                             30 + i, 40 + i);
    /* fingerprints of a block not put yet are refused */
    assert_int_equal(ps_shard_writer_put_exec(w, 0, 0, fps, 3, &err), PS_EINVAL);
    assert_int_equal(ps_shard_writer_put(w, 0, 0, "block", 5, &err), 0);
    assert_int_equal(ps_shard_writer_put_exec(w, 0, 0, fps, 3, &err), 0);
    assert_int_equal(ps_shard_writer_put(w, 0, 1, "other", 5, &err), 0);
    assert_int_equal(ps_shard_writer_finish(w, "{\"magic\":\"pairshard-shard\",\"format_version\":1}",
                                            &err), 0);
    ps_shard *s;
    assert_int_equal(ps_shard_open(&s, path, &err), 0);
    assert_true(ps_shard_has_exec_db(s));
    assert_int_equal(ps_shard_exec_count(s), 1);
    const unsigned char *got;
    size_t n;
    assert_int_equal(ps_shard_get_exec(s, 0, 0, &got, &n, &err), 1);
    assert_int_equal(n, 3);
    assert_memory_equal(got, fps, sizeof fps);
    assert_int_equal(got[PS_EXEC_ENTRY_BYTES + 1], 1);
    assert_int_equal(ps_get_le64(got + 2 * PS_EXEC_ENTRY_BYTES + 32), 42);
    /* the second block has none: what --verify reports as exec_db */
    assert_int_equal(ps_shard_get_exec(s, 0, 1, &got, &n, &err), 0);
    ps_shard_close(s);
    /* a writer not asked for it writes no exec database */
    snprintf(path, sizeof path, "%s/shard-00001.mdb", dir);
    assert_int_equal(ps_shard_writer_open(&w, path, &err), 0);
    assert_int_equal(ps_shard_writer_put(w, 0, 0, "block", 5, &err), 0);
    assert_int_equal(ps_shard_writer_put_exec(w, 0, 0, fps, 3, &err), PS_EINVAL);
    assert_int_equal(ps_shard_writer_finish(w, "{\"magic\":\"pairshard-shard\",\"format_version\":1}",
                                            &err), 0);
    assert_int_equal(ps_shard_open(&s, path, &err), 0);
    assert_false(ps_shard_has_exec_db(s));
    ps_shard_close(s);
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fingerprint),
        cmocka_unit_test(test_top_order_by),
        cmocka_unit_test(test_connection_bound),
        cmocka_unit_test(test_result_regressions),
        cmocka_unit_test(test_exec_db),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
