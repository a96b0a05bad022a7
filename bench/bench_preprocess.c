/* Serving latency of a set's preprocessing (pairshard/preprocess.h): every
 * question of a JSON array (Spider's shape) given as fields, without SQL,
 * cleaned, rendered and tokenized by ps_preprocess, repeated until >= 1 s;
 * one record at a time, and in batches of 64 (a loop over the batch: the
 * per-record cost with the caller's batch around it). Prints
 * "single X us/question batch64 Y us/record N questions". With a tables
 * file, also what schema selection's ranking costs alone (schema/select.c:
 * every question ranks its database's tables and columns, and the mask of
 * half the units is made, as one bisection step does): "selection X
 * us/record"; the encodings a bisection adds are in the times above.
 *   bench_preprocess SET INPUT.json [with_db [TABLES.json]] */
#define _POSIX_C_SOURCE 200809L
#include "pairshard/preprocess.h"
#include "schema/schema.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

/* The ranking and one mask per question, repeated until >= 1 s. */
static int bench_selection(const char *tables, json_t *arr)
{
    ps_schemas *s;
    ps_error err = {0};
    if (ps_schemas_create(&s, &err) || ps_schemas_load_tables(s, tables, &err)) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    size_t n = json_array_size(arr), done = 0, sink = 0;
    ps_select_scratch x = {0};
    ps_shorten_unit units[4096];
    unsigned char kt[1024], kc[4096];
    struct timespec c0, c1;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
    double t0 = now(), t;
    do {
        for (size_t i = 0; i < n; i++) {
            json_t *r = json_array_get(arr, i);
            const char *db = json_string_value(json_object_get(r, "db_id"));
            const ps_schema *d = db ? ps_schemas_find(s, db, strlen(db)) : NULL;
            if (!d || d->n_tables > 1024 || d->n_tables + d->n_columns > 4096)
                continue;
            const char *q = json_string_value(json_object_get(r, "question"));
            ps_select_text t = {q, strlen(q)};
            size_t nu;
            if (ps_schema_rank(&x, d, &t, 1, units, &nu))
                return 1;
            ps_schema_mask_keep(&x, d, units, nu / 2, kt, kc);
            sink += kt[0];
            done++;
        }
        t = now() - t0;
    } while (t < 1.0 && done);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
    double cpu = (double)(c1.tv_sec - c0.tv_sec) + (c1.tv_nsec - c0.tv_nsec) / 1e9;
    /* CPU time too: on a shared machine the wall time counts other
     * processes' turns */
    printf("selection %.2f us/record wall, %.2f us/record CPU (ranking + one mask, %zu "
           "records, %zu ranked)\n", done ? t / (double)done * 1e6 : 0.0,
           done ? cpu / (double)done * 1e6 : 0.0, n, done + 0 * sink);
    ps_select_scratch_free(&x);
    ps_schemas_free(s);
    return 0;
}


int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    int with_db = argc > 3;
    ps_preprocessor *p;
    ps_error err = {0};
    if (ps_preprocessor_open(argv[1], &p, &err)) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    json_t *arr = json_load_file(argv[2], 0, NULL);
    size_t n = json_array_size(arr);
    ps_preprocess_input *in = calloc(n, sizeof *in);
    for (size_t i = 0; i < n; i++) {
        json_t *r = json_array_get(arr, i);
        in[i].question = json_string_value(json_object_get(r, "question"));
        in[i].db_id = with_db ? json_string_value(json_object_get(r, "db_id")) : NULL;
    }
    ps_preprocess_output out;
    size_t sink = 0;
    double single_cpu = 0;
    for (int mode = 0; mode < 2; mode++) {
        size_t done = 0;
        struct timespec c0, c1;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
        double t0 = now(), t = 0;
        do {
            for (size_t i = 0; i < n; i += mode ? 64 : 1) {
                size_t end = mode ? (i + 64 < n ? i + 64 : n) : i + 1;
                for (size_t k = i; k < end; k++) {
                    if (ps_preprocess(p, &in[k], &out, &err)) {
                        fprintf(stderr, "%s\n", err.message);
                        return 1;
                    }
                    sink += out.length;
                }
                done += end - i;
            }
            t = now() - t0;
        } while (t < 1.0);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
        if (!mode)
            single_cpu = ((double)(c1.tv_sec - c0.tv_sec) + (c1.tv_nsec - c0.tv_nsec) / 1e9) /
                         (double)done * 1e6;
        printf("%s %.2f us/%s ", mode ? "batch64" : "single", t / (double)done * 1e6,
               mode ? "record" : "question");
    }
    printf("%zu questions, %zu ids (single: %.2f us/question CPU)\n", n, sink, single_cpu);
    if (argc > 4 && bench_selection(argv[4], arr))
        return 1;
    free(in);
    json_decref(arr);
    ps_preprocessor_free(p);
    return 0;
}
