/* Tests of validate/stat_threads.c: the exact KS p-value computed over
 * threads has the bits of the one-thread value, for every thread count,
 * in each regime that sums Birnbaum-Tingey terms; and the terms really are
 * spread over threads where there are enough of them. (Its agreement with
 * scipy: tests/test_validate_scipy.c, which checks the threaded value too.) */
#include "validate/stat_math.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void same_bits(uint64_t n, double x, const size_t *threads, size_t nt, size_t *inside)
{
    double one = ps_sm_kolmogn_sf(n, x);
    assert_true(one >= 0.0 && one <= 1.0);
    if (one > 1e-300 && one < 1.0)
        ++*inside;
    for (size_t i = 0; i < nt; i++) {
        double many = ps_sm_kolmogn_sf_threads(n, x, threads[i]);
        if (memcmp(&one, &many, sizeof one) != 0)
            fail_msg("n %llu x %.17g: %.17g with 1 thread, %.17g with %zu",
                     (unsigned long long)n, x, one, many, threads[i]);
    }
}

/* n x^2 from 2.2 to 370 is where the survival function is the one-sided
 * sum (twice it); x >= 0.5 takes it too, with n (1 - x) terms. */
static void test_same_bits_every_count(void **state)
{
    (void)state;
    static const uint64_t ns[] = {8192, 20000, 80000, 250000};
    static const double nx2s[] = {2.3, 5.0, 20.0, 100.0, 360.0};
    static const size_t threads[] = {2, 3, 4, 7, 16};
    size_t inside = 0;
    for (size_t i = 0; i < sizeof ns / sizeof *ns; i++)
        for (size_t k = 0; k < sizeof nx2s / sizeof *nx2s; k++)
            same_bits(ns[i], sqrt(nx2s[k] / (double)ns[i]), threads, 5, &inside);
    same_bits(20000, 0.55, threads, 5, &inside);
    /* the largest n with the exact sum (above 10^6 scipy's formula):
     * a million terms, once */
    static const size_t two[] = {2};
    same_bits(1000000, sqrt(20.0 / 1e6), two, 1, &inside);
    /* most cases are p-values strictly between 0 and 1, not clipped ends */
    assert_true(inside >= 15);
}

/* The two-sample p-value a build reports: en = n1 n2 / (n1 + n2). */
static void test_two_sample(void **state)
{
    (void)state;
    double one = ps_sm_ks_2samp_p(0.019, 160680, 160260);
    assert_true(one > 0 && one < 1e-10);
    for (size_t t = 2; t <= 8; t++) {
        double many = ps_sm_ks_2samp_p_threads(0.019, 160680, 160260, t);
        assert_memory_equal(&one, &many, sizeof one);
    }
    assert_true(isnan(ps_sm_ks_2samp_p_threads(0.1, 0, 5, 4)));
}

/* Each term is computed by the one function a single thread uses; too
 * few terms, or one thread, leave them to the caller's loop (NULL). */
static void test_terms(void **state)
{
    (void)state;
    long double N = 50000, X = 0.01L, lgn1 = lgammal(N + 1);
    uint64_t jmax = (uint64_t)floorl(N * (1 - X));
    assert_null(ps_sm_bt_terms_threads(lgn1, N, X, jmax, 1));
    assert_null(ps_sm_bt_terms_threads(lgn1, N, X, 5000, 4)); /* under 2 x 4096 terms */
    long double *t = ps_sm_bt_terms_threads(lgn1, N, X, jmax, 3);
    assert_non_null(t);
    size_t positive = 0;
    for (uint64_t j = 0; j <= jmax; j++) {
        long double want = ps_sm_bt_term(lgn1, N, X, j);
        if (!(t[j] == want))
            fail_msg("term %llu differs", (unsigned long long)j);
        positive += t[j] > 0;
    }
    assert_true(positive > jmax / 2);
    free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_bits_every_count),
        cmocka_unit_test(test_two_sample),
        cmocka_unit_test(test_terms),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
