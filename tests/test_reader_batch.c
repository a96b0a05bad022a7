/* Tests of the reader (include/pairshard/reader.h): the batches: every array
 * against the reference decode, dtypes, labels, padding, sort pools, token
 * budgets, batch counts and the counters. The sets and the reference decode
 * are tests/support/reader_fixture.c. */
#include "tests/support/reader_fixture.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void test_cover_world1(void **state)
{
    (void)state;
    ps_reader_options o;
    base_opts(&o);
    o.batch_size = 32;
    ps_reader_info in;
    ps_reader *r = open_info(g_ref.dir, &o, &in);
    run rn = {0};
    drain(r, &o, &rn, ALL);
    assert_int_equal(rn.errors, 0);
    assert_int_equal(rn.n, in.batches_per_epoch);
    assert_int_equal(rn.records, in.records_total);
    assert_int_equal(in.records_per_epoch, in.records_total);
    for (size_t i = 0; i < rn.n; i++) {
        assert_int_equal(rn.v[i].step, i);
        assert_int_equal(rn.v[i].epoch, 0);
        assert_true(rn.v[i].B <= 32);
    }
    expect_exact(&rn, 1);
    /* After the end, next keeps saying so. */
    const ps_batch *b = NULL;
    assert_int_equal(ps_reader_next(r, &b, NULL), 0);
    /* The buckets are interleaved, not one after another. */
    size_t drops = 0;
    for (size_t i = 1; i < rn.n; i++)
        drops += rn.v[i].bucket < rn.v[i - 1].bucket;
    assert_true(drops > 0);
    ps_reader_close(r);
    run_free(&rn);
}

static void test_threads_prefetch_invariance(void **state)
{
    (void)state;
    static const int tp[][2] = {{2, 4}, {1, 2}, {2, 3}, {4, 8}, {1, 8}, {4, 2}};
    run ref = {0};
    for (size_t c = 0; c < sizeof tp / sizeof *tp; c++) {
        for (int w = 1; w <= 3; w += 2) {
            ps_reader_options o;
            base_opts(&o);
            o.threads = tp[c][0];
            o.prefetch = tp[c][1];
            o.seed = 5;
            o.world_size = w;
            o.rank = w - 1;
            run rn;
            epoch_run(g_ref.dir, &o, &rn);
            ps_reader_info in;
            ps_reader *r = open_info(g_ref.dir, &o, &in);
            assert_int_equal(in.threads, tp[c][0]);
            assert_int_equal(in.slots, (uint32_t)tp[c][1]);
            ps_reader_close(r);
            if (w == 1) {
                if (c == 0) {
                    ref = rn;
                    continue;
                }
                if (rn.n != ref.n || !same_digests(&rn, 0, &ref, 0, ref.n))
                    fail_msg("threads %d prefetch %d: a different epoch", tp[c][0], tp[c][1]);
            }
            run_free(&rn);
        }
    }
    run_free(&ref);
}

static void test_arrays_dtypes(void **state)
{
    (void)state;
    /* check_batch compares every element with the reference decode; the
     * digest is dtype-independent, so both dtypes must agree. */
    ps_reader_options o;
    base_opts(&o);
    o.pad_id = 7;
    o.dtype = PS_DTYPE_INT32;
    run a, b;
    epoch_run(g_ref.dir, &o, &a);
    o.dtype = PS_DTYPE_INT64;
    epoch_run(g_ref.dir, &o, &b);
    assert_int_equal(a.n, b.n);
    assert_true(same_digests(&a, 0, &b, 0, a.n));
    expect_exact(&a, 1);
    /* Some records have a second segment and some are labeled. */
    size_t two = 0, labeled = 0;
    for (size_t i = 0; i < g_ref.n; i++) {
        two += g_ref.v[i].tb < g_ref.v[i].len;
        labeled += g_ref.v[i].label != PS_LABEL_NONE;
    }
    assert_true(two > 0);
    assert_true(labeled > 0);
    run_free(&a);
    run_free(&b);
}

