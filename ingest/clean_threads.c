/*
 * ps_cleaner_run_threads: ps_cleaner_run with worker threads. The calling
 * thread reads chunks of raw records; workers clean whole chunks
 * (ps_clean_record, a ps_clean_worker each) and copy what the commit and
 * the sink need out of the worker's buffers into the chunk, then look the
 * kept pairs up in the dedupe's parts (dedupe_parts.c: one part a worker
 * at a time, each in input order); the calling thread commits chunks in
 * input order (ps_cleaner_commit: accounting) and calls the sink, so the
 * sink sees exactly what ps_cleaner_run would show it, in the same order.
 */
#include "ingest/ingest.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define CT_RECORDS 1024
#define CT_BYTES (4u << 20)
/* a chunk's records: a line range's may be more (PS_RANGE_RECORDS) */
#define CT_RING_RECORDS (PS_RANGE_RECORDS > CT_RECORDS ? PS_RANGE_RECORDS : CT_RECORDS)
#define PREFETCH_AHEAD 8 /* records: the dedupe table's misses overlap */

/* One cleaned record: the item, its strings as offsets into the chunk's
 * arena (the worker's buffers are reused for its next record). */
typedef struct ct_item {
    ps_clean_item it;
    ps_item_offsets offs;  /* its strings in the chunk's arena */
    size_t o_line, line_len; /* its JSON line in the chunk's `lines` */
} ct_item;

typedef struct ct_chunk {
    ps_input_ctx in;       /* a copy without src/rr: what workers may read */
    size_t n, n_ok;        /* records; those cleaned before a failure */
    ps_raw_record *recs;
    size_t *raw_off;
    ps_buf raw, out;       /* the raw records; the cleaned items' strings */
    ps_buf lines;          /* the items' JSON lines (ps_cleaner_run_lines) */
    ct_item *items;
    int rc;
    ps_error err;
    int state;             /* 0 free, 1 queued, 2 being cleaned, 3 done */
    ps_part_groups groups; /* its kept items by dedupe part (ct_run.turns) */
    /* Whole JSONL lines in raw (ps_input_take_lines) that the worker
     * splits into recs; n is 0 until then. */
    bool lines_in;
    uint64_t first_line, blank;
    /* A line range (range_chain.c): the worker reads its lines itself */
    bool ranged;
    ps_range_ticket ticket;
    ps_line_range range;
} ct_chunk;

typedef struct ct_run {
    ps_cleaner *c;
    ps_clean_sink sink;        /* one of the two */
    ps_clean_line_sink line_sink;
    void *user;
    size_t nrules;
    pthread_mutex_t mu;
    pthread_cond_t work, done;
    ct_chunk *ring;
    size_t ring_n, head, tail, next_work;
    bool stop;
    uint64_t committed;        /* records of the input committed */
    /* the dedupe's parts (none: the commit dedupes); a chunk is committed
     * once every part is past it */
    ps_part_turns turns;
    /* a plain JSONL input's rest, handed out as line ranges */
    ps_range_chain chain;
    ps_range_reader rng;
} ct_run;

/* Copies an item's strings into the chunk's arena (a worker). */
static int pack(ct_chunk *ch, ct_item *ci, size_t nrules)
{
    int rc = ps_clean_item_pack(&ci->it, nrules, &ch->out, &ci->offs);
    return rc ? ps_error_set(&ch->err, rc, "out of memory while cleaning") : 0;
}

/* Serialises an item's JSON line into the chunk (a worker). */
static int put_line(ct_chunk *ch, ct_item *ci)
{
    ci->o_line = ch->lines.len;
    if (ps_clean_result_json_append(&ci->it.res, &ch->lines) || ps_buf_putc(&ch->lines, '\n'))
        return ps_error_set(&ch->err, PS_ENOMEM, "out of memory while cleaning");
    ci->line_len = ch->lines.len - 1 - ci->o_line;
    return 0;
}

