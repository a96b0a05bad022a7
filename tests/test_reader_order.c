/* Tests of the reader (include/pairshard/reader.h): the order: shuffling off
 * and on, the shuffle window, epochs and seeds, changing the epoch while
 * batches are held. The sets and the reference decode are
 * tests/support/reader_fixture.c. */
#include "tests/support/reader_fixture.h"

#include <stdbool.h>
#include <string.h>
#include <unistd.h>

static void test_shuffle_off(void **state)
{
    (void)state;
    ps_reader_options o;
    base_opts(&o);
    o.shuffle = 0;
    o.sort_pool = 1; /* sorting pools apply without shuffle too (docs/READER.md) */
    run a, b;
    epoch_run(g_ref.dir, &o, &a);
    o.epoch = 3;
    o.seed = 99;
    epoch_run(g_ref.dir, &o, &b);
    assert_int_equal(a.n, b.n);
    assert_true(same_digests(&a, 0, &b, 0, a.n)); /* no randomness left */
    expect_exact(&a, 1);
    /* bucket by bucket; within a bucket each shard's records in stored
     * order */
    uint32_t last_seq[8], last_pos[8];
    long last_bucket = -1;
    for (size_t i = 0; i < a.n; i++) {
        assert_true((long)a.v[i].bucket >= last_bucket);
        if ((long)a.v[i].bucket != last_bucket) {
            last_bucket = a.v[i].bucket;
            memset(last_seq, 0, sizeof last_seq);
            memset(last_pos, 0, sizeof last_pos);
            for (int s = 0; s < 8; s++)
                last_pos[s] = UINT32_MAX;
        }
        for (uint32_t j = 0; j < a.v[i].B; j++) {
            const ref_rec *r = &g_ref.v[a.v[i].idx[j]];
            assert_true(r->shard < 8);
            bool after = last_pos[r->shard] == UINT32_MAX || r->seq > last_seq[r->shard] ||
                         (r->seq == last_seq[r->shard] && r->pos > last_pos[r->shard]);
            if (!after)
                fail_msg("shuffle off: record %s (shard %u block %u #%u) after block %u #%u", r->id,
                         r->shard, r->seq, r->pos, last_seq[r->shard], last_pos[r->shard]);
            last_seq[r->shard] = r->seq;
            last_pos[r->shard] = r->pos;
        }
    }
    run_free(&a);
    run_free(&b);
}

/* Blocks a batch's records come from. */
static size_t blocks_of(const cap *c)
{
    uint64_t keys[256];
    size_t n = 0;
    for (uint32_t j = 0; j < c->B && n < 256; j++) {
        const ref_rec *r = &g_ref.v[c->idx[j]];
        uint64_t k = (uint64_t)r->shard << 40 | (uint64_t)r->bucket << 32 | r->seq;
        size_t i = 0;
        while (i < n && keys[i] != k)
            i++;
        if (i == n)
            keys[n++] = k;
    }
    return n;
}

/* shuffle_window bounds the mixing: with one block a window (and no
 * sorting pools), a batch of 8 consecutive records of the bucket's
 * sequence spans few blocks (at most 4: partial blocks are one a shard and
 * bucket); with the default 16-block windows, records of many blocks
 * meet in one batch. */
static void test_shuffle_window(void **state)
{
    (void)state;
    ps_reader_options o;
    base_opts(&o);
    o.batch_size = 8;
    o.sort_pool = 1;
    o.shuffle_window = 1;
    run a, b;
    epoch_run(g_ref.dir, &o, &a);
    o.shuffle_window = 0;
    epoch_run(g_ref.dir, &o, &b);
    expect_exact(&a, 1);
    expect_exact(&b, 1);
    size_t max_a = 0, max_b = 0;
    for (size_t i = 0; i < a.n; i++)
        if (blocks_of(&a.v[i]) > max_a)
            max_a = blocks_of(&a.v[i]);
    for (size_t i = 0; i < b.n; i++)
        if (blocks_of(&b.v[i]) > max_b)
            max_b = blocks_of(&b.v[i]);
    if (max_a > 4 || max_b <= 4)
        fail_msg("blocks in one batch: at most %zu with 1-block windows, %zu with 16", max_a,
                 max_b);
    run_free(&a);
    run_free(&b);
}

