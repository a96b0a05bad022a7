/* validate/hard_stats.c — the hardness part of the statistics at a point:
 * records per hardness level, overall and per label, mergeable, to and
 * from JSON (the loader trusts nothing).
 *
 * A level is a name: Spider's classes (schema/hardness.c) or the values of
 * a dataset's own difficulty field (BIRD: simple, moderate, challenging),
 * taken as found. Levels are listed in one order whatever order records,
 * threads and merges brought them in: the known classes in their order of
 * difficulty, then the rest by name, so equal inputs write equal bytes. */
#include "validate/vinternal.h"

#include <stdlib.h>
#include <string.h>

/* The known levels, easiest first. */
static const char *const KNOWN[] = {"easy", "medium", "hard", "extra", "simple", "moderate",
                                    "challenging", "unclassified"};
#define NKNOWN (sizeof KNOWN / sizeof *KNOWN)

static size_t rank(const char *name)
{
    for (size_t i = 0; i < NKNOWN; i++)
        if (!strcmp(KNOWN[i], name))
            return i;
    return NKNOWN;
}

static int level_cmp(const char *a, const char *b)
{
    size_t ra = rank(a), rb = rank(b);
    if (ra != rb)
        return ra < rb ? -1 : 1;
    return strcmp(a, b);
}

/* The index of level `name` in s, added when new; the last slot takes
 * every name past the table's room, as "other". -1: out of memory. */
static int find(const ps_vstats *s, const char *name)
{
    for (size_t i = 0; i < s->nhlevels; i++)
        if (!strcmp(s->hlevels[i], name))
            return (int)i;
    return -1;
}

static int level_index(ps_vstats *s, const char *name)
{
    int k = find(s, name);
    if (k >= 0)
        return k;
    if (s->nhlevels >= PS_VHARD_LEVELS - 1) { /* the last slot: "other", once */
        name = "other";
        if ((k = find(s, name)) >= 0)
            return k;
    }
    char *copy = strdup(name);
    if (!copy)
        return -1;
    s->hlevels[s->nhlevels] = copy;
    return (int)s->nhlevels++;
}

void ps_vhard_free(ps_vstats *s)
{
    for (size_t i = 0; i < s->nhlevels; i++)
        free(s->hlevels[i]);
    s->nhlevels = 0;
}

int ps_vhard_add(ps_vstats *s, ps_vlabel *l, const char *level)
{
    int k = level_index(s, level);
    if (k < 0)
        return PS_ENOMEM;
    s->hard[k]++;
    if (l)
        l->hard[k]++;
    return 0;
}

int ps_vhard_merge(ps_vstats *into, uint64_t *dst, const ps_vstats *from, const uint64_t *src)
{
    for (size_t i = 0; i < from->nhlevels; i++) {
        if (!src[i] && dst != into->hard)
            continue; /* a label's zero adds no level the overall counts lack */
        int k = level_index(into, from->hlevels[i]);
        if (k < 0)
            return PS_ENOMEM;
        dst[k] += src[i];
    }
    return 0;
}

size_t ps_vhard_order(const ps_vstats *s, size_t ix[PS_VHARD_LEVELS])
{
    size_t n = s->nhlevels;
    for (size_t i = 0; i < n; i++) {
        size_t j = i;
        for (; j > 0 && level_cmp(s->hlevels[ix[j - 1]], s->hlevels[i]) > 0; j--)
            ix[j] = ix[j - 1];
        ix[j] = i;
    }
    return n;
}

json_t *ps_vhard_to_json(const ps_vstats *s, const uint64_t *counts)
{
    size_t ix[PS_VHARD_LEVELS];
    size_t n = ps_vhard_order(s, ix);
    json_t *o = json_object();
    for (size_t i = 0; o && i < n; i++)
        if (json_object_set_new(o, s->hlevels[ix[i]], ps_vjson_uint(counts[ix[i]]))) {
            json_decref(o);
            return NULL;
        }
    return o;
}

int ps_vhard_from_json(json_t *o, ps_vstats *s, uint64_t *counts, uint64_t records,
                       const char *ctx, ps_error *err)
{
    if (!o)
        return 0;
    if (!json_is_object(o) || json_object_size(o) > PS_VHARD_LEVELS)
        return ps_error_set(err, PS_EFORMAT, "%s: 'hardness' must be an object of at most %u levels",
                            ctx, PS_VHARD_LEVELS);
    const char *key;
    json_t *v;
    uint64_t sum = 0;
    json_object_foreach(o, key, v)
    {
        if (!json_is_integer(v) || json_integer_value(v) < 0)
            return ps_error_set(err, PS_EFORMAT, "%s: hardness '%.64s' must be a count", ctx, key);
        int k = level_index(s, key);
        if (k < 0)
            return ps_error_set(err, PS_ENOMEM, "out of memory");
        if (counts != s->hard && !s->hard[k] && json_integer_value(v))
            return ps_error_set(err, PS_EFORMAT, "%s: hardness '%.64s' exceeds the overall count",
                                ctx, key);
        counts[k] += (uint64_t)json_integer_value(v);
        if (counts != s->hard && counts[k] > s->hard[k])
            return ps_error_set(err, PS_EFORMAT, "%s: hardness '%.64s' exceeds the overall count",
                                ctx, key);
        if (__builtin_add_overflow(sum, (uint64_t)json_integer_value(v), &sum) || sum > records)
            return ps_error_set(err, PS_EFORMAT, "%s: hardness counts exceed the records (%llu)",
                                ctx, (unsigned long long)records);
    }
    return 0;
}
