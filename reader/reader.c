/*
 * The reader: options, the slot ring, the worker pool and the consumer
 * side (ps_reader_next / ps_batch_release).
 *
 * Workers claim steps of this rank's plan in order, each into a free slot,
 * at most `prefetch` steps ahead of the consumer; they may finish in any
 * order, and the consumer takes the slot whose step is the next one, so
 * batches come out in plan order whatever the timing. One mutex guards the
 * ring and the window table; the work (decompression, padding, the copy
 * to the device) happens outside it.
 */
#include "common/options.h"
#include "common/parse_num.h"
#include "reader/reader_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zstd.h>

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- filling a slot (a worker, no lock held except where said) ----------- */

/* Sort key: length, damaged records last (their lengths are unknown). */
static uint64_t ref_key(const rec_ref *x)
{
    return x->v ? x->v->length[x->i] : UINT64_MAX;
}

static int by_length(const void *a, const void *b)
{
    const rec_ref *x = a, *y = b;
    uint64_t lx = ref_key(x), ly = ref_key(y);
    if (lx != ly)
        return lx < ly ? -1 : 1;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* Writes records [chunk, chunk + count) of the pool sorted by (length,
 * position) to out. Lengths lie in the bucket's (lower, bound], usually a
 * narrow range: a stable counting sort, touching each record twice; a
 * full sort for wide buckets. */
static void sorted_chunk(rec_ref *pool, uint32_t n, uint32_t lower, uint32_t bound,
                         uint32_t chunk, uint32_t count, rec_ref *out)
{
    uint32_t range = bound - lower;
    uint32_t counts[1025];
    if (range > 1024) {
        qsort(pool, n, sizeof *pool, by_length);
        memcpy(out, pool + chunk, (size_t)count * sizeof *out);
        return;
    }
    memset(counts, 0, (range + 1) * sizeof *counts);
    uint32_t good = 0;
    for (uint32_t i = 0; i < n; i++)
        if (pool[i].v) {
            counts[pool[i].v->length[pool[i].i] - lower - 1 + 1]++;
            good++;
        }
    for (uint32_t k = 1; k <= range; k++) /* counts[k] = records shorter than lower+1+k */
        counts[k] += counts[k - 1];
    uint32_t bad_at = good;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t at = pool[i].v ? counts[pool[i].v->length[pool[i].i] - lower - 1]++ : bad_at++;
        if (at >= chunk && at < chunk + count)
            out[at - chunk] = pool[i];
    }
}

/* Where each array of a B x T batch lies in a slot: the three token arrays
 * (elem bytes each), then labels (always int64_t: loss functions want them
 * so, whatever the token dtype), at an 8-byte boundary, then lengths
 * (elem). The device buffer has the same layout. */
typedef struct batch_layout {
    size_t mask, types, labels, lengths, bytes;
} batch_layout;

static batch_layout layout_of(size_t B, size_t T, size_t elem)
{
    batch_layout l;
    size_t BT = B * T;
    l.mask = BT * elem;
    l.types = 2 * BT * elem;
    l.labels = (3 * BT * elem + 7) & ~(size_t)7;
    l.lengths = l.labels + B * sizeof(int64_t);
    l.bytes = l.lengths + B * elem;
    return l;
}

/* GCC vectorises these loops at O3 only; clang does at O2 anyway. */
#if defined(__GNUC__) && !defined(__clang__)
#define PS_HOT __attribute__((optimize("O3")))
#else
#define PS_HOT
#endif

/* One padded row of each array. Separate runs with no per-element
 * branches, so the compiler vectorises them: this is the reader's
 * inner loop. */
#define FILL_ROW(name, T_)                                                                    \
    PS_HOT static void name(                                                               \
        T_ *restrict o, T_ *restrict mk, T_ *restrict ty, const void *tok, int width,         \
        uint32_t len, uint32_t tb, uint32_t T, int32_t pad)                                   \
    {                                                                                         \
        if (width == 2) {                                                                     \
            const uint16_t *restrict t = tok;                                                 \
            for (uint32_t k = 0; k < len; k++)                                                \
                o[k] = (T_)t[k];                                                              \
        } else {                                                                              \
            const uint32_t *restrict t = tok;                                                 \
            for (uint32_t k = 0; k < len; k++)                                                \
                o[k] = (T_)t[k];                                                              \
        }                                                                                     \
        for (uint32_t k = len; k < T; k++)                                                    \
            o[k] = (T_)pad;                                                                   \
        for (uint32_t k = 0; k < len; k++)                                                    \
            mk[k] = 1;                                                                        \
        for (uint32_t k = len; k < T; k++)                                                    \
            mk[k] = 0;                                                                        \
        if (tb > len)                                                                         \
            tb = len;                                                                         \
        for (uint32_t k = 0; k < tb; k++)                                                     \
            ty[k] = 0;                                                                        \
        for (uint32_t k = tb; k < len; k++)                                                   \
            ty[k] = 1;                                                                        \
        for (uint32_t k = len; k < T; k++)                                                    \
            ty[k] = 0;                                                                        \
    }
