/*
 * A set of strings numbered in insertion order: the label registries of
 * the accounting, the build and the validation statistics all map a label
 * to a dense index, and keep their per-label data in arrays by that index.
 */
#ifndef PS_COMMON_STRMAP_H
#define PS_COMMON_STRMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ps_strmap {
    char **keys;      /* keys[i]: the i-th string added (owned, stable) */
    size_t n, cap;
    uint32_t *slots;  /* open addressing: index + 1, 0 empty */
    size_t nslots;
    size_t last;      /* index + 1 of the key ps_strmap_add returned last, 0 none:
                       * records come grouped by label, so it is usually the next */
    uint32_t *by_number; /* ps_strmap_slot_numbered: number -> index + 1, 0 unseen */
    size_t by_number_cap;
} ps_strmap;

/* A zeroed ps_strmap is empty and ready. */
void ps_strmap_free(ps_strmap *m);
/* Returns the index of `key`, or -1 when absent. */
long ps_strmap_find(const ps_strmap *m, const char *key);
/* Returns the index of `key`, copying it in as the next index when new
 * (*added then true); -1 when out of memory or past UINT32_MAX - 1 keys. */
long ps_strmap_add(ps_strmap *m, const char *key, bool *added);
/* A label registry: `m` numbers the names and *records (a malloc'ed array
 * of `size`-byte records, room for *cap) holds one record per name at the
 * same index. Returns the index of `key`, adding it with a zeroed record
 * when new (*records grown first, so map and array stay in step); -1 when
 * out of memory. */
long ps_strmap_slot(ps_strmap *m, const char *key, void **records, size_t *cap, size_t size);
/* ps_strmap_add and ps_strmap_slot with `number` > 0, a number the caller
 * gives this string and no other, always: a string seen under its number
 * before is found without reading it (the committing thread numbers
 * labels once; stages on other threads would otherwise compare strings a
 * record). 0: as without a number. */
long ps_strmap_add_numbered(ps_strmap *m, const char *key, uint32_t number, bool *added);
long ps_strmap_slot_numbered(ps_strmap *m, const char *key, uint32_t number, void **records,
                             size_t *cap, size_t size);

#endif
