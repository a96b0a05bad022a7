/*
 * The reader's slots: the ring of batch buffers (pinned or mlocked host
 * memory, and device twins), each sized for the largest batch the plan
 * can make in any epoch, for any layout.
 */
#include "reader/reader_internal.h"

#include <stdlib.h>

int rd_slots_alloc(ps_reader *r, ps_error *err)
{
    r->slots = calloc((size_t)r->n_slots, sizeof *r->slots);
    if (!r->slots)
        return ps_error_set(err, PS_ENOMEM, "reader: out of memory for slots");
    size_t maxB = r->plan.max_batch ? r->plan.max_batch : 1;
    size_t tok = (size_t)r->plan.max_batch_tokens;
    /* Records of a batch: its rows, or (packed) its segments. */
    size_t nrec = r->plan.max_pool > maxB ? r->plan.max_pool : maxB;
    size_t elems, bytes; /* the largest layout_of(): 7 bytes of alignment at most */
    if (!ps_size_mul(tok, 3, &elems) || !ps_size_add(elems, maxB, &elems) ||
        !ps_size_mul(elems, r->elem, &bytes) ||
        !ps_size_add(bytes, maxB * sizeof(int64_t) + 7, &bytes) || tok > ((size_t)1 << 33) ||
        nrec > ((size_t)1 << 30) || bytes > ((size_t)1 << 36))
        return ps_error_set(err, PS_EUSAGE, "reader: a batch of %zu x %llu tokens is too large",
                            maxB, (unsigned long long)r->plan.max_batch_tokens);
    size_t gen = rd_slot_bytes(r, maxB, tok, nrec);
    if (gen > bytes)
        bytes = gen;
    int want_pin = r->device >= 0 || ps_dev_count() > 0;
    r->pinned = 1;
    r->mlocked = 1;
    for (int i = 0; i < r->n_slots; i++) {
        rd_slot *sl = &r->slots[i];
        sl->host_bytes = bytes;
        sl->host = ps_dev_host_alloc(bytes, want_pin, r->opt.mlock, &sl->how);
        sl->ids = malloc(nrec * sizeof *sl->ids);
        sl->id_off = malloc(nrec * sizeof *sl->id_off);
        sl->srcs = malloc(nrec * sizeof *sl->srcs);
        ps_buf_init(&sl->idbuf);
        if (!sl->host || !sl->ids || !sl->id_off || !sl->srcs)
            return ps_error_set(err, PS_ENOMEM, "reader: out of memory for %d slots of %zu bytes",
                                r->n_slots, bytes);
        r->pinned &= sl->how == 2;
        r->mlocked &= sl->how == 1;
        if (r->device >= 0) {
            int rc = ps_dev_malloc(&sl->dev, bytes, err);
            if (!rc)
                rc = ps_dev_event_create(&sl->event, err);
            if (rc)
                return rc;
        }
    }
    return PS_OK;
}

void rd_slots_free(ps_reader *r)
{
    if (!r->slots)
        return;
    for (int i = 0; i < r->n_slots; i++) {
        rd_slot *sl = &r->slots[i];
        if (sl->event_pending)
            ps_dev_event_wait(sl->event, NULL);
        ps_dev_host_free(sl->host, sl->host_bytes, sl->how);
        ps_dev_free(sl->dev);
        ps_dev_event_destroy(sl->event);
        free(sl->ids);
        free(sl->id_off);
        free(sl->srcs);
        ps_buf_free(&sl->idbuf);
    }
    free(r->slots);
    r->slots = NULL;
}