FILL_ROW(fill_row_i64, int64_t)
FILL_ROW(fill_row_i32, int32_t)

static int fill_arrays(ps_reader *r, rd_slot *sl, const ps_plan_batch *pb, const rec_ref *refs,
                       uint32_t B)
{
    const ps_plan_bucket *bk = &r->plan.buckets[pb->bucket];
    uint32_t maxlen = 0;
    uint64_t real = 0;
    for (uint32_t i = 0; i < B; i++) {
        uint32_t len = refs[i].v->length[refs[i].i];
        maxlen = len > maxlen ? len : maxlen;
        real += len;
    }
    uint32_t m = r->opt.pad_multiple, T;
    if (r->opt.pad_mode == PS_PAD_BUCKET)
        T = bk->padded_bound;
    else
        T = (uint32_t)(((uint64_t)maxlen + m - 1) / m * m);
    if (T == 0 && B)
        T = m;
    if (B == 0)
        T = 0; /* every record of the batch was damaged (skip_corrupt) */
    size_t elem = r->elem;
    batch_layout lay = layout_of(B, T, elem);
    char *h = sl->host;
    void *ids = h, *mask = h + lay.mask, *types = h + lay.types;
    void *labels = h + lay.labels, *lengths = h + lay.lengths;
    for (uint32_t i = 0; i < B; i++) {
        const ps_block_view *v = refs[i].v;
        uint32_t ri = refs[i].i, len = v->length[ri], tb = v->type_boundary[ri];
        const void *t = (const char *)v->tokens + v->token_start[ri] * (size_t)v->id_width;
        size_t row = (size_t)i * T;
        if (elem == 8)
            fill_row_i64((int64_t *)ids + row, (int64_t *)mask + row, (int64_t *)types + row, t,
                         v->id_width, len, tb, T, r->opt.pad_id);
        else
            fill_row_i32((int32_t *)ids + row, (int32_t *)mask + row, (int32_t *)types + row, t,
                         v->id_width, len, tb, T, r->opt.pad_id);
        ((int64_t *)labels)[i] = rd_class_label(&refs[i]);
        rd_put_elem(lengths, elem, i, len);
    }
    /* Record ids: copied (the window may be freed before the batch is). */
    if (rd_copy_ids(sl, refs, B))
        return PS_ENOMEM;

    ps_batch *bt = &sl->batch;
    memset(bt, 0, sizeof *bt); /* the generator layouts' fields: 0 and NULL */
    sl->used_bytes = lay.bytes;
    bt->epoch = r->popt.epoch;
    bt->step = sl->step;
    bt->bucket = pb->bucket;
    bt->B = B;
    bt->T = T;
    bt->dtype = r->opt.dtype;
    bt->input_ids = ids;
    bt->attention_mask = mask;
    bt->token_type_ids = types;
    bt->labels = labels;
    bt->lengths = lengths;
    bt->ids = sl->ids;
    bt->real_tokens = real;
    bt->device = PS_DEVICE_HOST;
    bt->d_input_ids = bt->d_attention_mask = bt->d_token_type_ids = NULL;
    bt->d_labels = bt->d_lengths = bt->ready_event = NULL;
    return PS_OK;
}

/* The device twin of host array p (NULL stays NULL). */
static void *dev_of(const rd_slot *sl, const void *p)
{
    return p ? (char *)sl->dev + ((const char *)p - (const char *)sl->host) : NULL;
}

/* Copies the filled slot to its device buffers (same layout): one copy of
 * the bytes the batch uses, every device pointer at its host offset. */
