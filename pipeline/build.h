/*
 * pipeline/build.h — `pairshard build`: ingest → clean → tokenize → bucket →
 * shards, published atomically (internal interface; the CLI calls it).
 *
 * Two phases:
 *   1. streaming: the calling thread reads raw records into chunks; worker
 *      threads clean and tokenize whole chunks and append their kept records
 *      to a spool file of their own in the staging directory, and look
 *      kept pairs up in the dedupe's parts (one part a thread at a time,
 *      each in input order); the calling thread commits chunks in input
 *      order (accounting, rejects) and deals kept records round-robin to
 *      shards (an index entry each, 16 bytes). Memory stays flat with
 *      corpus size but for the index.
 *   2. per shard: records are grouped by bucket (stable), cut into blocks
 *      of block_records, compressed in parallel and written in key order.
 * Nothing in the output depends on the thread count or on timing: record
 * order is input order, and every choice is a function of the input.
 */
#ifndef PS_SHARDS_BUILD_H
#define PS_SHARDS_BUILD_H

#include "common/ps_internal.h"
#include "pairshard/clean.h"
#include "pairshard/schema.h"
#include "pairshard/tokenizer.h"

#include <signal.h>

#define PS_BUILD_MAX_BUCKETS 64

/* Where phase 1 (reading, cleaning, tokenizing) stands, handed to the
 * progress callback. The library renders nothing: the caller decides what
 * to show and where (the CLI draws one line on a terminal). */
typedef struct ps_build_progress {
    uint64_t records;     /* input records committed so far: read, cleaned and
                             tokenized, in input order (all parts) */
    uint64_t bytes;       /* decompressed input bytes read so far */
    uint64_t total_bytes; /* summed size of the inputs that are regular files; 0: unknown */
    double seconds;       /* since the build started */
    double mb_per_s;      /* bytes / seconds / 1e6; 0 before any time passed */
    double eta_seconds;   /* time left at this rate; < 0 when unknown (no
                             total, a compressed input read past its size,
                             no rate yet) and on the final call */
    int final;            /* 1 on the last call, when phase 1 is over */
} ps_build_progress;

/* Called from the thread that runs ps_build_run, at most every 0.5 s while
 * phase 1 reads, and once with final = 1 after it. `p` is valid during the
 * call only. It must not call back into the build. */
typedef void (*ps_build_progress_fn)(void *user, const ps_build_progress *p);

/* A mixture's source (docs/BUILD.md, "Mixtures"): the inputs
 * cfg->inputs[first_input .. first_input + n_inputs), cleaned with its own
 * options, schemas and template (database ids are looked up in its own
 * schemas); its record ids are "<name>/<the id a build of it alone gives>". */
typedef struct ps_build_source {
    const char *name;                /* [A-Za-z0-9_.-]+, unique in the build */
    size_t first_input, n_inputs;
    ps_clean_options clean;          /* its fields, format, turns, database field... */
    const ps_schemas *schemas;       /* NULL: none */
    const ps_template *tmpl;         /* NULL: none */
    const char *const *schema_paths; /* its tables files, for the manifest */
    size_t n_schema_paths;
    const char *databases_dir;       /* or NULL */
} ps_build_source;

/* At most this many sources in a build (a record's source is a u16). */
#define PS_BUILD_MAX_SOURCES 4096

