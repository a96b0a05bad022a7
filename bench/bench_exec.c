/* Gold queries run per second (ps_sql_execute_fp, the fingerprint kept),
 * on the databases of DIR (Spider's layout), without a connection cache (a
 * checker per query: every query opens its database read-only and closes
 * it) and with the cache a build's worker keeps (one checker, one
 * connection per database). One thread; the best of RUNS passes each.
 *
 * usage: bench_exec DATABASES_DIR QUERIES.json [RUNS] */
#include "pairshard/schema.h"
#include "schema/schema.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* One pass over every query: its seconds; -1 on an error. */
static double pass(const ps_schemas *s, json_t *recs, int cached, uint64_t *sum)
{
    ps_error err = {0};
    ps_sql_checker *k = NULL;
    double t0 = now();
    size_t i;
    json_t *r;
    json_array_foreach(recs, i, r)
    {
        const char *db = json_string_value(json_object_get(r, "db_id"));
        const char *q = json_string_value(json_object_get(r, "query"));
        const ps_schema *d = db ? ps_schemas_find(s, db, strlen(db)) : NULL;
        if (!d || !q)
            continue;
        if (!k && ps_sql_checker_create(s, &k, &err))
            return -1;
        ps_exec_result res;
        char msg[256];
        if (ps_sql_execute_fp(k, d, q, strlen(q), 2000, 100000, &res, msg, sizeof msg, &err))
            return -1;
        *sum += res.rows ^ res.hash;
        if (!cached) {
            ps_sql_checker_free(k);
            k = NULL;
        }
    }
    ps_sql_checker_free(k);
    return now() - t0;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: bench_exec DATABASES_DIR QUERIES.json [RUNS]\n");
        return 2;
    }
    int runs = argc > 3 ? atoi(argv[3]) : 5;
    ps_schemas *s;
    ps_error err = {0};
    json_t *recs = json_load_file(argv[2], 0, NULL);
    if (!json_is_array(recs) || ps_schemas_create(&s, &err) ||
        ps_schemas_load_databases(s, argv[1], &err)) {
        fprintf(stderr, "bench_exec: %s\n", err.message[0] ? err.message : "bad queries file");
        return 1;
    }
    double best[2] = {1e9, 1e9};
    uint64_t sums[2] = {0, 0};
    for (int r = 0; r < runs; r++)
        for (int cached = 0; cached < 2; cached++) {
            double t = pass(s, recs, cached, &sums[cached]);
            if (t < 0) {
                fprintf(stderr, "bench_exec: %s\n", err.message);
                return 1;
            }
            best[cached] = t < best[cached] ? t : best[cached];
        }
    size_t n = json_array_size(recs);
    printf("{\"queries\": %zu, \"uncached_qps\": %.0f, \"cached_qps\": %.0f, \"speedup\": %.2f, "
           "\"same_results\": %s}\n",
           n, (double)n / best[0], (double)n / best[1], best[0] / best[1],
           sums[0] == sums[1] ? "true" : "false");
    json_decref(recs);
    ps_schemas_free(s);
    return sums[0] == sums[1] ? 0 : 1;
}