static int copy_to_device(ps_reader *r, rd_slot *sl, ps_error *err)
{
    ps_batch *bt = &sl->batch;
    int rc = ps_dev_copy_async(r->stream, sl->dev, sl->host, sl->used_bytes, sl->event, err);
    if (rc)
        return rc;
    sl->event_pending = 1;
    bt->device = r->device;
    bt->d_input_ids = dev_of(sl, bt->input_ids);
    bt->d_attention_mask = dev_of(sl, bt->attention_mask);
    bt->d_token_type_ids = dev_of(sl, bt->token_type_ids);
    bt->d_labels = dev_of(sl, bt->labels);
    bt->d_lengths = dev_of(sl, bt->lengths);
    bt->d_class_labels = dev_of(sl, bt->class_labels);
    bt->d_position_ids = dev_of(sl, bt->position_ids);
    bt->d_cu_seqlens = dev_of(sl, bt->cu_seqlens);
    bt->d_seq_lens = dev_of(sl, bt->seq_lens);
    bt->d_prompt_lens = dev_of(sl, bt->prompt_lens);
    bt->d_seg_rows = dev_of(sl, bt->seg_rows);
    bt->d_target_lens = dev_of(sl, bt->target_lens);
    bt->d_decoder_attention_mask = dev_of(sl, bt->decoder_attention_mask);
    bt->d_decoder_input_ids = dev_of(sl, bt->decoder_input_ids);
    bt->ready_event = sl->event;
    return PS_OK;
}

/* Fills the slot's arrays for the layout from the batch's usable records
 * mine[0..n). */
static int fill_layout(ps_reader *r, rd_slot *sl, const ps_plan_batch *pb, rec_ref *mine,
                       uint32_t n)
{
    uint32_t bucket_T = r->plan.buckets[pb->bucket].padded_bound;
    if (r->layout == PS_LAYOUT_SEQ2SEQ)
        return rd_fill_seq2seq(r, sl, mine, n, bucket_T);
    if (r->layout != PS_LAYOUT_CAUSAL)
        return fill_arrays(r, sl, pb, mine, n);
    if (!r->opt.pack)
        for (uint32_t i = 0; i < n; i++)
            mine[i].row = i;
    int rc = rd_fill_causal(r, sl, mine, n, r->opt.pack ? pb->count : n, bucket_T);
    /* A packed batch holds no bucket of its own. */
    sl->batch.bucket = r->opt.pack ? 0 : pb->bucket;
    return rc;
}

/* A packed batch's records must have the lengths its plan was made from
 * (the shards' lengths databases): a set whose blocks disagree is damaged. */
static int check_planned(const ps_reader *r, const ps_plan_batch *pb, const rec_ref *refs,
                         ps_error *err)
{
    const ps_plan_seg *sg = r->plan.segs + pb->pool_start;
    for (uint32_t i = 0; i < pb->pool_count; i++)
        if (refs[i].v && refs[i].v->length[refs[i].i] != sg[i].len)
            return ps_error_set(err, PS_ECORRUPT,
                                "%s: record %.*s has %u tokens, but its shard's lengths "
                                "database says %u (a damaged set: run inspect --verify)",
                                r->dir,
                                (int)(refs[i].v->id_offset[refs[i].i + 1] -
                                      refs[i].v->id_offset[refs[i].i]),
                                refs[i].v->ids + refs[i].v->id_offset[refs[i].i],
                                refs[i].v->length[refs[i].i], sg[i].len);
    return PS_OK;
}

/* The windows a batch draws from: its pool's (packed: its segments'). */
static void batch_windows(const ps_reader *r, const ps_plan_batch *pb, uint32_t *w0,
                          uint32_t *w1)
{
    const ps_plan_bucket *bk = &r->plan.buckets[pb->bucket];
    if (r->opt.pack) {
        const ps_plan_seg *sg = r->plan.segs + pb->pool_start;
        *w0 = ps_plan_window_of(bk, sg[0].pos);
        *w1 = ps_plan_window_of(bk, sg[pb->pool_count - 1].pos);
        return;
    }
    *w0 = ps_plan_window_of(bk, pb->pool_start);
    *w1 = ps_plan_window_of(bk, pb->pool_start + pb->pool_count - 1);
}

/* Fills sl with step sl->step. Called with r->mu held; returns with it
 * held; drops it for the work. Sets the slot's final state. */
