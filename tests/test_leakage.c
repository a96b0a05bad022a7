/* The leakage check (validate/leakage*.c): the keys each kind compares,
 * shingles and their Jaccard, the LSH shape, an index of two held-out sets
 * found per kind and set, the tally's counts, examples and limits. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "validate/leakage.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*key_fn)(const char *, size_t, ps_buf *);

static void expect_key(key_fn f, const char *in, const char *want)
{
    ps_buf b;
    ps_buf_init(&b);
    assert_int_equal(f(in, strlen(in), &b), 0);
    assert_string_equal(b.len ? b.data : "", want);
    ps_buf_free(&b);
}

static void test_question_keys(void **state)
{
    (void)state;
    expect_key(ps_leak_question_key, "How many  heads, are there?", "howmanyheadsarethere");
    /* NFKC (full-width letters, the fi ligature) and full case folding (ß) */
    expect_key(ps_leak_question_key, "ＨＯＷ ﬁve STRAẞE?", "howfivestrasse");
    expect_key(ps_leak_question_key, "“Quoted” — text…", "quotedtext");
    expect_key(ps_leak_question_key, "?!", "");
    expect_key(ps_leak_near_text, "  How many, heads  are\tthere? ", "how many heads are there");
    expect_key(ps_leak_near_text, "a - b", "a b");
}

static void test_sql_keys(void **state)
{
    (void)state;
    expect_key(ps_leak_sql_key, "SELECT  Name\nFROM T WHERE x = 'France' ;",
               "select name from t where x = 'France'");
    expect_key(ps_leak_sql_key, "select a from t;;", "select a from t");
    /* case kept inside both quotes, a doubled quote inside a literal */
    expect_key(ps_leak_sql_key, "SELECT \"Ab  C\" FROM T WHERE n = 'It''S  X'",
               "select \"Ab  C\" from t where n = 'It''S  X'");
    expect_key(ps_leak_sql_template,
               "SELECT T1.name FROM t1 AS T1 WHERE age > 30 AND x = 'a' LIMIT 1.5e3;",
               "select t1.name from t1 as t1 where age > ? and x = ? limit ?");
    expect_key(ps_leak_sql_template, "select col2 from t where -7 < .5", "select col2 from t where -? < ?");
    expect_key(ps_leak_sql_template, "select 'unclosed", "select ?");
}

static void test_shingles_and_jaccard(void **state)
{
    (void)state;
    uint64_t *a = NULL, *b = NULL;
    size_t na, nb, ca = 0, cb = 0;
    /* "abcab": abc, bca, cab; "abcd": abc, bcd -> 1 / 4 */
    assert_int_equal(ps_leak_shingles("abcab", 5, 3, &a, &na, &ca), 0);
    assert_int_equal(ps_leak_shingles("abcd", 4, 3, &b, &nb, &cb), 0);
    assert_int_equal(na, 3);
    assert_int_equal(nb, 2);
    assert_true(fabs(ps_leak_jaccard(a, na, b, nb) - 0.25) < 1e-12);
    /* code points, not bytes: "éé" is one 2-gram of two characters */
    assert_int_equal(ps_leak_shingles("\xc3\xa9\xc3\xa9", 4, 2, &a, &na, &ca), 0);
    assert_int_equal(na, 1);
    /* shorter than n: one shingle; empty: none */
    assert_int_equal(ps_leak_shingles("ab", 2, 3, &a, &na, &ca), 0);
    assert_int_equal(na, 1);
    assert_int_equal(ps_leak_shingles("", 0, 3, &a, &na, &ca), 0);
    assert_int_equal(na, 0);
    free(a);
    free(b);
}

static void test_lsh_shape(void **state)
{
    (void)state;
    unsigned b, r;
    ps_leak_lsh_shape(0.8, &b, &r);
    assert_int_equal(r, 6);
    assert_int_equal(b, 21);
    assert_true(1.0 - pow(1.0 - pow(0.8, r), b) >= 0.99);
    ps_leak_lsh_shape(0.5, &b, &r);
    assert_true(1.0 - pow(1.0 - pow(0.5, r), b) >= 0.99);
    assert_true(b * r <= 128);
}

static ps_leak_index *two_sets(void)
{
    ps_leak_options o;
    ps_leak_options_init(&o);
    ps_leak_index *x;
    ps_error err;
    assert_int_equal(ps_leak_index_create(&o, &x, &err), 0);
    unsigned h0, h1;
    assert_int_equal(ps_leak_index_add_holdout(x, "dev.json", &h0, &err), 0);
    assert_int_equal(ps_leak_index_add_holdout(x, "test.json", &h1, &err), 0);
    const ps_leak_text d[] = {
        {"d0", "How many singers do we have?", "SELECT count(*) FROM singer", "concert_singer"},
        {"d1", "What is the name of the oldest dog?", "SELECT name FROM dogs ORDER BY age DESC LIMIT 1", "dog_kennels"},
        {"d2", "How many singers do we have", "select count(*) from singer;", "concert_singer"},
    };
    for (size_t i = 0; i < 3; i++)
        assert_int_equal(ps_leak_index_add(x, h0, &d[i], &err), 0);
    const ps_leak_text t = {"t0", "List the names of all pets.", "SELECT name FROM pets WHERE age > 3", "pets_1"};
    assert_int_equal(ps_leak_index_add(x, h1, &t, &err), 0);
    assert_int_equal(ps_leak_index_finish(x, &err), 0);
    return x;
}

