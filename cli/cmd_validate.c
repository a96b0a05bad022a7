/* pairshard validate: compare two saved statistics files (a build's
 * stats.json or report.json) with the distribution and health checks. */
#include "cli/commands.h"
#include "cli/opt_error.h"
#include "common/json_where.h"
#include "common/outfile.h"
#include "report/report.h"
#include "validate/validate.h"

#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char USAGE[] =
    "usage: pairshard validate --baseline A --current B [options]\n"
    "\n"
    "Compares two statistics files written by 'pairshard build' (DIR/stats.json,\n"
    "or a DIR/report.json of a build), or two shard sets (a directory stands for\n"
    "its stats.json), with the same checks as the build's gate:\n"
    "labels (Jensen-Shannon distance, PSI, chi-square/Cramer's V), lengths of\n"
    "question, sql and tokens (KS D, PSI, p50/p90/p99 shifts, overall and per\n"
    "label) and health ([UNK] rate and its increase, truncation, padding).\n"
    "Thresholds and modes: docs/REPORT.md.\n"
    "\n"
    "  --baseline FILE|DIR    the reference statistics (e.g. last week's set)\n"
    "  --current FILE|DIR     the statistics to judge\n"
    "  --point P              the point compared in both: raw, cleaned (default)\n"
    "                         or tokenized\n"
    "  --baseline-point P, --current-point P   a different point on each side\n"
    "  --config FILE          JSON: a build config (its \"validate\" member) or\n"
    "                         {\"thresholds\": {...}, \"modes\": {...}}\n"
    "  --json OUT             write report.json there\n"
    "  --html OUT             write report.html there\n"
    "                         (each replaced whole; not over an input, not inside\n"
    "                         a shard set; a FIFO or /dev/null is written into)\n"
    "  -q, --quiet            no summary on stdout\n"
    "  -h, --help             this help\n"
    "\n"
    "Exit status: 0 every check passed or warned, 1 a check failed, 2 usage\n"
    "error or a file that cannot be read.\n";

static int point_index(const char *p)
{
    if (!strcmp(p, "raw"))
        return 0;
    if (!strcmp(p, "cleaned"))
        return 1;
    if (!strcmp(p, "tokenized"))
        return 2;
    return -1;
}

/* A shard set's directory stands for its stats.json. Returns the path to
 * load (`path` itself, or `buf`), or NULL after saying what is wrong. */
static const char *stats_path(const char *path, char *buf, size_t n)
{
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        return path;
    int len = snprintf(buf, n, "%s%sstats.json", path,
                       path[0] && path[strlen(path) - 1] == '/' ? "" : "/");
    if (len < 0 || (size_t)len >= n) {
        fprintf(stderr, "pairshard validate: %s: path too long\n", path);
        return NULL;
    }
    if (stat(buf, &st) != 0) {
        fprintf(stderr, "pairshard validate: %s is a directory without stats.json (a shard set "
                "written by 'pairshard build' or 'merge' has one)\n", path);
        return NULL;
    }
    return buf;
}

static ps_vstats *load_point(const char *arg, int which, const char *pname)
{
    char buf[4096];
    const char *path = stats_path(arg, buf, sizeof buf);
    if (!path)
        return NULL;
    ps_vstats *pt[3] = {NULL, NULL, NULL};
    ps_error err;
    ps_error_clear(&err);
    int rc = ps_vstats_file_load(path, &pt[0], &pt[1], &pt[2], NULL, NULL, NULL, &err);
    if (rc) {
        fprintf(stderr, "pairshard validate: %s\n", err.message[0] ? err.message : ps_strerror(rc));
        return NULL;
    }
    for (int i = 0; i < 3; i++)
        if (i != which)
            ps_vstats_free(pt[i]);
    if (!pt[which])
        fprintf(stderr, "pairshard validate: %s: has no '%s' statistics\n", path, pname);
    return pt[which];
}

static int load_config(ps_vconfig *c, const char *path)
{
    json_error_t je;
    char *text;
    size_t len;
    ps_error ferr = {0};
    /* A regular file only: a FIFO as --config would block forever. */
    if (ps_file_read_all(path, "configuration file", PS_CONFIG_FILE_MAX, &text, &len, &ferr)) {
        fprintf(stderr, "pairshard validate: %s\n", ferr.message);
        return -1;
    }
    json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    free(text);
    if (!j) {
        char why[1024];
        fprintf(stderr, "pairshard validate: %s\n", ps_json_where(why, sizeof why, path, &je));
        return -1;
    }
    json_t *v = json_object_get(j, "validate");
    if (!v && (json_object_get(j, "thresholds") || json_object_get(j, "modes")))
        v = j;
    ps_error err;
    ps_error_clear(&err);
    int rc = v ? ps_vconfig_apply_json(c, v, &err) : 0;
    if (!json_is_object(j)) {
        fprintf(stderr, "pairshard validate: %s: not a JSON object\n", path);
        rc = -1;
    } else if (rc) {
        fprintf(stderr, "pairshard validate: %s: %s\n", path, err.message);
    }
    json_decref(j);
    return rc ? -1 : 0;
}

