/*
 * Test tool: runs a tokenizer.json pre-tokenizer over lines of text and
 * prints each line's pieces as a JSON array of strings (for
 * tests/conformance/pretokenizers.js and the scanner benchmark).
 *
 *   pretok_split [--pcre2] [--not-first] [--bench SECONDS] PRETOK.json < LINES
 *
 * PRETOK.json holds the "pre_tokenizer" value. A line that starts with '"'
 * is a JSON string (for text with newlines); any other line is the text.
 * --pcre2: a top-level Split runs through PCRE2 even when its pattern has
 * a hand-written scanner. --not-first: the input is not at offset 0.
 * --bench: splits all lines repeatedly for about SECONDS and prints
 * "MB/s" (per CPU second) instead of the pieces.
 */
#include "tokenize/pretok.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t); /* CPU time: the test machines are shared */
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int load(const char *path, bool pcre2, ps_tok_pretok **out)
{
    json_error_t je;
    json_t *j = json_load_file(path, JSON_DECODE_ANY, &je);
    if (!j) {
        fprintf(stderr, "%s: %s\n", path, je.text);
        return 2;
    }
    ps_error err = {0};
    ps_tok_load c = {.file = path, .err = &err};
    int rc;
    json_t *pat = json_object_get(json_object_get(j, "pattern"), "Regex");
    const char *type = ps_tok_json_type(j);
    if (pcre2 && type && !strcmp(type, "Split") && json_is_string(pat)) {
        ps_pretok_behavior b = PS_PRETOK_ISOLATED;
        bool inv = json_is_true(json_object_get(j, "invert"));
        rc = ps_pretok_behavior_parse(&c, j, "pre_tokenizer", true, &b);
        if (!rc)
            rc = ps_pretok_split_new(&c, "pre_tokenizer", json_string_value(pat),
                                     json_string_length(pat), true, b, inv, false, out);
    } else {
        rc = ps_tok_pretok_load(&c, j, "pre_tokenizer", out);
    }
    json_decref(j);
    if (rc) {
        fprintf(stderr, "%s (%s)\n", err.message, ps_err_name(rc));
        return 2;
    }
    return 0;
}

typedef struct lines {
    char **s;
    size_t *n;
    size_t count, bytes;
} lines;

static int read_lines(lines *L)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t got;
    while ((got = getline(&line, &cap, stdin)) >= 0) {
        size_t n = (size_t)got;
        if (n && line[n - 1] == '\n')
            line[--n] = 0;
        char *text;
        size_t len;
        if (n && line[0] == '"') {
            json_error_t je;
            json_t *v = json_loadb(line, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
            if (!json_is_string(v)) {
                fprintf(stderr, "line %zu: not a JSON string: %s\n", L->count + 1, je.text);
                return 2;
            }
            len = json_string_length(v);
            text = malloc(len + 1);
            memcpy(text, json_string_value(v), len + 1);
            json_decref(v);
        } else {
            len = n;
            text = strdup(line);
        }
        L->s = realloc(L->s, (L->count + 1) * sizeof *L->s);
        L->n = realloc(L->n, (L->count + 1) * sizeof *L->n);
        L->s[L->count] = text;
        L->n[L->count++] = len;
        L->bytes += len;
    }
    free(line);
    return 0;
}

static int run(const ps_tok_pretok *p, const char *s, size_t n, bool first, ps_tok_pieces *io,
               ps_tok_pieces *tmp)
{
    ps_tok_pieces_clear(io);
    int rc = n ? ps_tok_pieces_push(io, s, n, first) : 0;
    return rc ? rc : ps_tok_pretok_apply(p, io, tmp);
}

int main(int argc, char **argv)
{
    bool pcre2 = false, first = true;
    double bench = 0;
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (!strcmp(argv[i], "--pcre2"))
            pcre2 = true;
        else if (!strcmp(argv[i], "--not-first"))
            first = false;
        else if (!strcmp(argv[i], "--bench") && i + 1 < argc)
            bench = atof(argv[++i]);
        else
            break;
    }
    if (i + 1 != argc) {
        fprintf(stderr, "usage: pretok_split [--pcre2] [--not-first] [--bench S] PRETOK.json < LINES\n");
        return 2;
    }
    ps_tok_pretok *p = NULL;
    lines L = {0};
    if (load(argv[i], pcre2, &p) || read_lines(&L))
        return 2;
    ps_tok_pieces io = {0}, tmp = {0};
    if (bench > 0) {
        double t0 = now(), t;
        size_t rounds = 0, pieces = 0;
        do {
            for (size_t k = 0; k < L.count; k++) {
                if (run(p, L.s[k], L.n[k], first, &io, &tmp))
                    return 1;
                pieces += io.n;
            }
            rounds++;
        } while ((t = now() - t0) < bench);
        printf("%.1f MB/s %zu pieces/round %zu rounds\n", (double)L.bytes * rounds / t / 1e6,
               pieces / rounds, rounds);
    } else {
        for (size_t k = 0; k < L.count; k++) {
            int rc = run(p, L.s[k], L.n[k], first, &io, &tmp);
            if (rc) {
                fprintf(stderr, "line %zu: %s\n", k + 1, ps_err_name(rc));
                return 1;
            }
            json_t *a = json_array();
            for (size_t m = 0; m < io.n; m++)
                json_array_append_new(a, json_stringn_nocheck(io.pool.p + io.v[m].off, io.v[m].len));
            char *out = json_dumps(a, JSON_COMPACT);
            puts(out);
            free(out);
            json_decref(a);
        }
    }
    ps_tok_pieces_free(&io);
    ps_tok_pieces_free(&tmp);
    ps_tok_pretok_free(p);
    for (size_t k = 0; k < L.count; k++)
        free(L.s[k]);
    free(L.s);
    free(L.n);
    return 0;
}
