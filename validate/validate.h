/*
 * validate/validate.h — stage 3: statistics before and after cleaning, the
 * checks that gate a build (internal interface; the build, report/ and
 * `pairshard validate` use it).
 *
 * Statistics are streaming and mergeable (counts and fixed histograms, no
 * raw values), taken at three points of the pipeline:
 *   raw        every parsed record, before cleaning (fields as read)
 *   cleaned    every kept record, after cleaning
 *   tokenized  every kept record, after tokenization
 * plus paired information (the same records before and after cleaning):
 * per-label retention, the distribution of per-record length change, and
 * the records most changed by cleaning (for the report).
 *
 * Report JSON (report.json, documented in docs/REPORT.md, version 1):
 *   {"report_version": 1, "verdict": "pass"|"warn"|"fail", "summary": "...",
 *    "points": {"raw": STATS, "cleaned": STATS, "tokenized": STATS},
 *    "paired": {...}, "checks": [CHECK...], "thresholds": {...}}
 * with CHECK = {"name", "group", "compares", "metric", "value", "threshold",
 *   "op", "mode", "verdict", "p_value", "explanation", "details"}.
 */
#ifndef PS_VALIDATE_H
#define PS_VALIDATE_H

#include "common/ps_internal.h"
#include "pairshard/clean.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

/* ---- statistics at one point (stats.c) ------------------------------------ */

/* What one record contributes at a point. Lengths are in Unicode code
 * points (characters); tokens is the encoded pair's length, or
 * PS_VSTATS_NO_TOKENS before tokenization. */
#define PS_VSTATS_NO_TOKENS UINT32_MAX
typedef struct ps_vrecord {
    const char *label;        /* NULL: unlabeled */
    uint32_t question_chars;
    uint32_t sql_chars;
    uint32_t tokens;          /* or PS_VSTATS_NO_TOKENS */
    uint32_t unk_tokens;      /* [UNK] ids among `tokens` */
    bool truncated;           /* the pair was longer than max_length */
    bool changed;             /* cleaning changed question or sql */
    bool invalid_utf8;        /* the raw record held invalid UTF-8 */
    uint32_t controls_removed;
    uint32_t label_number;    /* 0, or a number naming `label` and no other
                               * label, always (ps_strmap_slot_numbered) */
    const char *hardness;     /* the SQL's hardness level (Spider's class, or the
                               * record's own difficulty field); NULL: none */
} ps_vrecord;

typedef struct ps_vstats ps_vstats;

/* Returns new empty statistics for `point` ("raw", "cleaned",
 * "tokenized"), or NULL when out of memory. */
ps_vstats *ps_vstats_new(const char *point);
void ps_vstats_free(ps_vstats *s);
/* Adds one record. Returns 0 or PS_ENOMEM. */
int ps_vstats_add(ps_vstats *s, const ps_vrecord *r);
/* Counts one word of a tokenized record's question (field 0) or sql
 * (field 1) that became [UNK]; `example` names the record (may be NULL),
 * `hint` is a PS_UNK_HINT_*. Call it after ps_vstats_add of the record,
 * in input order. Returns 0, PS_EINVAL or PS_ENOMEM. */
int ps_vstats_add_unk_word(ps_vstats *s, int field, const char *word, size_t len,
                           const char *example, int hint);
/* Counts a record that was dropped before its fields could be read
 * (bad JSON...): it counts in `records` and `unparsed` only. */
void ps_vstats_add_unparsed(ps_vstats *s);
/* Adds `from` into `into` (same point). Returns 0, PS_EINVAL, PS_ENOMEM. */
int ps_vstats_merge(ps_vstats *into, const ps_vstats *from);
/* The statistics as JSON (the STATS object of report.json), new reference. */
json_t *ps_vstats_to_json(const ps_vstats *s);
/* Reads what ps_vstats_to_json wrote (untrusted: every field checked). */
int ps_vstats_from_json(json_t *j, ps_vstats **out, ps_error *err);
/* The padding statistic: the bucket bounds (inclusive token-length bounds,
 * increasing) that batching pads to. Call it on the tokenized statistics
 * once the bounds are known (before or after the adds: padding is computed
 * from exact token-length counts below 1024 tokens, and from the lower
 * edge of the length's bin above). Returns 0, PS_EINVAL or PS_ENOMEM. */