typedef struct ps_build_config {
    const char *const *inputs;
    size_t n_inputs;
    const char *out_dir;
    ps_clean_options clean;
    const char *rules_path;         /* NULL: no user rules */
    /* Text-to-SQL inputs (pairshard/schema.h), loaded by the caller; NULL:
     * none. With a template the set holds tokens(prompt) and
     * tokens(completion) as segments A and B (the prompt alone when the
     * template has no completion); a prompt with a {schema:...} placeholder
     * is never truncated: over its budget (max_prompt_length) its schema
     * keeps what the question names best (schema/select.c), and a record
     * that still does not fit max_length is rejected too_long. */
    const ps_schemas *schemas;
    const ps_template *tmpl;
    const char *const *schema_paths; /* the tables files, for the manifest */
    size_t n_schema_paths;
    const char *databases_dir;      /* --databases, or NULL */
    const ps_tokenizer *tokenizer;  /* loaded by the caller */
    const char *vocab_path;         /* the file the tokenizer came from (hashed) */
    const char *vocab_kind;         /* "vocab.txt" or "tokenizer.json" */
    size_t max_length;              /* 0: no truncation */
    /* ps_layout (pairshard/common.h): pair (the default) as above; causal
     * and seq2seq tokenize prompt and completion apart and never truncate:
     * a record over the limits is shortened (a schema prompt) or rejected
     * too_long (pipeline/build_encode_gen.c, docs/BUILD.md). */
    int layout;
    size_t max_target_length;       /* seq2seq: the target's cap (0: max_length) */
    /* The budget of a prompt with a schema (0: max_length less a quarter,
     * all of it for seq2seq): over it the schema is selected from the
     * question (schema/select.c), never from the SQL. */
    size_t max_prompt_length;
    int reject_lost_schema;         /* reject schema_lost_gold when a gold table was cut */
    /* causal: a completion not ending in a special token of its own (the
     * template's <|im_end|>, </s>) gets the tokenizer's EOS appended, so a
     * model learns to stop (docs/BUILD.md, "Where a completion ends");
     * --no-append-eos sets this */
    int no_append_eos;
    size_t shards;                  /* >= 1 */
    uint32_t buckets[PS_BUILD_MAX_BUCKETS]; /* explicit inclusive bounds */
    size_t n_buckets;               /* 0: choose automatically */
    size_t auto_buckets;            /* how many when automatic */
    size_t bucket_multiple;         /* automatic bounds are multiples of this */
    size_t block_records;
    int zstd_level;
    size_t threads;                 /* worker threads, >= 1 */
    size_t part_index, part_count;  /* --part K/N; part_count 0: whole input */
    ps_build_progress_fn progress;  /* NULL: no progress reports */
    void *progress_user;            /* passed to `progress` */
    const char *config_json;        /* the effective config, recorded verbatim */
    void *validate_json;            /* json_t *: thresholds and modes, or NULL */
    int no_gate;                    /* publish even when a check fails */
    int force;                      /* replace a non-empty DIR that is not a shard set */
    /* Polled during the build: when it becomes non-zero the build stops,
     * removes its staging directory and returns PS_ECANCELED, leaving
     * out_dir as it was (once the new set is swapped in it completes).
     * A signal handler may set it; the library installs none. NULL: none. */
    const volatile sig_atomic_t *cancel;
    /* Held-out sets (pipeline/leak_load.h), opened by the caller; NULL:
     * none. Each kept record is compared (its drop kinds rejected
     * leaked_<kind>), counted in input order, reported and gated. */
    struct ps_leak_check *leak;
    /* A mixture: the sources, in the config's order, whose inputs together
     * are `inputs` (each a contiguous run of it); `clean` holds the options
     * all share (rules, duplicates, UTF-8 policy, limits) and `schemas` and
     * `tmpl` are NULL. 0: one source, the options above (no "sources"
     * anything in the set). */
    const ps_build_source *sources;
    size_t n_sources;
    /* The records' own difficulty field (candidates, comma-separated), whose
     * values are the statistics' hardness levels; NULL: Spider's classes of
     * each record's SQL (schema/hardness.c). */
    const char *difficulty_field;
} ps_build_config;

/* The leakage limits a build with held-out sets judges by: its validate
 * config's leakage_max_<kind>, overridden by those cfg->leak was given.
 * 0 or the config's error. */
struct ps_leak_limits;
int ps_build_leak_limits(const ps_build_config *cfg, struct ps_leak_limits *l, ps_error *err);

/* Fills the defaults: 1 shard, automatic buckets (8, multiples of 8),
 * max_length 512, 128 records a block, zstd level 3, 1 thread. */
void ps_build_config_init(ps_build_config *cfg);

/* Where a build's time went (--profile): wall seconds per phase, and per
 * thread of phase 1 the time busy and the time waiting. "Serial" is the
 * time no worker can share: the set-up, the calling thread's reading and
 * committing, the checks, phase 2's single-threaded part and publishing.
 * The library only measures; the caller renders. */
