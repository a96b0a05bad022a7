/* Tests of validate/: comparing two statistics files, config overrides and the
 * statistics file itself. Shared helpers: tests/support/validate_fixture.c. */
#include "tests/support/validate_fixture.h"

#include <stdlib.h>
#include <string.h>

static void test_compare(void **state)
{
    (void)state;
    ps_vstats *a = ps_vstats_new("tokenized"), *b = ps_vstats_new("tokenized"),
              *c = ps_vstats_new("tokenized");
    for (size_t i = 0; i < 2000; i++) {
        synth_rec r = plain(i);
        ps_vrecord x = rec(r.label, r.qb, r.sb, r.tokens);
        assert_int_equal(ps_vstats_add(a, &x), 0);
        x.unk_tokens = i % 10 == 0 ? 4 : 0; /* 0.4 [UNK] per record of ~50 tokens: 0.8% */
        assert_int_equal(ps_vstats_add(b, &x), 0);
        ps_vrecord y = rec(i % 2 ? "other" : "L0", r.qb, r.sb, r.tokens);
        assert_int_equal(ps_vstats_add(c, &y), 0);
    }
    ps_vreport *r = NULL;
    assert_int_equal(ps_validate_compare(NULL, a, b, &r, NULL), 0);
    assert_int_equal(verdict(r, "label_js_distance"), PS_VV_PASS);
    assert_int_equal(verdict(r, "tokens_ks"), PS_VV_PASS);
    assert_int_equal(verdict(r, "unk_rate_increase"), PS_VV_FAIL);
    assert_int_equal(verdict(r, "unk_token_rate"), PS_VV_WARN);
    assert_string_equal(ps_vreport_verdict(r), "fail");
    assert_string_equal(r->mode, "compare");
    ps_vreport_free(r);
    assert_int_equal(ps_validate_compare(NULL, a, c, &r, NULL), 0);
    assert_int_equal(verdict(r, "label_js_distance"), PS_VV_FAIL);
    assert_int_equal(verdict(r, "label_psi"), PS_VV_FAIL);
    assert_int_equal(verdict(r, "label_chi2"), PS_VV_WARN); /* mode warn */
    assert_true(check_of(r, "label_chi2")->p_value < 1e-100);
    assert_explains(r, "label_js_distance", "'other'");
    ps_vreport_free(r);
    ps_vstats_free(a);
    ps_vstats_free(b);
    ps_vstats_free(c);
}

static void test_config(void **state)
{
    (void)state;
    ps_vconfig *c = ps_vconfig_new();
    ps_error err;
    struct {
        const char *json, *needle;
    } BAD[] = {
        {"{\"thresholds\": {\"label_jsd\": 0.1}}", "label_jsd"},
        {"{\"thresholds\": {\"label_js_distance_warnx\": 0.1}}", "label_js_distance_warnx"},
        {"{\"modes\": {\"nope\": \"fail\"}}", "nope"},
        {"{\"modes\": {\"label_psi\": \"loud\"}}", "label_psi"},
        {"{\"modes\": {\"label_psi\": 1}}", "label_psi"},
        {"{\"thresholds\": {\"label_psi\": \"high\"}}", "label_psi"},
        {"{\"thresholds\": {\"label_psi\": -1}}", "label_psi"},
        {"{\"thresholds\": {\"min_records\": 0}}", "min_records"},
        {"{\"thresholds\": {\"min_records\": 1.5}}", "min_records"},
        {"{\"threshold\": {}}", "threshold"},
        {"{\"thresholds\": []}", "thresholds"},
        {"[1]", "object"},
    };
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        json_t *j = json_loads(BAD[i].json, 0, NULL);
        assert_non_null(j);
        ps_error_clear(&err);
        assert_int_equal(ps_vconfig_apply_json(c, j, &err), PS_EUSAGE);
        if (!strstr(err.message, BAD[i].needle))
            fail_msg("'%s' -> '%s'", BAD[i].json, err.message);
        json_decref(j);
    }
    /* a failed apply changes nothing; a good one is reported in the report */
    json_t *j = json_loads("{\"thresholds\": {\"label_psi\": 0.3, \"label_psi_warn\": 0.15, "
                           "\"min_records\": 10, \"psi_epsilon\": 1e-6}, "
                           "\"modes\": {\"padding_rate\": \"off\"}}",
                           0, NULL);
    assert_int_equal(ps_vconfig_apply_json(c, j, &err), 0);
    assert_int_equal(ps_vconfig_apply_json(c, NULL, &err), 0);
    json_decref(j);
    ps_vreport *r = NULL;
    assert_int_equal(ps_validate_build(c, NULL, NULL, NULL, NULL, &r, NULL), 0);
    assert_true(check_of(r, "label_psi")->threshold == 0.3);
    assert_true(check_of(r, "label_psi")->warn_threshold == 0.15);
    assert_int_equal(verdict(r, "padding_rate"), PS_VV_OFF);
    json_t *th = json_object_get(r->config, "thresholds");
    assert_true(json_real_value(json_object_get(th, "psi_epsilon")) == 1e-6);
    assert_int_equal(json_integer_value(json_object_get(th, "min_records")), 10);
    ps_vreport_free(r);
    ps_vconfig_free(c);
}

