/* pairshard build: ingest → clean → tokenize → bucket → LMDB shards. */
#include "cli/args.h"
#include "cli/build_sources.h"
#include "cli/clean_args.h"
#include "cli/commands.h"
#include "cli/leak_args.h"
#include "cli/opt_error.h"
#include "cli/profile.h"
#include "cli/signals.h"
#include "cli/tok_args.h"
#include "common/json_where.h"
#include "common/nearest.h"
#include "common/parse_num.h"
#include "pipeline/beside.h"
#include "pipeline/build.h"
#include "report/report.h"

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
    "      --tokenizer-json FILE  a model's HuggingFace tokenizer.json instead (BPE,\n"
    "                             Unigram, WordPiece, WordLevel: see 'tokenize --help')\n"
    "      --lowercase, --no-lowercase\n"
    "      --max-length N         truncate pairs to N tokens, longest_first (512; 0 = none);\n"
    "                             causal: the most tokens of a record, seq2seq: of its\n"
    "                             source (over it: shortened schema, else rejected too_long)\n"
    "      --layout L             what a record holds (docs/BUILD.md, \"Layouts\"):\n"
    "                             pair (default): one encoder input, [CLS] A [SEP] B [SEP];\n"
    "                             causal: prefix (BOS) + prompt + completion, for\n"
    "                             decoders; seq2seq: source (prompt) and target\n"
    "                             (completion), each with the post-processor, for T5.\n"
    "                             causal and seq2seq never truncate\n"
    "      --max-target-length N  seq2seq: the most tokens of a target (--max-length);\n"
    "                             a longer one is rejected too_long\n"
    "      --max-prompt-length N  the budget of a prompt with a schema (default: 3/4 of\n"
    "                             --max-length; seq2seq: all of it): over it, the schema\n"
    "                             keeps the tables and columns the question names best\n"
    "                             (never read from the SQL: serving selects the same)\n"
    "      --reject-lost-schema   reject (schema_lost_gold) records whose selected schema\n"
    "                             lacks a table their SQL uses\n"
    "      --no-append-eos        causal: do not end a completion with the tokenizer's\n"
    "                             EOS (by default one is appended unless the completion\n"
    "                             ends in a special token of its own, e.g. <|im_end|>)\n"    "      --difficulty-field NAME  the records' own difficulty (BIRD: difficulty), whose\n"
    "                             values are the hardness levels the report compares\n"
    "                             before and after cleaning (default: each SQL's Spider\n"
    "                             class, easy/medium/hard/extra; no field: \"missing\")\n"
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
    "      --threads T            worker threads (default: the online CPUs); 1: one\n"
    "                             thread does all the work\n"
    "      --part K/N|auto        build the K-th (0-based) of N deterministic slices;\n"
    "                             auto reads SLURM_ARRAY_TASK_ID/_COUNT (less _MIN) or\n"
    "                             JOB_COMPLETION_INDEX with PAIRSHARD_PART_COUNT (plain\n"
    "                             whole numbers: an empty or bad one stops the build);\n"
    "                             'pairshard merge' joins the parts\n"
    "      --config FILE          a JSON object holding any of these options by long\n"
    "                             name (and \"inputs\"); flags given here win; its\n"
    "                             relative paths are relative to its folder. Its\n"
    "                             \"sources\" builds a mixture: each source's name,\n"
    "                             inputs, fields, schemas, template, turns apart\n"
    "                             (docs/BUILD.md, \"Mixtures\")\n"
    "      --no-gate              publish even when a validation check fails\n"
    "  -q, --quiet                no progress or summary on stderr\n"
    "      --profile              print where the time went: per phase, per thread,\n"
    "                             and the serial fraction (docs/BUILD.md)\n"
    "\n"
    "Leakage (docs/REPORT.md, \"Leakage\"):\n" PS_LEAK_DROP_HELP
    "\n"
    "%s"
    "\n"
    "Before writing shards the build checks the label, length and hardness\n"
    "distributions before and after cleaning (docs/REPORT.md; thresholds in the config's\n"
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
    "written beside DIR as DIR.report.json and DIR.report.html, the rejected records\n"
    "as DIR.rejects.jsonl), 2 usage or input error (nothing is published), such as\n"
    "a field named by a --*-field flag that no record of an input has, 128+N\n"
    "stopped by signal N (130 SIGINT, 143 SIGTERM, 129 SIGHUP).\n";

