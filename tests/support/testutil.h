/* Helpers shared by pairshard's cmocka tests. */
#ifndef PS_TESTUTIL_H
#define PS_TESTUTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "pairshard/pairshard.h"

/* Absolute path of tests/data/<rel> (from $PS_ROOT, else the cwd).
 * Returns a static buffer, overwritten by the next call. */
const char *ps_test_data(const char *rel);

/* Writes `len` bytes to a new temporary file whose name ends in `suffix`
 * (e.g. ".jsonl"); returns its malloc'ed path. Fails the test on error. */
char *ps_test_tmpfile(const void *data, size_t len, const char *suffix);

/* The pairshard binary that tests driving the CLI run: $PAIRSHARD, else
 * ../bin/pairshard beside the test's own binary (build/tests/test_X →
 * build/bin/pairshard). A static buffer; NULL when neither is known. */
const char *ps_test_pairshard(void);

/* A new directory $TMPDIR/<prefix>-XXXXXX (/tmp without TMPDIR); its
 * malloc'ed path, or NULL when it cannot be made. */
char *ps_test_tmpdir(const char *prefix);

/* Writes `text` to `path` (created or replaced); fails the test when the
 * file cannot be written. */
void ps_test_write_file(const char *path, const char *text);

/* A cmocka group fixture for the tests that run the CLI on files of their
 * own: the setup makes ps_test_root, a fresh directory (ps_test_tmpdir),
 * and finds ps_test_bin (ps_test_pairshard), failing when either is
 * missing; the teardown removes ps_test_root and everything in it. */
extern char *ps_test_root;
extern const char *ps_test_bin;
int ps_test_cli_setup(void **state);
int ps_test_cli_teardown(void **state);

/* The preprocessor of the shard set `dir`; fails the test, with the error,
 * when it does not open. ps_preprocessor_free() it. */
ps_preprocessor *ps_test_preprocessor(const char *dir);

/* Reads the whole set `dir` in stored order (one rank, no shuffling,
 * batches of 64 int32 rows; sort_pool as given) and calls row(ctx, b, i)
 * for every row i of every batch b; fails the test on any error. */
void ps_test_read_rows(const char *dir, uint32_t sort_pool,
                       void (*row)(void *ctx, const ps_batch *b, uint32_t i), void *ctx);

/* rel under dir, in one of 4 static buffers used in turn (so that a few
 * may stand in one call). */
const char *ps_test_path(const char *dir, const char *rel);

/* The whole file at `path`, malloc'ed with a NUL after its *len bytes.
 * Fails the test when it cannot be read. */
unsigned char *ps_test_read_file(const char *path, size_t *len);
/* n pseudo-random bytes (xorshift64, the same every call), malloc'ed:
 * data whose every byte differs from its neighbours', so a byte moved,
 * lost or repeated shows. */
char *ps_test_pattern(size_t n);

/* What ps_test_build varies; the rest is the CLI's defaults with the
 * bert-base-uncased vocabulary, max length 128 and 2 threads. */
typedef struct ps_test_build_opts {
    const char *label_field;
    size_t shards, block_records;
    const uint32_t *buckets; /* NULL: automatic */
    size_t n_buckets;
    size_t part_index, part_count; /* part_count 0: the whole input */
    int zstd_level;                /* 0: the build's default */
    int no_gate;                   /* 1: publish whatever the checks say */
} ps_test_build_opts;

/* Builds the pairs file `in` into the shard set `out`; fails the test
 * (naming the error) unless the build succeeds and its gate passes. */
void ps_test_build(const char *in, const char *out, const ps_test_build_opts *o);

/* Every outcome of a cleaning run, copied. */
typedef struct ps_test_outcome {
    ps_outcome outcome;
    char *id, *question, *sql, *label, *reason, *rule, *detail, *source, *duplicate_of;
    char *original;
    size_t original_len, question_len, sql_len;
} ps_test_outcome;

typedef struct ps_test_run {
    ps_test_outcome *v;
    size_t n, cap;
    size_t kept, rejected, duplicates;
    int rc;
    ps_error err;
    char *stats_json;
    ps_clean_counts counts;
} ps_test_run;

/* The sink that fills a ps_test_run. */
int ps_test_collect(void *user, const ps_clean_result *r);

/* Cleans `data` (written to a temp file with `suffix`) with `opts` (NULL:
 * defaults) and optional rules JSON; fills *run. Asserts the accounting
 * identity records_in == kept + rejected + duplicates. */
void ps_test_clean_mem(ps_test_run *run, const void *data, size_t len, const char *suffix,
                       const ps_clean_options *opts, const char *rules_json);
/* Same on an existing file. */
void ps_test_clean_file(ps_test_run *run, const char *path, const ps_clean_options *opts,
                        const char *rules_json);
void ps_test_run_free(ps_test_run *run);
/* Index of the first outcome whose rejection reason is `reason`, or -1. */
long ps_test_find_reason(const ps_test_run *run, const char *reason);

/* The bert-base-uncased vocabulary of tests/data with the default options
 * (what the builds of the tests use). Fails the test when it does not
 * load; ps_tokenizer_free() it. */
ps_tokenizer *ps_test_bert_tokenizer(void);

/* The schemas of the tables files tests/data/<rel>, ... (a NULL ends the
 * list), loaded in that order. Fails the test naming the file that does
 * not load; ps_schemas_free() it. */
ps_schemas *ps_test_schemas(const char *rel, ...);

/* How many entries of `dir` (not "." and "..") have names starting with
 * `prefix` ("": all). Fails the test when dir cannot be read. */
size_t ps_test_count_entries(const char *dir, const char *prefix);

#endif
