/*
 * The preprocessor's pool of slots (preprocess_priv.h), which makes one
 * ps_preprocessor safe to share between threads. Everything a call writes
 * is in a slot; what the preprocessor holds besides (cleaner, tokenizer,
 * template, schemas) is only read, as a build's workers read it.
 *
 * What a call returns points into its slot and must stay valid until the
 * same thread's next call, so a thread keeps its slot between calls in
 * thread-specific data: its later calls take no lock at all. It gives the
 * slot back when it ends (the key's destructor) or on
 * ps_preprocessor_release, and the next thread that needs one takes it
 * from the free list under a short lock: a server that starts a thread a
 * request reuses a few slots rather than allocating a worker, a scratch
 * and their grown buffers a request. The pool holds at most as many slots
 * as threads have held one at once.
 */
#include "pipeline/preprocess_priv.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>

static void slot_free(ps_pp_slot *s)
{
    ps_clean_worker_free(s->w);
    ps_tok_scratch_free(s->ts);
    ps_encode_ctx_free(&s->x);
    ps_buf_free(&s->record);
    ps_buf_free(&s->mask);
    free(s);
}

static void slot_give_back(ps_pp_slot *s)
{
    ps_preprocessor *p = s->p;
    pthread_mutex_lock(&p->pool_mu);
    s->next_free = p->free_slots;
    p->free_slots = s;
    pthread_mutex_unlock(&p->pool_mu);
}

/* The key's destructor: a thread that held a slot has ended. */
static void slot_thread_end(void *v) { slot_give_back(v); }

int ps_pp_pool_init(ps_preprocessor *p, ps_error *err)
{
    int e = pthread_key_create(&p->slot_key, slot_thread_end);
    if (e == EAGAIN)
        return ps_error_set(err, PS_ELIMIT, "%s: the process has no thread-specific data key "
                            "left (PTHREAD_KEYS_MAX, %d, are in use; each open preprocessor "
                            "takes one): free a preprocessor first", p->dir, PTHREAD_KEYS_MAX);
    if (e)
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    if (pthread_mutex_init(&p->pool_mu, NULL)) {
        pthread_key_delete(p->slot_key);
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    }
    p->pool_ready = true;
    return 0;
}

void ps_pp_pool_free(ps_preprocessor *p)
{
    if (!p->pool_ready)
        return;
    /* No destructor runs for a deleted key: the slots threads still hold
     * are freed here with the others. */
    pthread_key_delete(p->slot_key);
    for (ps_pp_slot *s = p->all_slots, *next; s; s = next) {
        next = s->next_all;
        slot_free(s);
    }
    p->all_slots = p->free_slots = NULL;
    pthread_mutex_destroy(&p->pool_mu);
    p->pool_ready = false;
}

static ps_pp_slot *slot_new(ps_preprocessor *p)
{
    ps_pp_slot *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->p = p;
    s->ts = ps_tok_scratch_new();
    if (!s->ts || ps_clean_worker_create(p->cleaner, &s->w)) {
        slot_free(s);
        return NULL;
    }
    pthread_mutex_lock(&p->pool_mu);
    s->next_all = p->all_slots;
    p->all_slots = s;
    p->n_slots++;
    pthread_mutex_unlock(&p->pool_mu);
    return s;
}

ps_pp_slot *ps_pp_slot_take(ps_preprocessor *p, ps_error *err)
{
    ps_pp_slot *s = pthread_getspecific(p->slot_key);
    if (s)
        return s;
    pthread_mutex_lock(&p->pool_mu);
    if ((s = p->free_slots))
        p->free_slots = s->next_free;
    pthread_mutex_unlock(&p->pool_mu);
    if (!s && !(s = slot_new(p))) {
        ps_error_set(err, PS_ENOMEM, "out of memory");
        return NULL;
    }
    if (pthread_setspecific(p->slot_key, s)) {
        slot_give_back(s);
        ps_error_set(err, PS_ENOMEM, "out of memory");
        return NULL;
    }
    return s;
}

void ps_preprocessor_release(ps_preprocessor *p)
{
    ps_pp_slot *s = p ? pthread_getspecific(p->slot_key) : NULL;
    if (!s)
        return;
    pthread_setspecific(p->slot_key, NULL);
    slot_give_back(s);
}

size_t ps_pp_pool_slots(ps_preprocessor *p)
{
    pthread_mutex_lock(&p->pool_mu);
    size_t n = p->n_slots;
    pthread_mutex_unlock(&p->pool_mu);
    return n;
}
