/* Cleaning options shared by `pairshard clean` and `pairshard build`. */
#include "cli/clean_args.h"

#include "cli/args.h"
#include "schema/schema.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum {
    A_FORMAT, A_QFIELD, A_SFIELD, A_LFIELD, A_IFIELD, A_UTF8, A_NORMALIZE, A_SQL_NORMALIZE,
    A_JOINERS, A_RULES, A_BACKSLASH, A_KEEP_DUPS, A_MAX_RECORD, A_MAX_FIELD,
    A_SCHEMA, A_DATABASES, A_DB_FIELD, A_TEMPLATE, A_TURNS, A_TURN_Q, A_TURN_SQL,
    A_REJECT_INVALID, A_EXECUTE, A_EXEC_TIMEOUT, A_REJECT_EXEC, A_COUNT
} arg_id;

const struct option ps_clean_longopts[] = {
    {"format", required_argument, NULL, PS_CLEAN_OPT_BASE + A_FORMAT},
    {"question-field", required_argument, NULL, PS_CLEAN_OPT_BASE + A_QFIELD},
    {"sql-field", required_argument, NULL, PS_CLEAN_OPT_BASE + A_SFIELD},
    {"label-field", required_argument, NULL, PS_CLEAN_OPT_BASE + A_LFIELD},
    {"id-field", required_argument, NULL, PS_CLEAN_OPT_BASE + A_IFIELD},
    {"utf8", required_argument, NULL, PS_CLEAN_OPT_BASE + A_UTF8},
    {"normalize", required_argument, NULL, PS_CLEAN_OPT_BASE + A_NORMALIZE},
    {"sql-normalize", required_argument, NULL, PS_CLEAN_OPT_BASE + A_SQL_NORMALIZE},
    {"strip-joiners", no_argument, NULL, PS_CLEAN_OPT_BASE + A_JOINERS},
    {"rules", required_argument, NULL, PS_CLEAN_OPT_BASE + A_RULES},
    {"sql-backslash-escapes", no_argument, NULL, PS_CLEAN_OPT_BASE + A_BACKSLASH},
    {"keep-duplicates", no_argument, NULL, PS_CLEAN_OPT_BASE + A_KEEP_DUPS},
    {"max-record-bytes", required_argument, NULL, PS_CLEAN_OPT_BASE + A_MAX_RECORD},
    {"max-field-bytes", required_argument, NULL, PS_CLEAN_OPT_BASE + A_MAX_FIELD},
    {"schema", required_argument, NULL, PS_CLEAN_OPT_BASE + A_SCHEMA},
    {"databases", required_argument, NULL, PS_CLEAN_OPT_BASE + A_DATABASES},
    {"db-field", required_argument, NULL, PS_CLEAN_OPT_BASE + A_DB_FIELD},
    {"template", required_argument, NULL, PS_CLEAN_OPT_BASE + A_TEMPLATE},
    {"turns", required_argument, NULL, PS_CLEAN_OPT_BASE + A_TURNS},
    {"turn-question-field", required_argument, NULL, PS_CLEAN_OPT_BASE + A_TURN_Q},
    {"turn-sql-field", required_argument, NULL, PS_CLEAN_OPT_BASE + A_TURN_SQL},
    {"reject-invalid-sql", no_argument, NULL, PS_CLEAN_OPT_BASE + A_REJECT_INVALID},
    {"execute", no_argument, NULL, PS_CLEAN_OPT_BASE + A_EXECUTE},
    {"execute-timeout", required_argument, NULL, PS_CLEAN_OPT_BASE + A_EXEC_TIMEOUT},
    {"reject-failed-execution", required_argument, NULL, PS_CLEAN_OPT_BASE + A_REJECT_EXEC},
};
const size_t ps_clean_longopts_count = sizeof ps_clean_longopts / sizeof ps_clean_longopts[0];

static const struct option COMMON_OPTS[] = {
    {"output", required_argument, NULL, 'o'},
    {"quiet", no_argument, NULL, 'q'},
    {"help", no_argument, NULL, 'h'},
};
#define N_COMMON (sizeof COMMON_OPTS / sizeof COMMON_OPTS[0])
_Static_assert(N_COMMON + sizeof ps_clean_longopts / sizeof ps_clean_longopts[0] + 1 <=
                   PS_CLEAN_LONGOPTS_EXTRA,
               "PS_CLEAN_LONGOPTS_EXTRA holds the common and cleaning options");

