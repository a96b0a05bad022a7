/* pairshard clean: ingest raw pairs and write cleaned JSONL records. */
#include "cli/commands.h"
#include "cli/outfile.h"
#include "pairshard/pairshard.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char USAGE[] =
    "usage: pairshard clean [options] INPUT... -o OUT.jsonl\n"
    "\n"
    "Reads raw question/SQL pairs and writes one cleaned JSON object per line:\n"
    "  {\"id\", \"question\", \"sql\", \"label\", \"source\"}\n"
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
    "  -q, --quiet                no summary on stderr\n"
    "\n"
    "Input mapping:\n"
    "      --format F             auto (default), jsonl, json, csv, tsv\n"
    "      --question-field NAME  default 'question'\n"
    "      --sql-field NAME       default 'sql', falling back to 'query'\n"
    "      --label-field NAME     default 'label' (absent: no label)\n"
    "      --id-field NAME        default 'id' (absent: <file>:<line> or <file>:#<index>)\n"
    "      --max-record-bytes N   raw records longer are rejected as too_long (1048576)\n"
    "      --max-field-bytes N    cleaned fields longer are rejected as too_long (65536)\n"
    "\n"
    "Cleaning (in this order):\n"
    "      --utf8 POLICY          invalid UTF-8: reject (default) or replace (U+FFFD)\n"
    "      --normalize FORM       nfkc (default), nfc or none, for both fields\n"
    "      --sql-normalize FORM   override --normalize for the sql field\n"
    "      --strip-joiners        also remove ZWNJ/ZWJ (kept by default)\n"
    "      --rules FILE           user PCRE2 rules (JSON), applied after control removal\n"
    "      --sql-backslash-escapes  \\' does not end a '...' literal (MySQL)\n"
    "      --keep-duplicates      do not drop exact duplicates\n"
    "\n"
    "Exit status: 0 done, 2 usage or input error (nothing is written).\n";

enum {
    OPT_REJECTS = 256, OPT_DUPLICATES, OPT_STATS, OPT_FORMAT, OPT_QFIELD, OPT_SFIELD,
    OPT_LFIELD, OPT_IFIELD, OPT_UTF8, OPT_NORMALIZE, OPT_SQL_NORMALIZE, OPT_JOINERS,
    OPT_RULES, OPT_BACKSLASH, OPT_KEEP_DUPS, OPT_MAX_RECORD, OPT_MAX_FIELD
};

static const struct option LONGOPTS[] = {
    {"output", required_argument, NULL, 'o'},
    {"quiet", no_argument, NULL, 'q'},
    {"help", no_argument, NULL, 'h'},
    {"rejects", required_argument, NULL, OPT_REJECTS},
    {"duplicates", required_argument, NULL, OPT_DUPLICATES},
    {"stats", required_argument, NULL, OPT_STATS},
    {"format", required_argument, NULL, OPT_FORMAT},
    {"question-field", required_argument, NULL, OPT_QFIELD},
    {"sql-field", required_argument, NULL, OPT_SFIELD},
    {"label-field", required_argument, NULL, OPT_LFIELD},
    {"id-field", required_argument, NULL, OPT_IFIELD},
    {"utf8", required_argument, NULL, OPT_UTF8},
    {"normalize", required_argument, NULL, OPT_NORMALIZE},
    {"sql-normalize", required_argument, NULL, OPT_SQL_NORMALIZE},
    {"strip-joiners", no_argument, NULL, OPT_JOINERS},
    {"rules", required_argument, NULL, OPT_RULES},
    {"sql-backslash-escapes", no_argument, NULL, OPT_BACKSLASH},
    {"keep-duplicates", no_argument, NULL, OPT_KEEP_DUPS},
    {"max-record-bytes", required_argument, NULL, OPT_MAX_RECORD},
    {"max-field-bytes", required_argument, NULL, OPT_MAX_FIELD},
    {NULL, 0, NULL, 0},
};

typedef struct sinks {
    ps_outfile out, rejects, duplicates;
    int write_error;
} sinks;

static int write_line(ps_outfile *o, const ps_clean_result *r)
{
    char *line;
    size_t len;
    int rc = ps_clean_result_json(r, &line, &len);
    if (rc)
        return rc;
    if (fwrite(line, 1, len, o->f) != len || putc('\n', o->f) == EOF)
        rc = PS_EIO;
    free(line);
    return rc;
}

static int sink(void *user, const ps_clean_result *r)
{
    sinks *s = user;
    ps_outfile *o = r->outcome == PS_OUTCOME_KEPT       ? &s->out
                    : r->outcome == PS_OUTCOME_REJECTED ? &s->rejects
                                                        : &s->duplicates;
    if (!o->f)
        return 0;
    int rc = write_line(o, r);
    if (rc == PS_EIO)
        s->write_error = errno ? errno : EIO;
    return rc;
}

static int parse_size(const char *opt, const char *v, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (errno || end == v || *end || x == 0 || v[0] == '-') {
        fprintf(stderr, "pairshard clean: %s needs a positive integer, got '%s'\n", opt, v);
        return -1;
    }
    *out = (size_t)x;
    return 0;
}

static int bad_value(const char *opt, const char *v, const char *choices)
{
    fprintf(stderr, "pairshard clean: %s '%s' is not one of %s\n", opt, v, choices);
    return PS_EXIT_USAGE;
}

