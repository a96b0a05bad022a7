/* pairshard clean: ingest raw pairs and write cleaned JSONL records. */
#include "cli/args.h"
#include "cli/clean_args.h"
#include "cli/commands.h"
#include "cli/leak_args.h"
#include "cli/opt_error.h"
#include "common/outfile.h"
#include "common/ps_internal.h"
#include "pairshard/pairshard.h"
#include "report/report.h"

#include <jansson.h>

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char USAGE[] =
    "usage: pairshard clean [options] INPUT... -o OUT.jsonl\n"
    "\n"
    "Reads raw question/SQL pairs and writes one cleaned JSON object per line:\n"
    "  {\"id\", \"question\", \"sql\", \"label\", \"source\"}\n"
    "(with schemas or a template also \"db_id\", \"prompt\", \"completion\", \"sql_check\")\n"
    "Every input record is kept, rejected (--rejects) or dropped as a duplicate\n"
    "(--duplicates); --stats writes the accounting.\n"
    "\n"
    "Inputs: JSONL, a JSON array of objects, CSV or TSV with a header row; plain,\n"
    ".gz or .zst (told by content); '-' is stdin.\n"
    "\n"
    "Outputs:\n"
    "  -o, --output FILE          cleaned records (default '-', stdout)\n"
    "      --rejects FILE         rejected records with source, reason, detail, original\n"
    "      --duplicates FILE      dropped duplicates with the id they duplicate\n"
    "      --stats FILE           accounting JSON (records_in = kept + rejected + duplicates)\n"
    "  An output that exists is replaced whole (through a symlink: its target);\n"
    "  a FIFO, /dev/null or /dev/fd/N is written into. Two outputs naming one file,\n"
    "  an output naming an input, or one inside a shard set is a usage error.\n"
    "      --threads T            worker threads (default: the online CPUs); the\n"
    "                             output is the same for any T\n"
    "  -q, --quiet                no summary on stderr (the counts, and the largest\n"
    "                             rejection cause with its first record and why)\n"
    "\n"
    "Leakage (docs/REPORT.md, \"Leakage\"):\n" PS_LEAK_DROP_HELP
    "\n"
    "%s"
    "\n"
    "Exit status: 0 done, 1 written but a leakage kind is over its limit (with\n"
    "--holdout), 2 usage or input error (nothing is written).\n";

enum { OPT_REJECTS = 256, OPT_DUPLICATES, OPT_STATS, OPT_THREADS, OPT_LEAK };

/* Besides -o, -q, -h and the cleaning options (ps_clean_longopts_merge). */
static const struct option OWN_OPTS[] = {
    {"rejects", required_argument, NULL, OPT_REJECTS},
    {"duplicates", required_argument, NULL, OPT_DUPLICATES},
    {"stats", required_argument, NULL, OPT_STATS},
    {"threads", required_argument, NULL, OPT_THREADS},
    PS_LEAK_LONGOPTS(OPT_LEAK),
};
#define N_OWN (sizeof OWN_OPTS / sizeof OWN_OPTS[0])

/* Rejections by reason, with the first record of each, for the summary:
 * the counts alone do not say why nor where. */
#define MAX_CAUSES 16
typedef struct cause {
    char reason[32];
    unsigned long long count;
    char *example; /* "source: detail" of the first such record */
} cause;

typedef struct sinks {
    ps_outfile out, rejects, duplicates;
    ps_error write_error; /* names the output that failed */
    cause causes[MAX_CAUSES];
    size_t ncauses;
    ps_leak_check *leak;     /* --holdout: counted in input order */
    ps_leak_scratch *leak_s;
    ps_leak_hits *leak_h;
    ps_error leak_err;
} sinks;

static void note_cause(sinks *s, const ps_clean_result *r)
{
    size_t i = 0;
    while (i < s->ncauses && strcmp(s->causes[i].reason, r->reason) != 0)
        i++;
    if (i == s->ncauses) {
        if (i == MAX_CAUSES)
            return;
        snprintf(s->causes[i].reason, sizeof s->causes[i].reason, "%s", r->reason);
        size_t n = strlen(r->source) + strlen(r->detail ? r->detail : "") + 3;
        if ((s->causes[i].example = malloc(n)) != NULL)
            snprintf(s->causes[i].example, n, "%s: %s", r->source, r->detail ? r->detail : "");
        s->ncauses++;
    }
    s->causes[i].count++;
}

