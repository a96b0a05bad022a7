/* Tests of schema/tables.c and schema/schemas.c: Spider-format tables files
 * (Spider's real tables.json, BIRD- and DuSQL-shaped samples) into the
 * schema set, lookup, duplicates and digest, and every malformed member. */
#include "tests/support/testutil.h"

#include "schema/schema.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static ps_schemas *load(const char *rel)
{
    return ps_test_schemas(rel, NULL);
}

static const ps_schema *find(const ps_schemas *s, const char *id)
{
    const ps_schema *d = ps_schemas_find(s, id, strlen(id));
    assert_non_null(d);
    return d;
}

/* The index of column `name` of table `table` in d, or -1. */
static long col(const ps_schema *d, const char *table, const char *name)
{
    for (size_t i = 0; i < d->n_columns; i++)
        if (!strcmp(d->tables[d->columns[i].table], table) && !strcmp(d->columns[i].name, name))
            return (long)i;
    return -1;
}

static void test_spider(void **state)
{
    (void)state;
    ps_schemas *s = load("spider/tables.json");
    assert_int_equal(ps_schemas_count(s), 166);
    assert_string_equal(ps_schemas_at(s, 0)->db_id, "academic");
    assert_string_equal(ps_schemas_at(s, 165)->db_id, "yelp");
    for (size_t i = 1; i < 166; i++)
        assert_true(strcmp(ps_schemas_at(s, i - 1)->db_id, ps_schemas_at(s, i)->db_id) < 0);
    /* concert_singer: 4 tables, 21 columns ("*" not counted), pk
     * Stadium_ID, Singer_ID, concert_ID, singer_in_concert.concert_ID */
    const ps_schema *d = find(s, "concert_singer");
    assert_int_equal(d->n_tables, 4);
    assert_string_equal(d->tables[3], "singer_in_concert");
    assert_int_equal(d->n_columns, 21);
    assert_string_equal(d->columns[0].name, "Stadium_ID");
    assert_string_equal(d->columns[0].type, "number");
    assert_true(d->columns[0].primary);
    assert_false(d->columns[1].primary);
    assert_string_equal(d->columns[13].type, "others"); /* Is_male */
    assert_int_equal(d->n_fks, 3);
    assert_int_equal(d->fks[0].column, col(d, "concert", "Stadium_ID"));
    assert_int_equal(d->fks[0].ref_column, col(d, "stadium", "Stadium_ID"));
    assert_non_null(strstr(d->origin, "tables.json"));
    assert_null(d->db_path);
    /* world_1: sqlite_sequence (raw table 1, columns 6 and 7) is dropped
     * and every later index moves down. */
    d = find(s, "world_1");
    assert_int_equal(d->n_tables, 3);
    assert_string_equal(d->tables[1], "country");
    assert_int_equal(d->n_columns, 24);
    assert_string_equal(d->columns[5].name, "Code");
    assert_int_equal(d->columns[5].table, 1);
    assert_true(d->columns[5].primary && d->columns[0].primary && d->columns[20].primary);
    assert_int_equal(d->n_fks, 2);
    assert_int_equal(d->fks[0].column, 2);
    assert_int_equal(d->fks[0].ref_column, 5);
    assert_int_equal(d->fks[1].column, 20);
    for (size_t i = 0; i < ps_schemas_count(s); i++)
        for (size_t t = 0; t < ps_schemas_at(s, i)->n_tables; t++)
            assert_null(strstr(ps_schemas_at(s, i)->tables[t], "sqlite_"));
    /* lookup by (pointer, length), not NUL-terminated */
    assert_ptr_equal(ps_schemas_find(s, "world_1xyz", 7), d);
    assert_null(ps_schemas_find(s, "world_", 6));
    assert_null(ps_schemas_find(s, "", 0));
    ps_schemas_free(s);
}

