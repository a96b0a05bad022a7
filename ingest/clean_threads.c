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
#include "ingest/ring.h"

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
    ps_part_groups groups; /* its kept items by dedupe part (ct_run.parts) */
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
    /* the chunks' order and turns; its dedupe parts (none: the commit
     * dedupes): a chunk is committed once every part is past it */
    ps_ring ring;
    ct_chunk *chunks;
    size_t parts;
    uint64_t committed;        /* records of the input committed */
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
    if (r->parts) /* the records cleaned before a failure are committed */
        ps_part_groups_fill(r->c, &ch->groups, ch->items, sizeof *ch->items, ch->n_ok, 0, 0);
}

/* A worker looks part k's chunk up. A failure keeps the records before
 * the one that failed: the commit shows them, then the error. */
static void resolve_chunk(ct_run *r, const ps_ring_job *j)
{
    ct_chunk *ch = &r->chunks[j->slot];
    ps_error e;
    ps_error_clear(&e);
    size_t failed = 0;
    int rc = ps_part_groups_resolve(r->c, &ch->groups, ch->items, sizeof *ch->items, j->part,
                                    &failed, &e);
    ps_ring_lock(&r->ring); /* other parts look the chunk up beside it */
    if (rc && failed < ch->n_ok) {
        ch->n_ok = failed;
        ch->rc = rc;
        ch->err = e;
    }
    ps_ring_done_locked(&r->ring, j, false);
    ps_ring_unlock(&r->ring);
}

static void *worker_main(void *arg)
{
    ct_run *r = arg;
    ps_clean_worker *w = NULL;
    ps_label_links links = {NULL, 0};
    int init = ps_clean_worker_create(r->c, &w);
    ps_ring_job j;
    while (ps_ring_take(&r->ring, &j) != PS_RING_STOP) {
        if (j.kind == PS_RING_RESOLVE) {
            resolve_chunk(r, &j);
            continue;
        }
        ct_chunk *ch = &r->chunks[j.slot];
        if (init) {
            ch->rc = ps_error_set(&ch->err, PS_ENOMEM, "out of memory starting a worker");
            if (ch->ranged) /* the chunks after it wait for its place */
                ps_range_chain_skip(&r->chain, &ch->ticket);
        } else
            clean_chunk(r, ch, w, &links);
        ps_ring_done(&r->ring, &j, false);
    }
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
    if (r->parts)
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

static void chunks_free(ct_run *r)
{
    for (size_t i = 0; r->chunks && i < r->ring.n; i++) {
        free(r->chunks[i].recs);
        free(r->chunks[i].raw_off);
        free(r->chunks[i].items);
        ps_buf_free(&r->chunks[i].raw);
        ps_buf_free(&r->chunks[i].out);
        ps_buf_free(&r->chunks[i].lines);
        ps_part_groups_free(&r->chunks[i].groups);
        ps_line_range_free(&r->chunks[i].range);
    }
    free(r->chunks);
}

static int chunks_alloc(ct_run *r)
{
    r->chunks = calloc(r->ring.n, sizeof *r->chunks);
    for (size_t i = 0; r->chunks && i < r->ring.n; i++) {
        ct_chunk *ch = &r->chunks[i];
        ps_line_range_init(&ch->range);
        ch->recs = malloc(CT_RING_RECORDS * sizeof *ch->recs);
        ch->raw_off = malloc(CT_RECORDS * sizeof *ch->raw_off);
        ch->items = malloc(CT_RING_RECORDS * sizeof *ch->items);
        if (!ch->recs || !ch->raw_off || !ch->items)
            return PS_ENOMEM;
        if (r->parts && ps_part_groups_init(&ch->groups, CT_RING_RECORDS, r->parts))
            return PS_ENOMEM;
    }
    return r->chunks ? 0 : PS_ENOMEM;
}

/* The calling thread: commits cleaned chunks at the head in order, fills
 * free ones, and waits when it can do neither. A read error comes after
 * the records read before it, as in ps_cleaner_run. */
static int run_ring(ct_run *r, ps_input_ctx *in, ps_error *err)
{
    bool end = false;
    int rc = 0, read_rc = 0;
    ps_error read_err = {0};
    for (;;) {
        size_t s;
        int step = ps_ring_next(&r->ring, end, &s);
        if (step == PS_RING_DRAINED)
            break;
        if (step == PS_RING_COMMIT) {
            rc = commit_chunk(r, &r->chunks[s], err);
            ps_ring_committed(&r->ring);
            if (rc)
                break;
        } else if (step == PS_RING_FILL) {
            ct_chunk *ch = &r->chunks[s];
            read_rc = fill_chunk(r, in, ch, &end, &read_err);
            if (ch->n || ch->lines_in)
                ps_ring_filled(&r->ring, false);
        }
    }
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
    r.parts = ps_cleaner_dedupe_parts(c);
    pthread_t *tids = calloc(threads, sizeof *tids);
    int ringed = ps_ring_init(&r.ring, 2 * threads + 2, r.parts);
    if (split == PS_ENOMEM || !tids || ringed || chunks_alloc(&r) ||
        ps_range_chain_init(&r.chain, ps_ring_mutex(&r.ring))) {
        free(tids);
        chunks_free(&r);
        ps_ring_destroy(&r.ring);
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    }
    ps_input_ctx in;
    int rc = ps_input_open(c, &in, path, err);
    bool opened = rc == 0;
    size_t started = 0;
    while (!rc && started < threads && ps_thread_create(&tids[started], worker_main, &r, "ps-clean") == 0)
        started++;
    if (!rc && !started)
        rc = ps_error_set(err, PS_ENOMEM, "cannot start worker threads");
    if (!rc)
        rc = run_ring(&r, &in, err);
    ps_ring_stop(&r.ring); /* on error, queued chunks are not cleaned */
    for (size_t i = 0; i < started; i++)
        pthread_join(tids[i], NULL);
    if (!rc)
        rc = ps_cleaner_check_fields(c, in.path, err);
    ps_range_reader_stop(&r.rng); /* stopped early: after the workers, who may read it */
    if (opened)
        ps_input_close(c, &in);
    free(tids);
    chunks_free(&r);
    ps_range_chain_destroy(&r.chain);
    ps_ring_destroy(&r.ring);
    return rc;
}
