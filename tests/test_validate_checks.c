/* Tests of validate/: every check on constructed data: pass, warn, fail, not
 * enough data and off. Shared helpers: tests/support/validate_fixture.c. */
#include "tests/support/validate_fixture.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- the checks on constructed data ---------------------------------------------- */

static void test_checks_clean_pass(void **state)
{
    (void)state;
    synth s;
    synth_plain(&s, 1000);
    ps_vreport *r = synth_build(&s, NULL);
    for (size_t i = 0; i < r->n; i++)
        if (r->checks[i].verdict != PS_VV_PASS)
            fail_msg("%s: %s", r->checks[i].name, r->checks[i].explanation);
    assert_string_equal(ps_vreport_verdict(r), "pass");
    /* the same statistics give the same bytes */
    ps_vreport *r2 = synth_build(&s, NULL);
    char *j1 = ps_vreport_json(r), *j2 = ps_vreport_json(r2);
    assert_string_equal(j1, j2);
    free(j1);
    free(j2);
    ps_vreport_free(r2);
    assert_true(check_of(r, "question_chars_ks")->value == 0);
    assert_true(check_of(r, "question_chars_ks")->p_value == 1);
    ps_vreport_free(r);
    synth_free(&s);
}

static void test_checks_not_enough_data(void **state)
{
    (void)state;
    synth s;
    synth_init(&s);
    for (size_t i = 0; i < 50; i++) {
        synth_rec r = plain(i);
        if (i < 10) { /* even a big shift says nothing with 50 records */
            r.qa = 5;
            r.outcome = i < 5 ? PS_OUTCOME_REJECTED : PS_OUTCOME_KEPT;
            r.reason = "dropped_by_rule";
        }
        synth_add(&s, &r);
    }
    ps_vreport *r = synth_build(&s, NULL);
    static const char *const NED[] = {"label_js_distance", "label_psi", "label_chi2",
                                      "question_chars_ks", "sql_chars_psi", "question_chars_quantiles",
                                      "question_length_change", "rejected_share", "unk_token_rate",
                                      "truncation_rate", "label_retention"};
    for (size_t i = 0; i < sizeof NED / sizeof NED[0]; i++) {
        assert_int_equal(verdict(r, NED[i]), PS_VV_NOT_ENOUGH_DATA);
        assert_explains(r, NED[i], "not enough data");
        assert_true(isnan(check_of(r, NED[i])->value));
    }
    assert_int_equal(verdict(r, "accounting"), PS_VV_PASS);
    assert_string_equal(ps_vreport_verdict(r), "pass");
    ps_vreport_free(r);
    /* no input at all */
    ps_vreport *e = NULL;
    assert_int_equal(ps_validate_build(NULL, NULL, NULL, NULL, NULL, &e, NULL), 0);
    assert_string_equal(ps_vreport_verdict(e), "pass");
    assert_int_equal(verdict(e, "accounting"), PS_VV_NOT_ENOUGH_DATA);
    ps_vreport_free(e);
    synth_free(&s);
}

