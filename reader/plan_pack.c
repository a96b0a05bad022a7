/*
 * The packed plan (docs/READER.md, "Packing"): causal records packed whole
 * into rows of exactly L tokens.
 *
 * Every bucket's blocks go into one order (permuted with shuffle), cut
 * into windows of at most shuffle_window blocks (128 by default when
 * packing), all of about the same size; the records of a window are
 * permuted (the same permutation the window's decoder uses) and packed by
 * best-fit decreasing: by length, longest first (ties: the earlier
 * position), each into the open row with the least room that still fits
 * it (ties: the row that came to that room first), else into a new row; then a local search
 * (improve_rows) moves and swaps records between rows to empty the
 * emptiest ones. The rows of
 * consecutive windows make batches of batch_size rows, in window order,
 * dealt round-robin to the ranks like the unpacked plan's. Like it, the
 * plan is a pure function of the manifest, the record lengths (read from
 * the shards' "lengths" databases at open, not from blocks) and the
 * options.
 *
 * The plan is kept as one "bucket" for the window machinery (its blocks
 * carry their stored bucket), and each batch lists its segments.
 */
#include "reader/plan.h"
#include "reader/plan_rng.h"

#include <stdlib.h>
#include <string.h>

/* A record of a window while it is packed. */
typedef struct pk_item {
    uint32_t len, pos; /* pos: in the window's permuted order */
    uint32_t row;      /* the window's row it went to */
} pk_item;

/* The epoch's rows, all ranks: row r holds segs[row_first[r] ..
 * row_first[r] + row_n[r]). */
typedef struct pk_rows {
    ps_plan_seg *segs;
    uint64_t n_segs, cap_segs;
    uint64_t *row_first;
    uint32_t *row_n;
    uint64_t n_rows, cap_rows;
} pk_rows;

typedef struct pk_batch {
    uint64_t row;  /* first row */
    uint32_t rows;
} pk_batch;