static void test_bird_dusql(void **state)
{
    (void)state;
    ps_schemas *s = load("formats/bird/dev_tables.json");
    assert_int_equal(ps_schemas_count(s), 3);
    const ps_schema *d = find(s, "formula_1");
    long race = col(d, "lapTimes", "raceId"), lap = col(d, "lapTimes", "lap");
    assert_true(race >= 0 && lap >= 0);
    assert_true(d->columns[race].primary && d->columns[race + 1].primary && d->columns[lap].primary);
    assert_false(d->columns[col(d, "lapTimes", "time")].primary);
    d = find(s, "california_schools");
    long fm = col(d, "frpm", "Free Meal Count (K-12)");
    assert_true(fm >= 0);
    assert_string_equal(d->columns[fm].type, "real");
    ps_schemas_free(s);

    s = load("formats/dusql/db_schema.json"); /* no _original keys */
    assert_int_equal(ps_schemas_count(s), 2);
    d = find(s, "中国城市");
    assert_int_equal(d->n_tables, 2);
    assert_string_equal(d->tables[0], "城市");
    assert_true(col(d, "省份", "省会") >= 0);
    assert_int_equal(d->n_fks, 1);
    ps_schemas_free(s);
}

static void test_duplicates_and_digest(void **state)
{
    (void)state;
    ps_error err = {0};
    ps_schemas *a = load("spider/tables.json"), *b = load("formats/dusql/db_schema.json");
    /* the same file twice: identical schemas, ignored */
    assert_int_equal(ps_schemas_load_tables(a, ps_test_data("spider/tables.json"), &err), 0);
    assert_int_equal(ps_schemas_count(a), 166);
    assert_int_equal(ps_schemas_load_tables(a, ps_test_data("formats/dusql/db_schema.json"), &err),
                     0);
    assert_int_equal(ps_schemas_load_tables(b, ps_test_data("spider/tables.json"), &err), 0);
    assert_int_equal(ps_schemas_count(b), 168);
    char ha[65], hb[65], hc[65];
    ps_schemas_get_digest(a, ha);
    ps_schemas_get_digest(b, hb);
    assert_int_equal(strlen(ha), 64);
    assert_string_equal(ha, hb); /* order of loading does not matter */
    /* Spider and BIRD both have a formula_1, with different schemas: the
     * two files cannot be used in one run */
    assert_int_equal(ps_schemas_load_tables(b, ps_test_data("formats/bird/dev_tables.json"), &err),
                     PS_EUSAGE);
    assert_non_null(strstr(err.message, "database 'formula_1' is defined differently by"));
    assert_non_null(strstr(err.message, "dev_tables.json"));
    ps_schemas *c = load("spider/tables.json");
    ps_schemas_get_digest(c, hc);
    assert_string_not_equal(ha, hc);

    /* concert_singer with one type changed, in another file: refused,
     * naming both files */
    size_t len;
    char *text = (char *)ps_test_read_file(ps_test_data("spider/tables.json"), &len);
    json_error_t je;
    json_t *all = json_loadb(text, len, 0, &je);
    assert_non_null(all);
    json_t *one = json_array();
    for (size_t i = 0; i < json_array_size(all); i++) {
        json_t *db = json_array_get(all, i);
        if (!strcmp(json_string_value(json_object_get(db, "db_id")), "concert_singer")) {
            json_array_set_new(json_object_get(db, "column_types"), 1, json_string("text"));
            json_array_append(one, db);
        }
    }
    char *dump = json_dumps(one, 0);
    char *path = ps_test_tmpfile(dump, strlen(dump), ".json");
    assert_int_equal(ps_schemas_load_tables(c, path, &err), PS_EUSAGE);
    assert_non_null(strstr(err.message, "concert_singer"));
    assert_non_null(strstr(err.message, "spider/tables.json"));
    assert_non_null(strstr(err.message, path));
    unlink(path);
    free(path);
    free(dump);
    json_decref(one);
    json_decref(all);
    free(text);
    ps_schemas_free(a);
    ps_schemas_free(b);
    ps_schemas_free(c);
}

