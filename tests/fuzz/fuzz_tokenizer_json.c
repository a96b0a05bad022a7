/*
 * The tokenizer.json loader (ps_tokenizer_load_json) on untrusted bytes,
 * written to a file; when it loads, a fixed text is encoded with it.
 */
#include "tests/fuzz/fuzz_util.h"
#include "tests/fuzz/fuzz_tok_check.h"
#include "tokenize/hf.h"

static const char TEXT[] = "How many singers do we have? SELECT count(*) FROM singer "
                           "\xc3\xa9t\xc3\xa9 \xe4\xb8\xad\xe6\x96\x87 [MASK] Abc ##c unaffable";

/* The plain jansson path (fastload.c's fast path switched off) must give
 * the same code, message and encodings. */
static void same_as_plain_path(const char *path, const ps_tokenizer *fast, int rc,
                               const ps_error *err)
{
    ps_tokenizer *slow = NULL;
    ps_error serr = {0};
    ps_tok_fastload_enable(false);
    int src = ps_tokenizer_load_json(path, &slow, &serr);
    ps_tok_fastload_enable(true);
    if (src != rc || strcmp(serr.message, err->message))
        abort();
    if (rc < 0)
        return;
    ps_tok_scratch *a = ps_tok_scratch_new(), *b = ps_tok_scratch_new();
    for (size_t cut = 0; cut <= sizeof TEXT - 1; cut += 7) {
        ps_encoding ea, eb;
        ps_error xa = {0}, xb = {0};
        int ra = ps_tokenizer_encode_pair(fast, a, TEXT, cut, TEXT + cut, sizeof TEXT - 1 - cut,
                                          0, &ea, &xa);
        int rb = ps_tokenizer_encode_pair(slow, b, TEXT, cut, TEXT + cut, sizeof TEXT - 1 - cut,
                                          0, &eb, &xb);
        if (ra != rb || (ra >= 0 && (ea.len != eb.len ||
                                     memcmp(ea.input_ids, eb.input_ids, ea.len * sizeof(int32_t)) ||
                                     memcmp(ea.token_type_ids, eb.token_type_ids, ea.len))))
            abort();
    }
    ps_tok_scratch_free(a);
    ps_tok_scratch_free(b);
    ps_tokenizer_free(slow);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write("tokenizer.json", data, size);
    ps_tokenizer *tok = NULL;
    ps_error err = {0};
    int rc = ps_tokenizer_load_json(path, &tok, &err);
    FUZZ_CHECK_ERROR(rc, err);
    same_as_plain_path(path, tok, rc, &err);
    if (rc < 0)
        return 0;
    ps_tokenizer_options o;
    ps_tokenizer_get_options(tok, &o);
    if (o.strip_accents != 0 && o.strip_accents != 1)
        abort(); /* documented as resolved */
    fuzz_encode_then_free(tok, TEXT, sizeof TEXT - 1, 12);
    return 0;
}
