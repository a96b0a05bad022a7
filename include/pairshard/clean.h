/*
 * pairshard/clean.h — stage 1: ingest and cleaning.
 *
 * A ps_cleaner reads raw natural-language/SQL pairs (JSONL, a JSON array of
 * objects, CSV or TSV with a header row; plain, gzip or zstd), cleans them and
 * hands every input record to a callback with one of three outcomes:
 *
 *   PS_OUTCOME_KEPT       the cleaned record
 *   PS_OUTCOME_REJECTED   a reason code (see below), a detail and the original
 *   PS_OUTCOME_DUPLICATE  same cleaned (question, sql) as an earlier kept one
 *
 * Nothing is lost: for every run, records_in == kept + rejected + duplicates.
 *
 * Cleaning, in this order, for each of question and sql (each step counted):
 *   1. UTF-8 validation of the raw record: reject it, or replace each maximal
 *      invalid subsequence with U+FFFD (ps_clean_options.utf8_policy).
 *   2. Unicode normalisation via utf8proc: NFKC (default), NFC or none.
 *   3. Removal of control characters (Cc except tab, LF, CR, VT, FF, NEL,
 *      which are whitespace) and invisible format characters (Cf: U+200B,
 *      U+FEFF, U+00AD, bidi controls, ...). ZWNJ/ZWJ (U+200C/U+200D) are
 *      kept unless strip_joiners is set: they are spelling in Persian, Indic
 *      scripts and emoji sequences.
 *   4. User rules (PCRE2, UTF + UCP mode), in file order.
 *   5. Whitespace folding and trimming: every run of Unicode White_Space
 *      becomes one U+0020. In SQL, never inside '...' string literals,
 *      "..." / `...` / [...] quoted identifiers, or $tag$...$tag$ strings;
 *      the newline ending a -- comment is kept, so folding cannot comment out
 *      the rest of the query.
 * Then: a field that is empty is rejected, and exact duplicates of the
 * cleaned (question, sql) pair are dropped (the first occurrence is kept).
 *
 * Reason codes: invalid_utf8, bad_json, bad_csv, wrong_type, missing_field,
 * empty_field, empty_after_cleaning, too_long, dropped_by_rule, rule_error,
 * and with schemas: unknown_database, sql_invalid; from the build's schema
 * selection: schema_lost_gold (--reject-lost-schema); a build (and the
 * Preprocessor) adds tokenizer_error (a tokenizer.json regex ran out of its
 * step budget on the record); with execute and reject_failed_execution:
 * execution_error, execution_timeout, execution_empty.
 *
 * Thread safety: a ps_cleaner is used by one thread at a time (the
 * functions taking one are not thread-safe on the same cleaner); distinct
 * cleaners are independent. Functions without a cleaner are thread-safe.
 */
#ifndef PAIRSHARD_CLEAN_H
#define PAIRSHARD_CLEAN_H

#include "pairshard/common.h"
#include "pairshard/schema.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ps_format {
    PS_FORMAT_AUTO = 0, /* from the first byte ('[' JSON, '{' JSONL) or the name */
    PS_FORMAT_JSONL,
    PS_FORMAT_JSON,     /* one top-level array of objects */
    PS_FORMAT_CSV,
    PS_FORMAT_TSV
} ps_format;

typedef enum ps_normalization {
    PS_NORM_NFKC = 0,
    PS_NORM_NFC,
    PS_NORM_NONE
} ps_normalization;

typedef enum ps_utf8_policy {
    PS_UTF8_REJECT = 0, /* reject the record with reason invalid_utf8 */
    PS_UTF8_REPLACE     /* replace each invalid subsequence with U+FFFD */
} ps_utf8_policy;

