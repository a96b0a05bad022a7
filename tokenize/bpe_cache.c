/*
 * The BPE model's per-thread cache: piece bytes -> ids.
 *
 * Text repeats the same words endlessly, so most pieces are looked up here
 * instead of merged again. HF keeps such a cache per thread too (bounded,
 * pieces under 256 bytes). One open-addressing table over an append-only
 * arena, both small at first and doubled as pieces come (a text with few
 * distinct words keeps its cache in the CPU's caches); at their bounds the
 * whole cache is emptied (cheap and rare, and it follows the data as it
 * drifts) rather than evicting entry by entry.
 */
#include "tokenize/bpe.h"

#include <stdlib.h>
#include <string.h>

#define SLOTS_MIN (1u << 12)   /* powers of two */
#define SLOTS_MAX (1u << 17)
#define CACHE_ENTRIES (1u << 16) /* at most half full: short probes */
#define ARENA_MIN ((size_t)64 << 10)
#define ARENA_MAX ((size_t)8 << 20)

typedef struct slot {
    uint64_t hash;
    uint32_t off;  /* of the entry in the arena: the piece, then its ids */
    uint16_t klen; /* 0: empty slot (pieces are never empty) */
    uint16_t nids;
} slot;

struct ps_bpe_cache {
    slot *slots;
    size_t mask; /* slots - 1 */
    char *arena;
    size_t used, cap, entries;
};

ps_bpe_cache *ps_bpe_cache_new(void)
{
    ps_bpe_cache *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->slots = calloc(SLOTS_MIN, sizeof *c->slots);
    c->arena = malloc(ARENA_MIN);
    c->mask = SLOTS_MIN - 1;
    c->cap = ARENA_MIN;
    if (!c->slots || !c->arena) {
        ps_bpe_cache_free(c);
        return NULL;
    }
    return c;
}

void ps_bpe_cache_free(ps_bpe_cache *c)
{
    if (!c)
        return;
    free(c->slots);
    free(c->arena);
    free(c);
}

int ps_bpe_cache_get(const ps_bpe_cache *c, uint64_t h, const char *s, size_t n,
                     const int32_t **ids)
{
    if (n >= PS_BPE_CACHE_MAX_PIECE)
        return -1;
    for (size_t j = (size_t)h & c->mask;; j = (j + 1) & c->mask) {
        const slot *e = &c->slots[j];
        if (!e->klen)
            return -1;
        /* ps_tok_hash is injective on keys of up to 8 bytes of one length */
        if (e->hash == h && e->klen == n && (n <= 8 || !memcmp(c->arena + e->off, s, n))) {
            *ids = (const int32_t *)(const void *)(c->arena + ((e->off + n + 3) & ~(size_t)3));
            return e->nids;
        }
    }
}

/* Doubles the table; false when at its bound or out of memory. */
static bool grow_slots(ps_bpe_cache *c)
{
    size_t n = (c->mask + 1) * 2;
    slot *t = n <= SLOTS_MAX ? calloc(n, sizeof *t) : NULL;
    if (!t)
        return false;
    for (size_t i = 0; i <= c->mask; i++) {
        if (!c->slots[i].klen)
            continue;
        size_t j = (size_t)c->slots[i].hash & (n - 1);
        while (t[j].klen)
            j = (j + 1) & (n - 1);
        t[j] = c->slots[i];
    }
    free(c->slots);
    c->slots = t;
    c->mask = n - 1;
    return true;
}

/* Grows the arena to hold `need` bytes; false at its bound or out of memory. */
static bool grow_arena(ps_bpe_cache *c, size_t need)
{
    size_t cap = c->cap;
    while (cap < need)
        cap *= 2;
    char *a = cap <= ARENA_MAX ? realloc(c->arena, cap) : NULL;
    if (!a)
        return false;
    c->arena = a;
    c->cap = cap;
    return true;
}

static void empty(ps_bpe_cache *c)
{
    memset(c->slots, 0, (c->mask + 1) * sizeof *c->slots);
    c->used = c->entries = 0;
}

void ps_bpe_cache_put(ps_bpe_cache *c, uint64_t h, const char *s, size_t n, const int32_t *ids,
                      size_t n_ids)
{
    if (n >= PS_BPE_CACHE_MAX_PIECE || n_ids > UINT16_MAX)
        return;
    if ((c->entries + 1) * 2 > c->mask + 1 && (c->entries >= CACHE_ENTRIES || !grow_slots(c)))
        empty(c);
    size_t ids_off = (c->used + n + 3) & ~(size_t)3, end = ids_off + n_ids * sizeof *ids;
    if (end > c->cap && !grow_arena(c, end)) {
        empty(c);
        ids_off = (n + 3) & ~(size_t)3;
        end = ids_off + n_ids * sizeof *ids; /* < 2 KiB: fits the smallest arena */
    }
    size_t j = (size_t)h & c->mask, off = c->used;
    while (c->slots[j].klen)
        j = (j + 1) & c->mask;
    memcpy(c->arena + off, s, n);
    if (n_ids) /* ids may be NULL then */
        memcpy(c->arena + ids_off, ids, n_ids * sizeof *ids);
    c->used = end;
    c->entries++;
    c->slots[j] = (slot){.hash = h, .off = (uint32_t)off, .klen = (uint16_t)n,
                         .nids = (uint16_t)n_ids};
}
