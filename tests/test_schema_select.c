/* Tests of schema/select.c: how a question ranks a database's tables and
 * columns (plurals, camelCase, Spider's natural-language names, example
 * values), what keeping the first k units keeps (key columns, the tables
 * on foreign-key paths), and that the result is a function of the texts
 * alone; and that the natural names travel with a set's schemas. On
 * Spider's tables.json. */
#include "tests/support/testutil.h"

#include "schema/schema.h"

#include <stdlib.h>
#include <string.h>

typedef struct ranked {
    ps_select_scratch x;
    ps_shorten_unit u[512];
    size_t n;
    unsigned char kt[64], kc[512];
} ranked;

static void rank(ranked *r, const ps_schema *d, const char *question)
{
    ps_select_text q = {question, strlen(question)};
    assert_true(d->n_tables + d->n_columns <= 512 && d->n_tables <= 64);
    assert_int_equal(ps_schema_rank(&r->x, d, &q, 1, r->u, &r->n), 0);
}

static long table_of(const ps_schema *d, const char *name)
{
    for (size_t t = 0; t < d->n_tables; t++)
        if (!strcmp(d->tables[t], name))
            return (long)t;
    fail_msg("no table %s", name);
    return -1;
}

static long column_of(const ps_schema *d, const char *table, const char *name)
{
    long t = table_of(d, table);
    for (size_t c = 0; c < d->n_columns; c++)
        if (d->columns[c].table == (uint32_t)t && !strcmp(d->columns[c].name, name))
            return (long)c;
    fail_msg("no column %s.%s", table, name);
    return -1;
}

/* Where a unit comes in the rank (n: not there). */
static size_t pos(const ranked *r, bool is_column, long index)
{
    for (size_t i = 0; i < r->n; i++)
        if (r->u[i].is_column == is_column && r->u[i].index == (uint32_t)index)
            return i;
    return r->n;
}

static void test_plural_and_paths(void **state)
{
    (void)state;
    ps_schemas *s = ps_test_schemas("spider/tables.json", NULL);
    const ps_schema *d = ps_schemas_find(s, "concert_singer", 14);
    ranked r = {0};
    /* "singers" names singer; "song names" names Song_Name (split at the
     * underscore, made singular) */
    rank(&r, d, "What are the song names of singers above the average age?");
    assert_true(r.u[0].is_column == false || r.u[0].index == column_of(d, "singer", "Song_Name"));
    assert_true(pos(&r, false, table_of(d, "singer")) < pos(&r, false, table_of(d, "stadium")));
    assert_true(pos(&r, true, column_of(d, "singer", "Song_Name")) <
                pos(&r, true, column_of(d, "singer", "Country")));
    /* every table and non-key column once */
    size_t keys = 0;
    for (size_t c = 0; c < d->n_columns; c++) {
        bool key = d->columns[c].primary;
        for (size_t f = 0; f < d->n_fks; f++)
            key |= d->fks[f].column == c || d->fks[f].ref_column == c;
        keys += key;
        assert_int_equal(pos(&r, true, (long)c) < r.n, !key);
    }
    assert_int_equal(r.n, d->n_tables + d->n_columns - keys);

    /* singers and concerts: keeping both keeps singer_in_concert, the
     * table that joins them, with its keys but no other column */
    rank(&r, d, "Show the names of singers and the names of the concerts they sang in.");
    size_t k = 0;
    while (k < r.n && !(pos(&r, false, table_of(d, "singer")) < k &&
                        pos(&r, false, table_of(d, "concert")) < k))
        k++;
    ps_schema_mask_keep(&r.x, d, r.u, k, r.kt, r.kc);
    assert_true(r.kt[table_of(d, "singer_in_concert")]);
    assert_true(r.kc[column_of(d, "singer_in_concert", "Singer_ID")]);
    assert_true(r.kc[column_of(d, "singer", "Singer_ID")]); /* a key goes with its table */
    /* monotone: keeping one more unit never drops anything */
    unsigned char pt[64], pc[512];
    for (size_t j = 0; j <= r.n; j++) {
        ps_schema_mask_keep(&r.x, d, r.u, j, r.kt, r.kc);
        for (size_t t = 0; j && t < d->n_tables; t++)
            assert_true(!pt[t] || r.kt[t]);
        for (size_t c = 0; j && c < d->n_columns; c++)
            assert_true(!pc[c] || r.kc[c]);
        memcpy(pt, r.kt, d->n_tables);
        memcpy(pc, r.kc, d->n_columns);
    }
    for (size_t t = 0; t < d->n_tables; t++) /* all units: everything */
        assert_true(r.kt[t]);
    for (size_t c = 0; c < d->n_columns; c++)
        assert_true(r.kc[c]);
    ps_schema_mask_keep(&r.x, d, r.u, 0, r.kt, r.kc); /* none: nothing */
    for (size_t t = 0; t < d->n_tables; t++)
        assert_false(r.kt[t]);
    ps_select_scratch_free(&r.x);
    ps_schemas_free(s);
}

