/*
 * pairshard/reader.h — stage 5: streaming a shard set into padded training
 * batches (docs/READER.md has the full semantics).
 *
 *   ps_reader_options o;
 *   ps_reader_options_init(&o);          // batch_size 32, shuffle on, seed 0
 *   o.batch_size = 64;
 *   ps_reader *r;
 *   ps_error err;
 *   if (ps_reader_open("shards/", &o, NULL, &r, &err) < 0) { puts(err.message); ... }
 *   for (;;) {
 *       const ps_batch *b;
 *       int rc = ps_reader_next(r, &b, &err);
 *       if (rc == 0) break;                 // end of this rank's epoch
 *       if (rc < 0) { puts(err.message); break; }
 *       train(b->input_ids, b->attention_mask, b->B, b->T);
 *       ps_batch_release(r, b);
 *   }
 *   ps_reader_set_epoch(r, 1, &err);        // next epoch, a new shuffle
 *   ps_reader_close(r);
 *
 * The plan. An epoch's batches are a pure function of (the manifest, seed,
 * epoch, rank, world_size, batching options): within each bucket the blocks
 * are permuted, grouped into windows of `shuffle_window` blocks and the
 * records of each window permuted; the bucket's records are cut into
 * batches in that order, and each run of `sort_pool` batches shares its
 * records sorted by length (less padding); the batches of all buckets are interleaved in a
 * random order (no sawtooth of lengths); the global sequence is dealt
 * round-robin to ranks (global batch g goes to rank g % world_size). Thread
 * count, prefetch depth, device and timing never change it. Computing the
 * plan reads the manifest only, never a shard.
 *
 * Every rank gets the same number of batches. With drop_last off every
 * record is delivered exactly once per epoch across all ranks (to make the
 * batch count divisible by world_size, the last full batches of the
 * buckets with the largest batches are split in two); with drop_last on
 * every batch is full (each bucket's partial batch is dropped, and then the
 * last batches of the global order so the count divides evenly), and
 * ps_reader_info says how many records were dropped.
 *
 * Threads. A pool of worker threads decodes blocks (one read of each block
 * per epoch per rank: a window is decoded once and shared by the batches
 * that need it) into a ring of `prefetch` batch slots; batches come out of
 * ps_reader_next in plan order whatever the timing. Memory is the slots
 * plus a few decoded windows per bucket: flat in the size of the set.
 * A ps_reader is used by one consumer thread (open, next, release,
 * get_state, get_info, set_epoch and close from the same thread, or under
 * the caller's own lock); ps_reader_get_stats, get_label and
 * get_bucket_bound may also be called from other threads.
 *
 * Memory and devices. Slots are pinned host memory (cudaHostAlloc) when
 * the CUDA runtime loads and a GPU is present, and ordinary (optionally
 * mlocked) memory otherwise. pairshard never links the runtime: it loads
 * it with dlopen on first use, from $PAIRSHARD_CUDART when set (that file
 * only), else the first of libcudart.so.13, .so.12 and .so that loads. With `device` >= 0 and a GPU,
 * each ready slot is also copied to device buffers with cudaMemcpyAsync on
 * a stream of the reader's own, `prefetch` batches ahead; the batch then
 * carries device pointers and a CUDA event that the trainer's stream waits
 * on (cudaStreamWaitEvent) before reading them. Without a CUDA runtime,
 * a driver or a GPU, asking for a device is not an error: the reader runs on the host
 * and ps_reader_info's `device` says -1 (unless `require_device` is set).
 *
 * Errors follow pairshard/common.h: negative PS_E* codes and a message in
 * the optional ps_error. A damaged block is reported as
 * "DIR/shard-00003.mdb: bucket 2 block 17: <what is wrong>" by the call
 * that would deliver a batch holding one of its records (with
 * `skip_corrupt`, the batch comes without those records, and they are
 * counted); nothing exits or aborts.
 */
#ifndef PAIRSHARD_READER_H
#define PAIRSHARD_READER_H

#include "pairshard/common.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ps_reader ps_reader;

