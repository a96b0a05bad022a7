/*
 * Bucket bounds. A batch from one bucket is padded to (at most) the
 * bucket's bound, so good bounds waste little: choosing them is a small
 * dynamic programme over the length histogram (lengths <= max_length, a few
 * hundred values), exact and deterministic.
 */
#include "pipeline/build.h"

#include <stdlib.h>
#include <string.h>

size_t ps_bucket_of(const uint32_t *bounds, size_t n, uint32_t len)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (bounds[mid] < len)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

size_t ps_buckets_choose(const uint64_t *hist, size_t max_len, size_t k, size_t multiple,
                         uint32_t *bounds)
{
    size_t top = 0;
    for (size_t l = 0; l <= max_len; l++)
        if (hist[l])
            top = l;
    if (top == 0 && (max_len == 0 || !hist[0]))
        return 0;
    if (multiple == 0)
        multiple = 1;
    /* The programme is O(k * candidates^2): keep candidates <= 1024 for
     * untruncated corpora with very long records by coarsening the grid. */
    while (top / multiple > 1024)
        multiple *= 2;
    if (k == 0)
        k = 1;
    /* Candidate bounds: multiples of `multiple` below the longest record,
     * and the longest record itself (so no bucket is wider than needed). */
    size_t nc = 0;
    uint32_t *cand = malloc((top / multiple + 2) * sizeof *cand);
    if (!cand)
        return 0;
    for (size_t b = multiple; b < top; b += multiple)
        cand[nc++] = (uint32_t)b;
    cand[nc++] = (uint32_t)top;
    if (k > nc)
        k = nc;
    /* prefix sums: count and total length of records with length <= x */
    uint64_t *cnt = calloc(top + 2, sizeof *cnt), *sum = calloc(top + 2, sizeof *sum);
    /* cost[j][i]: least padding covering lengths <= cand[i] with j+1 buckets */
    double *cost = malloc(k * nc * sizeof *cost);
    size_t *from = malloc(k * nc * sizeof *from);
    if (!cnt || !sum || !cost || !from) {
        free(cand), free(cnt), free(sum), free(cost), free(from);
        return 0;
    }
    for (size_t l = 0; l <= top; l++) {
        cnt[l + 1] = cnt[l] + hist[l];
        sum[l + 1] = sum[l] + hist[l] * l;
    }
    /* padding of records with lengths in (lo, hi] padded to hi */
#define PAD(lo, hi) ((double)((cnt[(hi) + 1] - cnt[(lo) + 1]) * (hi)) - \
                     (double)(sum[(hi) + 1] - sum[(lo) + 1]))
    for (size_t i = 0; i < nc; i++) {
        cost[i] = (double)(cnt[cand[i] + 1] * cand[i]) - (double)sum[cand[i] + 1];
        from[i] = (size_t)-1;
    }
    for (size_t j = 1; j < k; j++) {
        for (size_t i = 0; i < nc; i++) {
            double best = cost[(j - 1) * nc + i];
            size_t arg = (size_t)-2; /* "same as with fewer buckets" */
            for (size_t p = 0; p < i; p++) {
                double c = cost[(j - 1) * nc + p] + PAD(cand[p], cand[i]);
                if (c < best) { /* strict: ties keep the earlier choice */
                    best = c;
                    arg = p;
                }
            }
            cost[j * nc + i] = best;
            from[j * nc + i] = arg;
        }
    }
#undef PAD
    /* walk back from the last candidate with k buckets */
    uint32_t rev[PS_BUILD_MAX_BUCKETS];
    size_t n = 0, i = nc - 1, j = k - 1;
    for (;;) {
        size_t f = from[j * nc + i];
        if (f == (size_t)-2) { /* fewer buckets do as well */
            j--;
            continue;
        }
        rev[n++] = cand[i];
        if (f == (size_t)-1 || j == 0)
            break;
        i = f;
        j--;
    }
    for (size_t t = 0; t < n; t++)
        bounds[t] = rev[n - 1 - t];
    free(cand), free(cnt), free(sum), free(cost), free(from);
    return n;
}
