/*
 * The line ranges' chain: how threaded reading keeps line numbers and
 * chunk boundaries exact when the workers read their own lines
 * (line_range.c says how a range is read).
 *
 * The calling thread only hands out nominal ranges, a chunk each, with a
 * ticket: the chunk's place in the chain. A worker reads its range and
 * guesses its first line; then, in input order, the chain tells it where
 * its first line really starts and that line's number, and it tells the
 * next chunk where its own lines ended. Passing the chain on is a few
 * assignments under the caller's mutex; a chunk reads again only when its
 * guess was wrong (after a chunk that stopped early: PS_RANGE_RECORDS
 * lines or PS_RANGE_BYTES bytes). Once the ranges are handed out, the
 * calling thread waits for the chain to pass them all and hands out
 * chunks for what is left, if anything.
 */
#include "ingest/ingest.h"

#include <unistd.h>

int ps_range_chain_init(ps_range_chain *c, pthread_mutex_t *mu)
{
    c->mu = mu;
    c->seq = c->next = c->line = 0;
    c->failed = false;
    return pthread_cond_init(&c->cv, NULL) ? PS_ENOMEM : 0;
}

void ps_range_chain_destroy(ps_range_chain *c)
{
    pthread_cond_destroy(&c->cv);
}

/* Waits for the chain to reach ticket `seq` (under *c->mu). */
static void chain_wait(ps_range_chain *c, uint64_t seq)
{
    while (c->seq != seq)
        pthread_cond_wait(&c->cv, c->mu);
}

/* Passes the chain on (under *c->mu). */
static void chain_pass(ps_range_chain *c, uint64_t next, uint64_t line, bool failed)
{
    c->next = next;
    c->line = line;
    c->failed |= failed;
    c->seq++;
    pthread_cond_broadcast(&c->cv);
}

int ps_range_chain_take(ps_range_chain *c, ps_line_range *lr, const ps_range_ticket *t,
                        uint64_t *first_line, ps_error *err)
{
    uint64_t guess = UINT64_MAX;
    int rc = t->begin < lr->end ? ps_line_range_read(lr, t->begin, &guess, err)
                                : 0; /* what is left: only the chain knows where */
    bool took = false;
    if (!rc && guess != UINT64_MAX) {
        rc = ps_line_range_take(lr, guess, PS_RANGE_RECORDS, PS_RANGE_BYTES, err);
        took = rc == 0;
    }
    pthread_mutex_lock(c->mu);
    chain_wait(c, t->seq);
    uint64_t from = t->first ? t->begin : c->next, line = t->first ? t->line : c->line;
    pthread_mutex_unlock(c->mu);
    if (!rc && !(took && lr->from == from)) /* the guess was wrong: the chain holds on */
        rc = ps_line_range_take(lr, from, PS_RANGE_RECORDS, PS_RANGE_BYTES, err);
    pthread_mutex_lock(c->mu);
    chain_pass(c, rc ? from : lr->next, rc ? line : line + lr->lines, rc != 0);
    pthread_mutex_unlock(c->mu);
    *first_line = line;
    return rc;
}

void ps_range_chain_skip(ps_range_chain *c, const ps_range_ticket *t)
{
    pthread_mutex_lock(c->mu);
    chain_wait(c, t->seq);
    chain_pass(c, t->first ? t->begin : c->next, t->first ? t->line : c->line, true);
    pthread_mutex_unlock(c->mu);
}

void ps_range_reader_stop(ps_range_reader *rr)
{
    if (rr->on)
        close(rr->fd);
    rr->on = false;
}

/* Whether the chain has passed every chunk handed out and left nothing;
 * it waits for the chain (under *c->mu). A failed chunk ends the input
 * too: its error is the commit's to report. */
static bool ranges_done(ps_range_reader *rr, ps_range_chain *c)
{
    pthread_mutex_lock(c->mu);
    chain_wait(c, rr->seq);
    bool done = c->failed || c->next >= rr->size;
    pthread_mutex_unlock(c->mu);
    return done;
}

int ps_range_reader_next(ps_range_reader *rr, ps_range_chain *c, const char *path,
                         ps_line_range *lr, ps_range_ticket *t)
{
    uint64_t begin, end;
    if (rr->pos < rr->size) {
        begin = rr->pos;
        end = rr->size - begin > PS_RANGE_BYTES ? begin + PS_RANGE_BYTES : rr->size;
        rr->pos = end;
    } else if (ranges_done(rr, c)) {
        return 0;
    } else {
        begin = end = rr->size; /* what is left, from where the chain is */
    }
    lr->fd = rr->fd;
    lr->path = path;
    lr->size = rr->size;
    lr->max = rr->max;
    lr->end = end;
    *t = (ps_range_ticket){.seq = rr->seq++, .begin = begin, .line = rr->line, .first = rr->first};
    rr->first = false;
    return 1;
}
