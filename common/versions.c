/* Versions of pairshard's dependencies, as linked at run time, for
 * `pairshard version` and for manifests (reproducibility needs them).
 * This is libpairshard's; libpairshard-reader has its own
 * (common/versions_reader.c), naming only what it links. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "common/cudart.h"
#include "common/ps_internal.h"

#include <jansson.h>
#include <lmdb.h>
#include <nettle/version.h>
#include <pcre2.h>
#include <sqlite3.h>
#include <stdio.h>
#include <utf8proc.h>
#include <xxhash.h>
#include <zlib.h>
#include <zstd.h>

int ps_dependency_versions(char *buf, size_t n)
{
    char pcre[64] = "";
    pcre2_config(PCRE2_CONFIG_VERSION, pcre);
    unsigned xx = XXH_versionNumber();
    int w = snprintf(buf, n,
                     "lmdb %s\nzstd %s\nutf8proc %s (Unicode %s)\njansson %s\npcre2 %s\n"
                     "xxhash %u.%u.%u\nzlib %s\nnettle %d.%d\nsqlite %s\ncuda %s\n",
                     mdb_version(NULL, NULL, NULL), ZSTD_versionString(), utf8proc_version(),
                     utf8proc_unicode_version(), jansson_version_str(), pcre,
                     xx / 10000, (xx / 100) % 100, xx % 100, zlibVersion(),
                     nettle_version_major(), nettle_version_minor(), sqlite3_libversion(),
                     ps_cudart_status());
    return w < 0 ? PS_EINVAL : w;
}
