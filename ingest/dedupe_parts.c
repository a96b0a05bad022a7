/*
 * The duplicate table, in parts by hash (ingest.h, "dedupe_parts.c"): one
 * table a part, each with its own default-id prefixes, so that parts
 * looked up on different threads share nothing they write. A cleaner
 * starts with one part, which its in-order commit looks up;
 * ps_cleaner_split_dedupe makes one a thread for threads to look up.
 *
 * A part is chosen by the pair hash's high half: a --part K/N build
 * chooses its records by the low half, which would leave most parts of a
 * part-build empty. Each part sits on cache lines of its own (threads
 * write their part's state at every record).
 */
#include "ingest/cleaner_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A table's prefix of the default ids last inserted: its number, length
 * and hash (ps_clean_item.id_prefix_*), so that an input's prefix string
 * is read when it changes, not each record. */
typedef struct id_prefix {
    bool have;
    uint32_t no;
    size_t len;
    uint64_t hash;
} id_prefix;

typedef struct ps_dedupe_part {
    ps_dedupe *d;
    id_prefix prefix;
    size_t reserved; /* the share of part_target it has made room for */
} __attribute__((aligned(64))) ps_dedupe_part;

static void parts_free(ps_dedupe_part *parts, size_t n)
{
    for (size_t k = 0; parts && k < n; k++)
        ps_dedupe_free(parts[k].d);
    free(parts);
}

/* n empty parts, or NULL when out of memory. */
static ps_dedupe_part *parts_new(size_t n)
{
    ps_dedupe_part *parts = aligned_alloc(_Alignof(ps_dedupe_part), n * sizeof *parts);
    if (!parts)
        return NULL;
    memset(parts, 0, n * sizeof *parts);
    for (size_t k = 0; k < n; k++)
        if (ps_dedupe_create(&parts[k].d)) {
            parts_free(parts, k);
            return NULL;
        }
    return parts;
}

int ps_dedupe_parts_init(ps_cleaner *c)
{
    c->parts = parts_new(1);
    c->n_parts = c->parts ? 1 : 0;
    return c->parts ? 0 : PS_ENOMEM;
}

void ps_dedupe_parts_free(ps_cleaner *c)
{
    parts_free(c->parts, c->n_parts);
    c->parts = NULL;
    c->n_parts = 0;
}

int ps_cleaner_split_dedupe(ps_cleaner *c, size_t n)
{
    ps_clean_counts counts;
    ps_stats_counts(c->stats, &counts);
    if (n < 1 || n > PS_DEDUPE_PARTS_MAX || c->split || counts.records_in)
        return PS_EINVAL;
    if (c->opts.keep_duplicates)
        return 0; /* nothing is looked up */
    ps_dedupe_part *parts = parts_new(n); /* the one part is still empty */
    if (!parts)
        return PS_ENOMEM;
    ps_dedupe_parts_free(c);
    c->parts = parts;
    c->n_parts = n;
    c->split = true;
    return 0;
}

/* Inserts a kept item's pair into part pt's table: a default id by its
 * number, after its input's prefix, which the worker hashed.
 * ps_dedupe_insert_hash's results. */
static int insert_item(ps_dedupe_part *pt, const ps_clean_item *it, const char **first,
                       bool *conflict)
{
    const ps_clean_result *res = &it->res;
    if (!it->id_default) {
        size_t n = it->id_len ? it->id_len : strlen(res->id);
        return ps_dedupe_insert_hash(pt->d, it->hash, res->id, n, it->label_hash, first,
                                     conflict);
    }
    id_prefix *pre = &pt->prefix;
    if (!pre->have || it->id_prefix_hash != pre->hash || it->id_prefix_len != pre->len) {
        int rc = ps_dedupe_add_prefix(pt->d, res->id, it->id_prefix_len, &pre->no);
        if (rc)
            return rc;
        pre->have = true;
        pre->hash = it->id_prefix_hash;
        pre->len = it->id_prefix_len;
    }
    return ps_dedupe_insert_pos(pt->d, it->hash, pre->no, it->id_pos, it->label_hash, first,
                                conflict);
}

void ps_dedupe_parts_expect(ps_cleaner *c, size_t n)
{
    /* only the reading thread adds; the parts' threads read it */
    __atomic_add_fetch(&c->part_target, n / c->n_parts + 1, __ATOMIC_RELAXED);
}

size_t ps_cleaner_dedupe_part(const ps_cleaner *c, const ps_clean_item *it)
{
    if (!c->split || c->opts.keep_duplicates || it->res.outcome != PS_OUTCOME_KEPT)
        return SIZE_MAX;
    return (size_t)(it->hash.high % c->n_parts);
}

/* Makes room for what the reading thread expects since the last look (a
 * hint: a failure only costs the doublings it would have saved). */
static void part_reserve(ps_cleaner *c, ps_dedupe_part *pt)
{
    size_t target = __atomic_load_n(&c->part_target, __ATOMIC_RELAXED);
    if (target <= pt->reserved)
        return;
    (void)ps_dedupe_reserve(pt->d, ps_dedupe_count(pt->d) + (target - pt->reserved));
    pt->reserved = target;
}

