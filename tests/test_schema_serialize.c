/* Tests of schema/serialize.c: PICARD's and the DDL serializations of real
 * schemas (Spider's tables.json, the BIRD-shaped sample), whole and under
 * a mask, and SQL identifier quoting. */
#include "tests/support/testutil.h"

#include "schema/schema.h"

#include <stdlib.h>
#include <string.h>

static ps_schemas *load(const char *rel)
{
    return ps_test_schemas(rel, NULL);
}

static char *serialize(const ps_schema *d, ps_schema_style st, const ps_schema_mask *m)
{
    ps_buf b;
    ps_buf_init(&b);
    assert_int_equal(ps_schema_serialize(d, st, m, &b), 0);
    return b.data;
}

/* What PICARD's serialize_schema (seq2seq/utils/dataset.py,
 * schema_serialization_type="peteshaw", with_db_id=True,
 * normalize_query=True, no database content) returns for concert_singer,
 * written out by hand from tables.json: " | " + db_id (as it is), then per
 * table of table_names_original in order " | " + lower(table) + " : " and
 * its column_names_original entries, in file order, lower-cased and joined
 * by " , ". */
static const char concert_singer_picard[] =
    " | concert_singer"
    " | stadium : stadium_id , location , name , capacity , highest , lowest , average"
    " | singer : singer_id , name , country , song_name , song_release_year , age , is_male"
    " | concert : concert_id , concert_name , theme , stadium_id , year"
    " | singer_in_concert : concert_id , singer_id";

static void test_picard(void **state)
{
    (void)state;
    ps_schemas *s = load("spider/tables.json");
    const ps_schema *d = ps_schemas_find(s, "concert_singer", 14);
    char *got = serialize(d, PS_SCHEMA_PICARD, NULL);
    assert_string_equal(got, concert_singer_picard);
    free(got);
    /* appends, does not reset */
    ps_buf b;
    ps_buf_init(&b);
    assert_int_equal(ps_buf_puts(&b, "How many singers do we have?"), 0);
    assert_int_equal(ps_schema_serialize(d, PS_SCHEMA_PICARD, NULL, &b), 0);
    assert_int_equal(strncmp(b.data, "How many singers do we have? | concert_singer | stadium", 55),
                     0);
    ps_buf_free(&b);
    /* a mask: stadium and concert dropped, singer keeps Name and Age */
    unsigned char kt[4] = {0, 1, 0, 1}, kc[21];
    memset(kc, 0, sizeof kc);
    kc[8] = kc[12] = 1;  /* singer.Name, singer.Age */
    kc[19] = kc[20] = 1; /* singer_in_concert */
    ps_schema_mask m = {kt, kc};
    got = serialize(d, PS_SCHEMA_PICARD, &m);
    assert_string_equal(got, " | concert_singer | singer : name , age"
                             " | singer_in_concert : concert_id , singer_id");
    free(got);
    kc[19] = kc[20] = 0; /* a kept table with no column left */
    got = serialize(d, PS_SCHEMA_PICARD, &m);
    assert_string_equal(got, " | concert_singer | singer : name , age | singer_in_concert : ");
    free(got);
    ps_schemas_free(s);

    /* the db_id keeps its case, the names do not; non-ASCII lower-cased */
    const char *j = "[{\"db_id\": \"Mixed_DB\", \"table_names_original\": [\"ÉCOLE\"], "
                    "\"column_names_original\": [[-1, \"*\"], [0, \"NomÀ\"], [0, \"名称\"]]}]";
    ps_error err = {0};
    assert_int_equal(ps_schemas_create(&s, &err), 0);
    assert_int_equal(ps_schemas_add_tables_json(s, j, strlen(j), NULL, &err), 0);
    got = serialize(ps_schemas_at(s, 0), PS_SCHEMA_PICARD, NULL);
    assert_string_equal(got, " | Mixed_DB | école : nomà , 名称");
    free(got);
    ps_schemas_free(s);
}

/* BIRD-shaped formula_1: a composite primary key (lapTimes) and foreign
 * keys to two tables. */
static const char formula_1_ddl[] =
    "CREATE TABLE drivers (\n"
    "  driverId integer,\n"
    "  driverRef text,\n"
    "  forename text,\n"
    "  surname text,\n"
    "  PRIMARY KEY (driverId)\n"
    ");\n\n"
    "CREATE TABLE races (\n"
    "  raceId integer,\n"
    "  year integer,\n"
    "  name text,\n"
    "  PRIMARY KEY (raceId)\n"
    ");\n\n"
    "CREATE TABLE qualifying (\n"
    "  qualifyId integer,\n"
    "  raceId integer,\n"
    "  driverId integer,\n"
    "  q1 text,\n"
    "  q2 text,\n"
    "  q3 text,\n"
    "  PRIMARY KEY (qualifyId),\n"
    "  FOREIGN KEY (raceId) REFERENCES races(raceId),\n"
    "  FOREIGN KEY (driverId) REFERENCES drivers(driverId)\n"
    ");\n\n"
    "CREATE TABLE lapTimes (\n"
    "  raceId integer,\n"
    "  driverId integer,\n"
    "  lap integer,\n"
    "  time text,\n"
    "  PRIMARY KEY (raceId, driverId, lap),\n"
    "  FOREIGN KEY (raceId) REFERENCES races(raceId),\n"
    "  FOREIGN KEY (driverId) REFERENCES drivers(driverId)\n"
    ");";