static void test_checks_label_retention(void **state)
{
    (void)state;
    /* L3 loses 60 of its 200 records to one rule */
    synth s;
    synth_init(&s);
    size_t lost = 0;
    for (size_t i = 0; i < 1000; i++) {
        synth_rec r = plain(i);
        if (!strcmp(r.label, "L3") && lost < 60) {
            r.outcome = PS_OUTCOME_REJECTED;
            r.reason = "dropped_by_rule";
            r.rule = "no-db3";
            lost++;
        }
        synth_add(&s, &r);
    }
    ps_vreport *r = synth_build(&s, NULL);
    assert_fails_explained(r, "label_retention", "'L3'");
    assert_int_equal(verdict(r, "rejected_share"), PS_VV_FAIL); /* 6% by one rule */
    assert_explains(r, "rejected_share", "no-db3");
    assert_int_equal(verdict(r, "accounting"), PS_VV_PASS);
    assert_string_equal(ps_vreport_verdict(r), "fail");
    char *sum = ps_vreport_summary(r);
    assert_non_null(strstr(sum, "L3"));
    free(sum);
    ps_vreport_free(r);

    /* warn mode and off */
    ps_vconfig *c = ps_vconfig_new();
    json_t *cj = json_pack("{s{ssssss}}", "modes", "label_retention", "warn", "rejected_share",
                           "off", "label_js_distance", "warn");
    assert_int_equal(ps_vconfig_apply_json(c, cj, NULL), 0);
    json_decref(cj);
    r = synth_build(&s, c);
    assert_int_equal(verdict(r, "label_retention"), PS_VV_WARN);
    assert_int_equal(verdict(r, "rejected_share"), PS_VV_OFF);
    assert_true(isnan(check_of(r, "rejected_share")->value));
    assert_string_equal(ps_vreport_verdict(r), "warn");
    ps_vreport_free(r);
    ps_vconfig_free(c);
    synth_free(&s);

    /* a label that vanishes */
    synth_init(&s);
    for (size_t i = 0; i < 1000; i++) {
        synth_rec q = plain(i);
        if (!strcmp(q.label, "L1") && i < 150) {
            q.label = "tiny";
            q.outcome = PS_OUTCOME_REJECTED;
            q.reason = "too_long";
        }
        synth_add(&s, &q);
    }
    r = synth_build(&s, NULL);
    assert_fails_explained(r, "label_retention", "'tiny' vanished");
    ps_vreport_free(r);
    synth_free(&s);

    /* a mild loss warns: L2 keeps 85% against ~97% overall */
    synth_init(&s);
    lost = 0;
    for (size_t i = 0; i < 1000; i++) {
        synth_rec q = plain(i);
        if (!strcmp(q.label, "L2") && lost < 30) {
            q.outcome = PS_OUTCOME_REJECTED;
            q.reason = "empty_field";
            lost++;
        }
        synth_add(&s, &q);
    }
    r = synth_build(&s, NULL);
    assert_int_equal(verdict(r, "label_retention"), PS_VV_WARN);
    ps_vreport_free(r);
    synth_free(&s);
}

static void test_checks_length_change(void **state)
{
    (void)state;
    /* cleaning halves L4's questions */
    synth s;
    synth_init(&s);
    for (size_t i = 0; i < 1000; i++) {
        synth_rec r = plain(i);
        if (!strcmp(r.label, "L4"))
            r.qa = r.qb / 2;
        synth_add(&s, &r);
    }
    ps_vreport *r = synth_build(&s, NULL);
    assert_fails_explained(r, "question_length_change", "'L4'");
    assert_fails_explained(r, "question_chars_ks_label", "'L4'");
    assert_int_equal(verdict(r, "question_chars_ks"), PS_VV_FAIL); /* 20% of records moved */
    assert_int_equal(verdict(r, "sql_length_change"), PS_VV_PASS);
    assert_int_equal(verdict(r, "sql_chars_ks"), PS_VV_PASS);
    ps_vreport_free(r);
    /* raising the thresholds makes it pass; overrides are reported */
    ps_vconfig *c = ps_vconfig_new();
    json_t *cj = json_pack("{s{sfsfsfsfsfsfsfsfsf}}", "thresholds", "question_length_change", 1.0,
                           "question_chars_ks_label", 1.0, "question_chars_ks", 0.9,
                           "question_chars_psi", 10.0, "question_chars_quantiles", 10.0,
                           "question_chars_ks_warn", 0.9, "question_chars_psi_warn", 10.0,
                           "question_chars_quantiles_warn", 10.0, "question_chars_ks_label_warn", 1.0);
    assert_int_equal(ps_vconfig_apply_json(c, cj, NULL), 0);
    json_decref(cj);
    r = synth_build(&s, c);
    assert_int_equal(verdict(r, "question_length_change"), PS_VV_WARN); /* above the warn 2% */
    assert_int_equal(verdict(r, "question_chars_ks"), PS_VV_PASS);
    assert_true(check_of(r, "question_chars_ks")->threshold == 0.9);
    assert_int_equal(verdict(r, "question_chars_ks_label"), PS_VV_PASS);
    ps_vreport_free(r);
    ps_vconfig_free(c);
    synth_free(&s);
}

static void test_checks_distribution_shift(void **state)
{
    (void)state;
    /* every question grows by 40 chars; every sql by 2 (a small shift) */
    synth s;
    synth_init(&s);
    for (size_t i = 0; i < 2000; i++) {
        synth_rec r = plain(i);
        r.qa = r.qb + 40;
        r.sa = r.sb + 2;
        synth_add(&s, &r);
    }
    ps_vreport *r = synth_build(&s, NULL);
    assert_int_equal(verdict(r, "question_chars_ks"), PS_VV_FAIL);
    assert_true(check_of(r, "question_chars_ks")->p_value < 1e-10);
    assert_int_equal(verdict(r, "question_chars_psi"), PS_VV_FAIL);
    assert_int_equal(verdict(r, "question_chars_quantiles"), PS_VV_FAIL);
    assert_int_equal(verdict(r, "question_length_change"), PS_VV_FAIL);
    /* sql: +2 of 80..160 chars: D about 2/81 */
    assert_int_equal(verdict(r, "sql_chars_ks"), PS_VV_PASS);
    assert_int_equal(verdict(r, "sql_chars_quantiles"), PS_VV_PASS);
    ps_vreport_free(r);
    synth_free(&s);
}

