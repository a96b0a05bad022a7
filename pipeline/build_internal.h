/* pipeline/build_internal.h — state shared by the build's files. */
#ifndef PS_SHARDS_BUILD_INTERNAL_H
#define PS_SHARDS_BUILD_INTERNAL_H

/* Descriptors a build holds beside its workers' spools: the standard
 * streams, an input and its hasher's copy, rejects, duplicates, the
 * staging lock and one spare (measured: a one-shard build needs 8). */
#define PS_BUILD_FDS_BESIDE_SPOOLS 9
/* Descriptors a phase-2 shard writer holds (the spools are mapped and
 * closed by then): LMDB's data and meta-sync files, the compacted copy,
 * and one spare (it counted a spool of the shard's own before). */
#define PS_BUILD_FDS_PER_WRITER 4

#include "common/strmap.h"
#include "ingest/ingest.h"
#include "pipeline/build.h"
#include "pipeline/leak_load.h"
#include "schema/schema.h"
#include "store/shards.h"
#include "validate/validate.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>

/* A worker's spool: the kept records it encoded, a chunk's appended with
 * one write by the worker itself, each laid out as
 *   u32 length, u32 type_boundary, u32 label (always NONE: the shard's
 *   index holds it), u32 id_len, id bytes, zero padding to 4 bytes,
 *   length x i32 token ids,
 *   and with --execute the record's fingerprints (PS_EXEC_ENTRY_BYTES,
 *   store/shards.h), which phase 2 stores in the shard's exec database.
 * One file a worker (one with --threads 1), so spooling is as parallel as
 * cleaning and the in-order commit never copies a record; a record the
 * commit finds a duplicate stays in the file, unindexed. Mapped read-only
 * for phase 2 once phase 1 ends. */
typedef struct ps_wspool {
    int fd;
    char *path;
    uint64_t size;    /* bytes written */
    const char *data; /* the mapping (phase 2), NULL before or when empty */
} ps_wspool;

/* Where a spooled record's ids start, past its head and padded id. */
static inline size_t ps_spool_ids_offset(uint32_t id_len)
{
    return 16 + id_len + (4 - id_len % 4) % 4; /* keeps the ids 4-byte aligned */
}

/* A shard's record in its index: its token count and label (first-seen
 * index or PS_LABEL_NONE), and where it lies: worker spool << 48 | offset. */
typedef struct ps_spool_entry {
    uint32_t length, label;
    uint64_t loc;
} ps_spool_entry;
#define PS_SPOOL_OFFSET_BITS 48

/* A shard's kept records, in commit order: phase 2 groups them by bucket
 * from the index alone, so the calling thread does not walk the spools
 * (their pages are read by the compression threads). The index is kept
 * in segments of PS_SPOOL_SEG entries that never move: appended to by the
 * in-order commit, a growing array copied itself into fresh pages at every
 * doubling. */
#define PS_SPOOL_SEG_BITS 16
#define PS_SPOOL_SEG ((uint64_t)1 << PS_SPOOL_SEG_BITS)
typedef struct ps_spool {
    uint64_t records;
    ps_spool_entry **segs; /* segs[i >> PS_SPOOL_SEG_BITS]: PS_SPOOL_SEG entries */
    size_t n_segs, cap_segs;
} ps_spool;

/* The index's entry i (< records). */
static inline const ps_spool_entry *ps_spool_at(const ps_spool *sp, uint64_t i)
{
    return &sp->segs[i >> PS_SPOOL_SEG_BITS][i & (PS_SPOOL_SEG - 1)];
}
/* Appends an entry: 0 or PS_ENOMEM. */
int ps_spool_push(ps_spool *sp, const ps_spool_entry *e);
/* Frees the index (a zeroed ps_spool is empty). */
void ps_spool_free(ps_spool *sp);

/* Per (shard, bucket) result of phase 2. */
typedef struct ps_bucket_count {
    uint64_t records, tokens, blocks;
} ps_bucket_count;

typedef struct ps_shard_result {
    char file[32];
    uint64_t records, tokens, blocks, bytes, uncompressed;
    char sha256[65];
    ps_bucket_count buckets[PS_BUILD_MAX_BUCKETS];
} ps_shard_result;

struct ps_build_state;

