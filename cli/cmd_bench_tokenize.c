/* pairshard bench-tokenize: in-memory tokenizer throughput, N threads. */
#include "cli/args.h"
#include "cli/commands.h"
#include "cli/opt_error.h"
#include "cli/profile.h"
#include "cli/tok_args.h"
#include "common/ps_internal.h"
#include "pairshard/tokenizer.h"

#include <getopt.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char USAGE[] =
    "usage: pairshard bench-tokenize (--vocab FILE | --tokenizer-json FILE) [options] INPUT...\n"
    "\n"
    "Encodes every (question, sql) pair of the inputs in memory, with no output,\n"
    "repeating passes until at least --seconds have gone by, and prints one line:\n"
    "  threads T  pairs P  passes K  seconds S  X MB/s  Y tokens/s\n"
    "MB is 10^6 bytes of question + sql UTF-8 text; tokens count every id written,\n"
    "[CLS] and [SEP] included.\n"
    "\n"
    "INPUT is JSONL as 'pairshard clean' writes it (\"question\", \"sql\") or a JSON\n"
    "array of objects with \"question\" and \"query\" (Spider's train/dev files).\n"
    "\n"
    "  --vocab FILE, --tokenizer-json FILE, --lowercase, --no-lowercase\n"
    "                        as for 'pairshard tokenize'\n"
    "  --threads N           worker threads, each with its own scratch (default 1)\n"
    "  --max-length N        truncate as 'pairshard tokenize' does (default: none)\n"
    "  --seconds S           minimum measuring time (default 1)\n"
    "  -h, --help            this help\n";

enum { OPT_THREADS = PS_TOK_OPT_OWN, OPT_SECONDS };

static const struct option LONGOPTS[] = {
    PS_TOK_SOURCE_LONGOPTS
    {"threads", required_argument, NULL, OPT_THREADS},
    {"seconds", required_argument, NULL, OPT_SECONDS},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* All pairs in one buffer: pair i is text[off[2i] .. +len[2i]) and its sql. */
typedef struct corpus {
    ps_buf text;
    size_t *off, *len; /* 2 per pair */
    size_t n, cap;
    size_t bytes;      /* question + sql bytes of one pass */
} corpus;

static int add_pair(corpus *c, const char *q, size_t qn, const char *s, size_t sn)
{
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 1024;
        size_t *o = realloc(c->off, 2 * cap * sizeof *o);
        if (!o)
            return -1;
        c->off = o;
        size_t *l = realloc(c->len, 2 * cap * sizeof *l);
        if (!l)
            return -1;
        c->len = l;
        c->cap = cap;
    }
    c->off[2 * c->n] = c->text.len;
    c->len[2 * c->n] = qn;
    if (ps_buf_append(&c->text, q, qn))
        return -1;
    c->off[2 * c->n + 1] = c->text.len;
    c->len[2 * c->n + 1] = sn;
    if (ps_buf_append(&c->text, s, sn))
        return -1;
    c->bytes += qn + sn;
    c->n++;
    return 0;
}

static int add_record(corpus *c, json_t *rec, const char *name, size_t where)
{
    json_t *q = json_object_get(rec, "question");
    json_t *s = json_object_get(rec, "sql");
    if (!json_is_string(s)) /* Spider's dev.json: "sql" is the parsed tree */
        s = json_object_get(rec, "query");
    if (!json_is_string(q) || !json_is_string(s)) {
        fprintf(stderr, "pairshard bench-tokenize: %s:%zu: needs string fields \"question\" and "
                        "\"sql\" (or \"query\")\n", name, where);
        return -1;
    }
    if (add_pair(c, json_string_value(q), json_string_length(q), json_string_value(s),
                 json_string_length(s))) {
        fputs("pairshard bench-tokenize: out of memory\n", stderr);
        return -1;
    }
    return 0;
}

static int load_input(corpus *c, const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "pairshard bench-tokenize: %s: cannot open\n", path);
        return -1;
    }
    int first = ' ';
    while (first == ' ' || first == '\t' || first == '\r' || first == '\n')
        first = fgetc(f);
    rewind(f);
    int rc = 0;
    if (first == '[') { /* a JSON array: Spider's layout */
        json_error_t jerr;
        json_t *arr = json_loadf(f, JSON_ALLOW_NUL, &jerr);
        if (!json_is_array(arr)) {
            fprintf(stderr, "pairshard bench-tokenize: %s:%d: %s\n", path, jerr.line,
                    arr ? "not a JSON array" : jerr.text);
            rc = -1;
        }
        for (size_t i = 0; !rc && i < json_array_size(arr); i++)
            rc = add_record(c, json_array_get(arr, i), path, i + 1);
        json_decref(arr);
    } else { /* JSONL */
        char *line = NULL;
        size_t cap = 0, line_no = 0;
        ssize_t n;
        while (!rc && (n = getline(&line, &cap, f)) >= 0) {
            line_no++;
            if (strspn(line, " \t\r\n") == (size_t)n)
                continue;
            json_error_t jerr;
            json_t *rec = json_loadb(line, (size_t)n, JSON_ALLOW_NUL, &jerr);
            if (!json_is_object(rec)) {
                fprintf(stderr, "pairshard bench-tokenize: %s:%zu: not a JSON object\n", path,
                        line_no);
                rc = -1;
            } else {
                rc = add_record(c, rec, path, line_no);
            }
            json_decref(rec);
        }
        free(line);
    }
    fclose(f);
    return rc;
}

typedef struct worker {
    pthread_t thread;
    const ps_tokenizer *tok;
    const corpus *c;
    size_t lo, hi;         /* this worker's pairs */
    size_t max_length;
    size_t passes;         /* to run */
    unsigned long long tokens;
    int rc;
    char message[PS_ERROR_MESSAGE_MAX + 64];
} worker;

