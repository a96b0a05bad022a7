/* Bucket bounds: the dynamic programme against brute force on random
 * histograms, and bucket lookup. */
#include "pipeline/build.h"
#include "tests/support/testutil.h"

#include <string.h>

static double padding(const uint64_t *hist, size_t max_len, const uint32_t *b, size_t n)
{
    double pad = 0;
    for (size_t l = 0; l <= max_len; l++) {
        if (!hist[l])
            continue;
        size_t i = ps_bucket_of(b, n, (uint32_t)l);
        if (i == n)
            return -1; /* not covered */
        pad += (double)hist[l] * (b[i] - l);
    }
    return pad;
}

/* Least padding over every choice of at most k candidate bounds that
 * includes the longest length (candidates: multiples of m below it). */
static double brute(const uint64_t *hist, size_t max_len, size_t k, size_t m)
{
    size_t top = 0;
    for (size_t l = 0; l <= max_len; l++)
        if (hist[l])
            top = l;
    uint32_t cand[64];
    size_t nc = 0;
    for (size_t b = m; b < top; b += m)
        cand[nc++] = (uint32_t)b;
    double best = -1;
    for (unsigned mask = 0; mask < (1u << nc); mask++) {
        if ((size_t)__builtin_popcount(mask) + 1 > k)
            continue;
        uint32_t b[64];
        size_t n = 0;
        for (size_t i = 0; i < nc; i++)
            if (mask & (1u << i))
                b[n++] = cand[i];
        b[n++] = (uint32_t)top;
        double p = padding(hist, max_len, b, n);
        if (best < 0 || p < best)
            best = p;
    }
    return best;
}

static void test_dp_is_optimal(void **state)
{
    (void)state;
    unsigned seed = 7;
    for (int t = 0; t < 400; t++) {
        uint64_t hist[97] = {0};
        size_t max_len = 96;
        int nrec = 1 + (int)((seed = seed * 1103515245u + 12345u) >> 26);
        for (int r = 0; r < nrec; r++) {
            seed = seed * 1103515245u + 12345u;
            hist[2 + (seed >> 8) % 95] += 1 + (seed & 7);
        }
        size_t k = 1 + t % 6, m = 8;
        uint32_t b[PS_BUILD_MAX_BUCKETS];
        size_t n = ps_buckets_choose(hist, max_len, k, m, b);
        assert_true(n >= 1 && n <= k);
        for (size_t i = 1; i < n; i++)
            assert_true(b[i] > b[i - 1]);
        for (size_t i = 0; i + 1 < n; i++)
            assert_int_equal(b[i] % m, 0);
        double got = padding(hist, max_len, b, n), want = brute(hist, max_len, k, m);
        assert_true(got >= 0);
        if (got != want)
            fail_msg("case %d: padding %.0f, optimum %.0f", t, got, want);
    }
}

static void test_edges(void **state)
{
    (void)state;
    uint64_t hist[40] = {0};
    uint32_t b[PS_BUILD_MAX_BUCKETS];
    assert_int_equal(ps_buckets_choose(hist, 39, 8, 8, b), 0); /* no records */
    hist[5] = 10; /* one length: one bucket, exactly it */
    assert_int_equal(ps_buckets_choose(hist, 39, 8, 8, b), 1);
    assert_int_equal(b[0], 5);
    hist[37] = 1;
    size_t n = ps_buckets_choose(hist, 39, 8, 8, b);
    assert_int_equal(b[n - 1], 37);
    assert_int_equal(padding(hist, 39, b, n), 3 * 10); /* 5 -> 8 */
    /* lookup: first bound >= len */
    uint32_t bounds[] = {16, 32, 64};
    assert_int_equal(ps_bucket_of(bounds, 3, 1), 0);
    assert_int_equal(ps_bucket_of(bounds, 3, 16), 0);
    assert_int_equal(ps_bucket_of(bounds, 3, 17), 1);
    assert_int_equal(ps_bucket_of(bounds, 3, 64), 2);
    assert_int_equal(ps_bucket_of(bounds, 3, 65), 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dp_is_optimal),
        cmocka_unit_test(test_edges),
    };
    return cmocka_run_group_tests_name("buckets", tests, NULL, NULL);
}
