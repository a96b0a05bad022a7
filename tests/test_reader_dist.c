/* Tests of the reader (include/pairshard/reader.h): distributed reading: exact
 * coverage across world sizes, round-robin dealing, drop_last, RANK/WORLD_SIZE
 * from the environment. The sets and the reference decode are
 * tests/support/reader_fixture.c. */
#include "tests/support/reader_fixture.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void test_world_sizes(void **state)
{
    (void)state;
    static const int worlds[] = {2, 3, 7};
    for (size_t w = 0; w < sizeof worlds / sizeof *worlds; w++) {
        int W = worlds[w];
        run runs[7];
        uint64_t per_rank = 0, records = 0;
        for (int k = 0; k < W; k++) {
            ps_reader_options o;
            base_opts(&o);
            o.world_size = W;
            o.rank = k;
            o.seed = 11;
            ps_reader_info in;
            ps_reader *r = open_info(g_ref.dir, &o, &in);
            assert_int_equal(in.rank, k);
            assert_int_equal(in.world_size, W);
            memset(&runs[k], 0, sizeof runs[k]);
            drain(r, &o, &runs[k], ALL);
            ps_reader_close(r);
            assert_int_equal(runs[k].errors, 0);
            assert_int_equal(runs[k].n, in.batches_per_epoch);
            assert_int_equal(runs[k].records, in.records_per_epoch);
            for (size_t i = 0; i < runs[k].n; i++)
                assert_int_equal(runs[k].v[i].step, i);
            if (k == 0)
                per_rank = runs[k].n;
            if (runs[k].n != per_rank)
                fail_msg("world %d: rank %d has %zu batches, rank 0 %llu", W, k, runs[k].n,
                         (unsigned long long)per_rank);
            records += runs[k].records;
        }
        assert_int_equal(records, g_ref.n);
        expect_exact(runs, (size_t)W); /* disjoint, and the union is the set */
        for (int k = 0; k < W; k++)
            run_free(&runs[k]);
    }
}

/* Without splits (the world-1 batch count divisible by W), rank k's batch i
 * is global batch i * W + k: the world-1 sequence dealt round-robin. */
static void test_round_robin(void **state)
{
    (void)state;
    size_t tried = 0;
    for (uint32_t bs = 8; bs <= 40 && tried < 8; bs++) {
        ps_reader_options o;
        base_opts(&o);
        o.batch_size = bs;
        o.seed = 77;
        run one;
        epoch_run(g_ref.dir, &o, &one);
        for (int W = 2; W <= 7; W++) {
            if (one.n % (size_t)W)
                continue;
            tried++;
            for (int k = 0; k < W; k++) {
                ps_reader_options ok = o;
                ok.world_size = W;
                ok.rank = k;
                run rk;
                epoch_run(g_ref.dir, &ok, &rk);
                assert_int_equal(rk.n, one.n / (size_t)W);
                for (size_t i = 0; i < rk.n; i++)
                    if (rk.v[i].digest != one.v[i * (size_t)W + (size_t)k].digest)
                        fail_msg("batch %u world %d rank %d: batch %zu is not global batch %zu",
                                 bs, W, k, i, i * (size_t)W + (size_t)k);
                run_free(&rk);
            }
        }
        run_free(&one);
    }
    assert_true(tried >= 3);
}