static void fill_slot(ps_reader *r, rd_slot *sl, void *dctx, rec_ref *refs)
{
    const ps_plan_batch *pb = &r->plan.batches[sl->step];
    const ps_plan_bucket *bk = &r->plan.buckets[pb->bucket];
    uint32_t w0, w1;
    batch_windows(r, pb, &w0, &w1);
    int rc = PS_OK;
    const char *msg = NULL;
    for (uint32_t w = w0; w <= w1; w++) {
        rd_window *win = rd_window_acquire(r, pb->bucket, w, dctx);
        if (!win) {
            rc = PS_ENOMEM;
            msg = "reader: out of memory for a window";
        } else if (win->state == WIN_FAILED && !rc) {
            rc = win->err_code;
            msg = win->err_msg;
        }
    }
    if (rc) {
        snprintf(sl->err_msg, sizeof sl->err_msg, "%s", msg ? msg : ps_strerror(rc));
    } else {
        uint32_t w = w0;
        const ps_plan_seg *segs = r->opt.pack ? r->plan.segs + pb->pool_start : NULL;
        for (uint32_t i = 0; i < pb->pool_count; i++) {
            uint64_t pos = segs ? segs[i].pos : pb->pool_start + i;
            while (pos >= bk->window_first[w + 1])
                w++;
            const rd_window *win = r->win[pb->bucket][w];
            uint32_t local = (uint32_t)(pos - bk->window_first[w]);
            uint32_t blk = win->rec_block[local];
            refs[i].v = win->blk_code[blk] ? NULL : &win->views[blk];
            refs[i].i = win->blk_code[blk] ? blk : win->rec_index[local];
            refs[i].pos = i;
            refs[i].row = segs ? segs[i].row : 0;
            refs[i].w = win;
            refs[i].src = win->rec_src[local];
        }
        pthread_mutex_unlock(&r->mu);
        rec_ref *mine = refs;
        uint32_t want = r->opt.pack ? pb->pool_count : pb->count; /* records */
        if (!r->opt.pack && pb->pool_count > pb->count) {
            mine = refs + pb->pool_count;
            sorted_chunk(refs, pb->pool_count, bk->lower, bk->bound, pb->chunk, pb->count, mine);
        }
        /* Records of damaged blocks: the batch fails, or goes without them. */
        uint32_t B = 0;
        rec_ref bad = {0}; /* a copy: compaction overwrites the array */
        ps_error e = {0};
        if (r->opt.pack && (rc = check_planned(r, pb, mine, &e)))
            want = 0; /* the rows would not hold what the plan says */
        for (uint32_t i = 0; i < want; i++) {
            if (mine[i].v)
                mine[B++] = mine[i];
            else if (!bad.w)
                bad = mine[i];
        }
        if (bad.w) {
            int code = bad.w->blk_code[bad.i];
            if (!r->opt.skip_corrupt || code != PS_ECORRUPT)
                rc = ps_error_set(&e, code, "%s", bad.w->blk_msg[bad.i]);
            else
                sl->skipped_records = want - B;
        }
        if (!rc && sl->event_pending) {
            /* The previous copy out of this host buffer must be done. */
            rc = ps_dev_event_wait(sl->event, &e);
            sl->event_pending = 0;
        }
        if (!rc && (rc = fill_layout(r, sl, pb, mine, B)))
            ps_error_set(&e, rc, "reader: out of memory for record ids");
        if (!rc)
            sl->batch.sources = sl->srcs;
        if (!rc && r->device >= 0)
            rc = copy_to_device(r, sl, &e);
        if (rc)
            snprintf(sl->err_msg, sizeof sl->err_msg, "%s", e.message);
        pthread_mutex_lock(&r->mu);
    }
    for (uint32_t w = w0; w <= w1; w++)
        rd_window_release(r, pb->bucket, w);
    if (!rc) {
        sl->state = SLOT_READY;
    } else {
        sl->state = SLOT_ERROR;
        sl->err_code = rc;
    }
}

static rd_slot *free_slot(ps_reader *r)
{
    for (int i = 0; i < r->n_slots; i++)
        if (r->slots[i].state == SLOT_FREE)
            return &r->slots[i];
    return NULL;
}

/* The next step a free slot may take, at most prefetch ahead of the
 * consumer, or NULL (r->mu held). */
static rd_slot *claimable(ps_reader *r)
{
    if (r->next_claim < r->plan.n_batches &&
        r->next_claim < r->next_deliver + (uint64_t)r->n_slots)
        return free_slot(r);
    return NULL;
}

/* Claims the next step into `sl` and fills it (r->mu held; dropped during
 * the work). Used by the workers, and by the consumer while it would
 * otherwise sleep. */
static void claim_and_fill(ps_reader *r, rd_slot *sl, void *dctx, rec_ref *refs)
{
    sl->state = SLOT_BUSY;
    sl->step = r->next_claim++;
    /* More claimable work: pass the wake-up on to another worker
     * (releases wake one worker each, not all). */
    if (r->n_threads > 1 && claimable(r))
        pthread_cond_signal(&r->cv_work);
    sl->err_code = 0;
    sl->err_msg[0] = '\0';
    sl->skipped_records = 0;
    if (!dctx || !refs) {
        sl->state = SLOT_ERROR;
        sl->err_code = PS_ENOMEM;
        snprintf(sl->err_msg, sizeof sl->err_msg, "reader: out of memory in a worker");
    } else {
        fill_slot(r, sl, dctx, refs);
    }
    /* Only the consumer waits on cv_ready, and only for next_deliver. */
    if (sl->step == r->next_deliver)
        pthread_cond_signal(&r->cv_ready);
}