enum {
    O_VOCAB = 300, O_TOKJSON, O_LOWER, O_NOLOWER, O_MAXLEN, O_SHARDS, O_BUCKETS, O_AUTOB,
    O_MULT, O_BLOCK, O_LEVEL, O_THREADS, O_PART, O_CONFIG, O_NOGATE, O_FORCE, O_PROFILE,
    O_LAYOUT, O_MAXTGT, O_MAXPROMPT, O_REJLOST, O_NOEOS, O_LEAK,
    O_DIFFICULTY = O_LEAK + PS_LEAK_OPTS /* the leakage options take PS_LEAK_OPTS values */
};

/* Besides -o, -q, -h and the cleaning options (ps_clean_longopts_merge). */
static const struct option OWN_OPTS[] = {
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
    {"profile", no_argument, NULL, O_PROFILE},
    {"layout", required_argument, NULL, O_LAYOUT},
    {"max-target-length", required_argument, NULL, O_MAXTGT},
    {"max-prompt-length", required_argument, NULL, O_MAXPROMPT},
    {"reject-lost-schema", no_argument, NULL, O_REJLOST},
    {"no-append-eos", no_argument, NULL, O_NOEOS},
    PS_LEAK_LONGOPTS(O_LEAK),
    {"difficulty-field", required_argument, NULL, O_DIFFICULTY},
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
    int profile;            /* --profile: where the time went, on stderr */
    char **owned;           /* config paths resolved against its folder */
    size_t n_owned;
    ps_leak_config leak;    /* --holdout and the leakage options */
    ps_leak_check lc;
    json_t *sources_spec;   /* the config's "sources" (borrowed), or NULL */
    const char *config_path;
    ps_cli_sources srcs;    /* loaded from sources_spec */
} build_args;

static int parse_num(const char *opt, const char *v, size_t lo, size_t hi, size_t *out)
{
    return ps_args_size("build", opt, v, lo, hi, out);
}

static int parse_layout(ps_build_config *c, const char *v)
{
    int l = ps_layout_parse(v);
    if (l < 0) {
        fprintf(stderr, "pairshard build: --layout wants pair, causal or seq2seq, got '%s'\n",
                v ? v : "");
        return -1;
    }
    c->layout = l;
    return 0;
}

static int parse_buckets(build_args *a, const char *v)
{
    a->buckets_text = v;
    a->cfg.n_buckets = 0;
    if (strcmp(v, "auto") == 0)
        return 0;
    char bound[32];
    for (const char *p = v;; p++) {
        size_t len = strcspn(p, ",");
        uint64_t x;
        if (len >= sizeof bound || a->cfg.n_buckets == PS_BUILD_MAX_BUCKETS)
            goto bad;
        memcpy(bound, p, len);
        bound[len] = '\0';
        if (ps_parse_u64(bound, 1, 1u << 20, &x) != PS_NUM_OK)
            goto bad;
        a->cfg.buckets[a->cfg.n_buckets++] = (uint32_t)x;
        p += len;
        if (!*p)
            return 0;
    }
bad:
    fprintf(stderr,
            "pairshard build: --buckets wants 'auto' or up to %d increasing bounds "
            "like 16,32,64,128 (each 1..%u), got '%s'\n",
            PS_BUILD_MAX_BUCKETS, 1u << 20, v);
    return -1;
}

/* How many parts a build may be split into. */
#define PART_COUNT_MAX ((uint64_t)1 << 20)

/* --part auto: K and N from a Slurm array task or a Kubernetes indexed
 * Job. A variable that is set but not a number stops the build: reading
 * it as 0 would have every task build part 0. */
