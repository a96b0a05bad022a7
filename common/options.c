/* The growing-struct rule for public options structs (common/options.h). */
#include "common/options.h"

#include <stdio.h>
#include <string.h>

int ps_struct_size_check(size_t size, const size_t *known, size_t n, const char *type,
                         ps_error *err)
{
    for (size_t i = 0; i < n; i++)
        if (known[i] == size)
            return 0;
    /* Name the sizes this library accepts: a mismatch is a caller built
     * against another header, or a struct never given to its _init. */
    char sizes[96] = "";
    size_t used = 0;
    for (size_t i = 0; i < n && used < sizeof sizes; i++) {
        int w = snprintf(sizes + used, sizeof sizes - used, "%s%zu", i ? ", " : "", known[i]);
        if (w < 0)
            break;
        used += (size_t)w;
    }
    return ps_error_set(err, PS_EINVAL,
                        "%s.struct_size is %zu, not a size this library knows (%s): "
                        "initialise the struct with %s_init",
                        type, size, sizes, type);
}

int ps_options_adopt(void *dst, size_t dst_size, const void *src, const size_t *known,
                     size_t n, const char *type, ps_error *err)
{
    if (!src)
        return 0;
    size_t size;
    memcpy(&size, src, sizeof size);
    int rc = ps_struct_size_check(size, known, n, type, err);
    if (rc)
        return rc;
    memcpy(dst, src, size);
    memcpy(dst, &dst_size, sizeof dst_size);
    return 0;
}

int ps_struct_out(void *out, size_t size, const void *full, size_t full_size,
                  size_t first_size, const char *type, ps_error *err)
{
    if (!out || size < first_size)
        return ps_error_set(err, PS_EINVAL,
                            "%s: the caller's size %zu is below the struct's first published "
                            "size (%zu): pass sizeof of the caller's struct",
                            type, size, first_size);
    size_t n = size < full_size ? size : full_size;
    memcpy(out, full, n);
    if (size > n) /* a newer header than this library: its new fields read 0 */
        memset((char *)out + n, 0, size - n);
    return 0;
}

int ps_options_init_copy(void *out, size_t size, void *dflt, const size_t *known, size_t n,
                         const char *type)
{
    if (!out || ps_struct_size_check(size, known, n, type, NULL))
        return PS_EINVAL;
    memcpy(dflt, &size, sizeof size);
    memcpy(out, dflt, size);
    return 0;
}