static rec_ref *refs_alloc(const ps_reader *r)
{
    size_t n = (size_t)r->plan.max_batch + r->plan.max_pool; /* a pool + a sorted chunk */
    return malloc((n ? n : 1) * sizeof(rec_ref));
}

static void *worker_main(void *arg)
{
    ps_reader *r = arg;
    ZSTD_DCtx *dctx = ZSTD_createDCtx();
    rec_ref *refs = refs_alloc(r);
    if (r->device >= 0)
        ps_dev_select(r->device, NULL);
    pthread_mutex_lock(&r->mu);
    while (!r->stop) {
        rd_slot *sl = claimable(r);
        if (sl)
            claim_and_fill(r, sl, dctx, refs);
        else
            pthread_cond_wait(&r->cv_work, &r->mu);
    }
    pthread_mutex_unlock(&r->mu);
    free(refs);
    ZSTD_freeDCtx(dctx);
    return NULL;
}

static void workers_stop(ps_reader *r)
{
    if (!r->running)
        return;
    pthread_mutex_lock(&r->mu);
    r->stop = 1;
    pthread_cond_broadcast(&r->cv_work);
    pthread_cond_broadcast(&r->cv_window);
    pthread_mutex_unlock(&r->mu);
    for (int i = 0; i < r->running; i++)
        pthread_join(r->threads[i], NULL);
    r->running = 0;
    r->stop = 0;
}

static int workers_start(ps_reader *r, ps_error *err)
{
    for (int i = 0; i < r->n_threads; i++) {
        if (ps_thread_create(&r->threads[i], worker_main, r, "ps-read")) {
            workers_stop(r);
            return ps_error_set(err, PS_ENOMEM, "reader: cannot start worker threads");
        }
        r->running = i + 1;
    }
    return PS_OK;
}

/* ---- the epoch ------------------------------------------------------------ */

/* Plans epoch `epoch` and positions the reader at `position` (workers
 * stopped). The batches before `position` are not read: only their share
 * of each window's users is taken off. */
/* An epoch of no batches, from a set that holds records: as an empty set,
 * a trainer would run zero steps and succeed. Names why. (A world too
 * large for the records, or drop_last keeping nothing, are refused by the
 * plan already.) */
static int no_batches(const ps_reader *r, const char *dir, ps_error *err)
{
    const ps_plan *p = &r->plan;
    if (r->opt.pack && p->records_skipped == p->records_total)
        return ps_error_set(err, PS_EEMPTY,
                            "%s: an epoch has no batches: every one of the %llu records is longer "
                            "than pack %u (the shortest has %u tokens) and skip_long leaves them "
                            "all out; use a pack of at least %u",
                            dir, (unsigned long long)p->records_total, r->opt.pack, r->min_len,
                            r->min_len);
    return ps_error_set(err, PS_EEMPTY,
                        "%s: an epoch has no batches for rank %d of %d (%llu records, %llu left "
                        "out by skip_long, %llu dropped by drop_last)",
                        dir, r->opt.rank, r->opt.world_size, (unsigned long long)p->records_total,
                        (unsigned long long)p->records_skipped,
                        (unsigned long long)p->records_dropped);
}

static int epoch_begin(ps_reader *r, uint64_t epoch, uint64_t position, ps_error *err)
{
    rd_windows_free(r);
    ps_plan_free(&r->plan);
    r->popt.epoch = epoch;
    ps_pack_lengths lens = {r->len_cache, r->len_first, r->min_len};
    int rc = r->opt.pack
                 ? ps_plan_build_packed(&r->plan, r->m, &r->popt, r->trusted_bytes, &lens, err)
                 : ps_plan_build(&r->plan, r->m, &r->popt, r->trusted_bytes, err);
    if (rc == PS_EFORMAT) {
        /* Often the claims of a missing or damaged shard: say so first. */
        for (size_t s = 0; s < r->m->n_shards; s++)
            if (r->shards[s].state == 2 && r->shards[s].err_msg) {
                char plan_msg[PS_ERROR_MESSAGE_MAX];
                snprintf(plan_msg, sizeof plan_msg, "%s", err ? err->message : "");
                return ps_error_set(err, PS_ECORRUPT, "%s; the set cannot be planned: %s",
                                    r->shards[s].err_msg, plan_msg);
            }
    }
    if (rc)
        return rc;
    if (position > r->plan.n_batches)
        return ps_error_set(err, PS_EINVAL,
                            "reader: position %llu is past the epoch's %llu batches",
                            (unsigned long long)position,
                            (unsigned long long)r->plan.n_batches);
    for (uint64_t s = 0; s < position; s++) {
        const ps_plan_batch *pb = &r->plan.batches[s];
        ps_plan_bucket *bk = &r->plan.buckets[pb->bucket];
        uint32_t w0, w1;
        batch_windows(r, pb, &w0, &w1);
        for (uint32_t w = w0; w <= w1; w++)
            bk->window_users[w]--;
    }
    if ((rc = rd_windows_alloc(r, err)))
        return rc;
    for (int i = 0; r->slots && i < r->n_slots; i++) {
        int st = r->slots[i].state;
        if (st == SLOT_READY || st == SLOT_ERROR)
            r->slots[i].state = SLOT_FREE;
    }
    r->next_claim = r->next_deliver = position;
    return PS_OK;
}