static void clean_chunk(ct_run *r, ct_chunk *ch, ps_clean_worker *w, ps_label_links *links)
{
    ps_buf_reset(&ch->out);
    ps_buf_reset(&ch->lines);
    ch->n_ok = 0;
    if (ch->ranged) { /* the worker reads them */
        ch->rc = ps_range_chain_take(&r->chain, &ch->range, &ch->ticket, &ch->first_line,
                                     &ch->err);
        if (!ch->rc)
            ch->n = ps_line_range_split(&ch->range, ch->first_line, ch->recs, CT_RING_RECORDS,
                                        &ch->blank);
    } else if (ch->lines_in) /* whole lines: none over the max */
        ch->n = ps_lines_split(ch->raw.data, ch->raw.len, ch->first_line, SIZE_MAX, ch->recs,
                               CT_RECORDS, &ch->blank);
    for (size_t i = 0; i < ch->n && !ch->rc; i++) {
        ct_item *ci = &ch->items[i];
        int rc = ps_clean_record(w, &ch->in, &ch->recs[i], &ci->it, &ch->err);
        if (!rc && r->line_sink)
            rc = put_line(ch, ci);
        if (!rc)
            rc = pack(ch, ci, r->nrules);
        ch->rc = rc;
        ch->n_ok += !rc;
    }
    for (size_t i = 0; i < ch->n_ok; i++) /* the arena is done growing */
        ps_clean_item_unpack(&ch->items[i].it, &ch->out, &ch->items[i].offs);
    ps_label_links_set(links, ch->items, sizeof *ch->items, ch->n_ok);
    if (r->turns.n) /* the records cleaned before a failure are committed */
        ps_part_groups_fill(r->c, &ch->groups, ch->items, sizeof *ch->items, ch->n_ok, 0, 0);
}

static bool chunk_cleaned(const void *ctx, size_t s)
{
    const ct_run *r = ctx;
    return r->ring[s % r->ring_n].state == 3;
}

/* A dedupe part whose turn a worker may take, or SIZE_MAX (under r->mu). */
static size_t resolvable(const ct_run *r)
{
    return ps_part_turns_ready(&r->turns, r->tail, chunk_cleaned, r);
}

/* A worker looks part k's next chunk up (called and returning under
 * r->mu). A failure keeps the records before the one that failed: the
 * commit shows them, then the error. The calling thread is woken only
 * when the head, the chunk it waits for, is through every part. */
static void resolve_next(ct_run *r, size_t k)
{
    ct_chunk *ch = &r->ring[ps_part_turns_take(&r->turns, k) % r->ring_n];
    pthread_mutex_unlock(&r->mu);
    ps_error e;
    ps_error_clear(&e);
    size_t failed = 0;
    int rc = ps_part_groups_resolve(r->c, &ch->groups, ch->items, sizeof *ch->items, k, &failed,
                                    &e);
    pthread_mutex_lock(&r->mu);
    if (rc && failed < ch->n_ok) {
        ch->n_ok = failed;
        ch->rc = rc;
        ch->err = e;
    }
    if (ps_part_turns_end(&r->turns, k, r->head))
        pthread_cond_broadcast(&r->done);
}

static void *worker_main(void *arg)
{
    ct_run *r = arg;
    ps_clean_worker *w = NULL;
    ps_label_links links = {NULL, 0};
    int init = ps_clean_worker_create(r->c, &w);
    pthread_mutex_lock(&r->mu);
    for (;;) {
        size_t k = SIZE_MAX;
        while (!r->stop && r->next_work == r->tail && (k = resolvable(r)) == SIZE_MAX)
            pthread_cond_wait(&r->work, &r->mu);
        if (!r->stop && (k != SIZE_MAX || (k = resolvable(r)) != SIZE_MAX)) {
            resolve_next(r, k); /* first: the commit waits for it */
            continue;
        }
        if (r->next_work == r->tail)
            break;
        ct_chunk *ch = &r->ring[r->next_work++ % r->ring_n];
        ch->state = 2;
        pthread_mutex_unlock(&r->mu);
        if (init) {
            ch->rc = ps_error_set(&ch->err, PS_ENOMEM, "out of memory starting a worker");
            if (ch->ranged) /* the chunks after it wait for its place */
                ps_range_chain_skip(&r->chain, &ch->ticket);
        } else
            clean_chunk(r, ch, w, &links);
        pthread_mutex_lock(&r->mu);
        ch->state = 3;
        if (r->turns.n) /* its parts to look up, for idle workers too; the
                         * last part through it wakes the commit */
            pthread_cond_broadcast(&r->work);
        else
            pthread_cond_broadcast(&r->done);
    }
    pthread_mutex_unlock(&r->mu);
    ps_clean_worker_free(w);
    ps_label_links_free(&links);
    return NULL;
}

