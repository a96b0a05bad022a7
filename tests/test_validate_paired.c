/* Tests of validate/: the paired statistics: outcome accounting per label and
 * reason, the most-changed examples, character counts. Shared helpers:
 * tests/support/validate_fixture.c. */
#include "tests/support/validate_fixture.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- paired ---------------------------------------------------------------------- */

static void test_paired_accounting_and_examples(void **state)
{
    (void)state;
    ps_vpaired *p = ps_vpaired_new(3), *p1 = ps_vpaired_new(3), *p2 = ps_vpaired_new(3);
    struct {
        const char *label, *qb, *qa;
        ps_outcome o;
        const char *reason, *rule;
    } R[] = {
        {"a", "hello world", "hello world", PS_OUTCOME_KEPT, NULL, NULL},
        {"a", "hello  world", "hello world", PS_OUTCOME_KEPT, NULL, NULL},        /* -1 char */
        {"b", "abcdefghij", "ab", PS_OUTCOME_KEPT, NULL, NULL},                   /* -80% */
        {"b", "abcdefghij", "ab", PS_OUTCOME_KEPT, NULL, NULL},                   /* tie: later */
        {"b", "xyz", NULL, PS_OUTCOME_REJECTED, "empty_after_cleaning", "strip"}, /* 100% */
        {"c", "dup", "dup", PS_OUTCOME_DUPLICATE, NULL, NULL},
        {NULL, "q", NULL, PS_OUTCOME_REJECTED, "dropped_by_rule", "no-q"},
        {"c", NULL, NULL, PS_OUTCOME_REJECTED, "bad_json", NULL},
        {"c", "\xe4\xb8\xad\xe6\x96\x87", "\xe4\xb8\xad", PS_OUTCOME_KEPT, NULL, NULL}, /* 2 -> 1 chars */
    };
    size_t n = sizeof R / sizeof R[0];
    for (size_t i = 0; i < n; i++) {
        ps_vpair r = {.id = "id", .source = "src", .label = R[i].label, .outcome = R[i].o,
                      .reason = R[i].reason, .rule = R[i].rule, .question_before = R[i].qb,
                      .question_before_len = R[i].qb ? strlen(R[i].qb) : 0,
                      .sql_before = R[i].qb ? "SELECT 1" : NULL, .sql_before_len = 8,
                      .question_after = R[i].qa, .question_after_len = R[i].qa ? strlen(R[i].qa) : 0,
                      .sql_after = R[i].qa ? "SELECT 1" : NULL, .sql_after_len = 8};
        assert_int_equal(ps_vpaired_add(p, &r), 0);
        assert_int_equal(ps_vpaired_add(i < 4 ? p1 : p2, &r), 0);
    }
    assert_int_equal(p->records_in, 9);
    assert_int_equal(p->kept, 5);
    assert_int_equal(p->rejected, 3);
    assert_int_equal(p->duplicates, 1);
    assert_int_equal(p->unparsed, 1);
    assert_int_equal(p->empty_after_cleaning, 1);
    assert_int_equal(p->changed_question, 4);
    assert_int_equal(p->zero[0], 1);
    assert_int_equal(p->shrink[0][1], 2);   /* -1 char twice (ASCII and CJK) */
    assert_int_equal(p->shrink[0][8], 2);   /* -8 chars twice */
    assert_int_equal(p->rel[0][80], 2);
    assert_int_equal(p->rel[0][50], 1);     /* 2 -> 1 chars */
    const ps_vpaired_label *b = ps_vpaired_find_label(p, "b");
    assert_non_null(b);
    assert_int_equal(b->records_in, 3);
    assert_int_equal(b->kept, 2);
    assert_int_equal(b->empty_after_cleaning, 1);
    /* examples: largest relative change first, ties in input order */
    assert_int_equal(p->nex, 3);
    assert_true(p->ex[0].score == 1.0);
    assert_string_equal(p->ex[0].reason, "empty_after_cleaning");
    assert_true(p->ex[1].score == 0.8 && p->ex[1].seq == 2);
    assert_true(p->ex[2].score == 0.8 && p->ex[2].seq == 3);
    /* merge of two halves = the whole, JSON equal */
    assert_int_equal(ps_vpaired_merge(p1, p2), 0);
    char *a = json_text(ps_vpaired_to_json(p)), *m = json_text(ps_vpaired_to_json(p1));
    assert_string_equal(a, m);
    /* round trip */
    json_t *j = json_loads(a, 0, NULL);
    ps_vpaired *back = NULL;
    assert_int_equal(ps_vpaired_from_json(j, &back, NULL), 0);
    char *a2 = json_text(ps_vpaired_to_json(back));
    assert_string_equal(a, a2);
    /* hostile: counts that do not add up */
    json_object_set_new(j, "rejected", json_integer(7));
    ps_vpaired *bad = NULL;
    ps_error err;
    assert_int_equal(ps_vpaired_from_json(j, &bad, &err), PS_EFORMAT);
    assert_null(bad);
    json_decref(j);
    j = json_loads(a, 0, NULL);
    json_array_append_new(json_object_get(j, "examples"), json_pack("{si}", "seq", 1));
    assert_int_equal(ps_vpaired_from_json(j, &bad, &err), PS_EFORMAT);
    json_decref(j);
    j = json_loads(a, 0, NULL);
    json_object_set_new(json_object_get(json_object_get(j, "change"), "question_chars"), "zero",
                        json_integer(100));
    assert_int_equal(ps_vpaired_from_json(j, &bad, &err), PS_EFORMAT);
    json_decref(j);
    size_t len = strlen(a);
    for (int t = 0; t < 300; t++) {
        char *d = strdup(a);
        for (int k = 0; k < 3; k++)
            d[rnd() % len] = "0123456789[]{},\"-ax"[rnd() % 19];
        json_t *jj = json_loads(d, 0, NULL);
        ps_vpaired *q = NULL;
        if (jj && ps_vpaired_from_json(jj, &q, NULL) == 0)
            ps_vpaired_free(q);
        json_decref(jj);
        free(d);
    }
    free(a);
    free(m);
    free(a2);
    ps_vpaired_free(back);
    ps_vpaired_free(p);
    ps_vpaired_free(p1);
    ps_vpaired_free(p2);
}

