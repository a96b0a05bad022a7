/*
 * The tokenizer.json loader (ps_tokenizer_load_json) on untrusted bytes,
 * written to a file; when it loads, a fixed text is encoded with it.
 */
#include "tests/fuzz/fuzz_util.h"
#include "tests/fuzz/fuzz_tok_check.h"

static const char TEXT[] = "How many singers do we have? SELECT count(*) FROM singer "
                           "\xc3\xa9t\xc3\xa9 \xe4\xb8\xad\xe6\x96\x87 [MASK] Abc ##c unaffable";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write("tokenizer.json", data, size);
    ps_tokenizer *tok = NULL;
    ps_error err = {0};
    int rc = ps_tokenizer_load_json(path, &tok, &err);
    FUZZ_CHECK_ERROR(rc, err);
    if (rc < 0)
        return 0;
    ps_tokenizer_options o;
    ps_tokenizer_get_options(tok, &o);
    if (o.strip_accents != 0 && o.strip_accents != 1)
        abort(); /* documented as resolved */
    fuzz_encode_then_free(tok, TEXT, sizeof TEXT - 1, 12);
    return 0;
}
