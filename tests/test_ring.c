/* The ordered ring the threaded clean and build share (ingest/ring.h):
 * whatever order 8 workers finish in, the calling thread commits chunks in
 * the order it filled them (Spider dev's lines, put back together byte for
 * byte); each dedupe part looks every chunk up in order, one thread at a
 * time; followers see every committed chunk in order; a chunk is observed
 * once; a chunk's error stops the ring with nothing after it committed; a
 * failed follower makes the calling thread stop; cancellation ends the
 * workers without working what was queued; and idle threads sleep rather
 * than spin. */
#include "support/testutil.h"

#include "ingest/ring.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define WORKERS 8
#define PARTS 3
#define FOLLOWERS 2

typedef struct tchunk {
    size_t seq;               /* its place in the input */
    const char *line;
    size_t len;
    uint64_t sum;             /* the worker's: a checksum of the line */
    int rc;                   /* the worker's failure (under the ring's lock) */
    int parts_seen;           /* under the ring's lock */
    atomic_int observed;
} tchunk;

typedef struct harness {
    ps_ring ring;
    tchunk *chunks;
    size_t fail_at;           /* a worker fails this chunk (SIZE_MAX: none) */
    size_t follower_fail_at;  /* follower 0 fails at it */
    size_t part_next[PARTS];  /* each part's next chunk: one thread at a time */
    size_t follow_next[FOLLOWERS];
    atomic_size_t worked, taken, bad_order;
    /* gated: workers hold their first chunk until the gate opens */
    bool gated, gate_open;
    pthread_mutex_t gate_mu;
    pthread_cond_t gate_cv;
    pthread_t workers[WORKERS], followers[FOLLOWERS];
    size_t nfollowers;
} harness;

