/* unigram_drive: runs the Unigram model and the Precompiled normalizer of a
 * tokenizer.json on its own, for tests/conformance/unigram_model.js (a
 * test-only driver: `pairshard tokenize --tokenizer-json` runs the whole
 * pipeline).
 *
 *   unigram_drive norm  FILE.json   stdin: one JSON string a line; stdout:
 *                                   the "normalizer" (Precompiled) output
 *   unigram_drive model FILE.json   stdout: the "model" (Unigram) ids of each
 *                                   whole line, or {"error": "..."}
 *   unigram_drive t5 FILE.json      T5's pipeline spelled out by hand for the
 *                                   benchmark: charsmap, split on White_Space,
 *                                   "▁" before each word, Unigram, then </s>
 *   unigram_drive bench FILE.json IN.jsonl ROUNDS
 *                                   times `t5` over IN's lines; prints
 *                                   {"lines":..,"tokens":..,"seconds":..,"cpu_seconds":..}
 * A load error is printed on stderr with exit 1.
 */
#include "tokenize/hf.h"
#include "tokenize/unicode.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct drive {
    ps_tok_norm *norm;
    ps_tok_model *model;
    ps_tok_work_slot slot;
    ps_tok_buf io, tmp, word;
    ps_tok_ids ids;
    ps_error err;
} drive;

static int load(drive *d, const char *path)
{
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    if (!root) {
        fprintf(stderr, "%s: %s\n", path, je.text);
        return -1;
    }
    ps_tok_load c = {.file = path, .err = &d->err};
    json_t *n = json_object_get(root, "normalizer");
    int rc = 0;
    if (n && !json_is_null(n))
        rc = ps_tok_precompiled_load(&c, n, "normalizer", &d->norm);
    json_t *m = json_object_get(root, "model");
    if (rc == 0 && m && !json_is_null(m))
        rc = ps_tok_unigram_load(&c, m, "model", &d->model);
    json_decref(root);
    if (rc < 0)
        fprintf(stderr, "%s\n", d->err.message);
    return rc;
}

static int normalize(drive *d, const char *s, size_t n)
{
    d->io.len = 0;
    if (ps_tok_buf_put(&d->io, s, n))
        return PS_ENOMEM;
    return d->norm ? d->norm->apply(d->norm, &d->io, &d->tmp) : 0;
}

/* T5: WhitespaceSplit, then Metaspace's "▁" prefix, then the model. */
static int t5(drive *d, const char *s, size_t n)
{
    int rc = normalize(d, s, n);
    const char *p = d->io.p;
    size_t len = d->io.len;
    for (size_t i = 0; rc == 0 && i < len;) {
        uint32_t cp;
        unsigned l = ps_tok_utf8_decode((const unsigned char *)p + i, len - i, &cp);
        if (ps_is_white_space(cp)) {
            i += l;
            continue;
        }
        size_t j = i;
        while (j < len) {
            l = ps_tok_utf8_decode((const unsigned char *)p + j, len - j, &cp);
            if (ps_is_white_space(cp))
                break;
            j += l;
        }
        d->word.len = 0;
        if (ps_tok_buf_put(&d->word, "\xE2\x96\x81", 3) || ps_tok_buf_put(&d->word, p + i, j - i))
            return PS_ENOMEM;
        rc = d->model->encode(d->model, &d->slot, d->word.p, d->word.len, &d->ids, &d->err);
        i = j;
    }
    return rc ? rc : ps_tok_ids_push(&d->ids, 1);
}

static void print_ids(const ps_tok_ids *ids)
{
    putchar('[');
    for (size_t i = 0; i < ids->n; i++)
        printf(i ? ",%d" : "%d", ids->v[i]);
    puts("]");
}

static int run_lines(drive *d, const char *mode)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t got;
    while ((got = getline(&line, &cap, stdin)) > 0) {
        json_t *j = json_loadb(line, (size_t)got, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
        if (!json_is_string(j)) {
            fprintf(stderr, "input line is not a JSON string\n");
            return 1;
        }
        const char *s = json_string_value(j);
        size_t n = json_string_length(j);
        d->ids.n = 0;
        int rc;
        if (!strcmp(mode, "norm")) {
            rc = normalize(d, s, n);
            if (rc == 0) {
                json_t *o = json_stringn(d->io.p, d->io.len);
                char *t = json_dumps(o, JSON_ENCODE_ANY);
                puts(t);
                free(t);
                json_decref(o);
            }
        } else {
            rc = !strcmp(mode, "t5") ? t5(d, s, n)
                                     : d->model->encode(d->model, &d->slot, s, n, &d->ids, &d->err);
            if (rc == 0)
                print_ids(&d->ids);
        }
        if (rc < 0) {
            json_t *o = json_pack("{s:s}", "error", d->err.message);
            char *t = json_dumps(o, 0);
            puts(t);
            free(t);
            json_decref(o);
        }
        json_decref(j);
    }
    free(line);
    return 0;
}

static int bench(drive *d, const char *in, int rounds)
{
    FILE *f = fopen(in, "r");
    if (!f)
        return 1;
    char **lines = NULL;
    size_t *lens = NULL, n = 0, cap = 0, tokens = 0;
    char *line = NULL;
    size_t lcap = 0;
    ssize_t got;
    while ((got = getline(&line, &lcap, f)) > 0) {
        json_t *j = json_loadb(line, (size_t)got, JSON_DECODE_ANY, NULL);
        if (!json_is_string(j))
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 1024;
            lines = realloc(lines, cap * sizeof *lines);
            lens = realloc(lens, cap * sizeof *lens);
        }
        lens[n] = json_string_length(j);
        lines[n] = strndup(json_string_value(j), lens[n]);
        n++;
        json_decref(j);
    }
    fclose(f);
    free(line);
    struct timespec a, b, ca, cb;
    clock_gettime(CLOCK_MONOTONIC, &a);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ca);
    for (int r = 0; r < rounds; r++)
        for (size_t i = 0; i < n; i++) {
            d->ids.n = 0;
            if (t5(d, lines[i], lens[i]) < 0)
                return 1;
            tokens += d->ids.n;
        }
    clock_gettime(CLOCK_MONOTONIC, &b);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cb);
    double secs = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
    double cpu = (double)(cb.tv_sec - ca.tv_sec) + (double)(cb.tv_nsec - ca.tv_nsec) / 1e9;
    printf("{\"lines\":%zu,\"tokens\":%zu,\"seconds\":%.6f,\"cpu_seconds\":%.6f}\n",
           n * (size_t)rounds, tokens, secs, cpu);
    for (size_t i = 0; i < n; i++)
        free(lines[i]);
    free(lines);
    free(lens);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: unigram_drive norm|model|t5|bench FILE.json [IN ROUNDS]\n");
        return 2;
    }
    drive d;
    memset(&d, 0, sizeof d);
    if (load(&d, argv[2]) < 0)
        return 1;
    int rc;
    if (!strcmp(argv[1], "bench"))
        rc = argc > 4 ? bench(&d, argv[3], atoi(argv[4])) : 2;
    else
        rc = run_lines(&d, argv[1]);
    ps_tok_work_slot_clear(&d.slot);
    if (d.norm)
        d.norm->destroy(d.norm);
    if (d.model)
        d.model->destroy(d.model);
    ps_tok_buf_free(&d.io);
    ps_tok_buf_free(&d.tmp);
    ps_tok_buf_free(&d.word);
    ps_tok_ids_free(&d.ids);
    return rc;
}
