/*
 * Text cleaning steps for natural-language fields: Unicode normalisation
 * (utf8proc), control/format character removal and whitespace folding.
 * Every step has an ASCII fast path: ASCII is NFC/NFKC-stable, so most
 * English text-to-SQL data never reaches utf8proc.
 */
#include "ingest/ingest.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

static bool is_ascii(const char *s, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        if (w & 0x8080808080808080ULL)
            return false;
    }
    for (; i < n; i++)
        if ((unsigned char)s[i] & 0x80)
            return false;
    return true;
}

int ps_text_normalize(const char *in, size_t n, ps_normalization form, ps_buf *out)
{
    ps_buf_reset(out);
    if (form == PS_NORM_NONE || is_ascii(in, n))
        return ps_buf_append(out, in, n);
    utf8proc_option_t opt = UTF8PROC_STABLE | UTF8PROC_COMPOSE;
    if (form == PS_NORM_NFKC)
        opt |= UTF8PROC_COMPAT;
    if (n > (size_t)(SSIZE_MAX / 8))
        return PS_ENOMEM;
    utf8proc_uint8_t *dst = NULL;
    utf8proc_ssize_t len =
        utf8proc_map((const utf8proc_uint8_t *)in, (utf8proc_ssize_t)n, &dst, opt);
    if (len < 0) {
        free(dst);
        return len == UTF8PROC_ERROR_NOMEM ? PS_ENOMEM : PS_EUTF8;
    }
    int rc = ps_buf_append(out, dst, (size_t)len);
    free(dst);
    return rc;
}

/* Format characters that are spelling, not noise: kept by default. */
static bool is_joiner(int32_t cp) { return cp == 0x200C || cp == 0x200D; }

/* True when cp is removed by the control step. Whitespace controls (tab,
 * LF, VT, FF, CR, NEL) stay: the whitespace step folds them. */
static bool is_removable(int32_t cp, bool strip_joiners)
{
    if (cp < 0x80)
        return (cp < 0x20 && !(cp >= 0x09 && cp <= 0x0D)) || cp == 0x7F;
    if (ps_is_white_space((uint32_t)cp))
        return false;
    utf8proc_category_t cat = utf8proc_category(cp);
    if (cat == UTF8PROC_CATEGORY_CC)
        return true;
    if (cat == UTF8PROC_CATEGORY_CF)
        return strip_joiners || !is_joiner(cp);
    return false;
}

int ps_text_strip_controls(const char *in, size_t n, bool strip_joiners, ps_buf *out,
                           size_t *removed)
{
    ps_buf_reset(out);
    size_t count = 0;
    int rc = ps_buf_reserve(out, n);
    if (rc)
        return rc;
    const unsigned char *p = (const unsigned char *)in;
    size_t i = 0, run = 0; /* run: start of the pending span to copy */
    while (i < n) {
        unsigned char c = p[i];
        if (c >= 0x20 && c < 0x7F) {
            i++;
            continue;
        }
        int32_t cp;
        int k = ps_utf8_decode(p + i, n - i, &cp);
        if (k < 0)
            return PS_EUTF8;
        if (is_removable(cp, strip_joiners)) {
            ps_buf_append(out, in + run, i - run);
            count++;
            run = i + (size_t)k;
        }
        i += (size_t)k;
    }
    ps_buf_append(out, in + run, n - run);
    if (removed)
        *removed = count;
    return PS_OK;
}

int ps_space_len_slow(const unsigned char *s, size_t n)
{
    int32_t cp;
    int k = ps_utf8_decode(s, n, &cp);
    return (k > 0 && ps_is_white_space((uint32_t)cp)) ? k : 0;
}

int ps_text_fold_whitespace(const char *in, size_t n, ps_buf *out)
{
    ps_buf_reset(out);
    int rc = ps_buf_reserve(out, n);
    if (rc)
        return rc;
    const unsigned char *p = (const unsigned char *)in;
    bool pending = false; /* a space is owed before the next visible char */
    size_t i = 0;
    while (i < n) {
        unsigned char c = p[i];
        if (c > ' ' && c < 0x80) { /* the common case: a visible ASCII byte */
            if (pending) {
                out->data[out->len++] = ' ';
                pending = false;
            }
            out->data[out->len++] = (char)c;
            i++;
            continue;
        }
        int k = ps_space_len(p + i, n - i);
        if (k) {
            pending = out->len > 0;
            i += (size_t)k;
            continue;
        }
        if (pending) {
            out->data[out->len++] = ' ';
            pending = false;
        }
        out->data[out->len++] = in[i++];
    }
    out->data[out->len] = '\0';
    return PS_OK;
}

/* Byte classes for ps_text_scan: 1 non-ASCII, 2 control, 4 whitespace
 * other than ' ', 16 space. */
static const unsigned char BYTE_CLASS[256] = {
     2,  2,  2,  2,  2,  2,  2,  2,  2,  4,  4,  4,  4,  4,  2,  2,
     2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,
    16,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,
     0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,
     0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,
     0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,
     0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,
     0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  2,
     1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,
     1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,
     1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,
     1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,
     1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,
     1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,
     1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,
     1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,
};

/* SWAR helpers over 8 bytes: a byte's high bit is set in the result when
 * the byte is < `b` (exact for bytes < 0x80) or equal to `b` (may also flag
 * the byte above a real match: callers only use them to decide whether to
 * look closer, where a false alarm costs time, never correctness). */
#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL
static inline uint64_t swar_less(uint64_t w, unsigned char b)
{
    return (w - ONES * b) & ~w & HIGHS;
}
static inline uint64_t swar_eq(uint64_t w, unsigned char b)
{
    uint64_t x = w ^ (ONES * b);
    return (x - ONES) & ~x & HIGHS;
}
/* (swar_eq's false alarms sit above a real match, so `sp & (sp << 8)` is
 * set whenever two spaces are adjacent, and sometimes when not.) */

unsigned ps_text_scan(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    unsigned flags = 0;
    bool prev_space = true; /* a leading space needs folding */
    size_t i = 0;
    while (i < n) {
        /* Skip 8 printable ASCII bytes at a time when no two of them are
         * adjacent spaces. */
        if (i + 8 <= n) {
            uint64_t w;
            memcpy(&w, p + i, 8);
            uint64_t sp = swar_eq(w, ' ');
            uint64_t odd = (w & HIGHS) | swar_less(w, ' ') | swar_eq(w, 0x7F) | (sp & (sp << 8));
            /* first byte a space after a space, or last byte a space at the end */
            bool edge = (prev_space && p[i] == ' ') || (i + 8 == n && p[i + 7] == ' ');
            if (!odd && !edge) {
                prev_space = p[i + 7] == ' ';
                i += 8;
                continue;
            }
        }
        unsigned k = BYTE_CLASS[p[i]];
        i++;
        if (PS_LIKELY(k == 0)) {
            prev_space = false;
            continue;
        }
        if (k == 16) {
            if (prev_space)
                flags |= PS_SCAN_FOLD;
            prev_space = true;
            continue;
        }
        prev_space = false;
        flags |= k;
    }
    if (n > 0 && p[n - 1] == ' ')
        flags |= PS_SCAN_FOLD;
    return flags;
}