typedef struct ps_clean_options {
    size_t struct_size;         /* sizeof as the caller knows it: set by
                                   ps_clean_options_init (pairshard/common.h,
                                   "Options structs that grow") */
    ps_format format;
    /* Field names. Each may be a comma-separated list of candidates
     * ("SQL,query"): the first one a record has (and that is not null) is
     * used, so differently shaped inputs go into one run. JSON accepts
     * dotted paths ("meta.label") when no key with the literal name exists.
     * sql_field NULL means "sql", falling back to "query" when "sql" is
     * absent or not a string (Spider's "sql" is the parsed query object),
     * then to "SQL" (BIRD).
     * label_field NULL means "label"; a record without it has no label.
     * id_field NULL means "id"; without it the id is "<basename>:<line>" or
     * "<basename>:#<index>" (the path as given instead of the base name
     * when two inputs share a base name, see ps_cleaner_declare_inputs). */
    const char *question_field;
    const char *sql_field;
    const char *label_field;
    const char *id_field;
    ps_utf8_policy utf8_policy;
    ps_normalization question_normalization;
    ps_normalization sql_normalization;
    int strip_joiners;          /* also remove U+200C and U+200D */
    int sql_backslash_escapes;  /* \' inside '...' does not end it (MySQL) */
    int keep_duplicates;        /* do not drop exact duplicates */
    size_t max_record_bytes;    /* raw record larger: too_long (default 1 MiB) */
    size_t max_field_bytes;     /* cleaned field larger: too_long (default 64 KiB) */
    /* PS_NAMED_* bits: the fields the user named (a flag, a config key).
     * An input in which no record has a named field (none of its
     * candidates) is an error, PS_EUSAGE, naming the field, the input, the
     * fields its records do have and the nearest one, rather than a run
     * whose every record is rejected or silently unlabelled. Unnamed
     * (default) fields keep the per-record behaviour. Default 0. */
    unsigned named_fields;
    /* ---- text-to-SQL inputs (pairshard/schema.h); appended in 0.x ---- */
    /* The record's database: candidates as for the other fields. NULL means
     * "db_id", then "database_id" (SParC/CoSQL). Read only when the cleaner
     * has schemas or a template. */
    const char *db_field;
    /* Dialogues (SParC, CoSQL): each record's array at turns_path (dotted
     * path; NULL: none) becomes one record per turn, its question and sql
     * from turn_question_field (NULL: "utterance") and turn_sql_field (NULL:
     * "query") of the turn, its id "<dialogue id>/<turn index>", its
     * history the earlier turns' questions (most recent first). The other
     * fields (db_field, label, template fields) come from the dialogue. */
    const char *turns_path;
    const char *turn_question_field;
    const char *turn_sql_field;
    /* With schemas: reject records whose cleaned SQL does not compile
     * (reason sql_invalid) instead of only counting them. */
    int reject_invalid_sql;
    /* With databases (ps_schemas_load_databases): run each kept record's
     * SQL read-only, stopped after execute_timeout_ms (default 2000). */
    int execute;
    unsigned execute_timeout_ms;
    /* With execute: rejects records whose cleaned SQL ends with these
     * statuses, bit 1 << ps_exec_status (PS_EXEC_EMPTY 1, PS_EXEC_ERROR 2,
     * PS_EXEC_TIMEOUT 3), as execution_empty, execution_error and
     * execution_timeout. Default 0. */
    unsigned reject_failed_execution;
} ps_clean_options;

enum {
    PS_NAMED_QUESTION = 1,
    PS_NAMED_SQL = 2,
    PS_NAMED_LABEL = 4,
    PS_NAMED_ID = 8
};

/* Fills the first `struct_size` bytes of `*opts` with the defaults
 * documented above and sets opts->struct_size; writes nothing past them.
 * Call it through the macro ps_clean_options_init(opts), which passes the
 * caller's sizeof. Returns 0, or PS_EINVAL when `opts` is NULL or
 * struct_size is no size ps_clean_options has had (nothing written). */
PS_API int ps_clean_options_init_size(ps_clean_options *opts, size_t struct_size);
#define ps_clean_options_init(opts) ps_clean_options_init_size((opts), sizeof *(opts))

typedef enum ps_outcome {
    PS_OUTCOME_KEPT = 0,
    PS_OUTCOME_REJECTED,
    PS_OUTCOME_DUPLICATE
} ps_outcome;

/* One input record's outcome, valid only during the callback. Strings are
 * UTF-8 and NUL-terminated; `*_len` excludes the NUL. The library owns and
 * allocates it (a caller never makes one), so a later version may append
 * fields without breaking an older caller, which reads only its prefix. */
