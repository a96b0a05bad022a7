/*
 * reader/reader_internal.h — the reader's insides, shared by reader.c (the
 * API and the worker pool), window.c (shards and decoded windows) and
 * state.c (resumption blobs). Not installed.
 */
#ifndef PS_READER_INTERNAL_H
#define PS_READER_INTERNAL_H

#include "pairshard/reader.h"
#include "reader/device.h"
#include "reader/plan.h"
#include "store/inspect.h"

#include <pthread.h>
#include <stdint.h>

/* A shard of the set, opened when its first block is needed. The file
 * descriptor taken at open pins the file the manifest named: a build that
 * publishes a new set at the same path meanwhile does not change what
 * this reader reads. */
typedef struct rd_shard {
    pthread_mutex_t mu;   /* one LMDB lookup at a time per shard */
    int fd;               /* -1 once LMDB has its own, or when unavailable */
    int state;            /* 0 closed, 1 open, 2 unusable (err_msg says why) */
    ps_shard *sh;
    int err_code;
    char *err_msg;
} rd_shard;

/* The decoded records of one window of a bucket. A damaged block (or a
 * block of a shard that cannot be opened) does not fail the window: its
 * records are marked, and only the batches that hold one of them report
 * it (or, with skip_corrupt, go without them). */
enum { WIN_LOADING = 1, WIN_READY = 2, WIN_FAILED = 3 };
typedef struct rd_window {
    struct rd_window *next_free; /* in the reader's spare list */
    uint32_t cap_blocks, cap_recs;
    uint32_t *perm;       /* scratch for the record permutation */
    int state;
    uint32_t users_left;  /* this rank's batches still to be filled from it */
    uint32_t n;           /* records */
    uint32_t n_blocks;
    ps_buf *bufs;         /* decompressed block contents */
    ps_buf raw;           /* one block's stored bytes while it is decoded */
    ps_block_view *views; /* a damaged block's view has only n set */
    int *blk_code;        /* per block: 0, or why it cannot be used */
    char **blk_msg;       /* ... and the message naming shard, bucket and block */
    uint32_t n_bad;       /* damaged blocks */
    uint32_t *rec_block;  /* per position (permuted): block within window */
    uint32_t *rec_index;  /* ... and record within that block */
    uint32_t *rec_phys;   /* scratch: taken records' indices in their blocks */
    uint16_t *rec_src;    /* per position (permuted): the record's source */
    int err_code;
    char *err_msg;
} rd_window;

enum { SLOT_FREE, SLOT_BUSY, SLOT_READY, SLOT_HELD, SLOT_ERROR };
typedef struct rd_slot {
    int state;
    uint64_t step;
    ps_batch batch;
    void *host;           /* the batch's arrays, one after another (pair:
                             input_ids | attention_mask | token_type_ids |
                             labels | lengths; other layouts: assemble.c) */
    size_t host_bytes;
    size_t used_bytes;    /* of host, by the batch in it (what is copied) */
    int how;              /* ps_dev_host_alloc's */
    void *dev;            /* same layout on the device, or NULL */
    void *event;
    int event_pending;
    const char **ids;
    ps_buf idbuf;
    size_t *id_off;
    int32_t *srcs;        /* the batch's records' sources */
    int err_code;
    char err_msg[PS_ERROR_MESSAGE_MAX];
    uint32_t skipped_records;
} rd_slot;

struct ps_reader {
    char *dir;
    ps_manifest *m;
    uint64_t manifest_hash;
    uint64_t *trusted_bytes; /* per shard: what the plan may believe (window.c) */
    ps_reader_options opt;
    int layout;           /* the set's ps_layout */
    /* Packing: every record's length, read at open (lengths.c). */
    uint32_t *len_cache;
    uint64_t *len_first;  /* [shard * n_buckets + bucket] into len_cache */
    uint32_t min_len;
    ps_plan_options popt;
    ps_plan plan;
    rd_shard *shards;
    rd_window ***win;     /* [bucket][window], NULL when not loaded */
    rd_window *spare;     /* freed windows kept with their buffers for reuse */
    int n_spare;

    int device;           /* in use, or -1 */
    ps_dev_stream *stream;
    int pinned, mlocked;
    size_t elem;          /* 4 or 8 */
    rd_slot *slots;
    int n_slots;

    pthread_mutex_t mu;
    pthread_cond_t cv_work, cv_ready, cv_window;
    pthread_t *threads;
    int n_threads, running, stop;
    uint64_t next_claim, next_deliver;
    void *c_dctx;         /* the consumer's, for filling while it waits */
    void *c_refs;
    ps_reader_stats st;
    /* Sources (sources.c): each record's source, indexed like len_first,
     * when the set has several or weights are given; the names; the
     * weights; the mixture the plan reads. */
    uint16_t *src_cache;
    uint64_t *src_first;
    size_t n_sources;
    char **source_names;
    uint64_t *source_counts;
    double *weights;
    ps_plan_mix mix;
    /* Several sets read as one (sets.c): m is their union; per set its
     * directory, manifest, first source id and label ids into the union's;
     * per shard its set and index there. n_sets 0: one set, r->dir. */
    size_t n_sets;
    char **set_dirs;
    ps_manifest **set_m;
    uint32_t *set_src_off;
    uint32_t **label_remap;
    uint32_t *shard_set, *shard_local;
    uint32_t *set_boff;   /* per set: its first bucket in the union */
};

/* Bucket b of the union as shard s's file numbers it. */
static inline uint32_t rd_local_bucket(const ps_reader *r, size_t s, uint32_t b)
{
    return r->n_sets ? b - r->set_boff[r->shard_set[s]] : b;
}