static void test_checks_health(void **state)
{
    (void)state;
    synth s;
    synth_init(&s);
    for (size_t i = 0; i < 1000; i++) {
        synth_rec r = plain(i);
        if (i % 25 == 0)
            r.unk = 1; /* 4% of records; 40 of ~49500 tokens */
        if (i % 50 == 0)
            r.truncated = true; /* 2% */
        synth_add(&s, &r);
    }
    ps_vreport *r = synth_build(&s, NULL);
    assert_int_equal(verdict(r, "unk_record_rate"), PS_VV_WARN);
    assert_int_equal(verdict(r, "unk_token_rate"), PS_VV_PASS);
    assert_int_equal(verdict(r, "truncation_rate"), PS_VV_WARN);
    assert_int_equal(verdict(r, "padding_rate"), PS_VV_PASS);
    ps_vreport_free(r);
    synth_free(&s);

    synth_init(&s);
    for (size_t i = 0; i < 1000; i++) {
        synth_rec q = plain(i);
        q.unk = i % 5 == 0 ? 30 : 0; /* ~12% of tokens */
        q.truncated = i % 10 == 0;
        synth_add(&s, &q);
    }
    r = synth_build(&s, NULL);
    assert_int_equal(verdict(r, "unk_token_rate"), PS_VV_FAIL);
    /* 20% of records: past the threshold, but the record share only warns */
    assert_int_equal(verdict(r, "unk_record_rate"), PS_VV_WARN);
    assert_int_equal(verdict(r, "truncation_rate"), PS_VV_FAIL);
    ps_vreport_free(r);
    synth_free(&s);
}

static void test_checks_empty_and_duplicates(void **state)
{
    (void)state;
    synth s;
    synth_init(&s);
    for (size_t i = 0; i < 1000; i++) {
        synth_rec r = plain(i);
        if (i % 100 == 1) {
            r.outcome = PS_OUTCOME_REJECTED;
            r.reason = "empty_after_cleaning";
            r.rule = "strip";
        }
        if (i % 5 == 2)
            r.outcome = PS_OUTCOME_DUPLICATE;
        synth_add(&s, &r);
    }
    ps_vreport *r = synth_build(&s, NULL);
    assert_int_equal(verdict(r, "empty_after_cleaning"), PS_VV_FAIL); /* 1% > 0.5% */
    assert_int_equal(verdict(r, "duplicate_rate"), PS_VV_WARN);       /* 20%, mode warn */
    assert_int_equal(verdict(r, "accounting"), PS_VV_PASS);
    ps_vreport_free(r);
    /* accounting: statistics that disagree with the paired counts */
    ps_vstats_add_unparsed(s.raw);
    r = synth_build(&s, NULL);
    assert_int_equal(verdict(r, "accounting"), PS_VV_FAIL);
    ps_vreport_free(r);
    synth_free(&s);
}

/* A set that keeps no record fails empty_set, however small (the other
 * checks have too little data to judge), naming the largest causes; a
 * --part's slice is not judged; a set that keeps one passes. */
