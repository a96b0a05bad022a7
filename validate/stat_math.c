/* validate/stat_math.c — KS, chi-square, Jensen-Shannon, PSI, quantiles on
 * the fixed bins. See stat_math.h; the formulas are in docs/REPORT.md. The
 * Kolmogorov distribution follows scipy 1.10's _ksstats.py method by method
 * (Simard & L'Ecuyer 2011), so the p-values agree with
 * scipy.stats.ks_2samp(method='asymp') to rounding. */
#include "validate/stat_math.h"

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define SM_PI 3.14159265358979323846
#define SM_SQRT2PI 2.50662827463100050242
#define SM_LOG_2PI 1.83787706640934548356
#define SM_SQRT3 1.73205080756887729353

uint32_t ps_vbin_lo(uint32_t b)
{
    if (b < 256)
        return b;
    if (b >= PS_VBIN_OVERFLOW)
        return 65536;
    uint32_t k = 8 + (b - 256) / 16, sub = (b - 256) % 16;
    return (1u << k) + sub * (1u << (k - 4));
}

uint32_t ps_vbin_hi(uint32_t b)
{
    if (b < 256)
        return b + 1;
    if (b >= PS_VBIN_OVERFLOW)
        return UINT32_MAX;
    uint32_t k = 8 + (b - 256) / 16;
    return ps_vbin_lo(b) + (1u << (k - 4));
}

double ps_sm_sum(const double *v, size_t n)
{
    double s = 0, c = 0;
    for (size_t i = 0; i < n; i++) {
        double t = s + v[i];
        if (fabs(s) >= fabs(v[i]))
            c += (s - t) + v[i];
        else
            c += (v[i] - t) + s;
        s = t;
    }
    return s + c;
}

/* ---- Kolmogorov-Smirnov ---------------------------------------------------- */

double ps_sm_ks_d(const uint64_t *h1, const uint64_t *h2, size_t nbins)
{
    uint64_t n1 = 0, n2 = 0;
    for (size_t b = 0; b < nbins; b++) {
        n1 += h1[b];
        n2 += h2[b];
    }
    if (!n1 || !n2)
        return 0;
    uint64_t c1 = 0, c2 = 0;
    double maxs = 0, mins = 0;
    for (size_t b = 0; b < nbins; b++) {
        c1 += h1[b];
        c2 += h2[b];
        if (!h1[b] && !h2[b])
            continue; /* no data point at this edge */
        double diff = (double)c1 / (double)n1 - (double)c2 / (double)n2;
        if (diff > maxs)
            maxs = diff;
        if (-diff > mins)
            mins = -diff;
    }
    return mins > maxs ? mins : maxs;
}

static double clip01(double p)
{
    if (!(p >= 0))
        return p != p ? p : 0.0;
    return p > 1 ? 1.0 : p;
}

static const double STIRLING[8] = {
    -2.955065359477124183e-2, 6.4102564102564102564e-3, -1.9175269175269175269e-3,
    8.4175084175084175084e-4, -5.952380952380952381e-4, 7.9365079365079365079e-4,
    -2.7777777777777777778e-3, 8.3333333333333333333e-2};

static double log_nfact_div_npown(double n)
{
    double rn = 1.0 / n, x = rn / n, p = 0;
    for (int i = 0; i < 8; i++)
        p = p * x + STIRLING[i];
    return log(n) / 2 - n + SM_LOG_2PI / 2 + rn * p;
}

#define EP128 0x1p128
#define EM128 0x1p-128

static void matmul(const double *a, const double *b, double *c, size_t m)
{
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < m; j++) {
            double s = 0;
            for (size_t l = 0; l < m; l++)
                s += a[i * m + l] * b[l * m + j];
            c[i * m + j] = s;
        }
}

/* Pr(D_n <= d), Durbin's matrix (Marsaglia, Tsang, Wang 2003). Returns NAN
 * when out of memory. */