/* The character count behind the length changes, against a plain count. */
static void test_paired_char_count(void **state)
{
    (void)state;
    static const char *const PIECES[] = {"a", "Z", " ", "\xc3\xa9", "\xe4\xb8\xad", "\xf0\x9f\x98\x80", "\xd0\xaf"};
    for (int t = 0; t < 300; t++) {
        char buf[512];
        size_t len = 0, chars = 0, n = rnd() % 100;
        for (size_t i = 0; i < n; i++) {
            const char *p = PIECES[rnd() % 7];
            memcpy(buf + len, p, strlen(p));
            len += strlen(p);
            chars++;
        }
        buf[len] = '\0';
        ps_vpaired *p = ps_vpaired_new(0);
        ps_vpair r = {.label = "x", .outcome = PS_OUTCOME_KEPT, .question_before = buf,
                      .question_before_len = len, .sql_before = "s", .sql_before_len = 1,
                      .question_after = "", .question_after_len = 0, .sql_after = "s",
                      .sql_after_len = 1};
        assert_int_equal(ps_vpaired_add(p, &r), 0);
        if (chars)
            assert_int_equal(p->shrink[0][ps_vbin_of((uint32_t)chars)], 1);
        else
            assert_int_equal(p->zero[0], 1);
        ps_vpaired_free(p);
    }
}

/* The relative-change bin, floor(100 |after - before| / before) capped at
 * 100, matches a long double reference for every length pair up to 700
 * and for lengths near 2^32 (the counts the build's workers pass). */
static void test_relative_change_bins(void **state)
{
    (void)state;
    static uint64_t want[101];
    ps_vpaired *p = ps_vpaired_new(0);
    assert_non_null(p);
    uint64_t pairs[][2] = {{4294967295u, 1}, {4294967295u, 4294967294u}, {3000000007u, 2999999999u},
                           {4294967291u, 42949672u}, {1, 4294967295u}, {7, 0}};
    size_t extra = sizeof pairs / sizeof pairs[0], total = 0;
    for (uint64_t b = 1; b <= 700 + extra; b++) {
        for (uint64_t a = 0; a <= (b <= 700 ? 2 * b : 0); a++) {
            uint64_t before = b <= 700 ? b : pairs[b - 701][0];
            uint64_t after = b <= 700 ? a : pairs[b - 701][1];
            uint64_t d = after > before ? after - before : before - after;
            long double r = (long double)d * 100.0L / (long double)before;
            want[r >= 100.0L ? 100 : (unsigned)floorl(r)]++;
            ps_vpair x = {.id = "id", .source = "src", .label = "l", .outcome = PS_OUTCOME_KEPT,
                          .question_before = "q", .question_before_len = 1, .sql_before = "s",
                          .sql_before_len = 1, .question_after = "q", .question_after_len = 1,
                          .sql_after = "s", .sql_after_len = 1, .counted = true,
                          .question_before_chars = (uint32_t)before,
                          .question_after_chars = (uint32_t)after, .sql_before_chars = 1,
                          .sql_after_chars = 1};
            assert_int_equal(ps_vpaired_add(p, &x), 0);
            total++;
        }
    }
    uint64_t seen = 0;
    for (int i = 0; i <= 100; i++) {
        assert_int_equal(p->rel[0][i], want[i]);
        seen += p->rel[0][i];
    }
    assert_int_equal(seen, total);
    ps_vpaired_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_paired_accounting_and_examples),
        cmocka_unit_test(test_relative_change_bins),
        cmocka_unit_test(test_paired_char_count),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
