/* Unit tests of the tokenizer.json normalizers (tokenize/normalizers.c and
 * norm_*.c): each type and option on strings whose expected bytes came
 * from HF's binding (tokenizers@0.23.2), the legacy forms without "type",
 * load errors (codes and messages), the buffer contract (ASCII fast paths
 * leave the work buffer untouched; repeated calls do not grow buffers).
 * Agreement on every code point is tests/conformance/normalizers.js's job. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/support/tok_fixture.h"
#include "tokenize/hf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S(lit) lit, sizeof(lit) - 1

static ps_tok_norm *load(const char *json, int *rc, ps_error *err)
{
    json_t *j = ps_test_json(json, JSON_DECODE_ANY);
    ps_tok_load c = {"t.json", err, NULL};
    ps_tok_norm *n = (ps_tok_norm *)1;
    memset(err, 0, sizeof *err);
    *rc = ps_tok_norm_load(&c, j, "normalizer", &n);
    json_decref(j);
    return n;
}

static void hexdump(char *out, size_t size, const char *s, size_t n)
{
    size_t w = 0;
    for (size_t i = 0; i < n && w + 4 < size; i++)
        w += (size_t)snprintf(out + w, size - w, "%02x ", (unsigned char)s[i]);
    out[w] = '\0';
}

/* Normalizes in[0..in_len) with the normalizer `json`: must give want. */
static void expect_norm(const char *json, const char *in, size_t in_len, const char *want,
                        size_t want_len)
{
    ps_error err;
    int rc;
    ps_tok_norm *n = load(json, &rc, &err);
    if (rc)
        fail_msg("%s: load failed: %s", json, err.message);
    ps_tok_buf io = {0}, tmp = {0};
    assert_int_equal(ps_tok_buf_put(&io, in, in_len), 0);
    assert_int_equal(ps_tok_norm_apply(n, &io, &tmp), 0);
    if (io.len != want_len || memcmp(io.p, want, want_len)) {
        char a[512], b[512];
        hexdump(a, sizeof a, io.p, io.len);
        hexdump(b, sizeof b, want, want_len);
        fail_msg("%s:\n  got  %s\n  want %s", json, a, b);
    }
    ps_tok_buf_free(&io);
    ps_tok_buf_free(&tmp);
    ps_tok_norm_free(n);
}

#define EXPECT(json, in, want) expect_norm(json, S(in), S(want))

/* test_load_errors' loader: nothing may be made. */
static int try_load(const char *json, ps_error *err)
{
    int rc;
    assert_null(load(json, &rc, err));
    return rc;
}

static void test_unicode_forms(void **state)
{
    (void)state;
    EXPECT("{\"type\":\"NFC\"}", "e\xcc\x81", "\xc3\xa9");
    /* reordered marks: U+0316 (class 220) sorts first, U+0301 still composes */
    EXPECT("{\"type\":\"NFC\"}", "a\xcc\x81\xcc\x96", "\xc3\xa1\xcc\x96");
    EXPECT("{\"type\":\"NFC\"}", "\xe1\x84\x80\xe1\x85\xa1\xe1\x86\xa8", "\xea\xb0\x81"); /* L V T */
    /* U+11A7 is no trailing consonant: HF keeps it (utf8proc would join it) */
    EXPECT("{\"type\":\"NFC\"}", "\xea\xb0\x80\xe1\x86\xa7", "\xea\xb0\x80\xe1\x86\xa7");
    EXPECT("{\"type\":\"NFD\"}", "\xe1\xb9\xa9\xc3\xa9\xf0\x91\xa4\xb8",
           "s\xcc\xa3\xcc\x87"
           "e\xcc\x81\xf0\x91\xa4\xb8"); /* U+11938 is newer than HF's tables */
    EXPECT("{\"type\":\"NFKC\"}", "\xef\xac\x81\xe2\x91\xa0\xe3\x8b\xbf\xe1\xba\x9b\xcc\xa3",
           "fi1\xe3\x8b\xbf\xe1\xb9\xa9"); /* U+32FF (Reiwa, 12.1) stays */
    EXPECT("{\"type\":\"NFKD\"}", "\xef\xbc\xa1\xe1\xba\x9b\xcc\xa3", "As\xcc\xa3\xcc\x87");
    EXPECT("{\"type\":\"NFKD\"}", "plain ASCII, untouched", "plain ASCII, untouched");
    EXPECT("{\"type\":\"NFC\"}", "", "");
}