/* A mixture's source while it is built (build_sources.c). */
typedef struct ps_build_src {
    ps_cleaner *cleaner;          /* its cleaner (ps_cleaner_add_source: the build's owns it) */
    ps_build_config cfg;          /* the build's, with the source's cleaning, schemas, template */
    ps_vstats *v_raw, *v_clean, *v_tok; /* its records' statistics, as the build's */
    ps_vpaired *paired;
    ps_vsql *v_sql;
    ps_vgen *v_gen;
    uint64_t history_turns, history_hidden;
    uint64_t records, tokens;     /* kept records of this part, their tokens */
} ps_build_src;

/* Freeing done beside the build's last steps (build_release.c). */
typedef struct ps_build_release {
    pthread_t thread;
    bool started;
    void (*fn)(struct ps_build_state *);
    struct ps_build_state *st;
} ps_build_release;

typedef struct ps_build_state {
    const ps_build_config *cfg;
    ps_cleaner *cleaner;
    ps_staging stg;
    const char *staging;       /* stg.set: where the new set is written */
    FILE *rejects, *duplicates;
    char *rejects_path, *duplicates_path; /* theirs, for messages */
    ps_spool *spools;          /* one a shard: indexes */
    ps_wspool *wspools;        /* one a worker: the records */
    size_t n_wspools;
    uint64_t ordinal;          /* records seen (all parts) */
    size_t commit_input;       /* the input of the last chunk committed, and */
    uint64_t input_records;    /* its records committed so far */
    uint64_t kept;             /* kept in this part: the next shard is kept % shards */
    uint64_t *hist;            /* token-length histogram, [0..hist_max] */
    size_t hist_max;
    /* labels in first-seen order; sorted and renumbered in phase 2 */
    ps_strmap labels;
    const char **sorted_labels; /* final id -> name (into `labels`) */
    uint32_t *label_final;      /* first-seen index -> final id */
    uint32_t bounds[PS_BUILD_MAX_BUCKETS];
    size_t n_bounds;
    int id_width;
    ps_shard_result *results;
    double start, last_progress;
    ps_build_profile prof;     /* filled as the phases run */
    double cpu_thread0, cpu_process0; /* CPU clocks at the start */
    uint64_t total_input_bytes;
    /* inputs' SHA-256, computed by a thread of its own during phase 1 */
    char (*input_sha)[65];
    uint64_t *input_bytes;
    int input_hash_rc;
    ps_error input_hash_err;
    /* also beside phase 1, by the same thread: the tokenizer file's SHA-256
     * and DIR/preprocess/ written, the manifest's "preprocess" object (NULL
     * with preprocess_err on failure) */
    char vocab_sha[65];
    int vocab_hash_rc;
    ps_error vocab_hash_err;
    struct json_t *preprocess;
    ps_error preprocess_err;
    /* validation */
    ps_vstats *v_raw, *v_clean, *v_tok;
    ps_vpaired *paired;
    ps_vsql *v_sql;            /* SQL against its schema (empty without schemas) */
    ps_vgen *v_gen;            /* prompt and completion lengths (causal, seq2seq; else NULL) */
    uint64_t history_turns;    /* kept dialogue turns with earlier utterances, and */
    uint64_t history_hidden;   /* of them, those the template's prompt does not show */
    ps_vreport *report;
    int stop_phase2;           /* set (atomically) when the checks, beside phase 2, fail it */
    /* freed before the end (build_release.c): the validation state once
     * the reports are in the set, keeping what the summary needs of the
     * report; the worker spools once every shard is written */
    ps_build_release validation_release, spools_release;
    char kept_verdict[8];
    char *kept_summary;
    size_t shards_done;        /* shards written (atomic) */
    struct ps_encode_ctx *leak_x; /* the commit's find of leaked records (build_leak.c) */
    bool exec_db;              /* the shards keep an exec database: the build, or in a
                                * mixture any of its sources, runs the gold SQL */
    /* a mixture (cfg->n_sources > 0; else all NULL/0): build_sources.c */
    ps_build_src *src;
    size_t n_src;
    uint16_t *input_source;    /* cfg->inputs[i]'s source */
    uint64_t *dup_pairs;       /* [a * n_src + b]: records of source a duplicating a kept
                                * record of source b (a != b: across sources) */
} ps_build_state;