static void test_epochs_and_seeds(void **state)
{
    (void)state;
    ps_reader_options o;
    base_opts(&o);
    o.seed = 42;
    run e0, e1, e0b, s2;
    epoch_run(g_ref.dir, &o, &e0);
    o.epoch = 1;
    epoch_run(g_ref.dir, &o, &e1);
    o.epoch = 0;
    o.seed = 43;
    epoch_run(g_ref.dir, &o, &s2);
    expect_exact(&e1, 1);
    expect_exact(&s2, 1);
    assert_false(e0.n == e1.n && same_digests(&e0, 0, &e1, 0, e0.n));
    assert_false(e0.n == s2.n && same_digests(&e0, 0, &s2, 0, e0.n));

    /* set_epoch on one reader: the same plans as fresh readers, again and
     * again, and also when switching in the middle of an epoch */
    o.seed = 42;
    ps_reader *r = open_ok(g_ref.dir, &o, NULL);
    memset(&e0b, 0, sizeof e0b);
    drain(r, &o, &e0b, 5);
    assert_int_equal(ps_reader_set_epoch(r, 1, NULL), 0);
    ps_reader_info in;
    ps_reader_get_info(r, &in);
    assert_int_equal(in.epoch, 1);
    run x = {0};
    drain(r, &o, &x, ALL);
    assert_int_equal(x.n, e1.n);
    assert_true(same_digests(&x, 0, &e1, 0, e1.n));
    for (size_t i = 0; i < x.n; i++) {
        assert_int_equal(x.v[i].epoch, 1);
        assert_int_equal(x.v[i].step, i);
    }
    run_free(&x);
    assert_int_equal(ps_reader_set_epoch(r, 0, NULL), 0);
    memset(&x, 0, sizeof x);
    drain(r, &o, &x, ALL);
    assert_int_equal(x.n, e0.n);
    assert_true(same_digests(&x, 0, &e0, 0, e0.n));
    run_free(&x);
    ps_reader_stats st;
    ps_reader_get_stats(r, &st);
    assert_int_equal(st.batches, 5 + e1.n + e0.n); /* counters survive epochs */
    ps_reader_close(r);
    assert_true(same_digests(&e0b, 0, &e0, 0, 5));
    run_free(&e0);
    run_free(&e1);
    run_free(&e0b);
    run_free(&s2);
}

static void test_set_epoch_while_holding(void **state)
{
    (void)state;
    ps_reader_options o;
    base_opts(&o);
    o.prefetch = 4;
    run e1;
    o.epoch = 1;
    epoch_run(g_ref.dir, &o, &e1);
    o.epoch = 0;
    ps_reader *r = open_ok(g_ref.dir, &o, NULL);
    const ps_batch *held = NULL;
    assert_int_equal(ps_reader_next(r, &held, NULL), 1);
    uint64_t d = batch_digest(held);
    assert_int_equal(ps_reader_set_epoch(r, 1, NULL), 0);
    run x = {0};
    drain(r, &o, &x, ALL);
    assert_int_equal(batch_digest(held), d); /* still valid, untouched */
    ps_batch_release(r, held);
    assert_int_equal(x.n, e1.n);
    assert_true(same_digests(&x, 0, &e1, 0, e1.n));
    ps_reader_close(r);
    run_free(&x);
    run_free(&e1);
}

int main(void)
{
    /* A reader that deadlocks fails the suite instead of hanging it. */
    alarm(900);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shuffle_off),
        cmocka_unit_test(test_shuffle_window),
        cmocka_unit_test(test_epochs_and_seeds),
        cmocka_unit_test(test_set_epoch_while_holding),
    };
    return cmocka_run_group_tests_name("reader_order", tests, reader_fixture_setup,
                                       reader_fixture_teardown);
}