static int by_len_desc(const void *a, const void *b)
{
    const pk_item *x = a, *y = b;
    if (x->len != y->len)
        return x->len > y->len ? -1 : 1;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static int grow(void **p, uint64_t *cap, uint64_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    uint64_t c = *cap ? *cap : 1024;
    while (c < need)
        c *= 2;
    void *q = realloc(*p, (size_t)c * elem);
    if (!q)
        return -1;
    *p = q;
    *cap = c;
    return 0;
}

/* The open rows by room, for best fit in O(log L) a record: the rows with
 * room r are a queue (head[r], then below[row], to tail[r]), and a two-level bitmap
 * marks the rooms that have rows, so the least room >= len is a bit scan. */
typedef struct pk_rooms {
    uint32_t L;
    uint32_t *head;    /* L + 1: the first row of each room's queue */
    uint32_t *tail;    /* L + 1: its last row */
    uint32_t *below;   /* per row: the next row of its queue */
    uint64_t *bits;    /* (L + 64) / 64 words: room r has rows */
    uint64_t *summary; /* a bit per word of `bits` that is not zero */
    size_t n_bits, n_summary;
} pk_rooms;

static int rooms_alloc(pk_rooms *rm, uint32_t L, size_t n)
{
    rm->L = L;
    rm->n_bits = ((size_t)L + 64) / 64;
    rm->n_summary = (rm->n_bits + 63) / 64;
    rm->head = malloc(((size_t)L + 1) * sizeof *rm->head);
    rm->tail = malloc(((size_t)L + 1) * sizeof *rm->tail);
    rm->below = malloc((n ? n : 1) * sizeof *rm->below);
    rm->bits = calloc(rm->n_bits, sizeof *rm->bits);
    rm->summary = calloc(rm->n_summary, sizeof *rm->summary);
    return rm->head && rm->tail && rm->below && rm->bits && rm->summary ? 0 : -1;
}

static void rooms_free(pk_rooms *rm)
{
    free(rm->head);
    free(rm->tail);
    free(rm->below);
    free(rm->bits);
    free(rm->summary);
}

static void rooms_push(pk_rooms *rm, uint32_t room, uint32_t row)
{
    uint64_t bit = (uint64_t)1 << (room % 64);
    rm->below[row] = UINT32_MAX;
    if (rm->bits[room / 64] & bit)
        rm->below[rm->tail[room]] = row;
    else
        rm->head[room] = row;
    rm->tail[room] = row;
    rm->bits[room / 64] |= bit;
    rm->summary[room / 4096] |= (uint64_t)1 << (room / 64 % 64);
}

static uint32_t rooms_pop(pk_rooms *rm, uint32_t room)
{
    uint32_t row = rm->head[room];
    rm->head[room] = rm->below[row];
    if (rm->head[room] == UINT32_MAX) {
        rm->bits[room / 64] &= ~((uint64_t)1 << (room % 64));
        if (!rm->bits[room / 64])
            rm->summary[room / 4096] &= ~((uint64_t)1 << (room / 64 % 64));
    }
    return row;
}

/* The least room >= len that has a row, or UINT32_MAX. */
static uint32_t rooms_fit(const pk_rooms *rm, uint32_t len)
{
    size_t w = len / 64;
    uint64_t m = rm->bits[w] & (~(uint64_t)0 << (len % 64));
    if (m)
        return (uint32_t)(w * 64 + (size_t)__builtin_ctzll(m));
    size_t w1 = w + 1; /* the next word with rows, through the summary */
    for (size_t s = w1 / 64; s < rm->n_summary; s++) {
        uint64_t sm = rm->summary[s];
        if (s == w1 / 64)
            sm &= w1 % 64 ? ~(uint64_t)0 << (w1 % 64) : ~(uint64_t)0;
        if (sm) {
            size_t word = s * 64 + (size_t)__builtin_ctzll(sm);
            return (uint32_t)(word * 64 + (size_t)__builtin_ctzll(rm->bits[word]));
        }
    }
    return UINT32_MAX;
}

/* Best-fit decreasing of items[0..n) (sorted) into rows of L: each into
 * the row with the least room that holds it (ties: the row that came to
 * that room first), else a new row. Sets each item's row; returns the
 * number of rows. */
static uint32_t best_fit(pk_item *items, uint32_t n, pk_rooms *rm)
{
    uint32_t rows = 0, L = rm->L;
    memset(rm->bits, 0, rm->n_bits * sizeof *rm->bits);
    memset(rm->summary, 0, rm->n_summary * sizeof *rm->summary);
    for (uint32_t k = 0; k < n; k++) {
        uint32_t len = items[k].len, room = rooms_fit(rm, len), row;
        if (room == UINT32_MAX) {
            row = rows++;
            room = L;
        } else {
            row = rooms_pop(rm, room);
        }
        if (room - len > 0) /* a full row takes no more */
            rooms_push(rm, room - len, row);
        items[k].row = row;
    }
    return rows;
}

/* The local search after best-fit decreasing. Best-fit decreasing leaves
 * its slack spread thin over many rows (a row is closed when no record
 * left fits, and Spider's records are 110+ tokens with a schema), so at
 * L = 1024 it fills about 96.5%. The search concentrates the slack: for
 * each row, fullest first, it takes the one move or swap that fills it
 * most from one of the PK_DONORS emptiest rows (a donor's record moved in,
 * or exchanged for a shorter one of this row), so that the emptiest rows
 * drain and vanish. PK_SWEEPS sweeps of that reach 97.4% on Spider at
 * 1024 (99.5% at 2048); both bounds keep the cost linear in the window. */
#define PK_SWEEPS 4
#define PK_DONORS 256

typedef struct pk_search {
    uint32_t *fill, *head, *next; /* per row, per row, per item */
    uint64_t *order;              /* rows by fill, fullest first: (L - fill) << 32 | row */
    const pk_item *items;
} pk_search;

static int by_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void list_remove(pk_search *s, uint32_t row, uint32_t item)
{
    uint32_t *at = &s->head[row];
    while (*at != item)
        at = &s->next[*at];
    *at = s->next[item];
}

static void list_push(pk_search *s, uint32_t row, uint32_t item)
{
    s->next[item] = s->head[row];
    s->head[row] = item;
}

/* The best move or swap into row A (order[ai]) from the donors: returns the
 * gain (0: none) and sets *in (a donor's item), *out (A's item given back,
 * or UINT32_MAX for a move) and *from (the donor row). */
static uint32_t best_exchange(const pk_search *s, uint32_t rows, uint32_t ai, uint32_t gap,
                              uint32_t *in, uint32_t *out, uint32_t *from)
{
    uint32_t A = (uint32_t)s->order[ai], best = 0;
    for (uint32_t bi = rows - 1, tried = 0; bi > ai && tried < PK_DONORS && best < gap;
         bi--, tried++) {
        uint32_t B = (uint32_t)s->order[bi];
        for (uint32_t b = s->head[B]; b != UINT32_MAX; b = s->next[b]) {
            uint32_t lb = s->items[b].len;
            if (lb <= gap && lb > best) {
                best = lb;
                *in = b, *out = UINT32_MAX, *from = B;
            }
            for (uint32_t a = s->head[A]; a != UINT32_MAX; a = s->next[a]) {
                uint32_t la = s->items[a].len;
                if (lb > la && lb - la <= gap && lb - la > best) {
                    best = lb - la;
                    *in = b, *out = a, *from = B;
                }
            }
        }
    }
    return best;
}

/* Runs the search over items[0..n) in `rows` rows of L; sets each item's
 * row again, rows left empty removed (the others keep their order).
 * Returns the number of rows. */
static uint32_t improve_rows(pk_item *items, uint32_t n, uint32_t rows, uint32_t L,
                             uint32_t *scratch)
{
    /* the uint64 order first, at malloc's alignment */
    pk_search s = {scratch + 2 * n, scratch + 3 * n, scratch + 4 * n, (uint64_t *)scratch, items};
    for (uint32_t r = 0; r < rows; r++)
        s.head[r] = UINT32_MAX, s.fill[r] = 0;
    for (uint32_t i = n; i-- > 0;) { /* lists in items order */
        list_push(&s, items[i].row, i);
        s.fill[items[i].row] += items[i].len;
    }
    for (int sweep = 0; sweep < PK_SWEEPS; sweep++) {
        for (uint32_t r = 0; r < rows; r++)
            s.order[r] = (uint64_t)(L - s.fill[r]) << 32 | r;
        qsort(s.order, rows, sizeof *s.order, by_u64);
        uint32_t changed = 0;
        for (uint32_t ai = 0; ai + 1 < rows; ai++) {
            uint32_t A = (uint32_t)s.order[ai], in = 0, out = 0, from = 0;
            if (s.fill[A] == 0 || s.fill[A] == L)
                continue;
            uint32_t gain = best_exchange(&s, rows, ai, L - s.fill[A], &in, &out, &from);
            if (!gain)
                continue;
            list_remove(&s, from, in);
            list_push(&s, A, in);
            if (out != UINT32_MAX) {
                list_remove(&s, A, out);
                list_push(&s, from, out);
            }
            s.fill[A] += gain;
            s.fill[from] -= gain;
            changed++;
        }
        if (!changed)
            break;
    }
    uint32_t kept = 0;
    for (uint32_t r = 0; r < rows; r++) {
        if (s.head[r] == UINT32_MAX)
            continue;
        for (uint32_t i = s.head[r]; i != UINT32_MAX; i = s.next[i])
            items[i].row = kept;
        kept++;
    }
    return kept;
}

/* The lengths of window w's records in stored order, into wl. */
static void window_lengths(const ps_plan *p, const ps_plan_bucket *pb, uint32_t w,
                           const ps_manifest *m, const ps_pack_lengths *lens, uint32_t *wl)
{
    uint32_t first = w * pb->window_blocks, j = 0;
    uint32_t end = first + pb->window_blocks < pb->n_blocks ? first + pb->window_blocks
                                                            : pb->n_blocks;
    for (uint32_t k = first; k < end; k++) {
        const ps_plan_block *blk = &pb->blocks[k];
        uint64_t base = lens->first[(size_t)blk->shard * m->n_buckets + blk->bucket] +
                        (uint64_t)blk->seq * m->block_records;
        if (p->opt.mix) { /* the records this copy of the block takes */
            for (uint32_t i = 0; i < blk->stored; i++)
                if (ps_plan_mix_takes(p, m, blk, i))
                    wl[j++] = lens->len[base + i];
            continue;
        }
        memcpy(wl + j, lens->len + base, (size_t)blk->records * sizeof *wl);
        j += blk->records;
    }
}

/* Packs window w and appends its rows to *out. scratch: 4 arrays of the
 * window's record count, and `search` 5 more (n uint64, then 3). */
static int pack_window(ps_plan *p, const ps_manifest *m, const ps_pack_lengths *lens, uint32_t w,
                       pk_rows *out, uint32_t *perm, uint32_t *wl, pk_item *items,
                       uint32_t *room, uint32_t *search, pk_rooms *rm, ps_error *err)
{
    const ps_plan_bucket *pb = &p->buckets[0];
    uint32_t L = p->opt.pack;
    uint32_t n = (uint32_t)(pb->window_first[w + 1] - pb->window_first[w]), k = 0;
    ps_plan_window_perm(p, 0, w, perm, n);
    window_lengths(p, pb, w, m, lens, wl);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t len = wl[perm[i]];
        if (len > L) {
            if (!p->opt.skip_long)
                return ps_error_set(err, PS_EUSAGE,
                                    "reader: a record of %u tokens is longer than pack %u", len,
                                    L);
            p->records_skipped++;
            continue;
        }
        items[k++] = (pk_item){len, i, 0};
    }
    qsort(items, k, sizeof *items, by_len_desc);
    uint32_t rows = improve_rows(items, k, best_fit(items, k, rm), L, search);
    /* Row by row, each row's records in placement order (their order in
     * `items`): a counting pass over the rows. */
    if (grow((void **)&out->segs, &out->cap_segs, out->n_segs + k, sizeof *out->segs) ||
        grow((void **)&out->row_first, &out->cap_rows, out->n_rows + rows + 1,
             sizeof *out->row_first))
        return ps_error_set(err, PS_ENOMEM, "reader: out of memory for the packed plan");
    uint32_t *row_n = realloc(out->row_n, (size_t)out->cap_rows * sizeof *row_n);
    if (!row_n)
        return ps_error_set(err, PS_ENOMEM, "reader: out of memory for the packed plan");
    out->row_n = row_n;
    memset(room, 0, (size_t)rows * sizeof *room); /* now: segments per row */
    for (uint32_t i = 0; i < k; i++)
        room[items[i].row]++;
    uint64_t at = out->n_segs;
    for (uint32_t r = 0; r < rows; r++) {
        out->row_first[out->n_rows + r] = at;
        out->row_n[out->n_rows + r] = room[r];
        at += room[r];
        room[r] = 0; /* now: segments placed so far */
    }
    for (uint32_t i = 0; i < k; i++) {
        uint32_t r = items[i].row;
        ps_plan_seg *sg = &out->segs[out->row_first[out->n_rows + r] + room[r]++];
        sg->pos = pb->window_first[w] + items[i].pos;
        sg->len = items[i].len;
        sg->row = 0;
    }
    out->n_segs += k;
    out->n_rows += rows;
    return PS_OK;
}