static int part_from_env(uint64_t *k, uint64_t *n)
{
    uint64_t id, min = 0;
    int r;
    if (getenv("SLURM_ARRAY_TASK_ID") && getenv("SLURM_ARRAY_TASK_COUNT")) {
        if (ps_args_env_u64("build", "SLURM_ARRAY_TASK_COUNT", 1, PART_COUNT_MAX, n) ||
            ps_args_env_u64("build", "SLURM_ARRAY_TASK_MIN", 0, UINT32_MAX, &min) < 0)
            return -1;
        r = ps_args_env_u64("build", "SLURM_ARRAY_TASK_ID", min, min + *n - 1, &id);
        *k = id - min;
        return r ? -1 : 0;
    }
    if (getenv("JOB_COMPLETION_INDEX") && getenv("PAIRSHARD_PART_COUNT")) {
        if (ps_args_env_u64("build", "PAIRSHARD_PART_COUNT", 1, PART_COUNT_MAX, n) ||
            ps_args_env_u64("build", "JOB_COMPLETION_INDEX", 0, *n - 1, k))
            return -1;
        return 0;
    }
    fputs("pairshard build: --part auto needs SLURM_ARRAY_TASK_ID and "
          "SLURM_ARRAY_TASK_COUNT, or JOB_COMPLETION_INDEX and PAIRSHARD_PART_COUNT\n",
          stderr);
    return -1;
}

/* --part K/N: N first, so K's range can be told as 0..N-1. */
static int part_from_text(const char *v, uint64_t *k, uint64_t *n)
{
    const char *slash = strchr(v, '/');
    char kt[32];
    ps_num_status st = PS_NUM_JUNK;
    char why[200];
    if (!slash || (size_t)(slash - v) >= sizeof kt) {
        fprintf(stderr, "pairshard build: --part: '%s' is not K/N or auto\n", v);
        return -1;
    }
    memcpy(kt, v, (size_t)(slash - v));
    kt[slash - v] = '\0';
    if ((st = ps_parse_u64(slash + 1, 1, PART_COUNT_MAX, n)) != PS_NUM_OK) {
        ps_num_explain_u64(why, sizeof why, st, slash + 1, 1, PART_COUNT_MAX);
        fprintf(stderr, "pairshard build: --part: '%s': N %s\n", v, why);
        return -1;
    }
    if ((st = ps_parse_u64(kt, 0, *n - 1, k)) != PS_NUM_OK) {
        ps_num_explain_u64(why, sizeof why, st, kt, 0, *n - 1);
        fprintf(stderr, "pairshard build: --part: '%s': K %s; need 0 <= K < N\n", v, why);
        return -1;
    }
    return 0;
}

