/*
 * store/inspect.h — reading a shard set back: its manifest
 * (manifest_read.c) and a full verification of every shard against it
 * (verify.c). Used by `pairshard inspect`; internal interface.
 */
#ifndef PS_SHARDS_INSPECT_H
#define PS_SHARDS_INSPECT_H

#include "store/shards.h"

#include <stdbool.h>
#include <stdint.h>

/* Manifest format this pairshard reads (docs/FORMAT.md). */
#define PS_MANIFEST_FORMAT_VERSION 2

/* Limits on counts read from a manifest, checked before allocating. */
#define PS_MANIFEST_MAX_BYTES ((size_t)256 << 20)
#define PS_MANIFEST_MAX_SHARDS 1000000u
#define PS_MANIFEST_MAX_BUCKETS 65536u
#define PS_MANIFEST_MAX_LABELS 16777216u
#define PS_MANIFEST_MAX_SOURCE_NAME 128u

typedef struct ps_mf_count {
    uint64_t records, tokens, blocks;
} ps_mf_count;

typedef struct ps_mf_shard {
    char *file;                  /* a plain name: shard-NNNNN.mdb */
    uint64_t records, tokens, blocks, bytes;
    uint64_t uncompressed_bytes; /* valid when has_uncompressed */
    bool has_uncompressed;
    char sha256[65];             /* lowercase hex */
    ps_mf_count *buckets;        /* n_buckets entries, by bucket index */
} ps_mf_shard;

typedef struct ps_manifest {
    uint64_t xxh64;              /* XXH64 of the bytes parsed (identifies the set) */
    int format_version;
    int layout;                  /* ps_layout: "layout" (version 2), pair for version 1 */
    int append_eos;              /* causal: config.append_eos (1, 0), -1 when absent */
    int64_t eos_id;              /* tokenizer.special_ids.eos, -1 when none */
    char *tool_version;          /* "" when absent */
    char vocab_sha256[65];       /* "" when absent */
    uint64_t vocab_size;
    int id_width;
    size_t n_labels;
    char **labels;               /* label id = index */
    uint64_t *label_kept;        /* accounting.labels[name].kept, or NULL */
    size_t n_buckets;
    uint32_t *bounds;            /* inclusive upper bounds, ascending */
    uint64_t block_records;
    int zstd_level;              /* -1000 when absent */
    size_t n_shards;
    ps_mf_shard *shards;
    bool has_totals;
    ps_mf_count totals;
    ps_mf_count *total_buckets;  /* n_buckets entries when has_totals */
    struct json_t *accounting;   /* the "accounting" object as stated, or NULL */
    /* "sources" (a set of several sources; 0 and NULL when absent): source
     * id = index; names are unique, non-empty, printable. */
    size_t n_sources;
    char **source_names;
    ps_mf_count *source_counts;  /* records and tokens as stated (blocks 0) */
    /* Exclusive lower bound of each bucket, when not the previous bucket's
     * bound: a reader's union of several sets (reader/sets.c), whose
     * buckets are each set's in turn. NULL for a manifest read from a file. */
    uint32_t *lowers;
    struct json_t **source_accounting; /* each source's "accounting" as stated, or NULL */
} ps_manifest;

/* Records of bucket b are longer than this. */
static inline uint32_t ps_mf_lower(const ps_manifest *m, size_t b)
{
    return m->lowers ? m->lowers[b] : b ? m->bounds[b - 1] : 0;
}

/* Reads and checks DIR/manifest.json: the schema, every count bounded,
 * every shard file a plain name matching shard-[0-9]+.mdb (and none
 * twice), bucket bounds ascending. Returns 0, PS_ENOENT/PS_EIO (cannot
 * read it), PS_EVERSION (format_version newer than
 * PS_MANIFEST_FORMAT_VERSION), PS_EFORMAT (anything else wrong, with the
 * field named) or PS_ENOMEM. */
int ps_manifest_read(const char *dir, ps_manifest **out, ps_error *err);
/* The same from the manifest's bytes, already read (`path` names them in
 * messages): a reader holding the file open parses what it read. */
int ps_manifest_parse(const char *text, size_t len, const char *path, ps_manifest **out,
                      ps_error *err);
void ps_manifest_free(ps_manifest *m);

/* True when `name` is a shard file name a manifest may hold: no '/', not
 * "." or "..", and of the form shard-[0-9]+.mdb. */
bool ps_shard_name_ok(const char *name);

/* What verification measured, per shard and in total. */
typedef struct ps_verify_shard {
    uint64_t records, tokens, blocks;
    uint64_t block_bytes;        /* compressed bytes of the blocks */
    uint64_t raw_bytes;          /* their decompressed bytes */
    uint64_t file_bytes;
} ps_verify_shard;

typedef struct ps_verify_report {
    size_t n_shards, n_buckets, n_labels;
    ps_verify_shard *shards;
    ps_mf_count *buckets;        /* records, tokens, blocks per bucket */
    uint64_t *label_records;     /* per label id */
    uint64_t unlabeled;
    uint64_t block_bytes, raw_bytes;
    /* The first corruption (when verification returned PS_ECORRUPT):
     * shard index, bucket and block (-1 when not about a block) and the
     * kind: "lmdb", "block", "sequence", "records", "tokens", "labels",
     * "lengths", "lengths_db" (version 2's lengths database), "sources_db"
     * (the sources database of a set of several sources), "exec_db"
     * (the exec database of --execute builds), "counts",
     * "size", "sha256", "meta", "missing", "accounting" (the manifest's
     * sums, accounting.c). */
    long bad_shard, bad_bucket, bad_block;
    const char *kind;
    uint64_t *source_records;    /* per source id (n_sources entries), or NULL */
    size_t n_sources;
} ps_verify_report;

/* Reads every block of every shard of the set in `dir` and checks it
 * against the manifest `m` (see docs/FORMAT.md, "Verification"); fills
 * *rep (free with ps_verify_report_free) as far as it got. Returns 0 when
 * everything checks out, PS_ECORRUPT for the first problem found (the
 * message names the shard file, the bucket and block when it is about
 * one, and what is wrong), or another negative code when the check itself
 * could not run (PS_EVERSION for a shard newer than supported, PS_EIO,
 * PS_ENOMEM). */
int ps_set_verify(const char *dir, const ps_manifest *m, ps_verify_report *rep, ps_error *err);
/* The same through descriptors already open: fds[k] is shard k's file
 * (m->shards[k].file inside dir, which names it in messages), read with
 * pread only and left open. Whoever opened the files reads the set as
 * one snapshot, whatever happens to the paths meanwhile (merge). */
int ps_set_verify_fds(const char *dir, const ps_manifest *m, const int *fds,
                      ps_verify_report *rep, ps_error *err);

/* Checks the sums m's "accounting" states (accounting.c): records_in =
 * kept + rejected + duplicates for the totals, every label, unlabeled,
 * label_unreadable and every input; rejected = the sum of
 * rejected_by_reason; the labels (with unlabeled and label_unreadable)
 * and the inputs add up to the totals; label_count counts the labels;
 * kept = totals.records = the records of the shards. With `rep` (a
 * verification that read every block) the shards' records are those
 * read, and each label's kept must be the records stored with that label
 * (unlabeled's: those with none). Returns 0 (also when m states no
 * accounting), PS_ECORRUPT naming `where` (the manifest) and the field,
 * or PS_ENOMEM. */
int ps_accounting_check(const ps_manifest *m, const ps_verify_report *rep, const char *where,
                        ps_error *err);
void ps_verify_report_free(ps_verify_report *rep);

#endif /* PS_SHARDS_INSPECT_H */
