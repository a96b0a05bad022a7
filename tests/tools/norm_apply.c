/* norm_apply: runs one tokenizer.json normalizer over lines of text, for
 * tests/conformance/normalizers.js (which compares with HF's binding).
 *
 *   norm_apply NORMALIZER.json [--bench ROUNDS] < LINES > OUT
 *
 * NORMALIZER.json holds the normalizer object itself (or a whole
 * tokenizer.json, whose "normalizer" is used). Each input line is a JSON
 * string (so any text, NUL and newlines included, travels safely); each
 * output line is the normalized text as a JSON string. A line that is not
 * a JSON string prints {"error": ...}. With --bench, the lines are
 * normalized ROUNDS times and one line of JSON statistics is printed
 * instead (bytes, seconds, MB/s). A load error prints the message and its
 * code name on stderr and exits 2. */
#include "tokenize/hf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void print_json_string(const char *s, size_t n)
{
    json_t *j = json_stringn(s, n);
    char *out = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
    if (out)
        puts(out);
    else
        puts("{\"error\": \"output is not valid UTF-8\"}");
    free(out);
    json_decref(j);
}

typedef struct lines {
    char **v;
    size_t *len, n, cap;
} lines;

static int read_lines(lines *ls)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t got;
    while ((got = getline(&line, &cap, stdin)) >= 0) {
        json_error_t e;
        json_t *j = json_loadb(line, (size_t)got, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
        if (ls->n == ls->cap) {
            ls->cap = ls->cap ? ls->cap * 2 : 1024;
            ls->v = realloc(ls->v, ls->cap * sizeof *ls->v);
            ls->len = realloc(ls->len, ls->cap * sizeof *ls->len);
            if (!ls->v || !ls->len)
                return -1;
        }
        if (json_is_string(j)) {
            size_t n = json_string_length(j);
            ls->v[ls->n] = malloc(n + 1);
            if (!ls->v[ls->n])
                return -1;
            memcpy(ls->v[ls->n], json_string_value(j), n);
            ls->len[ls->n] = n;
        } else {
            ls->v[ls->n] = NULL; /* not a JSON string */
            ls->len[ls->n] = 0;
        }
        ls->n++;
        json_decref(j);
    }
    free(line);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2 && !(argc == 4 && !strcmp(argv[2], "--bench"))) {
        fprintf(stderr, "usage: norm_apply NORMALIZER.json [--bench ROUNDS] < LINES\n");
        return 2;
    }
    long rounds = argc == 4 ? atol(argv[3]) : 0;
    json_error_t je;
    json_t *doc = json_load_file(argv[1], JSON_DECODE_ANY, &je);
    if (!doc) {
        fprintf(stderr, "norm_apply: %s: %s\n", argv[1], je.text);
        return 2;
    }
    json_t *j = doc;
    const char *jpath = "";
    if (json_is_object(doc) && json_object_get(doc, "model")) {
        j = json_object_get(doc, "normalizer");
        jpath = "normalizer";
    }
    ps_error err;
    ps_tok_load c = {argv[1], &err, NULL};
    ps_tok_norm *norm = NULL;
    int rc = ps_tok_norm_load(&c, j, jpath, &norm);
    if (rc) {
        fprintf(stderr, "%s\n%s\n", err.message, ps_err_name(rc));
        return 2;
    }
    lines ls = {0};
    if (read_lines(&ls)) {
        fprintf(stderr, "norm_apply: out of memory\n");
        return 1;
    }
    ps_tok_buf io = {0}, tmp = {0};
    size_t bytes = 0;
    double t0 = now();
    for (long r = 0; r < (rounds ? rounds : 1); r++) {
        for (size_t i = 0; i < ls.n; i++) {
            if (!ls.v[i]) {
                if (!rounds)
                    puts("{\"error\": \"input line is not a JSON string\"}");
                continue;
            }
            io.len = 0;
            if (ps_tok_buf_put(&io, ls.v[i], ls.len[i]) ||
                (rc = ps_tok_norm_apply(norm, &io, &tmp))) {
                fprintf(stderr, "norm_apply: line %zu: apply failed (%d)\n", i + 1, rc);
                return 1;
            }
            bytes += ls.len[i];
            if (!rounds)
                print_json_string(io.p ? io.p : "", io.len);
        }
    }
    if (rounds) {
        double secs = now() - t0;
        printf("{\"bytes\": %zu, \"seconds\": %.4f, \"mb_per_s\": %.1f}\n", bytes, secs,
               bytes / 1e6 / (secs > 0 ? secs : 1e-9));
    }
    for (size_t i = 0; i < ls.n; i++)
        free(ls.v[i]);
    free(ls.v);
    free(ls.len);
    ps_tok_buf_free(&io);
    ps_tok_buf_free(&tmp);
    ps_tok_norm_free(norm);
    json_decref(doc);
    return 0;
}