static void test_unlabeled(void **state)
{
    (void)state;
    ps_reader_options o;
    base_opts(&o);
    ps_reader_info in;
    ps_reader *r = open_info(g_dir_c, &o, &in);
    assert_int_equal(in.n_labels, 0);
    assert_null(ps_reader_get_label(r, 0));
    ps_reader_close(r);
    g_unlabeled = true;
    run c, a;
    epoch_run(g_dir_c, &o, &c);
    g_unlabeled = false;
    expect_exact(&c, 1);
    /* the same tokens in the same blocks: the same batches but for labels */
    epoch_run(g_ref.dir, &o, &a);
    assert_int_equal(c.n, a.n);
    for (size_t i = 0; i < a.n; i++) {
        assert_int_equal(c.v[i].B, a.v[i].B);
        assert_memory_equal(c.v[i].idx, a.v[i].idx, a.v[i].B * sizeof *a.v[i].idx);
    }
    run_free(&c);
    run_free(&a);
}

static void test_padding_modes(void **state)
{
    (void)state;
    ps_reader_options o;
    base_opts(&o);
    o.pad_mode = PS_PAD_BUCKET; /* check_batch: T == the bucket's bound */
    run a;
    epoch_run(g_ref.dir, &o, &a);
    expect_exact(&a, 1);
    run_free(&a);

    base_opts(&o);
    o.pad_multiple = 8;        /* T == max length rounded up to 8 */
    o.pad_id = 3;
    epoch_run(g_ref.dir, &o, &a);
    for (size_t i = 0; i < a.n; i++)
        assert_int_equal(a.v[i].T % 8, 0);
    expect_exact(&a, 1);
    run_free(&a);

    base_opts(&o);
    o.pad_mode = PS_PAD_BUCKET;
    o.pad_multiple = 48;       /* bucket bounds rounded up too */
    epoch_run(g_ref.dir, &o, &a);
    for (size_t i = 0; i < a.n; i++)
        assert_int_equal(a.v[i].T % 48, 0);
    run_free(&a);
}

static void test_sort_pool(void **state)
{
    (void)state;
    /* Length-sorting pools exist to cut padding: with them an epoch pads
     * fewer tokens than without, over the same records. */
    ps_reader_options o;
    base_opts(&o);
    o.sort_pool = 1;
    run off, on, big;
    epoch_run(g_ref.dir, &o, &off);
    o.sort_pool = 0; /* 8 */
    epoch_run(g_ref.dir, &o, &on);
    o.sort_pool = 64;
    epoch_run(g_ref.dir, &o, &big);
    expect_exact(&off, 1);
    expect_exact(&on, 1);
    expect_exact(&big, 1);
    assert_int_equal(off.real_tokens, on.real_tokens);
    if (!(on.tokens < off.tokens && big.tokens <= on.tokens))
        fail_msg("padded tokens: %llu without pools, %llu with 8, %llu with 64",
                 (unsigned long long)off.tokens, (unsigned long long)on.tokens,
                 (unsigned long long)big.tokens);
    run_free(&off);
    run_free(&on);
    run_free(&big);
}

static void test_max_tokens(void **state)
{
    (void)state;
    static const uint64_t budgets[] = {1024, 300, 100};
    for (size_t k = 0; k < sizeof budgets / sizeof *budgets; k++) {
        ps_reader_options o;
        base_opts(&o);
        o.batch_size = 0;
        o.max_tokens = budgets[k];
        run a;
        epoch_run(g_ref.dir, &o, &a);
        size_t ones = 0;
        for (size_t i = 0; i < a.n; i++) {
            uint32_t bound = g_ref.bounds[a.v[i].bucket];
            uint64_t bs = budgets[k] / bound ? budgets[k] / bound : 1;
            if ((uint64_t)a.v[i].B * a.v[i].T > budgets[k] && a.v[i].B != 1)
                fail_msg("max_tokens %llu: batch %zu is %u x %u", (unsigned long long)budgets[k],
                         i, a.v[i].B, a.v[i].T);
            assert_true(a.v[i].B <= bs);
            ones += a.v[i].B == 1 && bound > budgets[k];
        }
        if (budgets[k] == 100)
            assert_true(ones > 0); /* the 128 bucket: one sequence a batch */
        expect_exact(&a, 1);
        run_free(&a);
    }
    /* exactly one of batch_size and max_tokens */
    ps_reader_options o;
    base_opts(&o);
    o.max_tokens = 512;
    ps_reader *r;
    ps_error err;
    assert_int_equal(open_rc(g_ref.dir, &o, &r, &err), PS_EUSAGE);
    assert_null(r);
    assert_true(err.message[0] != 0);
    o.max_tokens = 0;
    o.batch_size = 0;
    assert_int_equal(ps_reader_open(g_ref.dir, &o, NULL, &r, &err), PS_EUSAGE);
}

