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
 * With --threads T (instead of the above): the throughput of one
 * preprocessor shared by 1 and by T threads (each going round the
 * questions from its own place for >= 1 s), "threads 1 X q/s (C q/cpu-s) threads T Y q/s (C q/cpu-s) Z x": the
 * questions a second of CPU time too, which a lock or cache lines the
 * threads fought over would lower, however many CPUs the machine has
 * free.
 *   bench_preprocess SET INPUT.json [with_db [TABLES.json]]
 *   bench_preprocess SET INPUT.json with_db --threads T */
#define _POSIX_C_SOURCE 200809L
#include "pairshard/preprocess.h"
#include "schema/schema.h"

#include <jansson.h>
#include <pthread.h>
#include <sys/resource.h>
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

typedef struct runner {
    ps_preprocessor *p;
    const ps_preprocess_input *in;
    size_t n, start, done;
    double until;
    int failed;
} runner;

/* One thread's share: questions from `start` on, round the set, until the
 * shared deadline. */
static void *run(void *arg)
{
    runner *r = arg;
    ps_preprocess_output out;
    ps_error err = {0};
    size_t i = r->start;
    while (!r->failed && now() < r->until) {
        for (int k = 0; k < 64; k++, i = (i + 1) % r->n, r->done++)
            if (ps_preprocess(r->p, &r->in[i], &out, &err)) {
                fprintf(stderr, "%s\n", err.message);
                r->failed = 1;
                break;
            }
    }
    return NULL;
}

static double cpu_time(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)u.ru_utime.tv_sec + u.ru_utime.tv_usec / 1e6 + (double)u.ru_stime.tv_sec +
           u.ru_stime.tv_usec / 1e6;
}

/* Questions a second by T threads sharing p (and a second of CPU time, in
 * *per_cpu); -1 on a failure. */
static double throughput(ps_preprocessor *p, const ps_preprocess_input *in, size_t n, int T,
                         double *per_cpu)
{
    runner r[64];
    pthread_t th[64];
    double t0 = now(), c0 = cpu_time();
    for (int t = 0; t < T; t++) {
        r[t] = (runner){p, in, n, (size_t)t * n / (size_t)T, 0, t0 + 1.0, 0};
        if (pthread_create(&th[t], NULL, run, &r[t]))
            return -1;
    }
    size_t done = 0;
    int failed = 0;
    for (int t = 0; t < T; t++) {
        pthread_join(th[t], NULL);
        done += r[t].done;
        failed |= r[t].failed;
    }
    *per_cpu = (double)done / (cpu_time() - c0);
    return failed ? -1 : (double)done / (now() - t0);
}

int main(int argc, char **argv)
{
    int threads = 0;
    if (argc > 4 && strcmp(argv[argc - 2], "--threads") == 0) {
        threads = atoi(argv[argc - 1]);
        argc -= 2;
    }
    if (argc < 3 || threads < 0 || threads > 64)
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
    if (threads) {
        double c1, cn;
        throughput(p, in, n, threads, &cn); /* every thread's scratch grown */
        double one = throughput(p, in, n, 1, &c1), many = throughput(p, in, n, threads, &cn);
        if (one < 0 || many < 0)
            return 1;
        printf("threads 1 %.0f q/s (%.0f q/cpu-s) threads %d %.0f q/s (%.0f q/cpu-s) %.2fx "
               "%zu questions\n", one, c1, threads, many, cn, many / one, n);
        free(in);
        json_decref(arr);
        ps_preprocessor_free(p);
        return 0;
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
