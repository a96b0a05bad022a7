/*
 * validate/leakage.h — what a training set shares with the held-out sets a
 * model is judged on. Pure: texts in, matches and counts out; nothing here
 * reads files or prints (the CLI and the build feed it records).
 *
 * Kinds, each found independently for every training record:
 *   database       the same db_id (exact bytes)
 *   question       the same question after NFKC, case folding, and with
 *                  punctuation (Unicode P*) and whitespace removed
 *   near_question  character n-gram Jaccard >= a threshold (default 3-grams,
 *                  0.8) on the question after NFKC, case folding,
 *                  punctuation removed and whitespace folded to one space;
 *                  candidates come from MinHash + LSH banding, each then
 *                  verified with the exact Jaccard (never all pairs)
 *   sql            the same SQL, ASCII case folded outside '...' and "..."
 *                  literals, whitespace runs folded, trailing ';' dropped
 *   sql_template   that key with string literals and numbers masked ('?')
 *
 * Memory: the index holds the held-out records' ids and texts (their bytes),
 * one 16-byte entry per held-out record and exact kind, and per distinct
 * held-out near-question one 16-byte entry per LSH band (21 at 0.8) and its
 * shingle set (8 bytes a shingle, for the candidates' exact Jaccard); the
 * training side is streamed: one scratch per thread.
 * Deterministic: every hash is XXH3 with a fixed seed; results do not
 * depend on the order of finds or the thread that ran them.
 */
#ifndef PS_VALIDATE_LEAKAGE_H
#define PS_VALIDATE_LEAKAGE_H

#include "common/ps_internal.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum ps_leak_kind {
    PS_LEAK_DATABASE = 0,
    PS_LEAK_QUESTION,
    PS_LEAK_NEAR_QUESTION,
    PS_LEAK_SQL,
    PS_LEAK_SQL_TEMPLATE,
    PS_LEAK_KINDS
} ps_leak_kind;

#define PS_LEAK_MAX_HOLDOUTS 64
#define PS_LEAK_EXAMPLES 3

/* "database", "question", ... */
const char *ps_leak_kind_name(ps_leak_kind k);
/* A comma-separated list of kind names into a bit mask (1u << kind).
 * 0, or PS_EUSAGE naming the unknown kind. */
int ps_leak_kinds_parse(const char *list, unsigned *mask, ps_error *err);

typedef struct ps_leak_options {
    double near_threshold; /* (0, 1]; default 0.8 */
    unsigned ngram;        /* characters per shingle, 1..16; default 3 */
} ps_leak_options;
void ps_leak_options_init(ps_leak_options *o);

/* One record as the index sees it; any field may be NULL (not compared). */
typedef struct ps_leak_text {
    const char *id;
    const char *question;
    const char *sql;
    const char *db_id;
} ps_leak_text;

/* ---- keys (leakage_keys.c): exposed for the tests ---- */
/* Each writes the key of `s` into `out` (reset first). 0 or PS_ENOMEM. */
int ps_leak_question_key(const char *s, size_t n, ps_buf *out);
int ps_leak_near_text(const char *s, size_t n, ps_buf *out);
int ps_leak_sql_key(const char *s, size_t n, ps_buf *out);
int ps_leak_sql_template(const char *s, size_t n, ps_buf *out);

/* ---- shingles and MinHash (leakage_minhash.c) ---- */
/* The sorted, distinct 64-bit hashes of the n-code-point shingles of `s`
 * (a text shorter than n is one shingle; an empty one has none). */
int ps_leak_shingles(const char *s, size_t n, unsigned ngram, uint64_t **set, size_t *count,
                     size_t *cap);
/* |a ∩ b| / |a ∪ b| of two sorted distinct sets (1 when both are empty). */
double ps_leak_jaccard(const uint64_t *a, size_t na, const uint64_t *b, size_t nb);
/* LSH shape for a threshold: `rows` hashes a band, `bands` bands, chosen so
 * that a pair at the threshold is a candidate with probability >= 0.99. */
void ps_leak_lsh_shape(double threshold, unsigned *bands, unsigned *rows);
/* The band keys of a shingle set (bands of them). */
void ps_leak_band_keys(const uint64_t *set, size_t n, unsigned bands, unsigned rows,
                       uint64_t *keys);

/* ---- the index of held-out records (leakage.c) ---- */
typedef struct ps_leak_index ps_leak_index;