static void *work(void *arg)
{
    worker *w = arg;
    ps_tok_scratch *s = ps_tok_scratch_new();
    if (!s) {
        w->rc = PS_ENOMEM;
        snprintf(w->message, sizeof w->message, "out of memory");
        return NULL;
    }
    const char *text = w->c->text.data;
    for (size_t p = 0; p < w->passes && !w->rc; p++) {
        for (size_t i = w->lo; i < w->hi; i++) {
            ps_error err;
            ps_encoding enc;
            int rc = ps_tokenizer_encode_pair(w->tok, s, text + w->c->off[2 * i], w->c->len[2 * i],
                                              text + w->c->off[2 * i + 1], w->c->len[2 * i + 1],
                                              w->max_length, &enc, &err);
            if (rc < 0) {
                w->rc = rc;
                snprintf(w->message, sizeof w->message, "pair %zu: %s", i + 1, err.message);
                break;
            }
            w->tokens += enc.len;
        }
    }
    ps_tok_scratch_free(s);
    return NULL;
}

/* Runs `passes` passes on every worker; returns seconds, or -1. */
static double run_passes(worker *w, size_t threads, size_t passes)
{
    double t0 = ps_cli_now();
    for (size_t t = 0; t < threads; t++) {
        w[t].passes = passes;
        w[t].tokens = 0;
        if (pthread_create(&w[t].thread, NULL, work, &w[t])) {
            fputs("pairshard bench-tokenize: cannot start a thread\n", stderr);
            for (size_t k = 0; k < t; k++)
                pthread_join(w[k].thread, NULL);
            return -1;
        }
    }
    for (size_t t = 0; t < threads; t++)
        pthread_join(w[t].thread, NULL);
    double secs = ps_cli_now() - t0;
    for (size_t t = 0; t < threads; t++)
        if (w[t].rc) {
            fprintf(stderr, "pairshard bench-tokenize: %s\n", w[t].message);
            return -1;
        }
    return secs;
}

int ps_cmd_bench_tokenize(int argc, char **argv)
{
    ps_tok_source src = {NULL, NULL, -1};
    size_t threads = 1, max_length = 0;
    double min_seconds = 1.0;
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, PS_OPT_QUIET "h", LONGOPTS, NULL)) != -1) {
        int shared = ps_tok_source_option("bench-tokenize", &src, &max_length, c, optarg);
        if (shared < 0)
            return PS_EXIT_USAGE;
        if (shared)
            continue;
        switch (c) {
        case OPT_THREADS:
            if (ps_args_size("bench-tokenize", "threads", optarg, 1, 1024, &threads))
                return PS_EXIT_USAGE;
            break;
        case OPT_SECONDS:
            if (ps_args_double("bench-tokenize", "seconds", optarg, 0, 3600, &min_seconds))
                return PS_EXIT_USAGE;
            break;
        case 'h': fputs(USAGE, stdout); return PS_EXIT_OK;
        default: ps_opt_error("bench-tokenize", c, argv, LONGOPTS); return PS_EXIT_USAGE;
        }
    }
    if (optind >= argc) {
        fputs("pairshard bench-tokenize: give at least one INPUT\n", stderr);
        return PS_EXIT_USAGE;
    }
    if (max_length && max_length < 3) {
        fputs("pairshard bench-tokenize: --max-length must be at least 3\n", stderr);
        return PS_EXIT_USAGE;
    }
    int status = PS_EXIT_USAGE;
    corpus corp;
    memset(&corp, 0, sizeof corp);
    ps_buf_init(&corp.text);
    ps_tokenizer *tok = NULL;
    worker *w = NULL;
    for (int i = optind; i < argc; i++)
        if (load_input(&corp, argv[i]))
            goto done;
    if (!corp.n) {
        fputs("pairshard bench-tokenize: the inputs hold no pairs\n", stderr);
        goto done;
    }
    if (ps_tok_source_load("bench-tokenize", &src, &tok))
        goto done;
    if (threads > corp.n)
        threads = corp.n;
    w = calloc(threads, sizeof *w);
    if (!w)
        goto done;
    for (size_t t = 0; t < threads; t++) {
        w[t].tok = tok;
        w[t].c = &corp;
        w[t].lo = corp.n * t / threads;
        w[t].hi = corp.n * (t + 1) / threads;
        w[t].max_length = max_length;
    }
    /* Warm up with one pass (also sizes the run), then measure. */
    double secs = run_passes(w, threads, 1);
    if (secs < 0)
        goto done;
    size_t passes = 1;
    for (;;) {
        double want = secs > 0 ? min_seconds / secs * (double)passes * 1.1 : 2.0 * (double)passes;
        passes = want > (double)passes * 100 ? passes * 100 : (size_t)want + 1;
        secs = run_passes(w, threads, passes);
        if (secs < 0)
            goto done;
        if (secs >= min_seconds)
            break;
    }
    unsigned long long tokens = 0;
    for (size_t t = 0; t < threads; t++)
        tokens += w[t].tokens;
    double mb = (double)corp.bytes * (double)passes / 1e6;
    printf("threads %zu  pairs %zu  passes %zu  seconds %.3f  %.2f MB/s  %.0f tokens/s\n", threads,
           corp.n, passes, secs, mb / secs, (double)tokens / secs);
    status = PS_EXIT_OK;
done:
    free(w);
    ps_tokenizer_free(tok);
    ps_buf_free(&corp.text);
    free(corp.off);
    free(corp.len);
    return status;
}