static double kolmogn_dmtw(uint64_t n, double d)
{
    if (d >= 1.0)
        return 1.0;
    double nd = (double)n * d;
    if (nd <= 0.5)
        return 0.0;
    size_t k = (size_t)ceil(nd);
    double h = (double)k - nd;
    size_t m = 2 * k - 1;
    double *H = calloc(m * m, sizeof *H), *P = calloc(m * m, sizeof *P),
           *T = calloc(m * m, sizeof *T), *v = calloc(m, sizeof *v), *w = calloc(m, sizeof *w);
    double p = NAN;
    if (!H || !P || !T || !v || !w)
        goto out;
    double fac = 1.0;
    for (size_t j = 1; j <= m; j++) {
        v[j - 1] = 1.0 - pow(h, (double)j);
        w[j - 1] = fac;
        fac /= (double)j;
        v[j - 1] *= fac;
    }
    double tt = pow(fmax(2 * h - 1.0, 0), (double)m) - 2 * pow(h, (double)m);
    v[m - 1] = (1.0 + tt) * fac;
    for (size_t i = 1; i < m; i++)
        for (size_t r = i - 1; r < m; r++)
            H[r * m + i] = w[r - (i - 1)];
    for (size_t r = 0; r < m; r++)
        H[r * m] = v[r];
    for (size_t c = 0; c < m; c++)
        H[(m - 1) * m + c] = v[m - 1 - c];
    for (size_t i = 0; i < m; i++)
        P[i * m + i] = 1.0;
    uint64_t nn = n;
    long expnt = 0, hexpnt = 0;
    while (nn > 0) {
        if (nn % 2) {
            matmul(P, H, T, m);
            memcpy(P, T, m * m * sizeof *P);
            expnt += hexpnt;
        }
        matmul(H, H, T, m);
        memcpy(H, T, m * m * sizeof *H);
        hexpnt *= 2;
        if (fabs(H[(k - 1) * m + (k - 1)]) > EP128) {
            for (size_t i = 0; i < m * m; i++)
                H[i] /= EP128;
            hexpnt += 128;
        }
        nn /= 2;
    }
    p = P[(k - 1) * m + (k - 1)];
    for (uint64_t i = 1; i <= n; i++) {
        p = (double)i * p / (double)n;
        if (fabs(p) < EM128) {
            p *= EP128;
            expnt -= 128;
        }
    }
    if (expnt != 0)
        p = ldexp(p, (int)expnt);
    p = clip01(p);
out:
    free(H);
    free(P);
    free(T);
    free(v);
    free(w);
    return p;
}

static void pomeranz_j1j2(long i, long n, long ll, long ceilf, long roundf, long *j1o, long *j2o)
{
    long j1, j2;
    if (i == 0) {
        j1 = -ll - ceilf - 1;
        j2 = ll + ceilf - 1;
    } else {
        long d2 = (i + 1) / 2, m2 = (i + 1) % 2;
        if (m2 == 0) {
            if (d2 == n + 1) {
                j1 = n - ll - ceilf - 1;
                j2 = n + ll + ceilf - 1;
            } else {
                j1 = d2 - 1 - ll - roundf - 1;
                j2 = d2 + ll - 1 + ceilf - 1;
            }
        } else {
            j1 = d2 - 1 - ll - 1;
            j2 = d2 + ll + roundf - 1;
        }
    }
    *j1o = j1 + 2 > 0 ? j1 + 2 : 0;
    *j2o = j2 < n ? j2 : n;
}

