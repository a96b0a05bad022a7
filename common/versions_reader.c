/* libpairshard-reader's ps_dependency_versions: only what that library
 * links (zstd, jansson), the xxHash compiled into it, and the CUDA runtime
 * it loads at run time. libpairshard's is common/versions.c; the Makefile
 * builds each into its own library. */
#include "common/cudart.h"
#include "common/ps_internal.h"

#include <jansson.h>
#include <stdio.h>
#include <zstd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

int ps_dependency_versions(char *buf, size_t n)
{
    unsigned xx = XXH_versionNumber();
    int w = snprintf(buf, n, "zstd %s\njansson %s\nxxhash %u.%u.%u (compiled in)\ncuda %s\n",
                     ZSTD_versionString(), jansson_version_str(), xx / 10000, (xx / 100) % 100,
                     xx % 100, ps_cudart_status());
    return w < 0 ? PS_EINVAL : w;
}