/* More than 32 marks in a run: the counting-sort path of reordering. */
static void test_long_mark_run(void **state)
{
    (void)state;
    char in[1 + 200 * 4 + 1], want[sizeof in];
    size_t k = 0;
    in[k++] = 'x';
    for (int i = 0; i < 100; i++) {
        memcpy(in + k, "\xcc\x81\xcc\x96", 4); /* U+0301 (230), U+0316 (220) */
        k += 4;
    }
    size_t w = 0;
    want[w++] = 'x';
    for (int i = 0; i < 100; i++, w += 2)
        memcpy(want + w, "\xcc\x96", 2);
    for (int i = 0; i < 100; i++, w += 2)
        memcpy(want + w, "\xcc\x81", 2);
    expect_norm("{\"type\":\"NFD\"}", in, k, want, w);
}

static void test_lowercase_and_accents(void **state)
{
    (void)state;
    EXPECT("{\"type\":\"Lowercase\"}", "HeLLo", "hello");
    EXPECT("{\"type\":\"Lowercase\"}", "\xc3\x80\xc4\xb0\xce\xa3", "\xc3\xa0i\xcc\x87\xcf\x83");
    /* StripAccents removes marks (Mn, Mc, Me of Unicode 9) without decomposing */
    EXPECT("{\"type\":\"StripAccents\"}", "\xc3\xa9 e\xcc\x81 \xe0\xa4\x83", "\xc3\xa9 e ");
    EXPECT("{\"type\":\"StripAccents\"}", "a\xe1\xb3\xb2" "b\xe1\xb7\xba", "ab\xe1\xb7\xba");
}

static void test_strip_prepend_replace(void **state)
{
    (void)state;
    const char *both = "{\"type\":\"Strip\",\"strip_left\":true,\"strip_right\":true}";
    EXPECT(both, "\xc2\xa0\xe3\x80\x80\xe2\x80\x8b a \xe1\xa0\x8e\xe2\x80\xa8",
           "\xe2\x80\x8b a \xe1\xa0\x8e"); /* U+200B, U+180E are no White_Space */
    EXPECT("{\"type\":\"Strip\",\"strip_left\":true,\"strip_right\":false}", "  a  ", "a  ");
    EXPECT("{\"type\":\"Strip\",\"strip_left\":false,\"strip_right\":true}", "  a  ", "  a");
    EXPECT(both, " \t\n ", "");
    EXPECT("{\"type\":\"Prepend\",\"prepend\":\"\xe2\x96\x81\"}", "ab", "\xe2\x96\x81" "ab");
    EXPECT("{\"type\":\"Prepend\",\"prepend\":\"\xe2\x96\x81\"}", "", "");
    EXPECT("{\"type\":\"Replace\",\"pattern\":{\"String\":\"a\"},\"content\":\"bb\"}", "aXa", "bbXbb");
    EXPECT("{\"type\":\"Replace\",\"pattern\":{\"String\":\"(\"},\"content\":\"b\"}", "a(a", "aba");
    EXPECT("{\"type\":\"Replace\",\"pattern\":{\"String\":\"\"},\"content\":\"_\"}", "ab", "_a_b_");
    EXPECT("{\"type\":\"Replace\",\"pattern\":{\"String\":\"\"},\"content\":\"_\"}", "", "");
    EXPECT("{\"type\":\"Replace\",\"pattern\":{\"Regex\":\"a*\"},\"content\":\"_\"}", "baac", "_b_c_");
    EXPECT("{\"type\":\"Replace\",\"pattern\":{\"Regex\":\" {2,}\"},\"content\":\" \"}", "a   b  c",
           "a b c");
}

