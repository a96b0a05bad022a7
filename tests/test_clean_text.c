/* Unit tests of the cleaning steps: UTF-8 repair, normalisation, control
 * removal, whitespace folding, and SQL-aware folding. */
#include "ingest/ingest.h"
#include "tests/support/testutil.h"

#include <jansson.h>
#include <string.h>

static ps_buf out;

static int setup(void **state)
{
    (void)state;
    ps_buf_init(&out);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    ps_buf_free(&out);
    return 0;
}

#define S(lit) lit, sizeof(lit) - 1

static void test_utf8_decode_maximal_subparts(void **state)
{
    (void)state;
    int32_t cp;
    assert_int_equal(ps_utf8_decode((const unsigned char *)"\xE2\x82\xAC", 3, &cp), 3);
    assert_int_equal(cp, 0x20AC);
    /* E0 A0 is a valid prefix of a 3-byte char: one maximal subpart of 2. */
    assert_int_equal(ps_utf8_decode((const unsigned char *)"\xE0\xA0" "A", 3, &cp), -2);
    /* Overlong E0 80: E0 alone is the subpart. */
    assert_int_equal(ps_utf8_decode((const unsigned char *)"\xE0\x80\x80", 3, &cp), -1);
    /* Surrogate ED A0 80 is invalid. */
    assert_int_equal(ps_utf8_decode((const unsigned char *)"\xED\xA0\x80", 3, &cp), -1);
    /* Above U+10FFFF. */
    assert_int_equal(ps_utf8_decode((const unsigned char *)"\xF4\x90\x80\x80", 4, &cp), -1);
    assert_int_equal(ps_utf8_decode((const unsigned char *)"\xF4\x8F\xBF\xBF", 4, &cp), 4);
    assert_int_equal(cp, 0x10FFFF);
    assert_int_equal(ps_utf8_decode((const unsigned char *)"\xC0\xAF", 2, &cp), -1);
    assert_int_equal(ps_utf8_decode((const unsigned char *)"\xF0\x9F\x98", 3, &cp), -3);
}

static void test_utf8_check_and_repair(void **state)
{
    (void)state;
    const char good[] = "caf\xC3\xA9 \xE6\x95\xB0\xE6\x8D\xAE \xF0\x9F\x98\x80 0123456789";
    assert_int_equal(ps_utf8_check(good, strlen(good)), strlen(good));
    const char bad[] = "abcdefghij\xFFxyz";
    assert_int_equal(ps_utf8_check(bad, strlen(bad)), 10);
    size_t replaced = 0;
    assert_int_equal(ps_utf8_repair(S("a\xFF" "b\xE0\xA0" "c\xF0\x9F\x98"), &out, &replaced), 0);
    assert_string_equal(out.data, "a\xEF\xBF\xBD" "b\xEF\xBF\xBD" "c\xEF\xBF\xBD");
    assert_int_equal(replaced, 3);
    ps_buf_reset(&out);
    assert_int_equal(ps_utf8_repair(S("\xC3\xA9t\xC3\xA9"), &out, &replaced), 0);
    assert_int_equal(replaced, 0);
    assert_string_equal(out.data, "\xC3\xA9t\xC3\xA9");
}

static void test_normalize(void **state)
{
    (void)state;
    /* Full-width "ＳＥＬＥＣＴ" and the "ﬁ" ligature become ASCII under NFKC. */
    assert_int_equal(ps_text_normalize(S("\xEF\xBC\xB3\xEF\xBC\xA5\xEF\xBC\xAC\xEF\xBC\xA5"
                                         "\xEF\xBC\xA3\xEF\xBC\xB4 \xEF\xAC\x81le"),
                                       PS_NORM_NFKC, &out),
                     0);
    assert_string_equal(out.data, "SELECT file");
    /* NFC composes e + U+0301 but keeps the ligature. */
    assert_int_equal(ps_text_normalize(S("e\xCC\x81 \xEF\xAC\x81"), PS_NORM_NFC, &out), 0);
    assert_string_equal(out.data, "\xC3\xA9 \xEF\xAC\x81");
    assert_int_equal(ps_text_normalize(S("e\xCC\x81"), PS_NORM_NONE, &out), 0);
    assert_string_equal(out.data, "e\xCC\x81");
    /* Hangul jamo compose; ASCII is untouched. */
    assert_int_equal(ps_text_normalize(S("\xE1\x84\x92\xE1\x85\xA1\xE1\x86\xAB"), PS_NORM_NFKC,
                                       &out),
                     0);
    assert_string_equal(out.data, "\xED\x95\x9C");
    assert_int_equal(ps_text_normalize(S("plain ascii"), PS_NORM_NFKC, &out), 0);
    assert_string_equal(out.data, "plain ascii");
}

