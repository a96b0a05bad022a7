/*
 * pairshard build, phase 2: labels sorted and numbered, buckets chosen,
 * and each shard's spooled records grouped by bucket (stable, so input
 * order survives inside a bucket), cut into blocks, compressed by worker
 * threads and written in key order.
 */
#define _GNU_SOURCE /* qsort_r */
#include "pipeline/build_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

/* A spooled record's layout (build_internal.h): its head (length,
 * type_boundary, label, id_len), id and ids. */
static const uint32_t *rec_head(const char *rec) { return (const uint32_t *)rec; }

static const int32_t *rec_ids(const char *rec)
{
    return (const int32_t *)(rec + ps_spool_ids_offset(rec_head(rec)[3]));
}

typedef struct job {
    uint32_t bucket, seq;
    size_t first, count; /* into the bucket-ordered offsets */
    ps_buf out;
    uint64_t raw_bytes;
    int rc;
    ps_error err;
    bool done; /* encoded (under the pool's lock) */
} job;

/* A shard writer's seconds (the profile), summed into the build's
 * profile once the writers are done: several may run at once. */
typedef struct times {
    double encode, sort, put, finish;
} times;

/* A shard writer's compression threads, started once for the shard:
 * they take jobs in key order below `limit`, which the writer moves on as
 * it stores blocks, so at most `ahead` encoded blocks wait in memory; each
 * thread keeps its zstd context for the whole shard. With no thread
 * started (one thread) the writer encodes each job itself. */
typedef struct pool {
    ps_build_state *st;
    const ps_spool *index;       /* the shard's records, in commit order */
    const size_t *order;         /* indexes into it, bucket-ordered */
    job *jobs;
    size_t n_jobs;
    size_t next, limit; /* the next job to take; jobs below limit may be taken */
    size_t want;        /* the job whose end wakes the writer; SIZE_MAX: none */
    bool stop;
    pthread_mutex_t mu;
    pthread_cond_t work, done;
    double busy;        /* all threads' seconds encoding (the profile) */
    pthread_t *t;
    size_t started;
} pool;

/* What encoding a block needs, per thread. */
typedef struct encoder {
    ZSTD_CCtx *cctx;
    ps_shard_record *recs;
} encoder;

static bool encoder_init(encoder *e, size_t block_records)
{
    e->cctx = ZSTD_createCCtx();
    e->recs = malloc(block_records * sizeof *e->recs);
    return e->cctx && e->recs;
}

static void encoder_free(encoder *e)
{
    ZSTD_freeCCtx(e->cctx);
    free(e->recs);
}

static int cmp_label(const void *a, const void *b, void *labels)
{
    char *const *la = labels;
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return strcmp(la[x], la[y]);
}

static void encode_job(pool *p, job *j, ZSTD_CCtx *cctx, ps_shard_record *recs)
{
    ps_build_state *st = p->st;
    uint64_t idbytes = 0, tokens = 0;
    for (size_t k = 0; k < j->count; k++) {
        const ps_spool_entry *e = ps_spool_at(p->index, p->order[j->first + k]);
        const char *rec = ps_spool_record(st, e);
        const uint32_t *h = rec_head(rec);
        recs[k].ids = rec_ids(rec);
        recs[k].length = h[0];
        recs[k].type_boundary = h[1];
        recs[k].label = e->label == PS_LABEL_NONE ? PS_LABEL_NONE : st->label_final[e->label];
        recs[k].id = rec + 16;
        recs[k].id_len = h[3];
        idbytes += h[3];
        tokens += h[0];
    }
    uint64_t w = (uint64_t)st->id_width;
    j->raw_bytes = 12 + 16 * j->count + 4 + idbytes + (w - idbytes % w) % w + tokens * w;
    j->rc = ps_block_encode(recs, j->count, st->id_width, st->cfg->zstd_level, cctx, &j->out,
                            &j->err);
}