int ps_cmd_clean(int argc, char **argv)
{
    ps_clean_options opts;
    ps_clean_options_init(&opts);
    const char *out_path = "-", *rejects_path = NULL, *dups_path = NULL, *stats_path = NULL;
    const char *rules_path = NULL;
    int quiet = 0, sql_norm_set = 0;
    ps_normalization sql_norm = PS_NORM_NFKC;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:qh", LONGOPTS, NULL)) != -1) {
        switch (c) {
        case 'o': out_path = optarg; break;
        case 'q': quiet = 1; break;
        case 'h': fputs(USAGE, stdout); return PS_EXIT_OK;
        case OPT_REJECTS: rejects_path = optarg; break;
        case OPT_DUPLICATES: dups_path = optarg; break;
        case OPT_STATS: stats_path = optarg; break;
        case OPT_FORMAT:
            if (ps_format_parse(optarg, &opts.format))
                return bad_value("--format", optarg, "auto, jsonl, json, csv, tsv");
            break;
        case OPT_QFIELD: opts.question_field = optarg; break;
        case OPT_SFIELD: opts.sql_field = optarg; break;
        case OPT_LFIELD: opts.label_field = optarg; break;
        case OPT_IFIELD: opts.id_field = optarg; break;
        case OPT_UTF8:
            if (ps_utf8_policy_parse(optarg, &opts.utf8_policy))
                return bad_value("--utf8", optarg, "reject, replace");
            break;
        case OPT_NORMALIZE:
            if (ps_normalization_parse(optarg, &opts.question_normalization))
                return bad_value("--normalize", optarg, "nfkc, nfc, none");
            break;
        case OPT_SQL_NORMALIZE:
            if (ps_normalization_parse(optarg, &sql_norm))
                return bad_value("--sql-normalize", optarg, "nfkc, nfc, none");
            sql_norm_set = 1;
            break;
        case OPT_JOINERS: opts.strip_joiners = 1; break;
        case OPT_RULES: rules_path = optarg; break;
        case OPT_BACKSLASH: opts.sql_backslash_escapes = 1; break;
        case OPT_KEEP_DUPS: opts.keep_duplicates = 1; break;
        case OPT_MAX_RECORD:
            if (parse_size("--max-record-bytes", optarg, &opts.max_record_bytes))
                return PS_EXIT_USAGE;
            break;
        case OPT_MAX_FIELD:
            if (parse_size("--max-field-bytes", optarg, &opts.max_field_bytes))
                return PS_EXIT_USAGE;
            break;
        default:
            fputs("pairshard clean: see 'pairshard clean --help'\n", stderr);
            return PS_EXIT_USAGE;
        }
    }
    opts.sql_normalization = sql_norm_set ? sql_norm : opts.question_normalization;
    if (optind >= argc) {
        fputs("pairshard clean: no INPUT given (use '-' for stdin)\n", stderr);
        return PS_EXIT_USAGE;
    }

    ps_error err;
    ps_error_clear(&err);
    ps_cleaner *cl = NULL;
    if (ps_cleaner_create(&cl, &opts, &err)) {
        fprintf(stderr, "pairshard clean: %s\n", err.message);
        return PS_EXIT_USAGE;
    }
    if (rules_path && ps_cleaner_load_rules(cl, rules_path, &err)) {
        fprintf(stderr, "pairshard clean: %s\n", err.message);
        ps_cleaner_free(cl);
        return PS_EXIT_USAGE;
    }
    sinks s;
    memset(&s, 0, sizeof s);
    int status = PS_EXIT_OK;
    if (ps_outfile_open(&s.out, out_path) ||
        (rejects_path && ps_outfile_open(&s.rejects, rejects_path)) ||
        (dups_path && ps_outfile_open(&s.duplicates, dups_path))) {
        status = PS_EXIT_USAGE;
        goto done;
    }
    for (int i = optind; i < argc; i++) {
        int rc = ps_cleaner_run(cl, argv[i], sink, &s, &err);
        if (rc) {
            if (s.write_error)
                fprintf(stderr, "pairshard clean: writing output failed: %s\n",
                        strerror(s.write_error));
            else
                fprintf(stderr, "pairshard clean: %s\n",
                        err.code ? err.message : ps_strerror(rc));
            status = PS_EXIT_USAGE;
            goto done;
        }
    }
    if (ps_outfile_commit(&s.out) || ps_outfile_commit(&s.rejects) ||
        ps_outfile_commit(&s.duplicates)) {
        status = PS_EXIT_USAGE;
        goto done;
    }
    if (stats_path) {
        char *json = ps_cleaner_stats_json(cl);
        ps_outfile st;
        if (!json || ps_outfile_open(&st, stats_path)) {
            free(json);
            status = PS_EXIT_USAGE;
            goto done;
        }
        fputs(json, st.f);
        fputc('\n', st.f);
        free(json);
        if (ps_outfile_commit(&st)) {
            status = PS_EXIT_USAGE;
            goto done;
        }
    }
    if (!quiet) {
        ps_clean_counts k;
        ps_cleaner_counts(cl, &k);
        fprintf(stderr,
                "pairshard clean: %llu records in = %llu kept + %llu rejected + %llu duplicates\n",
                (unsigned long long)k.records_in, (unsigned long long)k.kept,
                (unsigned long long)k.rejected, (unsigned long long)k.duplicates);
    }
done:
    ps_outfile_abort(&s.out);
    ps_outfile_abort(&s.rejects);
    ps_outfile_abort(&s.duplicates);
    ps_cleaner_free(cl);
    return status;
}