/* ---- open / close --------------------------------------------------------- */

static int choose_device(ps_reader *r, ps_error *err)
{
    r->device = -1;
    if (r->opt.device < 0)
        return PS_OK;
    int n = ps_dev_count();
    if (r->opt.device >= n) {
        if (r->opt.require_device)
            return ps_error_set(err, PS_EUSAGE,
                                "reader: CUDA device %d is not available (%d device%s; CUDA "
                                "runtime %s)",
                                r->opt.device, n, n == 1 ? "" : "s", ps_dev_runtime());
        return PS_OK; /* host fallback, reported by ps_reader_info */
    }
    int rc = ps_dev_stream_create(&r->stream, r->opt.device, err);
    if (rc) {
        if (r->opt.require_device)
            return rc;
        return PS_OK;
    }
    r->device = r->opt.device;
    return PS_OK;
}

/* A state resumes only the plan it was saved from: the same set, rank,
 * world and batching. Names the first difference. */
static int state_matches(const ps_reader *r, const rd_state *st, ps_error *err)
{
    const ps_plan_options *o = &r->popt;
    char what[160] = "";
#define DIFF(name, a, b)                                                                      \
    if (!what[0] && (uint64_t)(a) != (uint64_t)(b))                                            \
    snprintf(what, sizeof what, "%s %llu (this reader has %llu)", name,                        \
             (unsigned long long)(a), (unsigned long long)(b))
    if (st->set_hash != r->manifest_hash)
        snprintf(what, sizeof what, "another shard set (manifest.json differs)");
    DIFF("rank", st->rank, o->rank);
    DIFF("world_size", st->world_size, o->world_size);
    DIFF("batch_size", st->batch_size, o->batch_size);
    DIFF("max_tokens", st->max_tokens, o->max_tokens);
    DIFF("pad_multiple", st->pad_multiple, o->pad_multiple);
    DIFF("shuffle", st->shuffle, o->shuffle != 0);
    DIFF("shuffle_window", st->shuffle_window, o->shuffle_window);
    DIFF("sort_pool", st->sort_pool, o->sort_pool);
    DIFF("drop_last", st->drop_last, o->drop_last != 0);
    DIFF("pack", st->pack, o->pack);
    DIFF("skip_long", st->skip_long, o->skip_long != 0);
#undef DIFF
    if (!what[0] && st->plan_hash != ps_plan_options_hash(o, r->manifest_hash))
        snprintf(what, sizeof what, "a plan this reader cannot reproduce");
    if (what[0])
        return ps_error_set(err, PS_EINVAL, "reader: the state was saved for %s", what);
    return PS_OK;
}

/* The set's layout and the options that depend on it. */
static int check_layout(ps_reader *r, ps_error *err)
{
    r->layout = r->m->layout;
    if (r->opt.pack && r->layout != PS_LAYOUT_CAUSAL)
        return ps_error_set(err, PS_EUSAGE,
                            "reader: pack needs a causal set; %s is a %s set", r->dir,
                            ps_layout_name(r->layout));
    if (r->opt.pack > (1u << 24))
        return ps_error_set(err, PS_EUSAGE, "reader: pack %u is above %u", r->opt.pack,
                            1u << 24);
    if (r->opt.decoder_start_id < -1)
        return ps_error_set(err, PS_EUSAGE, "reader: decoder_start_id %d is not valid",
                            r->opt.decoder_start_id);
    return PS_OK;
}

/* The directories as messages name them: "A + B + C". */
static char *dirs_name(const char *const *dirs, size_t n)
{
    size_t len = 1;
    for (size_t i = 0; i < n; i++)
        len += strlen(dirs[i]) + 3;
    char *s = malloc(len);
    if (!s)
        return NULL;
    s[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        if (i)
            strcat(s, " + ");
        strcat(s, dirs[i]);
    }
    return s;
}