/* Padding: to the longest sequence of the batch (rounded up to
 * `pad_multiple`), or to the bucket's bound (every batch of a bucket has
 * the same T). */
typedef enum ps_pad_mode {
    PS_PAD_LONGEST = 0,
    PS_PAD_BUCKET = 1
} ps_pad_mode;

/* Element type of the batch's token arrays and lengths. (The struct fields
 * holding these values are `int`, so that comparing them with an int never
 * warns and the layout never depends on the compiler's enum size.) */
typedef enum ps_dtype {
    PS_DTYPE_INT32 = 0,
    PS_DTYPE_INT64 = 1
} ps_dtype;

enum {
    /* `device` value for host-only batches. */
    PS_DEVICE_HOST = -1,
    /* `rank` / `world_size` value meaning "from the environment": RANK and
     * WORLD_SIZE as torchrun sets them, else 0 and 1. */
    PS_FROM_ENV = -1
};

typedef struct ps_reader_options {
    size_t struct_size;     /* sizeof as the caller knows it: set by
                               ps_reader_options_init (pairshard/common.h,
                               "Options structs that grow") */
    /* Batching: exactly one of the two is non-zero. batch_size: sequences
     * per batch. max_tokens: a padded-token budget, B * T <= max_tokens
     * (fairseq's --max-tokens); the batch size of bucket b is
     * max(1, max_tokens / padded_bound(b)), so the plan needs no lengths
     * and every batch keeps the budget (a sequence longer than the budget
     * on its own still gets a batch of 1). Default: batch_size 32. */
    uint32_t batch_size;
    uint64_t max_tokens;
    int32_t pad_id;         /* input_ids padding; default 0 ([PAD] in BERT) */
    int pad_mode;           /* a ps_pad_mode: PS_PAD_LONGEST (default) or
                               PS_PAD_BUCKET */
    uint32_t pad_multiple;  /* round T up to a multiple of this; default 1 */
    int shuffle;            /* 1 (default): shuffle as above; 0: bucket by
                               bucket, records in stored order (each sorting
                               pool still sorted by length unless sort_pool
                               is 1) */
    uint64_t seed;          /* default 0 */
    uint64_t epoch;         /* default 0 */
    uint32_t shuffle_window; /* blocks per record-shuffle window; 0: 16,
                               or 128 with `pack` (packing fills rows
                               better from more records). Raised to hold
                               at least one batch. */
    int rank;               /* 0 .. world_size-1, or PS_FROM_ENV (default) */
    int world_size;         /* >= 1, or PS_FROM_ENV (default) */
    int drop_last;          /* 0 (default) or 1, see above */
    int threads;            /* worker threads; 0: 2 */
    int prefetch;           /* batch slots in the ring; 0: 4 (minimum 2) */
    int dtype;              /* a ps_dtype: PS_DTYPE_INT64 (default, what PyTorch wants) or
                               PS_DTYPE_INT32: token arrays and lengths;
                               labels are int64 either way */
    int device;             /* PS_DEVICE_HOST (default) or a CUDA ordinal */
    int require_device;     /* 1: fail (PS_EUSAGE) when `device` cannot be used */
    int mlock;              /* 1: mlock host slots (best effort) */
    int skip_corrupt;       /* 1: a batch holding records of a damaged block
                               is delivered without them (B smaller, 0 when
                               none is left, so ranks stay in step) and they
                               are counted, instead of failing next() */
    uint32_t sort_pool;     /* batches per length-sorting pool; 0: 8; 1: off.
                               Consecutive batches of a bucket form a pool
                               whose records are sorted by length before they
                               are dealt to its batches (in a shuffled order),
                               so a batch holds records of similar length. */
    /* Generator layouts (the set's manifest `layout`; docs/READER.md,
     * "Layouts" and "Packing"). Added in 0.2.0: a caller built against an
     * older header passes a smaller struct_size and gets the defaults. */
    uint32_t pack;          /* causal sets only (PS_EUSAGE otherwise):
                               0 (default): one record per row, padded per
                               batch; L > 0: rows of exactly L tokens, each
                               holding whole records laid out left to right
                               from column 0 (padding only at a row's end),
                               rows filled by best-fit decreasing over each
                               shuffle window's records. batch_size then
                               counts rows; max_tokens caps rows * L. */
    int skip_long;          /* pack: 1 leaves out records longer than L
                               (counted: ps_reader_info.records_skipped;
                               when that is every record, open fails with
                               PS_EEMPTY); 0 (default) refuses the set at
                               open with PS_EUSAGE naming the first such
                               record */
    int32_t decoder_start_id; /* seq2seq: >= 0 also fills decoder_input_ids
                               (labels shifted right by one, this id first,
                               pad_id where the label is -100); -1
                               (default): decoder_input_ids is NULL */
    /* Mixtures (docs/READER.md, "Mixtures"). Added after 0.2.0. A weight per
     * source, by name (ps_reader_get_source: the manifest's `sources`, or
     * the set's directory name for a set without): each epoch takes
     * round(w * n) records of a source of n — floor(w) whole copies and a
     * subset of the rest drawn from (seed, epoch, source), the same on
     * every rank. A source not named keeps weight 1 (every record once);
     * 0 leaves it out. Names and weights are read at open only. */
    size_t n_weights;       /* entries of the two arrays; 0 (default): none */
    const char *const *weight_names;
    const double *weights;  /* each in 0..65535 */
} ps_reader_options;