/* Every block of every bucket in stored order (bucket, shard, sequence),
 * permuted with shuffle, windows of shuffle_window blocks. */
static int pack_blocks(ps_plan *p, const ps_manifest *m, const uint64_t *trusted, ps_error *err)
{
    ps_plan_bucket *pb = &p->buckets[0];
    uint64_t *used = calloc(2 * (m->n_shards ? m->n_shards : 1), sizeof *used);
    if (!used)
        return ps_error_set(err, PS_ENOMEM, "reader: out of memory for the plan");
    int rc = PS_OK;
    for (size_t b = 0; b < m->n_buckets && !rc; b++) {
        ps_plan_bucket tb = {0};
        rc = ps_plan_collect_blocks(&tb, m, b, trusted, used, used + m->n_shards, err);
        if (!rc && p->opt.mix)
            rc = ps_plan_mix_expand(p, &tb, m, err);
        if (!rc && tb.n_blocks > UINT32_MAX - pb->n_blocks)
            rc = ps_error_set(err, PS_ELIMIT, "reader: too many blocks to pack");
        ps_plan_block *nb = rc ? NULL
                               : realloc(pb->blocks, ((size_t)pb->n_blocks + tb.n_blocks + 1) *
                                                         sizeof *nb);
        if (!rc && !nb)
            rc = ps_error_set(err, PS_ENOMEM, "reader: out of memory for the plan");
        if (!rc) {
            pb->blocks = nb;
            memcpy(pb->blocks + pb->n_blocks, tb.blocks, (size_t)tb.n_blocks * sizeof *nb);
            pb->n_blocks += tb.n_blocks;
            pb->records += tb.records;
        }
        free(tb.blocks);
    }
    free(used);
    if (rc)
        return rc;
    if (p->opt.shuffle) {
        rng r;
        rng_init(&r, p->opt.seed, p->opt.epoch, TAG_PACK_BLOCKS, 0, 0);
        FISHER_YATES(pb->blocks, (uint64_t)pb->n_blocks, &r, ps_plan_block);
    }
    /* Windows of equal size (at most shuffle_window blocks each): a short
     * last window would pack worse than the rest. */
    uint32_t W = p->opt.shuffle_window, n_windows = (uint32_t)(((uint64_t)pb->n_blocks + W - 1) / W);
    if (n_windows > 1)
        W = (uint32_t)(((uint64_t)pb->n_blocks + n_windows - 1) / n_windows);
    return ps_plan_make_windows(pb, W, err);
}