/* Hands a committed item to the line sink: the worker's line, or a new
 * one when the commit made it a duplicate. */
static int give_line(ct_run *r, const ct_chunk *ch, const ct_item *ci, ps_error *err)
{
    if (ci->it.res.outcome != PS_OUTCOME_DUPLICATE)
        return r->line_sink(r->user, &ci->it.res, ch->lines.data + ci->o_line, ci->line_len);
    char *line;
    size_t len;
    if (ps_clean_result_json(&ci->it.res, &line, &len))
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    line[len] = '\n';
    int rc = r->line_sink(r->user, &ci->it.res, line, len);
    free(line);
    return rc;
}

/* Commits a cleaned chunk in input order and shows it to the sink; a
 * worker's failure comes after the records cleaned before it. */
static int commit_chunk(ct_run *r, ct_chunk *ch, ps_error *err)
{
    ps_cleaner_add_blank_lines(r->c, ch->blank);
    uint64_t index = r->committed; /* the chunk's first record's */
    r->committed += ch->n;
    for (size_t i = 0; i < ch->n_ok && i < PREFETCH_AHEAD; i++)
        ps_cleaner_prefetch(r->c, &ch->items[i].it);
    for (size_t i = 0; i < ch->n_ok; i++) {
        ct_item *ci = &ch->items[i];
        if (i + PREFETCH_AHEAD < ch->n_ok)
            ps_cleaner_prefetch(r->c, &ch->items[i + PREFETCH_AHEAD].it);
        if (ch->in.took_lines)
            ps_clean_item_settle_index(&ci->it, index + i);
        int rc = ps_cleaner_note_fields(r->c, ch->in.path, &ci->it)
                     ? ps_error_set(err, PS_ENOMEM, "out of memory")
                     : ps_cleaner_commit_as(r->c, ch->in.path, &ci->it,
                                            /* every record before it was committed */
                                            ci->it.label_as
                                                ? &ch->items[ci->it.label_as - 1].it
                                                : NULL,
                                            err);
        if (!rc && r->line_sink)
            rc = give_line(r, ch, ci, err);
        else if (!rc && r->sink)
            rc = r->sink(r->user, &ci->it.res);
        if (rc)
            return rc;
    }
    if (ch->rc)
        *err = ch->err;
    return ch->rc;
}

/* Fills a chunk with the input's next records; *end at its end. */
static int fill_chunk(ct_run *r, ps_input_ctx *in, ct_chunk *ch, bool *end, ps_error *err)
{
    ch->n = 0;
    ch->n_ok = 0; /* a worker that cannot start cleans none of them */
    if (r->turns.n)
        ps_part_groups_fill(r->c, &ch->groups, ch->items, sizeof *ch->items, 0, 0, 0);
    ch->rc = 0;
    ch->lines_in = ch->ranged = false;
    ch->blank = 0;
    ps_error_clear(&ch->err);
    ps_buf_reset(&ch->raw);
    int rc = r->rng.on ? 1 : ps_range_reader_start(&r->rng, r->c, in, err);
    if (rc > 0) { /* the worker reads its lines itself */
        if (ps_range_reader_next(&r->rng, &r->chain, in->path, &ch->range, &ch->ticket)) {
            ch->ranged = ch->lines_in = true;
            ps_input_share(&ch->in, in);
        } else { /* the chain has passed every range: none is read any more */
            ps_range_reader_stop(&r->rng);
            *end = true;
        }
        return 0;
    }
    if (rc < 0) {
        *end = true;
        return rc;
    }
    /* whole lines for the worker to split, when it can */
    rc = ps_input_take_lines(r->c, in, &ch->raw, CT_BYTES, CT_RECORDS, &ch->first_line, err);
    if (rc > 0) {
        ch->lines_in = true;
        ps_input_share(&ch->in, in);
        return 0;
    }
    if (rc < 0) {
        *end = true;
        return rc;
    }
    while (ch->n < CT_RECORDS && ch->raw.len < CT_BYTES) {
        ps_raw_record rec;
        rc = ps_input_next(r->c, in, &rec, err);
        if (rc <= 0) {
            *end = true;
            break;
        }
        if (ch->n == 0) /* after the read: a CSV header maps the columns */
            ps_input_share(&ch->in, in);
        ch->raw_off[ch->n] = ch->raw.len;
        if (ps_buf_append(&ch->raw, rec.data, rec.len)) {
            rc = ps_error_set(err, PS_ENOMEM, "out of memory reading %s", in->path);
            *end = true;
            break;
        }
        ch->recs[ch->n++] = rec;
        rc = 0;
    }
    for (size_t i = 0; i < ch->n; i++)
        ch->recs[i].data = ch->raw.data + ch->raw_off[i];
    return rc < 0 ? rc : 0;
}

