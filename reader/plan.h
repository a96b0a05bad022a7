/*
 * reader/plan.h — an epoch's plan: which records make which batch, in
 * which order, for which rank. A pure function of the manifest and the
 * plan options (docs/READER.md, "The plan"); it reads no shard.
 */
#ifndef PS_READER_PLAN_H
#define PS_READER_PLAN_H

#include "store/inspect.h"

#include <stdint.h>

/* What the plan depends on (besides the manifest). */
typedef struct ps_plan_options {
    uint32_t batch_size;     /* or 0 with max_tokens */
    uint64_t max_tokens;
    uint32_t pad_multiple;   /* >= 1 */
    int shuffle;
    uint32_t shuffle_window; /* blocks, >= 1 */
    uint32_t sort_pool;      /* batches per length-sorting pool, >= 1 */
    int drop_last;
    uint32_t rank, world_size;
    uint64_t seed, epoch;
} ps_plan_options;

/* One stored block, in the bucket's (permuted) block order. */
typedef struct ps_plan_block {
    uint32_t shard, seq, records;
} ps_plan_block;

typedef struct ps_plan_bucket {
    uint32_t bound;          /* inclusive token-length bound */
    uint32_t lower;          /* previous bound (lengths are > lower) */
    uint32_t padded_bound;   /* bound rounded up to pad_multiple */
    uint32_t batch_size;     /* full batches of this bucket */
    uint64_t records;
    uint32_t n_blocks;
    ps_plan_block *blocks;   /* permuted when shuffling */
    uint32_t window_blocks;
    uint32_t n_windows;
    uint64_t *window_first;  /* n_windows + 1 record offsets */
    uint32_t *window_users;  /* this rank's batches touching each window */
} ps_plan_bucket;

/* A batch. Its pool is `pool_count` consecutive records of its bucket's
 * record sequence (windows in order, records permuted within each window)
 * starting at `pool_start`; sorted by (length, position), the pool's
 * records [chunk, chunk + count) are the batch's. Without sorting (a pool
 * of one batch) the pool is the batch itself and chunk is 0. */
typedef struct ps_plan_batch {
    uint64_t pool_start;
    uint32_t pool_count;
    uint32_t chunk;
    uint32_t bucket;
    uint32_t count;
} ps_plan_batch;

typedef struct ps_plan {
    ps_plan_options opt;
    size_t n_buckets;
    ps_plan_bucket *buckets;
    uint64_t n_batches;      /* this rank's */
    ps_plan_batch *batches;
    uint64_t global_batches; /* all ranks */
    uint64_t records_total, records_rank, records_dropped;
    uint32_t max_batch;      /* largest batch_size of any bucket */
    uint32_t max_pool;       /* largest pool_count of any batch of any rank
                                (the same every epoch) */
    uint64_t max_batch_tokens; /* largest B * padded_bound of any batch */
} ps_plan;

/* Computes the plan of epoch opt->epoch for rank opt->rank. The manifest
 * is untrusted: the blocks and records it claims for shard s must fit in
 * trusted_bytes[s] bytes (the reader passes the files' real sizes; NULL:
 * the manifest's own `bytes`), so a small lying manifest cannot make the
 * plan allocate much. Returns 0, PS_EUSAGE (a world too large for the
 * records without drop_last, or an option out of range: the message says
 * which), PS_EFORMAT (counts that do not add up or cannot fit), PS_ELIMIT
 * (a plan larger than half of physical memory) or PS_ENOMEM. */
int ps_plan_build(ps_plan *p, const ps_manifest *m, const ps_plan_options *opt,
                  const uint64_t *trusted_bytes, ps_error *err);
void ps_plan_free(ps_plan *p);

/* Index of the window of bucket `b` holding record offset `pos`. */
uint32_t ps_plan_window_of(const ps_plan_bucket *b, uint64_t pos);

/* The permutation of the records of window `w` of bucket `b`: perm[i] is
 * the index, in stored order over the window's blocks, of the record at
 * position i. Identity without shuffle. */
void ps_plan_window_perm(const ps_plan *p, uint32_t bucket, uint32_t w, uint32_t *perm,
                         uint32_t n);

/* A digest of everything the plan depends on except seed and epoch (the
 * options, and the caller passes the manifest's hash), for resume checks. */
uint64_t ps_plan_options_hash(const ps_plan_options *opt, uint64_t manifest_hash);

#endif /* PS_READER_PLAN_H */
