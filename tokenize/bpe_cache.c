/*
 * The BPE model's per-thread cache: piece bytes -> ids.
 *
 * Text repeats the same words endlessly, so most pieces are looked up here
 * instead of merged again. HF keeps such a cache per thread too (bounded,
 * pieces under 256 bytes). One open-addressing table of fixed size over an
 * append-only arena; when either fills, the whole cache is emptied (cheap
 * and rare, and it follows the data as it drifts) rather than evicting
 * entry by entry.
 */
#include "tokenize/bpe.h"

#include <stdlib.h>
#include <string.h>

#define CACHE_SLOTS (1u << 17)  /* power of two */
#define CACHE_ENTRIES (1u << 16) /* at most half full: short probes */
#define CACHE_ARENA ((size_t)8 << 20)

typedef struct slot {
    uint64_t hash;
    uint32_t off;  /* of the entry in the arena: the piece, then its ids */
    uint16_t klen; /* 0: empty slot (pieces are never empty) */
    uint16_t nids;
} slot;

struct ps_bpe_cache {
    slot *slots;
    char *arena;
    size_t used, entries;
};

ps_bpe_cache *ps_bpe_cache_new(void)
{
    ps_bpe_cache *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->slots = calloc(CACHE_SLOTS, sizeof *c->slots);
    c->arena = malloc(CACHE_ARENA);
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
    for (size_t j = (size_t)h & (CACHE_SLOTS - 1);; j = (j + 1) & (CACHE_SLOTS - 1)) {
        const slot *e = &c->slots[j];
        if (!e->klen)
            return -1;
        if (e->hash == h && e->klen == n && !memcmp(c->arena + e->off, s, n)) {
            *ids = (const int32_t *)(const void *)(c->arena + ((e->off + n + 3) & ~(size_t)3));
            return e->nids;
        }
    }
}

void ps_bpe_cache_put(ps_bpe_cache *c, uint64_t h, const char *s, size_t n, const int32_t *ids,
                      size_t n_ids)
{
    if (n >= PS_BPE_CACHE_MAX_PIECE || n_ids > UINT16_MAX)
        return;
    size_t need = ((c->used + n + 3) & ~(size_t)3) + n_ids * sizeof *ids - c->used;
    if (c->entries >= CACHE_ENTRIES || c->used + need > CACHE_ARENA) {
        memset(c->slots, 0, CACHE_SLOTS * sizeof *c->slots);
        c->used = c->entries = 0;
    }
    size_t j = (size_t)h & (CACHE_SLOTS - 1);
    while (c->slots[j].klen)
        j = (j + 1) & (CACHE_SLOTS - 1);
    size_t off = c->used, ids_off = (off + n + 3) & ~(size_t)3;
    memcpy(c->arena + off, s, n);
    if (n_ids) /* ids may be NULL then */
        memcpy(c->arena + ids_off, ids, n_ids * sizeof *ids);
    c->used = ids_off + n_ids * sizeof *ids;
    c->entries++;
    c->slots[j] = (slot){.hash = h, .off = (uint32_t)off, .klen = (uint16_t)n,
                         .nids = (uint16_t)n_ids};
}
