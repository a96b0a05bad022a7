/*
 * reader/plan.h — an epoch's plan: which records make which batch, in
 * which order, for which rank. A pure function of the manifest and the
 * plan options (docs/READER.md, "The plan"); it reads no shard.
 */
#ifndef PS_READER_PLAN_H
#define PS_READER_PLAN_H

#include "store/inspect.h"

#include <stdint.h>

/* A weighted mixture (mix.c; docs/READER.md, "Mixtures"): each record's
 * source and each source's weight. An epoch takes round(w * n) records of
 * a source of n records: floor(w) whole copies, and a seeded subset of
 * the rest. */
typedef struct ps_plan_mix {
    size_t n_sources;
    const double *weights;   /* per source */
    const uint64_t *counts;  /* records of each source in the set */
    const uint16_t *src;     /* each record's source, indexed like first[] */
    const uint64_t *first;   /* [shard * n_buckets + bucket]: where the records
                                of (shard, bucket) start in src, stored order */
    uint64_t n_records;
    uint64_t hash;           /* of the weights, for resume checks */
} ps_plan_mix;

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
    uint32_t pack;           /* causal packing: row length L, 0 off */
    int skip_long;           /* pack: leave out records longer than L */
    const ps_plan_mix *mix;  /* NULL: every record once an epoch */
} ps_plan_options;

/* One stored block, in the bucket's (permuted) block order. */
typedef struct ps_plan_block {
    uint32_t shard, seq, records;
    uint32_t bucket;         /* the stored bucket (packed plans mix buckets) */
    uint32_t stored;         /* records stored in the block */
    uint32_t copy;           /* a mixture: which copy of the block (records
                                is then those of its records this copy takes;
                                ps_plan_mix_takes) */
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

/* A record of a packed batch: its position in the (single) packed
 * bucket's record sequence, the row of the batch it is placed in, and its
 * length. A batch's segments are listed row by row, in placement order. */
typedef struct ps_plan_seg {
    uint64_t pos;
    uint32_t row, len;
} ps_plan_seg;

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
    /* Packed plans (opt.pack > 0): one bucket whose blocks are every
     * bucket's; a batch's pool_start and pool_count are its segments in
     * `segs`, count its rows, chunk 0. max_pool bounds the segments of any
     * batch of any epoch. */
    ps_plan_seg *segs;       /* this rank's */
    uint64_t n_segs;
    uint64_t records_skipped; /* skip_long, all ranks */
    uint64_t rows_rank;      /* this rank's rows */
    /* A mixture's choice for this epoch (mix.c): whole copies of each
     * source, and one bit per record: taken once more. */
    uint32_t *mix_full;
    uint64_t *mix_extra;
    uint64_t *mix_taken;     /* records of each source this epoch, all ranks */
} ps_plan;

/* Every record's length, for packed plans: the records of (shard s,
 * bucket b) in stored order start at len[first[s * n_buckets + b]]. */
typedef struct ps_pack_lengths {
    const uint32_t *len;
    const uint64_t *first;
    uint32_t min_len;        /* the shortest record (>= 1) */
} ps_pack_lengths;

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

/* The packed plan (plan_pack.c; docs/READER.md, "Packing"): every
 * bucket's blocks in one (permuted) order, windows of shuffle_window
 * blocks, each window's records permuted and packed by best-fit
 * decreasing into rows of opt->pack tokens, rows of consecutive windows
 * cut into batches of batch_size rows (max_tokens / pack), dealt
 * round-robin. Records longer than pack are left out and counted with
 * skip_long; without it they are PS_EUSAGE (the reader names them before
 * planning). Same returns as ps_plan_build. */
int ps_plan_build_packed(ps_plan *p, const ps_manifest *m, const ps_plan_options *opt,
                         const uint64_t *trusted_bytes, const ps_pack_lengths *lens,
                         ps_error *err);

/* Shared by plan.c and plan_pack.c. */
int ps_plan_check_options(const ps_plan_options *o, ps_error *err);
/* Whether shard s's bucket b can hold what the manifest says: blocks of
 * block_records records but the last (1 .. block_records), none when no
 * records. 0 or PS_EFORMAT naming the shard and bucket. Also used by
 * reader/lengths.c before it reads a block's lengths. */
int ps_plan_check_fill(const ps_manifest *m, size_t s, size_t b, ps_error *err);
int ps_plan_collect_blocks(ps_plan_bucket *pb, const ps_manifest *m, size_t b,
                           const uint64_t *trusted, uint64_t *used_blocks,
                           uint64_t *used_records, ps_error *err);
int ps_plan_make_windows(ps_plan_bucket *pb, uint32_t window_blocks, ps_error *err);
/* Half of physical memory (0 when unknown): what a plan may take. */
uint64_t ps_plan_memory_cap(void);

/* Index of the window of bucket `b` holding record offset `pos`. */
uint32_t ps_plan_window_of(const ps_plan_bucket *b, uint64_t pos);

/* The permutation of the records of window `w` of bucket `b`: perm[i] is
 * the index, in stored order over the window's blocks, of the record at
 * position i. Identity without shuffle. */
void ps_plan_window_perm(const ps_plan *p, uint32_t bucket, uint32_t w, uint32_t *perm,
                         uint32_t n);

/* mix.c: this epoch's choice of records (p->opt.mix set, p->opt's seed
 * and epoch): fills mix_full, mix_extra and mix_taken. 0 or PS_ENOMEM. */
int ps_plan_mix_choose(ps_plan *p, ps_error *err);
/* Replaces the bucket's blocks by the copies the epoch takes (the blocks
 * of a copy that takes none left out), each with its record count. */
int ps_plan_mix_expand(ps_plan *p, ps_plan_bucket *pb, const ps_manifest *m, ps_error *err);
/* The most records the bucket's stored blocks can give in any epoch:
 * each record ceil(w) times. */
uint64_t ps_plan_mix_most(const ps_plan *p, const ps_plan_bucket *pb, const ps_manifest *m);
/* The index into opt.mix->src of record `idx` of block `blk`. */
static inline uint64_t ps_plan_mix_index(const ps_plan *p, const ps_manifest *m,
                                         const ps_plan_block *blk, uint32_t idx)
{
    return p->opt.mix->first[(size_t)blk->shard * m->n_buckets + blk->bucket] +
           (uint64_t)blk->seq * m->block_records + idx;
}
/* Whether copy blk->copy of its block takes stored record `idx`. */
static inline int ps_plan_mix_takes(const ps_plan *p, const ps_manifest *m,
                                    const ps_plan_block *blk, uint32_t idx)
{
    uint64_t g = ps_plan_mix_index(p, m, blk, idx);
    uint32_t full = p->mix_full[p->opt.mix->src[g]];
    return blk->copy < full ||
           (blk->copy == full && (p->mix_extra[g >> 6] >> (g & 63) & 1));
}

/* A digest of everything the plan depends on except seed and epoch (the
 * options, and the caller passes the manifest's hash), for resume checks. */
uint64_t ps_plan_options_hash(const ps_plan_options *opt, uint64_t manifest_hash);

#endif /* PS_READER_PLAN_H */