static void test_drop_last(void **state)
{
    (void)state;
    static const int worlds[] = {1, 3, 7};
    for (size_t w = 0; w < sizeof worlds / sizeof *worlds; w++) {
        int W = worlds[w];
        uint64_t delivered = 0, dropped = 0, per_rank = 0;
        unsigned *seen = calloc(g_ref.n, sizeof *seen);
        for (int k = 0; k < W; k++) {
            ps_reader_options o;
            base_opts(&o);
            o.batch_size = 24;
            o.world_size = W;
            o.rank = k;
            o.drop_last = 1;
            run rn;
            ps_reader_info in;
            ps_reader *r = open_info(g_ref.dir, &o, &in);
            memset(&rn, 0, sizeof rn);
            drain(r, &o, &rn, ALL);
            ps_reader_close(r);
            assert_int_equal(rn.errors, 0);
            if (k == 0) {
                per_rank = rn.n;
                dropped = in.records_dropped;
            }
            assert_int_equal(rn.n, per_rank);
            assert_int_equal(in.records_dropped, dropped);
            assert_int_equal(rn.records, in.records_per_epoch);
            for (size_t i = 0; i < rn.n; i++) {
                if (rn.v[i].B != 24)
                    fail_msg("drop_last world %d rank %d batch %zu has %u records", W, k, i,
                             rn.v[i].B);
                for (uint32_t j = 0; j < rn.v[i].B; j++)
                    seen[rn.v[i].idx[j]]++;
            }
            delivered += rn.records;
            run_free(&rn);
        }
        for (size_t i = 0; i < g_ref.n; i++)
            assert_true(seen[i] <= 1);
        assert_true(delivered > 0);
        if (dropped != g_ref.n - delivered)
            fail_msg("world %d: info says %llu dropped, %llu of %zu delivered", W,
                     (unsigned long long)dropped, (unsigned long long)delivered, g_ref.n);
        free(seen);
    }
}

static void test_env_rank(void **state)
{
    (void)state;
    ps_reader_options o;
    base_opts(&o);
    o.world_size = 3;
    o.rank = 2;
    run want;
    epoch_run(g_ref.dir, &o, &want);
    o.rank = PS_FROM_ENV;
    o.world_size = PS_FROM_ENV;
    setenv("RANK", "2", 1);
    setenv("WORLD_SIZE", "3", 1);
    ps_reader_info in;
    ps_reader *r = open_info(g_ref.dir, &o, &in);
    assert_int_equal(in.rank, 2);
    assert_int_equal(in.world_size, 3);
    run got = {0};
    drain(r, &o, &got, ALL);
    ps_reader_close(r);
    assert_int_equal(got.n, want.n);
    assert_true(same_digests(&got, 0, &want, 0, want.n));
    /* out of range in the environment */
    setenv("RANK", "3", 1);
    ps_error err;
    ps_error_clear(&err);
    r = NULL;
    assert_int_equal(ps_reader_open(g_ref.dir, &o, NULL, &r, &err), PS_EUSAGE);
    assert_true(err.message[0] != 0);
    /* not numbers */
    static const char *const junk[][2] = {{"abc", "3"}, {"1", "4x"}, {"-1", "3"}, {"1", "two"},
                                          {"0", ""},    {" 1", "3"}, {"+1", "3"}};
    for (size_t i = 0; i < sizeof junk / sizeof *junk; i++) {
        setenv("RANK", junk[i][0], 1);
        setenv("WORLD_SIZE", junk[i][1], 1);
        ps_error_clear(&err);
        r = NULL;
        int rc = ps_reader_open(g_ref.dir, &o, NULL, &r, &err);
        if (rc != PS_EUSAGE)
            fail_msg("RANK='%s' WORLD_SIZE='%s': %s, expected PS_EUSAGE", junk[i][0], junk[i][1],
                     ps_err_name(rc));
        assert_true(strstr(err.message, "RANK") != NULL || strstr(err.message, "WORLD_SIZE"));
    }
    /* unset: rank 0 of 1 */
    unsetenv("RANK");
    unsetenv("WORLD_SIZE");
    r = open_ok(g_ref.dir, &o, NULL);
    ps_reader_get_info(r, &in);
    assert_int_equal(in.rank, 0);
    assert_int_equal(in.world_size, 1);
    ps_reader_close(r);
    run_free(&want);
    run_free(&got);
}

int main(void)
{
    /* A reader that deadlocks fails the suite instead of hanging it. */
    alarm(900);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_world_sizes),
        cmocka_unit_test(test_round_robin),
        cmocka_unit_test(test_drop_last),
        cmocka_unit_test(test_env_rank),
    };
    return cmocka_run_group_tests_name("reader_dist", tests, reader_fixture_setup,
                                       reader_fixture_teardown);
}