/* Packs every window into rows. */
static int pack_rows(ps_plan *p, const ps_manifest *m, const ps_pack_lengths *lens, pk_rows *rows,
                     ps_error *err)
{
    const ps_plan_bucket *pb = &p->buckets[0];
    uint64_t most = 0;
    for (uint32_t w = 0; w < pb->n_windows; w++)
        if (pb->window_first[w + 1] - pb->window_first[w] > most)
            most = pb->window_first[w + 1] - pb->window_first[w];
    uint64_t cap = ps_plan_memory_cap();
    if (cap && pb->records > cap / (sizeof(ps_plan_seg) * 2 + 16))
        return ps_error_set(err, PS_ELIMIT,
                            "reader: packing %llu records would need more memory for the plan "
                            "than this machine has",
                            (unsigned long long)pb->records);
    size_t n = most ? (size_t)most : 1;
    uint32_t *perm = malloc(n * sizeof *perm), *wl = malloc(n * sizeof *wl);
    uint32_t *room = malloc(n * sizeof *room), *search = malloc(5 * n * sizeof *search);
    pk_item *items = malloc(n * sizeof *items);
    pk_rooms rm = {0};
    int rc = perm && wl && room && items && search && !rooms_alloc(&rm, p->opt.pack, n)
                 ? PS_OK
                 : ps_error_set(err, PS_ENOMEM, "reader: out of memory for the packed plan");
    for (uint32_t w = 0; w < pb->n_windows && !rc; w++)
        rc = pack_window(p, m, lens, w, rows, perm, wl, items, room, search, &rm, err);
    rooms_free(&rm);
    free(search);
    free(perm);
    free(wl);
    free(room);
    free(items);
    return rc;
}