/* Pr(D_n <= x), Pomeranz's recursion (n <= 140 only). */
static double kolmogn_pomeranz(long n, double x)
{
    double t = (double)n * x;
    long ll = (long)floor(t);
    double f = t - (double)ll;
    double g = fmin(f, 1.0 - f);
    long ceilf = f > 0 ? 1 : 0, roundf = f > 0.5 ? 1 : 0;
    long npwrs = 2 * (ll + 1);
    double *gp = calloc((size_t)npwrs, sizeof *gp), *tgp = calloc((size_t)npwrs, sizeof *tgp),
           *omp = calloc((size_t)npwrs, sizeof *omp), *V0 = calloc((size_t)npwrs, sizeof *V0),
           *V1 = calloc((size_t)npwrs, sizeof *V1), *conv = calloc(2 * (size_t)npwrs + 2, sizeof *conv);
    double ans = NAN;
    if (!gp || !tgp || !omp || !V0 || !V1 || !conv)
        goto out;
    gp[0] = tgp[0] = omp[0] = 1.0;
    long expnt = 0;
    double gn = g / (double)n, tgn = 2 * g / (double)n, omn = (1 - 2 * g) / (double)n;
    for (long m = 1; m < npwrs; m++) {
        gp[m] = gp[m - 1] * gn / (double)m;
        tgp[m] = tgp[m - 1] * tgn / (double)m;
        omp[m] = omp[m - 1] * omn / (double)m;
    }
    V1[0] = 1;
    long V0s = 0, V1s = 0, j1, j2;
    pomeranz_j1j2(0, n, ll, ceilf, roundf, &j1, &j2);
    for (long i = 1; i < 2 * n + 2; i++) {
        long k1 = j1;
        double *tmp = V0;
        V0 = V1;
        V1 = tmp;
        long ts = V0s;
        V0s = V1s;
        V1s = ts;
        memset(V1, 0, (size_t)npwrs * sizeof *V1);
        pomeranz_j1j2(i, n, ll, ceilf, roundf, &j1, &j2);
        const double *pw = (i == 1 || i == 2 * n + 1) ? gp : (i % 2 ? tgp : omp);
        long ln2 = j2 - k1 + 1;
        if (ln2 > 0) {
            long start = k1 - V0s;
            long la = ln2;
            if (start + la > npwrs)
                la = npwrs - start;
            if (la < 0)
                la = 0;
            long lb = ln2 < npwrs ? ln2 : npwrs;
            long lc = la + lb - 1;
            for (long c = 0; c < lc; c++) {
                double s = 0;
                long lo = c - (lb - 1) > 0 ? c - (lb - 1) : 0;
                long hi = c < la - 1 ? c : la - 1;
                for (long a = lo; a <= hi; a++)
                    s += V0[start + a] * pw[c - a];
                conv[c] = s;
            }
            long cs = j1 - k1, cl = j2 - j1 + 1;
            double mx = 0;
            for (long c = 0; c < cl && c < npwrs; c++) {
                V1[c] = (cs + c >= 0 && cs + c < lc) ? conv[cs + c] : 0;
            }
            for (long c = 0; c < npwrs; c++)
                if (c == 0 || V1[c] > mx)
                    mx = V1[c];
            if (0 < mx && mx < EM128) {
                for (long c = 0; c < npwrs; c++)
                    V1[c] *= EP128;
                expnt -= 128;
            }
            V1s = V0s + j1 - k1;
        }
    }
    long idx = n - V1s;
    ans = (idx >= 0 && idx < npwrs) ? V1[idx] : 0;
    for (long m = 1; m <= n; m++) {
        if (fabs(ans) > EP128) {
            ans *= EM128;
            expnt += 128;
        }
        ans *= (double)m;
    }
    if (expnt != 0)
        ans = ldexp(ans, (int)expnt);
    ans = clip01(ans);
out:
    free(gp);
    free(tgp);
    free(omp);
    free(V0);
    free(V1);
    free(conv);
    return ans;
}