static void test_find_per_kind_and_set(void **state)
{
    (void)state;
    ps_leak_index *x = two_sets();
    ps_leak_scratch *s;
    assert_int_equal(ps_leak_scratch_create(&s), 0);
    ps_leak_hits *h = malloc(sizeof *h);
    ps_error err;
    /* same question (case, punctuation), same SQL, other database */
    ps_leak_text r = {"a", "how many SINGERS do we have ?!", "select COUNT(*)  from singer ;",
                      "other_db"};
    assert_int_equal(ps_leak_find(x, s, &r, h, &err), 0);
    assert_int_equal(h->kinds, (1u << PS_LEAK_QUESTION) | (1u << PS_LEAK_NEAR_QUESTION) |
                                   (1u << PS_LEAK_SQL) | (1u << PS_LEAK_SQL_TEMPLATE));
    assert_int_equal(h->rec[PS_LEAK_QUESTION][0], 0); /* the first of d0 and d2 */
    assert_int_equal(h->rec[PS_LEAK_QUESTION][1], -1);
    assert_int_equal(h->rec[PS_LEAK_SQL][0], 0);
    assert_true(h->jaccard[0] == 1.0);
    /* a near question (one word changed), the template of the second set */
    ps_leak_text r2 = {"b", "What is the name of the oldest cat?",
                       "SELECT name FROM pets WHERE age > 10", "pets_1"};
    assert_int_equal(ps_leak_find(x, s, &r2, h, &err), 0);
    assert_int_equal(h->kinds, (1u << PS_LEAK_DATABASE) | (1u << PS_LEAK_NEAR_QUESTION) |
                                   (1u << PS_LEAK_SQL_TEMPLATE));
    assert_int_equal(h->rec[PS_LEAK_NEAR_QUESTION][0], 1);
    assert_true(h->jaccard[0] >= 0.8 && h->jaccard[0] < 1.0);
    assert_int_equal(h->rec[PS_LEAK_SQL_TEMPLATE][1], 3);
    assert_int_equal(h->rec[PS_LEAK_DATABASE][1], 3);
    /* nothing in common */
    ps_leak_text r3 = {"c", "Show all flights.", "SELECT * FROM flight", "flight_2"};
    assert_int_equal(ps_leak_find(x, s, &r3, h, &err), 0);
    assert_int_equal(h->kinds, 0);

    ps_leak_tally *t;
    assert_int_equal(ps_leak_tally_create(x, &t), 0);
    assert_int_equal(ps_leak_find(x, s, &r, h, &err), 0);
    assert_int_equal(ps_leak_tally_add(t, &r, h, -1), 0);
    assert_int_equal(ps_leak_find(x, s, &r2, h, &err), 0);
    assert_int_equal(ps_leak_tally_add(t, &r2, h, -1), 0);
    assert_int_equal(ps_leak_find(x, s, &r3, h, &err), 0);
    assert_int_equal(ps_leak_tally_add(t, &r3, h, -1), 0);
    assert_int_equal(ps_leak_tally_records(t), 3);
    assert_int_equal(ps_leak_tally_count(t, PS_LEAK_SQL_TEMPLATE), 2);
    assert_int_equal(ps_leak_tally_count_in(t, PS_LEAK_SQL_TEMPLATE, 0), 1);
    assert_int_equal(ps_leak_tally_count_in(t, PS_LEAK_SQL_TEMPLATE, 1), 1);
    ps_leak_limits l;
    ps_leak_limits_init(&l);
    assert_true(ps_leak_kind_fails(t, &l, PS_LEAK_DATABASE)); /* 1 of 3 > 0 */
    assert_false(ps_leak_kind_fails(t, &l, PS_LEAK_SQL_TEMPLATE)); /* reported only */
    assert_int_equal(ps_leak_limits_set(&l, "database=0.5", NULL, &err), 0);
    assert_false(ps_leak_kind_fails(t, &l, PS_LEAK_DATABASE));
    assert_int_not_equal(ps_leak_limits_set(&l, "database=2", NULL, &err), 0);
    json_t *j = ps_leak_tally_json(t, &l);
    json_t *ex = json_array_get(json_object_get(json_array_get(json_object_get(json_object_get(
                     json_object_get(j, "kinds"), "question"), "per_holdout"), 0), "examples"), 0);
    assert_string_equal(json_string_value(json_object_get(ex, "train_id")), "a");
    assert_string_equal(json_string_value(json_object_get(ex, "holdout_id")), "d0");
    json_decref(j);
    ps_leak_tally_free(t);
    free(h);
    ps_leak_scratch_free(s);
    ps_leak_index_free(x);
}

static void test_kinds_parse(void **state)
{
    (void)state;
    unsigned m;
    ps_error err;
    assert_int_equal(ps_leak_kinds_parse("question,sql_template", &m, &err), 0);
    assert_int_equal(m, (1u << PS_LEAK_QUESTION) | (1u << PS_LEAK_SQL_TEMPLATE));
    assert_int_equal(ps_leak_kinds_parse("sql,templ", &m, &err), PS_EUSAGE);
    assert_non_null(strstr(err.message, "'templ'"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_question_keys),
        cmocka_unit_test(test_sql_keys),
        cmocka_unit_test(test_shingles_and_jaccard),
        cmocka_unit_test(test_lsh_shape),
        cmocka_unit_test(test_find_per_kind_and_set),
        cmocka_unit_test(test_kinds_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