/* Fills the first `struct_size` bytes of `*o` with the defaults above and
 * sets o->struct_size; writes nothing past them. Call it through the macro
 * ps_reader_options_init(o), which passes the caller's sizeof (bindings
 * pass the size of their mirror of the struct). Returns 0, or PS_EINVAL
 * when `o` is NULL or struct_size is no size ps_reader_options has had
 * (nothing written). */
PS_API int ps_reader_options_init_size(ps_reader_options *o, size_t struct_size);
#define ps_reader_options_init(o) ps_reader_options_init_size((o), sizeof *(o))

/* A delivered batch. Arrays are row-major B x T (input_ids, attention_mask,
 * token_type_ids) or [B] (labels, lengths). The token arrays and lengths
 * hold `dtype` elements (int32_t or int64_t); labels are int64_t whatever
 * the dtype (what cross-entropy losses take). attention_mask is 1 on the sequence and 0 on padding;
 * token_type_ids 0 up to the record's type boundary, 1 after, 0 on
 * padding; labels are label ids (ps_reader_get_label) or -1 for unlabeled
 * records. Everything stays valid until ps_batch_release. */
typedef struct ps_batch {
    uint64_t epoch;
    uint64_t step;          /* index of the batch in this rank's epoch */
    uint32_t bucket;        /* bucket index (manifest "buckets") */
    uint32_t B, T;
    int dtype;              /* a ps_dtype */
    void *input_ids, *attention_mask, *token_type_ids, *labels, *lengths;
    const char *const *ids; /* B record ids, NUL-terminated */
    uint64_t real_tokens;   /* sum of lengths */
    /* Device copies (NULL when the batch is host only), same layout. */
    int device;             /* CUDA ordinal, or PS_DEVICE_HOST */
    void *d_input_ids, *d_attention_mask, *d_token_type_ids, *d_labels, *d_lengths;
    void *ready_event;      /* cudaEvent_t recorded after the copies */
    /* Generator layouts (docs/READER.md, "Layouts"). In the pair layout
     * these are 0 and NULL, and everything above is as described there.
     * In the causal and seq2seq layouts:
     *   - `labels` holds token targets, int64: [B x T] (causal) or
     *     [B x T_target] (seq2seq), equal to the token on completion
     *     positions (causal) or the target (seq2seq) and -100 on prompt
     *     positions and padding (HuggingFace's ignore index; models shift
     *     them themselves). A record's class label moves to class_labels.
     *   - token_type_ids (and d_token_type_ids) are NULL.
     *   - Causal packed: each of the B rows holds whole records
     *     ("segments") from column 0, in placement order; `ids` then has
     *     n_segments entries, `lengths` [B] is each row's real tokens.
     *     Unpacked, segment i is row i (n_segments == B).
     *   - Seq2seq: input_ids, attention_mask and lengths are the source
     *     [B x T]; the target is labels, decoder_attention_mask and
     *     decoder_input_ids [B x T_target]. */
    int layout;             /* a ps_layout */
    uint32_t T_target;      /* seq2seq: columns of the target arrays; else 0 */
    uint32_t n_segments;    /* records in the batch (B unless packed) */
    uint32_t max_seqlen;    /* longest segment (seq2seq: source) */
    void *class_labels;     /* int64 [n_segments]: label ids, -1 unlabeled */
    void *position_ids;     /* causal: dtype [B x T], restarting at 0 for
                               every segment, 0 on padding */
    int32_t *cu_seqlens;    /* causal: int32 [n_segments + 1], cumulative
                               segment lengths over the real tokens in
                               placement order (FlashAttention varlen's
                               cu_seqlens for input_ids[attention_mask == 1]) */
    void *seq_lens;         /* dtype [n_segments]: tokens of each segment
                               (seq2seq: of each source) */
    void *prompt_lens;      /* causal: dtype [n_segments], the ids before
                               each completion; seq2seq: NULL */
    void *seg_rows;         /* dtype [n_segments]: the row of each segment */
    void *target_lens;      /* seq2seq: dtype [B]; causal: NULL */
    void *decoder_attention_mask; /* seq2seq: dtype [B x T_target] */
    void *decoder_input_ids;      /* seq2seq with decoder_start_id >= 0:
                                     dtype [B x T_target]; else NULL */
    /* Device copies (NULL when host only or when the host array is). */
    void *d_class_labels, *d_position_ids, *d_cu_seqlens, *d_seq_lens, *d_prompt_lens,
        *d_seg_rows, *d_target_lens, *d_decoder_attention_mask, *d_decoder_input_ids;
    /* Added after 0.2.0: int32 [n_segments], each record's source id
     * (ps_reader_get_source; 0 for every record of a set of one source).
     * Host memory. */
    const int32_t *sources;
} ps_batch;