static int parse_part(build_args *a, const char *v)
{
    a->part_text = v;
    uint64_t k, n;
    if (strcmp(v, "auto") == 0 ? part_from_env(&k, &n) : part_from_text(v, &k, &n))
        return -1;
    a->cfg.part_index = (size_t)k;
    a->cfg.part_count = (size_t)n;
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
    static const struct option leak[] = {PS_LEAK_LONGOPTS(0)};
    for (size_t i = 0; i < sizeof leak / sizeof leak[0]; i++) {
        size_t ln = strlen(leak[i].name);
        bool same = strlen(name) == ln;
        for (size_t k = 0; same && k < ln; k++)
            same = (name[k] == '_' ? '-' : name[k]) == leak[i].name[k];
        if (same)
            return ps_leak_args_apply(&a->leak, "build", leak[i].val, v);
    }
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
    else if (!strcmp(n, "profile")) a->profile = 1;
    else if (!strcmp(n, "no-gate")) c->no_gate = 1;
    else if (!strcmp(n, "force")) c->force = 1;
    else if (!strcmp(n, "vocab")) a->tok.vocab = v;
    else if (!strcmp(n, "tokenizer-json")) a->tok.tokenizer_json = v;
    else if (!strcmp(n, "lowercase")) a->tok.lowercase = 1;
    else if (!strcmp(n, "no-lowercase")) a->tok.lowercase = 0;
    else if (!strcmp(n, "max-length")) return parse_num(n, v, 0, 1u << 20, &c->max_length);
    else if (!strcmp(n, "max-target-length"))
        return parse_num(n, v, 1, 1u << 20, &c->max_target_length);
    else if (!strcmp(n, "max-prompt-length"))
        return parse_num(n, v, 1, 1u << 20, &c->max_prompt_length);
    else if (!strcmp(n, "reject-lost-schema")) c->reject_lost_schema = 1;
    else if (!strcmp(n, "layout")) return parse_layout(c, v);
    else if (!strcmp(n, "no-append-eos")) c->no_append_eos = 1;
    else if (!strcmp(n, "difficulty-field")) c->difficulty_field = v;
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

/* Options whose values are paths: in a config file, relative ones are
 * relative to the file's folder, so a config works from any directory. */
static bool is_path_option(const char *key)
{
    static const char *const P[] = {"output", "vocab", "tokenizer-json", "tokenizer_json",
                                    "rules", "schema", "databases"};
    for (size_t i = 0; i < sizeof P / sizeof P[0]; i++)
        if (!strcmp(key, P[i]))
            return true;
    return false;
}

/* `value` resolved against the config's folder (kept in a->owned). */
static const char *config_path_value(build_args *a, const char *config, const char *value)
{
    return ps_cli_config_path(&a->owned, &a->n_owned, config, value);
}

/* Every key a config may hold: the options' long names (either '-' or
 * '_'), "inputs" and "validate". */
static bool config_key_known(const char *key, const struct option *opts, size_t n,
                             const char **nearest)
{
    char norm[64];
    snprintf(norm, sizeof norm, "%s", key);
    for (char *c = norm; *c; c++)
        *c = *c == '_' ? '-' : *c;
    const char *names[N_OWN + 48];
    size_t k = 0;
    names[k++] = "inputs";
    names[k++] = "validate";
    names[k++] = "sources";
    for (size_t i = 0; i < n && k < sizeof names / sizeof names[0]; i++)
        if (strcmp(opts[i].name, "config") != 0 && strcmp(opts[i].name, "help") != 0)
            names[k++] = opts[i].name;
    for (size_t i = 0; i < k; i++)
        if (!strcmp(norm, names[i]))
            return true;
    *nearest = ps_nearest_name(norm, names, k);
    return false;
}

/* Applies a --config file: every key is an option's long name. */
static int apply_config(build_args *a, json_t *root, const char *path)
{
    struct option known[N_OWN + PS_CLEAN_LONGOPTS_EXTRA];
    size_t nknown = ps_clean_longopts_merge(known, OWN_OPTS, N_OWN);
    if (!json_is_object(root)) {
        fprintf(stderr, "pairshard build: %s: the config must be a JSON object\n", path);
        return -1;
    }
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v)
    {
        const char *nearest = NULL;
        if (!config_key_known(key, known, nknown, &nearest)) {
            char sugg[80] = "";
            if (nearest) { /* in the key's own spelling: '_' if it used '_' */
                snprintf(sugg, sizeof sugg, "; did you mean \"%s\"?", nearest);
                for (char *c = sugg; strchr(key, '_') && *c; c++)
                    *c = *c == '-' ? '_' : *c;
            }
            fprintf(stderr, "pairshard build: %s: unknown key \"%s\"%s\n", path, key, sugg);
            return -1;
        }
        if (!strcmp(key, "inputs")) {
            size_t i;
            json_t *e;
            if (!json_is_array(v))
                goto bad;
            json_array_foreach(v, i, e)
            {
                const char *in = json_is_string(e) ? json_string_value(e) : NULL;
                if (!in || !(in = config_path_value(a, path, in)) || add_input(a, in))
                    goto bad;
            }
            continue;
        }
        if (!strcmp(key, "config"))
            goto bad;
        if (!strcmp(key, "schema") && json_is_array(v)) { /* several tables files */
            size_t i;
            json_t *e;
            json_array_foreach(v, i, e)
            {
                const char *f = json_is_string(e) ? json_string_value(e) : NULL;
                if (!f || !(f = config_path_value(a, path, f)))
                    goto bad;
                if (apply(a, key, f))
                    return -1;
            }
            continue;
        }
        if (!strcmp(key, "sources")) { /* a mixture: read once the options are known */
            a->sources_spec = v;
            a->config_path = path;
            continue;
        }
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
        if (text && (is_path_option(key) || ps_cli_template_file(key, text)) &&
            !(text = config_path_value(a, path, text)))
            goto bad;
        if (apply(a, key, text))
            return -1;
        continue;
    bad:
        fprintf(stderr, "pairshard build: %s: bad value for \"%s\"\n", path, key);
        return -1;
    }
    return 0;
}

