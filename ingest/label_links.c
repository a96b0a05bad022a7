/* A chunk's repeated labels, linked by its worker (see ingest.h). */
#include "ingest/ingest.h"

#include <stdlib.h>
#include <string.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

static ps_clean_item *item_at(void *items, size_t stride, size_t i)
{
    return (ps_clean_item *)((char *)items + i * stride);
}

/* Room for n records at most half full; false when out of memory. */
static bool reserve(ps_label_links *l, size_t n)
{
    size_t cap = 64;
    while (cap < 2 * n)
        cap *= 2;
    if (cap > l->cap) {
        uint32_t *s = malloc(cap * sizeof *s);
        if (!s)
            return false;
        free(l->slots);
        l->slots = s;
        l->cap = cap;
    }
    memset(l->slots, 0, l->cap * sizeof *l->slots);
    return true;
}

void ps_label_links_set(ps_label_links *l, void *items, size_t stride, size_t n)
{
    bool table = n <= UINT32_MAX - 1 && reserve(l, n);
    for (size_t i = 0; i < n; i++) {
        ps_clean_item *it = item_at(items, stride, i);
        it->label_as = 0;
        const char *label = it->res.label;
        if (!table || !label)
            continue;
        size_t mask = l->cap - 1, len = strlen(label);
        size_t k = (size_t)XXH3_64bits(label, len) & mask;
        for (; l->slots[k]; k = (k + 1) & mask) {
            ps_clean_item *first = item_at(items, stride, l->slots[k] - 1);
            if (strcmp(first->res.label, label) == 0) {
                it->label_as = l->slots[k];
                break;
            }
        }
        if (!l->slots[k])
            l->slots[k] = (uint32_t)i + 1;
    }
}

void ps_label_links_free(ps_label_links *l)
{
    free(l->slots);
    l->slots = NULL;
    l->cap = 0;
}