static int open_sets(const char *const *dirs, size_t n, const ps_reader_options *opt,
                     const ps_reader_state *resume, ps_reader **out, ps_error *err)
{
    *out = NULL;
    if (!dirs || n == 0)
        return ps_error_set(err, PS_EINVAL, "reader: no directory");
    for (size_t i = 0; i < n; i++)
        if (!dirs[i])
            return ps_error_set(err, PS_EINVAL, "reader: no directory");
    const char *dir = dirs[0];
    ps_reader *r = calloc(1, sizeof *r);
    if (!r || !(r->dir = n == 1 ? strdup(dir) : dirs_name(dirs, n))) {
        free(r);
        return ps_error_set(err, PS_ENOMEM, "reader: out of memory");
    }
    dir = r->dir;
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv_work, NULL);
    pthread_cond_init(&r->cv_ready, NULL);
    pthread_cond_init(&r->cv_window, NULL);
    int rc = rd_resolve_options(opt, &r->opt, err);
    rd_state st = {0};
    if (!rc && resume)
        rc = rd_state_decode(resume->bytes, sizeof resume->bytes, &st, err);
    if (!rc)
        rc = n == 1 ? ps_manifest_read(dir, &r->m, err) : rd_sets_open(r, dirs, n, err);
    if (rc)
        goto fail;
    /* The hash of the very bytes parsed: a state names this set. */
    r->manifest_hash = r->m->xxh64;
    r->elem = r->opt.dtype == PS_DTYPE_INT64 ? 8 : 4;
    r->popt = (ps_plan_options){
        .batch_size = r->opt.batch_size,
        .max_tokens = r->opt.max_tokens,
        .pad_multiple = r->opt.pad_multiple,
        .shuffle = r->opt.shuffle != 0,
        .shuffle_window = r->opt.shuffle_window,
        .sort_pool = r->opt.sort_pool,
        .drop_last = r->opt.drop_last != 0,
        .rank = (uint32_t)r->opt.rank,
        .world_size = (uint32_t)r->opt.world_size,
        .seed = r->opt.seed,
        .epoch = r->opt.epoch,
        .pack = r->opt.pack,
        .skip_long = r->opt.pack && r->opt.skip_long,
    };
    uint64_t position = 0;
    if ((rc = check_layout(r, err)) || (rc = rd_shards_open(r, err)) ||
        (rc = rd_sources_load(r, dir, err)))
        goto fail;
    r->opt.weight_names = NULL; /* read at open only: the caller's arrays */
    r->opt.weights = NULL;
    if (resume) {
        if ((rc = state_matches(r, &st, err)))
            goto fail;
        r->popt.seed = st.seed;
        position = st.position;
        r->opt.seed = st.seed;
        r->opt.epoch = st.epoch;
        r->popt.epoch = st.epoch;
    }
    if ((r->opt.pack && (rc = rd_lengths_load(r, err))) || (rc = choose_device(r, err)))
        goto fail;
    r->n_threads = r->opt.threads;
    r->n_slots = r->opt.prefetch;
    r->threads = calloc((size_t)r->n_threads, sizeof *r->threads);
    if (!r->threads) {
        rc = ps_error_set(err, PS_ENOMEM, "reader: out of memory");
        goto fail;
    }
    if ((rc = epoch_begin(r, r->popt.epoch, position, err)))
        goto fail;
    if (r->plan.records_total == 0) {
        /* A reader that yields nothing makes a trainer run zero steps and
         * report success; an empty set is almost always a mistake upstream. */
        rc = ps_error_set(err, PS_EEMPTY,
                          "%s: the shard set holds no records (every input record was rejected "
                          "or a duplicate, or it is an empty --part; see its stats.json)",
                          dir);
        goto fail;
    }
    if (r->plan.n_batches == 0) {
        rc = no_batches(r, dir, err);
        goto fail;
    }
    if ((rc = rd_slots_alloc(r, err)))
        goto fail;
    /* The consumer's own decoding context (it helps while it waits); the
     * plan's batch and pool sizes do not change across epochs. */
    r->c_dctx = ZSTD_createDCtx();
    r->c_refs = r->c_dctx ? refs_alloc(r) : NULL;
    if ((rc = workers_start(r, err)))
        goto fail;
    *out = r;
    return PS_OK;
fail:
    ps_reader_close(r);
    return rc;
}

int ps_reader_open(const char *dir, const ps_reader_options *opt,
                   const ps_reader_state *resume, ps_reader **out, ps_error *err)
{
    const char *one[1] = {dir};
    if (out)
        *out = NULL;
    if (!dir)
        return ps_error_set(err, PS_EINVAL, "reader: no directory");
    return open_sets(one, 1, opt, resume, out, err);
}

