/* The reader tests' fixture (tests/support/reader_fixture.c): set A (2 shards,
 * 16-record blocks) with its reference decode g_ref, set B (the same input
 * stored differently) and set C (set A without labels), built once per test
 * binary by reader_fixture_setup; batches are checked element by element
 * against g_ref. */
#ifndef PS_TEST_READER_FIXTURE_H
#define PS_TEST_READER_FIXTURE_H

#include "tests/support/testutil.h"

#include "pipeline/build.h"
#include "store/inspect.h"
#include "store/shards.h"

#include <stdbool.h>
#include <stdint.h>
#include <zstd.h>

typedef struct ref_rec {
    char *id;
    uint32_t len, tb, label, bucket, shard, seq, pos; /* pos: index in its block */
    int32_t *tok;
} ref_rec;

typedef struct ref_set {
    char *dir;
    ref_rec *v;         /* sorted by id */
    size_t n, cap;
    size_t n_blocks;
    uint32_t n_buckets;
    uint32_t bounds[PS_BUILD_MAX_BUCKETS];
    size_t n_labels;
    char **labels;
    uint32_t cur_shard;
    ZSTD_DCtx *dctx;
    ps_buf scratch;
} ref_set;

typedef struct cap {
    uint64_t digest, step, epoch;
    uint32_t B, T, bucket;
    long *idx;
} cap;

typedef struct run {
    cap *v;
    size_t n, cap_;
    size_t errors;     /* negative returns from next() */
    int last_error;
    char first_message[PS_ERROR_MESSAGE_MAX];
    uint64_t records, tokens, real_tokens;
} run;

#define ALL SIZE_MAX

extern char *g_tmp;       /* the fixture's directory */
extern ref_set g_ref;     /* set A: 2 shards, 16-record blocks */
extern char *g_dir_b;     /* set B: the same input stored differently */
extern char *g_dir_c;     /* set C: set A without labels */
extern bool g_unlabeled;  /* check_batch: every label must be -1 */

char *path_join(const char *a, const char *b);
/* A new directory $TMPDIR/PREFIX-XXXXXX (malloc'ed path; NULL on failure)
 * for a suite's sets, with RANK and WORLD_SIZE unset: the reader's tests
 * choose rank and world size themselves unless they test the environment. */
char *reader_fixture_tmpdir(const char *prefix);

long ref_find(const ref_set *s, const char *id);

/* Builds `in` into the set `out` (bert-base-uncased, max length 128). */
void build_set_of(const char *in, const char *out, size_t shards, size_t block_records,
                  const char *label);

/* Builds Spider `in` into `out` as a generator layout (PS_LAYOUT_CAUSAL or
 * PS_LAYOUT_SEQ2SEQ) with schema prompts (--template ddl --schema
 * tests/data/spider/tables.json) and the tokenizer.json `tokenizer` (a
 * name under tests/data/tokenizers/); max_length 0: none. */
void build_gen_set(const char *in, const char *out, int layout, const char *tokenizer,
                   size_t max_length, size_t shards, size_t block_records, const char *label);

/* Loads every record of the set in dir (decoded from its shards) into s. */
void ref_load(ref_set *s, const char *dir);
void ref_free(ref_set *s);

int reader_fixture_setup(void **state);

int reader_fixture_teardown(void **state);

/* A digest of everything a batch holds, independent of the dtype. */
uint64_t batch_digest(const ps_batch *b);

uint32_t round_up(uint32_t v, uint32_t m);

/* Checks every array of `b` against the reference; returns the number of
 * failed checks (0) and records the record indices in idx[] (B entries). */
void check_batch(const ps_batch *b, const ps_reader_options *o, long *idx);

void run_free(run *r);

void run_add(run *rn, const ps_batch *b, const ps_reader_options *o);

/* Takes up to `max` batches (ALL: the rest of the epoch), releasing each;
 * errors are counted, not fatal. */
void drain(ps_reader *r, const ps_reader_options *o, run *rn, size_t max);

/* ps_reader_open(dir, o) without a state, *err cleared first: its code. */
int open_rc(const char *dir, const ps_reader_options *o, ps_reader **r, ps_error *err);
ps_reader *open_ok(const char *dir, const ps_reader_options *o, const ps_reader_state *st);
/* open_ok(dir, o) without a state, and its ps_reader_get_info in *in. */
ps_reader *open_info(const char *dir, const ps_reader_options *o, ps_reader_info *in);

/* A reader `r` of `dir` opened with o->device >= 0 where no device is usable:
 * its first batch is a host batch without device twins; closes r. Then the
 * same options with require_device are refused (PS_EUSAGE; the message in
 * *err). */
void expect_host_fallback(ps_reader *r, const char *dir, const ps_reader_options *o,
                          ps_error *err);

/* One whole epoch of `o` on `dir`. */
void epoch_run(const char *dir, const ps_reader_options *o, run *rn);

void base_opts(ps_reader_options *o);

/* Every record delivered exactly once over runs[0..n). */
void expect_exact(run *runs, size_t n);

bool same_digests(const run *a, size_t a0, const run *b, size_t b0, size_t n);

#endif
