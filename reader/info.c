/*
 * What the reader is doing: its plan's sizes (ps_reader_get_info), its
 * counters (ps_reader_get_stats), labels and bucket bounds.
 */
#include "reader/reader_internal.h"

#include <string.h>

int ps_reader_get_info(const ps_reader *r, ps_reader_info *o)
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
    return PS_OK;
}

int ps_reader_get_stats(const ps_reader *r, ps_reader_stats *o)
{
    ps_reader *w = (ps_reader *)r; /* the lock only */
    pthread_mutex_lock(&w->mu);
    *o = r->st;
    o->slots = (uint32_t)r->n_slots;
    o->ready = 0;
    for (int i = 0; i < r->n_slots; i++)
        o->ready += r->slots[i].state == SLOT_READY;
    pthread_mutex_unlock(&w->mu);
    return PS_OK;
}

const char *ps_reader_get_label(const ps_reader *r, uint32_t id)
{
    return id < r->m->n_labels ? r->m->labels[id] : NULL;
}

uint32_t ps_reader_get_bucket_bound(const ps_reader *r, uint32_t b)
{
    return b < r->m->n_buckets ? r->m->bounds[b] : 0;
}