/* The directory holding shard s. */
static inline const char *rd_shard_dir(const ps_reader *r, size_t s)
{
    return r->n_sets ? r->set_dirs[r->shard_set[s]] : r->dir;
}

/* Where a record of a batch sits: its window's view and index. */
typedef struct rec_ref {
    const ps_block_view *v; /* NULL: the record's block is damaged */
    uint32_t i;             /* record in the block (damaged: the block in its window) */
    uint32_t pos;           /* in the pool, to break ties: the sort must not depend on qsort */
    uint32_t row;           /* causal: the batch row it goes to */
    const struct rd_window *w;
    uint16_t src;           /* the record's source */
} rec_ref;

/* Element k of a dtype array (elem: 4 for int32, 8 for int64). */
static inline void rd_put_elem(void *base, size_t elem, size_t k, int64_t v)
{
    if (elem == 8)
        ((int64_t *)base)[k] = v;
    else
        ((int32_t *)base)[k] = (int32_t)v;
}

/* A record's class label as batches hold it: -1 for none. */
static inline int64_t rd_class_label(const rec_ref *x)
{
    uint32_t lab = x->v->label[x->i];
    return lab == PS_LABEL_NONE ? -1 : (int64_t)lab;
}

/* assemble.c: the causal and seq2seq batches (the pair batch is
 * reader.c's). refs[0..n) are the batch's records (segments), each with
 * its row set; B rows. Return 0 or PS_ENOMEM. */
int rd_fill_causal(ps_reader *r, rd_slot *sl, const rec_ref *refs, uint32_t n, uint32_t B,
                   uint32_t bucket_T);
int rd_fill_seq2seq(ps_reader *r, rd_slot *sl, const rec_ref *refs, uint32_t n,
                    uint32_t bucket_T);
/* The largest slot a batch of these sizes needs (B rows, BT and BTt
 * token cells, nseg segments), for any layout. */
size_t rd_slot_bytes(const ps_reader *r, size_t B, size_t BT, size_t nseg);
/* Copies the records' ids into the slot (sl->ids[0..n)). */
int rd_copy_ids(rd_slot *sl, const rec_ref *refs, uint32_t n);

/* lengths.c: reads every block's record lengths (packing) and refuses a
 * record longer than the pack unless skip_long. */
int rd_lengths_load(ps_reader *r, ps_error *err);
void rd_lengths_free(ps_reader *r);

/* window.c */
/* The record lengths of block (b, seq) of shard s (the shard's "lengths"
 * database; valid until the next call for that shard). One caller at a
 * time (reader open). */
int rd_shard_lengths(ps_reader *r, size_t s, uint32_t b, uint32_t seq, const uint32_t **lens,
                     size_t *n, ps_error *err);
/* The sources of block (b, seq) of shard s (its "sources" database). */
int rd_shard_sources(ps_reader *r, size_t s, uint32_t b, uint32_t seq, const uint16_t **src,
                     size_t *n, ps_error *err);
/* sources.c: each record's source, the names and the weights (at open). */
int rd_sources_load(ps_reader *r, const char *dir, ps_error *err);
void rd_sources_free(ps_reader *r);
/* The source of stored record idx of block blk (0 in a set of one source). */
static inline uint16_t rd_record_source(const ps_reader *r, const ps_plan_block *blk,
                                        uint32_t idx)
{
    if (!r->src_cache)
        return 0;
    return r->src_cache[r->src_first[(size_t)blk->shard * r->m->n_buckets + blk->bucket] +
                        (uint64_t)blk->seq * r->m->block_records + idx];
}
/* Decodes block (b, seq) of shard s to copy record idx's id into out. */
int rd_record_id(ps_reader *r, size_t s, uint32_t b, uint32_t seq, uint32_t idx, char *out,
                 size_t cap, ps_error *err);
int rd_shards_open(ps_reader *r, ps_error *err);
void rd_shards_close(ps_reader *r);
/* Makes window w of bucket b available to the caller (loading it with the
 * caller's decompression context when nobody has); called and returns
 * with r->mu held. Returns the window (which may be WIN_FAILED). */
rd_window *rd_window_acquire(ps_reader *r, uint32_t b, uint32_t w, void *dctx);
/* One batch done with the window; frees it after its last. r->mu held. */
void rd_window_release(ps_reader *r, uint32_t b, uint32_t w);
void rd_windows_free(ps_reader *r);
int rd_windows_alloc(ps_reader *r, ps_error *err);

/* sets.c: the union of the sets in dirs[0..n) (n >= 2) into r->m and the
 * per-set fields; PS_EUSAGE naming two sets whose tokenizer, layout or
 * block size differ, or two sources of one name. */
int rd_sets_open(ps_reader *r, const char *const *dirs, size_t n, ps_error *err);
void rd_sets_free(ps_reader *r);

/* options.c: the caller's options resolved (defaults, environment, ranges). */
int rd_resolve_options(const ps_reader_options *in, ps_reader_options *o, ps_error *err);

/* slots.c */
int rd_slots_alloc(ps_reader *r, ps_error *err);
void rd_slots_free(ps_reader *r);

/* state.c */
void rd_state_encode(const ps_reader *r, ps_reader_state *out);
typedef struct rd_state {
    uint64_t seed, epoch, position, plan_hash, set_hash;
    uint32_t rank, world_size;
    uint32_t batch_size, pad_multiple, shuffle_window, sort_pool;
    uint64_t max_tokens;
    uint8_t shuffle, drop_last, skip_long;
    uint32_t pack;
} rd_state;
int rd_state_decode(const void *bytes, size_t len, rd_state *out, ps_error *err);

#endif /* PS_READER_INTERNAL_H */
