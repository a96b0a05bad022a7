/* A set of strings numbered in insertion order (see strmap.h). */
#include "common/strmap.h"
#include "common/ps_internal.h"

#include <stdlib.h>
#include <string.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

void ps_strmap_free(ps_strmap *m)
{
    for (size_t i = 0; i < m->n; i++)
        free(m->keys[i]);
    free(m->keys);
    free(m->slots);
    free(m->by_number);
    memset(m, 0, sizeof *m);
}

static size_t slot_of(const ps_strmap *m, const char *key, size_t len)
{
    size_t mask = m->nslots - 1, i = (size_t)XXH3_64bits(key, len) & mask;
    while (m->slots[i] && strcmp(m->keys[m->slots[i] - 1], key) != 0)
        i = (i + 1) & mask;
    return i;
}

long ps_strmap_find(const ps_strmap *m, const char *key)
{
    if (!m->nslots)
        return -1;
    size_t i = slot_of(m, key, strlen(key));
    return m->slots[i] ? (long)m->slots[i] - 1 : -1;
}

long ps_strmap_add(ps_strmap *m, const char *key, bool *added)
{
    *added = false;
    if (m->last && strcmp(m->keys[m->last - 1], key) == 0)
        return (long)m->last - 1;
    size_t len = strlen(key);
    if (m->nslots) {
        size_t i = slot_of(m, key, len);
        if (m->slots[i]) {
            m->last = m->slots[i];
            return (long)m->slots[i] - 1;
        }
    }
    if (m->n >= UINT32_MAX - 1)
        return -1;
    if ((m->n + 1) * 2 > m->nslots) { /* keep the table at most half full */
        size_t ns = m->nslots ? m->nslots * 2 : 64;
        uint32_t *sl = calloc(ns, sizeof *sl);
        if (!sl)
            return -1;
        free(m->slots);
        m->slots = sl;
        m->nslots = ns;
        for (size_t k = 0; k < m->n; k++)
            m->slots[slot_of(m, m->keys[k], strlen(m->keys[k]))] = (uint32_t)k + 1;
    }
    if (m->n == m->cap) {
        size_t nc = m->cap ? m->cap * 2 : 16;
        char **nk = realloc(m->keys, nc * sizeof *nk);
        if (!nk)
            return -1;
        m->keys = nk;
        m->cap = nc;
    }
    char *copy = malloc(len + 1);
    if (!copy)
        return -1;
    memcpy(copy, key, len + 1);
    m->keys[m->n] = copy;
    m->slots[slot_of(m, key, len)] = (uint32_t)m->n + 1;
    *added = true;
    m->last = m->n + 1;
    return (long)m->n++;
}

long ps_strmap_slot(ps_strmap *m, const char *key, void **records, size_t *cap, size_t size)
{
    if (m->n == *cap) {
        /* The first array spans 2 MiB of address space (pages are touched
         * only as labels arrive): per-label statistics are kilobytes a
         * label, and growing them by doubling copied megabytes into
         * fresh pages. */
        size_t first = ((size_t)2 << 20) / size;
        size_t nc = *cap ? *cap * 2 : first > 16 ? first : 16;
        void *grown = realloc(*records, nc * size);
        if (!grown)
            return -1;
        *records = grown;
        *cap = nc;
        ps_mem_hint_huge(grown, nc * size); /* per-label statistics run to MiBs */
    }
    bool added;
    long i = ps_strmap_add(m, key, &added);
    if (i >= 0 && added)
        memset((char *)*records + (size_t)i * size, 0, size);
    return i;
}

/* Remembers that `number` names the key at index i (only a shortcut: when
 * out of memory the string lookups still work). */
static void remember(ps_strmap *m, uint32_t number, long i)
{
    if (number >= m->by_number_cap) {
        size_t nc = m->by_number_cap ? m->by_number_cap : 256;
        while (nc <= number)
            nc *= 2;
        uint32_t *grown = realloc(m->by_number, nc * sizeof *grown);
        if (!grown)
            return;
        memset(grown + m->by_number_cap, 0, (nc - m->by_number_cap) * sizeof *grown);
        m->by_number = grown;
        m->by_number_cap = nc;
    }
    m->by_number[number] = (uint32_t)i + 1;
}

static long find_numbered(const ps_strmap *m, uint32_t number)
{
    return number && number < m->by_number_cap ? (long)m->by_number[number] - 1 : -1;
}

long ps_strmap_add_numbered(ps_strmap *m, const char *key, uint32_t number, bool *added)
{
    long i = find_numbered(m, number);
    *added = false;
    if (i >= 0)
        return i;
    i = ps_strmap_add(m, key, added);
    if (i >= 0 && number)
        remember(m, number, i);
    return i;
}

long ps_strmap_slot_numbered(ps_strmap *m, const char *key, uint32_t number, void **records,
                             size_t *cap, size_t size)
{
    long i = find_numbered(m, number);
    if (i >= 0)
        return i;
    i = ps_strmap_slot(m, key, records, cap, size);
    if (i >= 0 && number)
        remember(m, number, i);
    return i;
}
