/* The strict number parser behind every flag and environment variable
 * (common/parse_num.c): what it accepts, what it refuses and why, and the
 * messages naming the text. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "common/parse_num.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_u64_accepts_plain_digits(void **state)
{
    (void)state;
    uint64_t v = 99;
    assert_int_equal(ps_parse_u64("0", 0, 10, &v), PS_NUM_OK);
    assert_int_equal(v, 0);
    assert_int_equal(ps_parse_u64("007", 0, 10, &v), PS_NUM_OK);
    assert_int_equal(v, 7);
    assert_int_equal(ps_parse_u64("18446744073709551615", 0, UINT64_MAX, &v), PS_NUM_OK);
    assert_true(v == UINT64_MAX);
    assert_int_equal(ps_parse_u64("100000", 1, 100000, &v), PS_NUM_OK);
    assert_int_equal(v, 100000);
}

static void test_u64_refuses(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        ps_num_status want;
    } cases[] = {
        {"", PS_NUM_EMPTY},        {"abc", PS_NUM_JUNK},     {"5x", PS_NUM_JUNK},
        {" 5", PS_NUM_JUNK},       {"5 ", PS_NUM_JUNK},      {"+5", PS_NUM_JUNK},
        {"1/2", PS_NUM_JUNK},      {"0x10", PS_NUM_JUNK},    {"1e3", PS_NUM_JUNK},
        {"-", PS_NUM_JUNK},        {"-1", PS_NUM_NEGATIVE},  {"-0", PS_NUM_NEGATIVE},
        {"11", PS_NUM_RANGE},      {"4294967304", PS_NUM_RANGE},
        {"18446744073709551616", PS_NUM_RANGE}, /* 2^64: would wrap to 0 */
        {"99999999999999999999999", PS_NUM_RANGE},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        uint64_t v = 42;
        ps_num_status st = ps_parse_u64(cases[i].text, 0, 10, &v);
        if (st != cases[i].want)
            fail_msg("'%s': status %d, want %d", cases[i].text, st, cases[i].want);
        assert_int_equal(v, 42); /* untouched */
    }
    uint64_t v;
    assert_int_equal(ps_parse_u64(NULL, 0, 10, &v), PS_NUM_EMPTY);
    assert_int_equal(ps_parse_u64("0", 1, 10, &v), PS_NUM_RANGE);
}

static void test_i64_bounds(void **state)
{
    (void)state;
    int64_t v = 0;
    assert_int_equal(ps_parse_i64("-9223372036854775808", INT64_MIN, INT64_MAX, &v), PS_NUM_OK);
    assert_true(v == INT64_MIN);
    assert_int_equal(ps_parse_i64("9223372036854775807", INT64_MIN, INT64_MAX, &v), PS_NUM_OK);
    assert_true(v == INT64_MAX);
    assert_int_equal(ps_parse_i64("9223372036854775808", INT64_MIN, INT64_MAX, &v), PS_NUM_RANGE);
    assert_int_equal(ps_parse_i64("-9223372036854775809", INT64_MIN, INT64_MAX, &v), PS_NUM_RANGE);
    assert_int_equal(ps_parse_i64("-3", -5, 5, &v), PS_NUM_OK);
    assert_int_equal(v, -3);
    assert_int_equal(ps_parse_i64("-6", -5, 5, &v), PS_NUM_RANGE);
    assert_int_equal(ps_parse_i64("--1", -5, 5, &v), PS_NUM_JUNK);
    assert_int_equal(ps_parse_i64("-", -5, 5, &v), PS_NUM_JUNK);
    assert_int_equal(ps_parse_i64("", -5, 5, &v), PS_NUM_EMPTY);
    assert_int_equal(ps_parse_i64("+1", -5, 5, &v), PS_NUM_JUNK);
}

static void test_explain(void **state)
{
    (void)state;
    char buf[200];
    ps_num_explain_u64(buf, sizeof buf, PS_NUM_JUNK, "abc", 0, 3);
    assert_string_equal(buf, "'abc' is not a whole number (0..3)");
    ps_num_explain_u64(buf, sizeof buf, PS_NUM_EMPTY, "", 1, 100000);
    assert_string_equal(buf, "'' is empty, not a whole number (1..100000)");
    ps_num_explain_i64(buf, sizeof buf, PS_NUM_RANGE, "7", -1, 5);
    assert_string_equal(buf, "'7' is out of range (-1..5)");
    /* control bytes escaped, long text cut */
    ps_num_explain_u64(buf, sizeof buf, PS_NUM_JUNK, "1\n2", 0, 9);
    assert_string_equal(buf, "'1\\x0a2' is not a whole number (0..9)");
    char longtext[300];
    memset(longtext, '7', sizeof longtext - 1);
    longtext[sizeof longtext - 1] = '\0';
    ps_num_explain_u64(buf, sizeof buf, PS_NUM_RANGE, longtext, 0, 9);
    assert_true(strlen(buf) < 100);
    assert_non_null(strstr(buf, "...' is out of range (0..9)"));
}

static void test_env(void **state)
{
    (void)state;
    ps_error err;
    int64_t v = 0;
    int set = 7;
    unsetenv("PS_TEST_ARGS_VAR");
    assert_int_equal(ps_env_i64("reader", "PS_TEST_ARGS_VAR", 0, 9, 4, &v, &set, &err), PS_OK);
    assert_int_equal(v, 4);
    assert_int_equal(set, 0);
    setenv("PS_TEST_ARGS_VAR", "3", 1);
    assert_int_equal(ps_env_i64("reader", "PS_TEST_ARGS_VAR", 0, 9, 4, &v, &set, &err), PS_OK);
    assert_int_equal(v, 3);
    assert_int_equal(set, 1);
    static const char *const bad[] = {"", "abc", "-1", "10", "4294967299", " 3"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        setenv("PS_TEST_ARGS_VAR", bad[i], 1);
        ps_error_clear(&err);
        v = 5;
        assert_int_equal(ps_env_i64("reader", "PS_TEST_ARGS_VAR", 0, 9, 4, &v, &set, &err),
                         PS_EUSAGE);
        assert_int_equal(v, 5);
        char want[100];
        snprintf(want, sizeof want, "reader: PS_TEST_ARGS_VAR='%s' ", bad[i]);
        if (strncmp(err.message, want, strlen(want)) != 0)
            fail_msg("'%s': message '%s'", bad[i], err.message);
    }
    unsetenv("PS_TEST_ARGS_VAR");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_u64_accepts_plain_digits),
        cmocka_unit_test(test_u64_refuses),
        cmocka_unit_test(test_i64_bounds),
        cmocka_unit_test(test_explain),
        cmocka_unit_test(test_env),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