/* The SQL statistics, naming the cleaner's rules (build_run.c). NULL when
 * out of memory. */
ps_vsql *ps_build_vsql_new(const ps_cleaner *c);

/* ---- build_sources.c: a mixture's sources ---------------------------------- */

/* Sets the sources up once the build's cleaner exists: a cleaner each
 * (their options, rules, schemas, template), a config each, statistics
 * each. Nothing for a single-source build. 0 or a negative code. */
int ps_build_sources_setup(ps_build_state *st, ps_error *err);
/* The cleaner and config input i is read and cleaned with: its source's
 * in a mixture, else the build's. */
ps_cleaner *ps_build_input_cleaner(const ps_build_state *st, size_t input);
const ps_build_config *ps_build_input_cfg(const ps_build_state *st, size_t input);
/* After the build's cleaner committed `it` (of input `input`): its
 * source's accounting, and the duplicate pairs across sources. */
int ps_build_sources_commit(ps_build_state *st, size_t input, const char *path,
                            const ps_clean_item *it, ps_error *err);
/* A kept record of `input` spooled with `tokens` tokens. */
void ps_build_sources_kept(ps_build_state *st, size_t input, uint32_t tokens);
/* The named-field check of every source (after phase 1). */
int ps_build_sources_check_fields(const ps_build_state *st, ps_error *err);
/* Every check on each source's statistics, added to st->report
 * (ps_vreport_add_source). 0 or a negative code. */
int ps_build_sources_validate(ps_build_state *st, ps_error *err);
/* The manifest's "sources" array (a new reference), NULL when out of memory. */
struct json_t *ps_build_sources_manifest(const ps_build_state *st);
/* Frees what setup made (the cleaners go with the build's). */
void ps_build_sources_free(ps_build_state *st);
/* The source of a kept record's id ("<name>/..."), or -1. */
long ps_build_source_of_id(const ps_build_state *st, const char *id);

int ps_build_phase1(ps_build_state *st, ps_error *err);

/* ---- build_encode.c: what a kept record is tokenized from ---------------- */

/* A worker's buffers for re-rendering prompts (zero-initialise). */
typedef struct ps_encode_ctx {
    ps_buf prompt, completion;
    unsigned char *keep_table, *keep_column;
    ps_shorten_unit *units;
    size_t cap_tables, cap_columns, cap_units;
    ps_select_scratch sel;          /* schema selection's scratch */
    ps_select_text *texts;          /* what the ranking reads */
    size_t cap_texts;
    unsigned char *gold_table, *gold_column; /* gold recall (report only) */
    size_t cap_gold_t, cap_gold_c;
    /* causal, seq2seq: the record's ids and types (0 prompt, 1 completion)
     * are built here, not in the scratch (build_encode_gen.c) */
    int32_t *gen_ids;
    uint8_t *gen_types;
    size_t gen_cap;
    size_t gen_target;  /* seq2seq: the target's length, for the cap */
    ps_buf whole;       /* causal: prompt and completion joined, tokenized once */
    /* what the last ps_build_encode_gen did (ps_encoded's fields of the
     * same names, which ps_build_encode copies) */
    uint32_t gen_prefix;
    bool gen_eos, gen_end_in_text, gen_junction;
    char detail[512];   /* why a record does not fit (too_long) */
    bool a_only;        /* serving without SQL: segment A alone (the prompt,
                           or the question without a template) */
    struct ps_leak_scratch *leak_s; /* held-out sets: this worker's find */
    struct ps_leak_hits *leak_h;
} ps_encode_ctx;

void ps_encode_ctx_free(ps_encode_ctx *x);

/* A kept record's encoding (ids in the scratch until its next encode). */
typedef struct ps_encoded {
    ps_encoding enc;
    const char *a, *b;        /* the texts tokenized (b NULL: one sequence) */
    size_t a_len, b_len;
    bool too_long;            /* no shortening fits: reject (x->detail says why) */
    bool shortened;           /* the schema was selected to fit the prompt's budget */
    uint32_t tables_dropped, columns_dropped;
    /* a schema prompt with its SQL (not serving): whether the prompt holds
     * every table, and every column, the SQL uses (schema/shorten.c) */
    bool has_gold, gold_tables_kept, gold_columns_kept;
    bool lost_gold;           /* --reject-lost-schema and a gold table was cut */
    /* causal, seq2seq (build_encode_gen.c) */
    uint32_t prefix_len;      /* the post-processor's ids before the prompt (causal) */
    bool eos_appended;        /* the tokenizer's EOS ends the completion (causal) */
    bool end_in_text;         /* the completion's text ends in a special token */
    bool junction_merged;     /* a token of the whole text crosses from the prompt
                               * into the completion: they were tokenized apart */
} ps_encoded;

