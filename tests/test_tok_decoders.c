/* Decoders of a tokenizer.json (tokenize/decoders.c, decoders_load.c):
 * outputs of HF tokenizers 0.23.2 (node binding: the same JSON, then
 * getDecoder().decode(tokens)), and load errors. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/support/tok_fixture.h"
#include "tokenize/hf.h"

#include <stdio.h>
#include <string.h>

static int load_rc(const char *json, ps_tok_decoder **out, ps_error *err)
{
    json_t *j = ps_test_json(json, JSON_DECODE_ANY);
    ps_tok_load c = {"t.json", err, NULL};
    int rc = ps_tok_decoder_load(&c, j, "decoder", out);
    json_decref(j);
    return rc;
}

/* Decodes the NULL-terminated tokens with the decoder `json`; *rc gets
 * ps_tok_decode's result. */
static const char *decode_rc(const char *json, const char *const *toks, int *rc)
{
    static char out[1024];
    ps_tok_decoder *d = NULL;
    ps_error err = {0};
    if (json && load_rc(json, &d, &err))
        fail_msg("load %s: %s", json, err.message);
    ps_tok_pieces in = {0}, tmp = {0};
    ps_tok_buf text = {0};
    for (size_t i = 0; toks[i]; i++)
        assert_int_equal(ps_tok_pieces_push(&in, toks[i], strlen(toks[i]), false), 0);
    *rc = ps_tok_decode(d, &in, &tmp, &text);
    snprintf(out, sizeof out, "%.*s", (int)text.len, text.p ? text.p : "");
    ps_tok_pieces_free(&in);
    ps_tok_pieces_free(&tmp);
    ps_tok_buf_free(&text);
    ps_tok_decoder_free(d);
    return out;
}

static const char *decode(const char *json, const char *const *toks)
{
    int rc;
    const char *s = decode_rc(json, toks, &rc);
    assert_int_equal(rc, 0);
    return s;
}

#define T(...) ((const char *const[]){__VA_ARGS__, NULL})

static void test_no_decoder_joins_with_spaces(void **state)
{
    (void)state;
    assert_string_equal(decode(NULL, T("a", "##b", "c")), "a ##b c");
    assert_string_equal(decode("null", T("a", "b")), "a b");
}

static void test_bytelevel(void **state)
{
    (void)state;
    const char *bl = "{\"type\":\"ByteLevel\",\"add_prefix_space\":true,\"trim_offsets\":true}";
    /* Ġa -> " a"; Ã© -> é; xé -> 'x' 0xE9 (invalid: U+FFFD); â + U+0082
     * (outside the alphabet) keeps its own bytes */
    assert_string_equal(decode(bl, T("\xc4\xa0" "a", "\xc3\x83\xc2\xa9", "x\xc3\xa9",
                                     "\xc3\xa2\xc2\x82")),
                        " a\xc3\xa9x\xef\xbf\xbd\xc3\xa2\xc2\x82");
    /* ðŁ: F0 9F, a cut 4-byte sequence: one U+FFFD (Rust's lossy rule) */
    assert_string_equal(decode(bl, T("\xc3\xb0\xc5\x81")), "\xef\xbf\xbd");
}

static void test_metaspace(void **state)
{
    (void)state;
    const char *toks[] = {"\xe2\x96\x81" "a\xe2\x96\x81" "b", "\xe2\x96\x81" "c", NULL};
    assert_string_equal(decode("{\"type\":\"Metaspace\",\"replacement\":\"\xe2\x96\x81\"}", toks),
                        "ab c"); /* every ▁ of the first token goes */
    assert_string_equal(decode("{\"type\":\"Metaspace\",\"replacement\":\"\xe2\x96\x81\","
                               "\"prepend_scheme\":\"never\"}",
                               toks),
                        " a b c");
    assert_string_equal(decode("{\"type\":\"Metaspace\",\"replacement\":\"\xe2\x96\x81\","
                               "\"prepend_scheme\":\"first\",\"split\":null}",
                               toks),
                        "ab c");
}

static void test_bytefallback_fuse_strip(void **state)
{
    (void)state;
    /* 61 E2 82 is not UTF-8: one U+FFFD per byte; <0x+6> is byte 6 to
     * Rust's from_str_radix, which takes a sign */
    assert_string_equal(decode("{\"type\":\"ByteFallback\"}",
                               T("<0x61>", "<0xE2>", "<0x82>", "x", "<0xe2>", "<0x82>", "<0xac>",
                                 "<0xZZ>", "<0x6>", "<0x+6>", "<0xC3>")),
                        "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbdx\xe2\x82\xac<0xZZ><0x6>"
                        "\xef\xbf\xbd\xef\xbf\xbd"); /* 06 C3: one run, not UTF-8 */
    assert_string_equal(decode("{\"type\":\"ByteFallback\"}", T("<0x+6>", "y")), "\x06y");
    assert_string_equal(decode("{\"type\":\"Fuse\"}", T("a", "", "b")), "ab");
    assert_string_equal(decode("{\"type\":\"Strip\",\"content\":\" \",\"start\":1,\"stop\":1}",
                               T(" a ", "  b  ", "c")),
                        "a b c");
    assert_string_equal(decode("{\"type\":\"Strip\",\"content\":\"\xc3\xa9\",\"start\":2,"
                               "\"stop\":3}",
                               T("\xc3\xa9\xc3\xa9" "a\xc3\xa9\xc3\xa9", "\xc3\xa9" "a\xc3\xa9")),
                        "aa");
    /* where HF's Strip indexes past the token (it panics): PS_EINVAL */
    int rc;
    decode_rc("{\"type\":\"Strip\",\"content\":\"x\",\"start\":1,\"stop\":1}", T("x"), &rc);
    assert_int_equal(rc, PS_EINVAL);
    decode_rc("{\"type\":\"Strip\",\"content\":\" \",\"start\":0,\"stop\":1}", T(""), &rc);
    assert_int_equal(rc, PS_EINVAL);
}

