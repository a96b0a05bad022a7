/* Tests of validate/'s hardness: records per level in the statistics
 * (hard_stats.c: overall and per label, merge, JSON both ways) and the
 * hardness_js_distance check (checks_hardness.c). Shared helpers:
 * tests/support/validate_fixture.c. */
#include "tests/support/validate_fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Records of plain() whose level is `drop` are rejected one in `every`. */
static void synth_dropping(synth *s, size_t n, const char *drop, size_t every)
{
    synth_init(s);
    size_t seen = 0;
    for (size_t i = 0; i < n; i++) {
        synth_rec r = plain(i);
        if (!strcmp(r.hard_before, drop) && seen++ % every == 0) {
            r.outcome = PS_OUTCOME_REJECTED;
            r.reason = "dropped_by_rule";
            r.rule = "long-sql";
        }
        synth_add(s, &r);
    }
}

static void test_hardness_stable_passes(void **state)
{
    (void)state;
    synth s;
    synth_plain(&s, 1000);
    ps_vreport *r = synth_build(&s, NULL);
    const ps_vcheck *k = check_of(r, "hardness_js_distance");
    assert_int_equal(k->verdict, PS_VV_PASS);
    assert_true(k->value == 0);
    assert_string_equal(k->group, "hardness");
    json_t *lv = json_object_get(k->details, "levels");
    assert_int_equal(json_array_size(lv), 4);
    assert_string_equal(json_string_value(json_object_get(json_array_get(lv, 0), "level")), "easy");
    assert_string_equal(json_string_value(json_object_get(json_array_get(lv, 3), "level")), "extra");
    assert_int_equal(json_integer_value(json_object_get(json_array_get(lv, 3), "baseline")), 250);
    ps_vreport_free(r);
    synth_free(&s);
}

/* Half the extra queries dropped: the labels (spread evenly over the
 * levels) stay flat, the hardness check fails and says which level went. */
static void test_hardness_shift_fails_labels_flat(void **state)
{
    (void)state;
    synth s;
    synth_dropping(&s, 2000, "extra", 2);
    ps_vconfig *c = ps_vconfig_new();
    json_error_t je;
    json_t *cfg = json_loads("{\"modes\": {\"rejected_share\": \"warn\"}}", 0, &je);
    ps_error err = {0};
    assert_int_equal(ps_vconfig_apply_json(c, cfg, &err), 0);
    json_decref(cfg);
    ps_vreport *r = synth_build(&s, c);
    assert_int_equal(verdict(r, "label_js_distance"), PS_VV_PASS);
    assert_fails_explained(r, "hardness_js_distance", "'extra' 25.00% -> 14.29%");
    assert_string_equal(ps_vreport_verdict(r), "fail");
    /* per label: every label lost its extra queries alike */
    json_t *labels = json_object_get(check_of(r, "hardness_js_distance")->details, "labels");
    assert_int_equal(json_array_size(labels), 5);
    /* the threshold is the config's: 0.2 lets it through */
    ps_vreport_free(r);
    cfg = json_loads("{\"thresholds\": {\"hardness_js_distance\": 0.2}}", 0, &je);
    assert_int_equal(ps_vconfig_apply_json(c, cfg, &err), 0);
    json_decref(cfg);
    r = synth_build(&s, c);
    assert_int_equal(verdict(r, "hardness_js_distance"), PS_VV_WARN);
    ps_vreport_free(r);
    ps_vconfig_free(c);
    synth_free(&s);
}

static void test_hardness_not_enough_data(void **state)
{
    (void)state;
    synth s;
    synth_init(&s);
    for (size_t i = 0; i < 500; i++) {
        synth_rec r = plain(i);
        r.hard_before = NULL; /* nothing classified */
        synth_add(&s, &r);
    }
    ps_vreport *r = synth_build(&s, NULL);
    assert_int_equal(verdict(r, "hardness_js_distance"), PS_VV_NOT_ENOUGH_DATA);
    assert_explains(r, "hardness_js_distance", "no hardness");
    /* no level: the statistics leave "hardness" out, as before */
    json_t *j = ps_vstats_to_json(s.raw);
    assert_null(json_object_get(j, "hardness"));
    json_decref(j);
    ps_vreport_free(r);
    synth_free(&s);
}