static void encode_or_fail(pool *p, job *j, encoder *e, bool ready, double *busy)
{
    if (!ready) {
        j->rc = ps_error_set(&j->err, PS_ENOMEM, "out of memory");
        return;
    }
    double t = ps_build_now();
    encode_job(p, j, e->cctx, e->recs);
    *busy += ps_build_now() - t;
}

static void *pool_main(void *arg)
{
    pool *p = arg;
    encoder e;
    bool ready = encoder_init(&e, p->st->cfg->block_records);
    double busy = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stop && p->next >= p->limit)
            pthread_cond_wait(&p->work, &p->mu);
        if (p->stop)
            break;
        job *j = &p->jobs[p->next++];
        pthread_mutex_unlock(&p->mu);
        encode_or_fail(p, j, &e, ready, &busy);
        pthread_mutex_lock(&p->mu);
        j->done = true;
        if (p->want != SIZE_MAX && p->jobs[p->want].done) {
            p->want = SIZE_MAX;
            pthread_cond_signal(&p->done);
        }
    }
    p->busy += busy;
    pthread_mutex_unlock(&p->mu);
    encoder_free(&e);
    return NULL;
}

/* Starts up to `threads` compression threads when there are more than
 * one (none may start: the writer then encodes alone). */
static void pool_start(pool *p, ps_build_state *st, size_t threads, const ps_spool *index,
                       const size_t *order, job *jobs, size_t n)
{
    *p = (pool){.st = st, .index = index, .order = order, .jobs = jobs, .n_jobs = n,
                .want = SIZE_MAX};
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->work, NULL);
    pthread_cond_init(&p->done, NULL);
    size_t nt = threads < n ? threads : n;
    p->t = nt > 1 ? calloc(nt, sizeof *p->t) : NULL;
    for (; p->t && p->started < nt; p->started++)
        if (ps_thread_create(&p->t[p->started], pool_main, p, "ps-zstd") != 0)
            break;
}

/* Jobs a wake-up covers: a thread waiting for work is woken once this
 * many may be taken, and a writer waiting for a job sleeps until the
 * job this many further on is done too. Each wake-up is a context switch
 * (a cross-CPU interrupt under a hypervisor); one a block cost a tenth of
 * a 2-thread build's CPU time in switches. */
#define WAKE_BATCH 8

/* Lets the threads take jobs below `limit`. */
static void pool_advance(pool *p, size_t limit)
{
    pthread_mutex_lock(&p->mu);
    if (limit > p->n_jobs)
        limit = p->n_jobs;
    if (limit > p->limit) {
        p->limit = limit;
        if (limit >= p->next + WAKE_BATCH || limit == p->n_jobs)
            pthread_cond_broadcast(&p->work);
    }
    pthread_mutex_unlock(&p->mu);
}

/* Job i, encoded: by the threads (waiting for it, and for the next
 * WAKE_BATCH - 1 that may be taken), or here. */
static void pool_wait(pool *p, size_t i, encoder *own, bool own_ready)
{
    if (!p->started) {
        encode_or_fail(p, &p->jobs[i], own, own_ready, &p->busy);
        return;
    }
    pthread_mutex_lock(&p->mu);
    if (!p->jobs[i].done && p->next < p->limit)
        pthread_cond_broadcast(&p->work); /* jobs pool_advance held back */
    size_t last = i + WAKE_BATCH - 1;
    if (last >= p->limit)
        last = p->limit - 1; /* i < limit: the jobs below it are all taken in time */
    while (!p->jobs[i].done) {
        p->want = p->jobs[last].done ? i : last;
        pthread_cond_wait(&p->done, &p->mu);
    }
    pthread_mutex_unlock(&p->mu);
}

static void pool_stop(pool *p, times *tm)
{
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->mu);
    for (size_t i = 0; i < p->started; i++)
        pthread_join(p->t[i], NULL);
    free(p->t);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->work);
    pthread_cond_destroy(&p->done);
    tm->encode += p->busy;
}