static void test_bytelevel_nmt(void **state)
{
    (void)state;
    EXPECT("{\"type\":\"ByteLevel\"}", "a \xc3\xa9\n", "a\xc4\xa0\xc3\x83\xc2\xa9\xc4\x8a");
    EXPECT("{\"type\":\"ByteLevel\"}", "abc!~", "abc!~");
    expect_norm("{\"type\":\"Nmt\"}", S("a\xe2\x80\x8b" "b\x01\x00" "c\t\xe2\x96\x81"),
                S("a b\x00" "c  "));
}

static void test_bert(void **state)
{
    (void)state;
    expect_norm("{\"type\":\"BertNormalizer\",\"clean_text\":true,\"handle_chinese_chars\":true,"
                "\"strip_accents\":null,\"lowercase\":true}",
                S("H\xc3\xa9llo\xe4\xb8\x80\tX\x00\xc2\xa0\xc2\x85\xef\xbf\xbd\xe2\x80\x8b!"),
                S("hello \xe4\xb8\x80  x !"));
    expect_norm("{\"type\":\"BertNormalizer\",\"clean_text\":false,\"handle_chinese_chars\":false,"
                "\"strip_accents\":true,\"lowercase\":false}",
                S("H\xc3\xa9llo \xc4\xb0 \xe4\xb8\x80\t\x00"), S("Hello I \xe4\xb8\x80\t\x00"));
    EXPECT("{\"type\":\"BertNormalizer\",\"clean_text\":true,\"handle_chinese_chars\":true,"
           "\"strip_accents\":false,\"lowercase\":true}",
           "\xc4\xb0stanbul \xc3\x89", "i\xcc\x87stanbul \xc3\xa9");
    /* all-ASCII path: \v and \f are controls (dropped), \r is whitespace */
    EXPECT("{\"type\":\"BertNormalizer\",\"clean_text\":true,\"handle_chinese_chars\":false,"
           "\"lowercase\":true}",
           "A\x0b" "B\x0c" "C\rD\x7f", "abc d");
    EXPECT("{\"type\":\"Bert\",\"clean_text\":false,\"handle_chinese_chars\":false,"
           "\"lowercase\":false}",
           "A\x0b" "B", "A\x0b" "B");
}

static void test_sequence_and_legacy(void **state)
{
    (void)state;
    EXPECT("{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"NFKC\"},{\"type\":\"Lowercase\"},"
           "{\"type\":\"Replace\",\"pattern\":{\"Regex\":\" {2,}\"},\"content\":\" \"},"
           "{\"type\":\"Strip\",\"strip_left\":true,\"strip_right\":true},"
           "{\"type\":\"Prepend\",\"prepend\":\"\xe2\x96\x81\"}]}",
           "  \xef\xbc\xa8\xef\xbd\x85llo   \xef\xac\x81ne  ", "\xe2\x96\x81hello fine");
    EXPECT("{\"type\":\"Sequence\",\"normalizers\":[]}", "AbC", "AbC");
    /* no "type": HF's untagged order (Bert, Strip, Sequence, ..., Replace, Prepend) */
    EXPECT("{\"strip_left\":true,\"strip_right\":true}", "  a  ", "a");
    EXPECT("{\"prepend\":\"_\"}", "ab", "_ab");
    EXPECT("{\"pattern\":{\"String\":\"a\"},\"content\":\"b\"}", "aa", "bb");
    EXPECT("{\"prepend\":\"_\",\"pattern\":{\"String\":\"a\"},\"content\":\"b\"}", "aa", "bb");
    EXPECT("{\"clean_text\":true,\"handle_chinese_chars\":true,\"lowercase\":true,"
           "\"strip_left\":true,\"strip_right\":true}",
           " X ", " x ");
    EXPECT("{\"normalizers\":[{\"type\":\"Lowercase\"}]}", "Ab", "ab");
    /* unknown members are ignored, as serde does */
    EXPECT("{\"type\":\"Lowercase\",\"foo\":1}", "X", "x");

    ps_error err;
    int rc;
    assert_null(load("null", &rc, &err));
    assert_int_equal(rc, 0);
    ps_tok_buf io = {0}, tmp = {0};
    assert_int_equal(ps_tok_buf_put(&io, S("Same")), 0);
    assert_int_equal(ps_tok_norm_apply(NULL, &io, &tmp), 0);
    assert_int_equal(io.len, 4);
    ps_tok_buf_free(&io);
}

