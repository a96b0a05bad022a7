/* Damaged and unusual vocab.txt files: HuggingFace's ids for a vocabulary
 * without [PAD]/[MASK], with a BOM, CRLF or duplicates, and the load
 * warnings naming the file, line and entry. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "pairshard/tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static ps_tokenizer *load(const char *text, const char *name)
{
    ps_tokenizer *tok = NULL;
    ps_error err;
    int rc = ps_tokenizer_load_vocab_buffer(text, strlen(text), name, NULL, &tok, &err);
    if (rc)
        fail_msg("load %s: %s", name, err.message);
    return tok;
}

/* The ids of `text` encoded alone, as a string "1 2 3". */
static void ids_of(ps_tokenizer *tok, const char *text, char *out, size_t cap)
{
    ps_tok_scratch *s = ps_tok_scratch_new();
    ps_encoding e;
    assert_true(ps_tokenizer_encode(tok, s, text, strlen(text), 0, &e, NULL) > 0);
    size_t o = 0;
    out[0] = '\0';
    for (size_t i = 0; i < e.len; i++)
        o += (size_t)snprintf(out + o, cap - o, "%s%d", i ? " " : "", e.input_ids[i]);
    ps_tok_scratch_free(s);
}

static int has_warning(const ps_tokenizer *tok, const char *part)
{
    for (size_t i = 0; i < ps_tokenizer_warning_count(tok); i++)
        if (strstr(ps_tokenizer_warning(tok, i), part))
            return 1;
    return 0;
}

#define BASE "[UNK]\n[CLS]\n[SEP]\npad\n[\n]\nhello\n"

static void test_missing_pad_is_added(void **state)
{
    (void)state;
    ps_tokenizer *tok = load(BASE "[MASK]\n", "v.txt");
    char ids[128];
    ids_of(tok, "[PAD] hello", ids, sizeof ids);
    /* HF: [CLS] [PAD]=8 (distinct tokens) hello [SEP], not [ pad ] */
    assert_string_equal(ids, "1 8 6 2");
    assert_int_equal(ps_tokenizer_token_to_id(tok, "[PAD]", 5), 8);
    assert_true(ps_tokenizer_vocab_size(tok) >= 9);
    assert_true(has_warning(tok, "v.txt: no [PAD] token: added as id 8"));
    ps_tokenizer_free(tok);
    /* both missing: consecutive ids in BertTokenizerFast's order */
    tok = load(BASE, "v.txt");
    ids_of(tok, "[MASK] [PAD]", ids, sizeof ids);
    assert_string_equal(ids, "1 8 7 2");
    ps_tokenizer_free(tok);
}

static void test_bom_crlf_duplicates(void **state)
{
    (void)state;
    ps_tokenizer *tok = load("\xEF\xBB\xBF[PAD]\r\n" BASE "[MASK]\r\nhello\n", "b.txt");
    char ids[128];
    ids_of(tok, "[PAD] hello", ids, sizeof ids);
    /* the BOM'd line is not [PAD]: added at 9 distinct tokens; hello's later line wins */
    assert_string_equal(ids, "2 9 9 3");
    assert_true(has_warning(tok, "b.txt:1: the file starts with a UTF-8 byte-order mark"));
    assert_true(has_warning(tok, "b.txt:1: 2 of 10 lines end in CRLF"));
    assert_true(has_warning(tok, "b.txt:8: 'hello' appears again at line 10"));
    ps_tokenizer_free(tok);
}

static void test_html_escaped_and_clean(void **state)
{
    (void)state;
    ps_tokenizer *tok = load("[PAD]\n" BASE "[MASK]\n&lt;\n&amp;\n&\n", "h.txt");
    assert_true(has_warning(tok, "h.txt:10: '&lt;' is HTML-escaped and '<' is missing"));
    assert_false(has_warning(tok, "&amp;")); /* '&' is there */
    ps_tokenizer_free(tok);
    tok = load("[PAD]\n" BASE "[MASK]\n", "ok.txt");
    assert_int_equal(ps_tokenizer_warning_count(tok), 0);
    ps_tokenizer_free(tok);
}

static void test_damaged_chinese_copy(void **state)
{
    (void)state;
    const char *root = getenv("PS_ROOT") ? getenv("PS_ROOT") : ".";
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/data/vocab/chinese-damaged-small.vocab.txt", root);
    ps_tokenizer *tok = NULL;
    ps_error err;
    assert_int_equal(ps_tokenizer_load_vocab(path, NULL, &tok, &err), 0);
    assert_true(has_warning(tok, "chinese-damaged-small.vocab.txt:134: '&lt;'"));
    assert_true(has_warning(tok, "chinese-damaged-small.vocab.txt:136: '&gt;'"));
    assert_true(has_warning(tok, "chinese-damaged-small.vocab.txt:112: '&amp;'"));
    assert_true(has_warning(tok, "chinese-damaged-small.vocab.txt:1: 200 of 200 lines end in CRLF"));
    ps_tokenizer_free(tok);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_missing_pad_is_added),
        cmocka_unit_test(test_bom_crlf_duplicates),
        cmocka_unit_test(test_html_escaped_and_clean),
        cmocka_unit_test(test_damaged_chinese_copy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