/* What a block carries beside it: its record lengths (version 2), with
 * --execute its records' fingerprints, in a mixture their sources; NULL
 * when not kept. */
typedef struct beside {
    uint32_t *lengths;
    unsigned char *fps;
    uint16_t *sources;
} beside;

/* The fingerprints of a job's records, from the ends of their spool
 * records (build.c appends them past the ids), into the exec database. */
static int put_exec(ps_shard_writer *w, const ps_build_state *st, const ps_spool *index,
                    const size_t *order, const job *jb, unsigned char *fps, ps_error *err)
{
    for (size_t r = 0; r < jb->count; r++) {
        const char *rec = ps_spool_record(st, ps_spool_at(index, order[jb->first + r]));
        const uint32_t *h = rec_head(rec);
        memcpy(fps + r * PS_EXEC_ENTRY_BYTES, rec + ps_spool_ids_offset(h[3]) + 4 * (size_t)h[0],
               PS_EXEC_ENTRY_BYTES);
    }
    return ps_shard_writer_put_exec(w, jb->bucket, jb->seq, fps, (uint32_t)jb->count, err);
}

/* Stores one encoded block (the next in key order) and counts it. */
static int put_job(ps_shard_writer *w, const ps_build_state *st, ps_shard_result *res,
                   const ps_spool *index, const size_t *order, job *jb, const beside *bs,
                   ps_error *err)
{
    uint32_t *lengths = bs->lengths;
    uint16_t *sources = bs->sources;
    int rc = jb->rc;
    if (rc) {
        if (err)
            *err = jb->err;
    } else {
        rc = ps_shard_writer_put(w, jb->bucket, jb->seq, jb->out.data, jb->out.len, err);
    }
    if (!rc && bs->fps)
        rc = put_exec(w, st, index, order, jb, bs->fps, err);
    if (!rc && lengths) { /* version 2: the block's lengths beside it */
        for (size_t r = 0; r < jb->count; r++)
            lengths[r] = ps_spool_at(index, order[jb->first + r])->length;
        rc = ps_shard_writer_put_lengths(w, jb->bucket, jb->seq, lengths, jb->count, err);
    }
    if (!rc && sources) { /* a mixture: each record's source, which its spool record holds
                           * where a label would be (build.c, put_encoded) */
        for (size_t r = 0; r < jb->count; r++)
            sources[r] = (uint16_t)rec_head(ps_spool_record(st, ps_spool_at(index,
                                                                            order[jb->first + r])))[2];
        rc = ps_shard_writer_put_sources(w, jb->bucket, jb->seq, sources, (uint32_t)jb->count,
                                         err);
    }
    if (!rc) {
        ps_bucket_count *bc = &res->buckets[jb->bucket];
        bc->blocks++;
        bc->records += jb->count;
        for (size_t r = 0; r < jb->count; r++)
            bc->tokens += ps_spool_at(index, order[jb->first + r])->length;
        res->uncompressed += jb->raw_bytes;
    }
    ps_buf_free(&jb->out);
    return rc;
}

/* Writes shard k with `threads` compression threads (besides the
 * calling one), adding its seconds to *tm. Touches only shard k's
 * spool and result, so several shards can be written at once. */
