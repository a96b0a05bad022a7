/* sql_compile: compiles every record's SQL against its schema with the
 * library (ps_sql_compile), for tests/cli/schema_compile.sh, which compares
 * the result with tests/tools/sql_compile_ref.py (Python's sqlite3).
 *
 *   sql_compile TABLES DATA [SQL_FIELD [DB_FIELD]]
 *
 * TABLES is a Spider-format tables.json, DATA a JSON array of records
 * (SQL_FIELD default "query", DB_FIELD default "db_id"). Prints, as the
 * reference does: "count CLASS N" for every class, then "fail INDEX CLASS
 * MESSAGE" for every record that does not compile, in record order. On
 * stderr: the load time of TABLES and the compile time per query, first
 * with each database's connection made on first use, then again (the same
 * classes required). Exits 0,
 * or 1 on any error (a record whose database is unknown is one). */
#include "schema/schema.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    if (argc < 3 || argc > 5) {
        fprintf(stderr, "usage: sql_compile TABLES DATA [SQL_FIELD [DB_FIELD]]\n");
        return 2;
    }
    const char *sql_field = argc > 3 ? argv[3] : "query", *db_field = argc > 4 ? argv[4] : "db_id";
    ps_error err = {0};
    ps_schemas *s;
    double t0 = now_s();
    if (ps_schemas_create(&s, &err) || ps_schemas_load_tables(s, argv[1], &err)) {
        fprintf(stderr, "sql_compile: %s\n", err.message);
        return 1;
    }
    double t_load = now_s() - t0;
    json_error_t je;
    json_t *data = json_load_file(argv[2], 0, &je);
    if (!json_is_array(data)) {
        fprintf(stderr, "sql_compile: %s: %s\n", argv[2], je.text);
        return 1;
    }
    ps_sql_checker *k;
    if (ps_sql_checker_create(s, &k, &err))
        return 1;
    size_t n = json_array_size(data), counts[PS_SQL_CLASSES] = {0};
    ps_sql_class *cls = calloc(n ? n : 1, sizeof *cls);
    char(*msgs)[256] = calloc(n ? n : 1, sizeof *msgs);
    double compile_s = 0;
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        json_t *r = json_array_get(data, i);
        const char *sql = json_string_value(json_object_get(r, sql_field));
        const char *db = json_string_value(json_object_get(r, db_field));
        const ps_schema *d = db ? ps_schemas_find(s, db, strlen(db)) : NULL;
        if (!sql || !d) {
            fprintf(stderr, "sql_compile: record %zu: no %s or unknown database\n", i, sql_field);
            rc = 1;
            break;
        }
        double t = now_s();
        if (ps_sql_compile(k, d, sql, strlen(sql), &cls[i], msgs[i], sizeof msgs[i], &err)) {
            fprintf(stderr, "sql_compile: record %zu: %s\n", i, err.message);
            rc = 1;
        }
        compile_s += now_s() - t;
        counts[cls[i]]++;
    }
    for (int c = 0; c < PS_SQL_CLASSES && !rc; c++)
        printf("count %s %zu\n", ps_sql_class_name((ps_sql_class)c), counts[c]);
    for (size_t i = 0; i < n && !rc; i++)
        if (cls[i] != PS_SQL_OK)
            printf("fail %zu %s %s\n", i, ps_sql_class_name(cls[i]), msgs[i]);
    /* again, every database's connection made: the steady state */
    double warm = now_s();
    for (size_t i = 0; i < n && !rc; i++) {
        json_t *r = json_array_get(data, i);
        const char *sql = json_string_value(json_object_get(r, sql_field));
        const char *db = json_string_value(json_object_get(r, db_field));
        ps_sql_class c2;
        char m2[256];
        if (ps_sql_compile(k, ps_schemas_find(s, db, strlen(db)), sql, strlen(sql), &c2, m2,
                           sizeof m2, &err) || c2 != cls[i])
            rc = 1;
    }
    warm = now_s() - warm;
    fprintf(stderr, "tables load %.1f ms; compile %.1f us/query over %zu queries (first use of a "
                    "database included), %.1f us/query again\n",
            t_load * 1e3, n ? compile_s * 1e6 / (double)n : 0.0, n,
            n ? warm * 1e6 / (double)n : 0.0);
    free(cls);
    free(msgs);
    json_decref(data);
    ps_sql_checker_free(k);
    ps_schemas_free(s);
    return rc;
}
