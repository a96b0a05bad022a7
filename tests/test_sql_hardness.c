/* Tests of schema/hardness.c: Spider's hardness classes (eval_hardness of its
 * evaluation script) on hand-picked queries and on the whole of Spider dev,
 * whose official distribution is easy 248, medium 446, hard 174, extra 166. */
#include "schema/schema.h"
#include "tests/support/testutil.h"

#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

static ps_sql_hardness level_of(const char *sql, ps_sql_hardness_counts *h)
{
    ps_sql_hardness level;
    assert_int_equal(ps_sql_hardness_classify(sql, strlen(sql), h, &level), 0);
    return level;
}

static void expect(const char *sql, uint32_t c1, uint32_t c2, uint32_t others, ps_sql_hardness want)
{
    ps_sql_hardness_counts h;
    ps_sql_hardness got = level_of(sql, &h);
    if (h.component1 != c1 || h.component2 != c2 || h.others != others || got != want)
        fail_msg("%s: counts %u/%u/%u (want %u/%u/%u), %s (want %s)", sql, h.component1,
                 h.component2, h.others, c1, c2, others, ps_sql_hardness_name(got),
                 ps_sql_hardness_name(want));
}

/* One query of each class, from Spider dev, with the counts the script makes. */
static void test_each_class(void **state)
{
    (void)state;
    expect("SELECT count(*) FROM singer", 0, 0, 0, PS_HARDNESS_EASY);
    expect("SELECT name FROM stadium WHERE capacity > 5000", 1, 0, 0, PS_HARDNESS_EASY);
    /* two SELECT items, two WHERE conditions: others 2, component1 1 */
    expect("SELECT name, country FROM singer WHERE age > 20 AND country = 'France'", 1, 0, 2,
           PS_HARDNESS_MEDIUM);
    /* a join and an ORDER BY: component1 2 */
    expect("SELECT T1.name FROM singer AS T1 JOIN concert AS T2 ON T1.id = T2.sid ORDER BY T1.age",
           2, 0, 0, PS_HARDNESS_MEDIUM);
    /* one nested query and nothing else: hard */
    expect("SELECT name FROM singer WHERE age > (SELECT avg(age) FROM singer)", 1, 1, 0,
           PS_HARDNESS_HARD);
    /* GROUP BY, ORDER BY, LIMIT: component1 3 */
    expect("SELECT country FROM singer GROUP BY country ORDER BY count(*) DESC LIMIT 1", 3, 0, 0,
           PS_HARDNESS_HARD);
    /* a set operation is a nested query: with one WHERE, hard; with a join too, extra */
    expect("SELECT name FROM singer WHERE age > 40 INTERSECT SELECT name FROM singer WHERE age < 30",
           1, 1, 0, PS_HARDNESS_HARD);
    expect("SELECT T1.name FROM a AS T1 JOIN b AS T2 ON T1.id = T2.id WHERE T2.x = 1 "
           "EXCEPT SELECT name FROM a WHERE y LIKE '%z%'",
           2, 1, 0, PS_HARDNESS_EXTRA);
    expect("SELECT a, b, count(*) FROM t JOIN u ON t.id = u.id JOIN v ON u.k = v.k "
           "GROUP BY a ORDER BY count(*) DESC LIMIT 3",
           5, 0, 2, PS_HARDNESS_EXTRA);
}

/* The script's own ways of counting, reproduced. */
static void test_script_quirks(void **state)
{
    (void)state;
    /* NOT IN counts as an aggregate (the NOT flag is the tuple's first
     * element), and the nested query once */
    expect("SELECT count(*) FROM t WHERE id NOT IN (SELECT id FROM u)", 1, 1, 1,
           PS_HARDNESS_EXTRA);
    /* the AND of a BETWEEN is no connector */
    expect("SELECT name FROM t WHERE age BETWEEN 20 AND 30", 1, 0, 0, PS_HARDNESS_EASY);
    /* OR and LIKE each add to component1 */
    expect("SELECT name FROM t WHERE a LIKE '%x%' OR b = 2", 3, 0, 1, PS_HARDNESS_HARD);
    /* an AND between HAVING conditions counts as an aggregate; the
     * aggregate inside HAVING's condition does not */
    expect("SELECT a FROM t GROUP BY a HAVING count(*) > 1", 1, 0, 0, PS_HARDNESS_EASY);
    expect("SELECT a, max(b) FROM t GROUP BY a HAVING count(*) > 1 AND sum(c) < 9", 1, 0, 2,
           PS_HARDNESS_MEDIUM);
    /* only the outermost query's clauses count; a FROM subquery is a table */
    expect("SELECT count(*) FROM (SELECT a FROM t WHERE b = 1 GROUP BY a ORDER BY a LIMIT 2)",
           0, 0, 0, PS_HARDNESS_EASY);
    /* ORDER BY aggregates count, SELECT's DISTINCT does not make an item */
    expect("SELECT DISTINCT a FROM t ORDER BY sum(b) - min(c)", 1, 0, 1, PS_HARDNESS_MEDIUM);
    /* keywords and quotes: case, a literal holding keywords, a comment */
    expect("select name from t where x = 'a where b or c' -- or d\n", 1, 0, 0, PS_HARDNESS_EASY);
}

static void test_unclassified(void **state)
{
    (void)state;
    const char *bad[] = {"", "DROP TABLE t", "SELECT a FROM t WHERE b = 'open",
                         "SELECT a FROM (t", "SELECT a FROM t)", "/* SELECT"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        if (level_of(bad[i], NULL) != PS_HARDNESS_UNCLASSIFIED)
            fail_msg("'%s' classified", bad[i]);
    assert_int_equal(level_of("WITH x AS (SELECT 1) SELECT * FROM x", NULL), PS_HARDNESS_HARD);
    assert_null(ps_sql_hardness_name((ps_sql_hardness)9));
    assert_string_equal(ps_sql_hardness_name(PS_HARDNESS_EXTRA), "extra");
}

/* The official counts of Spider dev (its evaluation script on dev_gold.sql). */
static void test_spider_dev(void **state)
{
    (void)state;
    json_error_t je;
    json_t *dev = json_load_file(ps_test_data("spider/dev.json"), 0, &je);
    assert_non_null(dev);
    size_t n[5] = {0};
    size_t i;
    json_t *e;
    json_array_foreach(dev, i, e) {
        const char *q = json_string_value(json_object_get(e, "query"));
        assert_non_null(q);
        n[level_of(q, NULL)]++;
    }
    json_decref(dev);
    assert_int_equal(i, 1034);
    assert_int_equal(n[PS_HARDNESS_EASY], 248);
    assert_int_equal(n[PS_HARDNESS_MEDIUM], 446);
    assert_int_equal(n[PS_HARDNESS_HARD], 174);
    assert_int_equal(n[PS_HARDNESS_EXTRA], 166);
    assert_int_equal(n[PS_HARDNESS_UNCLASSIFIED], 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_class),
        cmocka_unit_test(test_script_quirks),
        cmocka_unit_test(test_unclassified),
        cmocka_unit_test(test_spider_dev),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
