/* Cleaning options shared by `pairshard clean` and `pairshard build`. */
#include "cli/clean_args.h"

#include "cli/args.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum {
    A_FORMAT, A_QFIELD, A_SFIELD, A_LFIELD, A_IFIELD, A_UTF8, A_NORMALIZE, A_SQL_NORMALIZE,
    A_JOINERS, A_RULES, A_BACKSLASH, A_KEEP_DUPS, A_MAX_RECORD, A_MAX_FIELD, A_COUNT
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
};
const size_t ps_clean_longopts_count = sizeof ps_clean_longopts / sizeof ps_clean_longopts[0];

const char ps_clean_args_help[] =
    "Input mapping:\n"
    "      --format F             auto (default), jsonl, json, csv, tsv\n"
    "      --question-field NAME  default 'question'\n"
    "      --sql-field NAME       default 'sql', falling back to 'query'\n"
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
    "      --keep-duplicates      do not drop exact duplicates\n";

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
    case A_COUNT: break;
    }
    return 0;
}

void ps_clean_args_finish(ps_clean_args *a)
{
    a->opts.sql_normalization = a->sql_norm_set ? a->sql_norm : a->opts.question_normalization;
}