int ps_vstats_set_padding(ps_vstats *tok, const uint32_t *bounds, size_t n);

/* ---- paired before/after information (paired.c) ----------------------------- */

typedef struct ps_vpaired ps_vpaired;

/* One input record's before and after. Texts may be NULL (unparsed);
 * `after` texts are NULL unless the record was kept or a duplicate. */
typedef struct ps_vpair {
    const char *id, *source, *label;
    ps_outcome outcome;
    const char *reason, *rule;          /* rejected */
    const char *question_before, *sql_before;
    size_t question_before_len, sql_before_len;
    const char *question_after, *sql_after;
    size_t question_after_len, sql_after_len;
    const char *input, *detail;         /* rejected: the input file, the reason's detail */
    bool id_collision;                  /* kept: an earlier kept record has this id */
    /* Optional, from a caller that has them already (the build's workers,
     * in parallel): the code points of the fields before and after, and
     * whether each changed. `counted` false: ps_vpaired_add reads the
     * texts for them. */
    bool counted;
    uint32_t question_before_chars, sql_before_chars, question_after_chars, sql_after_chars;
    bool question_changed, sql_changed;
    uint32_t label_number;              /* as ps_vrecord.label_number */
} ps_vpair;

ps_vpaired *ps_vpaired_new(size_t max_examples);
void ps_vpaired_free(ps_vpaired *p);
/* Adds one record, in input order (examples are chosen deterministically:
 * the largest relative change first, ties in input order): both parts
 * below. 0 or PS_ENOMEM. */
int ps_vpaired_add(ps_vpaired *p, const ps_vpair *r);
/* The part of ps_vpaired_add that comes out the same in any order and
 * after a merge: the counts by outcome and label, and the changes'
 * histograms. Threads may each add records to statistics of their own,
 * merged later (ps_vpaired_merge). */
int ps_vpaired_add_counts(ps_vpaired *p, const ps_vpair *r);
/* The part that depends on input order: the rejections by reason (listed
 * as they first come) and the first of each input and reason, the ids
 * that collide and the examples. Every record
 * of a build, in input order. */
int ps_vpaired_add_ordered(ps_vpaired *p, const ps_vpair *r);
int ps_vpaired_merge(ps_vpaired *into, const ps_vpaired *from);
json_t *ps_vpaired_to_json(const ps_vpaired *p);
int ps_vpaired_from_json(json_t *j, ps_vpaired **out, ps_error *err);

/* ---- SQL checked against its schema (sql_stats.c) ---------------------------
 * What compiling each record's SQL against its database's schema found,
 * before and after cleaning (schema/schema.h: ps_sql_compile), what running
 * it found (ps_sql_execute), and how much the build shortened the schemas
 * in prompts. Mergeable like the statistics above; reports omit it when
 * nothing was checked (docs/REPORT.md, "sql"). */

typedef struct ps_vsql ps_vsql;

/* One committed record. */
typedef struct ps_vsql_record {
    const char *id, *label;          /* label NULL: unlabeled */
    int raw_class, clean_class;      /* a ps_sql_class (0 = compiled); -1: not checked (no
                                        schema, unknown database, rejected before cleaning) */
    const char *raw_msg, *clean_msg; /* SQLite's messages; may be NULL */
    const unsigned char *touched;    /* n_rules flags (value 2 set: the rule changed the
                                        record); may be NULL */
    int exec_status;                 /* a ps_exec_status; -1: not run */
    uint64_t exec_rows;
    const char *exec_msg;            /* SQLite's message of an error or timeout; may be NULL */
    int shortened;                   /* the build shortened the schema in the prompt */
    uint32_t tables_dropped, columns_dropped;
    int gold;                        /* 0: not measured; else PS_VSQL_GOLD_MEASURED, with
                                        _TABLES: the prompt holds every table the SQL uses,
                                        _COLUMNS: every column */
    /* ran_before: the raw SQL ran too (0, the default, for records added
     * without it), exec_before its ps_exec_status; both result
     * fingerprints (ps_exec_result): a record whose raw SQL ran (ok or
     * empty) and whose cleaned SQL's fingerprint differs is a result
     * regression, blamed on the rules that changed it */
    int ran_before, exec_before;
    uint64_t exec_before_rows, exec_before_hash, exec_hash;
} ps_vsql_record;