size_t ps_clean_longopts_merge(struct option *out, const struct option *own, size_t n_own)
{
    size_t n = 0;
    memcpy(out, COMMON_OPTS, sizeof COMMON_OPTS);
    n += N_COMMON;
    memcpy(out + n, own, n_own * sizeof *out);
    n += n_own;
    memcpy(out + n, ps_clean_longopts, sizeof ps_clean_longopts);
    n += ps_clean_longopts_count;
    memset(&out[n], 0, sizeof *out);
    return n;
}

const char ps_clean_args_help[] =
    "Input mapping:\n"
    "      --format F             auto (default), jsonl, json, csv, tsv\n"
    "      --question-field NAME  default 'question'\n"
    "      --sql-field NAME       default 'sql', falling back to 'query', then 'SQL' (BIRD)\n"
    "      --label-field NAME     default 'label' (absent: no label)\n"
    "      --id-field NAME        default 'id' (absent: <file>:<line> or <file>:#<index>,\n"
    "                             the path instead of the file's name when two inputs\n"
    "                             share it)\n"
    "                             Each NAME may be a list, e.g. --sql-field SQL,query: the\n"
    "                             first a record has wins. A field named here that no\n"
    "                             record of an input has is an error (exit 2) that says\n"
    "                             which fields there are and the nearest one.\n"
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
    "Text-to-SQL inputs (docs/CLEANING.md, \"Text-to-SQL inputs\"):\n"
    "      --schema FILE          Spider-format tables.json (repeatable): records must\n"
    "                             name one of its databases (else unknown_database), and\n"
    "                             their SQL is compiled against it before and after\n"
    "                             cleaning (counted under \"sql\" in --stats)\n"
    "      --databases DIR        DIR/<db_id>/<db_id>.sqlite, read-only: schemas of\n"
    "                             databases no --schema describes, and --execute\n"
    "      --db-field NAME        the record's database (default 'db_id', then\n"
    "                             'database_id')\n"
    "      --template NAME|FILE   render 'prompt' and 'completion': a preset (pair,\n"
    "                             question, picard, ddl) or a JSON file {\"prompt\": ...,\n"
    "                             \"completion\": ..., \"options\": {\"normalize_sql\": true}}\n"
    "                             with {question} {sql} {db_id} {schema:picard}\n"
    "                             {schema:ddl} {history} {history:picard} {FIELD}\n"
    "      --turns PATH           dialogues: one record per element of the array at PATH\n"
    "                             (SParC/CoSQL: interaction), id '<dialogue id>/<turn>'\n"
    "      --turn-question-field NAME  a turn's question (default 'utterance')\n"
    "      --turn-sql-field NAME  a turn's SQL (default 'query')\n"
    "      --reject-invalid-sql   reject (sql_invalid) records whose cleaned SQL does not\n"
    "                             compile against their schema, instead of counting them\n"
    "      --execute              run each record's SQL read-only on its database, before\n"
    "                             and after cleaning (needs --databases); a rule that\n"
    "                             changes a query's result fails the gate\n"
    "                             (sql_result_regression)\n"
    "      --execute-timeout MS   stop a query after MS milliseconds (2000)\n"
    "      --reject-failed-execution LIST  with --execute, reject records whose cleaned\n"
    "                             SQL ends so: error, timeout, empty (comma-separated)\n";

void ps_clean_args_init(ps_clean_args *a)
{
    memset(a, 0, sizeof *a);
    ps_clean_options_init(&a->opts);
}

static int parse_size(const char *cmd, const char *opt, const char *v, size_t *out)
{
    return ps_args_size(cmd, opt, v, 1, SIZE_MAX, out);
}

static const ps_args_choice FORMATS[] = {{"auto", PS_FORMAT_AUTO}, {"jsonl", PS_FORMAT_JSONL},
                                          {"ndjson", PS_FORMAT_JSONL}, {"json", PS_FORMAT_JSON},
                                          {"csv", PS_FORMAT_CSV},    {"tsv", PS_FORMAT_TSV}};