/* Splits row `r` in two (its segments halved, the first half keeping
 * ceil(n/2)); rows after it move up by one. */
static int split_row(pk_rows *rows, uint64_t r)
{
    if (grow((void **)&rows->row_first, &rows->cap_rows, rows->n_rows + 2,
             sizeof *rows->row_first))
        return -1;
    uint32_t *row_n = realloc(rows->row_n, (size_t)rows->cap_rows * sizeof *row_n);
    if (!row_n)
        return -1;
    rows->row_n = row_n;
    memmove(rows->row_first + r + 2, rows->row_first + r + 1,
            (size_t)(rows->n_rows - r - 1) * sizeof *rows->row_first);
    memmove(rows->row_n + r + 2, rows->row_n + r + 1,
            (size_t)(rows->n_rows - r - 1) * sizeof *rows->row_n);
    uint32_t n = rows->row_n[r], a = (n + 1) / 2;
    rows->row_n[r] = a;
    rows->row_first[r + 1] = rows->row_first[r] + a;
    rows->row_n[r + 1] = n - a;
    rows->n_rows++;
    return 0;
}

/* One more batch, for the ranks: the batch with the most rows (the last on
 * ties) is split in two by rows; when every batch has one row, the row
 * with the most segments (the last on ties) is split in two. bt has room
 * for one more. Returns 0, or PS_EUSAGE when nothing can be split. */