typedef struct ps_clean_result {
    ps_outcome outcome;
    const char *source;   /* "path:line" or "path:#index" */
    const char *id;       /* kept/duplicate: the record id; rejected: may be NULL */
    const char *question; /* kept/duplicate: cleaned text */
    size_t question_len;
    const char *sql;
    size_t sql_len;
    const char *label;    /* NULL when the record has no label */
    const char *reason;   /* rejected: reason code */
    const char *rule;     /* rejected by a rule: its name, else NULL */
    const char *detail;   /* rejected: one human-readable sentence */
    const char *original; /* rejected: the raw record bytes (may be invalid UTF-8) */
    size_t original_len;
    int original_truncated; /* original holds only a prefix of the record */
    const char *duplicate_of; /* duplicate: id of the kept record */
    /* With schemas or a template (else NULL / 0): */
    const char *db_id;        /* the record's database, as read */
    const char *prompt;       /* kept/duplicate: the rendered prompt */
    size_t prompt_len;
    const char *completion;   /* the rendered completion; NULL when the
                                 template has none */
    size_t completion_len;
    const char *sql_check;    /* kept: "ok" or the SQLite error class of the
                                 cleaned SQL; NULL when not checked */
    const char *sql_message;  /* SQLite's message when it did not compile */
} ps_clean_result;

/* Called once per input record, in input order. Return 0 to go on, or a
 * negative PS_E* code to stop the run (it is returned by the run call). */
typedef int (*ps_clean_sink)(void *user, const ps_clean_result *result);

/* Accounting for one cleaner (all inputs so far). Filled by
 * ps_cleaner_get_counts; fields are only ever appended. */
typedef struct ps_clean_counts {
    uint64_t records_in;
    uint64_t kept;
    uint64_t rejected;
    uint64_t duplicates;
    uint64_t bytes_in; /* decompressed bytes read */
} ps_clean_counts;

typedef struct ps_cleaner ps_cleaner;

/* Creates a cleaner configured by `opts` (copied: the caller's struct and
 * the strings it points to may go once this returns).
 * @param opts  may be NULL for the defaults; else initialised with
 *              ps_clean_options_init (its struct_size is checked).
 * @param out   receives the cleaner (NULL on failure); not NULL.
 * @return 0, or a negative code (message in err):
 *   PS_EINVAL  opts->struct_size is unknown; max_record_bytes or
 *              max_field_bytes is 0; a field list is empty, holds an empty
 *              name or more than 8 candidates
 *   PS_ENOMEM  out of memory
 * Free the cleaner with ps_cleaner_free. */
PS_API int ps_cleaner_create(const ps_clean_options *opts, ps_cleaner **out, ps_error *err);

/* Frees the cleaner and everything it owns (pointers it handed out, such
 * as the strings of a ps_clean_result, are gone with it). NULL is a no-op. */
PS_API void ps_cleaner_free(ps_cleaner *c);

/* Gives the cleaner the schemas of the run's databases (borrowed: they
 * must outlive the cleaner). Every record must then name a database of the
 * set in opts.db_field (else it is rejected unknown_database), and its SQL
 * is compiled against that schema before and after cleaning (counted in
 * the accounting's "sql" object; opts.reject_invalid_sql rejects those that
 * fail after cleaning, reason sql_invalid). Call before the first run.
 * @return 0, or PS_EINVAL (cleaning has started), PS_ENOMEM. */
PS_API int ps_cleaner_set_schemas(ps_cleaner *c, const ps_schemas *schemas, ps_error *err);

/* Gives the cleaner a template (borrowed, as above): kept records carry
 * the rendered prompt and completion, the fields the template names are
 * read and cleaned like the question, and duplicates are exact repeats of
 * the rendered (prompt, completion). A record lacking a field a
 * placeholder needs is rejected missing_field, naming it. A template with
 * a {schema:...} placeholder needs ps_cleaner_set_schemas first.
 * @return 0, or PS_EINVAL (cleaning has started), PS_EUSAGE (the template
 *         needs schemas the cleaner lacks), PS_ENOMEM. */
PS_API int ps_cleaner_set_template(ps_cleaner *c, const ps_template *t, ps_error *err);

/* Adds user rules from a JSON text: an array (or {"rules": [...]}) of
 *   {"name": N, "field": "question"|"sql"|"both", "replace": PATTERN, "with": TEXT}
 *   {"name": N, "field": ..., "drop_if": PATTERN}
 * with optional "flags": any of "imsx" (caseless, multiline, dotall,
 * extended). Rules apply in the order added. Call before the first
 * ps_cleaner_run.
 * @param json_text  `len` bytes, need not be NUL-terminated; not NULL.
 * @param origin     names the text in messages (e.g. the file name); NULL
 *                   shows "<rules>".
 * @return 0, or (message in err; no rule of this text is added):
 *   PS_EFORMAT  the text is not JSON (the message gives line and column)
 *   PS_ERULE    a rule is malformed or its pattern does not compile (the
 *               message names the rule and the pattern offset)
 *   PS_EINVAL   cleaning has already started
 *   PS_ENOMEM   out of memory */
