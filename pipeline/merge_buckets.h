/* pipeline/merge_buckets.h — merging parts whose automatic bucket bounds
 * differ: the bounds of the whole, and shards rewritten under them. */
#ifndef PS_SHARDS_MERGE_BUCKETS_H
#define PS_SHARDS_MERGE_BUCKETS_H

#include "pipeline/build_internal.h"

/* Adds the lengths of every record of the shard open as `fd` (`path`
 * names it; fd stays open) to *hist ([0..*hist_max], grown as needed;
 * NULL to start). Returns 0 or a negative code (the shard cannot be read,
 * a block is corrupt, memory). */
int ps_merge_hist_add(int fd, const char *path, uint64_t **hist, size_t *hist_max,
                      ps_error *err);

typedef struct ps_rebucket_spec {
    const char *what;              /* the shard, for messages */
    const uint32_t *old_bounds;    /* the part's */
    size_t n_old;
    const uint32_t *new_bounds;    /* the merged set's */
    size_t n_new;
    const uint32_t *remap;         /* part label id -> merged id */
    size_t n_labels;               /* the part's */
    size_t block_records;
    int id_width, level;
    int lengths;                   /* version 2: each block's lengths beside it */
    int sources;                   /* each block's sources beside it: a record's
                                      source in the part (its sources database,
                                      or 0) plus source_offset */
    uint32_t source_offset;
} ps_rebucket_spec;

/* Writes every record of `in` into `w` under the new bounds, in blocks of
 * block_records (the last of each bucket shorter), labels remapped; adds
 * records, tokens, blocks and uncompressed bytes to *res, per new bucket
 * and in total. Returns 0 or a negative code. */
int ps_merge_rebucket(ps_shard *in, const ps_rebucket_spec *spec, ps_shard_writer *w,
                      ps_shard_result *res, ps_error *err);

#endif