/* Resumption state: 128 bytes, safe to store and send anywhere (no
 * pointers). Treat it as opaque; for the record, the layout (version 1,
 * little-endian, offsets in bytes) is
 *
 *     0  "PSRS"          magic
 *     4  u32 version     1
 *     8  u64 seed
 *    16  u64 epoch
 *    24  u64 position    the next batch to deliver (0-based in the epoch)
 *    32  u64 plan_hash   every plan input but seed and epoch, manifest included
 *    40  u64 set_hash    XXH64 of manifest.json
 *    48  u32 rank        52  u32 world_size
 *    56  u32 batch_size  60  u32 pad_multiple
 *    64  u64 max_tokens
 *    72  u32 shuffle_window  76  u32 sort_pool
 *    80  u8  shuffle     81  u8  drop_last
 *    82  u8  skip_long   83  zero
 *    84  u32 pack        (0 in states written before packing existed)
 *    88  zero up to 119  reserved
 *   120  u64 checksum    XXH64 of bytes 0..119
 *
 * The options are stored beside their hash so that a refused resume can
 * name the one that differs. */
enum { PS_READER_STATE_BYTES = 128 };
typedef struct ps_reader_state {
    unsigned char bytes[PS_READER_STATE_BYTES];
} ps_reader_state;

/* Opens the shard set in `dir` (reads and checks its manifest; shards are
 * opened lazily, as their blocks are first needed), plans the epoch and
 * starts the workers.
 * @param dir     the set's directory; not NULL.
 * @param opt     may be NULL for the defaults; else initialised with
 *                ps_reader_options_init (struct_size is checked first).
 *                Copied.
 * @param resume  NULL to start at the first batch of opt->epoch; else a
 *                state from ps_reader_get_state (checked as untrusted):
 *                its seed, epoch and position replace the options', which
 *                must otherwise describe the same batching, rank and world
 *                size, and the set must be the same.
 * @param out     receives the reader (NULL on failure); not NULL.
 * @return 0, or a negative code (message in err):
 *   PS_EINVAL    opt->struct_size is unknown; `resume` belongs to another
 *                set, batching, rank or world size (the message names what
 *                differs), or its position is past the epoch
 *   PS_EUSAGE    an option out of range (threads, prefetch, pad_mode,
 *                dtype, batch_size, pad_multiple, sort_pool, device), RANK
 *                or WORLD_SIZE unset/invalid where needed, a world too large
 *                for the records without drop_last, one that drop_last
 *                leaves without a batch, or require_device without a GPU
 *   PS_ENOENT    no manifest.json in `dir`
 *   PS_EIO       the manifest or a shard cannot be read or opened; a CUDA
 *                call failed
 *   PS_EFORMAT   the manifest is malformed, or `resume` is damaged
 *   PS_EVERSION  the manifest's or the state's format version is unknown
 *   PS_ECORRUPT  a shard is missing or damaged so that the epoch cannot be
 *                planned
 *   PS_EEMPTY    the set holds no records, or an epoch would have no batches
 *                (every record longer than pack, left out by skip_long)
 *   PS_ELIMIT    the manifest or the plan is too large (beyond half of
 *                physical memory), or too many shards to open
 *   PS_ENOMEM    out of memory, or worker threads cannot start
 * Close the reader with ps_reader_close. */