static void test_strip_controls(void **state)
{
    (void)state;
    size_t removed = 0;
    /* NUL, BEL, DEL, ZWSP, BOM, soft hyphen, LRM removed; tab/newline kept. */
    assert_int_equal(ps_text_strip_controls(S("a\0b\x07" "c\x7F" "d\xE2\x80\x8B" "e\xEF\xBB\xBF"
                                              "f\xC2\xAD" "g\xE2\x80\x8Eh\ti\nj"),
                                            false, &out, &removed),
                     0);
    assert_string_equal(out.data, "abcdefgh\ti\nj");
    assert_int_equal(removed, 7);
    /* ZWNJ (Persian "mi-khaham") kept by default, removed on request. */
    const char fa[] = "\xD9\x85\xDB\x8C\xE2\x80\x8C\xD8\xAE\xD9\x88\xD8\xA7\xD9\x87\xD9\x85";
    assert_int_equal(ps_text_strip_controls(fa, strlen(fa), false, &out, &removed), 0);
    assert_string_equal(out.data, fa);
    assert_int_equal(removed, 0);
    assert_int_equal(ps_text_strip_controls(fa, strlen(fa), true, &out, &removed), 0);
    assert_int_equal(removed, 1);
    assert_int_equal(out.len, strlen(fa) - 3);
    /* C1 control U+0085 (NEL) is whitespace: kept for the folding step. */
    assert_int_equal(ps_text_strip_controls(S("a\xC2\x85" "b\xC2\x80" "c"), false, &out,
                                            &removed),
                     0);
    assert_string_equal(out.data, "a\xC2\x85" "bc");
}

static void test_fold_whitespace(void **state)
{
    (void)state;
    assert_int_equal(ps_text_fold_whitespace(S("  How   many\t\tsingers\r\n are there?  "), &out),
                     0);
    assert_string_equal(out.data, "How many singers are there?");
    /* NBSP, ideographic space, line separator, NEL fold too. */
    assert_int_equal(ps_text_fold_whitespace(S("a\xC2\xA0\xE3\x80\x80" "b\xE2\x80\xA8" "c\xC2\x85"),
                                             &out),
                     0);
    assert_string_equal(out.data, "a b c");
    assert_int_equal(ps_text_fold_whitespace(S(" \t\n "), &out), 0);
    assert_int_equal(out.len, 0);
    /* A non-space character sharing a lead byte with spaces stays. */
    assert_int_equal(ps_text_fold_whitespace(S("x\xE2\x80\x94y"), &out), 0);
    assert_string_equal(out.data, "x\xE2\x80\x94y");
}

static const char *sql_fold(const char *in, bool backslash, bool *unterminated)
{
    bool u = false;
    assert_int_equal(ps_sql_fold_whitespace(in, strlen(in), backslash, &out, &u), 0);
    if (unterminated)
        *unterminated = u;
    return out.data;
}

static void test_sql_fold_outside_literals(void **state)
{
    (void)state;
    assert_string_equal(sql_fold("SELECT count(*)  FROM head WHERE age  >  56 ", false, NULL),
                        "SELECT count(*) FROM head WHERE age > 56");
    /* Literal and identifiers keep their inner whitespace exactly. */
    assert_string_equal(sql_fold("SELECT  *  FROM t WHERE name = 'New   York\t' AND  \"my  col\" = 1",
                                 false, NULL),
                        "SELECT * FROM t WHERE name = 'New   York\t' AND \"my  col\" = 1");
    assert_string_equal(sql_fold("SELECT `a  b`,  [c  d]  FROM x", false, NULL),
                        "SELECT `a  b`, [c  d] FROM x");
    /* Doubled quotes are escapes, not ends. */
    assert_string_equal(sql_fold("SELECT 'it''s   here'   FROM t", false, NULL),
                        "SELECT 'it''s   here' FROM t");
    /* Backslash escapes only when asked (MySQL). */
    assert_string_equal(sql_fold("SELECT 'a\\'  b'   ,  1", true, NULL), "SELECT 'a\\'  b' , 1");
    /* ... without it, 'a\' ends at the second quote and the last quote
     * opens an unterminated literal, kept verbatim. */
    assert_string_equal(sql_fold("SELECT 'a\\'  b'   ,  1", false, NULL),
                        "SELECT 'a\\' b'   ,  1");
    /* Dollar quoting (PostgreSQL), and $1 parameters are not quotes. */
    assert_string_equal(sql_fold("SELECT $tag$ a   b $tag$ ,  $$  x  $$,  $1  +  $2", false, NULL),
                        "SELECT $tag$ a   b $tag$ , $$  x  $$, $1 + $2");
}

