/* pairshard build: ingest → clean → tokenize → bucket → LMDB shards. */
#include "cli/clean_args.h"
#include "cli/commands.h"
#include "cli/signals.h"
#include "cli/tok_args.h"
#include "shards/build.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char USAGE[] =
    "usage: pairshard build --vocab FILE -o DIR [options] INPUT...\n"
    "\n"
    "Ingests, cleans and tokenizes question/SQL pairs and writes them as\n"
    "length-bucketed, zstd-compressed LMDB shards with a manifest (docs/FORMAT.md).\n"
    "The set is published atomically: DIR holds the old set or the new one, never\n"
    "a half. The same inputs and options give byte-identical files whatever\n"
    "--threads is.\n"
    "\n"
    "Output and tokenizer:\n"
    "  -o, --output DIR           the shard set to (re)place: a missing or empty\n"
    "                             directory, or an existing shard set (see below)\n"
    "      --force                replace DIR even when it is a directory of other\n"
    "                             files: DELETES THEM (never a link, a non-directory,\n"
    "                             or a DIR holding an input or the current directory)\n"
    "      --vocab FILE           BERT vocab.txt (lowercasing on unless --no-lowercase)\n"
    "      --tokenizer-json FILE  a HuggingFace tokenizer.json (WordPiece) instead\n"
    "      --lowercase, --no-lowercase\n"
    "      --max-length N         truncate pairs to N tokens, longest_first (512; 0 = none)\n"
    "\n"
    "Shards:\n"
    "      --shards N             number of shard files (1); each holds an open file\n"
    "                             while the build runs: N + 9 must fit in ulimit -n\n"
    "      --buckets LIST|auto    inclusive token-length bounds, e.g. 16,32,64,128; or\n"
    "                             auto (default): chosen from the lengths to minimise padding\n"
    "      --auto-buckets K       how many buckets auto chooses (8)\n"
    "      --bucket-multiple M    auto bounds are multiples of M (8), but the last\n"
    "      --block-records N      records per compressed block (128)\n"
    "      --zstd-level L         zstd level (3)\n"
    "\n"
    "Running:\n"
    "      --threads T            worker threads (default: the online CPUs)\n"
    "      --part K/N|auto        build the K-th (0-based) of N deterministic slices;\n"
    "                             auto reads SLURM_ARRAY_TASK_ID/_COUNT (less _MIN) or\n"
    "                             JOB_COMPLETION_INDEX with PAIRSHARD_PART_COUNT;\n"
    "                             'pairshard merge' joins the parts\n"
    "      --config FILE          a JSON object holding any of these options by long\n"
    "                             name (and \"inputs\"); flags given here win\n"
    "      --no-gate              publish even when a validation check fails\n"
    "  -q, --quiet                no progress or summary on stderr\n"
    "\n"
    "%s"
    "\n"
    "Before writing shards the build checks the label and length distributions\n"
    "before and after cleaning (docs/REPORT.md; thresholds in the config's\n"
    "\"validate\" member). DIR gets report.json, report.html, stats.json,\n"
    "rejects.jsonl and duplicates.jsonl; the manifest holds the accounting\n"
    "(records_in = kept + rejected + duplicates).\n"
    "\n"
    "DIR is replaced only when it is missing, empty or a shard set (a pairshard\n"
    "manifest.json); anything else -- a directory of other files, a symbolic link,\n"
    "a file, a FIFO, a device, a directory holding an input -- is refused with\n"
    "exit status 2 and left untouched. SIGINT, SIGTERM or SIGHUP stop the build:\n"
    "its staging directory is removed and DIR is unchanged (or, when the signal\n"
    "came after the swap, the complete new set); a second signal kills at once.\n"
    "Exit status: 0 built, 1 a check failed (nothing is published; the report is\n"
    "written beside DIR as DIR.report.json and DIR.report.html), 2 usage or input\n"
    "error (nothing is published), 128+N stopped by signal N (130 SIGINT, 143\n"
    "SIGTERM, 129 SIGHUP).\n";

enum {
    O_VOCAB = 300, O_TOKJSON, O_LOWER, O_NOLOWER, O_MAXLEN, O_SHARDS, O_BUCKETS, O_AUTOB,
    O_MULT, O_BLOCK, O_LEVEL, O_THREADS, O_PART, O_CONFIG, O_NOGATE, O_FORCE
};