static void test_checks_empty_set(void **state)
{
    (void)state;
    synth s;
    synth_init(&s);
    for (size_t i = 0; i < 50; i++) {
        synth_rec r = plain(i);
        r.outcome = i % 10 == 9 ? PS_OUTCOME_DUPLICATE : PS_OUTCOME_REJECTED;
        r.reason = i < 30 ? "missing_field" : i < 40 ? "too_long" : "dropped_by_rule";
        r.rule = i < 40 ? NULL : "drop-x";
        synth_add(&s, &r);
    }
    ps_vreport *r = synth_build(&s, NULL);
    assert_int_equal(verdict(r, "empty_set"), PS_VV_FAIL);
    assert_string_equal(ps_vreport_verdict(r), "fail");
    assert_true(check_of(r, "empty_set")->value == 0);
    assert_explains(r, "empty_set", "0 records kept of 50 read (fail below 1): FAIL; rejected 45 "
                                    "(missing_field 27, dropped_by_rule 9 (rule 'drop-x'), "
                                    "too_long 9), duplicates 5");
    assert_int_equal(verdict(r, "rejected_share"), PS_VV_NOT_ENOUGH_DATA);
    ps_vreport_free(r);
    ps_vconfig *c = ps_vconfig_new();
    ps_vconfig_set_slice(c, true);
    r = synth_build(&s, c);
    assert_int_equal(verdict(r, "empty_set"), PS_VV_NOT_ENOUGH_DATA);
    assert_explains(r, "empty_set", "not judged: 0 of 50 records kept in this --part's slice");
    assert_string_equal(ps_vreport_verdict(r), "pass");
    ps_vreport_free(r);
    ps_vconfig_free(c);
    synth_free(&s);
    /* no record read at all */
    synth_init(&s);
    r = synth_build(&s, NULL);
    assert_int_equal(verdict(r, "empty_set"), PS_VV_FAIL);
    assert_explains(r, "empty_set", "0 records kept of 0 read");
    ps_vreport_free(r);
    /* one kept record is a set */
    synth_rec one = plain(0);
    synth_add(&s, &one);
    r = synth_build(&s, NULL);
    assert_int_equal(verdict(r, "empty_set"), PS_VV_PASS);
    assert_explains(r, "empty_set", "1 records kept (fail below 1): ok");
    ps_vreport_free(r);
    synth_free(&s);
}

/* The sql and token sides of the length checks, and padding. */
static void test_checks_sql_tokens_padding(void **state)
{
    (void)state;
    synth s;
    synth_init(&s);
    for (size_t i = 0; i < 1000; i++) {
        synth_rec r = plain(i);
        if (!strcmp(r.label, "L2"))
            r.sa = r.sb / 2;
        synth_add(&s, &r);
    }
    ps_vreport *r = synth_build(&s, NULL);
    assert_fails_explained(r, "sql_length_change", "'L2'");
    assert_fails_explained(r, "sql_chars_ks_label", "'L2'");
    assert_int_equal(verdict(r, "question_length_change"), PS_VV_PASS);
    ps_vreport_free(r);
    /* bounds far above the lengths: padding warns (warn mode, even above its fail level) */
    uint32_t wide[] = {1000};
    assert_int_equal(ps_vstats_set_padding(s.tok, wide, 1), 0);
    ps_vreport *r2 = NULL;
    assert_int_equal(ps_validate_build(NULL, s.raw, s.cl, s.tok, s.p, &r2, NULL), 0);
    assert_int_equal(verdict(r2, "padding_rate"), PS_VV_WARN);
    assert_true(check_of(r2, "padding_rate")->value > 0.9);
    ps_vreport_free(r2);
    synth_free(&s);

    /* tokens: the current encodes every pair 30 tokens longer */
    ps_vstats *a = ps_vstats_new("tokenized"), *b = ps_vstats_new("tokenized");
    for (size_t i = 0; i < 2000; i++) {
        synth_rec q = plain(i);
        ps_vrecord x = rec(q.label, q.qb, q.sb, q.tokens);
        assert_int_equal(ps_vstats_add(a, &x), 0);
        x.tokens += 30;
        assert_int_equal(ps_vstats_add(b, &x), 0);
    }
    assert_int_equal(ps_validate_compare(NULL, a, b, &r, NULL), 0);
    static const char *const T[] = {"tokens_ks", "tokens_ks_label", "tokens_psi", "tokens_quantiles"};
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(verdict(r, T[i]), PS_VV_FAIL);
    assert_int_equal(verdict(r, "question_chars_ks"), PS_VV_PASS);
    assert_int_equal(verdict(r, "sql_chars_quantiles"), PS_VV_PASS);
    assert_int_equal(verdict(r, "unk_rate_increase"), PS_VV_PASS);
    ps_vreport_free(r);
    ps_vstats_free(a);
    ps_vstats_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_checks_clean_pass),
        cmocka_unit_test(test_checks_not_enough_data),
        cmocka_unit_test(test_checks_label_retention),
        cmocka_unit_test(test_checks_length_change),
        cmocka_unit_test(test_checks_distribution_shift),
        cmocka_unit_test(test_checks_health),
        cmocka_unit_test(test_checks_empty_and_duplicates),
        cmocka_unit_test(test_checks_empty_set),
        cmocka_unit_test(test_checks_sql_tokens_padding),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