/* The tokens a schema prompt may take before its schema is selected:
 * max_prompt_length, else max_length less a quarter left for the
 * completion (all of it for a seq2seq source); 0 without max_length.
 * Config alone, so that serving computes the same. */
size_t ps_build_prompt_budget(const ps_build_config *cfg);

/* Tokenizes a kept record: question and sql, or the template's prompt and
 * completion, shortening a schema prompt over max_length (see
 * build_encode.c). Returns 0 (out->too_long may be set) or a negative
 * code with a message. */
int ps_build_encode(const ps_build_config *cfg, ps_encode_ctx *x, ps_tok_scratch *ts,
                    const ps_clean_item *it, ps_encoded *out, ps_error *err);
/* build_encode_gen.c: a causal or seq2seq record from the texts a (the
 * prompt) and b (the completion; NULL: empty). Fills enc with x's ids and
 * types (0 on the prompt or source, 1 on the completion or target) and
 * returns the length the layout holds to max_length (causal: the total,
 * seq2seq: the source), or a negative code. Nothing is truncated. */
int ps_build_encode_gen(const ps_build_config *cfg, ps_encode_ctx *x, ps_tok_scratch *ts,
                        const char *a, size_t an, const char *b, size_t bn, ps_encoding *enc,
                        ps_error *err);
/* The limit a causal or seq2seq record failed (and x->detail says so),
 * or 0 when it fits; `fit` is what ps_build_encode_gen returned. */
/* build_round_trip.c: whether a kept causal or seq2seq record's ids decode
 * back to its rendered text: PS_VGEN_RT_* (validate.h; a mismatch with
 * `detail` naming the first differing token), or -1 with err set. */
int ps_build_round_trip(const ps_build_config *cfg, ps_encode_ctx *x, ps_tok_scratch *ts,
                        const ps_encoded *e, char *detail, size_t dsz, ps_error *err);
/* A causal build that appends EOS needs one: the tokenizer's, or a
 * special token ending the template's completion. 0 or PS_EUSAGE naming
 * both ways out (PS_ENOMEM). */
int ps_build_check_end(const ps_build_config *cfg, ps_error *err);
enum { PS_GEN_OVER_TARGET = 1, PS_GEN_OVER_LENGTH = 2 };
int ps_build_gen_too_long(const ps_build_config *cfg, ps_encode_ctx *x, size_t fit);

/* Lays a kept record out as its spool holds it (the layout above) at the
 * end of `arena`, 4-byte aligned: a worker's part of spooling. *off:
 * where it starts; the ids follow at *off + ps_spool_ids_offset(strlen(id)).
 * 0, PS_ENOMEM or PS_ELIMIT. */
int ps_spool_record_put(ps_buf *arena, const char *id, const int32_t *ids, uint32_t n,
                        uint32_t type_boundary, size_t *off);
/* Appends a kept record of `n` tokens to its shard's index: its layout
 * (ps_spool_record_put's) was written to worker spool `spool` at `offset`;
 * `label_no` is the label's number in the accounting
 * (ps_clean_item.label_no), so that a label's string is looked up once,
 * not once a record. */
int ps_build_spool(ps_build_state *st, const ps_clean_result *r, uint32_t label_no, uint32_t n,
                   size_t spool, uint64_t offset, ps_error *err);
/* Writes `n` bytes of a chunk's spool records to worker spool `ws` (its
 * worker's own: no lock), *offset where they start. 0, PS_EIO or PS_ELIMIT
 * (a spool of 2^48 bytes). */
int ps_wspool_append(ps_wspool *ws, const void *p, size_t n, uint64_t *offset, ps_error *err);
/* A spooled record's layout in phase 2 (the spools mapped). */
static inline const char *ps_spool_record(const ps_build_state *st, const ps_spool_entry *e)
{
    return st->wspools[e->loc >> PS_SPOOL_OFFSET_BITS].data +
           (e->loc & (((uint64_t)1 << PS_SPOOL_OFFSET_BITS) - 1));
}
/* Unmaps, closes and removes the worker spools (what of them exists);
 * once done, does nothing. */
