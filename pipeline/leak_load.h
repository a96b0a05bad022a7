/*
 * pipeline/leak_load.h — records read into the leakage check
 * (validate/leakage.h) with the cleaner's reading: any input format
 * pairshard reads, the same field and turn options, and shard sets (their
 * manifest's inputs, checked against their sha256). Used by `pairshard
 * leakage`, `build --holdout` and `clean --holdout`.
 */
#ifndef PS_PIPELINE_LEAK_LOAD_H
#define PS_PIPELINE_LEAK_LOAD_H

#include "pairshard/clean.h"
#include "validate/leakage.h"

/* What one file or set gave. */
typedef struct ps_leak_source {
    uint64_t records;  /* records read (and compared) */
    uint64_t rejected; /* records the reading rejected (no question, bad JSON, ...): not compared */
    uint64_t bytes;    /* bytes of the file(s) */
    char sha256[65];   /* of the file; of manifest.json for a set */
    int is_set;        /* a shard set: its manifest's inputs were read */
} ps_leak_source;

/* The cleaning options a held-out or training file is read with: the
 * caller's field and turn options, every record kept (no dedupe), the
 * database read without schemas. */
void ps_leak_read_options(const ps_clean_options *in, ps_clean_options *out);

/* Reads the held-out file or shard set at `path` into the index as a new
 * held-out set. 0 or a negative code, message in err naming the path. */
int ps_leak_load_holdout(ps_leak_index *x, const char *path, const ps_clean_options *opts,
                         size_t threads, ps_leak_source *src, ps_error *err);

/* Called with each training record and what it shares (in input order). */
typedef int (*ps_leak_train_fn)(void *user, const ps_leak_text *r, const ps_leak_hits *h);

/* Reads the training file or set at `path` and finds each record in the
 * finished index, in input order: the tally counts it and fn (may be
 * NULL) sees it. */
int ps_leak_scan(const ps_leak_index *x, ps_leak_tally *t, const char *path,
                 const ps_clean_options *opts, size_t threads, ps_leak_train_fn fn, void *user,
                 ps_leak_source *src, ps_error *err);

/* A run's leakage check: the held-out sets, options, limits, and what
 * --drop-leaked rejects (bit k: kind k). */
typedef struct ps_leak_config {
    const char *holdouts[PS_LEAK_MAX_HOLDOUTS];
    size_t n_holdouts;
    ps_leak_options opts;
    ps_leak_limits limits;
    unsigned limits_set;   /* kinds whose limit was given (--leakage-limit): a
                              build's win over its validate config's */
    unsigned drop_mask;
} ps_leak_config;
void ps_leak_config_init(ps_leak_config *c);

typedef struct ps_leak_check {
    const ps_leak_config *cfg;
    ps_leak_index *index;
    ps_leak_tally *tally;
    ps_leak_source src[PS_LEAK_MAX_HOLDOUTS];
} ps_leak_check;

/* Reads the held-out sets into a finished index and makes the tally.
 * On failure *lc is still safe to close. */
int ps_leak_check_open(ps_leak_check *lc, const ps_leak_config *cfg,
                       const ps_clean_options *opts, size_t threads, ps_error *err);
void ps_leak_check_close(ps_leak_check *lc);
/* The kind a record is dropped for (the first of --drop-leaked's kinds it
 * shares, in kind order), or -1. */
int ps_leak_check_drop_kind(const ps_leak_check *lc, const ps_leak_hits *h);
/* "leaked_<kind>": the reject reason of --drop-leaked (one string a kind,
 * so a reason can be compared by pointer). */
const char *ps_leak_reason(ps_leak_kind k);
/* A kept record against the held-out sets (s and h: the caller's thread's):
 * *drop is the kind it is rejected for (-1: kept) with `detail` saying
 * which held-out record it shares that with. 0 or a negative code. */
int ps_leak_check_record(const ps_leak_check *lc, ps_leak_scratch *s, ps_leak_hits *h,
                         const ps_leak_text *t, int *drop, char *detail, size_t dsz,
                         ps_error *err);
/* The sink's half, in input order: counts a record the check saw (kept, or
 * rejected with a leaked_ reason), finding it again when it leaked. */
int ps_leak_check_count(ps_leak_check *lc, ps_leak_scratch *s, ps_leak_hits *h,
                        const ps_leak_text *t, const char *reason, ps_error *err);
/* Gives cleaner `cl` (before its first run) the check that rejects the
 * kept records --drop-leaked names (leaked_<kind>, on its workers) and the
 * database read it needs. 0 or the cleaner's error. */
int ps_leak_check_attach(const ps_leak_check *lc, ps_cleaner *cl, ps_error *err);
/* True when a kind is over its limit. */
bool ps_leak_check_failed(const ps_leak_check *lc);
/* report.json's "leakage" object, its held-out sets with path, bytes and
 * sha256, and the dropped kinds; NULL when out of memory. */
json_t *ps_leak_check_json(const ps_leak_check *lc);

#endif
