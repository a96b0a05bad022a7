/*
 * The epoch plan (docs/READER.md, "The plan"). Everything random comes
 * from counter-keyed streams: each permutation draws from its own stream
 * keyed by (seed, epoch, purpose, bucket, window), so a plan is the same
 * on every machine, whatever the threads, and no permutation depends on
 * how many numbers another one drew.
 */
#include "reader/plan.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "reader/plan_rng.h"

void ps_plan_free(ps_plan *p)
{
    if (!p)
        return;
    for (size_t b = 0; b < p->n_buckets && p->buckets; b++) {
        free(p->buckets[b].blocks);
        free(p->buckets[b].window_first);
        free(p->buckets[b].window_users);
    }
    free(p->buckets);
    free(p->batches);
    free(p->segs);
    free(p->mix_full);
    free(p->mix_extra);
    free(p->mix_taken);
    memset(p, 0, sizeof *p);
}

uint32_t ps_plan_window_of(const ps_plan_bucket *b, uint64_t pos)
{
    uint32_t lo = 0, hi = b->n_windows; /* window_first[lo] <= pos < window_first[hi] */
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (b->window_first[mid] <= pos)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

void ps_plan_window_perm(const ps_plan *p, uint32_t bucket, uint32_t w, uint32_t *perm,
                         uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        perm[i] = i;
    if (p->opt.shuffle) {
        rng r;
        rng_init(&r, p->opt.seed, p->opt.epoch, TAG_WINDOW, bucket, w);
        FISHER_YATES(perm, n, &r, uint32_t);
    }
}

uint64_t ps_plan_options_hash(const ps_plan_options *o, uint64_t manifest_hash)
{
    uint64_t v[10] = {o->batch_size,     o->max_tokens,         o->pad_multiple,
                      (uint64_t)o->shuffle, o->shuffle_window, (uint64_t)o->drop_last,
                      o->rank,           o->world_size,        o->sort_pool,
                      manifest_hash};
    unsigned char key[sizeof v + 16];
    for (size_t i = 0; i < 10; i++)
        ps_put_le64(key + 8 * i, v[i]);
    /* Packing joins the key only when on: states saved before it existed
     * keep their hash. */
    size_t n = sizeof v;
    if (o->pack || o->skip_long) {
        ps_put_le64(key + n, o->pack);
        ps_put_le64(key + n + 8, (uint64_t)(o->skip_long != 0));
        n += 16;
    }
    /* Likewise the weights of a mixture. */
    unsigned char mk[8 + sizeof key];
    if (o->mix) {
        memcpy(mk, key, n);
        ps_put_le64(mk + n, o->mix->hash);
        return XXH64(mk, n + 8, 1);
    }
    return XXH64(key, n, 1);
}

/* The stored blocks of bucket b, in shard order, with their record counts
 * (every block of a (shard, bucket) holds block_records but the last). */
int ps_plan_check_fill(const ps_manifest *m, size_t s, size_t b, ps_error *err)
{
    const ps_mf_count *c = &m->shards[s].buckets[b];
    uint64_t R = m->block_records;
    if ((c->blocks == 0) != (c->records == 0) ||
        (c->blocks && (c->records > c->blocks * R || c->records <= (c->blocks - 1) * R)))
        return ps_error_set(err, PS_EFORMAT,
                            "manifest.json: %s bucket %zu: %llu records cannot fill %llu "
                            "blocks of %llu",
                            m->shards[s].file, b, (unsigned long long)c->records,
                            (unsigned long long)c->blocks, (unsigned long long)R);
    return PS_OK;
}

int ps_plan_collect_blocks(ps_plan_bucket *pb, const ps_manifest *m, size_t b,
                           const uint64_t *trusted, uint64_t *used_blocks, uint64_t *used_records,
                           ps_error *err)
{
    uint64_t total = 0;
    for (size_t s = 0; s < m->n_shards; s++) {
        const ps_mf_count *c = &m->shards[s].buckets[b];
        uint64_t bytes = trusted ? trusted[s] : m->shards[s].bytes;
        /* A block takes more than 16 bytes of its file (key, node header,
         * zstd frame), and no zstd frame expands more than 32768-fold, so
         * a file holds at most bytes * 2048 records of 18 bytes or more:
         * counts beyond that are lies, refused before anything is
         * allocated (or multiplied) from them. */
        if (c->blocks > bytes / 16 - used_blocks[s] || c->blocks > UINT32_MAX - total)
            return ps_error_set(err, PS_EFORMAT,
                                "manifest.json: %s bucket %zu: %llu blocks cannot fit in a "
                                "%llu-byte file",
                                m->shards[s].file, b, (unsigned long long)c->blocks,
                                (unsigned long long)bytes);
        int rc = ps_plan_check_fill(m, s, b, err);
        if (rc)
            return rc;
        if (c->records > bytes * 2048 - used_records[s])
            return ps_error_set(err, PS_EFORMAT,
                                "manifest.json: %s bucket %zu: %llu records cannot fit in a "
                                "%llu-byte file",
                                m->shards[s].file, b, (unsigned long long)c->records,
                                (unsigned long long)bytes);
        used_blocks[s] += c->blocks;
        used_records[s] += c->records;
        total += c->blocks;
        pb->records += c->records;
    }
    pb->n_blocks = (uint32_t)total;
    pb->blocks = malloc((total ? total : 1) * sizeof *pb->blocks);
    if (!pb->blocks)
        return ps_error_set(err, PS_ENOMEM, "reader: out of memory for %llu blocks",
                            (unsigned long long)total);
    size_t k = 0;
    for (size_t s = 0; s < m->n_shards; s++) {
        const ps_mf_count *c = &m->shards[s].buckets[b];
        for (uint64_t q = 0; q < c->blocks; q++, k++) {
            pb->blocks[k].shard = (uint32_t)s;
            pb->blocks[k].bucket = (uint32_t)b;
            pb->blocks[k].seq = (uint32_t)q;
            pb->blocks[k].records = q + 1 < c->blocks
                                        ? (uint32_t)m->block_records
                                        : (uint32_t)(c->records - q * m->block_records);
            pb->blocks[k].stored = pb->blocks[k].records;
            pb->blocks[k].copy = 0;
        }
    }
    return PS_OK;
}

int ps_plan_make_windows(ps_plan_bucket *pb, uint32_t window_blocks, ps_error *err)
{
    pb->window_blocks = window_blocks;
    pb->n_windows = (pb->n_blocks + window_blocks - 1) / window_blocks;
    pb->window_first = malloc(((size_t)pb->n_windows + 1) * sizeof *pb->window_first);
    pb->window_users = calloc(pb->n_windows ? pb->n_windows : 1, sizeof *pb->window_users);
    if (!pb->window_first || !pb->window_users)
        return ps_error_set(err, PS_ENOMEM, "reader: out of memory for the plan");
    uint64_t first = 0;
    for (uint32_t w = 0; w < pb->n_windows; w++) {
        pb->window_first[w] = first;
        uint32_t end = (w + 1) * window_blocks;
        if (end > pb->n_blocks)
            end = pb->n_blocks;
        for (uint32_t k = w * window_blocks; k < end; k++)
            first += pb->blocks[k].records;
    }
    pb->window_first[pb->n_windows] = first;
    return PS_OK;
}

/* A bucket's batches before dealing: n_full batches of B records and a
 * partial one of `rem` (kept unless drop_last), each cut into pieces when
 * the ranks need more batches: full batches have full_p pieces, the last
 * full_k of them one more; the partial one has part_p. */
typedef struct cuts {
    uint64_t n_full, rem;
    int partial;           /* the partial batch is kept */
    uint64_t full_p, full_k, part_p;
} cuts;

static uint64_t cuts_count(const cuts *c)
{
    return c->n_full * c->full_p + c->full_k + (c->partial ? c->part_p : 0);
}

/* Emits the pieces of a batch of `count` records from `start`. */
static uint64_t emit_pieces(ps_plan_batch *out, uint64_t start, uint32_t count, uint64_t pieces,
                            uint32_t bucket)
{
    uint64_t k = 0;
    uint32_t each = (uint32_t)(count / pieces), more = (uint32_t)(count % pieces);
    for (uint64_t j = 0; j < pieces; j++) {
        uint32_t n = each + (j < more);
        out[k++] = (ps_plan_batch){start, n, 0, bucket, n};
        start += n;
    }
    return k;
}

/* The batches of a bucket in order, pieces expanded, written to out
 * (each its own pool for now). */
static uint64_t emit_cuts(const cuts *c, uint32_t bucket, uint32_t B, ps_plan_batch *out)
{
    uint64_t k = 0, start = 0;
    for (uint64_t i = 0; i < c->n_full; i++, start += B)
        k += emit_pieces(out + k, start, B, c->full_p + (i >= c->n_full - c->full_k), bucket);
    if (c->partial)
        k += emit_pieces(out + k, start, (uint32_t)c->rem, c->part_p, bucket);
    return k;
}

/* Cuts `extra` more batches so the batch count divides among the ranks:
 * each time the batch whose largest piece is the largest is cut into one
 * more piece (full batches before a partial one, then the lowest bucket;
 * among a bucket's full batches the last ones first), while every piece
 * keeps at least one record. Returns 0 or PS_EUSAGE when too few records. */
static int split_for_ranks(cuts *c, const ps_plan *p, uint64_t extra, uint64_t records,
                           uint64_t batches, ps_error *err)
{
    for (uint64_t e = 0; e < extra; e++) {
        size_t best = SIZE_MAX;
        int best_full = 0;
        uint64_t best_piece = 1;
        for (size_t b = 0; b < p->n_buckets; b++) {
            uint64_t B = p->buckets[b].batch_size;
            if (c[b].n_full && B >= c[b].full_p + 1) {
                uint64_t piece = (B + c[b].full_p - 1) / c[b].full_p;
                if (piece > best_piece || (piece == best_piece && best != SIZE_MAX && !best_full)) {
                    best_piece = piece;
                    best = b;
                    best_full = 1;
                }
            }
            if (c[b].partial && c[b].rem >= c[b].part_p + 1) {
                uint64_t piece = (c[b].rem + c[b].part_p - 1) / c[b].part_p;
                if (piece > best_piece) {
                    best_piece = piece;
                    best = b;
                    best_full = 0;
                }
            }
        }
        if (best == SIZE_MAX)
            return ps_error_set(err, PS_EUSAGE,
                                "reader: %llu records in %llu batches cannot give %u ranks the "
                                "same number of batches without repeating records; use "
                                "drop_last, a smaller batch or fewer ranks",
                                (unsigned long long)records, (unsigned long long)batches,
                                p->opt.world_size);
        cuts *cb = &c[best];
        if (best_full) {
            if (++cb->full_k == cb->n_full) {
                cb->full_p++;
                cb->full_k = 0;
            }
        } else {
            cb->part_p++;
        }
    }
    return PS_OK;
}

/* Groups runs of `pool` consecutive batches of a bucket into sorting
 * pools and gives each batch its chunk of the sorted pool, the chunks in
 * a shuffled order of the pool's batches (so a bucket's batches do not
 * grow in length from one to the next). */
static int make_pools(ps_plan_batch *bt, uint64_t n, const ps_plan_options *o, uint32_t bucket,
                      ps_error *err)
{
    if (o->sort_pool <= 1)
        return PS_OK;
    uint32_t *order = malloc(o->sort_pool * sizeof *order);
    if (!order)
        return ps_error_set(err, PS_ENOMEM, "reader: out of memory for the plan");
    for (uint64_t p0 = 0, pi = 0; p0 < n; p0 += o->sort_pool, pi++) {
        uint32_t k = (uint32_t)(n - p0 < o->sort_pool ? n - p0 : o->sort_pool);
        uint64_t count = 0;
        for (uint32_t j = 0; j < k; j++)
            count += bt[p0 + j].count;
        if (count > UINT32_MAX)
            continue; /* cannot happen with batches of at most 2^24 */
        for (uint32_t j = 0; j < k; j++)
            order[j] = j;
        if (o->shuffle) {
            rng r;
            rng_init(&r, o->seed, o->epoch, TAG_POOL, bucket, pi);
            FISHER_YATES(order, (uint64_t)k, &r, uint32_t);
        }
        uint32_t chunk = 0;
        uint64_t start = bt[p0].pool_start;
        for (uint32_t j = 0; j < k; j++) {
            ps_plan_batch *b = &bt[p0 + order[j]];
            b->pool_start = start;
            b->pool_count = (uint32_t)count;
            b->chunk = chunk;
            chunk += b->count;
        }
    }
    free(order);
    return PS_OK;
}

int ps_plan_check_options(const ps_plan_options *o, ps_error *err)
{
    if ((o->batch_size == 0) == (o->max_tokens == 0))
        return ps_error_set(err, PS_EUSAGE,
                            "reader: give exactly one of batch_size and max_tokens");
    if (o->batch_size > (1u << 24))
        return ps_error_set(err, PS_EUSAGE, "reader: batch_size %u is above %u", o->batch_size,
                            1u << 24);
    if (o->world_size < 1 || o->rank >= o->world_size)
        return ps_error_set(err, PS_EUSAGE, "reader: rank %u is not below world_size %u",
                            o->rank, o->world_size);
    if (o->pad_multiple < 1 || o->pad_multiple > 4096)
        return ps_error_set(err, PS_EUSAGE, "reader: pad_multiple %u is not in 1..4096",
                            o->pad_multiple);
    if (o->shuffle_window < 1)
        return ps_error_set(err, PS_EUSAGE, "reader: shuffle_window must be at least 1");
    if (o->sort_pool < 1 || o->sort_pool > 1024)
        return ps_error_set(err, PS_EUSAGE, "reader: sort_pool %u is not in 1..1024",
                            o->sort_pool);
    return PS_OK;
}

/* One bucket's part of the plan: its padded bound and batch size, its blocks
 * (shuffled), its windows and its cuts into batches. */
static int plan_bucket(ps_plan *p, const ps_manifest *m, size_t b, const uint64_t *trusted_bytes,
                       uint64_t *used, cuts *c, ps_error *err)
{
    const ps_plan_options *opt = &p->opt;
    ps_plan_bucket *pb = &p->buckets[b];
    int rc;
    pb->bound = m->bounds[b];
    pb->lower = ps_mf_lower(m, b);
    uint64_t padded = ((uint64_t)pb->bound + opt->pad_multiple - 1) / opt->pad_multiple *
                      opt->pad_multiple;
    if (padded > UINT32_MAX)
        return ps_error_set(err, PS_EFORMAT, "manifest.json: bucket bound %u is too large",
                            pb->bound);
    pb->padded_bound = (uint32_t)(padded ? padded : 1);
    uint64_t B = opt->batch_size ? opt->batch_size : opt->max_tokens / pb->padded_bound;
    if (B < 1)
        B = 1;
    if (B > (1u << 24))
        B = 1u << 24;
    pb->batch_size = (uint32_t)B;
    if (pb->batch_size > p->max_batch)
        p->max_batch = pb->batch_size;
    if ((uint64_t)pb->batch_size * pb->padded_bound > p->max_batch_tokens)
        p->max_batch_tokens = (uint64_t)pb->batch_size * pb->padded_bound;
    if ((rc = ps_plan_collect_blocks(pb, m, b, trusted_bytes, used, used + m->n_shards, err)))
        return rc;
    if (opt->mix) {
        /* A mixture's buckets hold other counts each epoch: the reader's
         * buffers, sized at open, take the largest pool any epoch can make. */
        uint64_t most = ps_plan_mix_most(p, pb, m), pool = B * opt->sort_pool;
        most = most < pool ? most : pool;
        if (most > p->max_pool)
            p->max_pool = (uint32_t)(most < UINT32_MAX ? most : UINT32_MAX);
        if ((rc = ps_plan_mix_expand(p, pb, m, err)))
            return rc;
    }
    if (opt->shuffle) {
        rng r;
        rng_init(&r, opt->seed, opt->epoch, TAG_BLOCKS, b, 0);
        FISHER_YATES(pb->blocks, (uint64_t)pb->n_blocks, &r, ps_plan_block);
    }
    uint64_t pool_records = B * (opt->sort_pool ? opt->sort_pool : 1);
    uint64_t wb = (pool_records + m->block_records - 1) / m->block_records;
    if (wb < opt->shuffle_window)
        wb = opt->shuffle_window;
    if ((rc = ps_plan_make_windows(pb, (uint32_t)(wb < UINT32_MAX ? wb : UINT32_MAX), err)))
        return rc;
    p->records_total += pb->records;

    c->n_full = pb->records / B;
    c->rem = pb->records % B;
    c->partial = !opt->drop_last && c->rem;
    c->full_p = c->part_p = 1;
    if (opt->drop_last)
        p->records_dropped += c->rem;
    return PS_OK;
}

uint64_t ps_plan_memory_cap(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    return pages > 0 && psize > 0 ? (uint64_t)pages * (uint64_t)psize / 2 : 0;
}

/* Makes the global batch count a multiple of the ranks: with drop_last the
 * last *tail batches are dropped, otherwise batches are split until every
 * rank has as many. */
static int fit_ranks(ps_plan *p, cuts *c, uint64_t *batches, uint64_t *tail, ps_error *err)
{
    const ps_plan_options *opt = &p->opt;
    /* What the plan itself will take (bucket labels, cuts, this rank's
     * share): refused when beyond half of this machine's memory rather
     * than left to the allocator's overcommit. */
    uint64_t cap = ps_plan_memory_cap();
    if (cap && (*batches + opt->world_size) > cap / 48)
        return ps_error_set(err, PS_ELIMIT,
                            "reader: %llu batches would need more memory for the plan than this "
                            "machine has (use larger batches)",
                            (unsigned long long)*batches);
    uint64_t W = opt->world_size;
    *tail = 0;
    if (opt->drop_last) {
        *tail = *batches % W;
        if (p->records_total && *batches - *tail == 0)
            return ps_error_set(err, PS_EUSAGE,
                                "reader: with drop_last, %llu full batches leave nothing for %u "
                                "ranks (%llu records); use smaller batches or fewer ranks",
                                (unsigned long long)*batches, opt->world_size,
                                (unsigned long long)p->records_total);
    } else if (*batches % W) {
        uint64_t extra = W - *batches % W;
        int rc = split_for_ranks(c, p, extra, p->records_total, *batches, err);
        if (rc)
            return rc;
        *batches += extra;
    }
    p->global_batches = *batches - *tail;
    return PS_OK;
}

/* Each bucket's batches in order (per[b], nper[b] of them), with their sort
 * pools. */
static int bucket_batches(ps_plan *p, const ps_manifest *m, const cuts *c, ps_plan_batch **per,
                          uint64_t *nper, ps_error *err)
{
    for (size_t b = 0; b < m->n_buckets; b++) {
        uint64_t nb = cuts_count(&c[b]);
        per[b] = malloc((nb ? nb : 1) * sizeof **per);
        if (!per[b])
            return ps_error_set(err, PS_ENOMEM, "reader: out of memory for the plan");
        nper[b] = emit_cuts(&c[b], (uint32_t)b, p->buckets[b].batch_size, per[b]);
        int rc = make_pools(per[b], nper[b], &p->opt, (uint32_t)b, err);
        if (rc)
            return rc;
        /* Over every rank's batches, so that it is the same every epoch. */
        for (uint64_t i = 0; i < nper[b]; i++)
            if (per[b][i].pool_count > p->max_pool)
                p->max_pool = per[b][i].pool_count;
    }
    return PS_OK;
}

/* The interleaving of buckets (shuffled), dealt round-robin to the ranks:
 * this rank keeps every world_size-th batch; the last `tail` are dropped. */
static int deal_batches(ps_plan *p, size_t n_buckets, ps_plan_batch *const *per,
                        const uint64_t *nper, uint64_t batches, uint64_t tail, ps_error *err)
{
    const ps_plan_options *opt = &p->opt;
    uint64_t W = opt->world_size;
    uint32_t *order = malloc((batches ? batches : 1) * sizeof *order);
    p->batches = malloc((batches / W + 1) * sizeof *p->batches);
    uint64_t *next = NULL;
    if (!order || !p->batches) {
        free(order);
        return ps_error_set(err, PS_ENOMEM, "reader: out of memory for %llu batches",
                            (unsigned long long)batches);
    }
    uint64_t k = 0;
    for (size_t b = 0; b < n_buckets; b++)
        for (uint64_t i = 0; i < nper[b]; i++)
            order[k++] = (uint32_t)b;
    if (opt->shuffle) {
        rng r;
        rng_init(&r, opt->seed, opt->epoch, TAG_ORDER, 0, 0);
        FISHER_YATES(order, batches, &r, uint32_t);
    }
    next = calloc(n_buckets ? n_buckets : 1, sizeof *next);
    if (!next) {
        free(order);
        return ps_error_set(err, PS_ENOMEM, "reader: out of memory for the plan");
    }
    for (uint64_t g = 0; g < batches; g++) {
        uint32_t b = order[g];
        const ps_plan_batch *pbat = &per[b][next[b]++];
        if (g >= batches - tail) {
            p->records_dropped += pbat->count;
            continue;
        }
        if (g % W != opt->rank)
            continue;
        p->batches[p->n_batches++] = *pbat;
        p->records_rank += pbat->count;
        ps_plan_bucket *pb = &p->buckets[b];
        uint32_t w0 = ps_plan_window_of(pb, pbat->pool_start);
        uint32_t w1 = ps_plan_window_of(pb, pbat->pool_start + pbat->pool_count - 1);
        for (uint32_t w = w0; w <= w1; w++)
            pb->window_users[w]++;
    }
    free(next);
    free(order);
    return PS_OK;
}

int ps_plan_build(ps_plan *p, const ps_manifest *m, const ps_plan_options *opt,
                  const uint64_t *trusted_bytes, ps_error *err)
{
    memset(p, 0, sizeof *p);
    int rc = ps_plan_check_options(opt, err);
    if (rc)
        return rc;
    p->opt = *opt;
    p->n_buckets = m->n_buckets;
    size_t nb = m->n_buckets ? m->n_buckets : 1;
    p->buckets = calloc(nb, sizeof *p->buckets);
    cuts *c = calloc(nb, sizeof *c);
    uint64_t *nper = calloc(nb, sizeof *nper);
    ps_plan_batch **per = calloc(nb, sizeof *per);
    uint64_t *used = calloc(2 * (m->n_shards ? m->n_shards : 1), sizeof *used);
    if (!p->buckets || !c || !per || !used || !nper) {
        rc = ps_error_set(err, PS_ENOMEM, "reader: out of memory for the plan");
        goto done;
    }
    uint64_t batches = 0, tail = 0;
    if (opt->mix && (rc = ps_plan_mix_choose(p, err)))
        goto done;
    for (size_t b = 0; b < m->n_buckets; b++) {
        if ((rc = plan_bucket(p, m, b, trusted_bytes, used, &c[b], err)))
            goto done;
        batches += cuts_count(&c[b]);
    }
    if ((rc = fit_ranks(p, c, &batches, &tail, err)) ||
        (rc = bucket_batches(p, m, c, per, nper, err)) ||
        (rc = deal_batches(p, m->n_buckets, per, nper, batches, tail, err)))
        goto done;
done:
    if (per)
        for (size_t b = 0; b < m->n_buckets; b++)
            free(per[b]);
    free(per);
    free(c);
    free(used);
    free(nper);
    if (rc)
        ps_plan_free(p);
    return rc;
}