static void test_malformed(void **state)
{
    (void)state;
    static const struct {
        const char *json, *want;
    } cases[] = {
        {"[{\"db_id\": \"x\",", "line 1"},
        {"{\"db_id\": \"x\"}", "expected a JSON array"},
        {"[1]", "database #0: not an object"},
        {"[{\"table_names_original\": []}]", "db_id missing"},
        {"[{\"db_id\": \"x\", \"column_names_original\": []}]", "'x': table_names_original: missing"},
        {"[{\"db_id\": \"x\", \"table_names_original\": [\"t\", 3], \"column_names_original\": []}]",
         "table_names_original[1]: not a string"},
        {"[{\"db_id\": \"x\", \"table_names_original\": [\"t\"]}]", "column_names_original: missing"},
        {"[{\"db_id\": \"x\", \"table_names_original\": [\"t\"], "
         "\"column_names_original\": [[-1, \"*\"], [1, \"a\"]]}]",
         "column_names_original[1]: table index out of range"},
        {"[{\"db_id\": \"x\", \"table_names_original\": [\"t\"], "
         "\"column_names_original\": [[0, \"a\", 1]]}]",
         "column_names_original[0]: expected [table index, name]"},
        {"[{\"db_id\": \"x\", \"table_names_original\": [\"t\"], "
         "\"column_names_original\": [[0, \"a\"]], \"column_types\": [\"text\", \"text\"]}]",
         "column_types: not one type per entry"},
        {"[{\"db_id\": \"x\", \"table_names_original\": [\"t\"], "
         "\"column_names_original\": [[0, \"a\"]], \"column_types\": [7]}]",
         "column_types[0]: not a string"},
        {"[{\"db_id\": \"x\", \"table_names_original\": [\"t\"], "
         "\"column_names_original\": [[0, \"a\"]], \"primary_keys\": [[0, 1]]}]",
         "primary_keys[0]: not a column index in range"},
        {"[{\"db_id\": \"x\", \"table_names_original\": [\"t\"], "
         "\"column_names_original\": [[0, \"a\"]], \"foreign_keys\": [[0]]}]",
         "foreign_keys[0]: expected [column index, referenced column index]"},
        {"[{\"db_id\": \"x\", \"table_names_original\": [\"t\"], "
         "\"column_names_original\": [[0, \"a\"]], \"primary_keys\": 0}]",
         "primary_keys: not an array"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        ps_schemas *s;
        ps_error err = {0};
        assert_int_equal(ps_schemas_create(&s, &err), 0);
        int rc = ps_schemas_add_tables_json(s, cases[i].json, strlen(cases[i].json), "f.json", &err);
        if (rc != PS_EFORMAT || !strstr(err.message, cases[i].want) ||
            strncmp(err.message, "f.json: ", 8))
            fail_msg("case %zu: rc %d, message '%s', want '%s'", i, rc, err.message,
                     cases[i].want);
        ps_schemas_free(s);
    }
    /* a table without columns, keys that point into sqlite_* only */
    ps_schemas *s;
    ps_error err = {0};
    const char *ok = "[{\"db_id\": \"x\", \"table_names\": [\"sqlite_sequence\", \"t\"], "
                     "\"column_names\": [[0, \"name\"], [0, \"seq\"]], \"primary_keys\": [0], "
                     "\"foreign_keys\": [[1, 0]]}]";
    assert_int_equal(ps_schemas_create(&s, &err), 0);
    assert_int_equal(ps_schemas_add_tables_json(s, ok, strlen(ok), NULL, &err), 0);
    const ps_schema *d = find(s, "x");
    assert_int_equal(d->n_tables, 1);
    assert_int_equal(d->n_columns, 0);
    assert_int_equal(d->n_fks, 0);
    assert_string_equal(d->origin, "<tables>");
    ps_schemas_free(s);
}

static void test_files(void **state)
{
    (void)state;
    ps_schemas *s;
    ps_error err = {0};
    assert_int_equal(ps_schemas_create(&s, &err), 0);
    assert_int_equal(ps_schemas_load_tables(s, "/nonexistent/tables.json", &err), PS_ENOENT);
    assert_int_equal(ps_schemas_load_tables(s, ps_test_data("spider"), &err), PS_EIO);
    assert_non_null(strstr(err.message, "not a regular file"));
    assert_int_equal(ps_schemas_count(s), 0);
    char hex[65];
    ps_schemas_get_digest(s, hex);
    assert_int_equal(strlen(hex), 64);
    ps_schemas_free(s);
    ps_schemas_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spider),
        cmocka_unit_test(test_bird_dusql),
        cmocka_unit_test(test_duplicates_and_digest),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
