/*
 * ps_ring: the bounded, ordered ring of chunks that the threaded clean
 * (ingest/clean_threads.c) and the build's phase 1 (pipeline/build.c)
 * share. The ring knows slot numbers and whose turn it is; the chunks
 * themselves are the caller's array, indexed by the slots it hands out.
 *
 * Roles, each a loop around one blocking call (none busy-waits: every
 * wait is on a condition variable, woken only when the waiter can go on):
 *   - the calling thread (one): ps_ring_next says what to do next: fill
 *     the free slot at the tail (then ps_ring_filled), commit the slot at
 *     the head (then ps_ring_committed), or stop (drained, or a stage
 *     behind the commit failed). Slots are committed in the order they
 *     were filled, whatever order workers finish them in.
 *   - workers (any number): ps_ring_take hands out a job: work a filled
 *     slot, take a dedupe part's turn on a worked one (parts: each part's
 *     slots in order, one thread a part at a time; a slot is committed
 *     once every part is past it), or observe a committed one; then
 *     ps_ring_done. PS_RING_STOP: leave.
 *   - followers (up to PS_RING_FOLLOWERS_MAX threads): ps_ring_follow
 *     hands follower k each committed slot in order; ps_ring_followed.
 * A slot is free again once it is committed, through every follower, and
 * observed (when observing is on). Errors are the caller's: a job that
 * failed marks its chunk, which the commit reports; a follower or an
 * observation that failed makes ps_ring_next answer PS_RING_FAILED.
 * ps_ring_stop (on error or cancellation) ends the workers after the jobs
 * they hold (queued slots are not worked) and the followers once they
 * have followed every committed slot.
 */
#ifndef PS_INGEST_RING_H
#define PS_INGEST_RING_H

#include "ingest/ingest.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PS_RING_FOLLOWERS_MAX 4

/* The fields are the ring's; callers use the functions below. */
typedef struct ps_ring {
    pthread_mutex_t mu;
    pthread_cond_t work;       /* workers wait on it */
    pthread_cond_t done;       /* the calling thread alone waits on it */
    pthread_cond_t follow;     /* followers wait on it */
    size_t n;                  /* slots */
    uint8_t *state;            /* a slot's: free, queued, working, worked */
    bool *observed;            /* committed slots: a worker observed it */
    size_t head, tail;         /* filled slots are [head, tail) mod n */
    size_t next_work;          /* the next slot a worker takes */
    bool stop;
    bool main_waits;           /* the calling thread waits on `done` */
    size_t main_freed;         /* what ps_ring_freed said when it began */
    ps_part_turns turns;       /* the dedupe parts' turns */
    size_t followers;
    size_t fdone[PS_RING_FOLLOWERS_MAX]; /* follower k is through the slots before */
    bool ffailed[PS_RING_FOLLOWERS_MAX];
    bool observe;
    size_t obs_next, obs_done; /* committed [obs_done, obs_next) being observed */
    bool obs_failed;
} ps_ring;

/* What the calling thread does next (ps_ring_next). */
enum {
    PS_RING_FILL,    /* fill the slot at the tail, then ps_ring_filled */
    PS_RING_COMMIT,  /* commit the slot at the head, then ps_ring_committed */
    PS_RING_WAITED,  /* it waited for a worker or follower: ask again */
    PS_RING_FAILED,  /* a follower or an observation failed */
    PS_RING_DRAINED  /* at the input's end, every slot is free */
};

/* A worker's job (ps_ring_take). */
typedef enum { PS_RING_STOP, PS_RING_WORK, PS_RING_RESOLVE, PS_RING_OBSERVE } ps_ring_kind;
typedef struct ps_ring_job {
    ps_ring_kind kind;
    size_t slot;               /* the chunk: index into the caller's n */
    size_t part;               /* PS_RING_RESOLVE: the dedupe part */
    bool failed_before;        /* PS_RING_OBSERVE: an observation failed */
} ps_ring_job;

/* A ring of `slots` chunks whose `parts` dedupe parts (0: none) workers
 * look up. 0 or PS_ENOMEM (ps_ring_destroy it either way). */
int ps_ring_init(ps_ring *r, size_t slots, size_t parts);
void ps_ring_destroy(ps_ring *r);
/* Before the first slot is filled: n followers (0 ends those started),
 * and whether workers observe each committed slot. */
void ps_ring_set_followers(ps_ring *r, size_t n);
void ps_ring_set_observe(ps_ring *r, bool on);
/* The ring's lock, for state of the caller's that workers share (e.g.
 * a chunk's error, which parts may set side by side). */
pthread_mutex_t *ps_ring_mutex(ps_ring *r);
void ps_ring_lock(ps_ring *r);
void ps_ring_unlock(ps_ring *r);

/* The calling thread. `end`: nothing more will be filled. */
int ps_ring_next(ps_ring *r, bool end, size_t *slot);
/* The tail slot is filled; `worked`: the calling thread worked it and
 * looked its parts up itself (no workers). */
void ps_ring_filled(ps_ring *r, bool worked);
void ps_ring_committed(ps_ring *r);
/* Workers and followers stop (see above); the caller joins them. */
void ps_ring_stop(ps_ring *r);

/* Workers. ps_ring_take blocks until there is a job or the ring stops;
 * it returns the job's kind. `failed` (PS_RING_OBSERVE): the observation
 * failed. ps_ring_done_locked: with the ring's lock held. */
ps_ring_kind ps_ring_take(ps_ring *r, ps_ring_job *j);
void ps_ring_done(ps_ring *r, const ps_ring_job *j, bool failed);
void ps_ring_done_locked(ps_ring *r, const ps_ring_job *j, bool failed);

/* Follower k: false when it is to stop; else *slot is the next committed
 * slot, which it hands back with ps_ring_followed. After a failure it
 * gets no more. */
bool ps_ring_follow(ps_ring *r, size_t k, size_t *slot);
void ps_ring_followed(ps_ring *r, size_t k, bool failed);

#endif