static const struct option OWN_OPTS[] = {
    {"output", required_argument, NULL, 'o'},
    {"quiet", no_argument, NULL, 'q'},
    {"help", no_argument, NULL, 'h'},
    {"vocab", required_argument, NULL, O_VOCAB},
    {"tokenizer-json", required_argument, NULL, O_TOKJSON},
    {"lowercase", no_argument, NULL, O_LOWER},
    {"no-lowercase", no_argument, NULL, O_NOLOWER},
    {"max-length", required_argument, NULL, O_MAXLEN},
    {"shards", required_argument, NULL, O_SHARDS},
    {"buckets", required_argument, NULL, O_BUCKETS},
    {"auto-buckets", required_argument, NULL, O_AUTOB},
    {"bucket-multiple", required_argument, NULL, O_MULT},
    {"block-records", required_argument, NULL, O_BLOCK},
    {"zstd-level", required_argument, NULL, O_LEVEL},
    {"threads", required_argument, NULL, O_THREADS},
    {"part", required_argument, NULL, O_PART},
    {"config", required_argument, NULL, O_CONFIG},
    {"no-gate", no_argument, NULL, O_NOGATE},
    {"force", no_argument, NULL, O_FORCE},
};
#define N_OWN (sizeof OWN_OPTS / sizeof OWN_OPTS[0])

typedef struct build_args {
    ps_build_config cfg;
    ps_clean_args clean;
    ps_tok_source tok;
    const char *buckets_text;
    const char *part_text;
    const char **inputs;
    size_t n_inputs, inputs_cap;
    int quiet;
} build_args;

static int parse_num(const char *opt, const char *v, size_t lo, size_t hi, size_t *out)
{
    char *end;
    errno = 0;
    long long x = v ? strtoll(v, &end, 10) : -1;
    if (!v || errno || end == v || *end || x < (long long)lo || (unsigned long long)x > hi) {
        fprintf(stderr, "pairshard build: --%s needs an integer in [%zu, %zu], got '%s'\n", opt,
                lo, hi, v ? v : "");
        return -1;
    }
    *out = (size_t)x;
    return 0;
}

static int parse_buckets(build_args *a, const char *v)
{
    a->buckets_text = v;
    a->cfg.n_buckets = 0;
    if (strcmp(v, "auto") == 0)
        return 0;
    const char *p = v;
    while (*p) {
        char *end;
        errno = 0;
        unsigned long x = strtoul(p, &end, 10);
        if (errno || end == p || x == 0 || x > 1u << 20 || (*end && *end != ',') ||
            a->cfg.n_buckets == PS_BUILD_MAX_BUCKETS) {
            fprintf(stderr,
                    "pairshard build: --buckets wants 'auto' or up to %d increasing bounds "
                    "like 16,32,64,128, got '%s'\n",
                    PS_BUILD_MAX_BUCKETS, v);
            return -1;
        }
        a->cfg.buckets[a->cfg.n_buckets++] = (uint32_t)x;
        p = *end ? end + 1 : end;
    }
    return 0;
}

static int parse_part(build_args *a, const char *v)
{
    a->part_text = v;
    unsigned long k, n;
    if (strcmp(v, "auto") == 0) {
        const char *id = getenv("SLURM_ARRAY_TASK_ID"), *cnt = getenv("SLURM_ARRAY_TASK_COUNT");
        const char *min = getenv("SLURM_ARRAY_TASK_MIN");
        if (id && cnt) {
            k = strtoul(id, NULL, 10) - (min ? strtoul(min, NULL, 10) : 0);
            n = strtoul(cnt, NULL, 10);
        } else if ((id = getenv("JOB_COMPLETION_INDEX")) && (cnt = getenv("PAIRSHARD_PART_COUNT"))) {
            k = strtoul(id, NULL, 10);
            n = strtoul(cnt, NULL, 10);
        } else {
            fputs("pairshard build: --part auto needs SLURM_ARRAY_TASK_ID and "
                  "SLURM_ARRAY_TASK_COUNT, or JOB_COMPLETION_INDEX and PAIRSHARD_PART_COUNT\n",
                  stderr);
            return -1;
        }
    } else {
        char *end;
        k = strtoul(v, &end, 10);
        if (end == v || *end != '/' || (n = strtoul(end + 1, &end, 10), *end)) {
            fprintf(stderr, "pairshard build: --part wants K/N or auto, got '%s'\n", v);
            return -1;
        }
    }
    if (n == 0 || k >= n) {
        fprintf(stderr, "pairshard build: --part %lu/%lu: need 0 <= K < N\n", k, n);
        return -1;
    }
    a->cfg.part_index = k;
    a->cfg.part_count = n;
    return 0;
}