static void test_load_errors(void **state)
{
    (void)state;
    static const ps_test_load_case cases[] = {
        {"{\"type\":\"Foo\"}", PS_EUSAGE,
         "t.json: normalizer.type: 'Foo' is not a supported normalizer"},
        {"{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"NFC\"},{\"type\":\"Bar\"}]}",
         PS_EUSAGE, "t.json: normalizer.normalizers[1].type: 'Bar' is not a supported normalizer"},
        {"{\"type\":\"Strip\",\"strip_left\":true}", PS_EFORMAT,
         "t.json: normalizer.strip_right: missing field"},
        {"{\"type\":\"Strip\",\"strip_left\":true,\"strip_right\":null}", PS_EFORMAT,
         "t.json: normalizer.strip_right: expected true or false"},
        {"{\"type\":\"BertNormalizer\",\"clean_text\":1,\"handle_chinese_chars\":true,"
         "\"lowercase\":true}", PS_EFORMAT,
         "t.json: normalizer.clean_text: expected true or false"},
        {"{\"type\":\"BertNormalizer\",\"clean_text\":true,\"handle_chinese_chars\":true,"
         "\"lowercase\":true,\"strip_accents\":\"x\"}", PS_EFORMAT,
         "t.json: normalizer.strip_accents: expected true or false"},
        {"{\"type\":\"Bert\"}", PS_EFORMAT, "t.json: normalizer.clean_text: missing field"},
        {"{\"type\":\"Sequence\"}", PS_EFORMAT, "t.json: normalizer.normalizers: missing field"},
        {"{\"type\":\"Sequence\",\"normalizers\":null}", PS_EFORMAT,
         "t.json: normalizer.normalizers: expected an array"},
        {"{\"type\":\"Sequence\",\"normalizers\":[null]}", PS_EFORMAT,
         "t.json: normalizer.normalizers[0]: expected a normalizer object"},
        {"{\"type\":\"Prepend\",\"prepend\":5}", PS_EFORMAT,
         "t.json: normalizer.prepend: expected a string"},
        {"{\"type\":\"Replace\",\"pattern\":\"a\",\"content\":\"b\"}", PS_EFORMAT,
         "t.json: normalizer.pattern: expected {\"String\": ...} or {\"Regex\": ...}"},
        {"{\"type\":\"Replace\",\"pattern\":{\"Glob\":\"a\"},\"content\":\"b\"}", PS_EFORMAT,
         "t.json: normalizer.pattern: unknown variant 'Glob', expected 'String' or 'Regex'"},
        {"{\"type\":\"Replace\",\"pattern\":{\"String\":\"a\"}}", PS_EFORMAT,
         "t.json: normalizer.content: missing field"},
        {"{\"type\":\"Replace\",\"pattern\":{\"Regex\":\"(\"},\"content\":\"b\"}", PS_EUSAGE,
         "t.json: normalizer.pattern.Regex: regex not supported at offset 1: missing closing parenthesis"},
        {"{}", PS_EFORMAT, "t.json: normalizer: no \"type\", and the members match no normalizer"},
        {"{\"type\":5}", PS_EFORMAT, "t.json: normalizer.type: expected a string"},
        {"\"NFC\"", PS_EFORMAT, "t.json: normalizer: expected a normalizer object or null"},
    };
    ps_test_load_errors(cases, sizeof cases / sizeof *cases, try_load, NULL);

    char deep[4096] = "";
    for (int i = 0; i < 70; i++)
        strcat(deep, "{\"type\":\"Sequence\",\"normalizers\":[");
    strcat(deep, "{\"type\":\"NFC\"}");
    for (int i = 0; i < 70; i++)
        strcat(deep, "]}");
    ps_error err;
    assert_int_equal(try_load(deep, &err), PS_ELIMIT);
    assert_non_null(strstr(err.message, "]: normalizers nested more than 64 deep"));
}