static const ps_args_choice NORMS[] = {{"nfkc", PS_NORM_NFKC}, {"nfc", PS_NORM_NFC},
                                       {"none", PS_NORM_NONE}};
static const ps_args_choice UTF8[] = {{"reject", PS_UTF8_REJECT}, {"replace", PS_UTF8_REPLACE}};
#define N_CHOICES(t) (sizeof(t) / sizeof(t)[0])

/* Long option name with '_' read as '-' (config files use either). */
/* --reject-failed-execution's list, as bits 1 << ps_exec_status. */
static int exec_statuses(const char *cmd, const char *v, unsigned *out)
{
    static const struct { const char *name; unsigned bit; } S[] = {
        {"empty", 1u << PS_EXEC_EMPTY}, {"error", 1u << PS_EXEC_ERROR},
        {"timeout", 1u << PS_EXEC_TIMEOUT}};
    *out = 0;
    for (const char *p = v;;) {
        size_t n = strcspn(p, ",");
        size_t i = 0;
        while (i < sizeof S / sizeof *S && !(strlen(S[i].name) == n && !strncmp(S[i].name, p, n)))
            i++;
        if (i == sizeof S / sizeof *S) {
            fprintf(stderr, "pairshard %s: --reject-failed-execution: '%.*s' is not error, "
                    "timeout or empty\n", cmd, (int)n, p);
            return -1;
        }
        *out |= S[i].bit;
        if (!p[n])
            return 1;
        p += n + 1;
    }
}

static int lookup(const char *name)
{
    char norm[64];
    size_t n = strlen(name);
    if (n >= sizeof norm)
        return -1;
    for (size_t i = 0; i <= n; i++)
        norm[i] = name[i] == '_' ? '-' : name[i];
    for (size_t i = 0; i < ps_clean_longopts_count; i++)
        if (strcmp(norm, ps_clean_longopts[i].name) == 0)
            return (int)i;
    return -1;
}

int ps_clean_args_apply(ps_clean_args *a, const char *cmd, const char *name, const char *v)
{
    int i = lookup(name);
    if (i < 0)
        return 0;
    const char *opt = ps_clean_longopts[i].name;
    ps_clean_options *o = &a->opts;
    int x; /* an enum's value, before it is stored in its own type */
    switch ((arg_id)i) {
    case A_FORMAT:
        if (ps_args_enum(cmd, opt, v, FORMATS, N_CHOICES(FORMATS), &x))
            return -1;
        o->format = (ps_format)x;
        return 1;
    /* A field named here must exist in each input (ps_clean_options.named_fields). */
    case A_QFIELD: o->question_field = v; o->named_fields |= PS_NAMED_QUESTION; return 1;
    case A_SFIELD: o->sql_field = v; o->named_fields |= PS_NAMED_SQL; return 1;
    case A_LFIELD: o->label_field = v; o->named_fields |= PS_NAMED_LABEL; return 1;
    case A_IFIELD: o->id_field = v; o->named_fields |= PS_NAMED_ID; return 1;
    case A_UTF8:
        if (ps_args_enum(cmd, opt, v, UTF8, N_CHOICES(UTF8), &x))
            return -1;
        o->utf8_policy = (ps_utf8_policy)x;
        return 1;
    case A_NORMALIZE:
        if (ps_args_enum(cmd, opt, v, NORMS, N_CHOICES(NORMS), &x))
            return -1;
        o->question_normalization = (ps_normalization)x;
        return 1;
    case A_SQL_NORMALIZE:
        if (ps_args_enum(cmd, opt, v, NORMS, N_CHOICES(NORMS), &x))
            return -1;
        a->sql_norm = (ps_normalization)x;
        a->sql_norm_set = 1;
        return 1;
    case A_JOINERS: o->strip_joiners = 1; return 1;
    case A_RULES: a->rules_path = v; return 1;
    case A_BACKSLASH: o->sql_backslash_escapes = 1; return 1;
    case A_KEEP_DUPS: o->keep_duplicates = 1; return 1;
    case A_MAX_RECORD: return parse_size(cmd, opt, v, &o->max_record_bytes) ? -1 : 1;
    case A_MAX_FIELD: return parse_size(cmd, opt, v, &o->max_field_bytes) ? -1 : 1;
    case A_SCHEMA:
        if (a->n_schemas == PS_CLEAN_MAX_SCHEMAS) {
            fprintf(stderr, "pairshard %s: more than %d --schema files\n", cmd,
                    PS_CLEAN_MAX_SCHEMAS);
            return -1;
        }
        a->schema_paths[a->n_schemas++] = v;
        return 1;
    case A_DATABASES: a->databases_dir = v; return 1;
    case A_DB_FIELD: o->db_field = v; return 1;
    case A_TEMPLATE: a->template_name = v; return 1;
    case A_TURNS: o->turns_path = v; return 1;
    case A_TURN_Q: o->turn_question_field = v; return 1;
    case A_TURN_SQL: o->turn_sql_field = v; return 1;
    case A_REJECT_INVALID: o->reject_invalid_sql = 1; return 1;
    case A_EXECUTE: o->execute = 1; return 1;
    case A_EXEC_TIMEOUT: {
        uint64_t ms;
        if (ps_args_u64(cmd, opt, v, 1, 3600000, &ms))
            return -1;
        o->execute_timeout_ms = (unsigned)ms;
        return 1;
    }
    case A_REJECT_EXEC: return exec_statuses(cmd, v, &o->reject_failed_execution);
    case A_COUNT: break;
    }
    return 0;
}

