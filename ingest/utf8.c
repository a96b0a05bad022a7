/*
 * UTF-8 validation and repair. Hand-written because the repair policy must
 * follow Unicode's "maximal subpart" practice (one U+FFFD per maximal
 * invalid subsequence, as WHATWG and ICU do), which utf8proc does not expose.
 */
#include "ingest/ingest.h"

#include <string.h>

int ps_utf8_decode(const unsigned char *s, size_t n, int32_t *cp)
{
    unsigned char c = s[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    int need;
    unsigned char lo = 0x80, hi = 0xBF; /* allowed range of the 2nd byte */
    int32_t v;
    if (c >= 0xC2 && c <= 0xDF) {
        need = 1;
        v = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        need = 2;
        v = c & 0x0F;
        if (c == 0xE0)
            lo = 0xA0; /* no overlongs */
        else if (c == 0xED)
            hi = 0x9F; /* no surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 3;
        v = c & 0x07;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F; /* <= U+10FFFF */
    } else {
        return -1;
    }
    for (int i = 1; i <= need; i++) {
        if ((size_t)i >= n)
            return -i;
        unsigned char b = s[i];
        if (i == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF))
            return -i;
        v = (v << 6) | (b & 0x3F);
    }
    *cp = v;
    return need + 1;
}

size_t ps_utf8_check(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        /* ASCII fast path, 8 bytes at a time. */
        while (i + 8 <= n) {
            uint64_t w;
            memcpy(&w, p + i, 8);
            if (w & 0x8080808080808080ULL)
                break;
            i += 8;
        }
        if (i >= n)
            break;
        if (p[i] < 0x80) {
            i++;
            continue;
        }
        int32_t cp;
        int k = ps_utf8_decode(p + i, n - i, &cp);
        if (k < 0)
            return i;
        i += (size_t)k;
    }
    return n;
}

int ps_utf8_repair(const char *s, size_t n, ps_buf *out, size_t *replaced)
{
    static const char fffd[3] = {(char)0xEF, (char)0xBF, (char)0xBD};
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, count = 0;
    int rc = ps_buf_reserve(out, n);
    while (rc == 0 && i < n) {
        size_t ok = ps_utf8_check(s + i, n - i);
        rc = ps_buf_append(out, s + i, ok);
        i += ok;
        if (rc || i >= n)
            break;
        int32_t cp;
        int k = ps_utf8_decode(p + i, n - i, &cp);
        i += (size_t)(-k);
        count++;
        rc = ps_buf_append(out, fffd, sizeof fffd);
    }
    if (replaced)
        *replaced = count;
    return rc;
}