static int write_shard(ps_build_state *st, size_t k, size_t threads, times *tm, ps_error *err)
{
    const ps_build_config *cfg = st->cfg;
    ps_shard_result *res = &st->results[k];
    ps_spool *sp = &st->spools[k];
    snprintf(res->file, sizeof res->file, "shard-%05zu.mdb", k);
    double t_start = ps_build_now();
    int rc = 0;
    size_t n = sp->records, nb = st->n_bounds;
    size_t *sorted = malloc((n ? n : 1) * sizeof *sorted);
    size_t start[PS_BUILD_MAX_BUCKETS + 1] = {0};
    if (!sorted) {
        rc = ps_error_set(err, PS_ENOMEM, "out of memory");
        goto out;
    }
    /* Group by bucket from the index: count, then place (stable). */
    for (size_t i = 0; i < n; i++) {
        const ps_spool_entry *e = ps_spool_at(sp, i);
        size_t b = ps_bucket_of(st->bounds, nb, e->length);
        if (b == nb) {
            const char *rec = ps_spool_record(st, e);
            rc = ps_error_set(err, PS_EUSAGE,
                              "record '%.*s' has %u tokens, above the last bucket bound %u",
                              (int)rec_head(rec)[3], rec + 16, e->length, st->bounds[nb - 1]);
            goto out;
        }
        start[b + 1]++;
    }
    for (size_t b = 0; b < nb; b++)
        start[b + 1] += start[b];
    size_t fill[PS_BUILD_MAX_BUCKETS];
    memcpy(fill, start, sizeof fill);
    for (size_t i = 0; i < n; i++) {
        size_t at = fill[ps_bucket_of(st->bounds, nb, ps_spool_at(sp, i)->length)]++;
        sorted[at] = i;
    }

    /* One job per block, in key order. */
    size_t br = cfg->block_records, n_jobs = 0;
    for (size_t b = 0; b < nb; b++)
        n_jobs += (start[b + 1] - start[b] + br - 1) / br;
    job *jobs = calloc(n_jobs ? n_jobs : 1, sizeof *jobs);
    if (!jobs) {
        rc = ps_error_set(err, PS_ENOMEM, "out of memory");
        goto out;
    }
    size_t j = 0;
    for (size_t b = 0; b < nb; b++)
        for (size_t s = 0, f = start[b]; f < start[b + 1]; s++, f += br) {
            jobs[j].bucket = (uint32_t)b;
            jobs[j].seq = (uint32_t)s;
            jobs[j].first = f;
            jobs[j].count = start[b + 1] - f < br ? start[b + 1] - f : br;
            j++;
        }

    tm->sort += ps_build_now() - t_start;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", st->staging, res->file);
    ps_shard_writer *w = NULL;
    beside bs = {NULL, NULL, NULL};
    if (cfg->layout != PS_LAYOUT_PAIR) {
        bs.lengths = malloc(cfg->block_records * sizeof *bs.lengths);
        rc = bs.lengths ? ps_shard_writer_open_lengths(&w, path, 0, err)
                        : ps_error_set(err, PS_ENOMEM, "out of memory");
    } else {
        rc = ps_shard_writer_open(&w, path, err);
    }
    if (!rc && st->exec_db) { /* only then: other sets keep their bytes */
        bs.fps = malloc(cfg->block_records * PS_EXEC_ENTRY_BYTES);
        rc = bs.fps ? ps_shard_writer_enable_exec(w, err)
                    : ps_error_set(err, PS_ENOMEM, "out of memory");
    }
    if (!rc && st->n_src) { /* a mixture: a block's records' sources */
        bs.sources = malloc(cfg->block_records * sizeof *bs.sources);
        rc = bs.sources ? ps_shard_writer_enable_sources(w, err)
                        : ps_error_set(err, PS_ENOMEM, "out of memory");
    }
    /* Blocks are encoded at most `ahead` in front of the one being
     * stored, so memory stays bounded, and stored in key order. */
    size_t ahead = 64 * threads;
    pool pl;
    pool_start(&pl, st, threads, sp, sorted, jobs, n_jobs);
    encoder own = {NULL, NULL}; /* the writer's, when no thread started */
    bool own_ready = pl.started || encoder_init(&own, cfg->block_records);
    pool_advance(&pl, ahead);
    for (size_t i = 0; !rc && i < n_jobs; i++) {
        if (i % 64 == 0 && (rc = ps_build_stopping(st, err)) != 0)
            break;
        pool_wait(&pl, i, &own, own_ready);
        double t = ps_build_now();
        rc = put_job(w, st, res, sp, sorted, &jobs[i], &bs, err);
        tm->put += ps_build_now() - t;
        pool_advance(&pl, i + 1 + ahead);
    }
    pool_stop(&pl, tm);
    encoder_free(&own);
    free(bs.lengths);
    free(bs.fps);
    free(bs.sources);
    for (size_t i = 0; i < n_jobs; i++) /* after a failure: the blocks not written */
        ps_buf_free(&jobs[i].out);
    free(jobs);
    if (!rc) {
        char meta[160];
        snprintf(meta, sizeof meta,
                 "{\"magic\":\"pairshard-shard\",\"format_version\":%d,\"shard\":%zu,"
                 "\"shards\":%zu}",
                 ps_set_format_version(cfg->layout), k, cfg->shards);
        double t = ps_build_now();
        /* hashed on its way to the file: no second pass over it */
        rc = ps_shard_writer_finish_hashed(w, meta, res->sha256, &res->bytes, err);
        tm->finish += ps_build_now() - t;
        w = NULL;
    }
    /* The last shard written: nothing reads the worker spools again, so
     * they go beside the manifest and publication. Not beside a compacted
     * copy: unmapping them takes the address space's lock, which the
     * copy's page faults wait for (Spider x20 at 2 threads: the copy 9.8
     * -> 12.9 ms, median of 15 runs). */
    if (!rc && __atomic_add_fetch(&st->shards_done, 1, __ATOMIC_ACQ_REL) == cfg->shards)
        ps_build_release_start(&st->spools_release, ps_build_wspools_free, st);
    if (w)
        ps_shard_writer_abort(w);
    for (size_t b = 0; !rc && b < nb; b++) {
        res->records += res->buckets[b].records;
        res->tokens += res->buckets[b].tokens;
        res->blocks += res->buckets[b].blocks;
    }
out:
    free(sorted);
    ps_spool_free(sp); /* grouped: not needed again */
    return rc;
}