static int add_input(build_args *a, const char *path)
{
    if (a->n_inputs == a->inputs_cap) {
        a->inputs_cap = a->inputs_cap ? a->inputs_cap * 2 : 16;
        const char **ni = realloc(a->inputs, a->inputs_cap * sizeof *ni);
        if (!ni)
            return -1;
        a->inputs = ni;
    }
    a->inputs[a->n_inputs++] = path;
    return 0;
}

/* Applies one option by long name; `v` NULL for flags. Returns 0 or -1. */
static int apply(build_args *a, const char *name, const char *v)
{
    int r = ps_clean_args_apply(&a->clean, "build", name, v);
    if (r)
        return r < 0 ? -1 : 0;
    char n[64];
    size_t len = strlen(name);
    if (len >= sizeof n) {
        fprintf(stderr, "pairshard build: unknown option '%s'\n", name);
        return -1;
    }
    for (size_t i = 0; i <= len; i++)
        n[i] = name[i] == '_' ? '-' : name[i];
    ps_build_config *c = &a->cfg;
    size_t x;
    if (!strcmp(n, "output")) c->out_dir = v;
    else if (!strcmp(n, "quiet")) a->quiet = 1;
    else if (!strcmp(n, "no-gate")) c->no_gate = 1;
    else if (!strcmp(n, "force")) c->force = 1;
    else if (!strcmp(n, "vocab")) a->tok.vocab = v;
    else if (!strcmp(n, "tokenizer-json")) a->tok.tokenizer_json = v;
    else if (!strcmp(n, "lowercase")) a->tok.lowercase = 1;
    else if (!strcmp(n, "no-lowercase")) a->tok.lowercase = 0;
    else if (!strcmp(n, "max-length")) return parse_num(n, v, 0, 1u << 20, &c->max_length);
    else if (!strcmp(n, "shards")) return parse_num(n, v, 1, 100000, &c->shards);
    else if (!strcmp(n, "buckets")) return parse_buckets(a, v ? v : "");
    else if (!strcmp(n, "auto-buckets")) return parse_num(n, v, 1, PS_BUILD_MAX_BUCKETS, &c->auto_buckets);
    else if (!strcmp(n, "bucket-multiple")) return parse_num(n, v, 1, 4096, &c->bucket_multiple);
    else if (!strcmp(n, "block-records")) return parse_num(n, v, 1, 1u << 20, &c->block_records);
    else if (!strcmp(n, "zstd-level")) {
        if (parse_num(n, v, 1, 22, &x))
            return -1;
        c->zstd_level = (int)x;
    } else if (!strcmp(n, "threads")) return parse_num(n, v, 1, 1024, &c->threads);
    else if (!strcmp(n, "part")) return parse_part(a, v ? v : "");
    else {
        fprintf(stderr, "pairshard build: unknown option '%s'\n", name);
        return -1;
    }
    return 0;
}

/* Applies a --config file: every key is an option's long name. */
static int apply_config(build_args *a, json_t *root, const char *path)
{
    if (!json_is_object(root)) {
        fprintf(stderr, "pairshard build: %s: the config must be a JSON object\n", path);
        return -1;
    }
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v)
    {
        if (!strcmp(key, "inputs")) {
            size_t i;
            json_t *e;
            if (!json_is_array(v))
                goto bad;
            json_array_foreach(v, i, e)
            {
                if (!json_is_string(e) || add_input(a, json_string_value(e)))
                    goto bad;
            }
            continue;
        }
        if (!strcmp(key, "config"))
            goto bad;
        if (!strcmp(key, "validate")) { /* checked by the validation stage */
            if (!json_is_object(v))
                goto bad;
            a->cfg.validate_json = v;
            continue;
        }
        char num[64];
        const char *text;
        if (json_is_string(v)) {
            text = json_string_value(v);
        } else if (json_is_integer(v)) {
            snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
            text = num;
        } else if (json_is_true(v)) {
            text = NULL;
        } else if (json_is_false(v)) {
            continue;
        } else if (json_is_array(v)) { /* a list of bounds */
            size_t i, off = 0;
            json_t *e;
            static char list[PS_BUILD_MAX_BUCKETS * 12];
            list[0] = '\0';
            json_array_foreach(v, i, e)
            {
                if (!json_is_integer(e) || off + 24 > sizeof list)
                    goto bad;
                off += (size_t)snprintf(list + off, sizeof list - off, "%s%" JSON_INTEGER_FORMAT,
                                        i ? "," : "", json_integer_value(e));
            }
            text = list;
        } else {
            goto bad;
        }
        if (apply(a, key, text))
            return -1;
        continue;
    bad:
        fprintf(stderr, "pairshard build: %s: bad value for \"%s\"\n", path, key);
        return -1;
    }
    return 0;
}

