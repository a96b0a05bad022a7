/* Serving latency of a set's preprocessing (pairshard/preprocess.h): every
 * question of a JSON array (Spider's shape) given as fields, without SQL,
 * cleaned, rendered and tokenized by ps_preprocess, repeated until >= 1 s;
 * one record at a time, and in batches of 64 (a loop over the batch: the
 * per-record cost with the caller's batch around it). Prints
 * "single X us/question batch64 Y us/record N questions".
 *   bench_preprocess SET INPUT.json [with_db] */
#define _POSIX_C_SOURCE 200809L
#include "pairshard/preprocess.h"

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
    for (int mode = 0; mode < 2; mode++) {
        size_t done = 0;
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
        printf("%s %.2f us/%s ", mode ? "batch64" : "single", t / (double)done * 1e6,
               mode ? "record" : "question");
    }
    printf("%zu questions, %zu ids\n", n, sink);
    free(in);
    json_decref(arr);
    ps_preprocessor_free(p);
    return 0;
}