static uint64_t bucket_records(uint32_t b)
{
    uint64_t n = 0;
    for (size_t i = 0; i < g_ref.n; i++)
        n += g_ref.v[i].bucket == b;
    return n;
}

/* The batch counts the contract implies, for many batch sizes and worlds:
 * without drop_last G0 = sum over buckets of ceil(records / B) batches,
 * split until divisible, so ceil(G0 / W) a rank (possible while there are
 * records enough: otherwise PS_EUSAGE); with drop_last the full batches
 * only, F = sum of floor(records / B), floor(F / W) a rank. */
static void test_batch_counts(void **state)
{
    (void)state;
    static const uint32_t sizes[] = {1, 7, 16, 100, 1000, 5000};
    static const int worlds[] = {1, 2, 3, 5, 8, 13};
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
        uint32_t bs = sizes[si];
        uint64_t g0 = 0, full = 0;
        for (uint32_t b = 0; b < g_ref.n_buckets; b++) {
            uint64_t rb = bucket_records(b);
            g0 += (rb + bs - 1) / bs;
            full += rb / bs;
        }
        for (size_t wi = 0; wi < sizeof worlds / sizeof *worlds; wi++) {
            int W = worlds[wi];
            for (int drop = 0; drop <= 1; drop++) {
                uint64_t want = drop ? full / (uint64_t)W : (g0 + (uint64_t)W - 1) / (uint64_t)W;
                bool feasible = drop || want * (uint64_t)W <= g_ref.n;
                run runs[13];
                memset(runs, 0, sizeof runs);
                bool refused = false;
                uint64_t records = 0;
                for (int k = 0; k < W; k++) {
                    ps_reader_options o;
                    base_opts(&o);
                    o.batch_size = bs;
                    o.world_size = W;
                    o.rank = k;
                    o.drop_last = drop;
                    o.seed = bs + (uint64_t)W;
                    ps_reader *r;
                    ps_error err;
                    int rc = open_rc(g_ref.dir, &o, &r, &err);
                    if (drop && want == 0 && rc == PS_EUSAGE) {
                        refused = true; /* nothing for the ranks: refusing is fine too */
                        break;
                    }
                    if (!feasible) {
                        if (rc != PS_EUSAGE)
                            fail_msg("batch %u world %d: %s, expected PS_EUSAGE (%llu batches "
                                     "a rank need more than %zu records)",
                                     bs, W, ps_err_name(rc), (unsigned long long)want, g_ref.n);
                        break;
                    }
                    if (rc != 0)
                        fail_msg("batch %u world %d drop_last %d rank %d: %s: %s", bs, W, drop,
                                 k, ps_err_name(rc), err.message);
                    drain(r, &o, &runs[k], ALL);
                    ps_reader_close(r);
                    if (runs[k].n != want)
                        fail_msg("batch %u world %d drop_last %d rank %d: %zu batches, expected "
                                 "%llu",
                                 bs, W, drop, k, runs[k].n, (unsigned long long)want);
                    for (size_t i = 0; i < runs[k].n; i++) {
                        assert_int_equal(runs[k].v[i].step, i);
                        assert_true(runs[k].v[i].B <= bs);
                        if (drop)
                            assert_int_equal(runs[k].v[i].B, bs);
                    }
                    records += runs[k].records;
                }
                if (feasible && !refused) {
                    if (drop)
                        assert_int_equal(records, want * (uint64_t)W * bs);
                    else
                        expect_exact(runs, (size_t)W);
                }
                for (int k = 0; k < W; k++)
                    run_free(&runs[k]);
            }
        }
    }
}

/* max_tokens: bucket b's batches hold max(1, budget / padded bound)
 * records, all full but the last of each bucket (world 1). */