enum { PS_VSQL_GOLD_MEASURED = 1, PS_VSQL_GOLD_TABLES_KEPT = 2, PS_VSQL_GOLD_COLUMNS_KEPT = 4 };

/* New empty statistics for a cleaner with these rules (names copied; the
 * record's touched flags are in this order). NULL when out of memory. */
ps_vsql *ps_vsql_new(const char *const *rule_names, size_t n_rules);
void ps_vsql_free(ps_vsql *v);
/* Adds one record, in input order (examples are the first seen). 0,
 * PS_EINVAL (a class or status out of range) or PS_ENOMEM. */
int ps_vsql_add(ps_vsql *v, const ps_vsql_record *r);
/* Adds `from` (the next part) into `into`. PS_EINVAL when their rules
 * differ; PS_ENOMEM. */
int ps_vsql_merge(ps_vsql *into, const ps_vsql *from);
/* The "sql" object of stats.json and report.json; new reference or NULL. */
json_t *ps_vsql_to_json(const ps_vsql *v);
/* Reads what ps_vsql_to_json wrote (untrusted: every count is checked
 * against the others). 0, PS_EFORMAT or PS_ENOMEM. */
int ps_vsql_from_json(json_t *j, ps_vsql **out, ps_error *err);
/* Nothing compiled, run or shortened (NULL too): reports leave it out. */
bool ps_vsql_empty(const ps_vsql *v);

/* ---- the statistics file (DIR/stats.json) ---------------------------------- */

/* ---- prompt and completion lengths (gen_stats.c) ----------------------------
 *
 * Causal and seq2seq sets only: per record the tokens before its boundary
 * (the prompt with its prefix, or the source) and after it (the completion
 * or target), over all records and per label. stats.json holds them as
 * "prompt_completion" (with histograms, mergeable), report.json as
 * "prompt_completion" (min, mean, p50, p95, max; docs/REPORT.md). */
typedef struct ps_vgen ps_vgen;
ps_vgen *ps_vgen_new(void);
void ps_vgen_free(ps_vgen *g);
/* One kept record (label NULL: unlabeled, counted in "all" only). 0 or
 * PS_ENOMEM. */
int ps_vgen_add(ps_vgen *g, const char *label, uint32_t prompt, uint32_t completion);
/* ps_vgen_add with the label's number (as ps_vrecord.label_number). */
int ps_vgen_add_numbered(ps_vgen *g, const char *label, uint32_t label_number, uint32_t prompt,
                         uint32_t completion);
int ps_vgen_merge(ps_vgen *into, const ps_vgen *from);
/* {"all": D, "labels": [D + "label", ...]} with D = {"records", "prompt":
 * {min, max, sum, mean, p50, p95[, hist]}, "completion": {...}}; `full`
 * adds the histograms (stats.json). New reference or NULL. */
json_t *ps_vgen_to_json(const ps_vgen *g, bool full);
/* Reads what ps_vgen_to_json(g, true) wrote (untrusted). */
int ps_vgen_from_json(json_t *j, ps_vgen **out, ps_error *err);

/* How a kept record's completion ends and whether its ids read back as its
 * text (pipeline/build.c, docs/BUILD.md "Where a completion ends"). */
enum {
    PS_VGEN_RT_NONE = 0, /* not checked */
    PS_VGEN_RT_OK,       /* decode(prompt ids + completion ids) = the rendered text */
    PS_VGEN_RT_LOSSY,    /* the tokenizer does not give this text back from its own
                          * encoding (a normalizer, [UNK]): nothing to compare */
    PS_VGEN_RT_MISMATCH  /* the text's own encoding decodes back, the record's does not */
};
typedef struct ps_vgen_ends {
    bool eos_appended;    /* causal: the tokenizer's EOS was appended */
    bool end_in_text;     /* causal: the completion's text ends in a special token */
    bool junction_merged; /* causal: a token of the whole text crosses the junction */
    int round_trip;       /* PS_VGEN_RT_* */
} ps_vgen_ends;
/* Counts one kept record's ends (any order; parts add up). 0. */
int ps_vgen_add_ends(ps_vgen *g, const ps_vgen_ends *e);
/* Keeps the first round-trip mismatch (called in input order): the record
 * and where its ids stop reading as its text. 0 or PS_ENOMEM. */
