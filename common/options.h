/*
 * common/options.h — the growing-struct rule of pairshard/common.h for the
 * public options structs (ps_clean_options, ps_reader_options): each begins
 * with `size_t struct_size`, and the library reads no byte past it.
 *
 * Each struct keeps a table of the sizes it has had in published versions
 * (oldest first, the current sizeof last). Every version must be larger
 * than the one before: a field appended where the old struct had tail
 * padding leaves sizeof unchanged and could not be told from that padding,
 * so such a field comes with explicit padding that grows the struct. A caller's struct_size must be
 * one of them: a smaller one is a caller compiled against an older header,
 * whose missing tail takes the defaults; anything else (0 from a struct that
 * was never initialised, or a larger size from a newer header than the
 * library) is PS_EINVAL.
 */
#ifndef PS_COMMON_OPTIONS_H
#define PS_COMMON_OPTIONS_H

#include "common/ps_internal.h"

/* 0 when `size` is in known[0..n), else PS_EINVAL with a message naming
 * `type`, the size and the sizes this library knows. */
int ps_struct_size_check(size_t size, const size_t *known, size_t n, const char *type,
                         ps_error *err);

/* Copies a caller's options struct `src` (its first struct_size bytes, after
 * checking that size) over `dst`, which holds the defaults at this library's
 * size `dst_size`, and sets dst's struct_size to dst_size. `src` NULL keeps
 * the defaults. Both structs start with their size_t struct_size. Returns 0
 * or PS_EINVAL (dst untouched). */
int ps_options_adopt(void *dst, size_t dst_size, const void *src, const size_t *known,
                     size_t n, const char *type, ps_error *err);

/* Writes the first `size` bytes of the defaults `dflt` (a struct of the
 * library's size, whose struct_size is overwritten with `size`) into the
 * caller's `out`, after checking `size`: ps_*_options_init_size. Writes
 * nothing past `size`. Returns 0 or PS_EINVAL (also for a NULL `out`). */
int ps_options_init_copy(void *out, size_t size, void *dflt, const size_t *known, size_t n,
                         const char *type);

/* The sizeof `type` had when `field` was its last member: the end of
 * `field` rounded up to the struct's alignment. Names a published size of
 * a struct that has grown since (fields are only appended). */
#define PS_SIZE_THROUGH(type, field)                                                   \
    ((offsetof(type, field) + sizeof(((type *)0)->field) + _Alignof(type) - 1) /       \
     _Alignof(type) * _Alignof(type))

/* The other half of the rule, for structs the library fills
 * (pairshard/common.h, "Structs the library fills"): copies the library's
 * filled struct `full` (full_size bytes) into the caller's `out` of `size`
 * bytes: min(size, full_size) bytes, then zeros up to `size` when the
 * caller's struct is larger. Writes nothing past `size`. Returns 0, or
 * PS_EINVAL naming `type` (nothing written) when `out` is NULL or `size`
 * is below `first_size`, the struct's first published size. */
int ps_struct_out(void *out, size_t size, const void *full, size_t full_size,
                  size_t first_size, const char *type, ps_error *err);

#endif /* PS_COMMON_OPTIONS_H */