int ps_reader_open_sets(const char *const *dirs, size_t n_dirs, const ps_reader_options *opt,
                        const ps_reader_state *resume, ps_reader **out, ps_error *err)
{
    return open_sets(dirs, n_dirs, opt, resume, out, err);
}

void ps_reader_close(ps_reader *r)
{
    if (!r)
        return;
    workers_stop(r);
    free(r->c_refs);
    ZSTD_freeDCtx(r->c_dctx);
    rd_slots_free(r);
    rd_windows_free(r);
    ps_plan_free(&r->plan);
    rd_lengths_free(r);
    rd_sources_free(r);
    rd_sets_free(r);
    if (r->stream)
        ps_dev_stream_destroy(r->stream);
    if (r->m)
        rd_shards_close(r);
    ps_manifest_free(r->m);
    free(r->threads);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv_work);
    pthread_cond_destroy(&r->cv_ready);
    pthread_cond_destroy(&r->cv_window);
    free(r->dir);
    free(r);
}

/* ---- the consumer ---------------------------------------------------------- */

static rd_slot *slot_of_step(ps_reader *r, uint64_t step, int *claimed)
{
    *claimed = 0;
    for (int i = 0; i < r->n_slots; i++) {
        rd_slot *sl = &r->slots[i];
        if (sl->state == SLOT_BUSY && sl->step == step)
            *claimed = 1;
        if ((sl->state == SLOT_READY || sl->state == SLOT_ERROR) &&
            sl->step == step)
            return sl;
    }
    return NULL;
}

int ps_reader_next(ps_reader *r, const ps_batch **batch, ps_error *err)
{
    *batch = NULL;
    uint64_t t0 = 0;
    int waited = 0, rc = 0;
    pthread_mutex_lock(&r->mu);
    for (;;) {
        if (r->next_deliver >= r->plan.n_batches) {
            rc = 0;
            break;
        }
        int claimed;
        rd_slot *sl = slot_of_step(r, r->next_deliver, &claimed);
        if (sl && sl->state == SLOT_READY) {
            sl->state = SLOT_HELD;
            r->next_deliver++;
            r->st.batches++;
            r->st.records += sl->batch.layout == PS_LAYOUT_PAIR ? sl->batch.B
                                                                : sl->batch.n_segments;
            r->st.tokens += (uint64_t)sl->batch.B * sl->batch.T;
            r->st.real_tokens += sl->batch.real_tokens;
            if (sl->skipped_records) {
                r->st.skipped_batches++;
                r->st.skipped_records += sl->skipped_records;
            }
            if (sl->batch.device >= 0)
                r->st.h2d_bytes += sl->used_bytes;
            *batch = &sl->batch;
            rc = 1;
            break;
        }
        if (sl && sl->state == SLOT_ERROR) {
            rc = ps_error_set(err, sl->err_code, "%s", sl->err_msg);
            sl->state = SLOT_FREE;
            r->next_deliver++;
            pthread_cond_signal(&r->cv_work);
            break;
        }
        if (!claimed && !free_slot(r)) {
            rc = ps_error_set(err, PS_ELIMIT,
                              "reader: all %d batch slots are held; release a batch before "
                              "asking for the next (or open with a larger prefetch)",
                              r->n_slots);
            break;
        }
        if (!waited) {
            waited = 1;
            t0 = now_ns();
            r->st.waits++;
        }
        /* Rather than sleep (a futex wait and wake-up cost more than a small
         * batch), fill the next claimable batch here. Host batches only:
         * device copies would need this thread's current device. */
        rd_slot *help = r->device < 0 && r->c_refs ? claimable(r) : NULL;
        if (help) {
            claim_and_fill(r, help, r->c_dctx, r->c_refs);
            continue;
        }
        pthread_cond_wait(&r->cv_ready, &r->mu);
    }
    if (waited)
        r->st.wait_ns += now_ns() - t0;
    pthread_mutex_unlock(&r->mu);
    return rc;
}

void ps_batch_release(ps_reader *r, const ps_batch *batch)
{
    if (!r || !batch)
        return;
    pthread_mutex_lock(&r->mu);
    for (int i = 0; i < r->n_slots; i++)
        if (&r->slots[i].batch == batch && r->slots[i].state == SLOT_HELD) {
            r->slots[i].state = SLOT_FREE;
            pthread_cond_signal(&r->cv_work);
            break;
        }
    pthread_mutex_unlock(&r->mu);
}

int ps_reader_set_epoch(ps_reader *r, uint64_t epoch, ps_error *err)
{
    workers_stop(r);
    int rc = epoch_begin(r, epoch, 0, err);
    if (rc)
        return rc;
    r->opt.epoch = epoch;
    return workers_start(r, err);
}