int ps_cleaner_resolve(ps_cleaner *c, size_t part, ps_clean_item *it, ps_error *err)
{
    ps_dedupe_part *pt = &c->parts[part];
    part_reserve(c, pt);
    const char *first = NULL;
    bool conflict = false;
    int d = insert_item(pt, it, &first, &conflict);
    if (d < 0)
        return ps_error_set(err, d, "%s: %s in duplicate detection", it->res.source,
                            d == PS_ENOMEM ? "out of memory" : ps_strerror(d));
    it->resolved = true;
    if (d == 1) {
        it->res.outcome = PS_OUTCOME_DUPLICATE;
        it->res.duplicate_of = first;
        it->label_conflict = conflict;
    }
    return 0;
}

void ps_cleaner_resolve_prefetch(const ps_cleaner *c, size_t part, const ps_clean_item *it)
{
    ps_dedupe_prefetch(c->parts[part].d, it->hash);
}

size_t ps_cleaner_dedupe_parts(const ps_cleaner *c) { return c->split ? c->n_parts : 0; }

static ps_clean_item *item_at(void *items, size_t stride, size_t i)
{
    return (ps_clean_item *)((char *)items + i * stride);
}

/* The part item i is grouped in, or SIZE_MAX. */
static size_t group_of(const ps_cleaner *c, void *items, size_t stride, size_t i,
                       uint64_t part_count, uint64_t part_index)
{
    const ps_clean_item *it = item_at(items, stride, i);
    size_t k = ps_cleaner_dedupe_part(c, it);
    if (k != SIZE_MAX && part_count && it->hash.low % part_count != part_index)
        return SIZE_MAX;
    return k;
}

int ps_part_groups_init(ps_part_groups *g, size_t records, size_t parts)
{
    g->idx = malloc(records * sizeof *g->idx);
    g->start = malloc((parts + 1) * sizeof *g->start);
    return g->idx && g->start ? 0 : PS_ENOMEM;
}

void ps_part_groups_free(ps_part_groups *g)
{
    free(g->idx);
    free(g->start);
    g->idx = NULL;
    g->start = NULL;
}

void ps_part_groups_fill(const ps_cleaner *c, ps_part_groups *g, void *items, size_t stride,
                         size_t n, uint64_t part_count, uint64_t part_index)
{
    /* a counting sort: input order within each part */
    uint32_t *start = g->start;
    memset(start, 0, (c->n_parts + 1) * sizeof *start);
    for (size_t i = 0; i < n; i++) {
        size_t k = group_of(c, items, stride, i, part_count, part_index);
        if (k != SIZE_MAX)
            start[k + 1]++;
    }
    for (size_t k = 0; k < c->n_parts; k++)
        start[k + 1] += start[k];
    for (size_t i = 0; i < n; i++) { /* start[k] ends as part k's end */
        size_t k = group_of(c, items, stride, i, part_count, part_index);
        if (k != SIZE_MAX)
            g->idx[start[k]++] = (uint32_t)i;
    }
    memmove(start + 1, start, c->n_parts * sizeof *start);
    start[0] = 0;
}

#define RESOLVE_AHEAD 8 /* items: the table's misses overlap */

int ps_part_groups_resolve(ps_cleaner *c, const ps_part_groups *g, void *items, size_t stride,
                           size_t k, size_t *failed, ps_error *err)
{
    const uint32_t *ix = g->idx + g->start[k];
    size_t n = g->start[k + 1] - g->start[k];
    for (size_t j = 0; j < n && j < RESOLVE_AHEAD; j++)
        ps_cleaner_resolve_prefetch(c, k, item_at(items, stride, ix[j]));
    for (size_t j = 0; j < n; j++) {
        if (j + RESOLVE_AHEAD < n)
            ps_cleaner_resolve_prefetch(c, k, item_at(items, stride, ix[j + RESOLVE_AHEAD]));
        int rc = ps_cleaner_resolve(c, k, item_at(items, stride, ix[j]), err);
        if (rc) {
            *failed = ix[j];
            return rc;
        }
    }
    return 0;
}

int ps_part_turns_init(ps_part_turns *t, size_t n)
{
    t->n = n;
    t->next = n ? calloc(n, sizeof *t->next) : NULL;
    t->busy = n ? calloc(n, sizeof *t->busy) : NULL;
    return !n || (t->next && t->busy) ? 0 : PS_ENOMEM;
}

void ps_part_turns_free(ps_part_turns *t)
{
    free(t->next);
    free(t->busy);
    memset(t, 0, sizeof *t);
}

size_t ps_part_turns_ready(const ps_part_turns *t, size_t tail,
                           bool (*cleaned)(const void *ctx, size_t chunk), const void *ctx)
{
    for (size_t k = 0; k < t->n; k++)
        if (!t->busy[k] && t->next[k] != tail && cleaned(ctx, t->next[k]))
            return k;
    return SIZE_MAX;
}

bool ps_part_turns_past(const ps_part_turns *t, size_t s)
{
    for (size_t k = 0; k < t->n; k++)
        if (t->next[k] <= s)
            return false;
    return true;
}

size_t ps_part_turns_take(ps_part_turns *t, size_t k)
{
    t->busy[k] = true;
    return t->next[k];
}

bool ps_part_turns_end(ps_part_turns *t, size_t k, size_t head)
{
    size_t s = t->next[k]++;
    t->busy[k] = false;
    /* a wake-up each part would be a context switch each, for nothing */
    return s == head && ps_part_turns_past(t, s);
}
