/*
 * validate/stat_math.h — the statistics behind the checks (internal).
 *
 * Fixed length bins (shared by every histogram of validate/, documented in
 * docs/REPORT.md):
 *   bins 0..255     unit bins: the value itself (0..255), exact
 *   bins 256..383   widening bins: for v in [2^k, 2^(k+1)), k = 8..15, 16
 *                   equal sub-bins of width 2^(k-4): bin 256 + 16(k-8) +
 *                   ((v >> (k-4)) & 15) — widths 16, 32, ... 2048
 *   bin 384         overflow: v >= 65536
 *
 * Every function is pure and deterministic; none allocates but
 * ps_sm_chi2_homogeneity's callers' buffers and the *_threads variants,
 * which compute the terms of the exact one-sided sum over threads into an
 * array (validate/stat_threads.c) and return the same bits whatever the
 * thread count. Reference: scipy 1.10
 * (scipy.stats.ks_2samp(method='asymp'), scipy.stats.chi2_contingency(
 * correction=False), scipy.spatial.distance.jensenshannon(base=2)).
 */
#ifndef PS_VALIDATE_STAT_MATH_H
#define PS_VALIDATE_STAT_MATH_H

#include <stddef.h>
#include <stdint.h>

#define PS_VBINS 385u
#define PS_VBIN_OVERFLOW 384u

/* The bin of value v. */
static inline uint32_t ps_vbin_of(uint32_t v)
{
    if (v < 256)
        return v;
    if (v >= 65536)
        return PS_VBIN_OVERFLOW;
    unsigned k = 31u - (unsigned)__builtin_clz(v); /* 8..15 */
    return 256u + 16u * (k - 8u) + ((v >> (k - 4u)) & 15u);
}
/* The smallest value of bin b. */
uint32_t ps_vbin_lo(uint32_t b);
/* One past the largest value of bin b (overflow: UINT32_MAX). */
uint32_t ps_vbin_hi(uint32_t b);

/* Two-sample Kolmogorov-Smirnov D between two histograms over the same
 * bins: max over bin upper edges of |F1 - F2|, with F = cumulative count /
 * n (computed as scipy does: c1/n1 - c2/n2 in double). Exact for integer
 * values in unit bins; for widened bins it is D of the values rounded down
 * to their bin's lower edge (a lower bound of the exact D). Returns 0 when
 * a histogram is empty. */
double ps_sm_ks_d(const uint64_t *h1, const uint64_t *h2, size_t nbins);

/* The asymptotic two-sided p-value of ks_2samp: kstwo.sf(d, round(en)),
 * en = n1 n2 / (n1 + n2) (scipy's method='asymp'). */
double ps_sm_ks_2samp_p(double d, uint64_t n1, uint64_t n2);
/* kstwo.sf(x, n): P(D_n > x) for the one-sample two-sided statistic
 * (Simard & L'Ecuyer's selection of methods, as scipy's _ksstats.py). */
double ps_sm_kolmogn_sf(uint64_t n, double x);

/* The same over `threads` threads (0 or 1: the calling thread alone):
 * where the p-value needs the exact Birnbaum-Tingey sum (n up to 10^6,
 * n x^2 in [2.2, 370): up to a million terms of lgammal and logl, a
 * second on a slow core), its terms are computed in parallel and summed in
 * order, so the result has the same bits as with one thread. Without
 * memory or threads for that, the calling thread computes them itself. */
double ps_sm_ks_2samp_p_threads(double d, uint64_t n1, uint64_t n2, size_t threads);
double ps_sm_kolmogn_sf_threads(uint64_t n, double x, size_t threads);

/* Term j of that sum (stat_math.c), -1 for a term it skips; and terms
 * 0..jmax computed by it over `threads` threads into a new array
 * (stat_threads.c; free() it), or NULL when one thread should compute them
 * in its loop: threads <= 1, too few terms to be worth a thread, or no
 * memory. */
long double ps_sm_bt_term(long double lgn1, long double N, long double X, uint64_t j);
long double *ps_sm_bt_terms_threads(long double lgn1, long double N, long double X,
                                     uint64_t jmax, size_t threads);

/* Regularized upper incomplete gamma Q(a, x), a > 0, x >= 0. */
double ps_sm_igamc(double a, double x);
/* chi2.sf(x, df). */
double ps_sm_chi2_sf(double x, double df);

/* Chi-square test of homogeneity of a k x 2 table (column a, column b),
 * as scipy.stats.chi2_contingency(correction=False): rows whose total is 0
 * are dropped; dof = (rows - 1)(2 - 1). Also Cramér's V =
 * sqrt(chi2 / (N (min(rows, 2) - 1))). Returns the number of rows used
 * (chi2 = 0, p = 1, V = 0 when fewer than 2 rows or an empty column). */
size_t ps_sm_chi2_homogeneity(const uint64_t *a, const uint64_t *b, size_t k, double *chi2,
                              double *dof, double *p, double *cramers_v);

/* Jensen-Shannon distance, log base 2 (in [0, 1]), of two count vectors
 * (normalised here), as scipy.spatial.distance.jensenshannon(p, q, 2).
 * Returns 0 when either is all zero. */
double ps_sm_js_distance(const double *p, const double *q, size_t k);

/* Population stability index of `cur` against `base` (count vectors,
 * normalised here): sum (c_i - b_i) ln(c_i / b_i), where a proportion of 0
 * is replaced by `eps` (PS_SM_PSI_EPS by default). */
#define PS_SM_PSI_EPS 1e-4
double ps_sm_psi(const double *base, const double *cur, size_t k, double eps);

/* Groups the fixed bins into contiguous groups for PSI on lengths: at most
 * `groups` of about equal mass of `base` (its quantile bins) over the bins
 * from its smallest to its largest value, plus one group below and one above
 * that range when there are bins there (mass the baseline never had).
 * Writes the first bin of each group to first[] (room for groups + 2) and
 * returns the count (>= 1). A group never splits a bin, so a bin holding more
 * than 1/groups of the mass makes one group of its own. */
size_t ps_sm_quantile_groups(const uint64_t *base, size_t nbins, size_t groups, uint32_t *first);

/* The q-quantile (0 < q <= 1) of a histogram over the fixed bins: the
 * smallest value whose cumulative count reaches ceil(q n) (numpy's
 * 'inverted_cdf'); exact in unit bins, linearly interpolated by rank inside
 * a widened bin, never above `max`. Returns 0 for an empty histogram. */
double ps_sm_quantile(const uint64_t *h, uint64_t n, double q, uint32_t max);

/* Neumaier-compensated sum. */
double ps_sm_sum(const double *v, size_t n);

#endif
