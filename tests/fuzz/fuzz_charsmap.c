/*
 * The Precompiled normalizer's charsmap (tokenize/precompiled.c) on
 * untrusted bytes: the input is the decoded blob (trie size, darts-clone
 * units, replacement pool), base64-encoded here into the normalizer's JSON.
 * A blob must load or be refused with PS_EFORMAT and a message; one that
 * loads normalizes fixed texts (clusters, keys, CR LF, NUL) without reading
 * outside it, into valid UTF-8, the same twice.
 */
#include "tokenize/hf.h"
#include "tests/support/tok_stubs.h"
#include "tokenize/unicode.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char *const TEXTS[] = {
    "How many singers do we have? SELECT count(*) FROM singer;\r\n\t",
    "\xef\xbc\xa1\xcc\x81 e\xcc\x81 a\xcc\x81\xcc\x81 \xef\xbc\xa1\xcc\x81\xcc\x81\xcc\x81",
    "\xe4\xb8\xad\xe6\x96\x87 \xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd \xef\xac\x81 \xe2\x85\xab",
    "\x01\x7f\xc2\xa0\xc2\xbd \xe0\xa4\x95\xe0\xa5\x8d\xe0\xa4\xb7 \xe1\xab\x8f",
};

static int valid_utf8(const char *p, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned l = ps_tok_utf8_decode((const unsigned char *)p + i, n - i, &(uint32_t){0});
        if (!l)
            return 0;
        i += l;
    }
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *b64 = ps_test_base64(data, size);
    json_t *j = b64 ? json_pack("{s:s,s:s}", "type", "Precompiled", "precompiled_charsmap", b64) : NULL;
    free(b64);
    if (!j)
        return 0;
    ps_error err = {0};
    ps_tok_load c = {"fuzz.json", &err, NULL};
    ps_tok_norm *n = NULL;
    int rc = ps_tok_precompiled_load(&c, j, "normalizer", &n);
    json_decref(j);
    if (rc == PS_ENOMEM)
        return 0;
    if (rc != 0 && (rc != PS_EFORMAT || !strstr(err.message, "normalizer.precompiled_charsmap")))
        abort(); /* refused with another code, or without naming the member */
    if (rc != 0)
        return 0;
    ps_tok_buf io = {0}, tmp = {0}, first = {0};
    for (size_t t = 0; t < sizeof TEXTS / sizeof *TEXTS; t++) {
        for (int round = 0; round < 2; round++) {
            io.len = 0;
            if (ps_tok_buf_put(&io, TEXTS[t], strlen(TEXTS[t])) || n->apply(n, &io, &tmp))
                abort();
            if (!valid_utf8(io.p, io.len))
                abort(); /* the pool is valid UTF-8 and values start characters */
            if (round == 0) {
                first.len = 0;
                if (ps_tok_buf_put(&first, io.p, io.len))
                    abort();
            } else if (first.len != io.len || memcmp(first.p, io.p, io.len)) {
                abort(); /* not a function of its input */
            }
        }
    }
    ps_tok_buf_free(&io);
    ps_tok_buf_free(&tmp);
    ps_tok_buf_free(&first);
    n->destroy(n);
    return 0;
}
