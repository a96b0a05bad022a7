/* pairshard leakage: what training files or sets share with held-out ones. */
#include "cli/args.h"
#include "cli/clean_args.h"
#include "cli/commands.h"
#include "cli/leak_args.h"
#include "cli/opt_error.h"
#include "common/outfile.h"
#include "pipeline/leak_load.h"
#include "report/report.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char USAGE[] =
    "usage: pairshard leakage --train FILE|SET... --holdout FILE|SET... [--json OUT]\n"
    "\n"
    "Finds, for every training record, what it shares with the held-out sets a model\n"
    "is judged on: the same database (db_id), the same question (NFKC, case folded,\n"
    "punctuation and whitespace ignored), a near-duplicate question (character n-gram\n"
    "Jaccard >= the threshold, MinHash/LSH then verified), the same SQL (case folded\n"
    "outside literals, whitespace folded, trailing ';' dropped), the same SQL template\n"
    "(literals and numbers masked). A SET is a shard set's directory: the inputs its\n"
    "manifest lists are read again (each checked against its recorded sha256).\n"
    "\n"
    "      --train FILE|SET       training records (repeatable)\n"
    "      --holdout FILE|SET     held-out records (repeatable, at most 64)\n"
    "      --json FILE, -o FILE   the \"leakage\" object of report.json (docs/REPORT.md)\n"
    "      --matches FILE         one JSON line per leaked training record: its id and,\n"
    "                             per kind, the first matching record of each held-out set\n"
    "%s"
    "      --threads T            reading threads (default: the online CPUs); the\n"
    "                             result is the same for any T\n"
    "  -q, --quiet                no summary on stderr\n"
    "\n"
    "Inputs are read as `pairshard clean` reads them (formats, field and turn options\n"
    "below); every record is compared, duplicates too.\n"
    "\n"
    "%s"
    "\n"
    "Exit status: 0 every kind within its limit, 1 a kind over its limit, 2 usage or\n"
    "input error.\n";

enum { OPT_TRAIN = 256, OPT_JSON, OPT_THREADS, OPT_MATCHES, OPT_LEAK_BASE };

static const struct option OWN_OPTS[] = {
    {"train", required_argument, NULL, OPT_TRAIN},
    {"json", required_argument, NULL, OPT_JSON},
    {"threads", required_argument, NULL, OPT_THREADS},
    {"matches", required_argument, NULL, OPT_MATCHES},
    PS_LEAK_LONGOPTS(OPT_LEAK_BASE),
};
#define N_OWN (sizeof OWN_OPTS / sizeof OWN_OPTS[0])

typedef struct run {
    const char *train[256], *json_path, *matches_path;
    ps_outfile matches;
    const ps_leak_index *index;
    ps_buf line;
    ps_error write_err;
    size_t n_train;
    ps_leak_config la;
    size_t threads;
    int quiet;
} run;

static int parse(run *r, ps_clean_args *ca, int argc, char **argv)
{
    struct option longopts[N_OWN + PS_CLEAN_LONGOPTS_EXTRA];
    ps_clean_longopts_merge(longopts, OWN_OPTS, N_OWN);
    int c, idx;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, PS_OPT_QUIET "o:qh", longopts, &idx)) != -1) {
        if (c >= OPT_LEAK_BASE && c < OPT_LEAK_BASE + PS_LEAK_OPTS) {
            if (ps_leak_args_apply(&r->la, "leakage", c - OPT_LEAK_BASE, optarg))
                return PS_EXIT_USAGE;
            continue;
        }
        switch (c) {
        case 'o':
        case OPT_JSON: r->json_path = optarg; break;
        case OPT_MATCHES: r->matches_path = optarg; break;
        case 'q': r->quiet = 1; break;
        case 'h': printf(USAGE, PS_LEAK_ARGS_HELP, ps_clean_args_help); return PS_EXIT_OK;
        case OPT_TRAIN:
            if (r->n_train == sizeof r->train / sizeof r->train[0]) {
                fputs("pairshard leakage: more than 256 --train inputs\n", stderr);
                return PS_EXIT_USAGE;
            }
            r->train[r->n_train++] = optarg;
            break;
        case OPT_THREADS:
            if (ps_args_size("leakage", "threads", optarg, 1, 1024, &r->threads))
                return PS_EXIT_USAGE;
            break;
        default:
            if (c >= PS_CLEAN_OPT_BASE) {
                if (ps_clean_args_apply(ca, "leakage", longopts[idx].name, optarg) < 0)
                    return PS_EXIT_USAGE;
                break;
            }
            ps_opt_error("leakage", c, argv, longopts);
            return PS_EXIT_USAGE;
        }
    }
    if (r->la.drop_mask) {
        fputs("pairshard leakage: --drop-leaked is for build and clean (this command writes "
              "no records)\n", stderr);
        return PS_EXIT_USAGE;
    }
    if (optind < argc || !r->n_train || !r->la.n_holdouts) {
        fprintf(stderr, "pairshard leakage: %s\n",
                optind < argc ? "inputs are named with --train and --holdout"
                              : "give at least one --train and one --holdout");
        return PS_EXIT_USAGE;
    }
    return -1;
}