PS_API int ps_cleaner_add_rules(ps_cleaner *c, const char *json_text, size_t len,
                                const char *origin, ps_error *err);

/* Reads the rules file at `path` (a regular file of at most 16 MiB: a FIFO
 * or directory is refused without blocking) and adds its rules as
 * ps_cleaner_add_rules does, `path` naming them in messages.
 * @return 0, or PS_ENOENT (no such file), PS_EIO (unreadable, or not a
 *         regular file), PS_ELIMIT (larger than 16 MiB), PS_ENOMEM, or a
 *         code of ps_cleaner_add_rules. */
PS_API int ps_cleaner_load_rules(ps_cleaner *c, const char *path, ps_error *err);

/* Declares every input of the run (their paths as they will be passed to
 * ps_cleaner_run) before the first run, so that default ids are unique:
 * inputs whose base names clash ("spider/dev.json", "bird/dev.json") get
 * ids from their path as given ("bird/dev.json:#0"); the others keep
 * "<basename>:#<index>". Without it, an input whose base name clashes with
 * an earlier input's gets path ids. Optional.
 * @param paths  n non-NULL paths ("-" is stdin); copied.
 * @return 0 or PS_ENOMEM. */
PS_API int ps_cleaner_declare_inputs(ps_cleaner *c, const char *const *paths, size_t n,
                                     ps_error *err);

/* Ingests and cleans one input (`path`, or "-" for stdin; a pipe is fine),
 * calling `sink` (may be NULL: only count) for every record, in input
 * order, on the calling thread. Call it once per input; the accounting and
 * the dedupe set carry over from one input to the next. Record-level
 * problems are rejections reported to the sink, not errors.
 * @return 0, or a negative code for what stops the whole input (message
 *         in err, naming the input):
 *   PS_ENOENT       the file does not exist
 *   PS_EIO          it cannot be read
 *   PS_EDECOMPRESS  a corrupt or truncated gzip/zstd stream (the records
 *                   before the damage have been reported)
 *   PS_EFORMAT      the format cannot be detected, a JSON input is not an
 *                   array, or a CSV/TSV header is unusable
 *   PS_ERULE        a rule's replacement failed (not its match limits: a
 *                   record that hits them is rejected with rule_error)
 *   PS_EUSAGE       after the whole input was read and reported: a field
 *                   named in opts.named_fields is in none of its records
 *                   (the message names the input, the fields its records
 *                   have and the nearest one: "did you mean 'db_id'?")
 *   PS_ENOMEM       out of memory
 *   any negative code the sink returned (the run stops at that record).
 * Not thread-safe: one call at a time per cleaner. */
PS_API int ps_cleaner_run(ps_cleaner *c, const char *path, ps_clean_sink sink, void *user,
                          ps_error *err);

/* Cleans one field's text as a record's field is cleaned by this cleaner
 * (one code path with ps_cleaner_run: UTF-8 policy, normalisation, control
 * removal, rules, whitespace folding, the empty and length checks), for
 * text that arrives alone, as at serving. `field` is "sql" (cleaned as
 * SQL) or any other name ("question", a template field such as
 * "evidence": cleaned as the question). As in a record, only the
 * question and the SQL are checked for emptiness and length: a template
 * field or a history utterance may clean to "" (the build keeps such a
 * record). Nothing is counted.
 * @return 0 and either *out (the cleaned text, NUL-terminated, valid until
 *         the cleaner's next call; *reason NULL) or *reason (a reason code:
 *         invalid_utf8, empty_field, empty_after_cleaning, too_long,
 *         dropped_by_rule, rule_error; *out NULL); or PS_ENOMEM / a rule's
 *         failure (message in err). Not thread-safe on one cleaner. */
PS_API int ps_cleaner_clean_text(ps_cleaner *c, const char *field, const char *text, size_t len,
                                 const char **out, size_t *out_len, const char **reason,
                                 ps_error *err);

/* ps_cleaner_run with `threads` worker threads cleaning chunks of records
 * while the calling thread reads, commits (dedupe, accounting) in input
 * order and calls `sink`, on the calling thread, exactly as
 * ps_cleaner_run would: same records, same order, same results and
 * accounting, for any `threads` (0 or 1: ps_cleaner_run itself). Memory
 * grows with threads: about 2 x threads + 2 chunks of 1024 records
 * (4 MiB of input at most each) and their cleaned copies.
 * @return as ps_cleaner_run (a worker's failure comes after the records
 *         before it reached the sink), or PS_ENOMEM when no thread starts.
 * Not thread-safe: one call at a time per cleaner. */
