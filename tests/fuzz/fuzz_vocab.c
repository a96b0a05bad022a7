/*
 * The vocab.txt loader on untrusted bytes (ps_tokenizer_load_vocab_buffer),
 * then, when it loads, encoding a fixed mixed text with it (a vocabulary
 * that lacks [UNK]/[CLS]/[SEP] must be refused by encode, not crash it)
 * and the id <-> token round trip.
 */
#include "tests/fuzz/fuzz_util.h"
#include "tests/fuzz/fuzz_tok_check.h"

static const char TEXT[] = "How many singers do we have? [SEP] SELECT count(*) FROM singer "
                           "\xc3\xa9t\xc3\xa9 \xe4\xb8\xad\xe6\x96\x87 [MASK] ##ing unaffable";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ps_tokenizer_options o;
    ps_tokenizer_options_init(&o);
    o.lowercase = (size & 1) == 0;
    ps_tokenizer *tok = NULL;
    ps_error err = {0};
    int rc = ps_tokenizer_load_vocab_buffer((const char *)data, size, "fuzz-vocab", &o, &tok, &err);
    FUZZ_CHECK_ERROR(rc, err);
    if (rc < 0)
        return 0;
    size_t vs = ps_tokenizer_vocab_size(tok);
    for (size_t id = 0; id < vs && id < 64; id++) {
        const char *t = ps_tokenizer_id_to_token(tok, (int32_t)id);
        if (!t)
            continue; /* a hole: as in HuggingFace, a duplicated line's token
                         keeps its last line, and its earlier id has none */
        /* A token holding a NUL byte cannot round-trip through the
         * NUL-terminated string id_to_token returns: skip those inputs. */
        if (memchr(data, '\0', size))
            continue;
        int32_t back = ps_tokenizer_token_to_id(tok, t, strlen(t));
        if (back < 0 || (size_t)back >= vs)
            abort(); /* (a duplicate maps to its last line, not to id) */
    }
    if (ps_tokenizer_id_to_token(tok, (int32_t)vs) || ps_tokenizer_id_to_token(tok, -1))
        abort();
    fuzz_encode_then_free(tok, TEXT, sizeof TEXT - 1, 16);
    return 0;
}