/* --matches: {"id": ..., "kinds": {KIND: [holdout ids, one a set]}} */
static int put_match(void *user, const ps_leak_text *t, const ps_leak_hits *h)
{
    run *r = user;
    if (!h->kinds)
        return 0;
    json_t *o = json_object(), *kinds = json_object();
    json_object_set_new(o, "id", json_string(t->id ? t->id : ""));
    for (int k = 0; k < PS_LEAK_KINDS; k++) {
        if (!(h->kinds & (1u << k)))
            continue;
        json_t *ids = json_array();
        for (size_t ho = 0; ho < ps_leak_index_holdouts(r->index); ho++) {
            ps_leak_text hr;
            ps_leak_index_record(r->index, h->rec[k][ho], &hr);
            json_array_append_new(ids, hr.id ? json_string(hr.id) : json_null());
        }
        json_object_set_new(kinds, ps_leak_kind_name((ps_leak_kind)k), ids);
    }
    json_object_set_new(o, "kinds", kinds);
    char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    if (!s)
        return PS_ENOMEM;
    ps_buf_reset(&r->line);
    int rc = ps_buf_puts(&r->line, s);
    free(s);
    rc = rc ? rc : ps_buf_putc(&r->line, '\n');
    return rc ? rc : ps_outfile_write(&r->matches, r->line.data, r->line.len, &r->write_err);
}

int ps_cmd_leakage(int argc, char **argv)
{
    run r;
    memset(&r, 0, sizeof r);
    ps_leak_args_init(&r.la);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    r.threads = cpus > 0 ? (size_t)cpus : 1;
    ps_clean_args ca;
    ps_clean_args_init(&ca);
    int status = parse(&r, &ca, argc, argv);
    if (status >= 0)
        return status;
    ps_clean_args_finish(&ca);
    ps_error err;
    ps_error_clear(&err);
    ps_leak_check lc;
    status = PS_EXIT_USAGE;
    if (ps_leak_check_open(&lc, &r.la, &ca.opts, r.threads, &err) ||
        (r.matches_path && ps_outfile_open(&r.matches, r.matches_path, &err)))
        goto fail;
    r.index = lc.index;
    for (size_t i = 0; i < r.n_train; i++) {
        ps_leak_source src;
        if (ps_leak_scan(lc.index, lc.tally, r.train[i], &ca.opts, r.threads,
                         r.matches_path ? put_match : NULL, &r, &src, &err)) {
            if (r.write_err.code)
                err = r.write_err;
            goto fail;
        }
        if (src.rejected && !r.quiet)
            fprintf(stderr, "pairshard leakage: %s: %llu records compared, %llu unreadable "
                    "(no question or SQL, bad JSON): not compared\n", r.train[i],
                    (unsigned long long)src.records, (unsigned long long)src.rejected);
    }
    json_t *j = ps_leak_check_json(&lc);
    char *text = j ? json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10)) : NULL;
    json_decref(j);
    if (!text) {
        ps_error_set(&err, PS_ENOMEM, "out of memory");
        goto fail;
    }
    size_t n = strlen(text);
    text[n] = '\n';
    int rc = r.json_path ? ps_outfile_write_all(r.json_path, text, n + 1, &err) : 0;
    rc = rc ? rc : r.matches_path ? ps_outfile_commit(&r.matches, &err) : 0;
    free(text);
    if (rc)
        goto fail;
    if (!r.quiet) {
        char *s = ps_leak_summary("pairshard leakage", lc.tally, &r.la.limits, 0);
        fputs(s ? s : "", stderr);
        free(s);
    }
    status = ps_leak_check_failed(&lc) ? PS_EXIT_FAIL : PS_EXIT_OK;
    goto done;
fail:
    fprintf(stderr, "pairshard leakage: %s\n", err.message);
done:
    ps_outfile_abort(&r.matches);
    ps_buf_free(&r.line);
    ps_leak_check_close(&lc);
    return status;
}
