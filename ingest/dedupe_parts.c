/*
 * The duplicate table split by hash (ingest.h, "dedupe_parts.c"): one
 * table a part, each with its own default-id prefixes, so that parts
 * looked up on different threads share nothing they write.
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

typedef struct ps_dedupe_part {
    ps_dedupe *d;
    ps_id_prefix prefix;
    size_t reserved; /* the share of part_target it has made room for */
} __attribute__((aligned(64))) ps_dedupe_part;

void ps_dedupe_parts_free(ps_cleaner *c)
{
    for (size_t k = 0; k < c->n_parts; k++)
        ps_dedupe_free(c->parts[k].d);
    free(c->parts);
    c->parts = NULL;
    c->n_parts = 0;
}

int ps_cleaner_split_dedupe(ps_cleaner *c, size_t n)
{
    ps_clean_counts counts;
    ps_stats_counts(c->stats, &counts);
    if (n < 1 || n > PS_DEDUPE_PARTS_MAX || c->n_parts || counts.records_in)
        return PS_EINVAL;
    ps_dedupe_part *parts = aligned_alloc(_Alignof(ps_dedupe_part), n * sizeof *parts);
    if (!parts)
        return PS_ENOMEM;
    memset(parts, 0, n * sizeof *parts);
    for (size_t k = 0; k < n; k++)
        if (ps_dedupe_create(&parts[k].d)) {
            while (k--)
                ps_dedupe_free(parts[k].d);
            free(parts);
            return PS_ENOMEM;
        }
    c->parts = parts;
    c->n_parts = n;
    return 0;
}

void ps_dedupe_parts_expect(ps_cleaner *c, size_t n)
{
    /* only the reading thread adds; the parts' threads read it */
    __atomic_add_fetch(&c->part_target, n / c->n_parts + 1, __ATOMIC_RELAXED);
}

size_t ps_cleaner_dedupe_part(const ps_cleaner *c, const ps_clean_item *it)
{
    if (!c->n_parts || c->opts.keep_duplicates || it->res.outcome != PS_OUTCOME_KEPT)
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
    int d = ps_dedupe_insert_item(pt->d, &pt->prefix, it, &first, &conflict);
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