/* Pr(D_n <= x), Pelz-Good asymptotic series. */
static double kolmogn_pelzgood(double n, double x)
{
    if (x <= 0.0)
        return 0.0;
    if (x >= 1.0)
        return 1.0;
    double z = sqrt(n) * x;
    double z2 = z * z, z3 = z2 * z, z4 = z2 * z2, z6 = z4 * z2;
    double pi2 = SM_PI * SM_PI, pi4 = pi2 * pi2, pi6 = pi4 * pi2;
    double qlog = -pi2 / 8 / z2;
    if (qlog < -708)
        return 0.0;
    double q = exp(qlog);
    double k1a = -z2, k1b = pi2 / 4;
    double k2a = 6 * z6 + 2 * z4, k2b = (2 * z4 - 5 * z2) * pi2 / 4, k2c = pi4 * (1 - 2 * z2) / 16;
    double k3d = pi6 * (5 - 30 * z2) / 64, k3c = pi4 * (-60 * z2 + 212 * z4) / 16,
           k3b = pi2 * (135 * z4 - 96 * z6) / 4, k3a = -30 * z6 - 90 * pow(z, 8);
    double K[4] = {0, 0, 0, 0};
    long maxk = (long)ceil(16 * z / SM_PI);
    for (long k = maxk; k > 0; k--) {
        double m = (double)(2 * k - 1);
        double m2 = m * m, m4 = m2 * m2, m6 = m4 * m2;
        double qp = pow(q, (double)(8 * k));
        double c[4] = {1.0, k1a + k1b * m2, k2a + k2b * m2 + k2c * m4,
                       k3a + k3b * m2 + k3c * m4 + k3d * m6};
        for (int i = 0; i < 4; i++)
            K[i] = K[i] * qp + c[i];
    }
    double den[4] = {z, 6 * z4, 72 * pow(z, 7), 6480 * pow(z, 10)};
    for (int i = 0; i < 4; i++)
        K[i] = K[i] * q * SM_SQRT2PI / den[i];
    q = exp(-pi2 / 2 / z2);
    double e2 = 0, e3 = 0, s3z = SM_SQRT3 * z;
    for (long k = maxk; k > 0; k--) {
        double ks = (double)k, ksq = ks * ks, qp = pow(q, ksq), kspi = SM_PI * ks;
        e2 += ksq * qp;
        e3 += (s3z + kspi) * (s3z - kspi) * ksq * qp;
    }
    K[2] += e2 * (pi2 * SM_SQRT2PI / (-36 * z3));
    K[3] += e3 * (pi2 * SM_SQRT2PI / (216 * z6));
    for (int i = 1; i < 4; i++)
        K[i] /= pow(n, (double)i / 2.0);
    return K[0] + K[1] + K[2] + K[3];
}

/* log Gamma(x) without lgammal's write to the global signgam, which
 * threads computing terms at once would race on (the same glibc routine,
 * the same value). */
static long double lgamma_ts(long double x)
{
    int sign;
    return lgammal_r(x, &sign);
}

/* Term j of the Birnbaum-Tingey sum below, or -1 where 1 - x - j/n <= 0
 * (a term the sum skips). One function for every caller, so that a term
 * has the same bits whichever thread computes it (stat_threads.c). */
long double ps_sm_bt_term(long double lgn1, long double N, long double X, uint64_t j)
{
    long double J = (long double)j;
    long double a = 1.0L - X - J / N, b = X + J / N;
    if (a <= 0)
        return -1.0L;
    long double lt = lgn1 - lgamma_ts(J + 1) - lgamma_ts(N - J + 1) + (N - J) * logl(a) +
                     (J - 1) * logl(b);
    return expl(lt);
}

/* Birnbaum-Tingey: P(D_n^+ >= x) = x sum_{j=0}^{floor(n(1-x))} C(n,j)
 * (1 - x - j/n)^(n-j) (x + j/n)^(j-1), all terms positive, in long double
 * log space. For n > 10^6 scipy uses exp(-(6nx+1)^2/(18n)); so do we.
 * The terms (up to a million, each a few lgammal and logl) may be computed
 * over `threads` threads; they are summed here, in order, compensated, so
 * the result has the same bits whatever the count. */