/* ASCII input through the Unicode normalizers never touches the work
 * buffer, and a repeated call on the same text does not grow either one. */
static void test_buffers(void **state)
{
    (void)state;
    const char *ascii_safe[] = {
        "{\"type\":\"NFC\"}", "{\"type\":\"NFD\"}", "{\"type\":\"NFKC\"}", "{\"type\":\"NFKD\"}",
        "{\"type\":\"Lowercase\"}", "{\"type\":\"StripAccents\"}",
        "{\"type\":\"BertNormalizer\",\"clean_text\":true,\"handle_chinese_chars\":true,"
        "\"lowercase\":true}",
        "{\"type\":\"Strip\",\"strip_left\":true,\"strip_right\":true}",
        "{\"type\":\"Replace\",\"pattern\":{\"String\":\"zz\"},\"content\":\"y\"}",
    };
    for (size_t k = 0; k < sizeof ascii_safe / sizeof ascii_safe[0]; k++) {
        ps_error err;
        int rc;
        ps_tok_norm *n = load(ascii_safe[k], &rc, &err);
        assert_int_equal(rc, 0);
        ps_tok_buf io = {0}, tmp = {0};
        assert_int_equal(ps_tok_buf_put(&io, S("SELECT name FROM t WHERE x = 1")), 0);
        assert_int_equal(ps_tok_norm_apply(n, &io, &tmp), 0);
        if (tmp.p)
            fail_msg("%s used the work buffer on ASCII", ascii_safe[k]);
        ps_tok_buf_free(&io);
        ps_tok_norm_free(n);
    }
    ps_error err;
    int rc;
    ps_tok_norm *n = load("{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"NFKD\"},"
                          "{\"type\":\"Lowercase\"},{\"type\":\"NFC\"}]}",
                          &rc, &err);
    assert_int_equal(rc, 0);
    ps_tok_buf io = {0}, tmp = {0};
    size_t caps = 0;
    for (int round = 0; round < 50; round++) {
        io.len = 0;
        assert_int_equal(ps_tok_buf_put(&io, S("\xef\xbc\xa8\xc3\x89LLO w\xc3\xb6rld \xef\xac\x81")), 0);
        assert_int_equal(ps_tok_norm_apply(n, &io, &tmp), 0);
        assert_int_equal(io.len, sizeof("h\xc3\xa9llo w\xc3\xb6rld fi") - 1);
        assert_memory_equal(io.p, "h\xc3\xa9llo w\xc3\xb6rld fi", io.len);
        if (round == 1)
            caps = io.cap + tmp.cap;
        else if (round > 1)
            assert_int_equal(io.cap + tmp.cap, caps);
    }
    ps_tok_buf_free(&io);
    ps_tok_buf_free(&tmp);
    ps_tok_norm_free(n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unicode_forms),
        cmocka_unit_test(test_long_mark_run),
        cmocka_unit_test(test_lowercase_and_accents),
        cmocka_unit_test(test_strip_prepend_replace),
        cmocka_unit_test(test_bytelevel_nmt),
        cmocka_unit_test(test_bert),
        cmocka_unit_test(test_sequence_and_legacy),
        cmocka_unit_test(test_load_errors),
        cmocka_unit_test(test_buffers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
