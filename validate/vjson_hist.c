/* validate/vjson_hist.c — sparse histograms as JSON, [[bin, count], ...].
 *
 * A build's statistics hold some 54,000 such pairs (three points, each
 * field overall and per label), and jansson spends four allocations on a
 * pair: the checks spent more than half their time there, and in the
 * fresh heap pages behind them. Only about a tenth of the pairs differ,
 * so a cache hands out one shared, never-modified [bin, count] value per
 * distinct pair (jansson counts the references; the dumped text is the
 * same). */
#include "validate/vinternal.h"

#include <stdlib.h>

typedef struct entry {
    uint64_t count;
    uint32_t bin;
    json_t *pair; /* NULL: empty */
} entry;

struct ps_vjson_cache {
    entry *slots;
    size_t cap, used; /* cap a power of two, at most half full */
};

ps_vjson_cache *ps_vjson_cache_new(void) { return calloc(1, sizeof(ps_vjson_cache)); }

void ps_vjson_cache_free(ps_vjson_cache *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->cap; i++)
        json_decref(c->slots[i].pair);
    free(c->slots);
    free(c);
}

static size_t slot_of(const ps_vjson_cache *c, uint32_t bin, uint64_t count)
{
    uint64_t k = (count * 0x9E3779B97F4A7C15ULL) ^ ((uint64_t)bin * 0xC2B2AE3D27D4EB4FULL);
    size_t i = (size_t)(k ^ k >> 29) & (c->cap - 1);
    while (c->slots[i].pair && (c->slots[i].bin != bin || c->slots[i].count != count))
        i = (i + 1) & (c->cap - 1);
    return i;
}

static int grow(ps_vjson_cache *c)
{
    size_t ncap = c->cap ? c->cap * 2 : 1024;
    entry *old = c->slots;
    size_t ocap = c->cap;
    c->slots = calloc(ncap, sizeof *c->slots);
    if (!c->slots) {
        c->slots = old;
        return PS_ENOMEM;
    }
    c->cap = ncap;
    for (size_t i = 0; i < ocap; i++)
        if (old[i].pair)
            c->slots[slot_of(c, old[i].bin, old[i].count)] = old[i];
    free(old);
    return 0;
}

static json_t *pair_new(uint32_t bin, uint64_t count)
{
    json_t *pair = json_array();
    if (pair && (json_array_append_new(pair, json_integer((json_int_t)bin)) ||
                 json_array_append_new(pair, ps_vjson_uint(count)))) {
        json_decref(pair);
        pair = NULL;
    }
    return pair;
}

/* The pair [bin, count]: a new reference. */
static json_t *pair_get(ps_vjson_cache *c, uint32_t bin, uint64_t count)
{
    if (!c)
        return pair_new(bin, count);
    if ((c->used + 1) * 2 > c->cap && grow(c))
        return NULL;
    size_t i = slot_of(c, bin, count);
    if (!c->slots[i].pair) {
        json_t *pair = pair_new(bin, count);
        if (!pair)
            return NULL;
        c->slots[i] = (entry){count, bin, pair};
        c->used++;
    }
    return json_incref(c->slots[i].pair);
}

json_t *ps_vjson_hist_cached(ps_vjson_cache *c, const uint64_t *h, size_t nbins)
{
    json_t *a = json_array();
    if (!a)
        return NULL;
    for (size_t b = 0; b < nbins; b++) {
        if (!h[b])
            continue;
        json_t *pair = pair_get(c, (uint32_t)b, h[b]);
        if (!pair || json_array_append_new(a, pair)) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

json_t *ps_vjson_hist_new(const uint64_t *h, size_t nbins)
{
    return ps_vjson_hist_cached(NULL, h, nbins);
}