#define PS_BUILD_PROFILE_THREADS 64
typedef struct ps_build_profile {
    double wall;                  /* the whole ps_build_run */
    double setup, phase1, checks, phase2, publish; /* wall seconds of each phase */
    double teardown;              /* after publication: the state freed, the staging
                                   * directory removed (what was not freed before) */
    double checks_threaded;       /* of the checks on the calling thread (1 thread), the
                                   * seconds of the exact KS sums, which more threads
                                   * share (ps_vconfig_set_threads); 0 beside phase 2 */
    double reports_threaded;      /* likewise: the seconds serialising the reports'
                                   * per-label entries (ps_report_dump_labels) */
    double read, commit, wait;    /* phase 1's calling thread: filling chunks,
                                   * committing them, waiting for workers */
    double stats, write;          /* phase 1's stages behind the commit (threads > 1),
                                   * a thread each: busy seconds adding statistics,
                                   * writing rejects and indexing spooled records; 0 when the commit
                                   * does both itself (1 thread) */
    size_t workers;               /* phase 1's worker threads */
    bool calling_worker;          /* 1 thread: no worker thread; the calling
                                   * thread cleaned (worker_busy[0] its seconds
                                   * cleaning and tokenizing) */
    double worker_busy[PS_BUILD_PROFILE_THREADS]; /* the first 64 workers, each */
    double worker_wait[PS_BUILD_PROFILE_THREADS];
    double busy_total;            /* all workers' busy seconds together */
    double phase2_encode;         /* phase 2: all threads' seconds compressing blocks */
    double phase2_sort;           /* phase 2's shard writers (seconds summed over
                                   * them): records grouped by
                                   * bucket, blocks planned */
    double phase2_put;            /* ... writing compressed blocks into LMDB */
    double phase2_finish;         /* ... committing, the compacted copy (hashed as it
                                   * is written: ps_shard_writer_finish_hashed), fsync */
    size_t phase2_writers;        /* shards written at once: min(threads, shards),
                                   * fewer under a tight descriptor limit */
    double serial;                /* seconds of work no worker shares (see above) */
    double serial_fraction;       /* serial / wall */
    /* CPU seconds, which other processes on the machine do not inflate:
     * the calling thread's (with threads > 1 the serial chain: reading,
     * committing, checks, phase 2's writes, publishing; with 1 thread all
     * of the work) and the whole process's. With threads > 1 their ratio
     * is the serial fraction of the CPU work. */
    double cpu_calling, cpu_process;
} ps_build_profile;

typedef struct ps_build_summary {
    ps_clean_counts counts;
    uint64_t tokens;
    uint64_t bytes_on_disk;
    size_t n_buckets;
    uint32_t buckets[PS_BUILD_MAX_BUCKETS];
    size_t n_labels;
    double seconds;
    char verdict[8];      /* "pass", "warn" or "fail" */
    int gate_failed;      /* a check failed: nothing was published */
    char report_path[4096]; /* where report.json was written */
    char *report_summary; /* the terminal summary (free() it) */
    ps_build_profile profile; /* where the time went */
} ps_build_summary;

/* Runs the build and publishes out_dir atomically: on success the
 * directory holds the new set; on failure it holds what it held before
 * (or does not exist) and the staging directory is removed. The checks
 * (validate/) run before the shards are written: when one fails and
 * no_gate is off, nothing is published, the report is written beside
 * out_dir ("<out_dir>.report.json" and ".html") and summary->gate_failed
 * is set; the call still returns 0. Returns 0, or a negative code with a
 * message (an input error names the file). */
int ps_build_run(const ps_build_config *cfg, ps_build_summary *summary, ps_error *err);

/* ---- merge.c -------------------------------------------------------------- */

typedef struct ps_merge_opts {
    int no_gate;         /* publish even when a check fails */
    int gate_failed;     /* out: a check failed, nothing was published */
    char **summary;      /* out, may be NULL: the validation summary (free() it) */
    int force;           /* replace a non-empty DIR that is not a shard set */
    const volatile sig_atomic_t *cancel; /* as ps_build_config.cancel; may be NULL */
    /* May be NULL: called on the calling thread at each step of reading
     * part `part` (ps_merge_hook_step), so that a test can change a part
     * at that very point; pairshard itself sets none. */
    void (*hook)(void *user, size_t part, int step);
    void *hook_user;
    /* Joining independent sets: source renames, old -> new, applied to
     * the last source named old (merge_join.c). */
    const char *const *rename_from;
    const char *const *rename_to;
    size_t n_rename;
} ps_merge_opts;

/* The steps ps_merge_opts.hook is called at, for each part in turn. */
enum ps_merge_hook_step {
    PS_MERGE_HOOK_MANIFEST, /* its manifest read, no other file of it opened yet */
    PS_MERGE_HOOK_VERIFIED, /* every file open, the shards checked */
    PS_MERGE_HOOK_COPIED,   /* the merged set written, not yet published */
};

