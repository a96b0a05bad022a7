/*
 * Phase 1's line ranges: the rest of a plain JSONL input read by the
 * workers, not by the calling thread (ingest/line_range.c says how).
 *
 * The calling thread only hands out nominal ranges, a chunk each. A
 * worker reads its range and guesses its first line; then, in input
 * order, the chain tells it where its first line really starts and that
 * line's number, and it tells the next chunk where its own lines ended.
 * Passing the chain on is a few assignments under the phase's mutex; a
 * chunk reads again only when its guess was wrong (after a chunk that
 * stopped early: PS_RANGE_RECORDS lines or PS_RANGE_BYTES bytes). When
 * the ranges are handed out, the calling thread waits for the chain to
 * pass them all and hands out chunks for what is left, if anything.
 */
#include "pipeline/build_chunk.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Waits for the chain to reach chunk `seq` (under *c->mu). */
static void chain_wait(ps_range_chain *c, uint64_t seq)
{
    while (c->seq != seq)
        pthread_cond_wait(&c->cv, c->mu);
}

/* Passes the chain on from chunk `seq` (under *c->mu). */
static void chain_pass(ps_range_chain *c, uint64_t next, uint64_t line, bool failed)
{
    c->next = next;
    c->line = line;
    c->failed |= failed;
    c->seq++;
    pthread_cond_broadcast(&c->cv);
}

int ps_build_range_take(ps_range_chain *c, chunk *ch, size_t cap)
{
    ps_line_range *lr = &ch->range;
    uint64_t guess = UINT64_MAX;
    int rc = ch->range_begin < lr->end ? ps_line_range_read(lr, ch->range_begin, &guess, &ch->err)
                                       : 0; /* what is left: only the chain knows where */
    bool took = false;
    if (!rc && guess != UINT64_MAX) {
        rc = ps_line_range_take(lr, guess, PS_RANGE_RECORDS, PS_RANGE_BYTES, &ch->err);
        took = rc == 0;
    }
    pthread_mutex_lock(c->mu);
    chain_wait(c, ch->range_seq);
    uint64_t from = ch->range_first ? ch->range_begin : c->next;
    uint64_t line = ch->range_first ? ch->first_line : c->line;
    pthread_mutex_unlock(c->mu);
    if (!rc && !(took && lr->from == from)) /* the guess was wrong: the chain holds on */
        rc = ps_line_range_take(lr, from, PS_RANGE_RECORDS, PS_RANGE_BYTES, &ch->err);
    pthread_mutex_lock(c->mu);
    chain_pass(c, rc ? from : lr->next, rc ? line : line + lr->lines, rc != 0);
    pthread_mutex_unlock(c->mu);
    if (rc)
        return rc;
    ch->first_line = line;
    ch->n = ps_lines_split(lr->data.data + (lr->from - lr->at), (size_t)(lr->stored - lr->from),
                           line, lr->max, ch->recs, cap, &ch->blank);
    return 0;
}

void ps_build_range_skip(ps_range_chain *c, const chunk *ch)
{
    pthread_mutex_lock(c->mu);
    chain_wait(c, ch->range_seq);
    chain_pass(c, ch->range_first ? ch->range_begin : c->next,
               ch->range_first ? ch->first_line : c->line, true);
    pthread_mutex_unlock(c->mu);
}

int ps_build_range_start(ps_range_reader *rr, ps_cleaner *cleaner, ps_input_ctx *in,
                         ps_error *err)
{
    ps_input_ranges r;
    int rc = ps_input_ranges_begin(cleaner, in, PS_BUILD_RANGES_MIN, &r, err);
    if (rc <= 0)
        return rc;
    rr->on = rr->first = true;
    rr->fd = r.fd;
    rr->pos = r.from;
    rr->size = r.size;
    rr->line = r.line;
    rr->max = r.max;
    return 1;
}

void ps_build_range_stop(ps_range_reader *rr)
{
    if (rr->on)
        close(rr->fd);
    rr->on = false;
}

/* Whether the chain has passed every chunk handed out and left nothing:
 * it waits for the chain (under *c->mu). A failed chunk ends the input
 * too: the commit reports it. */
static bool ranges_done(ps_range_reader *rr, ps_range_chain *c)
{
    pthread_mutex_lock(c->mu);
    chain_wait(c, rr->seq);
    bool done = c->failed || c->next >= rr->size;
    pthread_mutex_unlock(c->mu);
    return done;
}

int ps_build_range_fill(ps_range_reader *rr, ps_range_chain *c, chunk *ch, const char *path)
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
    ps_line_range *lr = &ch->range;
    lr->fd = rr->fd;
    lr->path = path;
    lr->size = rr->size;
    lr->max = rr->max;
    lr->end = end;
    ch->ranged = ch->lines = true;
    ch->range_seq = rr->seq++;
    ch->range_first = rr->first;
    ch->range_begin = begin;
    ch->first_line = rr->line;
    rr->first = false;
    return 1;
}
