/*
 * What the reader is doing: its plan's sizes (ps_reader_get_info), its
 * counters (ps_reader_get_stats), labels and bucket bounds.
 */
#include "reader/reader_internal.h"
#include "common/options.h"

#include <string.h>

/* The sizes both structs had in 0.2.0, their first published versions. */
#define INFO_SIZE_0_2 PS_SIZE_THROUGH(ps_reader_info, rows_per_epoch)
#define STATS_SIZE_0_2 PS_SIZE_THROUGH(ps_reader_stats, slots)

static void info_fill(const ps_reader *r, ps_reader_info *o)
{
    memset(o, 0, sizeof *o);
    o->epoch = r->popt.epoch;
    o->rank = (int)r->popt.rank;
    o->world_size = (int)r->popt.world_size;
    o->batches_per_epoch = r->plan.n_batches;
    o->records_per_epoch = r->plan.records_rank;
    o->records_total = r->plan.records_total;
    o->records_dropped = r->plan.records_dropped;
    o->n_buckets = (uint32_t)r->m->n_buckets;
    o->n_labels = (uint32_t)r->m->n_labels;
    o->slots = (uint32_t)r->n_slots;
    o->threads = r->n_threads;
    o->device = r->device;
    o->pinned = r->pinned;
    o->mlocked = r->mlocked;
    o->layout = r->layout;
    o->pack = r->opt.pack;
    o->records_skipped = r->plan.records_skipped;
    o->rows_per_epoch = r->opt.pack ? r->plan.rows_rank : r->plan.records_rank;
    o->n_sources = (uint32_t)r->n_sources;
}

int ps_reader_get_info_size(const ps_reader *r, ps_reader_info *out, size_t size)
{
    ps_reader_info o;
    info_fill(r, &o);
    return ps_struct_out(out, size, &o, sizeof o, INFO_SIZE_0_2, "ps_reader_info", NULL);
}

int ps_reader_get_stats_size(const ps_reader *r, ps_reader_stats *out, size_t size)
{
    ps_reader_stats o;
    ps_reader *w = (ps_reader *)r; /* the lock only */
    pthread_mutex_lock(&w->mu);
    o = r->st;
    o.slots = (uint32_t)r->n_slots;
    o.ready = 0;
    for (int i = 0; i < r->n_slots; i++)
        o.ready += r->slots[i].state == SLOT_READY;
    pthread_mutex_unlock(&w->mu);
    return ps_struct_out(out, size, &o, sizeof o, STATS_SIZE_0_2, "ps_reader_stats", NULL);
}

/* The 0.2.0 entry points, for programs compiled when the getters were
 * functions (pairshard/common.h, "Structs the library fills"): their
 * structs have the 0.2.0 sizes, whatever this header's are. */
#undef ps_reader_get_info
#undef ps_reader_get_stats
PS_API int ps_reader_get_info(const ps_reader *r, ps_reader_info *out);
PS_API int ps_reader_get_stats(const ps_reader *r, ps_reader_stats *out);

int ps_reader_get_info(const ps_reader *r, ps_reader_info *out)
{
    return ps_reader_get_info_size(r, out, INFO_SIZE_0_2);
}

int ps_reader_get_stats(const ps_reader *r, ps_reader_stats *out)
{
    return ps_reader_get_stats_size(r, out, STATS_SIZE_0_2);
}

const char *ps_reader_get_label(const ps_reader *r, uint32_t id)
{
    return id < r->m->n_labels ? r->m->labels[id] : NULL;
}

uint32_t ps_reader_get_bucket_bound(const ps_reader *r, uint32_t b)
{
    return b < r->m->n_buckets ? r->m->bounds[b] : 0;
}

const char *ps_reader_get_source(const ps_reader *r, uint32_t id)
{
    return id < r->n_sources ? r->source_names[id] : NULL;
}

uint64_t ps_reader_get_source_records(const ps_reader *r, uint32_t id)
{
    if (id >= r->n_sources)
        return 0;
    if (r->src_cache) /* counted from the shards' sources */
        return r->source_counts[id];
    uint64_t n = 0; /* one source: the whole set */
    for (size_t s = 0; s < r->m->n_shards; s++)
        n += r->m->shards[s].records;
    return n;
}