/* A dataset's own levels (BIRD's), taken as found, in their known order. */
static void test_hardness_dataset_levels(void **state)
{
    (void)state;
    ps_vstats *a = ps_vstats_new("raw");
    const char *lv[] = {"challenging", "simple", "moderate", "simple", "simple", "weird"};
    for (size_t i = 0; i < 6; i++) {
        ps_vrecord r = rec("db", 10, 20, PS_VSTATS_NO_TOKENS);
        r.hardness = lv[i];
        assert_int_equal(ps_vstats_add(a, &r), 0);
    }
    json_t *j = ps_vstats_to_json(a);
    char *t = json_text(json_incref(json_object_get(j, "hardness")));
    assert_string_equal(t, "{\"simple\": 3, \"moderate\": 1, \"challenging\": 1, \"weird\": 1}");
    free(t);
    json_decref(j);
    /* past 16 levels, the rest count as one "other" */
    for (size_t i = 0; i < 40; i++) {
        char name[16];
        snprintf(name, sizeof name, "level%02zu", i);
        ps_vrecord r = rec("db", 10, 20, PS_VSTATS_NO_TOKENS);
        r.hardness = name;
        assert_int_equal(ps_vstats_add(a, &r), 0);
    }
    j = ps_vstats_to_json(a);
    json_t *h = json_object_get(j, "hardness");
    assert_int_equal(json_object_size(h), 16);
    assert_int_equal(json_integer_value(json_object_get(h, "other")), 40 - 11);
    json_decref(j);
    ps_vstats_free(a);
}

/* Split over two statistics and merged, or written and read back: the
 * same bytes as one pass. */
static void test_hardness_merge_and_json(void **state)
{
    (void)state;
    ps_vstats *one = ps_vstats_new("cleaned"), *p0 = ps_vstats_new("cleaned"),
              *p1 = ps_vstats_new("cleaned");
    for (size_t i = 0; i < 300; i++) {
        /* the second part meets the levels in another order */
        ps_vrecord r = rec(LABELS[i % 3], 40, 80, PS_VSTATS_NO_TOKENS);
        r.hardness = i < 150 ? HARDNESS[i % 4] : HARDNESS[3 - i % 4];
        if (i % 7 == 0)
            r.label = NULL;
        assert_int_equal(ps_vstats_add(one, &r), 0);
        assert_int_equal(ps_vstats_add(i < 150 ? p0 : p1, &r), 0);
    }
    assert_int_equal(ps_vstats_merge(p0, p1), 0);
    char *a = json_text(ps_vstats_to_json(one)), *b = json_text(ps_vstats_to_json(p0));
    assert_string_equal(a, b);
    json_error_t je;
    json_t *j = json_loads(a, 0, &je);
    ps_vstats *back = NULL;
    ps_error err = {0};
    assert_int_equal(ps_vstats_from_json(j, &back, &err), 0);
    char *c = json_text(ps_vstats_to_json(back));
    assert_string_equal(a, c);
    /* a label claiming more of a level than the whole is refused */
    json_t *l0 = json_array_get(json_object_get(j, "labels"), 0);
    json_object_set_new(json_object_get(l0, "hardness"), "easy", json_integer(1000));
    ps_vstats *bad = NULL;
    assert_int_equal(ps_vstats_from_json(j, &bad, &err), PS_EFORMAT);
    assert_non_null(strstr(err.message, "hardness"));
    json_decref(j);
    free(a);
    free(b);
    free(c);
    ps_vstats_free(back);
    ps_vstats_free(one);
    ps_vstats_free(p0);
    ps_vstats_free(p1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hardness_stable_passes),
        cmocka_unit_test(test_hardness_shift_fails_labels_flat),
        cmocka_unit_test(test_hardness_not_enough_data),
        cmocka_unit_test(test_hardness_dataset_levels),
        cmocka_unit_test(test_hardness_merge_and_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