/* "largest rejection cause: missing_field (6 records), e.g. bird/dev.json:#0: no field ..." */
static void print_largest_cause(const sinks *s)
{
    const cause *best = NULL;
    for (size_t i = 0; i < s->ncauses; i++)
        if (!best || s->causes[i].count > best->count)
            best = &s->causes[i];
    if (best)
        fprintf(stderr, "pairshard clean: largest rejection cause: %s (%llu records), e.g. %s\n",
                best->reason, best->count, best->example ? best->example : "");
}

/* With schemas: "SQL: 7000 checked, 6997 compiled raw, 6997 after cleaning, 0
 * regressions" and, per class of cleaned SQL that does not compile, its
 * count and first record (the counts of --stats' "sql"). */
static void print_sql_summary(const ps_cleaner *cl)
{
    char *js = ps_cleaner_stats_json(cl);
    json_t *st = js ? json_loads(js, 0, NULL) : NULL;
    free(js);
    json_t *sql = json_object_get(st, "sql"), *n;
    if (json_integer_value(json_object_get(sql, "checked")) > 0) {
        long long reg = json_integer_value(json_object_get(sql, "regressions"));
        fprintf(stderr, "pairshard clean: SQL: %lld checked, %lld compiled raw, %lld after cleaning, "
                "%lld regression%s\n", (long long)json_integer_value(json_object_get(sql, "checked")),
                (long long)json_integer_value(json_object_get(sql, "compiled_raw")),
                (long long)json_integer_value(json_object_get(sql, "compiled_clean")), reg,
                reg == 1 ? "" : "s");
        const char *cls;
        json_object_foreach(json_object_get(sql, "clean"), cls, n) {
            const char *ex = json_string_value(
                json_array_get(json_object_get(json_object_get(sql, "examples"), cls), 0));
            if (strcmp(cls, "ok") && json_integer_value(n) > 0)
                fprintf(stderr, "pairshard clean:   %s %lld after cleaning, e.g. %s\n", cls,
                        (long long)json_integer_value(n), ex ? ex : "?");
        }
    }
    json_decref(st);
}

/* The record's line (serialised by the workers) into its output. */
static int sink(void *user, const ps_clean_result *r, const char *line, size_t len)
{
    sinks *s = user;
    if (r->outcome == PS_OUTCOME_REJECTED && r->reason)
        note_cause(s, r);
    /* what the check saw: kept records (duplicates too, as a build counts
     * them) and those it rejected */
    if (s->leak && (r->outcome != PS_OUTCOME_REJECTED || !strncmp(r->reason, "leaked_", 7))) {
        ps_leak_text t = {r->id, r->question, r->sql, r->db_id};
        int rc = ps_leak_check_count(s->leak, s->leak_s, s->leak_h, &t, r->reason, &s->leak_err);
        if (rc)
            return rc;
    }
    ps_outfile *o = r->outcome == PS_OUTCOME_KEPT       ? &s->out
                    : r->outcome == PS_OUTCOME_REJECTED ? &s->rejects
                                                        : &s->duplicates;
    if (!o->f)
        return 0;
    return ps_outfile_write(o, line, len + 1, &s->write_error); /* line[len] is '\n' */
}

static int write_stats(ps_cleaner *cl, const char *path, ps_error *err)
{
    char *json = ps_cleaner_stats_json(cl);
    if (!json)
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    size_t n = strlen(json);
    json[n] = '\n'; /* replaces the NUL; the length says where it ends */
    int rc = ps_outfile_write_all(path, json, n + 1, err);
    free(json);
    return rc;
}

/* Before anything is read: no output may name another, an input (or the
 * rules file), or a file inside a shard set. */
static int check_paths(const char *out, const char *rejects, const char *dups, const char *stats,
                       const char *rules, char **inputs, int n_inputs, ps_error *err)
{
    const ps_path_use outs[] = {
        {"-o", out}, {"--rejects", rejects}, {"--duplicates", dups}, {"--stats", stats}};
    ps_path_use *ins = calloc((size_t)n_inputs + 1, sizeof *ins);
    if (!ins)
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    for (int i = 0; i < n_inputs; i++)
        ins[i] = (ps_path_use){"input", inputs[i]};
    ins[n_inputs] = (ps_path_use){"--rules file", rules};
    int rc = ps_outputs_check(outs, 4, ins, (size_t)n_inputs + 1, err);
    free(ins);
    return rc;
}