static void ring_free(ct_run *r)
{
    for (size_t i = 0; r->ring && i < r->ring_n; i++) {
        free(r->ring[i].recs);
        free(r->ring[i].raw_off);
        free(r->ring[i].items);
        ps_buf_free(&r->ring[i].raw);
        ps_buf_free(&r->ring[i].out);
        ps_buf_free(&r->ring[i].lines);
        ps_part_groups_free(&r->ring[i].groups);
        ps_line_range_free(&r->ring[i].range);
    }
    free(r->ring);
    ps_part_turns_free(&r->turns);
}

static int ring_alloc(ct_run *r, size_t threads)
{
    r->ring_n = 2 * threads + 2;
    r->ring = calloc(r->ring_n, sizeof *r->ring);
    for (size_t i = 0; r->ring && i < r->ring_n; i++) {
        ct_chunk *ch = &r->ring[i];
        ps_line_range_init(&ch->range);
        ch->recs = malloc(CT_RING_RECORDS * sizeof *ch->recs);
        ch->raw_off = malloc(CT_RECORDS * sizeof *ch->raw_off);
        ch->items = malloc(CT_RING_RECORDS * sizeof *ch->items);
        if (!ch->recs || !ch->raw_off || !ch->items)
            return PS_ENOMEM;
        if (r->turns.n && ps_part_groups_init(&ch->groups, CT_RING_RECORDS, r->turns.n))
            return PS_ENOMEM;
    }
    return r->ring ? 0 : PS_ENOMEM;
}

/* The calling thread: commits cleaned chunks at the head in order, fills
 * free ones, and waits when it can do neither. A read error comes after
 * the records read before it, as in ps_cleaner_run. */
static int run_ring(ct_run *r, ps_input_ctx *in, ps_error *err)
{
    bool end = false;
    int rc = 0, read_rc = 0;
    ps_error read_err = {0};
    pthread_mutex_lock(&r->mu);
    while (!rc && (!end || r->head != r->tail)) {
        while (!rc && r->head != r->tail && r->ring[r->head % r->ring_n].state == 3 &&
               ps_part_turns_past(&r->turns, r->head)) {
            ct_chunk *ch = &r->ring[r->head % r->ring_n];
            pthread_mutex_unlock(&r->mu);
            rc = commit_chunk(r, ch, err);
            pthread_mutex_lock(&r->mu);
            ch->state = 0;
            r->head++;
        }
        if (rc)
            break;
        if ((end || r->tail - r->head == r->ring_n) && r->head != r->tail) {
            pthread_cond_wait(&r->done, &r->mu);
            continue;
        }
        if (end)
            continue;
        ct_chunk *ch = &r->ring[r->tail % r->ring_n];
        pthread_mutex_unlock(&r->mu);
        read_rc = fill_chunk(r, in, ch, &end, &read_err);
        pthread_mutex_lock(&r->mu);
        if (ch->n || ch->lines_in) {
            ch->state = 1;
            r->tail++;
            pthread_cond_signal(&r->work);
        }
    }
    pthread_mutex_unlock(&r->mu);
    if (!rc && read_rc) {
        *err = read_err;
        rc = read_rc;
    }
    return rc;
}

static int run_threads(ct_run *rr, const char *path, size_t threads, ps_error *err);