void ps_clean_args_finish(ps_clean_args *a)
{
    a->opts.sql_normalization = a->sql_norm_set ? a->sql_norm : a->opts.question_normalization;
}

/* Prints "pairshard CMD: message" and returns -1. */
static int usage_error(const char *cmd, const ps_error *err)
{
    fprintf(stderr, "pairshard %s: %s\n", cmd, err->message);
    return -1;
}

int ps_clean_args_text2sql(const ps_clean_args *a, const char *cmd, ps_cleaner *cl,
                           ps_clean_t2s *t)
{
    memset(t, 0, sizeof *t);
    ps_error err;
    ps_error_clear(&err);
    const ps_clean_options *o = &a->opts;
    bool schemas = a->n_schemas || a->databases_dir;
    if (o->execute && !a->databases_dir) {
        fprintf(stderr, "pairshard %s: --execute runs queries on the databases of "
                "--databases DIR\n", cmd);
        return -1;
    }
    if (o->reject_failed_execution && !o->execute) {
        fprintf(stderr, "pairshard %s: --reject-failed-execution needs --execute\n", cmd);
        return -1;
    }
    if (o->reject_invalid_sql && !schemas) {
        fprintf(stderr, "pairshard %s: --reject-invalid-sql needs schemas (--schema or "
                "--databases)\n", cmd);
        return -1;
    }
    if (schemas && ps_schemas_create(&t->schemas, &err))
        return usage_error(cmd, &err);
    for (size_t i = 0; i < a->n_schemas; i++)
        if (ps_schemas_load_tables(t->schemas, a->schema_paths[i], &err))
            return usage_error(cmd, &err);
    if (a->databases_dir && ps_schemas_load_databases(t->schemas, a->databases_dir, &err))
        return usage_error(cmd, &err);
    if (cl && t->schemas && ps_cleaner_set_schemas(cl, t->schemas, &err))
        return usage_error(cmd, &err);
    if (a->template_name && ps_template_open_layout(a->template_name, a->layout, &t->tmpl, &err))
        return usage_error(cmd, &err);
    if (cl && t->tmpl && ps_cleaner_set_template(cl, t->tmpl, &err))
        return usage_error(cmd, &err);
    ps_template_info ti;
    if (!cl && t->tmpl && (ps_template_get_info(t->tmpl, &ti), ti.uses_schema) && !schemas) {
        fprintf(stderr, "pairshard %s: template %s has a {schema:...} placeholder: give the "
                "schemas with --schema FILE or --databases DIR\n", cmd, ti.name);
        return -1;
    }
    return 0;
}

void ps_clean_t2s_free(ps_clean_t2s *t)
{
    ps_template_free(t->tmpl);
    ps_schemas_free(t->schemas);
    memset(t, 0, sizeof *t);
}