static uint64_t checksum(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

/* Uneven work, so that workers finish out of order. */
static void jitter(size_t seq)
{
    if (seq % 7 == 0) {
        struct timespec ts = {0, (long)(seq % 13) * 20000};
        nanosleep(&ts, NULL);
    } else if (seq % 3 == 0)
        sched_yield();
}

static void *worker(void *arg)
{
    harness *h = arg;
    ps_ring_job j;
    while (ps_ring_take(&h->ring, &j) != PS_RING_STOP) {
        tchunk *ch = &h->chunks[j.slot];
        if (j.kind == PS_RING_WORK) {
            atomic_fetch_add(&h->taken, 1);
            pthread_mutex_lock(&h->gate_mu);
            while (h->gated && !h->gate_open)
                pthread_cond_wait(&h->gate_cv, &h->gate_mu);
            pthread_mutex_unlock(&h->gate_mu);
            jitter(ch->seq);
            ch->sum = checksum(ch->line, ch->len);
            atomic_fetch_add(&h->worked, 1);
            if (ch->seq == h->fail_at) {
                ps_ring_lock(&h->ring);
                ch->rc = PS_EINVAL;
                ps_ring_unlock(&h->ring);
            }
            ps_ring_done(&h->ring, &j, false);
        } else if (j.kind == PS_RING_RESOLVE) {
            if (ch->seq != h->part_next[j.part])
                atomic_fetch_add(&h->bad_order, 1);
            h->part_next[j.part]++;
            jitter(ch->seq + j.part);
            ps_ring_lock(&h->ring);
            ch->parts_seen++;
            ps_ring_done_locked(&h->ring, &j, false);
            ps_ring_unlock(&h->ring);
        } else {
            atomic_fetch_add(&ch->observed, 1);
            ps_ring_done(&h->ring, &j, false);
        }
    }
    return NULL;
}

typedef struct follower_arg {
    harness *h;
    size_t k;
} follower_arg;

static void *follower(void *arg)
{
    follower_arg *a = arg;
    harness *h = a->h;
    size_t s;
    while (ps_ring_follow(&h->ring, a->k, &s)) {
        if (h->chunks[s].seq != h->follow_next[a->k])
            atomic_fetch_add(&h->bad_order, 1);
        h->follow_next[a->k]++;
        ps_ring_followed(&h->ring, a->k, a->k == 0 && h->chunks[s].seq == h->follower_fail_at);
    }
    return NULL;
}

static follower_arg fargs[FOLLOWERS];

static void start(harness *h, size_t slots, size_t parts, size_t followers, bool observe)
{
    memset(h, 0, sizeof *h);
    h->fail_at = h->follower_fail_at = SIZE_MAX;
    pthread_mutex_init(&h->gate_mu, NULL);
    pthread_cond_init(&h->gate_cv, NULL);
    assert_int_equal(ps_ring_init(&h->ring, slots, parts), 0);
    h->chunks = calloc(slots, sizeof *h->chunks);
    assert_non_null(h->chunks);
    h->nfollowers = followers;
    ps_ring_set_followers(&h->ring, followers);
    ps_ring_set_observe(&h->ring, observe);
}

static void spawn(harness *h)
{
    for (size_t i = 0; i < WORKERS; i++)
        assert_int_equal(pthread_create(&h->workers[i], NULL, worker, h), 0);
    for (size_t k = 0; k < h->nfollowers; k++) {
        fargs[k] = (follower_arg){h, k};
        assert_int_equal(pthread_create(&h->followers[k], NULL, follower, &fargs[k]), 0);
    }
}

static void finish(harness *h, bool threads)
{
    ps_ring_stop(&h->ring);
    for (size_t i = 0; threads && i < WORKERS; i++)
        pthread_join(h->workers[i], NULL);
    for (size_t k = 0; threads && k < h->nfollowers; k++)
        pthread_join(h->followers[k], NULL);
    free(h->chunks);
    ps_ring_destroy(&h->ring);
    pthread_mutex_destroy(&h->gate_mu);
    pthread_cond_destroy(&h->gate_cv);
}

/* The real data the chunks carry: Spider dev's lines. */
static char *data;
static size_t data_len;

static int setup(void **state)
{
    (void)state;
    data = (char *)ps_test_read_file(ps_test_data("spider/dev.json"), &data_len);
    return data && data_len ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    free(data);
    return 0;
}

/* Runs the calling thread's loop over the data's lines: commits append
 * the line to `out`; stops at a chunk's error, a failure, or when
 * *cancel is set. Returns the chunks committed. */
typedef struct run_result {
    size_t committed;
    int last_step;
    bool chunk_failed;
} run_result;

static run_result run_main(harness *h, char *out, bool inline_work)
{
    run_result res = {0, -1, false};
    size_t pos = 0, seq = 0, olen = 0;
    for (;;) {
        size_t s;
        int step = ps_ring_next(&h->ring, pos == data_len, &s);
        res.last_step = step;
        if (step == PS_RING_DRAINED || step == PS_RING_FAILED)
            break;
        if (step == PS_RING_WAITED)
            continue;
        tchunk *ch = &h->chunks[s];
        if (step == PS_RING_COMMIT) {
            ps_ring_lock(&h->ring);
            int rc = ch->rc;
            int parts_seen = ch->parts_seen;
            ps_ring_unlock(&h->ring);
            assert_int_equal(parts_seen, (int)h->ring.turns.n);
            assert_int_equal(ch->seq, res.committed);
            assert_true(ch->sum == checksum(ch->line, ch->len));
            ps_ring_committed(&h->ring);
            if (rc) {
                res.chunk_failed = true;
                break;
            }
            memcpy(out + olen, ch->line, ch->len);
            olen += ch->len;
            res.committed++;
            continue;
        }
        const char *nl = memchr(data + pos, '\n', data_len - pos);
        size_t len = nl ? (size_t)(nl - (data + pos)) + 1 : data_len - pos;
        memset(ch, 0, sizeof *ch);
        ch->seq = seq++;
        ch->line = data + pos;
        ch->len = len;
        pos += len;
        if (inline_work) { /* the calling thread works it and looks its parts up */
            ch->sum = checksum(ch->line, ch->len);
            ch->parts_seen = (int)h->ring.turns.n;
        }
        ps_ring_filled(&h->ring, inline_work);
    }
    return res;
}

static size_t data_lines(void)
{
    size_t n = 0;
    for (size_t i = 0; i < data_len; i++)
        n += data[i] == '\n';
    return n + (data_len && data[data_len - 1] != '\n');
}

static void order_kept_with_many_threads(void **state)
{
    (void)state;
    harness h;
    start(&h, 2 * WORKERS + 2, PARTS, FOLLOWERS, true);
    spawn(&h);
    char *out = malloc(data_len);
    run_result res = run_main(&h, out, false);
    assert_int_equal(res.last_step, PS_RING_DRAINED);
    size_t lines = data_lines();
    assert_true(lines > 1000);
    assert_int_equal(res.committed, lines);
    assert_memory_equal(out, data, data_len); /* in order, byte for byte */
    ps_ring_stop(&h.ring);
    for (size_t i = 0; i < WORKERS; i++)
        pthread_join(h.workers[i], NULL);
    for (size_t k = 0; k < FOLLOWERS; k++) {
        pthread_join(h.followers[k], NULL);
        assert_int_equal(h.follow_next[k], lines); /* every chunk, in order */
    }
    for (size_t k = 0; k < PARTS; k++)
        assert_int_equal(h.part_next[k], lines);
    assert_int_equal(atomic_load(&h.bad_order), 0);
    assert_int_equal(atomic_load(&h.worked), lines);
    free(out);
    finish(&h, false);
}

/* Without workers (one thread): the calling thread works each chunk. */
static void inline_work_drains(void **state)
{
    (void)state;
    harness h;
    start(&h, 4, PARTS, 0, false);
    char *out = malloc(data_len);
    run_result res = run_main(&h, out, true);
    assert_int_equal(res.last_step, PS_RING_DRAINED);
    assert_int_equal(res.committed, data_lines());
    assert_memory_equal(out, data, data_len);
    free(out);
    finish(&h, false);
}

/* A chunk's error: every chunk before it is committed, none after. */
static void chunk_error_stops(void **state)
{
    (void)state;
    harness h;
    start(&h, 2 * WORKERS + 2, PARTS, FOLLOWERS, true);
    h.fail_at = 500;
    spawn(&h);
    char *out = malloc(data_len);
    run_result res = run_main(&h, out, false);
    assert_true(res.chunk_failed);
    assert_int_equal(res.committed, 500);
    finish(&h, true);
    free(out);
}

/* A follower's failure: the calling thread is told (PS_RING_FAILED) and
 * no more than a ring's worth of chunks is committed past it. */
static void follower_failure_stops(void **state)
{
    (void)state;
    harness h;
    start(&h, 2 * WORKERS + 2, 0, FOLLOWERS, false);
    h.follower_fail_at = 300;
    spawn(&h);
    char *out = malloc(data_len);
    run_result res = run_main(&h, out, false);
    assert_int_equal(res.last_step, PS_RING_FAILED);
    assert_true(res.committed > 300);
    assert_true(res.committed <= 301 + h.ring.n);
    finish(&h, true);
    assert_int_equal(h.follow_next[0], 301); /* it got none after its failure */
    free(out);
}

static volatile sig_atomic_t cancelled;

static void on_signal(int sig)
{
    (void)sig;
    cancelled = 1; /* as the CLI's handler sets the build's flag */
}

/* Cancellation on a signal: with the ring full and every worker holding a
 * chunk, the calling thread sees the flag and stops the ring; the workers
 * finish the chunks they hold and leave, and the queued ones are never
 * worked. */
static void cancellation_stops_workers(void **state)
{
    (void)state;
    harness h;
    start(&h, 2 * WORKERS + 2, PARTS, 0, false);
    h.gated = true;
    cancelled = 0;
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGUSR1, &sa, &old);
    spawn(&h);
    size_t filled = 0;
    while (filled < h.ring.n) { /* a full ring would wait: the gate holds the workers */
        size_t s;
        assert_int_equal(ps_ring_next(&h.ring, false, &s), PS_RING_FILL);
        memset(&h.chunks[s], 0, sizeof h.chunks[s]);
        h.chunks[s].seq = filled++;
        ps_ring_filled(&h.ring, false);
    }
    while (atomic_load(&h.taken) < WORKERS) {
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
    raise(SIGUSR1);
    assert_true(cancelled);
    ps_ring_stop(&h.ring);
    pthread_mutex_lock(&h.gate_mu);
    h.gate_open = true;
    pthread_cond_broadcast(&h.gate_cv);
    pthread_mutex_unlock(&h.gate_mu);
    sigaction(SIGUSR1, &old, NULL);
    finish(&h, true);
    assert_int_equal(filled, 2 * WORKERS + 2);
    assert_int_equal(atomic_load(&h.worked), WORKERS); /* those held, no more */
}

/* Idle workers and followers wait on condition variables: 200 ms with
 * nothing to do costs next to no CPU. */
static void idle_threads_sleep(void **state)
{
    (void)state;
    harness h;
    start(&h, 2 * WORKERS + 2, PARTS, FOLLOWERS, true);
    spawn(&h);
    struct timespec a, b, d = {0, 200000000};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
    nanosleep(&d, NULL);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
    double cpu = (double)(b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9;
    finish(&h, true);
    assert_true(cpu < 0.05);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(order_kept_with_many_threads),
        cmocka_unit_test(inline_work_drains),
        cmocka_unit_test(chunk_error_stops),
        cmocka_unit_test(follower_failure_stops),
        cmocka_unit_test(cancellation_stops_workers),
        cmocka_unit_test(idle_threads_sleep),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