/* The effective configuration, recorded in the manifest: everything that
 * decides the output, nothing that does not (threads, output path). */
static char *effective_config(const build_args *a)
{
    const ps_build_config *c = &a->cfg;
    const ps_clean_options *o = &c->clean;
    static const char *const norm[] = {"nfkc", "nfc", "none"};
    static const char *const fmt[] = {"auto", "jsonl", "json", "csv", "tsv"};
    json_t *inputs = json_array();
    for (size_t i = 0; i < c->n_inputs; i++)
        json_array_append_new(inputs, json_string(c->inputs[i]));
    json_t *buckets = json_array();
    for (size_t i = 0; i < c->n_buckets; i++)
        json_array_append_new(buckets, json_integer(c->buckets[i]));
    char rules_sha[65] = "";
    if (c->rules_path)
        ps_sha256_file(c->rules_path, rules_sha, NULL, NULL);
    json_t *clean = json_pack(
        "{sssssssssssssssssbsbsbsIsIss?ss?}", "format", fmt[o->format], "question_field",
        o->question_field ? o->question_field : "question", "sql_field",
        o->sql_field ? o->sql_field : "sql|query", "label_field",
        o->label_field ? o->label_field : "label", "id_field", o->id_field ? o->id_field : "id",
        "utf8", o->utf8_policy == PS_UTF8_REPLACE ? "replace" : "reject", "normalize",
        norm[o->question_normalization], "sql_normalize", norm[o->sql_normalization],
        "strip_joiners", o->strip_joiners, "sql_backslash_escapes", o->sql_backslash_escapes,
        "keep_duplicates", o->keep_duplicates, "max_record_bytes",
        (json_int_t)o->max_record_bytes, "max_field_bytes", (json_int_t)o->max_field_bytes,
        "rules", c->rules_path, "rules_sha256", c->rules_path ? rules_sha : NULL);
    json_t *tokenizer = json_pack("{sssssssI}", "kind", c->vocab_kind, "file", c->vocab_path,
                                  "lowercase",
                                  a->tok.lowercase < 0 ? "default" : a->tok.lowercase ? "yes" : "no",
                                  "max_length", (json_int_t)c->max_length);
    json_t *bk = c->n_buckets ? json_incref(buckets) : json_string("auto");
    json_t *shards = json_pack("{sIsosIsIsIsI}", "count", (json_int_t)c->shards, "buckets",
                               bk, "auto_buckets",
                               (json_int_t)c->auto_buckets, "bucket_multiple",
                               (json_int_t)c->bucket_multiple, "block_records",
                               (json_int_t)c->block_records, "zstd_level",
                               (json_int_t)c->zstd_level);
    json_t *validate = c->validate_json ? json_deep_copy(c->validate_json) : json_object();
    json_t *j = json_pack("{sosososososb}", "inputs", inputs, "clean", clean, "tokenizer",
                          tokenizer, "shards", shards, "validate", validate, "gate", !c->no_gate);
    json_decref(buckets);
    if (!j)
        return NULL;
    char *text = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(j);
    return text;
}