PS_API int ps_reader_open(const char *dir, const ps_reader_options *opt,
                          const ps_reader_state *resume, ps_reader **out, ps_error *err);

/* Opens several shard sets as one mixture (docs/READER.md, "Mixtures"):
 * their records are planned, shuffled, dealt to ranks and resumed as one
 * set's. The sources are each set's own (manifest "sources"), or the set
 * itself as one source named after its directory's last component; names
 * must not repeat. Labels are united by name (ps_reader_get_label). The
 * sets must share a tokenizer (vocab_sha256, vocab_size and id width), a
 * layout and a block size: PS_EUSAGE naming both sets otherwise. With
 * n_dirs 1 it is ps_reader_open. A state resumes only the same sets in
 * the same order. Returns as ps_reader_open. */
PS_API int ps_reader_open_sets(const char *const *dirs, size_t n_dirs,
                               const ps_reader_options *opt, const ps_reader_state *resume,
                               ps_reader **out, ps_error *err);

/* Delivers the next batch of this rank's epoch, in plan order, blocking
 * while it is not ready (the wait is counted in the statistics).
 * @param batch  receives the batch on 1; it stays valid, and its slot
 *               taken, until ps_batch_release (or ps_reader_close).
 * @return 1 with *batch set; 0 at the end of the epoch (call
 *         ps_reader_set_epoch to go on); or a negative code (message in
 *         err), after which the reader stays usable and the next call goes
 *         on with the following batch:
 *   PS_ECORRUPT  a damaged block or shard (the message names the shard,
 *                bucket and block; with opt.skip_corrupt the batch comes
 *                short instead)
 *   PS_EIO       a shard cannot be read; a device copy failed
 *   PS_EVERSION  a shard's format version is unknown
 *   PS_ELIMIT    every slot is held by the caller: release one first
 *   PS_ENOMEM    out of memory
 * Consumer thread only (see "Threads" above). */
PS_API int ps_reader_next(ps_reader *r, const ps_batch **batch, ps_error *err);

/* Gives a delivered batch's slot back for reuse; `batch` and its arrays
 * are invalid from here on. Batches may be released in any order; with
 * device buffers, release only after the work that reads them has
 * completed (or been ordered after, on the reader's stream). NULL `r` or
 * `batch`, or a batch already released, is a no-op. Never fails. */
PS_API void ps_batch_release(ps_reader *r, const ps_batch *batch);

/* Saves where the reader stands into *out (not NULL): the next batch
 * ps_reader_next would deliver (batches delivered so far count as
 * consumed, released or not). A reader opened with this state delivers
 * exactly the batches this one would have delivered next, without reading
 * any data to get there.
 * @return 0 (it cannot fail). Consumer thread only. */