/* The text-to-SQL options, or NULL when none is set. */
static json_t *text_to_sql_config(const ps_clean_args *c)
{
    const ps_clean_options *o = &c->opts;
    if (!c->n_schemas && !c->databases_dir && !c->template_name && !o->turns_path)
        return NULL;
    json_t *schemas = json_array();
    for (size_t i = 0; i < c->n_schemas; i++)
        json_array_append_new(schemas, json_string(c->schema_paths[i]));
    json_t *t = json_pack("{soss?ss?ss?ss?ss?ss?sbsbsI}", "schema", schemas, "databases",
                          c->databases_dir, "db_field", o->db_field, "template",
                          c->template_name, "turns", o->turns_path, "turn_question_field",
                          o->turn_question_field, "turn_sql_field", o->turn_sql_field,
                          "reject_invalid_sql", o->reject_invalid_sql, "execute", o->execute,
                          "execute_timeout_ms", (json_int_t)o->execute_timeout_ms);
    /* only when given: the manifests of other builds keep their bytes */
    if (t && o->reject_failed_execution)
        json_object_set_new(t, "reject_failed_execution",
                            json_integer((json_int_t)o->reject_failed_execution));
    return t;
}

/* The leakage options as the manifest's config records them. */
static json_t *leak_config(const ps_leak_config *c)
{
    json_t *hs = json_array(), *lim = json_object(), *drop = json_array();
    for (size_t i = 0; i < c->n_holdouts; i++)
        json_array_append_new(hs, json_string(c->holdouts[i]));
    for (int k = 0; k < PS_LEAK_KINDS; k++) {
        const char *name = ps_leak_kind_name((ps_leak_kind)k);
        if (c->limits_set & (1u << k))
            json_object_set_new(lim, name, c->limits.max_fraction[k] < 0
                                               ? json_string("off")
                                               : json_real(c->limits.max_fraction[k]));
        if (c->drop_mask & (1u << k))
            json_array_append_new(drop, json_string(name));
    }
    return json_pack("{s:o, s:o, s:f, s:i, s:o}", "holdouts", hs, "drop_leaked", drop,
                     "near_threshold", c->opts.near_threshold, "ngram", (int)c->opts.ngram,
                     "limits", lim);
}

/* The cleaning options as the manifest's config records them. */
static json_t *clean_config(const ps_clean_args *ca)
{
    const ps_clean_options *o = &ca->opts;
    static const char *const norm[] = {"nfkc", "nfc", "none"};
    static const char *const fmt[] = {"auto", "jsonl", "json", "csv", "tsv"};
    char rules_sha[65] = "";
    if (ca->rules_path)
        ps_sha256_file(ca->rules_path, rules_sha, NULL, NULL);
    return json_pack(
        "{sssssssssssssssssbsbsbsIsIss?ss?}", "format", fmt[o->format], "question_field",
        o->question_field ? o->question_field : "question", "sql_field",
        o->sql_field ? o->sql_field : "sql|query", "label_field",
        o->label_field ? o->label_field : "label", "id_field", o->id_field ? o->id_field : "id",
        "utf8", o->utf8_policy == PS_UTF8_REPLACE ? "replace" : "reject", "normalize",
        norm[o->question_normalization], "sql_normalize", norm[o->sql_normalization],
        "strip_joiners", o->strip_joiners, "sql_backslash_escapes", o->sql_backslash_escapes,
        "keep_duplicates", o->keep_duplicates, "max_record_bytes",
        (json_int_t)o->max_record_bytes, "max_field_bytes", (json_int_t)o->max_field_bytes,
        "rules", ca->rules_path, "rules_sha256", ca->rules_path ? rules_sha : NULL);
}

/* The effective configuration, recorded in the manifest: everything that
 * decides the output, nothing that does not (threads, output path). */