int ps_vgen_round_trip_example(ps_vgen *g, const char *id, const char *detail);
/* The counts ps_vgen_add_ends added up. */
typedef struct ps_vgen_end_counts {
    uint64_t records; /* the kept records counted (ps_vgen_add) */
    uint64_t eos_appended, end_in_text, junction_merged;
    uint64_t rt_ok, rt_lossy, rt_mismatch;
    const char *rt_id, *rt_detail; /* the first mismatch, NULL when none */
} ps_vgen_end_counts;
void ps_vgen_get_end_counts(const ps_vgen *g, ps_vgen_end_counts *c);

/* {"stats_version": 1, "points": {"raw": STATS, "cleaned": STATS,
 *  "tokenized": STATS}, "paired": PAIRED, "sql": SQL, "prompt_completion":
 *  GEN}: malloc'ed text, NULL when out of memory. Any argument may be NULL
 * (its member is then left out); "sql" is left out when empty too. */
char *ps_vstats_file_json(const ps_vstats *raw, const ps_vstats *cleaned,
                          const ps_vstats *tokenized, const ps_vpaired *p, const ps_vsql *sql,
                          const ps_vgen *gen);

/* Reads a statistics file, or a report.json (same "points" and "paired"
 * members). Each output may be NULL (not wanted); a point absent from the
 * file gives NULL, and so does an absent "sql" (no SQL was checked) or
 * "prompt_completion" (a pair set).
 * Returns 0, PS_ENOENT / PS_EIO, PS_EFORMAT, PS_EVERSION (stats_version or
 * report_version other than 1) or PS_ENOMEM. */
int ps_vstats_file_load(const char *path, ps_vstats **raw, ps_vstats **cleaned,
                        ps_vstats **tokenized, ps_vpaired **paired, ps_vsql **sql,
                        ps_vgen **gen, ps_error *err);
/* The same from the file's bytes, already read (`path` names them in
 * messages): merge reads a part's stats.json through the descriptor it
 * holds. */
int ps_vstats_text_load(const char *text, size_t len, const char *path, ps_vstats **raw,
                        ps_vstats **cleaned, ps_vstats **tokenized, ps_vpaired **paired,
                        ps_vsql **sql, ps_vgen **gen, ps_error *err);

/* ---- checks (checks.c) ----------------------------------------------------- */

/* Thresholds and modes: defaults, overridden by a JSON object shaped like
 * {"thresholds": {"label_js_distance": 0.05, ...},
 *  "modes": {"label_js_distance": "fail"|"warn"|"off", ...}}
 * (the build config's "validate" member). Unknown names are errors. */
typedef struct ps_vconfig ps_vconfig;
ps_vconfig *ps_vconfig_new(void);
void ps_vconfig_free(ps_vconfig *c);
int ps_vconfig_apply_json(ps_vconfig *c, json_t *j, ps_error *err);
/* The threads the checks may use for their one costly part, the exact sum
 * behind a KS p-value (ps_sm_ks_2samp_p_threads: up to a million terms
 * when a set has up to two million records). The report has the same
 * bytes whatever the count; 1 (the default) keeps to the calling thread. */
void ps_vconfig_set_threads(ps_vconfig *c, size_t threads);
/* The statistics are one --part's slice of a build: empty_set does not
 * judge them (a slice of a small corpus may hold nothing; merge judges
 * the whole set). */
void ps_vconfig_set_slice(ps_vconfig *c, bool slice);

typedef struct ps_vreport ps_vreport;

/* Runs every check: raw vs cleaned (distributions, paired), cleaned vs
 * tokenized health, and the accounting. Any input may be NULL (its checks
 * say "not enough data"). Returns 0 and a report, or PS_ENOMEM. */