/* Publishes the partial sets dirs[0..n) (parts 0..n-1 of one --part build,
 * in order) as one set at out_dir, atomically, after validating the
 * merged statistics (a failed check publishes nothing, writes the report
 * beside out_dir and sets opts->gate_failed). Returns 0, PS_EUSAGE when
 * the parts do not belong together (the message says how), PS_EVERSION,
 * PS_ECORRUPT, PS_EIO or PS_ENOMEM. */
int ps_merge_run(const char *out_dir, const char *const *dirs, size_t n, ps_merge_opts *opts,
                 ps_error *err);

/* ---- buckets.c ------------------------------------------------------------ */

/* Chooses at most `k` inclusive bounds, multiples of `multiple` (the last
 * may be max_len), minimising the padding of the records whose lengths
 * histogram is hist[0..max_len]. Writes the bounds ascending; returns how
 * many (>= 1 when any record exists, 0 for an empty histogram). */
size_t ps_buckets_choose(const uint64_t *hist, size_t max_len, size_t k, size_t multiple,
                         uint32_t *bounds);

/* Index of the first bound >= len, or n when none. */
size_t ps_bucket_of(const uint32_t *bounds, size_t n, uint32_t len);

/* ---- outdir.c, publish.c ------------------------------------------------- */

/* What the publication of a set at DIR must respect. */
typedef struct ps_publish_opts {
    const char *const *inputs; /* files (or directories) the set is made from */
    size_t n_inputs;
    int force;                 /* replace a non-empty directory that is not a set */
    const volatile sig_atomic_t *cancel; /* non-zero: stop before the swap */
} ps_publish_opts;

/* Whether `dir` may be replaced by a new set: it is missing, an empty
 * directory or a shard set (a manifest.json whose format fields are
 * pairshard's), or any directory when o->force. Never a symbolic link, a
 * non-directory, a directory holding one of o->inputs or the current
 * directory. Returns 0 or PS_EUSAGE with a message naming `dir`. */
int ps_output_dir_check(const char *dir, const ps_publish_opts *o, ps_error *err);

/* A staging directory "<parent>/.<name>.tmp.XXXXXX" beside DIR (the name
 * shortened with a hash when it would pass NAME_MAX): `lock` is a file in
 * it its builder holds an exclusive flock on for its whole life, and the
 * new set is written into `set`, which the publication swaps with DIR. */
typedef struct ps_staging {
    char *root;  /* the staging directory */
    char *set;   /* root/set: where the new set is written */
    int lock_fd; /* -1 when none */
} ps_staging;

/* Checks DIR (ps_output_dir_check), creates its missing parents and a
 * locked staging directory beside it into *stg, first removing stale
 * staging directories of DIR: those whose lock no live process holds,
 * on whatever host or in whatever PID namespace it runs. Returns 0,
 * PS_EUSAGE (DIR refused) or PS_EIO. */
int ps_staging_create(const char *dir, const ps_publish_opts *o, ps_staging *stg,
                      ps_error *err);
/* fsyncs every file in stg->set and the directory itself, checks DIR again
 * and o->cancel, then replaces DIR with it atomically (renameat2
 * RENAME_EXCHANGE when DIR exists, rename otherwise). Returns 0, PS_EUSAGE,
 * PS_ECANCELED (DIR untouched) or PS_EIO. */
int ps_staging_publish(ps_staging *stg, const char *dir, const ps_publish_opts *o,
                       ps_error *err);
/* Removes the staging directory (with the previous set after a
 * publication), releases its lock and frees *stg. Safe on a zeroed one. */
void ps_staging_discard(ps_staging *stg);
/* Removes a directory tree (best effort; for staging directories). */
void ps_remove_tree(const char *path);
/* Writes `len` bytes to `dir/name` and fsyncs it. 0 or PS_EIO. */
int ps_write_file(const char *dir, const char *name, const char *data, size_t len,
                  ps_error *err);
/* The same for a file at the top of a staged set, without the fsync:
 * ps_staging_publish fsyncs every such file before the set is published,
 * so this only starts the file's writeback, which the disk then does
 * while the build goes on. 0 or PS_EIO. */
int ps_write_set_file(const char *set, const char *name, const char *data, size_t len,
                      ps_error *err);

#endif /* PS_SHARDS_BUILD_H */