static double smirnov(uint64_t n, double x, size_t threads)
{
    if (!(x == x))
        return NAN;
    if (n == 0)
        return NAN;
    if (x >= 1.0)
        return 0.0;
    if (x <= 0.0)
        return 1.0;
    double nd = (double)n;
    if (n == 1)
        return 1 - x;
    if (n > 1000000) {
        double logp = -pow(6.0 * nd * x + 1, 2) / 18.0 / nd;
        if (logp < -M_LN2)
            return exp(logp);
        double cdf = -expm1(logp);
        return 1 - cdf;
    }
    long double X = x, N = nd;
    uint64_t jmax = (uint64_t)floorl(N * (1.0L - X));
    if (jmax > n - 1)
        jmax = n - 1;
    long double lgn1 = lgamma_ts(N + 1);
    long double *terms = ps_sm_bt_terms_threads(lgn1, N, X, jmax, threads);
    long double s = 0, c = 0;
    for (uint64_t j = 0; j <= jmax; j++) {
        long double term = terms ? terms[j] : ps_sm_bt_term(lgn1, N, X, j);
        if (term < 0)
            continue;
        long double tt = s + term;
        c += (s - tt) + term;
        s = tt;
    }
    free(terms);
    double p = (double)(X * (s + c));
    return clip01(p);
}

static double kolmogn(uint64_t n, double x, bool cdf, size_t threads)
{
    if (n == 0 || x != x)
        return NAN;
    if (x >= 1.0)
        return cdf ? 1.0 : 0.0;
    if (x <= 0.0)
        return cdf ? 0.0 : 1.0;
    double nd = (double)n, t = nd * x, prob;
    if (t <= 1.0) {
        if (t <= 0.5)
            return cdf ? 0.0 : 1.0;
        if (n <= 140) {
            prob = 1.0;
            for (uint64_t i = 1; i <= n; i++)
                prob *= (double)i * (1.0 / nd) * (2 * t - 1);
        } else {
            prob = exp(log_nfact_div_npown(nd) + nd * log(2 * t - 1));
        }
        return clip01(cdf ? prob : 1.0 - prob);
    }
    if (t >= nd - 1) {
        prob = 2 * pow(1.0 - x, nd);
        return clip01(cdf ? 1 - prob : prob);
    }
    if (x >= 0.5) {
        prob = 2 * smirnov(n, x, threads);
        return clip01(cdf ? 1.0 - prob : prob);
    }
    double nx2 = t * x;
    if (n <= 140) {
        if (nx2 <= 0.754693) {
            prob = kolmogn_dmtw(n, x);
            return clip01(cdf ? prob : 1.0 - prob);
        }
        if (nx2 <= 4) {
            prob = kolmogn_pomeranz((long)n, x);
            return clip01(cdf ? prob : 1.0 - prob);
        }
        prob = 2 * smirnov(n, x, threads);
        return clip01(cdf ? 1.0 - prob : prob);
    }
    if (!cdf) {
        if (nx2 >= 370.0)
            return 0.0;
        if (nx2 >= 2.2)
            return clip01(2 * smirnov(n, x, threads));
    }
    double cdfprob;
    if (nx2 >= 18.0)
        cdfprob = 1.0;
    else if (n <= 100000 && nd * pow(x, 1.5) <= 1.4)
        cdfprob = kolmogn_dmtw(n, x);
    else
        cdfprob = kolmogn_pelzgood(nd, x);
    return clip01(cdf ? cdfprob : 1.0 - cdfprob);
}

double ps_sm_kolmogn_sf(uint64_t n, double x)
{
    return kolmogn(n, x, false, 1);
}

double ps_sm_kolmogn_sf_threads(uint64_t n, double x, size_t threads)
{
    return kolmogn(n, x, false, threads);
}

double ps_sm_ks_2samp_p_threads(double d, uint64_t n1, uint64_t n2, size_t threads)
{
    if (!n1 || !n2)
        return NAN;
    double m = (double)(n1 > n2 ? n1 : n2), n = (double)(n1 > n2 ? n2 : n1);
    double en = m * n / (m + n);
    double r = nearbyint(en); /* round half to even, as np.round */
    if (r < 1)
        r = 1;
    return clip01(kolmogn((uint64_t)r, d, false, threads));
}