PS_API int ps_reader_get_state(const ps_reader *r, ps_reader_state *out);

/* Starts epoch `epoch` from its first batch (a new plan; undelivered
 * batches of the current epoch are abandoned; the workers stop and
 * restart). Batches still held stay valid until released.
 * @return 0, or (message in err) PS_EUSAGE (drop_last leaves this epoch
 *         without a batch), PS_ECORRUPT (a damaged shard stops the plan),
 *         PS_ELIMIT (a plan too large) or PS_ENOMEM; after a failure only
 *         ps_reader_set_epoch again, the getters and ps_reader_close may
 *         be called.
 * Consumer thread only. */
PS_API int ps_reader_set_epoch(ps_reader *r, uint64_t epoch, ps_error *err);

/* What the reader is doing, for trainers and benchmarks. Filled by
 * ps_reader_get_info; fields are only ever appended (pairshard/common.h,
 * "Structs the library fills"). */
typedef struct ps_reader_info {
    uint64_t epoch;
    int rank, world_size;
    uint64_t batches_per_epoch;   /* this rank's */
    uint64_t records_per_epoch;   /* delivered to this rank per epoch */
    uint64_t records_total;       /* in the set */
    uint64_t records_dropped;     /* by drop_last, all ranks, per epoch */
    uint32_t n_buckets;
    uint32_t n_labels;
    uint32_t slots;               /* prefetch depth */
    int threads;
    int device;                   /* the CUDA ordinal in use, or -1 */
    int pinned;                   /* 1: slots are cudaHostAlloc'ed */
    int mlocked;                  /* 1: slots are mlocked */
    int layout;                   /* the set's ps_layout */
    uint32_t pack;                /* the row length L, 0 unpacked */
    uint64_t records_skipped;     /* skip_long: left out per epoch, all ranks */
    uint64_t rows_per_epoch;      /* this rank's rows (B summed over batches) */
    uint32_t n_sources;           /* sources of the set (1 without `sources`) */
} ps_reader_info;

/* Counters since open (epochs included). Filled by ps_reader_get_stats;
 * fields are only ever appended. */
typedef struct ps_reader_stats {
    uint64_t batches, records;
    uint64_t tokens;              /* sum of B * T delivered (with padding) */
    uint64_t real_tokens;         /* sum of lengths delivered */
    uint64_t wait_ns;             /* time ps_reader_next spent blocked */
    uint64_t waits;               /* calls that found their batch not ready */
    uint64_t blocks_decoded, block_bytes, raw_bytes; /* intact blocks */
    uint64_t skipped_batches;     /* skip_corrupt: batches delivered short */
    uint64_t skipped_records;     /* ... and the damaged records they lacked */
    uint64_t h2d_bytes;           /* copied to the device */
    uint32_t ready;               /* batches ready and waiting now */
    uint32_t slots;
} ps_reader_stats;

/* Copies what the reader is doing (plan sizes, rank, slots, device) into
 * *out (not NULL), writing `size` bytes and no more: call it through the
 * macro ps_reader_get_info(r, out), which passes sizeof *out ("Structs the
 * library fills", pairshard/common.h). `info` changes only with
 * ps_reader_set_epoch.
 * @return 0, or PS_EINVAL (nothing written) when `size` is smaller than
 *         ps_reader_info has ever been (104 bytes). Consumer thread only. */
PS_API int ps_reader_get_info_size(const ps_reader *r, ps_reader_info *out, size_t size);
#define ps_reader_get_info(r, out) ps_reader_get_info_size((r), (out), sizeof *(out))

/* Copies the counters since open into *out (not NULL), consistently (taken
 * under the reader's lock), writing `size` bytes and no more: call it
 * through the macro ps_reader_get_stats(r, out), which passes sizeof *out.
 * @return 0, or PS_EINVAL (nothing written) when `size` is smaller than
 *         ps_reader_stats has ever been (104 bytes). Thread-safe: a
 *         monitoring thread may call it while the consumer runs. */
PS_API int ps_reader_get_stats_size(const ps_reader *r, ps_reader_stats *out, size_t size);
#define ps_reader_get_stats(r, out) ps_reader_get_stats_size((r), (out), sizeof *(out))