static void test_ddl(void **state)
{
    (void)state;
    ps_schemas *s = load("formats/bird/dev_tables.json");
    const ps_schema *d = ps_schemas_find(s, "formula_1", 9);
    char *got = serialize(d, PS_SCHEMA_DDL, NULL);
    assert_string_equal(got, formula_1_ddl);
    free(got);
    /* drivers dropped: the keys that reference it go; lap dropped from
     * the primary key; q2 and q3 dropped */
    unsigned char kt[4] = {0, 1, 1, 1}, kc[17];
    memset(kc, 1, sizeof kc);
    kc[11] = kc[12] = 0; /* q2, q3 */
    kc[15] = 0;          /* lapTimes.lap */
    ps_schema_mask m = {kt, kc};
    got = serialize(d, PS_SCHEMA_DDL, &m);
    assert_string_equal(got, "CREATE TABLE races (\n  raceId integer,\n  year integer,\n"
                             "  name text,\n  PRIMARY KEY (raceId)\n);\n\n"
                             "CREATE TABLE qualifying (\n  qualifyId integer,\n  raceId integer,\n"
                             "  driverId integer,\n  q1 text,\n  PRIMARY KEY (qualifyId),\n"
                             "  FOREIGN KEY (raceId) REFERENCES races(raceId)\n);\n\n"
                             "CREATE TABLE lapTimes (\n  raceId integer,\n  driverId integer,\n"
                             "  time text,\n  PRIMARY KEY (raceId, driverId),\n"
                             "  FOREIGN KEY (raceId) REFERENCES races(raceId)\n);");
    free(got);
    /* names with spaces and parentheses are quoted */
    d = ps_schemas_find(s, "california_schools", 18);
    got = serialize(d, PS_SCHEMA_DDL, NULL);
    assert_non_null(strstr(got, "CREATE TABLE frpm (\n  CDSCode text,\n  \"Academic Year\" text,"));
    assert_non_null(strstr(got, "  \"Free Meal Count (K-12)\" real,\n  PRIMARY KEY (CDSCode),\n"
                                "  FOREIGN KEY (CDSCode) REFERENCES schools(CDSCode)\n);"));
    free(got);
    ps_schemas_free(s);

    /* Spider's concert_singer, the example of docs/CLEANING.md */
    s = load("spider/tables.json");
    got = serialize(ps_schemas_find(s, "concert_singer", 14), PS_SCHEMA_DDL, NULL);
    assert_non_null(strstr(got, "CREATE TABLE singer_in_concert (\n  concert_ID number,\n"
                                "  Singer_ID text,\n  PRIMARY KEY (concert_ID),\n"
                                "  FOREIGN KEY (Singer_ID) REFERENCES singer(Singer_ID),\n"
                                "  FOREIGN KEY (concert_ID) REFERENCES concert(concert_ID)\n);"));
    assert_int_equal(strncmp(got, "CREATE TABLE stadium (\n  Stadium_ID number,\n", 43), 0);
    free(got);
    ps_schemas_free(s);
}

static void test_ident(void **state)
{
    (void)state;
    static const struct {
        const char *in, *bare, *always;
    } cases[] = {
        {"Stadium_ID", "Stadium_ID", "\"Stadium_ID\""},
        {"_x9", "_x9", "\"_x9\""},
        {"order", "\"order\"", "\"order\""}, /* a keyword */
        {"Year", "Year", "\"Year\""},
        {"9lives", "\"9lives\"", "\"9lives\""},
        {"Free Meal Count (K-12)", "\"Free Meal Count (K-12)\"", "\"Free Meal Count (K-12)\""},
        {"a\"b", "\"a\"\"b\"", "\"a\"\"b\""},
        {"名称", "\"名称\"", "\"名称\""},
        {"", "\"\"", "\"\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        ps_buf b;
        ps_buf_init(&b);
        assert_int_equal(ps_sql_put_ident(&b, cases[i].in, false), 0);
        assert_string_equal(b.data, cases[i].bare);
        ps_buf_reset(&b);
        assert_int_equal(ps_sql_put_ident(&b, cases[i].in, true), 0);
        assert_string_equal(b.data, cases[i].always);
        ps_buf_free(&b);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_picard),
        cmocka_unit_test(test_ddl),
        cmocka_unit_test(test_ident),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