double ps_sm_ks_2samp_p(double d, uint64_t n1, uint64_t n2)
{
    return ps_sm_ks_2samp_p_threads(d, n1, n2, 1);
}

/* ---- chi-square ---------------------------------------------------------- */

/* Regularized lower gamma P(a, x) by its series (x < a + 1). */
static long double igam_series(long double a, long double x, long double lpref)
{
    long double sum = 1.0L / a, del = sum, ap = a;
    for (int i = 0; i < 100000; i++) {
        ap += 1;
        del *= x / ap;
        sum += del;
        if (fabsl(del) < fabsl(sum) * 1e-19L)
            break;
    }
    return sum * expl(lpref);
}

/* Q(a, x) by its continued fraction (modified Lentz), x >= a + 1. */
static long double igamc_cf(long double a, long double x, long double lpref)
{
    const long double tiny = 1e-4000L;
    long double b = x + 1 - a, c = 1 / tiny, d = 1 / b, h = d;
    for (int i = 1; i < 100000; i++) {
        long double an = -i * (i - a);
        b += 2;
        d = an * d + b;
        if (fabsl(d) < tiny)
            d = tiny;
        c = b + an / c;
        if (fabsl(c) < tiny)
            c = tiny;
        d = 1 / d;
        long double del = d * c;
        h *= del;
        if (fabsl(del - 1) < 1e-19L)
            break;
    }
    return expl(lpref) * h;
}

double ps_sm_igamc(double a, double x)
{
    if (!(a > 0) || !(x >= 0))
        return NAN;
    if (x == 0)
        return 1.0;
    if (isinf(x))
        return 0.0;
    long double A = a, X = x;
    long double lpref = A * logl(X) - X - lgammal(A);
    if (x < a + 1)
        return (double)(1.0L - igam_series(A, X, lpref));
    return (double)igamc_cf(A, X, lpref);
}

double ps_sm_chi2_sf(double x, double df)
{
    if (!(df > 0))
        return NAN;
    if (x <= 0)
        return 1.0;
    return ps_sm_igamc(df / 2, x / 2);
}

size_t ps_sm_chi2_homogeneity(const uint64_t *a, const uint64_t *b, size_t k, double *chi2,
                              double *dof, double *p, double *cramers_v)
{
    double na = 0, nb = 0;
    size_t rows = 0;
    for (size_t i = 0; i < k; i++) {
        na += (double)a[i];
        nb += (double)b[i];
        if (a[i] + b[i])
            rows++;
    }
    *chi2 = 0;
    *dof = 0;
    *p = 1;
    *cramers_v = 0;
    if (rows < 2 || na == 0 || nb == 0)
        return rows;
    double N = na + nb, s = 0, c = 0;
    for (size_t i = 0; i < k; i++) {
        if (!(a[i] + b[i]))
            continue;
        double r = (double)a[i] + (double)b[i];
        double ea = r * na / N, eb = r * nb / N;
        double t[2] = {((double)a[i] - ea) * ((double)a[i] - ea) / ea,
                       ((double)b[i] - eb) * ((double)b[i] - eb) / eb};
        for (int j = 0; j < 2; j++) {
            double tt = s + t[j];
            if (fabs(s) >= fabs(t[j]))
                c += (s - tt) + t[j];
            else
                c += (t[j] - tt) + s;
            s = tt;
        }
    }
    *chi2 = s + c;
    *dof = (double)(rows - 1);
    *p = ps_sm_chi2_sf(*chi2, *dof);
    *cramers_v = sqrt(*chi2 / N); /* min(rows, 2) - 1 = 1 */
    return rows;
}

/* ---- Jensen-Shannon, PSI --------------------------------------------------- */