/* The name of label `id` (manifest "labels"; batches carry ids), or NULL
 * when id >= ps_reader_info.n_labels. The string is owned by the reader and
 * lives until ps_reader_close. Thread-safe (the labels never change). */
PS_API const char *ps_reader_get_label(const ps_reader *r, uint32_t id);

/* The name of source `id` (manifest "sources", or the set's directory
 * name for a set without; batches carry ids in `sources`), or NULL when
 * id >= ps_reader_info.n_sources. Owned by the reader, lives until
 * ps_reader_close. Thread-safe. */
PS_API const char *ps_reader_get_source(const ps_reader *r, uint32_t id);

/* Records of source `id` in the set (what a weight multiplies), or 0
 * when id >= n_sources. Thread-safe. */
PS_API uint64_t ps_reader_get_source_records(const ps_reader *r, uint32_t id);

/* The inclusive token-length bound of bucket `b`, or 0 when
 * b >= ps_reader_info.n_buckets. Thread-safe (the bounds never change). */
PS_API uint32_t ps_reader_get_bucket_bound(const ps_reader *r, uint32_t b);

/* Stops and joins the workers and frees everything, held batches included
 * (their pointers are invalid afterwards). NULL is a no-op. Call it from
 * the consumer thread, with no other call on `r` in progress. */
PS_API void ps_reader_close(ps_reader *r);

/* Checks a state blob from an untrusted place (its magic, version,
 * checksum and ranges: the layout is above ps_reader_state) without
 * opening a set.
 * @param bytes  `len` bytes; len must be PS_READER_STATE_BYTES.
 * @return 0, or PS_EFORMAT (wrong length, magic, checksum or a field out of
 *         range) or PS_EVERSION (a version this library does not read),
 *         with the reason in err. Thread-safe. */
PS_API int ps_reader_state_check(const void *bytes, size_t len, ps_error *err);

/* ---- execution fingerprints (sets built with --execute) --------------------
 *
 * A set built with --databases and --execute stores per record what its
 * gold SQL returned before and after cleaning (docs/FORMAT.md, "exec"):
 * the status (0 ok, 1 empty, 2 error, 3 timeout, 4 no_database;
 * PS_EXEC_NOT_RUN: not run, e.g. a record without a database), the rows
 * (up to the build's limit) and a hash of them (docs/REPORT.md,
 * "sql_result_regression"). Read them in the set's storage order: shards
 * in manifest order, blocks in key order, records in block order. */
#define PS_EXEC_NOT_RUN 255
#define PS_EXEC_SQL_CHANGED 1u /* flags: cleaning changed the SQL (it ran twice) */

typedef struct ps_exec_fingerprint {
    uint8_t status_before, status_after;
    uint16_t flags;
    uint32_t reserved;
    uint64_t rows_before, hash_before, rows_after, hash_after;
} ps_exec_fingerprint;

typedef struct ps_exec_iter ps_exec_iter;

/* Opens the set in `dir` for its fingerprints. 0; PS_ENOENT when the set
 * holds none (built without --execute), naming it; or what opening the
 * manifest and a shard gives (PS_EIO, PS_EFORMAT, PS_ECORRUPT,
 * PS_EVERSION, PS_ENOMEM). */
PS_API int ps_exec_iter_open(const char *dir, ps_exec_iter **out, ps_error *err);
/* The next record: 1 with its id (id_len bytes, not terminated; valid
 * until the next call) and fingerprint; 0 past the last; or PS_ECORRUPT
 * (a block without fingerprints, or with another count of them), naming
 * the shard and block. One thread at a time per iterator. */
PS_API int ps_exec_iter_next(ps_exec_iter *it, const char **id, size_t *id_len,
                             ps_exec_fingerprint *fp, ps_error *err);
/* Frees the iterator; NULL is a no-op. */
PS_API void ps_exec_iter_close(ps_exec_iter *it);

#ifdef __cplusplus
}
#endif

#endif /* PAIRSHARD_READER_H */