static void test_natural_names(void **state)
{
    (void)state;
    ps_schemas *s = ps_test_schemas("spider/tables.json", NULL);
    const ps_schema *d = ps_schemas_find(s, "dorm_1", 6);
    long lname = column_of(d, "Student", "LName");
    assert_string_equal(d->columns[lname].natural, "last name");
    ranked r = {0};
    /* LName says "last name" only in Spider's natural name (its
     * camelCase split is "l name"): it ranks above dorm_name, which the
     * question names word for word, but not as one phrase */
    rank(&r, d, "Which dorm has students with the last name Smith?");
    assert_true(pos(&r, true, lname) < pos(&r, true, column_of(d, "Dorm", "dorm_name")));
    assert_true(pos(&r, true, lname) < pos(&r, true, column_of(d, "Student", "Fname")));
    /* a compound: "dorm amenities" names Dorm_amenity before Dorm */
    rank(&r, d, "How many dorm amenities are there?");
    assert_int_equal(r.u[0].is_column, false);
    assert_int_equal(r.u[0].index, table_of(d, "Dorm_amenity"));
    /* the same texts, the same rank; another question, another rank */
    ps_shorten_unit first[512];
    size_t n = r.n;
    memcpy(first, r.u, n * sizeof *first);
    rank(&r, d, "How many dorm amenities are there?");
    assert_int_equal(r.n, n);
    assert_memory_equal(r.u, first, n * sizeof *first);
    rank(&r, d, "What is the average age of students living in each dorm?");
    assert_memory_not_equal(r.u, first, n * sizeof *first);
    ps_select_scratch_free(&r.x);

    /* plurals: "cities" names city */
    const ps_schema *w = ps_schemas_find(s, "world_1", 7);
    rank(&r, w, "List the cities.");
    assert_true(r.x.tscore[table_of(w, "city")] > 0);
    assert_true(r.x.tscore[table_of(w, "country")] == 0);
    ps_select_scratch_free(&r.x);

    /* the names travel with a set's embedded schemas, and are part of
     * their digest */
    char *text;
    size_t len;
    ps_error err = {0};
    assert_int_equal(ps_schemas_to_tables_json(s, &text, &len, &err), 0);
    ps_schemas *back;
    assert_int_equal(ps_schemas_create(&back, &err), 0);
    assert_int_equal(ps_schemas_add_tables_json(back, text, len, "back", &err), 0);
    char h1[65], h2[65];
    ps_schemas_get_digest(s, h1);
    ps_schemas_get_digest(back, h2);
    assert_string_equal(h1, h2);
    const ps_schema *b = ps_schemas_find(back, "dorm_1", 6);
    assert_string_equal(b->columns[lname].natural, "last name");
    assert_string_equal(b->tables_natural[table_of(b, "Dorm_amenity")], "dorm amenity");
    free(text);
    ps_schemas_free(back);
    ps_schemas_free(s);
}

static void test_values_and_evidence(void **state)
{
    (void)state;
    /* a database with example values (as --databases reads them) */
    const char *json =
        "[{\"db_id\": \"shop\", \"table_names_original\": [\"customer\", \"orders\", \"region\"],"
        " \"column_names_original\": [[-1, \"*\"], [0, \"id\"], [0, \"cname\"], [0, \"country\"],"
        " [1, \"oid\"], [1, \"customer_id\"], [1, \"total\"], [2, \"rid\"], [2, \"label\"]],"
        " \"column_types\": [\"text\", \"number\", \"text\", \"text\", \"number\", \"number\","
        " \"number\", \"number\", \"text\"],"
        " \"column_examples\": [null, null, null, \"'France', 'Peru'\", null, null, null, null,"
        " \"'North', 'South'\"],"
        " \"primary_keys\": [1, 4, 7], \"foreign_keys\": [[5, 1]]}]";
    ps_schemas *s;
    ps_error err = {0};
    assert_int_equal(ps_schemas_create(&s, &err), 0);
    assert_int_equal(ps_schemas_add_tables_json(s, json, strlen(json), "shop", &err), 0);
    const ps_schema *d = ps_schemas_find(s, "shop", 4);
    ranked r = {0};
    /* "France" is one of country's values: country ranks first */
    rank(&r, d, "Which clients are from France?");
    assert_int_equal(r.u[0].is_column, true);
    assert_int_equal(r.u[0].index, 2); /* country (column 3 of the file) */
    /* evidence is read like the question */
    ps_select_text two[2] = {{"What is the largest amount?", 27}, {"amount refers to total", 22}};
    assert_int_equal(ps_schema_rank(&r.x, d, two, 2, r.u, &r.n), 0);
    assert_int_equal(r.u[0].is_column, true);
    assert_int_equal(r.u[0].index, 5); /* total */
    ps_select_scratch_free(&r.x);
    ps_schemas_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plural_and_paths),
        cmocka_unit_test(test_natural_names),
        cmocka_unit_test(test_values_and_evidence),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