PS_API int ps_cleaner_run_threads(ps_cleaner *c, const char *path, size_t threads,
                                  ps_clean_sink sink, void *user, ps_error *err);

/* Called once per input record, in input order, with the record's JSON
 * line (ps_clean_result_json's text, `len` bytes, no newline); line[len]
 * is a newline, so that a writer can hand on `len + 1` bytes at once. */
typedef int (*ps_clean_line_sink)(void *user, const ps_clean_result *result, const char *line,
                                  size_t len);

/* ps_cleaner_run_threads for a caller that writes JSON lines: the workers
 * serialise each record's line too (a kept record that the commit finds a
 * duplicate is serialised again there), so the calling thread only
 * commits and hands lines on. Same records, order and results as
 * ps_cleaner_run_threads; `sink` may not be NULL.
 * @return as ps_cleaner_run_threads. */
PS_API int ps_cleaner_run_lines(ps_cleaner *c, const char *path, size_t threads,
                                ps_clean_line_sink sink, void *user, ps_error *err);

/* Copies the running totals (all inputs so far) into *counts (not NULL),
 * writing `size` bytes and no more: call it through the macro
 * ps_cleaner_get_counts(c, counts), which passes sizeof *counts.
 * @return 0, or PS_EINVAL (nothing written) when `size` is smaller than
 *         ps_clean_counts has ever been (40 bytes). Not while
 *         ps_cleaner_run runs on another thread. */
PS_API int ps_cleaner_get_counts_size(const ps_cleaner *c, ps_clean_counts *counts,
                                      size_t size);
#define ps_cleaner_get_counts(c, counts) \
    ps_cleaner_get_counts_size((c), (counts), sizeof *(counts))

/* The accounting as a new JSON document (keys in a fixed order):
 *   records_in, kept, rejected, duplicates, balanced (the identity holds),
 *   rejected_by_reason, rules (per rule: matched, changed, dropped),
 *   labels (per label: records_in, kept, rejected, duplicates), steps (what
 *   each cleaning step changed), inputs (per input file); "id_collisions" ({count,
 *   examples: [{id, source}]}) only when kept records share an id;
 *   "dialogues" (records read with opts.turns_path) with turns; "sql"
 *   ({checked, compiled_raw, compiled_clean, regressions,
 *   regression_examples, raw, clean, examples, execute?}) with schemas
 *   (docs/CLEANING.md, "Text-to-SQL inputs: the cleaner's checks").
 * @return the NUL-terminated text, malloc'ed (free() it), or NULL when out
 *         of memory. Not while ps_cleaner_run runs on another thread. */
PS_API char *ps_cleaner_stats_json(const ps_cleaner *c);

/* Serialises one outcome (as the sink receives it) as a single JSON line,
 * without a newline:
 *   kept       {"id","question","sql","label","db_id"?,"prompt"?,"completion"?,
 *               "sql_check"?,"sql_message"?,"source"} (db_id with schemas or a
 *               template, prompt and completion with a template, completion
 *               null when it has none, sql_check with schemas)
 *   rejected   {"source","reason","rule"?,"detail","id"?,"label"?,"original",
 *               "original_base64"? (when original is not valid UTF-8),
 *               "original_truncated"?}
 *   duplicate  {"id","source","duplicate_of","label","question","sql"}
 * @param out  receives the text, malloc'ed and NUL-terminated (free() it);
 *             NULL on failure. `len` receives its length. Neither NULL.
 * @return 0 or PS_ENOMEM. Thread-safe (it touches nothing but `r`). */
PS_API int ps_clean_result_json(const ps_clean_result *r, char **out, size_t *len);

/* Parse the names the CLI and config files use: formats "auto", "jsonl"
 * (or "ndjson"), "json", "csv", "tsv"; normalisations "nfkc", "nfc",
 * "none"; UTF-8 policies "reject", "replace" (exact, lower case).
 * @param name  NUL-terminated, not NULL.
 * @return 0 and sets *out, or PS_EINVAL for any other name (*out
 *         untouched; no message: the caller names the option).
 * Thread-safe. */
PS_API int ps_format_parse(const char *name, ps_format *out);
PS_API int ps_normalization_parse(const char *name, ps_normalization *out);
PS_API int ps_utf8_policy_parse(const char *name, ps_utf8_policy *out);

#ifdef __cplusplus
}
#endif

#endif /* PAIRSHARD_CLEAN_H */
