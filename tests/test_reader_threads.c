/* Tests of the reader (include/pairshard/reader.h): readers in several threads
 * at once, and open/close churn with batches held. The sets and the reference
 * decode are tests/support/reader_fixture.c. */
#include "tests/support/reader_fixture.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct par_arg {
    int rank, world;
    unsigned *seen;   /* per reference record */
    size_t unknown;   /* ids not in the set */
    run rn;
} par_arg;

static void *par_main(void *p)
{
    par_arg *a = p;
    ps_reader_options o;
    base_opts(&o);
    o.rank = a->rank;
    o.world_size = a->world;
    o.threads = 3;
    o.prefetch = 3;
    ps_reader *r = NULL;
    if (ps_reader_open(g_ref.dir, &o, NULL, &r, NULL) != 0)
        return NULL;
    for (uint64_t e = 0; e < 2; e++) {
        if (e)
            ps_reader_set_epoch(r, e, NULL);
        for (;;) {
            const ps_batch *b = NULL;
            int rc = ps_reader_next(r, &b, NULL);
            if (rc <= 0)
                break;
            /* only counting here: cmocka asserts are not thread-safe */
            for (uint32_t i = 0; i < b->B; i++) {
                long k = ref_find(&g_ref, b->ids[i]);
                if (k < 0)
                    a->unknown++;
                else
                    a->seen[k]++;
            }
            a->rn.records += b->B;
            a->rn.real_tokens += b->real_tokens;
            ps_batch_release(r, b);
        }
    }
    ps_reader_close(r);
    return a;
}

static void test_readers_in_threads(void **state)
{
    (void)state;
    enum { W = 4 };
    pthread_t th[W];
    par_arg args[W];
    for (int k = 0; k < W; k++) {
        memset(&args[k], 0, sizeof args[k]);
        args[k].rank = k;
        args[k].world = W;
        args[k].seen = calloc(g_ref.n, sizeof *args[k].seen);
        assert_int_equal(pthread_create(&th[k], NULL, par_main, &args[k]), 0);
    }
    uint64_t records = 0, tokens = 0, want_tokens = 0;
    for (int k = 0; k < W; k++) {
        void *res = NULL;
        pthread_join(th[k], &res);
        assert_non_null(res);
        records += args[k].rn.records;
        tokens += args[k].rn.real_tokens;
    }
    for (size_t i = 0; i < g_ref.n; i++) {
        want_tokens += g_ref.v[i].len;
        unsigned total = 0;
        for (int k = 0; k < W; k++)
            total += args[k].seen[i];
        if (total != 2)
            fail_msg("4 readers in threads, 2 epochs: record %s delivered %u times",
                     g_ref.v[i].id, total);
    }
    for (int k = 0; k < W; k++) {
        assert_int_equal(args[k].unknown, 0);
        free(args[k].seen);
    }
    assert_int_equal(records, 2 * g_ref.n);
    assert_int_equal(tokens, 2 * want_tokens);
}

static void test_open_close_churn(void **state)
{
    (void)state;
    /* closing at every stage: nothing taken, batches held, mid-epoch */
    for (int i = 0; i < 24; i++) {
        ps_reader_options o;
        base_opts(&o);
        o.threads = 1 + i % 4;
        o.prefetch = 2 + i % 7;
        o.seed = (uint64_t)i;
        ps_reader *r = open_ok(g_ref.dir, &o, NULL);
        const ps_batch *b[3];
        int take = i % 4;
        for (int k = 0; k < take && k < o.prefetch; k++)
            assert_int_equal(ps_reader_next(r, &b[k], NULL), 1);
        if (i % 5 == 0 && take)
            ps_batch_release(r, b[0]);
        ps_reader_close(r); /* held batches freed too */
    }
}

int main(void)
{
    /* A reader that deadlocks fails the suite instead of hanging it. */
    alarm(900);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_readers_in_threads),
        cmocka_unit_test(test_open_close_churn),
    };
    return cmocka_run_group_tests_name("reader_threads", tests, reader_fixture_setup,
                                       reader_fixture_teardown);
}