int ps_build_plan(ps_build_state *st, ps_error *err)
{
    const ps_build_config *cfg = st->cfg;
    /* Labels: sorted by their bytes, so ids do not depend on input order. */
    size_t nl = st->labels.n;
    uint32_t *order = malloc((nl + 1) * sizeof *order);
    st->label_final = malloc((nl + 1) * sizeof *st->label_final);
    st->sorted_labels = malloc((nl + 1) * sizeof *st->sorted_labels);
    if (!order || !st->label_final || !st->sorted_labels) {
        free(order);
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    }
    for (uint32_t i = 0; i < nl; i++)
        order[i] = i;
    qsort_r(order, nl, sizeof *order, cmp_label, st->labels.keys);
    for (uint32_t i = 0; i < nl; i++) {
        st->label_final[order[i]] = i;
        st->sorted_labels[i] = st->labels.keys[order[i]];
    }
    free(order);

    if (cfg->n_buckets) {
        memcpy(st->bounds, cfg->buckets, cfg->n_buckets * sizeof *st->bounds);
        st->n_bounds = cfg->n_buckets;
    } else {
        st->n_bounds = st->hist ? ps_buckets_choose(st->hist, st->hist_max, cfg->auto_buckets,
                                                    cfg->bucket_multiple, st->bounds)
                                : 0;
        if (st->n_bounds == 0) { /* no records: one bucket, for a well-formed set */
            st->bounds[0] = (uint32_t)(cfg->max_length ? cfg->max_length : 1);
            st->n_bounds = 1;
        }
    }
    st->id_width = ps_tokenizer_vocab_size(cfg->tokenizer) <= 65536 ? 2 : 4;
    return 0;
}

/* Shards written at once: each writer thread takes the next shard. */
typedef struct writers {
    ps_build_state *st;
    size_t threads;     /* compression threads per shard */
    size_t next;        /* the next shard to take */
    bool failed;        /* a shard failed: take no more */
    pthread_mutex_t mu;
    int *rc;            /* per shard; 1 for a shard never started */
    ps_error *err;      /* per shard */
    times tm;           /* all writers' seconds */
} writers;

