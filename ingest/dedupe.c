/*
 * Exact-duplicate detection on the cleaned (question, sql) pair: an
 * open-addressing set of XXH3-128 hashes (collision odds ~n^2 / 2^129,
 * i.e. none for any real corpus), 32 bytes a record, plus the kept
 * record's id so a duplicate can name what it duplicates.
 */
#include "ingest/ingest.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

typedef struct slot {
    XXH128_hash_t h;   /* {0,0} marks an empty slot (a real 0 hash is bumped) */
    uint64_t id_off;   /* offset of the kept id in `ids` */
    uint32_t label_hash;
} slot;

struct ps_dedupe {
    slot *slots;
    size_t cap, used;
    ps_buf ids;
};

/* Tables of 2 MiB and more are mapped and asked for huge pages: a table
 * filled at random touches every page, and a 4 KiB page fault each 128
 * slots cost more than the inserts (a hint; without THP it is ordinary
 * zeroed memory). */
#define HUGE_BYTES (2u << 20)

static slot *table_alloc(size_t n)
{
    size_t bytes = n * sizeof(slot);
    if (bytes < HUGE_BYTES)
        return calloc(n, sizeof(slot));
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    ps_mem_hint_huge(p, bytes);
    return p;
}

static void table_free(slot *s, size_t n)
{
    if (n * sizeof(slot) < HUGE_BYTES)
        free(s);
    else if (s)
        munmap(s, n * sizeof(slot));
}

int ps_dedupe_create(ps_dedupe **out)
{
    ps_dedupe *d = calloc(1, sizeof *d);
    if (!d)
        return PS_ENOMEM;
    d->cap = 1024;
    d->slots = table_alloc(d->cap);
    if (!d->slots) {
        free(d);
        return PS_ENOMEM;
    }
    ps_buf_init(&d->ids);
    *out = d;
    return 0;
}

void ps_dedupe_free(ps_dedupe *d)
{
    if (!d)
        return;
    table_free(d->slots, d->cap);
    ps_buf_free(&d->ids);
    free(d);
}

static bool empty(const slot *s) { return s->h.low64 == 0 && s->h.high64 == 0; }

static slot *find(slot *slots, size_t cap, XXH128_hash_t h)
{
    size_t i = (size_t)h.low64 & (cap - 1);
    while (!empty(&slots[i]) && !XXH128_isEqual(slots[i].h, h))
        i = (i + 1) & (cap - 1);
    return &slots[i];
}

static int rehash(ps_dedupe *d, size_t ncap)
{
    slot *ns = table_alloc(ncap);
    if (!ns)
        return PS_ENOMEM;
    for (size_t i = 0; i < d->cap; i++)
        if (!empty(&d->slots[i]))
            *find(ns, ncap, d->slots[i].h) = d->slots[i];
    table_free(d->slots, d->cap);
    d->slots = ns;
    d->cap = ncap;
    return 0;
}

static bool fits(size_t n, size_t cap) { return (n + 1) * 4 <= cap * 3; }

int ps_dedupe_reserve(ps_dedupe *d, size_t n)
{
    size_t cap = d->cap;
    while (!fits(n, cap) && cap <= SIZE_MAX / 4 / sizeof(slot))
        cap *= 2;
    return cap == d->cap ? 0 : rehash(d, cap);
}

size_t ps_dedupe_count(const ps_dedupe *d) { return d->used; }

void ps_dedupe_prefetch(const ps_dedupe *d, ps_pair_hash h)
{
    __builtin_prefetch(&d->slots[(size_t)h.low & (d->cap - 1)]);
}

ps_pair_hash ps_dedupe_hash(const char *q, size_t qn, const char *s, size_t sn)
{
    /* Length-prefixed, so ("ab","c") and ("a","bc") differ. */
    XXH3_state_t st;
    XXH3_128bits_reset(&st);
    uint64_t qlen = qn;
    XXH3_128bits_update(&st, &qlen, sizeof qlen);
    XXH3_128bits_update(&st, q, qn);
    XXH3_128bits_update(&st, s, sn);
    XXH128_hash_t h = XXH3_128bits_digest(&st);
    if (h.low64 == 0 && h.high64 == 0)
        h.low64 = 1;
    ps_pair_hash out = {h.low64, h.high64};
    return out;
}

int ps_dedupe_insert_hash(ps_dedupe *d, ps_pair_hash ph, const char *id, uint32_t label_hash,
                          const char **first_id, bool *label_conflict)
{
    XXH128_hash_t h = {ph.low, ph.high};
    if (!fits(d->used, d->cap) && rehash(d, d->cap * 2))
        return PS_ENOMEM;
    slot *sl = find(d->slots, d->cap, h);
    if (!empty(sl)) {
        *first_id = d->ids.data + sl->id_off;
        *label_conflict = sl->label_hash != label_hash;
        return 1;
    }
    uint64_t off = d->ids.len;
    if (ps_buf_append(&d->ids, id, strlen(id) + 1))
        return PS_ENOMEM;
    sl->h = h;
    sl->id_off = off;
    sl->label_hash = label_hash;
    d->used++;
    return 0;
}