/* --holdout: the held-out sets read, the cleaner's check set and the
 * sink's scratch made. 0, or -1 after printing why. */
static int leak_open(ps_leak_config *lcfg, ps_leak_check *lc, const ps_clean_options *opts,
                     size_t threads, ps_cleaner *cl, sinks *s)
{
    ps_error err;
    ps_error_clear(&err);
    if (!lcfg->n_holdouts) {
        if (!lcfg->drop_mask)
            return 0;
        fputs("pairshard clean: --drop-leaked needs --holdout\n", stderr);
        return -1;
    }
    s->leak_h = malloc(sizeof *s->leak_h);
    if (!s->leak_h || ps_leak_scratch_create(&s->leak_s))
        ps_error_set(&err, PS_ENOMEM, "out of memory");
    else if (!ps_leak_check_open(lc, lcfg, opts, threads, &err) &&
             !ps_leak_check_attach(lc, cl, &err))
        s->leak = lc;
    if (s->leak)
        return 0;
    fprintf(stderr, "pairshard clean: %s\n", err.message);
    return -1;
}

/* The leakage screen; 1 when a kind is over its limit. */
static int leak_close(const ps_leak_config *lcfg, ps_leak_check *lc, sinks *s, int quiet)
{
    int failed = 0;
    if (s->leak) {
        failed = ps_leak_check_failed(lc);
        char *text = quiet && !failed ? NULL
                                      : ps_leak_summary("pairshard clean", lc->tally, &lcfg->limits,
                                                        lcfg->drop_mask);
        fputs(text ? text : "", stderr);
        free(text);
    }
    ps_leak_check_close(lc);
    ps_leak_scratch_free(s->leak_s);
    free(s->leak_h);
    s->leak = NULL; /* a second call frees nothing again */
    s->leak_s = NULL;
    s->leak_h = NULL;
    return failed;
}