static void *writer_main(void *arg)
{
    writers *ws = arg;
    times tm = {0};
    for (;;) {
        pthread_mutex_lock(&ws->mu);
        size_t k = ws->failed ? ws->st->cfg->shards : ws->next++;
        pthread_mutex_unlock(&ws->mu);
        if (k >= ws->st->cfg->shards)
            break;
        int rc = ps_build_stopping(ws->st, &ws->err[k]);
        if (!rc)
            rc = write_shard(ws->st, k, ws->threads, &tm, &ws->err[k]);
        pthread_mutex_lock(&ws->mu);
        ws->rc[k] = rc;
        ws->failed |= rc != 0;
        pthread_mutex_unlock(&ws->mu);
    }
    pthread_mutex_lock(&ws->mu);
    ws->tm.encode += tm.encode;
    ws->tm.sort += tm.sort;
    ws->tm.put += tm.put;
    ws->tm.finish += tm.finish;
    pthread_mutex_unlock(&ws->mu);
    return NULL;
}

/* Runs n writer threads (the calling thread is one of them) and returns
 * the first failed shard's error, in shard order, whichever writer saw
 * it first. */
static int run_writers(writers *ws, size_t n, ps_error *err)
{
    pthread_t *t = n > 1 ? calloc(n - 1, sizeof *t) : NULL;
    size_t started = 0;
    for (; t && started < n - 1; started++)
        if (ps_thread_create(&t[started], writer_main, ws, "ps-shard") != 0)
            break;
    writer_main(ws);
    for (size_t i = 0; i < started; i++)
        pthread_join(t[i], NULL);
    free(t);
    for (size_t k = 0; k < ws->st->cfg->shards; k++)
        if (ws->rc[k] < 0) {
            *err = ws->err[k];
            return ws->rc[k];
        }
    return 0;
}

/* Phase 2. With several threads and shards, up to min(threads, shards)
 * shards are written at once, the threads shared out among them: the
 * grouping, LMDB writes and compacted copy (hashed as written) of one shard are
 * serial, so only more shards at once put them on more cores. Every
 * shard's file depends on its spool alone, so the bytes do not change. */
int ps_build_phase2(ps_build_state *st, ps_error *err)
{
    const ps_build_config *cfg = st->cfg;
    st->results = calloc(cfg->shards, sizeof *st->results);
    writers ws = {.st = st, .threads = 1, .mu = PTHREAD_MUTEX_INITIALIZER};
    ws.rc = malloc(cfg->shards * sizeof *ws.rc);
    ws.err = calloc(cfg->shards, sizeof *ws.err);
    if (!st->results || !ws.rc || !ws.err) {
        free(ws.rc);
        free(ws.err);
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    }
    for (size_t k = 0; k < cfg->shards; k++)
        ws.rc[k] = 1;
    size_t n = cfg->threads < cfg->shards ? cfg->threads : cfg->shards;
    struct rlimit rl; /* the writers' descriptors fit where the spools did */
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        rl.rlim_cur > PS_BUILD_FDS_BESIDE_SPOOLS &&
        (rl.rlim_cur - PS_BUILD_FDS_BESIDE_SPOOLS) / PS_BUILD_FDS_PER_WRITER < n)
        n = (size_t)(rl.rlim_cur - PS_BUILD_FDS_BESIDE_SPOOLS) / PS_BUILD_FDS_PER_WRITER;
    if (n < 1)
        n = 1;
    ws.threads = cfg->threads / n ? cfg->threads / n : 1;
    int rc = run_writers(&ws, n, err);
    pthread_mutex_destroy(&ws.mu);
    st->prof.phase2_encode += ws.tm.encode;
    st->prof.phase2_sort += ws.tm.sort;
    st->prof.phase2_put += ws.tm.put;
    st->prof.phase2_finish += ws.tm.finish;
    st->prof.phase2_writers = n;
    free(ws.rc);
    free(ws.err);
    return rc;
}
