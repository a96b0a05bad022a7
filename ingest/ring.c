/*
 * The ordered ring the threaded clean and build share (ingest/ring.h).
 * Counters only grow (a slot is counter % n); everything is under r->mu.
 */
#include "ingest/ring.h"

#include <stdlib.h>
#include <string.h>

enum { FREE, QUEUED, WORKING, WORKED };

int ps_ring_init(ps_ring *r, size_t slots, size_t parts)
{
    memset(r, 0, sizeof *r);
    r->n = slots;
    r->state = calloc(slots, sizeof *r->state);
    r->observed = calloc(slots, sizeof *r->observed);
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->work, NULL);
    pthread_cond_init(&r->done, NULL);
    pthread_cond_init(&r->follow, NULL);
    if (ps_part_turns_init(&r->turns, parts) || !r->state || !r->observed)
        return PS_ENOMEM;
    return 0;
}

void ps_ring_destroy(ps_ring *r)
{
    free(r->state);
    free(r->observed);
    ps_part_turns_free(&r->turns);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->work);
    pthread_cond_destroy(&r->done);
    pthread_cond_destroy(&r->follow);
}

pthread_mutex_t *ps_ring_mutex(ps_ring *r) { return &r->mu; }
void ps_ring_lock(ps_ring *r) { pthread_mutex_lock(&r->mu); }
void ps_ring_unlock(ps_ring *r) { pthread_mutex_unlock(&r->mu); }

void ps_ring_set_followers(ps_ring *r, size_t n)
{
    pthread_mutex_lock(&r->mu);
    r->followers = n < PS_RING_FOLLOWERS_MAX ? n : PS_RING_FOLLOWERS_MAX;
    pthread_cond_broadcast(&r->follow); /* 0: those started leave */
    pthread_mutex_unlock(&r->mu);
}

void ps_ring_set_observe(ps_ring *r, bool on)
{
    pthread_mutex_lock(&r->mu);
    r->observe = on;
    pthread_mutex_unlock(&r->mu);
}

/* Slots before this one are committed, followed and observed: free. */
static size_t freed(const ps_ring *r)
{
    size_t f = r->head;
    for (size_t k = 0; k < r->followers; k++)
        if (r->fdone[k] < f)
            f = r->fdone[k];
    if (r->observe && r->obs_done < f)
        f = r->obs_done;
    return f;
}

static bool failed(const ps_ring *r)
{
    for (size_t k = 0; k < r->followers; k++)
        if (r->ffailed[k])
            return true;
    return r->obs_failed;
}

/* Whether the head slot can be committed. */
static bool head_ready(const ps_ring *r)
{
    return r->head != r->tail && r->state[r->head % r->n] == WORKED &&
           ps_part_turns_past(&r->turns, r->head);
}

/* Wakes the calling thread, when it waits, if it can go on: the head can
 * be committed, a slot was freed (its wait ends when the ring is no longer
 * full, or empty at the end) or something failed. Waking it for every
 * worker's step was a context switch for nothing four times in five. */
static void wake_main(ps_ring *r)
{
    if (r->main_waits && (head_ready(r) || freed(r) != r->main_freed || failed(r)))
        pthread_cond_signal(&r->done);
}

int ps_ring_next(ps_ring *r, bool end, size_t *slot)
{
    pthread_mutex_lock(&r->mu);
    int step;
    size_t f = freed(r);
    if (head_ready(r)) {
        *slot = r->head % r->n;
        step = PS_RING_COMMIT;
    } else if (failed(r)) {
        step = PS_RING_FAILED;
    } else if ((end || r->tail - f == r->n) && f != r->tail) {
        r->main_waits = true;
        r->main_freed = f;
        pthread_cond_wait(&r->done, &r->mu);
        r->main_waits = false;
        step = PS_RING_WAITED;
    } else if (end) {
        step = PS_RING_DRAINED;
    } else {
        *slot = r->tail % r->n;
        step = PS_RING_FILL;
    }
    pthread_mutex_unlock(&r->mu);
    return step;
}

void ps_ring_filled(ps_ring *r, bool worked)
{
    pthread_mutex_lock(&r->mu);
    r->state[r->tail % r->n] = worked ? WORKED : QUEUED;
    for (size_t k = 0; worked && k < r->turns.n; k++) { /* looked up already */
        ps_part_turns_take(&r->turns, k);
        ps_part_turns_end(&r->turns, k, r->head);
    }
    r->tail++;
    pthread_cond_signal(&r->work);
    pthread_mutex_unlock(&r->mu);
}

