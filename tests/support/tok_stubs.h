/* Header-only helpers the tokenizer component tests and the fuzz targets
 * share (the fuzz targets are built without tests/support's objects). */
#ifndef PS_TEST_TOK_STUBS_H
#define PS_TEST_TOK_STUBS_H

#include "tokenize/hf.h"

#include <stdint.h>
#include <stdlib.h>

/* A normalizer that lowercases ASCII letters only, in place. */
static inline int ps_test_ascii_lower(const ps_tok_norm *n, ps_tok_buf *io, ps_tok_buf *tmp)
{
    (void)n;
    (void)tmp;
    for (size_t i = 0; i < io->len; i++)
        if (io->p[i] >= 'A' && io->p[i] <= 'Z')
            io->p[i] = (char)(io->p[i] + 32);
    return 0;
}

/* Padded base64 of b[0..n) (a tokenizer.json's precompiled_charsmap),
 * NUL-terminated, malloc'd; NULL when out of memory. */
static inline char *ps_test_base64(const uint8_t *b, size_t n)
{
    static const char *abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *s = malloc(n / 3 * 4 + 8);
    size_t o = 0;
    for (size_t i = 0; s && i < n; i += 3) {
        uint32_t v = (uint32_t)b[i] << 16 | (i + 1 < n ? (uint32_t)b[i + 1] << 8 : 0) |
                     (i + 2 < n ? b[i + 2] : 0);
        s[o++] = abc[v >> 18];
        s[o++] = abc[(v >> 12) & 63];
        s[o++] = i + 1 < n ? abc[(v >> 6) & 63] : '=';
        s[o++] = i + 2 < n ? abc[v & 63] : '=';
    }
    if (s)
        s[o] = '\0';
    return s;
}

#endif
