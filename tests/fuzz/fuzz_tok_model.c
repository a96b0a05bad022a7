/*
 * The tokenizer.json "model" loaders (ps_tok_model_load: BPE, WordPiece,
 * WordLevel, and what an untagged object is taken for) on untrusted JSON;
 * when one loads, fixed pieces are encoded with it, each twice (the second
 * time from the BPE cache), and every id must be a token of the model's
 * vocabulary (merges, unk and byte tokens all come from it), the same both
 * times.
 */
#include "tokenize/hf.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* An error leaves a NUL-terminated message (fuzz_util.h's check; that
 * header's file helpers are not needed here). */
#define FUZZ_CHECK_ERROR(rc, err)                                                              \
    do {                                                                                       \
        if ((rc) < 0 && strnlen((err).message, sizeof (err).message) >= sizeof (err).message) \
            abort();                                                                           \
    } while (0)

static const char *const PIECES[] = {
    "a", "ab", "abc", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "\xc4\xa0the", "unaffable",
    "\xc3\xa9t\xc3\xa9", "\xe4\xb8\xad\xe6\x96\x87", "\xf0\x9f\x98\x80", "x y", "<unk>", "##b",
    "abcdefghijklmnopqrstuvwxyz0123456789"};

static void encode_checked(const ps_tok_model *m, ps_tok_work_slot *slot, const char *p)
{
    ps_tok_ids a = {0}, b = {0};
    ps_error err = {0};
    int ra = m->encode(m, slot, p, strlen(p), &a, &err);
    FUZZ_CHECK_ERROR(ra, err);
    int rb = m->encode(m, slot, p, strlen(p), &b, &err);
    FUZZ_CHECK_ERROR(rb, err);
    if (ra != rb || (!ra && (a.n != b.n || (a.n && memcmp(a.v, b.v, a.n * sizeof *a.v)))))
        abort(); /* the cache changed an encoding */
    for (size_t i = 0; !ra && i < a.n; i++)
        if (a.v[i] < 0 || (size_t)a.v[i] >= m->vocab.n_ids ||
            m->vocab.tok_off[a.v[i]] == SIZE_MAX)
            abort(); /* an id that is no token */
    ps_tok_ids_free(&a);
    ps_tok_ids_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *j = json_loadb((const char *)data, size, 0, NULL);
    if (!j)
        return 0;
    ps_error err = {0};
    ps_tok_load c = {"model.json", &err, NULL};
    ps_tok_model *m = NULL;
    int rc = ps_tok_model_load(&c, j, "model", &m);
    json_decref(j);
    FUZZ_CHECK_ERROR(rc, err);
    if (rc < 0)
        return 0;
    ps_tok_work_slot slot = {0};
    for (size_t i = 0; i < sizeof PIECES / sizeof *PIECES; i++)
        encode_checked(m, &slot, PIECES[i]);
    ps_tok_work_slot_clear(&slot);
    ps_tok_model_free(m);
    return 0;
}