static int split_one(pk_rows *rows, pk_batch *bt, uint64_t *nb, const ps_plan *p, ps_error *err)
{
    uint64_t best = UINT64_MAX;
    uint32_t most = 1;
    for (uint64_t i = 0; i < *nb; i++)
        if (bt[i].rows >= most && bt[i].rows >= 2) {
            most = bt[i].rows;
            best = i;
        }
    if (best != UINT64_MAX) {
        memmove(bt + best + 2, bt + best + 1, (size_t)(*nb - best - 1) * sizeof *bt);
        uint32_t a = (bt[best].rows + 1) / 2;
        bt[best + 1] = (pk_batch){bt[best].row + a, bt[best].rows - a};
        bt[best].rows = a;
        (*nb)++;
        return PS_OK;
    }
    most = 1;
    for (uint64_t i = 0; i < *nb; i++)
        if (rows->row_n[bt[i].row] >= most && rows->row_n[bt[i].row] >= 2) {
            most = rows->row_n[bt[i].row];
            best = i;
        }
    if (best == UINT64_MAX)
        return ps_error_set(err, PS_EUSAGE,
                            "reader: %llu records in %llu packed batches cannot give %u ranks "
                            "the same number of batches without repeating records; use "
                            "drop_last, fewer ranks or a smaller pack",
                            (unsigned long long)rows->n_segs, (unsigned long long)*nb,
                            p->opt.world_size);
    if (split_row(rows, bt[best].row))
        return ps_error_set(err, PS_ENOMEM, "reader: out of memory for the packed plan");
    for (uint64_t i = best + 1; i < *nb; i++)
        bt[i].row++;
    memmove(bt + best + 2, bt + best + 1, (size_t)(*nb - best - 1) * sizeof *bt);
    bt[best + 1] = (pk_batch){bt[best].row + 1, 1};
    (*nb)++;
    return PS_OK;
}

/* Cuts the rows into batches of R rows and makes their count a multiple of
 * the ranks (drop_last: drops the partial batch and then the last ones;
 * else splits). Sets *bt and *nb. */
static int make_batches(ps_plan *p, pk_rows *rows, uint32_t R, pk_batch **bt, uint64_t *nb,
                        ps_error *err)
{
    uint64_t W = p->opt.world_size;
    uint64_t full = rows->n_rows / R, part = rows->n_rows % R;
    uint64_t n = full + (part != 0);
    *bt = malloc((size_t)(n + W + 1) * sizeof **bt);
    if (!*bt)
        return ps_error_set(err, PS_ENOMEM, "reader: out of memory for the packed plan");
    for (uint64_t i = 0; i < n; i++)
        (*bt)[i] = (pk_batch){i * R, i < full ? R : (uint32_t)part};
    if (p->opt.drop_last) {
        uint64_t keep = full - full % W;
        for (uint64_t i = keep; i < n; i++)
            for (uint32_t k = 0; k < (*bt)[i].rows; k++)
                p->records_dropped += rows->row_n[(*bt)[i].row + k];
        if (keep == 0 && rows->n_segs)
            return ps_error_set(err, PS_EUSAGE,
                                "reader: with drop_last, %llu full packed batches leave nothing "
                                "for %llu ranks; use smaller batches or fewer ranks",
                                (unsigned long long)full, (unsigned long long)W);
        *nb = keep;
        return PS_OK;
    }
    *nb = n;
    while (*nb % W) {
        int rc = split_one(rows, *bt, nb, p, err);
        if (rc)
            return rc;
    }
    return PS_OK;
}