int ps_leak_index_create(const ps_leak_options *o, ps_leak_index **out, ps_error *err);
void ps_leak_index_free(ps_leak_index *x);
/* Declares a held-out set (its name: a path); *holdout receives its number.
 * PS_ELIMIT past PS_LEAK_MAX_HOLDOUTS. */
int ps_leak_index_add_holdout(ps_leak_index *x, const char *name, unsigned *holdout,
                              ps_error *err);
/* Adds one record of held-out set `holdout` (texts copied). Before finish. */
int ps_leak_index_add(ps_leak_index *x, unsigned holdout, const ps_leak_text *r, ps_error *err);
/* Sorts the tables; after it the index is read-only and shared by threads. */
int ps_leak_index_finish(ps_leak_index *x, ps_error *err);
size_t ps_leak_index_holdouts(const ps_leak_index *x);
const ps_leak_options *ps_leak_index_options(const ps_leak_index *x);
const char *ps_leak_index_holdout_name(const ps_leak_index *x, unsigned holdout);
uint64_t ps_leak_index_holdout_records(const ps_leak_index *x, unsigned holdout);

/* What one training record shares: per kind and held-out set, the first
 * matching held-out record (its number within the index; -1: none) and,
 * for near_question, the Jaccard of that match. */
typedef struct ps_leak_hits {
    unsigned kinds;   /* bit k: some held-out set matched kind k */
    int64_t rec[PS_LEAK_KINDS][PS_LEAK_MAX_HOLDOUTS];
    double jaccard[PS_LEAK_MAX_HOLDOUTS];
} ps_leak_hits;

/* Per-thread work space of ps_leak_find. */
typedef struct ps_leak_scratch ps_leak_scratch;
int ps_leak_scratch_create(ps_leak_scratch **out);
void ps_leak_scratch_free(ps_leak_scratch *s);

/* Finds what the training record `r` shares with the held-out sets.
 * Thread-safe on one finished index with a scratch per thread. */
int ps_leak_find(const ps_leak_index *x, ps_leak_scratch *s, const ps_leak_text *r,
                 ps_leak_hits *hits, ps_error *err);
/* The held-out record `rec` (from hits): its id, question and SQL. */
void ps_leak_index_record(const ps_leak_index *x, int64_t rec, ps_leak_text *out);

/* ---- counts and examples (leakage_tally.c) ---- */
typedef struct ps_leak_tally ps_leak_tally;

int ps_leak_tally_create(const ps_leak_index *x, ps_leak_tally **out);
void ps_leak_tally_free(ps_leak_tally *t);
/* Counts training record `r` with its hits (call in input order: the
 * examples are the first ones); `dropped`: --drop-leaked rejected it for
 * kind `dropped` (-1: kept), so it no longer counts against the limits.
 * 0 or PS_ENOMEM. */
int ps_leak_tally_add(ps_leak_tally *t, const ps_leak_text *r, const ps_leak_hits *h,
                      int dropped);
uint64_t ps_leak_tally_records(const ps_leak_tally *t);
/* Training records with kind k against any held-out set. */
uint64_t ps_leak_tally_count(const ps_leak_tally *t, ps_leak_kind k);
uint64_t ps_leak_tally_count_in(const ps_leak_tally *t, ps_leak_kind k, unsigned holdout);

/* Gate thresholds: the largest fraction of training records that may share
 * kind k with the held-out sets; a negative value: reported, never failing. */
typedef struct ps_leak_limits {
    double max_fraction[PS_LEAK_KINDS];
} ps_leak_limits;
/* Defaults (docs/REPORT.md, "Leakage"): database 0, question 0.01,
 * near_question 0.02, sql 0.05, sql_template reported only. */
void ps_leak_limits_init(ps_leak_limits *l);
/* Sets the limits of "KIND[,KIND...]=FRACTION" (FRACTION "off": reported
 * only); *set (may be NULL) gets the kinds' bits added. */
int ps_leak_limits_set(ps_leak_limits *l, const char *spec, unsigned *set, ps_error *err);
/* True when kind k's share of training records still in the set (not
 * dropped) exceeds its limit. */
bool ps_leak_kind_fails(const ps_leak_tally *t, const ps_leak_limits *l, ps_leak_kind k);

/* The "leakage" object of report.json (docs/REPORT.md): options, held-out
 * sets, per kind: count, fraction, limit, passed, per held-out set counts
 * and examples. NULL when out of memory. */
json_t *ps_leak_tally_json(const ps_leak_tally *t, const ps_leak_limits *l);

#endif