int ps_validate_build(const ps_vconfig *c, const ps_vstats *raw, const ps_vstats *cleaned,
                      const ps_vstats *tokenized, const ps_vpaired *paired,
                      ps_vreport **out, ps_error *err);
/* Adds the checks of SQL compiled against its schema (sql_compile_regression,
 * sql_compile_rate; their thresholds and modes) and the report's "sql"
 * section to a build report, and judges its verdict again. Nothing when
 * `v` is NULL or empty (ps_vsql_empty): the report keeps its bytes. 0 or
 * PS_ENOMEM. */
int ps_validate_sql(const ps_vconfig *c, const ps_vsql *v, ps_vreport *r, ps_error *err);
/* Adds the checks of a generator set and of dialogue turns
 * (checks_gen.c): round_trip and, causal, junction_merges from `gen`'s end
 * counts; history_hidden when `dialogue` (--turns). Nothing
 * when neither applies. 0 or PS_ENOMEM. */
typedef struct ps_vgen_checks {
    const ps_vgen *gen;      /* causal, seq2seq; NULL: a pair set */
    bool causal;
    bool dialogue;
    uint64_t history_turns, history_hidden;
} ps_vgen_checks;
int ps_validate_gen(const ps_vconfig *c, const ps_vgen_checks *g, ps_vreport *r, ps_error *err);
/* Adds the leakage check (checks_leak.c: the kinds of `t` over their
 * limits `l`, by default ps_vconfig_leak_limits(c)) and the report's
 * "leakage" object (`leakage`, referenced), and judges the verdict again.
 * Nothing when `t` is NULL. 0 or PS_ENOMEM. */
struct ps_leak_tally;
struct ps_leak_limits;
int ps_validate_leakage(const ps_vconfig *c, const struct ps_leak_tally *t,
                        const struct ps_leak_limits *l, json_t *leakage, ps_vreport *r,
                        ps_error *err);
/* The config's leakage limits (leakage_max_<kind>; 1: reported only). */
void ps_vconfig_leak_limits(const ps_vconfig *c, struct ps_leak_limits *l);
/* Compares two saved statistics files (any two points: last week's build
 * against today's, train against dev) with the distribution checks. */
int ps_validate_compare(const ps_vconfig *c, const ps_vstats *baseline,
                        const ps_vstats *current, ps_vreport **out, ps_error *err);
void ps_vreport_free(ps_vreport *r);
/* Seconds the checks spent on the work ps_vconfig_set_threads spreads over
 * threads (the exact KS sums): the part of the checks that more threads
 * shorten, which a build's profile counts as shared. */
double ps_vreport_threaded_seconds(const ps_vreport *r);
/* Records a warning about the vocabulary (ps_tokenizer_warning) in the
 * report's "vocab_warnings" list. 0 or PS_ENOMEM. */
int ps_vreport_add_vocab_warning(ps_vreport *r, const char *msg);
/* Records in report.json's "serving" object that cleaning changed
 * `changed` of `kept` records (over `threshold`, a share) and what to
 * serve with (`note`). 0 or PS_ENOMEM. */
int ps_vreport_set_serving(ps_vreport *r, uint64_t changed, uint64_t kept, double threshold,
                           const char *note);
/* Records the prompt and completion lengths (the summary form) in
 * report.json's "prompt_completion" object. 0 or PS_ENOMEM. */
int ps_vreport_set_generation(ps_vreport *r, const ps_vgen *g);
/* A mixture's source (checks_sources.c): `s` is the report of every
 * check run on source `name`'s statistics alone. Each of its checks that
 * warns or fails is added to `r` (group "source", the explanation
 * starting "source 'NAME': ", details.source NAME) and r's verdict judged
 * again; the source's verdict, checks and points, with the members of
 * `extra` (may be NULL: counts the caller keeps), go to r's "sources"
 * section. 0 or PS_ENOMEM. */
int ps_vreport_add_source(ps_vreport *r, const char *name, const ps_vreport *s, json_t *extra);
/* "pass", "warn" or "fail". */
const char *ps_vreport_verdict(const ps_vreport *r);
/* Rendering a report (report.json, the terminal summary, report.html) is
 * the layer above: report/report.h. */

#endif /* PS_VALIDATE_H */