static char *effective_config(const build_args *a)
{
    const ps_build_config *c = &a->cfg;
    json_t *inputs = json_array();
    for (size_t i = 0; i < c->n_inputs; i++)
        json_array_append_new(inputs, json_string(c->inputs[i]));
    json_t *buckets = json_array();
    for (size_t i = 0; i < c->n_buckets; i++)
        json_array_append_new(buckets, json_integer(c->buckets[i]));
    json_t *clean = clean_config(&a->clean);
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
    json_t *t2s = text_to_sql_config(&a->clean);
    json_t *j = json_pack("{sosososososb}", "inputs", inputs, "clean", clean, "tokenizer",
                          tokenizer, "shards", shards, "validate", validate, "gate", !c->no_gate);
    json_decref(buckets);
    if (j && a->srcs.n) /* a mixture's: other sets keep their manifest bytes */
        json_object_set_new(j, "sources", ps_cli_sources_config(&a->srcs, c->inputs,
                                                                clean_config, text_to_sql_config));
    if (j && c->layout != PS_LAYOUT_PAIR) { /* pair sets keep their bytes */
        json_object_set_new(j, "layout", json_string(ps_layout_name(c->layout)));
        if (c->layout == PS_LAYOUT_CAUSAL)
            json_object_set_new(j, "append_eos", json_boolean(!c->no_append_eos));
        if (c->layout == PS_LAYOUT_SEQ2SEQ)
            json_object_set_new(tokenizer, "max_target_length",
                                json_integer((json_int_t)(c->max_target_length
                                                              ? c->max_target_length
                                                              : c->max_length)));
    }
    /* only when given: other sets keep their manifest bytes */
    if (j && c->max_prompt_length)
        json_object_set_new(tokenizer, "max_prompt_length",
                            json_integer((json_int_t)c->max_prompt_length));
    if (j && c->difficulty_field)
        json_object_set_new(clean, "difficulty_field", json_string(c->difficulty_field));
    if (t2s && c->reject_lost_schema)
        json_object_set_new(t2s, "reject_lost_schema", json_true());
    if (j && t2s) /* only when used: other sets keep their manifest bytes */
        json_object_set(j, "text_to_sql", t2s);
    if (j && a->leak.n_holdouts) /* likewise */
        json_object_set_new(j, "leakage", leak_config(&a->leak));
    json_decref(t2s);
    if (!j)
        return NULL;
    char *text = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(j);
    return text;
}

/* A build the gate stops writes DIR.report.json/.html and DIR.stats.json
 * beside DIR: before anything is read, none may name an input, the rules,
 * the vocabulary or a file inside a shard set. */
static int check_beside(const build_args *a)
{
    const ps_clean_args *c = &a->clean;
    size_t n = 0, cap = a->n_inputs + 4 + c->n_schemas;
    for (size_t k = 0; k < a->srcs.n; k++) /* a mixture's sources' files too */
        cap += 1 + a->srcs.args[k].n_schemas;
    ps_path_use *ins = calloc(cap, sizeof *ins);
    if (!ins) {
        fputs("pairshard build: out of memory\n", stderr);
        return -1;
    }
    for (size_t i = 0; i < a->n_inputs; i++)
        ins[n++] = (ps_path_use){"input", a->inputs[i]};
    ins[n++] = (ps_path_use){"--rules file", c->rules_path};
    ins[n++] = (ps_path_use){"--vocab file", a->tok.vocab};
    ins[n++] = (ps_path_use){"--tokenizer-json file", a->tok.tokenizer_json};
    ins[n++] = (ps_path_use){"--template file", c->template_name};
    for (size_t i = 0; i < c->n_schemas; i++)
        ins[n++] = (ps_path_use){"--schema file", c->schema_paths[i]};
    for (size_t k = 0; k < a->srcs.n; k++) {
        const ps_clean_args *sa = &a->srcs.args[k];
        ins[n++] = (ps_path_use){"template file", sa->template_name};
        for (size_t i = 0; i < sa->n_schemas; i++)
            ins[n++] = (ps_path_use){"schema file", sa->schema_paths[i]};
    }
    ps_error err;
    int rc = ps_beside_outputs_check(a->cfg.out_dir, ins, n, &err);
    if (rc)
        fprintf(stderr, "pairshard build: %s\n", err.message);
    free(ins);
    return rc;
}

/* Draws the library's progress reports as one line on the terminal,
 * rewritten in place, ending with a newline after the final report. */
static void show_progress(void *user, const ps_build_progress *p)
{
    (void)user;
    if (p->eta_seconds >= 0)
        fprintf(stderr, "\rpairshard build: %llu records, %.1f MB/s, ETA %.0fs   ",
                (unsigned long long)p->records, p->mb_per_s, p->eta_seconds);
    else
        fprintf(stderr, "\rpairshard build: %llu records, %.1f MB/s%s",
                (unsigned long long)p->records, p->mb_per_s, p->final ? "        \n" : "   ");
}

