/*
 * Unicode helpers used by more than one stage (ingest cleans whitespace,
 * tokenize splits on it), defined once.
 */
#ifndef PS_COMMON_UNICODE_H
#define PS_COMMON_UNICODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The White_Space property (stable since Unicode 6.3, when U+180E left it):
 * what cleaning folds and what BERT splits on. */
static inline bool ps_is_white_space(uint32_t cp)
{
    switch (cp) {
    case 0x09: case 0x0A: case 0x0B: case 0x0C: case 0x0D: case 0x20:
    case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029:
    case 0x202F: case 0x205F: case 0x3000:
        return true;
    default:
        return cp >= 0x2000 && cp <= 0x200A;
    }
}

/* Code points in valid UTF-8: the bytes that are not continuation bytes. */
static inline uint32_t ps_utf8_count(const char *s, size_t n)
{
    uint32_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += ((unsigned char)s[i] & 0xC0) != 0x80;
    return c;
}

/* Encodes cp (a scalar value <= U+10FFFF) as UTF-8 into out; returns the
 * length, 1 to 4. */
static inline unsigned ps_utf8_encode(uint32_t cp, char out[4])
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Typographic quotes and dashes, CJK and full-width punctuation, symbols
 * and emoji: characters a cleaning rule usually maps to ASCII or drops
 * (the hint for a word that became [UNK], in tokenize and validate). */
static inline bool ps_is_typographic(uint32_t cp)
{
    return (cp >= 0x2010 && cp <= 0x205F) ||  /* dashes, quotes, ellipsis */
           (cp >= 0x3000 && cp <= 0x303F) ||  /* CJK punctuation */
           (cp >= 0xFF00 && cp <= 0xFFEF) ||  /* full-width forms */
           (cp >= 0x2190 && cp <= 0x2BFF) ||  /* arrows, symbols, dingbats */
           (cp >= 0x1F000 && cp <= 0x1FAFF) || /* emoji */
           cp == 0x00A0 || cp == 0x00B7;
}

#endif
