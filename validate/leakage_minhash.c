/*
 * Near-duplicate questions: character shingles, their exact Jaccard, and
 * MinHash signatures cut into LSH bands (validate/leakage.h). One XXH3 hash
 * per shingle, then K multiply-shift permutations of it (seeded by a fixed
 * splitmix64 stream): the same signature on every host and thread.
 */
#include "validate/leakage.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#define SHINGLE_SEED 0x5053484c45414b31ull /* "PSHLEAK1" */
#define BAND_SEED 0x50534c5348424e44ull
#define MAX_HASHES 128

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Length of the UTF-8 sequence led by byte c (1 for a stray byte). */
static size_t seq_len(unsigned char c)
{
    return c < 0xC0 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
}

int ps_leak_shingles(const char *s, size_t n, unsigned ngram, uint64_t **set, size_t *count,
                     size_t *cap)
{
    *count = 0;
    if (n == 0)
        return 0;
    if (*cap < n + 1) {
        uint64_t *p = realloc(*set, (n + 1) * sizeof *p);
        if (!p)
            return PS_ENOMEM;
        *set = p;
        *cap = n + 1;
    }
    /* starts of the shingles: code point boundaries */
    size_t k = 0, end = 0, start = 0;
    for (unsigned i = 0; i < ngram && end < n; i++)
        end += seq_len((unsigned char)s[end]);
    if (end > n)
        end = n;
    for (;;) {
        (*set)[k++] = XXH3_64bits_withSeed(s + start, end - start, SHINGLE_SEED);
        if (end >= n)
            break;
        start += seq_len((unsigned char)s[start]);
        end += seq_len((unsigned char)s[end]);
        if (end > n)
            end = n;
    }
    qsort(*set, k, sizeof **set, cmp_u64);
    size_t u = 0;
    for (size_t i = 0; i < k; i++)
        if (u == 0 || (*set)[u - 1] != (*set)[i])
            (*set)[u++] = (*set)[i];
    *count = u;
    return 0;
}

double ps_leak_jaccard(const uint64_t *a, size_t na, const uint64_t *b, size_t nb)
{
    if (na == 0 && nb == 0)
        return 1.0;
    size_t i = 0, j = 0, inter = 0;
    while (i < na && j < nb) {
        if (a[i] == b[j]) {
            inter++;
            i++;
            j++;
        } else if (a[i] < b[j]) {
            i++;
        } else {
            j++;
        }
    }
    return (double)inter / (double)(na + nb - inter);
}

void ps_leak_lsh_shape(double threshold, unsigned *bands, unsigned *rows)
{
    /* the most rows a band (fewest false candidates) that still finds a
     * pair at the threshold with probability >= 0.99 */
    unsigned best_r = 1;
    for (unsigned r = 1; r <= 16; r++) {
        unsigned b = MAX_HASHES / r;
        double p = 1.0 - pow(1.0 - pow(threshold, (double)r), (double)b);
        if (p >= 0.99)
            best_r = r;
    }
    *rows = best_r;
    *bands = MAX_HASHES / best_r;
}

/* The permutations' multipliers and offsets: a fixed splitmix64 stream,
 * made once (pthread_once) by whichever thread needs them first. */
static uint64_t perm_a[MAX_HASHES], perm_b[MAX_HASHES];
static pthread_once_t perm_once = PTHREAD_ONCE_INIT;

static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static void perms_init(void)
{
    uint64_t x = 0x50534d494e484153ull;
    for (int i = 0; i < MAX_HASHES; i++) {
        perm_a[i] = splitmix(&x) | 1u;
        perm_b[i] = splitmix(&x);
    }
}

void ps_leak_band_keys(const uint64_t *set, size_t n, unsigned bands, unsigned rows,
                       uint64_t *keys)
{
    pthread_once(&perm_once, perms_init);
    unsigned k = bands * rows;
    uint32_t sig[MAX_HASHES];
    for (unsigned i = 0; i < k; i++)
        sig[i] = UINT32_MAX;
    for (size_t j = 0; j < n; j++) {
        uint64_t h = set[j];
        for (unsigned i = 0; i < k; i++) {
            uint32_t v = (uint32_t)((h * perm_a[i] + perm_b[i]) >> 32);
            sig[i] = v < sig[i] ? v : sig[i];
        }
    }
    for (unsigned b = 0; b < bands; b++)
        keys[b] = XXH3_64bits_withSeed(sig + (size_t)b * rows, rows * sizeof *sig,
                                       BAND_SEED + b);
}