/* The closing lines of a published build: the accounting and the set. */
static void print_summary(const build_args *a, const ps_build_summary *sum)
{
    fprintf(stderr,
            "pairshard build: %llu records in = %llu kept + %llu rejected + %llu duplicates\n"
            "pairshard build: %zu shard(s), %zu labels, %llu tokens, buckets",
            (unsigned long long)sum->counts.records_in, (unsigned long long)sum->counts.kept,
            (unsigned long long)sum->counts.rejected, (unsigned long long)sum->counts.duplicates,
            a->cfg.shards, sum->n_labels, (unsigned long long)sum->tokens);
    for (size_t i = 0; i < sum->n_buckets; i++)
        fprintf(stderr, "%s%u", i ? "," : " ", sum->buckets[i]);
    fprintf(stderr, "; %.1f MB on disk; %.2f s (%.0f records/s) -> %s\n",
            sum->bytes_on_disk / 1e6, sum->seconds,
            sum->seconds > 0 ? sum->counts.records_in / sum->seconds : 0.0, a->cfg.out_dir);
}

/* The leakage check's screen: what leaked, by kind, and what was done. */
static void print_leakage(const build_args *a)
{
    ps_leak_limits l;
    ps_error err = {0};
    if (ps_build_leak_limits(&a->cfg, &l, &err))
        return;
    char *s = ps_leak_summary("pairshard build", a->lc.tally, &l, a->leak.drop_mask);
    fputs(s ? s : "", stderr);
    free(s);
}

/* What the command says once the build returned `rc`, and its exit
 * status: a stop by signal, the error, the validation summary, a failed
 * gate, an empty set, the closing lines and the profile. */
static int report_outcome(const build_args *a, int rc, const ps_error *err,
                          ps_build_summary *sum, const ps_cli_command_times *ct)
{
    if (ps_cli_stop_signal) {
        fprintf(stderr, "pairshard build: stopped by signal %d: %s\n", (int)ps_cli_stop_signal,
                rc ? "nothing was published" : "the new set had already been published");
        free(sum->report_summary);
        return ps_cli_signal_status(ps_cli_stop_signal);
    }
    if (rc) {
        fprintf(stderr, "pairshard build: %s\n", err->code ? err->message : ps_strerror(rc));
        return PS_EXIT_USAGE;
    }
    if (sum->report_summary && (!a->quiet || sum->gate_failed))
        fputs(sum->report_summary, stderr);
    if (a->cfg.leak && (!a->quiet || sum->gate_failed))
        print_leakage(a);
    if (sum->gate_failed) {
        /* The rejects lie beside the report: DIR.report.json, DIR.rejects.jsonl. */
        size_t plen = strlen(sum->report_path), slen = strlen("report.json");
        fprintf(stderr,
                "pairshard build: validation failed: nothing was published; report in %s, "
                "rejected records in %.*srejects.jsonl (--no-gate publishes anyway)\n",
                sum->report_path, (int)(plen >= slen ? plen - slen : 0), sum->report_path);
        free(sum->report_summary);
        return PS_EXIT_FAIL;
    }
    free(sum->report_summary);
    if (sum->counts.kept == 0) /* published (a --part may be empty), but readers refuse it */
        fprintf(stderr, "pairshard build: warning: %s holds no records (%llu read: all "
                "rejected or duplicates, see its rejects.jsonl); readers refuse an empty set\n",
                a->cfg.out_dir, (unsigned long long)sum->counts.records_in);
    if (!a->quiet)
        print_summary(a, sum);
    if (a->profile)
        ps_cli_print_build_profile(stderr, &sum->profile, ct);
    return PS_EXIT_OK;
}