/* This rank's batches: every world_size-th, with their segments. */
static int deal_packed(ps_plan *p, const pk_rows *rows, const pk_batch *bt, uint64_t nb,
                       ps_error *err)
{
    uint64_t W = p->opt.world_size, mine = 0, segs = 0;
    for (uint64_t g = p->opt.rank; g < nb; g += W) {
        mine++;
        for (uint32_t k = 0; k < bt[g].rows; k++)
            segs += rows->row_n[bt[g].row + k];
    }
    p->batches = malloc((size_t)(mine ? mine : 1) * sizeof *p->batches);
    p->segs = malloc((size_t)(segs ? segs : 1) * sizeof *p->segs);
    if (!p->batches || !p->segs)
        return ps_error_set(err, PS_ENOMEM, "reader: out of memory for the packed plan");
    ps_plan_bucket *pb = &p->buckets[0];
    for (uint64_t g = p->opt.rank; g < nb; g += W) {
        uint64_t start = p->n_segs;
        for (uint32_t k = 0; k < bt[g].rows; k++) {
            uint64_t r = bt[g].row + k;
            for (uint32_t j = 0; j < rows->row_n[r]; j++) {
                ps_plan_seg sg = rows->segs[rows->row_first[r] + j];
                sg.row = k;
                p->segs[p->n_segs++] = sg;
            }
        }
        uint32_t count = (uint32_t)(p->n_segs - start);
        p->batches[p->n_batches++] = (ps_plan_batch){start, count, 0, 0, bt[g].rows};
        p->records_rank += count;
        p->rows_rank += bt[g].rows;
        if (count) {
            uint32_t w0 = ps_plan_window_of(pb, p->segs[start].pos);
            uint32_t w1 = ps_plan_window_of(pb, p->segs[p->n_segs - 1].pos);
            for (uint32_t w = w0; w <= w1; w++)
                pb->window_users[w]++;
        }
    }
    p->global_batches = nb;
    return PS_OK;
}

int ps_plan_build_packed(ps_plan *p, const ps_manifest *m, const ps_plan_options *opt,
                         const uint64_t *trusted_bytes, const ps_pack_lengths *lens,
                         ps_error *err)
{
    memset(p, 0, sizeof *p);
    int rc = ps_plan_check_options(opt, err);
    if (rc)
        return rc;
    if (opt->pack < 1 || opt->pack > (1u << 24))
        return ps_error_set(err, PS_EUSAGE, "reader: pack %u is not in 1..%u", opt->pack,
                            1u << 24);
    p->opt = *opt;
    p->n_buckets = 1;
    p->buckets = calloc(1, sizeof *p->buckets);
    if (!p->buckets)
        return ps_error_set(err, PS_ENOMEM, "reader: out of memory for the plan");
    uint32_t L = opt->pack;
    uint64_t R = opt->batch_size ? opt->batch_size : opt->max_tokens / L;
    R = R < 1 ? 1 : R > (1u << 24) ? 1u << 24 : R;
    ps_plan_bucket *pb = &p->buckets[0];
    pb->bound = pb->padded_bound = L;
    pb->batch_size = (uint32_t)R;
    p->max_batch = (uint32_t)R;
    p->max_batch_tokens = R * L;
    /* Segments per batch, any epoch: rows of L hold at most L / min_len. */
    uint32_t min_len = lens->min_len ? lens->min_len : 1;
    uint64_t most = R * (L / min_len ? L / min_len : 1);
    p->max_pool = (uint32_t)(most < (1u << 30) ? most : (1u << 30));
    pk_rows rows = {0};
    pk_batch *bt = NULL;
    uint64_t nb = 0;
    if (!(rc = opt->mix ? ps_plan_mix_choose(p, err) : 0) &&
        !(rc = pack_blocks(p, m, trusted_bytes, err)) &&
        !(rc = pack_rows(p, m, lens, &rows, err)) &&
        !(rc = make_batches(p, &rows, (uint32_t)R, &bt, &nb, err)))
        rc = deal_packed(p, &rows, bt, nb, err);
    p->records_total = pb->records;
    free(rows.segs);
    free(rows.row_first);
    free(rows.row_n);
    free(bt);
    if (rc)
        ps_plan_free(p);
    return rc;
}