int ps_cmd_clean(int argc, char **argv)
{
    ps_clean_args ca;
    ps_clean_args_init(&ca);
    ps_leak_config lcfg;
    ps_leak_args_init(&lcfg);
    ps_leak_check lc;
    memset(&lc, 0, sizeof lc);
    const char *out_path = "-", *rejects_path = NULL, *dups_path = NULL, *stats_path = NULL;
    int quiet = 0;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    size_t threads = cpus > 0 ? (size_t)cpus : 1;
    struct option longopts[N_OWN + PS_CLEAN_LONGOPTS_EXTRA];
    ps_clean_longopts_merge(longopts, OWN_OPTS, N_OWN);
    int c, idx;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, PS_OPT_QUIET "o:qh", longopts, &idx)) != -1) {
        switch (c) {
        case 'o': out_path = optarg; break;
        case 'q': quiet = 1; break;
        case 'h': printf(USAGE, ps_clean_args_help); return PS_EXIT_OK;
        case OPT_REJECTS: rejects_path = optarg; break;
        case OPT_DUPLICATES: dups_path = optarg; break;
        case OPT_STATS: stats_path = optarg; break;
        case OPT_THREADS:
            if (ps_args_size("clean", "threads", optarg, 1, 1024, &threads))
                return PS_EXIT_USAGE;
            break;
        default:
            if (c >= OPT_LEAK && c < OPT_LEAK + PS_LEAK_OPTS) {
                if (ps_leak_args_apply(&lcfg, "clean", c - OPT_LEAK, optarg))
                    return PS_EXIT_USAGE;
                break;
            }
            if (c >= PS_CLEAN_OPT_BASE) {
                if (ps_clean_args_apply(&ca, "clean", longopts[idx].name, optarg) < 0)
                    return PS_EXIT_USAGE;
                break;
            }
            ps_opt_error("clean", c, argv, longopts);
            return PS_EXIT_USAGE;
        }
    }
    ps_clean_args_finish(&ca);
    const ps_clean_options opts = ca.opts;
    const char *rules_path = ca.rules_path;
    if (optind >= argc) {
        fputs("pairshard clean: no INPUT given (use '-' for stdin)\n", stderr);
        return PS_EXIT_USAGE;
    }

    ps_error err;
    ps_error_clear(&err);
    if (check_paths(out_path, rejects_path, dups_path, stats_path, rules_path, argv + optind,
                    argc - optind, &err)) {
        fprintf(stderr, "pairshard clean: %s\n", err.message);
        return PS_EXIT_USAGE;
    }
    ps_cleaner *cl = NULL;
    if (ps_cleaner_create(&opts, &cl, &err)) {
        fprintf(stderr, "pairshard clean: %s\n", err.message);
        return PS_EXIT_USAGE;
    }
    ps_clean_t2s t2s;
    if (ps_clean_args_text2sql(&ca, "clean", cl, &t2s)) {
        ps_cleaner_free(cl);
        ps_clean_t2s_free(&t2s);
        return PS_EXIT_USAGE;
    }
    if (ps_cleaner_declare_inputs(cl, (const char *const *)argv + optind,
                                  (size_t)(argc - optind), &err) ||
        (rules_path && ps_cleaner_load_rules(cl, rules_path, &err))) {
        fprintf(stderr, "pairshard clean: %s\n", err.message);
        ps_cleaner_free(cl);
        ps_clean_t2s_free(&t2s);
        return PS_EXIT_USAGE;
    }
    sinks s;
    memset(&s, 0, sizeof s);
    int status = PS_EXIT_OK;
    if (leak_open(&lcfg, &lc, &opts, threads, cl, &s)) {
        status = PS_EXIT_USAGE;
        goto done;
    }
    if (ps_outfile_open(&s.out, out_path, &err) ||
        (rejects_path && ps_outfile_open(&s.rejects, rejects_path, &err)) ||
        (dups_path && ps_outfile_open(&s.duplicates, dups_path, &err))) {
        fprintf(stderr, "pairshard clean: %s\n", err.message);
        status = PS_EXIT_USAGE;
        goto done;
    }
    /* With workers, the calling thread commits and hands every line on: the
     * write(2)s, a third of its time, go to a thread of their own. */
    if (threads > 1 && (ps_outfile_write_behind(&s.out, &err) ||
                        ps_outfile_write_behind(&s.rejects, &err) ||
                        ps_outfile_write_behind(&s.duplicates, &err))) {
        fprintf(stderr, "pairshard clean: %s\n", err.message);
        status = PS_EXIT_USAGE;
        goto done;
    }
    for (int i = optind; i < argc; i++) {
        int rc = ps_cleaner_run_lines(cl, argv[i], threads, sink, &s, &err);
        if (rc) {
            fprintf(stderr, "pairshard clean: %s\n",
                    s.write_error.code ? s.write_error.message
                    : s.leak_err.code  ? s.leak_err.message
                    : err.code         ? err.message
                                       : ps_strerror(rc));
            status = PS_EXIT_USAGE;
            goto done;
        }
    }
    if (ps_outfile_commit(&s.out, &err) || ps_outfile_commit(&s.rejects, &err) ||
        ps_outfile_commit(&s.duplicates, &err) || (stats_path && write_stats(cl, stats_path, &err))) {
        fprintf(stderr, "pairshard clean: %s\n", err.message);
        status = PS_EXIT_USAGE;
        goto done;
    }
    if (!quiet) {
        ps_clean_counts k;
        ps_cleaner_get_counts(cl, &k);
        fprintf(stderr,
                "pairshard clean: %llu records in = %llu kept + %llu rejected + %llu duplicates\n",
                (unsigned long long)k.records_in, (unsigned long long)k.kept,
                (unsigned long long)k.rejected, (unsigned long long)k.duplicates);
        print_largest_cause(&s);
        print_sql_summary(cl);
    }
    if (leak_close(&lcfg, &lc, &s, quiet))
        status = PS_EXIT_FAIL;
done:
    ps_outfile_abort(&s.out);
    ps_outfile_abort(&s.rejects);
    ps_outfile_abort(&s.duplicates);
    for (size_t i = 0; i < s.ncauses; i++)
        free(s.causes[i].example);
    ps_cleaner_free(cl); /* first: its workers' check scratch */
    leak_close(&lcfg, &lc, &s, 1);
    ps_clean_t2s_free(&t2s);
    return status;
}
