/* Tests of schema/shorten.c: which tables and columns a gold SQL uses
 * (what schema selection's gold recall is measured against), on real
 * Spider queries and BIRD-shaped quoted names. */
#include "tests/support/testutil.h"

#include "schema/schema.h"

#include <stdlib.h>
#include <string.h>

static ps_schemas *load(const char *rel)
{
    return ps_test_schemas(rel, NULL);
}

/* Checks what the SQL does not use, as text: the unused tables last to
 * first, then the unused columns of the used tables last to first ("t3 t1
 * c18 ..."). */
static void expect_order(const ps_schema *d, const char *sql, const char *want)
{
    unsigned char *gt = calloc(d->n_tables + 1, 1), *gc = calloc(d->n_columns + 1, 1);
    assert_int_equal(ps_schema_gold(d, sql, strlen(sql), gt, gc), 0);
    ps_buf b;
    ps_buf_init(&b);
    assert_int_equal(ps_buf_puts(&b, ""), 0);
    for (size_t t = d->n_tables; t-- > 0;)
        if (!gt[t])
            assert_int_equal(ps_buf_printf(&b, "%st%zu", b.len ? " " : "", t), 0);
    for (size_t c = d->n_columns; c-- > 0;) {
        if (gc[c])
            assert_true(gt[d->columns[c].table]); /* a used column's table is used */
        else if (gt[d->columns[c].table])
            assert_int_equal(ps_buf_printf(&b, "%sc%zu", b.len ? " " : "", c), 0);
    }
    free(gt);
    free(gc);
    assert_string_equal(b.data, want);
    ps_buf_free(&b);
}

static void test_spider_query(void **state)
{
    (void)state;
    ps_schemas *s = load("spider/tables.json");
    const ps_schema *d = ps_schemas_find(s, "concert_singer", 14);
    /* Spider dev #12. Mentioned: concert, stadium; Name (stadium),
     * Stadium_ID (both). Dropped first: singer_in_concert (t3), singer
     * (t1); then concert's Year, Theme, concert_Name, concert_ID (c18,
     * c16, c15, c14) and stadium's Average, Lowest, Highest, Capacity,
     * Location (c6, c5, c4, c3, c1), each table's last column first. */
    const char *sql = "SELECT T2.name ,  count(*) FROM concert AS T1 JOIN stadium AS T2 ON "
                      "T1.stadium_id  =  T2.stadium_id GROUP BY T1.stadium_id";
    expect_order(d, sql, "t3 t1 c18 c16 c15 c14 c6 c5 c4 c3 c1");

    unsigned char kt[4], kc[21], all[21];
    ps_schema_mask m = {kt, kc};
    assert_int_equal(ps_schema_gold(d, sql, strlen(sql), kt, kc), 0);
    memset(all, 1, sizeof all);
    ps_buf b;
    ps_buf_init(&b);
    ps_schema_mask tables_only = {kt, all}; /* the two tables, whole */
    assert_int_equal(ps_schema_serialize(d, PS_SCHEMA_PICARD, &tables_only, &b), 0);
    assert_string_equal(b.data, " | concert_singer | stadium : stadium_id , location , name , "
                                "capacity , highest , lowest , average | concert : concert_id , "
                                "concert_name , theme , stadium_id , year");
    ps_buf_reset(&b);
    assert_int_equal(ps_schema_serialize(d, PS_SCHEMA_PICARD, &m, &b), 0); /* just what it uses */
    assert_string_equal(b.data, " | concert_singer | stadium : stadium_id , name | concert : "
                                "stadium_id");
    ps_buf_free(&b);

    /* every table mentioned, every column: nothing to drop */
    expect_order(d,
                 "select * from stadium, singer, concert, singer_in_concert where stadium_id "
                 "and location and name and capacity and highest and lowest and average and "
                 "singer_id and country and song_name and song_release_year and age and is_male "
                 "and concert_id and concert_name and theme and year",
                 "");
    ps_schemas_free(s);
}

static void test_quoted(void **state)
{
    (void)state;
    ps_schemas *s = load("formats/bird/dev_tables.json");
    const ps_schema *d = ps_schemas_find(s, "california_schools", 18);
    /* satscores only in a string and schools only in comments; frpm in
     * brackets, a column in back-quotes with a doubled quote elsewhere.
     * Dropped: t2 schools, t1 satscores; frpm's unmentioned columns, last
     * first: Enrollment (K-12) c7, Charter School c6, School Name c5,
     * District Name c4, County Code c2, Academic Year c1 */
    expect_order(d,
                 "SELECT `Free Meal Count (K-12)`, \"CDSCode\" FROM [FRPM] "
                 "WHERE `County Name` = 'satscores' -- schools\n /* schools */ AND \"a\"\"b\"",
                 "t2 t1 c7 c6 c5 c4 c2 c1");
    /* an unterminated literal or quote ends the scan without reading past */
    expect_order(d, "SELECT County FROM schools WHERE x = 'frpm", "t1 t0 c17 c16 c15 c13");
    expect_order(d, "SELECT `County", "t2 t1 t0");
    ps_schemas_free(s);

    /* Chinese names (DuSQL), bare */
    s = load("formats/dusql/db_schema.json");
    d = ps_schemas_find(s, "中国城市", strlen("中国城市"));
    expect_order(d, "select 名称 from 城市 where 人口 > 10000000", "t1 c1");
    ps_schemas_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spider_query),
        cmocka_unit_test(test_quoted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