static void test_replace_wordpiece_bpe_ctc(void **state)
{
    (void)state;
    assert_string_equal(decode("{\"type\":\"Replace\",\"pattern\":{\"String\":\"\xe2\x96\x81\"},"
                               "\"content\":\" \"}",
                               T("\xe2\x96\x81" "a\xe2\x96\x81" "b")),
                        " a b");
    assert_string_equal(decode("{\"type\":\"Replace\",\"pattern\":{\"Regex\":\"a+\"},"
                               "\"content\":\"X\"}",
                               T("baab")),
                        "bXb");
    /* an empty String pattern matches everywhere, but not in an empty token */
    assert_string_equal(decode("{\"type\":\"Replace\",\"pattern\":{\"String\":\"\"},"
                               "\"content\":\"X\"}",
                               T("ab", "")),
                        "XaXbX");
    assert_string_equal(decode("{\"type\":\"WordPiece\",\"prefix\":\"##\",\"cleanup\":true}",
                               T("hello", "##lo", ",", "do", "n't", "a", ".")),
                        "hellolo, don't a.");
    assert_string_equal(decode("{\"type\":\"BPEDecoder\",\"suffix\":\"</w>\"}",
                               T("a</w>", "b</w>c", "d</w>")),
                        "a b cd");
    assert_string_equal(decode("{\"type\":\"BPEDecoder\",\"suffix\":\"\"}", T("ab", "c")),
                        " a b c");
    assert_string_equal(decode("{\"type\":\"CTC\",\"pad_token\":\"<pad>\","
                               "\"word_delimiter_token\":\"|\",\"cleanup\":true}",
                               T("a", "a", "<pad>", "b", "|", "c", "c")),
                        "ab c");
    /* HF's legacy untagged forms: no type, or an unknown one */
    assert_string_equal(decode("{\"suffix\":\"</w>\"}", T("a</w>", "b")), "a b");
    assert_string_equal(decode("{\"type\":\"Foo\",\"prefix\":\"##\",\"cleanup\":false}",
                               T("a", "##b")),
                        "ab");
}

static void test_sequence(void **state)
{
    (void)state;
    /* Llama 2's decoder */
    assert_string_equal(
        decode("{\"type\":\"Sequence\",\"decoders\":[{\"type\":\"Replace\",\"pattern\":{\"String\":"
               "\"\xe2\x96\x81\"},\"content\":\" \"},{\"type\":\"ByteFallback\"},{\"type\":\"Fuse\"},"
               "{\"type\":\"Strip\",\"content\":\" \",\"start\":1,\"stop\":0}]}",
               T("\xe2\x96\x81hi", "<0x21>", "\xe2\x96\x81", "<0xE2>", "<0x82>", "<0xAC>")),
        "hi! \xe2\x82\xac");
}

/* test_load_errors' loader: nothing may be made. */
static int try_load(const char *json, ps_error *err)
{
    ps_tok_decoder *d = NULL;
    int rc = load_rc(json, &d, err);
    assert_null(d);
    return rc;
}

static void test_load_errors(void **state)
{
    (void)state;
    static const ps_test_load_case cases[] = {
        {"{\"type\":\"ByteLevel\"}", PS_EFORMAT, "t.json: decoder: missing member 'add_prefix_space'"},
        {"{\"type\":\"Metaspace\",\"replacement\":\"ab\"}", PS_EFORMAT,
         "t.json: decoder.replacement: expected a string of one character"},
        {"{\"type\":\"Metaspace\",\"replacement\":\"_\",\"add_prefix_space\":false}", PS_EFORMAT,
         "t.json: decoder: add_prefix_space does not match declared prepend_scheme"},
        {"{\"type\":\"Metaspace\",\"replacement\":\"_\",\"prepend_scheme\":\"sometimes\"}",
         PS_EFORMAT,
         "t.json: decoder.prepend_scheme: expected \"first\", \"never\" or \"always\""},
        {"{\"type\":\"Sequence\",\"decoders\":[{\"type\":\"Fuse\"},{\"type\":\"Strip\","
         "\"content\":\" \",\"start\":1}]}",
         PS_EFORMAT, "t.json: decoder.decoders[1]: missing member 'stop'"},
        {"{\"type\":\"Replace\",\"pattern\":{\"Regex\":\"(\"},\"content\":\"\"}", PS_EUSAGE,
         NULL},
        {"{\"type\":\"Replace\",\"pattern\":\"x\",\"content\":\"\"}", PS_EFORMAT,
         "t.json: decoder.pattern: expected {\"String\": ...} or {\"Regex\": ...}"},
        {"{\"type\":\"Foo\"}", PS_EUSAGE, "t.json: decoder.type: 'Foo' is not supported"},
        {"{}", PS_EFORMAT, "t.json: decoder: matches no decoder (no \"type\")"},
        {"[]", PS_EFORMAT, "t.json: decoder: expected an object"},
    };
    ps_test_load_errors(cases, sizeof cases / sizeof *cases, try_load,
                        "t.json: decoder.pattern.Regex: ");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_decoder_joins_with_spaces),
        cmocka_unit_test(test_bytelevel),
        cmocka_unit_test(test_metaspace),
        cmocka_unit_test(test_bytefallback_fuse_strip),
        cmocka_unit_test(test_replace_wordpiece_bpe_ctc),
        cmocka_unit_test(test_sequence),
        cmocka_unit_test(test_load_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
