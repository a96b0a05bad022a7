/*
 * The tokenizer itself on arbitrary text, with the real bert-base-uncased
 * vocabulary (PS_FUZZ_VOCAB, set by run.sh). The first byte picks the
 * normalizer options and a max_length; the rest is the text, encoded as
 * is (invalid UTF-8 must be PS_EUTF8, nothing worse) and, repaired to
 * valid UTF-8, as one sequence, as a pair and without special tokens, plus
 * the normalizer/pre-tokenizer walk.
 */
#include "tests/fuzz/fuzz_util.h"
#include "tests/fuzz/fuzz_tok_check.h"

static ps_tokenizer *toks[32];
static ps_tok_scratch *scratch;

static ps_tokenizer *tokenizer_for(unsigned flags)
{
    flags &= 31;
    if (!toks[flags]) {
        const char *vocab = getenv("PS_FUZZ_VOCAB");
        if (!vocab)
            vocab = "tests/data/vocab/bert-base-uncased.vocab.txt";
        ps_tokenizer_options o;
        ps_tokenizer_options_init(&o);
        o.lowercase = (flags & 1) != 0;
        o.strip_accents = (flags & 2) ? -1 : (flags & 4) ? 1 : 0;
        o.handle_chinese_chars = (flags & 8) != 0;
        o.match_special_tokens = (flags & 16) != 0;
        o.clean_text = (flags & 6) != 6; /* off in one of the accent settings */
        ps_error err;
        if (ps_tokenizer_load_vocab(vocab, &o, &toks[flags], &err) != 0) {
            fprintf(stderr, "fuzz_encode: %s (set PS_FUZZ_VOCAB)\n", err.message);
            abort();
        }
    }
    return toks[flags];
}

/* Copies text, replacing every byte that does not start a valid UTF-8
 * sequence with '?'. */
static size_t repair_utf8(const uint8_t *in, size_t n, char *out)
{
    size_t i = 0, o = 0;
    while (i < n) {
        uint8_t c = in[i];
        size_t k = c < 0x80 ? 1 : (c >= 0xC2 && c <= 0xDF) ? 2 : (c >= 0xE0 && c <= 0xEF) ? 3
                                : (c >= 0xF0 && c <= 0xF4) ? 4 : 0;
        int ok = k > 0 && i + k <= n;
        for (size_t j = 1; ok && j < k; j++)
            ok = (in[i + j] & 0xC0) == 0x80;
        if (ok && k == 3) {
            ok = !(c == 0xE0 && in[i + 1] < 0xA0) && !(c == 0xED && in[i + 1] >= 0xA0);
        } else if (ok && k == 4) {
            ok = !(c == 0xF0 && in[i + 1] < 0x90) && !(c == 0xF4 && in[i + 1] >= 0x90);
        }
        if (!ok) {
            out[o++] = '?';
            i++;
            continue;
        }
        memcpy(out + o, in + i, k);
        o += k;
        i += k;
    }
    return o;
}

static int count_word(void *ctx, const char *word, size_t len)
{
    (void)word;
    if (len == 0)
        abort(); /* the pre-tokenizer never yields an empty word */
    (*(size_t *)ctx)++;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    static const size_t lengths[8] = {0, 3, 4, 5, 8, 17, 64, 512};
    const ps_tokenizer *tok = tokenizer_for(data[0]);
    size_t max_length = lengths[data[0] >> 5];
    if (!scratch)
        scratch = ps_tok_scratch_new();
    const char *raw = (const char *)data + 1;
    size_t n = size - 1;
    ps_encoding enc;
    ps_error err = {0};
    int rc = ps_tokenizer_encode(tok, scratch, raw, n, max_length, &enc, &err);
    FUZZ_CHECK_ERROR(rc, err);
    fuzz_check_encoding(tok, &enc, rc, max_length);

    char *text = malloc(n + 1);
    size_t len = repair_utf8(data + 1, n, text);
    fuzz_encode_all(tok, scratch, text, len, max_length);
    size_t words = 0;
    rc = ps_tokenizer_words(tok, scratch, text, len, count_word, &words, &err);
    if (rc != 0)
        abort(); /* valid UTF-8: the walk cannot fail but for memory */
    free(text);
    return 0;
}