int ps_cmd_build(int argc, char **argv)
{
    double t_start = ps_cli_now(); /* --profile: the command's own seconds count too */
    /* First: a signal during the set-up must not kill a build that is
     * about to create its staging directory. */
    ps_cli_signals_install();
    build_args a;
    memset(&a, 0, sizeof a);
    ps_build_config_init(&a.cfg);
    ps_clean_args_init(&a.clean);
    ps_leak_args_init(&a.leak);
    a.tok.lowercase = -1;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    a.cfg.threads = cpus > 0 ? (size_t)cpus : 1;

    struct option longopts[N_OWN + PS_CLEAN_LONGOPTS_EXTRA];
    ps_clean_longopts_merge(longopts, OWN_OPTS, N_OWN);

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
    json_t *config = NULL;
    ps_tokenizer *tok = NULL;
    ps_clean_t2s t2s = {0};
    char *effective = NULL;
    if (config_path) {
        json_error_t je;
        char *text;
        size_t len;
        ps_error ferr = {0};
        /* A regular file only: a FIFO as --config would block forever. */
        if (ps_file_read_all(config_path, "configuration file", PS_CONFIG_FILE_MAX, &text, &len,
                             &ferr)) {
            fprintf(stderr, "pairshard build: %s\n", ferr.message);
            goto done;
        }
        config = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
        free(text);
        if (!config) {
            char why[1024];
            fprintf(stderr, "pairshard build: %s\n", ps_json_where(why, sizeof why, config_path, &je));
            goto done;
        }
        if (apply_config(&a, config, config_path))
            goto done;
    }
    optind = 0;
    while ((c = getopt_long(argc, argv, PS_OPT_QUIET "o:qh", longopts, &idx)) != -1) {
        if (c == '?' || c == ':') {
            ps_opt_error("build", c, argv, longopts);
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
    if (a.sources_spec && ps_cli_sources_load(&a.srcs, a.sources_spec, a.config_path, &a.clean,
                                              a.cfg.layout, &a.inputs, &a.n_inputs,
                                              &a.inputs_cap))
        goto done;
    if (!a.cfg.out_dir || a.n_inputs == 0 || (!a.tok.vocab && !a.tok.tokenizer_json)) {
        fputs("pairshard build: needs --vocab (or --tokenizer-json), -o DIR and INPUT...\n",
              stderr);
        goto done;
    }
    if (!a.cfg.no_gate && check_beside(&a))
        goto done;
    a.clean.layout = a.cfg.layout;
    if (ps_clean_args_text2sql(&a.clean, "build", NULL, &t2s))
        goto done;
    if (ps_tok_source_load("build", &a.tok, &tok))
        goto done;
    a.cfg.schemas = t2s.schemas;
    a.cfg.tmpl = t2s.tmpl;
    a.cfg.schema_paths = a.clean.schema_paths;
    a.cfg.n_schema_paths = a.clean.n_schemas;
    a.cfg.databases_dir = a.clean.databases_dir;
    a.cfg.inputs = a.inputs;
    a.cfg.n_inputs = a.n_inputs;
    a.cfg.sources = a.srcs.src;
    a.cfg.n_sources = a.srcs.n;
    a.cfg.clean = a.clean.opts;
    a.cfg.rules_path = a.clean.rules_path;
    a.cfg.tokenizer = tok;
    a.cfg.vocab_path = a.tok.tokenizer_json ? a.tok.tokenizer_json : a.tok.vocab;
    a.cfg.vocab_kind = a.tok.tokenizer_json ? "tokenizer.json" : "vocab.txt";
    if (!a.quiet && isatty(STDERR_FILENO))
        a.cfg.progress = show_progress;
    effective = effective_config(&a);
    a.cfg.config_json = effective;

    ps_error err = {0};
    if (a.leak.n_holdouts) {
        if (ps_leak_check_open(&a.lc, &a.leak, &a.clean.opts, a.cfg.threads, &err)) {
            fprintf(stderr, "pairshard build: %s\n", err.message);
            goto done;
        }
        a.cfg.leak = &a.lc;
    } else if (a.leak.drop_mask) {
        fputs("pairshard build: --drop-leaked needs --holdout\n", stderr);
        goto done;
    }
    ps_build_summary sum;
    memset(&sum, 0, sizeof sum);
    a.cfg.cancel = &ps_cli_stop_signal;
    ps_cli_command_times ct = {ps_cli_now() - t_start, 0};
    int rc = ps_build_run(&a.cfg, &sum, &err);
    double t_end = ps_cli_now();
    ps_tokenizer_free(tok); /* not needed again */
    tok = NULL;
    a.cfg.tokenizer = NULL;
    ct.after = ps_cli_now() - t_end;
    status = report_outcome(&a, rc, &err, &sum, &ct);
done:
    ps_leak_check_close(&a.lc);
    free(effective);
    ps_tokenizer_free(tok);
    ps_clean_t2s_free(&t2s);
    json_decref(config);
    free(a.inputs);
    ps_cli_sources_free(&a.srcs);
    for (size_t i = 0; i < a.n_owned; i++)
        free(a.owned[i]);
    free(a.owned);
    return status;
}