static int write_text(const char *path, const char *text)
{
    ps_outfile o;
    ps_error err;
    int rc = ps_outfile_open(&o, path, &err);
    if (!rc)
        rc = ps_outfile_write(&o, text, strlen(text), &err);
    if (!rc)
        rc = ps_outfile_write(&o, "\n", 1, &err);
    if (!rc)
        rc = ps_outfile_commit(&o, &err);
    ps_outfile_abort(&o);
    if (rc)
        fprintf(stderr, "pairshard validate: %s\n", err.message);
    return rc ? -1 : 0;
}

int ps_cmd_validate(int argc, char **argv)
{
    static const struct option opts[] = {
        {"baseline", required_argument, NULL, 'b'},
        {"current", required_argument, NULL, 'c'},
        {"point", required_argument, NULL, 'p'},
        {"baseline-point", required_argument, NULL, 'B'},
        {"current-point", required_argument, NULL, 'C'},
        {"config", required_argument, NULL, 'f'},
        {"json", required_argument, NULL, 'j'},
        {"html", required_argument, NULL, 'H'},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *base = NULL, *cur = NULL, *config = NULL, *json_out = NULL, *html_out = NULL;
    const char *bpoint = "cleaned", *cpoint = "cleaned";
    int quiet = 0, c;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, PS_OPT_QUIET "qh", opts, NULL)) != -1) {
        switch (c) {
        case 'b': base = optarg; break;
        case 'c': cur = optarg; break;
        case 'p': bpoint = cpoint = optarg; break;
        case 'B': bpoint = optarg; break;
        case 'C': cpoint = optarg; break;
        case 'f': config = optarg; break;
        case 'j': json_out = optarg; break;
        case 'H': html_out = optarg; break;
        case 'q': quiet = 1; break;
        case 'h': fputs(USAGE, stdout); return PS_EXIT_OK;
        default:
            ps_opt_error("validate", c, argv, opts);
            return PS_EXIT_USAGE;
        }
    }
    if (!base || !cur || optind < argc) {
        fputs(optind < argc ? "pairshard validate: unexpected argument\n"
                            : "pairshard validate: needs --baseline and --current (files or "
                              "shard-set directories)\n",
              stderr);
        return PS_EXIT_USAGE;
    }
    int bi = point_index(bpoint), ci = point_index(cpoint);
    if (bi < 0 || ci < 0) {
        fprintf(stderr, "pairshard validate: unknown point '%s' (raw, cleaned or tokenized)\n",
                bi < 0 ? bpoint : cpoint);
        return PS_EXIT_USAGE;
    }
    ps_error perr;
    const ps_path_use outs[] = {{"--json", json_out}, {"--html", html_out}};
    const ps_path_use ins[] = {{"--baseline", base}, {"--current", cur}, {"--config", config}};
    if (ps_outputs_check(outs, 2, ins, 3, &perr)) {
        fprintf(stderr, "pairshard validate: %s\n", perr.message);
        return PS_EXIT_USAGE;
    }
    int status = PS_EXIT_USAGE;
    ps_vconfig *cfg = ps_vconfig_new();
    ps_vstats *A = NULL, *B = NULL;
    ps_vreport *rep = NULL;
    char *js = NULL, *sum = NULL, *html = NULL;
    if (!cfg) {
        fputs("pairshard validate: out of memory\n", stderr);
        goto out;
    }
    if (config && load_config(cfg, config))
        goto out;
    if (!(A = load_point(base, bi, bpoint)) || !(B = load_point(cur, ci, cpoint)))
        goto out;
    ps_error err;
    ps_error_clear(&err);
    if (ps_validate_compare(cfg, A, B, &rep, &err)) {
        fprintf(stderr, "pairshard validate: %s\n", err.message);
        goto out;
    }
    json_t *jr = ps_vreport_object(rep);
    js = ps_vreport_text(jr);
    sum = ps_vreport_summary(rep);
    if (!js || !sum) {
        json_decref(jr);
        fputs("pairshard validate: out of memory\n", stderr);
        goto out;
    }
    html = html_out ? ps_report_html(jr) : NULL;
    json_decref(jr);
    if (json_out && write_text(json_out, js))
        goto out;
    if (html_out) {
        if (!html) {
            fputs("pairshard validate: cannot render report.html\n", stderr);
            goto out;
        }
        if (write_text(html_out, html))
            goto out;
    }
    if (!quiet)
        fputs(sum, stdout);
    status = strcmp(ps_vreport_verdict(rep), "fail") ? PS_EXIT_OK : PS_EXIT_FAIL;
out:
    free(js);
    free(sum);
    free(html);
    ps_vreport_free(rep);
    ps_vstats_free(A);
    ps_vstats_free(B);
    ps_vconfig_free(cfg);
    return status;
}