static void test_max_tokens_sizes(void **state)
{
    (void)state;
    static const uint64_t budgets[] = {2048, 700, 64};
    static const uint32_t multiples[] = {1, 8, 48};
    for (size_t k = 0; k < 3; k++) {
        ps_reader_options o;
        base_opts(&o);
        o.batch_size = 0;
        o.max_tokens = budgets[k];
        o.pad_multiple = multiples[k];
        run a;
        epoch_run(g_ref.dir, &o, &a);
        expect_exact(&a, 1);
        for (uint32_t b = 0; b < g_ref.n_buckets; b++) {
            uint64_t bs = budgets[k] / round_up(g_ref.bounds[b], multiples[k]);
            if (bs == 0)
                bs = 1;
            uint64_t rb = bucket_records(b), batches = 0, partial = 0;
            for (size_t i = 0; i < a.n; i++) {
                if (a.v[i].bucket != b)
                    continue;
                batches++;
                assert_true(a.v[i].B <= bs);
                partial += a.v[i].B < bs;
            }
            if (batches != (rb + bs - 1) / bs || partial > 1)
                fail_msg("max_tokens %llu pad_multiple %u bucket %u (bound %u, %llu records): "
                         "%llu batches (%llu partial), expected %llu of %llu",
                         (unsigned long long)budgets[k], multiples[k], b, g_ref.bounds[b],
                         (unsigned long long)rb, (unsigned long long)batches,
                         (unsigned long long)partial, (unsigned long long)((rb + bs - 1) / bs),
                         (unsigned long long)bs);
        }
        run_free(&a);
    }
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static void test_stats(void **state)
{
    (void)state;
    ps_reader_options o;
    base_opts(&o);
    o.prefetch = 4;
    o.threads = 1;
    ps_reader *r = open_ok(g_ref.dir, &o, NULL);
    /* Given time, the ring fills, and taking what is ready does not wait. */
    ps_reader_stats st;
    for (int i = 0; i < 100; i++) {
        ps_reader_get_stats(r, &st);
        if (st.ready == 4)
            break;
        sleep_ms(20);
    }
    assert_int_equal(st.ready, 4);
    assert_int_equal(st.slots, 4);
    uint64_t waits0 = st.waits;
    const ps_batch *held[4];
    for (int i = 0; i < 4; i++)
        assert_int_equal(ps_reader_next(r, &held[i], NULL), 1);
    ps_reader_get_stats(r, &st);
    assert_int_equal(st.waits, waits0);
    assert_int_equal(st.ready, 0);
    run rn = {0};
    for (int i = 0; i < 4; i++) {
        run_add(&rn, held[i], &o);
        ps_batch_release(r, held[i]);
    }
    drain(r, &o, &rn, ALL);
    /* Two more epochs, consumed as fast as possible: the consumer waits. */
    for (uint64_t e = 1; e <= 2; e++) {
        assert_int_equal(ps_reader_set_epoch(r, e, NULL), 0);
        drain(r, &o, &rn, ALL);
    }
    ps_reader_get_stats(r, &st);
    assert_int_equal(st.batches, rn.n);
    assert_int_equal(st.records, rn.records);
    assert_int_equal(st.records, 3 * g_ref.n);
    assert_int_equal(st.tokens, rn.tokens);
    assert_int_equal(st.real_tokens, rn.real_tokens);
    assert_true(st.waits >= 1);
    assert_true(st.wait_ns > 0);
    assert_true(st.wait_ns >= st.waits); /* at least a nanosecond a wait */
    /* one read of each block per epoch */
    assert_int_equal(st.blocks_decoded, 3 * g_ref.n_blocks);
    assert_true(st.block_bytes > 0);
    assert_true(st.raw_bytes > 0);
    assert_int_equal(st.skipped_batches, 0);
    assert_int_equal(st.skipped_records, 0);
    assert_int_equal(st.h2d_bytes, 0);
    ps_reader_close(r);
    run_free(&rn);
}

int main(void)
{
    /* A reader that deadlocks fails the suite instead of hanging it. */
    alarm(900);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cover_world1),
        cmocka_unit_test(test_threads_prefetch_invariance),
        cmocka_unit_test(test_arrays_dtypes),
        cmocka_unit_test(test_unlabeled),
        cmocka_unit_test(test_padding_modes),
        cmocka_unit_test(test_sort_pool),
        cmocka_unit_test(test_max_tokens),
        cmocka_unit_test(test_max_tokens_sizes),
        cmocka_unit_test(test_batch_counts),
        cmocka_unit_test(test_stats),
    };
    return cmocka_run_group_tests_name("reader_batch", tests, reader_fixture_setup,
                                       reader_fixture_teardown);
}