static double rel_entr(double x, double y)
{
    if (x > 0 && y > 0)
        return x * log(x / y);
    if (x == 0 && y >= 0)
        return 0;
    return INFINITY;
}

double ps_sm_js_distance(const double *p, const double *q, size_t k)
{
    double sp = ps_sm_sum(p, k), sq = ps_sm_sum(q, k);
    if (!(sp > 0) || !(sq > 0))
        return 0;
    double ls = 0, lc = 0, rs = 0, rc = 0;
    for (size_t i = 0; i < k; i++) {
        double pi = p[i] / sp, qi = q[i] / sq, m = (pi + qi) / 2.0;
        double l = rel_entr(pi, m), r = rel_entr(qi, m), t;
        t = ls + l;
        lc += fabs(ls) >= fabs(l) ? (ls - t) + l : (l - t) + ls;
        ls = t;
        t = rs + r;
        rc += fabs(rs) >= fabs(r) ? (rs - t) + r : (r - t) + rs;
        rs = t;
    }
    double js = (ls + lc) + (rs + rc);
    js /= log(2.0);
    if (js < 0)
        js = 0;
    return sqrt(js / 2.0);
}

double ps_sm_psi(const double *base, const double *cur, size_t k, double eps)
{
    double sb = ps_sm_sum(base, k), sc = ps_sm_sum(cur, k);
    if (!(sb > 0) || !(sc > 0))
        return 0;
    double s = 0, c = 0;
    for (size_t i = 0; i < k; i++) {
        double b = base[i] / sb, a = cur[i] / sc;
        if (b == 0 && a == 0)
            continue;
        if (b == 0)
            b = eps;
        if (a == 0)
            a = eps;
        double t = (a - b) * log(a / b), tt = s + t;
        c += fabs(s) >= fabs(t) ? (s - tt) + t : (t - tt) + s;
        s = tt;
    }
    return s + c;
}

size_t ps_sm_quantile_groups(const uint64_t *base, size_t nbins, size_t groups, uint32_t *first)
{
    unsigned __int128 N = 0;
    for (size_t b = 0; b < nbins; b++)
        N += base[b];
    size_t ng = 1;
    first[0] = 0;
    if (!N)
        return ng;
    size_t lo = 0, hi = nbins - 1;
    while (!base[lo])
        lo++;
    while (!base[hi])
        hi--;
    /* below the baseline's smallest length: a group of its own */
    if (lo > 0)
        first[ng++] = (uint32_t)lo;
    size_t inner = 1;
    unsigned __int128 cum = 0, t = 1;
    for (size_t b = lo; b < hi && groups >= 2 && inner < groups; b++) {
        cum += base[b];
        if (cum * groups >= t * N && cum < N) {
            first[ng++] = (uint32_t)(b + 1);
            inner++;
            t = cum * groups / N + 1;
        }
    }
    /* above the baseline's largest length: a group of its own */
    if (hi + 1 < nbins)
        first[ng++] = (uint32_t)(hi + 1);
    return ng;
}

double ps_sm_quantile(const uint64_t *h, uint64_t n, double q, uint32_t max)
{
    if (!n)
        return 0;
    double rr = ceil(q * (double)n * (1 - 1e-12));
    uint64_t r = rr < 1 ? 1 : (rr > (double)n ? n : (uint64_t)rr);
    uint64_t cum = 0;
    for (uint32_t b = 0; b < PS_VBINS; b++) {
        if (!h[b])
            continue;
        if (cum + h[b] >= r) {
            if (b < 256)
                return (double)b;
            double lo = ps_vbin_lo(b), hi = b == PS_VBIN_OVERFLOW ? (double)max + 1 : ps_vbin_hi(b);
            double v = lo + (hi - lo) * ((double)(r - cum) - 0.5) / (double)h[b];
            v = floor(v);
            if (v > hi - 1)
                v = hi - 1;
            if (v > max)
                v = max;
            if (v < lo)
                v = lo;
            return v;
        }
        cum += h[b];
    }
    return (double)max;
}
