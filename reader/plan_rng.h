/*
 * reader/plan_rng.h — the plan's counter-keyed random streams (plan.c,
 * plan_pack.c): splitmix64 seeded by XXH64 of (seed, epoch, purpose, a, b),
 * Lemire's unbiased bounded draw and Fisher-Yates. Not installed.
 */
#ifndef PS_READER_PLAN_RNG_H
#define PS_READER_PLAN_RNG_H

#include <stdint.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

enum {
    TAG_BLOCKS = 1, TAG_WINDOW = 2, TAG_ORDER = 3, TAG_POOL = 4, TAG_PACK_BLOCKS = 5,
    TAG_MIX = 6 /* a mixture's subsets (plan_mix.c) */
};

/* splitmix64 over a state seeded by hashing the stream's key. */
typedef struct rng {
    uint64_t s;
} rng;

static inline void rng_init(rng *r, uint64_t seed, uint64_t epoch, uint64_t tag, uint64_t a, uint64_t b)
{
    unsigned char key[40];
    uint64_t v[5] = {seed, epoch, tag, a, b};
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 8; j++)
            key[i * 8 + j] = (unsigned char)(v[i] >> (8 * j));
    r->s = XXH64(key, sizeof key, 0x7061697273686172ull /* "pairshar" */);
}

static inline uint64_t rng_next(rng *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in [0, n), n > 0, without modulo bias (Lemire's method). */
static inline uint64_t rng_below(rng *r, uint64_t n)
{
    unsigned __int128 m = (unsigned __int128)rng_next(r) * n;
    uint64_t low = (uint64_t)m;
    if (low < n) {
        uint64_t threshold = (0 - n) % n;
        while (low < threshold) {
            m = (unsigned __int128)rng_next(r) * n;
            low = (uint64_t)m;
        }
    }
    return (uint64_t)(m >> 64);
}

#define FISHER_YATES(arr, n, r, T)                                                            \
    do {                                                                                      \
        for (uint64_t i_ = (n); i_ > 1; i_--) {                                               \
            uint64_t j_ = rng_below((r), i_);                                                 \
            T t_ = (arr)[i_ - 1];                                                             \
            (arr)[i_ - 1] = (arr)[j_];                                                        \
            (arr)[j_] = t_;                                                                   \
        }                                                                                     \
    } while (0)

#endif /* PS_READER_PLAN_RNG_H */