int ps_cmd_build(int argc, char **argv)
{
    /* First: a signal during the set-up must not kill a build that is
     * about to create its staging directory. */
    ps_cli_signals_install();
    build_args a;
    memset(&a, 0, sizeof a);
    ps_build_config_init(&a.cfg);
    ps_clean_args_init(&a.clean);
    a.tok.lowercase = -1;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    a.cfg.threads = cpus > 0 ? (size_t)cpus : 1;

    struct option longopts[N_OWN + 32];
    memcpy(longopts, OWN_OPTS, sizeof OWN_OPTS);
    memcpy(longopts + N_OWN, ps_clean_longopts, ps_clean_longopts_count * sizeof *longopts);
    memset(&longopts[N_OWN + ps_clean_longopts_count], 0, sizeof *longopts);

    /* First pass: --help and --config, so that flags can win over it. */
    const char *config_path = NULL;
    int c, idx, status = PS_EXIT_USAGE;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "o:qh", longopts, &idx)) != -1) {
        if (c == 'h') {
            printf(USAGE, ps_clean_args_help);
            return PS_EXIT_OK;
        }
        if (c == O_CONFIG)
            config_path = optarg;
    }
    opterr = 1;
    json_t *config = NULL;
    ps_tokenizer *tok = NULL;
    char *effective = NULL;
    if (config_path) {
        json_error_t je;
        config = json_load_file(config_path, JSON_REJECT_DUPLICATES, &je);
        if (!config) {
            fprintf(stderr, "pairshard build: %s:%d:%d: %s\n", config_path, je.line, je.column,
                    je.text);
            goto done;
        }
        if (apply_config(&a, config, config_path))
            goto done;
    }
    optind = 0;
    while ((c = getopt_long(argc, argv, "o:qh", longopts, &idx)) != -1) {
        if (c == '?') {
            fputs("pairshard build: see 'pairshard build --help'\n", stderr);
            goto done;
        }
        if (c == O_CONFIG)
            continue;
        const char *name = c == 'o' ? "output" : c == 'q' ? "quiet" : longopts[idx].name;
        if (apply(&a, name, optarg))
            goto done;
    }
    for (int i = optind; i < argc; i++)
        if (add_input(&a, argv[i]))
            goto done;
    ps_clean_args_finish(&a.clean);
    if (!a.cfg.out_dir || a.n_inputs == 0 || (!a.tok.vocab && !a.tok.tokenizer_json)) {
        fputs("pairshard build: needs --vocab (or --tokenizer-json), -o DIR and INPUT...\n",
              stderr);
        goto done;
    }
    if (ps_tok_source_load("build", &a.tok, &tok))
        goto done;
    a.cfg.inputs = a.inputs;
    a.cfg.n_inputs = a.n_inputs;
    a.cfg.clean = a.clean.opts;
    a.cfg.rules_path = a.clean.rules_path;
    a.cfg.tokenizer = tok;
    a.cfg.vocab_path = a.tok.tokenizer_json ? a.tok.tokenizer_json : a.tok.vocab;
    a.cfg.vocab_kind = a.tok.tokenizer_json ? "tokenizer.json" : "vocab.txt";
    a.cfg.progress = !a.quiet && isatty(STDERR_FILENO);
    effective = effective_config(&a);
    a.cfg.config_json = effective;

    ps_error err;
    ps_error_clear(&err);
    ps_build_summary sum;
    memset(&sum, 0, sizeof sum);
    a.cfg.cancel = &ps_cli_stop_signal;
    int rc = ps_build_run(&a.cfg, &sum, &err);
    if (ps_cli_stop_signal) {
        fprintf(stderr, "pairshard build: stopped by signal %d: %s\n", (int)ps_cli_stop_signal,
                rc ? "nothing was published" : "the new set had already been published");
        free(sum.report_summary);
        status = ps_cli_signal_status(ps_cli_stop_signal);
        goto done;
    }
    if (rc) {
        fprintf(stderr, "pairshard build: %s\n", err.code ? err.message : ps_strerror(rc));
        goto done;
    }
    if (sum.report_summary && (!a.quiet || sum.gate_failed))
        fputs(sum.report_summary, stderr);
    if (sum.gate_failed) {
        fprintf(stderr,
                "pairshard build: validation failed: nothing was published; report in %s "
                "(--no-gate publishes anyway)\n",
                sum.report_path);
        free(sum.report_summary);
        status = PS_EXIT_FAIL;
        goto done;
    }
    free(sum.report_summary);
    status = PS_EXIT_OK;
    if (!a.quiet) {
        fprintf(stderr,
                "pairshard build: %llu records in = %llu kept + %llu rejected + %llu duplicates\n"
                "pairshard build: %zu shard(s), %zu labels, %llu tokens, buckets",
                (unsigned long long)sum.counts.records_in, (unsigned long long)sum.counts.kept,
                (unsigned long long)sum.counts.rejected, (unsigned long long)sum.counts.duplicates,
                a.cfg.shards, sum.n_labels, (unsigned long long)sum.tokens);
        for (size_t i = 0; i < sum.n_buckets; i++)
            fprintf(stderr, "%s%u", i ? "," : " ", sum.buckets[i]);
        fprintf(stderr, "; %.1f MB on disk; %.2f s (%.0f records/s) -> %s\n",
                sum.bytes_on_disk / 1e6, sum.seconds,
                sum.seconds > 0 ? sum.counts.records_in / sum.seconds : 0.0, a.cfg.out_dir);
    }
done:
    free(effective);
    ps_tokenizer_free(tok);
    json_decref(config);
    free(a.inputs);
    return status;
}
