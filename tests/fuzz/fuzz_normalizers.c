/*
 * The tokenizer.json normalizers on arbitrary text. The first byte picks
 * one of the normalizers below (every type, some options, Sequences); the
 * rest, repaired to valid UTF-8 (the promise apply relies on), is
 * normalized twice with the same buffers. The output must be valid UTF-8,
 * the two results equal, and the Unicode forms idempotent (NFC of NFC is
 * NFC, and so on), as they are in HF's unicode-normalization.
 */
#include "tokenize/hf.h"
#include "tokenize/unicode.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const configs[] = {
    "{\"type\":\"NFC\"}",
    "{\"type\":\"NFD\"}",
    "{\"type\":\"NFKC\"}",
    "{\"type\":\"NFKD\"}",
    "{\"type\":\"Lowercase\"}",
    "{\"type\":\"StripAccents\"}",
    "{\"type\":\"Nmt\"}",
    "{\"type\":\"ByteLevel\"}",
    "{\"type\":\"Strip\",\"strip_left\":true,\"strip_right\":true}",
    "{\"type\":\"Strip\",\"strip_left\":false,\"strip_right\":true}",
    "{\"type\":\"Prepend\",\"prepend\":\"\\u2581\"}",
    "{\"type\":\"Replace\",\"pattern\":{\"String\":\" \"},\"content\":\"\\u2581\"}",
    "{\"type\":\"Replace\",\"pattern\":{\"String\":\"\"},\"content\":\"_\"}",
    "{\"type\":\"Replace\",\"pattern\":{\"Regex\":\"\\\\s+|a*\"},\"content\":\" \"}",
    "{\"type\":\"BertNormalizer\",\"clean_text\":true,\"handle_chinese_chars\":true,"
    "\"lowercase\":true}",
    "{\"type\":\"BertNormalizer\",\"clean_text\":false,\"handle_chinese_chars\":true,"
    "\"strip_accents\":true,\"lowercase\":false}",
    "{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"NFD\"},{\"type\":\"StripAccents\"},"
    "{\"type\":\"Lowercase\"},{\"type\":\"NFKC\"}]}",
};
#define N_CONFIGS (sizeof configs / sizeof configs[0])
#define FIRST_NON_NF 4 /* configs[0..4) are the Unicode forms */

static ps_tok_norm *norms[N_CONFIGS];

static ps_tok_norm *norm_for(unsigned k)
{
    if (!norms[k]) {
        ps_error err;
        ps_tok_load c = {"fuzz", &err, NULL};
        json_t *j = json_loads(configs[k], 0, NULL);
        if (!j || ps_tok_norm_load(&c, j, "normalizer", &norms[k]) != 0) {
            fprintf(stderr, "fuzz_normalizers: config %u does not load\n", k);
            abort(); /* the harness itself is broken: not a finding */
        }
        json_decref(j);
    }
    return norms[k];
}

static int valid_utf8(const char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        unsigned len = ps_tok_utf8_decode((const unsigned char *)s + i, n - i, &cp);
        if (!len)
            return 0;
        i += len;
    }
    return 1;
}

/* Copies in[0..n) to out as valid UTF-8: a byte that starts no valid
 * sequence becomes '?'. Returns the length. */
static size_t repair(const uint8_t *in, size_t n, ps_tok_buf *out)
{
    out->len = 0;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        unsigned len = ps_tok_utf8_decode(in + i, n - i, &cp);
        if (ps_tok_buf_put(out, len ? (const void *)(in + i) : "?", len ? len : 1))
            abort();
        i += len ? len : 1;
    }
    return out->len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    unsigned k = data[0] % N_CONFIGS;
    const ps_tok_norm *n = norm_for(k);
    static ps_tok_buf in, io, tmp, again;
    repair(data + 1, size - 1, &in);
    for (int round = 0; round < 2; round++) {
        ps_tok_buf *dst = round ? &again : &io;
        dst->len = 0;
        if (ps_tok_buf_put(dst, in.p, in.len) || ps_tok_norm_apply(n, dst, &tmp))
            return 0; /* out of memory under -malloc_limit_mb: not a finding */
        if (!valid_utf8(dst->p, dst->len))
            abort();
    }
    if (io.len != again.len || (io.len && memcmp(io.p, again.p, io.len)))
        abort(); /* the buffers' history changed the result */
    if (k < FIRST_NON_NF) {
        if (ps_tok_norm_apply(n, &again, &tmp))
            return 0;
        if (io.len != again.len || (io.len && memcmp(io.p, again.p, io.len)))
            abort(); /* not idempotent */
    }
    return 0;
}