/* The threaded run handing each record to one of the two sinks. */
static int run_with(ps_cleaner *c, const char *path, size_t threads, ps_clean_sink sink,
                    ps_clean_line_sink line_sink, void *user, ps_error *err)
{
    ct_run r;
    memset(&r, 0, sizeof r);
    r.c = c;
    r.sink = sink;
    r.line_sink = line_sink;
    r.user = user;
    return run_threads(&r, path, threads, err);
}

int ps_cleaner_run_threads(ps_cleaner *c, const char *path, size_t threads, ps_clean_sink sink,
                           void *user, ps_error *err)
{
    if (threads <= 1)
        return ps_cleaner_run(c, path, sink, user, err);
    return run_with(c, path, threads, sink, NULL, user, err);
}

typedef struct line_adapter {
    ps_clean_line_sink sink;
    void *user;
} line_adapter;

/* One thread: ps_cleaner_run, each record serialised here. */
static int adapt(void *user, const ps_clean_result *res)
{
    line_adapter *a = user;
    char *line;
    size_t len;
    if (ps_clean_result_json(res, &line, &len))
        return PS_ENOMEM;
    line[len] = '\n';
    int rc = a->sink(a->user, res, line, len);
    free(line);
    return rc;
}

int ps_cleaner_run_lines(ps_cleaner *c, const char *path, size_t threads,
                         ps_clean_line_sink sink, void *user, ps_error *err)
{
    if (threads <= 1) {
        line_adapter a = {sink, user};
        int rc = ps_cleaner_run(c, path, adapt, &a, err);
        if (rc == PS_ENOMEM && err && !err->code)
            rc = ps_error_set(err, PS_ENOMEM, "out of memory");
        return rc;
    }
    return run_with(c, path, threads, NULL, sink, user, err);
}

static int run_threads(ct_run *rr, const char *path, size_t threads, ps_error *err)
{
    ct_run r = *rr;
    ps_cleaner *c = r.c;
    r.nrules = ps_rules_count(ps_cleaner_rules(c));
    /* A dedupe part a thread, split before the first record is committed
     * (PS_EINVAL after it: the commit dedupes, as it has so far); a run
     * after the first keeps the first's parts. */
    int split = ps_cleaner_dedupe_parts(c)
                    ? 0
                    : ps_cleaner_split_dedupe(c, threads < PS_DEDUPE_PARTS_MAX
                                                     ? threads : PS_DEDUPE_PARTS_MAX);
    pthread_t *tids = calloc(threads, sizeof *tids);
    if (split == PS_ENOMEM || !tids || ps_part_turns_init(&r.turns, ps_cleaner_dedupe_parts(c)) ||
        ring_alloc(&r, threads) || ps_range_chain_init(&r.chain, &r.mu)) {
        free(tids);
        ring_free(&r);
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    }
    ps_input_ctx in;
    int rc = ps_input_open(c, &in, path, err);
    bool opened = rc == 0;
    pthread_mutex_init(&r.mu, NULL);
    pthread_cond_init(&r.work, NULL);
    pthread_cond_init(&r.done, NULL);
    size_t started = 0;
    while (!rc && started < threads && ps_thread_create(&tids[started], worker_main, &r, "ps-clean") == 0)
        started++;
    if (!rc && !started)
        rc = ps_error_set(err, PS_ENOMEM, "cannot start worker threads");
    if (!rc)
        rc = run_ring(&r, &in, err);
    pthread_mutex_lock(&r.mu);
    r.stop = true;
    r.next_work = r.tail; /* on error, queued chunks are not cleaned */
    pthread_cond_broadcast(&r.work);
    pthread_mutex_unlock(&r.mu);
    for (size_t i = 0; i < started; i++)
        pthread_join(tids[i], NULL);
    if (!rc)
        rc = ps_cleaner_check_fields(c, in.path, err);
    ps_range_reader_stop(&r.rng); /* stopped early: after the workers, who may read it */
    if (opened)
        ps_input_close(c, &in);
    free(tids);
    ring_free(&r);
    pthread_mutex_destroy(&r.mu);
    pthread_cond_destroy(&r.work);
    pthread_cond_destroy(&r.done);
    ps_range_chain_destroy(&r.chain);
    return rc;
}
