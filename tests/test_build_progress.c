/* The build's progress callback (pipeline/build.h, ps_build_config.progress):
 * the library reports records, bytes, MB/s and ETA to the caller instead of
 * printing them, at most every 0.5 s while phase 1 reads and once at the
 * end. A FIFO fed a chunk every 0.2 s makes the build dispatch chunks more
 * often than it may report, so the reports must be throttled and some come
 * before the end; a regular file shows the total it knows. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "pipeline/build.h"
#include "tests/support/build_fixture.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define BURST 1024 /* records per write to the FIFO: one chunk (CHUNK_RECORDS) */
#define BURSTS 7
#define TOTAL (BURST * BURSTS)
#define MAX_CALLS 64

typedef struct calls {
    ps_build_progress p[MAX_CALLS];
    size_t n;
} calls;

static void record(void *user, const ps_build_progress *p)
{
    calls *c = user;
    if (c->n < MAX_CALLS)
        c->p[c->n] = *p;
    c->n++;
}

/* Appends records [from, to) as JSONL to `b`. */
static size_t jsonl(char *b, size_t cap, int from, int to)
{
    size_t n = 0;
    for (int i = from; i < to; i++)
        n += (size_t)snprintf(b + n, cap - n,
                              "{\"id\":\"r%d\",\"question\":\"how many rows in table %d\","
                              "\"sql\":\"SELECT count(*) FROM t%d\",\"label\":\"db%d\"}\n",
                              i, i, i, i % 3);
    return n;
}

typedef struct feeder {
    const char *fifo;
    size_t written;
} feeder;

/* Writes a chunk's worth of records every 0.2 s: chunks are dispatched
 * more often than the 0.5 s between reports allows. */
static void *feed(void *arg)
{
    feeder *f = arg;
    static char buf[BURST * 160];
    FILE *o = fopen(f->fifo, "w");
    if (!o)
        return NULL;
    for (int k = 0; k < BURSTS; k++) {
        if (k) {
            struct timespec pause = {0, 200 * 1000 * 1000};
            nanosleep(&pause, NULL);
        }
        size_t n = jsonl(buf, sizeof buf, k * BURST, (k + 1) * BURST);
        f->written += fwrite(buf, 1, n, o);
        fflush(o);
    }
    fclose(o);
    return NULL;
}

static void run_build(const char *input, const char *out, calls *c)
{
    ps_test_bert_build b;
    ps_test_bert_build_init(&b, input, out);
    b.cfg.max_length = 64;
    b.cfg.threads = 2;
    b.cfg.no_gate = 1;
    b.cfg.progress = record;
    b.cfg.progress_user = c;
    ps_build_summary sum;
    memset(&sum, 0, sizeof sum);
    ps_error err;
    ps_error_clear(&err);
    int rc = ps_build_run(&b.cfg, &sum, &err);
    if (rc)
        print_message("build: %s\n", err.message);
    assert_int_equal(rc, 0);
    assert_int_equal(sum.counts.records_in, TOTAL);
    free(sum.report_summary);
    ps_test_bert_build_free(&b);
}

/* What holds for every sequence of reports. */
static void check_sequence(const calls *c, uint64_t bytes, uint64_t total)
{
    assert_true(c->n >= 1 && c->n <= MAX_CALLS);
    for (size_t i = 0; i < c->n; i++) {
        const ps_build_progress *p = &c->p[i];
        assert_int_equal(p->final, i + 1 == c->n); /* one final report, the last */
        assert_int_equal(p->total_bytes, total);
        assert_true(p->bytes <= bytes && p->records <= TOTAL);
        assert_true(p->seconds >= 0);
        if (p->seconds > 0)
            assert_true(p->mb_per_s > 0.99 * (double)p->bytes / p->seconds / 1e6 &&
                        p->mb_per_s < 1.01 * (double)p->bytes / p->seconds / 1e6 + 1e-12);
        if (i == 0)
            continue;
        const ps_build_progress *q = &c->p[i - 1];
        assert_true(p->records >= q->records && p->bytes >= q->bytes);
        if (!p->final) /* at most every 0.5 s */
            assert_true(p->seconds - q->seconds >= 0.5 - 1e-6);
    }
    const ps_build_progress *last = &c->p[c->n - 1];
    assert_int_equal(last->records, TOTAL);
    assert_int_equal(last->bytes, bytes);
    assert_true(last->eta_seconds < 0); /* nothing left to estimate */
}

static void test_fifo_reports_before_the_end(void **state)
{
    (void)state;
    char dir[PATH_MAX - 16], fifo[PATH_MAX], out[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/ps-progress-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    assert_non_null(mkdtemp(dir));
    snprintf(fifo, sizeof fifo, "%s/in.jsonl", dir);
    snprintf(out, sizeof out, "%s/set", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    feeder f = {fifo, 0};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, feed, &f), 0);
    calls c = {.n = 0};
    run_build(fifo, out, &c);
    pthread_join(t, NULL);
    check_sequence(&c, f.written, 0); /* a FIFO has no known total */
    /* Reading took 1.2 s at least: reports came while phase 1 was still
     * reading (not final, no ETA without a total, part of the records),
     * but no more than one per 0.5 s (check_sequence), not one per chunk. */
    assert_true(c.n >= 2);
    assert_true((double)(c.n - 1) <= c.p[c.n - 1].seconds / 0.5 + 1e-9);
    assert_false(c.p[0].final);
    assert_true(c.p[0].eta_seconds < 0);
    assert_true(c.p[0].records < TOTAL);
    assert_true(c.p[0].seconds >= 0.5);
    unlink(fifo);
    ps_remove_tree(out);
    rmdir(dir);
}

static void test_regular_file_knows_its_total(void **state)
{
    (void)state;
    static char buf[TOTAL * 160];
    size_t n = jsonl(buf, sizeof buf, 0, TOTAL);
    char *in = ps_test_tmpfile(buf, n, ".jsonl");
    char out[PATH_MAX + 8];
    snprintf(out, sizeof out, "%s.set", in);
    calls c = {.n = 0};
    run_build(in, out, &c);
    check_sequence(&c, n, n);
    ps_remove_tree(out);
    unlink(in);
    free(in);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fifo_reports_before_the_end),
        cmocka_unit_test(test_regular_file_knows_its_total),
    };
    return cmocka_run_group_tests_name("build_progress", tests, NULL, NULL);
}