static void test_sql_fold_comments(void **state)
{
    (void)state;
    /* The newline ending a -- comment survives: otherwise FROM would be
     * commented out. */
    assert_string_equal(sql_fold("SELECT a  -- the   name\n   FROM t", false, NULL),
                        "SELECT a -- the name\nFROM t");
    assert_string_equal(sql_fold("SELECT a -- don't\r\nFROM t", false, NULL),
                        "SELECT a -- don't\nFROM t");
    /* Quotes inside comments open nothing. */
    bool u = true;
    assert_string_equal(sql_fold("SELECT /* it's  a   note */  1", false, &u),
                        "SELECT /* it's a note */ 1");
    assert_false(u);
}

static void test_sql_fold_unterminated(void **state)
{
    (void)state;
    bool u = false;
    assert_string_equal(sql_fold("SELECT  * FROM t WHERE a = 'open   end  ", false, &u),
                        "SELECT * FROM t WHERE a = 'open   end  ");
    assert_true(u);
    assert_string_equal(sql_fold("  ", false, &u), "");
    assert_false(u);
}

/* ps_text_scan's promise: a step whose flag is absent is the identity.
 * Checked on every Spider question and query and on random ASCII. */
static void check_scan_claims(const char *s, size_t n)
{
    unsigned need = ps_text_scan(s, n);
    ps_buf a;
    ps_buf_init(&a);
    if (!(need & PS_SCAN_NONASCII)) {
        assert_int_equal(ps_text_normalize(s, n, PS_NORM_NFKC, &a), 0);
        assert_true(a.len == n && memcmp(a.data, s, n) == 0);
    }
    if (!(need & (PS_SCAN_NONASCII | PS_SCAN_CONTROL))) {
        size_t removed = 1;
        assert_int_equal(ps_text_strip_controls(s, n, false, &a, &removed), 0);
        assert_int_equal(removed, 0);
    }
    if (!(need & (PS_SCAN_NONASCII | PS_SCAN_CONTROL | PS_SCAN_FOLD))) {
        assert_int_equal(ps_text_fold_whitespace(s, n, &a), 0);
        assert_true(a.len == n && (n == 0 || memcmp(a.data, s, n) == 0));
    }
    ps_buf_free(&a);
}

static void test_scan_claims(void **state)
{
    (void)state;
    const char *files[] = {"spider/train.json", "spider/dev.json"};
    size_t checked = 0;
    for (int f = 0; f < 2; f++) {
        json_error_t e;
        json_t *arr = json_load_file(ps_test_data(files[f]), 0, &e);
        assert_non_null(arr);
        size_t i;
        json_t *rec;
        json_array_foreach(arr, i, rec)
        {
            const char *keys[] = {"question", "query"};
            for (int k = 0; k < 2; k++) {
                json_t *v = json_object_get(rec, keys[k]);
                check_scan_claims(json_string_value(v), json_string_length(v));
                checked++;
            }
        }
        json_decref(arr);
    }
    assert_true(checked > 16000);
    /* Random ASCII strings (0-31 bytes, so the 8-byte steps and their
     * edges are crossed) over an alphabet rich in spaces and controls. */
    const char alphabet[] = "ab  '\"\t\n\x01 \x7f~";
    unsigned seed = 12345;
    char buf[32];
    for (int t = 0; t < 300000; t++) {
        size_t n = (seed = seed * 1103515245u + 12345u) >> 27;
        for (size_t j = 0; j < n; j++)
            buf[j] = alphabet[((seed = seed * 1103515245u + 12345u) >> 16) % (sizeof alphabet - 1)];
        check_scan_claims(buf, n);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_utf8_decode_maximal_subparts),
        cmocka_unit_test(test_utf8_check_and_repair),
        cmocka_unit_test(test_normalize),
        cmocka_unit_test(test_strip_controls),
        cmocka_unit_test(test_fold_whitespace),
        cmocka_unit_test(test_sql_fold_outside_literals),
        cmocka_unit_test(test_sql_fold_comments),
        cmocka_unit_test(test_sql_fold_unterminated),
        cmocka_unit_test(test_scan_claims),
    };
    return cmocka_run_group_tests_name("clean_text", tests, setup, teardown);
}