static void test_stats_file(void **state)
{
    (void)state;
    synth s;
    synth_plain(&s, 300);
    char *t = ps_vstats_file_json(s.raw, s.cl, s.tok, s.p, NULL, NULL);
    assert_non_null(t);
    char *path = ps_test_tmpfile(t, strlen(t), ".json");
    ps_vstats *raw, *cl, *tok;
    ps_vpaired *p;
    ps_error err;
    assert_int_equal(ps_vstats_file_load(path, &raw, &cl, &tok, &p, NULL, NULL, &err), 0);
    assert_true(raw && cl && tok && p);
    char *t2 = ps_vstats_file_json(raw, cl, tok, p, NULL, NULL);
    assert_string_equal(t, t2);
    ps_vstats_free(raw);
    ps_vstats_free(cl);
    ps_vstats_free(tok);
    ps_vpaired_free(p);
    /* a report.json is a statistics file too */
    ps_vreport *r = synth_build(&s, NULL);
    char *rj = ps_vreport_json(r);
    char *rpath = ps_test_tmpfile(rj, strlen(rj), ".json");
    assert_int_equal(ps_vstats_file_load(rpath, NULL, &cl, NULL, NULL, NULL, NULL, &err), 0);
    assert_non_null(cl);
    assert_int_equal(cl->records, 300);
    ps_vstats_free(cl);
    /* versions, garbage, a point under the wrong key */
    const char *bad[] = {"{\"stats_version\": 2, \"points\": {}}", "{\"points\": {}}", "[]", "{",
                         "{\"stats_version\": 1, \"points\": []}"};
    int codes[] = {PS_EVERSION, PS_EFORMAT, PS_EFORMAT, PS_EFORMAT, PS_EFORMAT};
    for (size_t i = 0; i < 5; i++) {
        char *bp = ps_test_tmpfile(bad[i], strlen(bad[i]), ".json");
        assert_int_equal(ps_vstats_file_load(bp, &raw, &cl, &tok, &p, NULL, NULL, &err), codes[i]);
        assert_null(raw);
        remove(bp);
        free(bp);
    }
    json_t *fj = json_loads(t, 0, NULL);
    json_t *pts = json_object_get(fj, "points");
    json_object_set(pts, "raw", json_object_get(pts, "cleaned"));
    char *ft = json_text(fj);
    char *fp = ps_test_tmpfile(ft, strlen(ft), ".json");
    assert_int_equal(ps_vstats_file_load(fp, &raw, &cl, &tok, &p, NULL, NULL, &err), PS_EFORMAT);
    assert_non_null(strstr(err.message, "points.raw"));
    assert_int_equal(ps_vstats_file_load("/nonexistent/x.json", &raw, NULL, NULL, NULL, NULL, NULL, &err), PS_ENOENT);
    remove(fp);
    remove(path);
    remove(rpath);
    free(fp);
    free(ft);
    free(path);
    free(rpath);
    free(rj);
    free(t);
    free(t2);
    ps_vreport_free(r);
    synth_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_compare),
        cmocka_unit_test(test_config),
        cmocka_unit_test(test_stats_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