void ps_build_wspools_free(ps_build_state *st);

/* ---- build_release.c: freeing beside the build's last steps ------------- */

/* Runs fn(st) on a thread of its own (here, when none starts); r must stay
 * put until ps_build_release_join(r), which waits for it (and does nothing
 * when nothing was started). */
void ps_build_release_start(ps_build_release *r, void (*fn)(ps_build_state *),
                            ps_build_state *st);
void ps_build_release_join(ps_build_release *r);
/* Keeps the report's verdict and summary (kept_verdict, kept_summary),
 * then frees the validation state: the statistics and the report. For
 * once the reports are written into the set: nothing reads it after. */
void ps_build_release_validation(ps_build_state *st);
/* Frees the validation state and clears its pointers (what is NULL is
 * skipped): by the release above, or with the rest of the state. */
void ps_build_validation_free(ps_build_state *st);

/* Sorts labels and chooses buckets (before validation, which reports the
 * padding under them). */
int ps_build_plan(ps_build_state *st, ps_error *err);
/* Writes every shard into the staging dir. */
int ps_build_phase2(ps_build_state *st, ps_error *err);
/* Builds manifest.json's text (malloc'ed). */
char *ps_build_manifest(ps_build_state *st, ps_error *err);
double ps_build_now(void);
/* Whether the caller asked the build to stop (cfg->cancel); when so, sets
 * PS_ECANCELED in err and returns it. */
int ps_build_cancelled(const ps_build_config *cfg, ps_error *err);
/* ps_build_cancelled, or PS_ECANCELED when the checks running beside
 * phase 2 found that the gate stops the build (its work is discarded). */
int ps_build_stopping(ps_build_state *st, ps_error *err);

/* Runs the checks (thresholds from validate_json, a json_t * or NULL) on
 * the statistics, with the padding under `bounds` (`slice`: they are one
 * --part's, ps_vconfig_set_slice); and the SQL checks when `sql` checked
 * anything (NULL: none), and a generator set's and dialogue's (`gen`,
 * NULL: none). `threads` for the exact KS sums (ps_vconfig_set_threads):
 * the report's bytes do not depend on it. */
int ps_build_validate(const void *validate_json, ps_vstats *raw, ps_vstats *cleaned,
                      ps_vstats *tokenized, const ps_vpaired *paired, const ps_vsql *sql,
                      const uint32_t *bounds, size_t n_bounds, size_t threads, bool slice,
                      const ps_vgen_checks *gen, ps_vreport **report, ps_error *err);
/* Writes <prefix>report.json, <prefix>report.html and <prefix>stats.json
 * into dir (fsynced). stats.json's points and paired view are those the
 * report was made from (ps_build_validate); `sql` and `gen` (a pair set's)
 * may be NULL. *threaded, when not NULL, gains the seconds of the work
 * done on the report's threads (ps_vreport_texts). */
int ps_write_reports(const char *dir, const char *prefix, const ps_vreport *report,
                     const ps_vsql *sql, const ps_vgen *gen, double *threaded, ps_error *err);
/* The parent directory of `dir` and "<name>." for files written beside it. */
void ps_path_beside(const char *dir, char *parent, size_t psz, char *prefix, size_t nsz);

/* ---- build_leak.c: held-out sets (cfg->leak) ------------------------------ */
/* A worker's: compares a kept record with the held-out sets; one of
 * --drop-leaked's kinds rejects it leaked_<kind>. 0 or a negative code. */
int ps_build_leak_worker(const ps_build_config *cfg, ps_encode_ctx *x, ps_clean_item *it,
                         ps_error *err);
/* The commit's, in input order (the ids settled): counts a compared record,
 * with its examples. 0 or a negative code. */
int ps_build_leak_commit(ps_build_state *st, const ps_clean_item *it, ps_error *err);
/* The leakage check and the report's object after ps_build_validate. */
int ps_build_leak_report(ps_build_state *st, ps_error *err);
/* The manifest's "leakage" member (NULL without held-out sets). */
struct json_t *ps_build_leak_manifest(const ps_build_config *cfg);

#endif