void ps_ring_committed(ps_ring *r)
{
    pthread_mutex_lock(&r->mu);
    r->state[r->head % r->n] = FREE;
    r->observed[r->head % r->n] = false;
    r->head++;
    if (r->followers)
        pthread_cond_broadcast(&r->follow);
    if (r->observe)
        pthread_cond_signal(&r->work); /* a slot to observe */
    pthread_mutex_unlock(&r->mu);
}

void ps_ring_stop(ps_ring *r)
{
    pthread_mutex_lock(&r->mu);
    r->stop = true;
    r->next_work = r->tail; /* queued slots are not worked */
    pthread_cond_broadcast(&r->work);
    pthread_cond_broadcast(&r->follow);
    pthread_mutex_unlock(&r->mu);
}

static bool slot_worked(const void *ctx, size_t s)
{
    const ps_ring *r = ctx;
    return r->state[s % r->n] == WORKED;
}

/* A dedupe part whose turn a worker may take, or SIZE_MAX. */
static size_t resolvable(const ps_ring *r)
{
    return ps_part_turns_ready(&r->turns, r->tail, slot_worked, r);
}

static bool to_observe(const ps_ring *r) { return r->observe && r->obs_next != r->head; }

/* Jobs by priority: a part's turn first (the commit waits for it), then a
 * committed slot to observe (it frees the slot), then a slot to work. */
ps_ring_kind ps_ring_take(ps_ring *r, ps_ring_job *j)
{
    memset(j, 0, sizeof *j);
    pthread_mutex_lock(&r->mu);
    size_t k = SIZE_MAX;
    while (!r->stop && r->next_work == r->tail && !to_observe(r) &&
           (k = resolvable(r)) == SIZE_MAX)
        pthread_cond_wait(&r->work, &r->mu);
    if (!r->stop && (k != SIZE_MAX || (k = resolvable(r)) != SIZE_MAX)) {
        j->kind = PS_RING_RESOLVE;
        j->part = k;
        j->slot = ps_part_turns_take(&r->turns, k) % r->n;
    } else if (!r->stop && to_observe(r)) {
        j->kind = PS_RING_OBSERVE;
        j->slot = r->obs_next++ % r->n;
        j->failed_before = r->obs_failed;
    } else if (r->next_work != r->tail) {
        j->kind = PS_RING_WORK;
        j->slot = r->next_work++ % r->n;
        r->state[j->slot] = WORKING;
    } /* else stopped */
    pthread_mutex_unlock(&r->mu);
    return j->kind;
}

void ps_ring_done_locked(ps_ring *r, const ps_ring_job *j, bool fail)
{
    switch (j->kind) {
    case PS_RING_WORK:
        r->state[j->slot] = WORKED;
        if (r->turns.n) /* its parts to look up, for idle workers too; the
                         * last part through it wakes the commit */
            pthread_cond_broadcast(&r->work);
        else
            wake_main(r);
        break;
    case PS_RING_RESOLVE:
        if (ps_part_turns_end(&r->turns, j->part, r->head))
            wake_main(r);
        break;
    case PS_RING_OBSERVE:
        r->observed[j->slot] = true;
        r->obs_failed = r->obs_failed || fail;
        while (r->obs_done < r->obs_next && r->observed[r->obs_done % r->n])
            r->obs_done++;
        wake_main(r);
        break;
    case PS_RING_STOP:
        break;
    }
}

void ps_ring_done(ps_ring *r, const ps_ring_job *j, bool fail)
{
    pthread_mutex_lock(&r->mu);
    ps_ring_done_locked(r, j, fail);
    pthread_mutex_unlock(&r->mu);
}

bool ps_ring_follow(ps_ring *r, size_t k, size_t *slot)
{
    pthread_mutex_lock(&r->mu);
    while (!r->stop && k < r->followers && r->fdone[k] == r->head)
        pthread_cond_wait(&r->follow, &r->mu);
    /* stopped: the committed slots are followed still */
    bool go = k < r->followers && !r->ffailed[k] && r->fdone[k] != r->head;
    if (go)
        *slot = r->fdone[k] % r->n;
    pthread_mutex_unlock(&r->mu);
    return go;
}

void ps_ring_followed(ps_ring *r, size_t k, bool fail)
{
    pthread_mutex_lock(&r->mu);
    r->ffailed[k] = r->ffailed[k] || fail;
    r->fdone[k]++;
    wake_main(r);
    pthread_mutex_unlock(&r->mu);
}
