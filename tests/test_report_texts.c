/* Tests of report/report_json.c's ps_vreport_texts: report.json and
 * stats.json made together (the points and the paired view serialised
 * once, spliced into both) are byte for byte what the two whole dumps
 * give, also when the report's own strings hold the stand-ins the splice
 * uses (it must then dump whole). Shared helpers:
 * tests/support/validate_fixture.c. */
#include "tests/support/validate_fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The texts made together equal the whole dumps, with the per-label
 * entries dumped on 1, 2 or 7 threads. */
static void assert_texts_whole_on(ps_vreport *r, const ps_vgen *gen, size_t threads)
{
    r->threads = threads;
    json_t *o = ps_vreport_object(r);
    assert_non_null(o);
    char *rj = NULL, *sj = NULL;
    double secs = 0;
    assert_int_equal(ps_vreport_texts(r, o, NULL, gen, &rj, &sj, &secs), PS_OK);
    assert_true(secs > 0); /* the labels were dumped apart, and timed */
    char *whole_r = ps_vreport_text(o), *whole_s = ps_vstats_file_json_report(r, NULL, gen);
    assert_non_null(whole_r);
    assert_non_null(whole_s);
    assert_string_equal(rj, whole_r);
    assert_string_equal(sj, whole_s);
    /* and the shared members are really in both */
    assert_non_null(strstr(rj, "\"tokenized\": {"));
    assert_non_null(strstr(sj, "\"tokenized\": {"));
    assert_non_null(strstr(sj, "\"paired\": {"));
    free(rj);
    free(sj);
    free(whole_r);
    free(whole_s);
    json_decref(o);
}

static void assert_texts_whole(ps_vreport *r, const ps_vgen *gen)
{
    static const size_t threads[] = {1, 2, 7};
    for (size_t i = 0; i < sizeof threads / sizeof threads[0]; i++)
        assert_texts_whole_on(r, gen, threads[i]);
}

static void test_plain_build(void **state)
{
    (void)state;
    synth s;
    synth_plain(&s, 3000);
    ps_vreport *r = synth_build(&s, NULL);
    assert_texts_whole(r, NULL);
    ps_vgen *g = ps_vgen_new(); /* a causal build's prompt/completion lengths too */
    assert_non_null(g);
    for (uint32_t i = 0; i < 500; i++)
        assert_int_equal(ps_vgen_add(g, LABELS[i % 5], 20 + i % 30, 5 + i % 11), 0);
    assert_int_equal(ps_vreport_set_generation(r, g), 0);
    assert_texts_whole(r, g);
    ps_vgen_free(g);
    ps_vreport_free(r);
    synth_free(&s);
}

/* Labels named as the stand-ins: the per-label checks quote them outside
 * the shared members, so a stand-in occurs twice and the texts must come
 * from whole dumps, not a splice at the wrong place. */
static void test_labels_named_like_the_stand_ins(void **state)
{
    (void)state;
    static const char *const odd[] = {"\x01pairshard-shared-0\x01", "\x01pairshard-shared-3\x01",
                                      "\x01pairshard-labels\x01"};
    synth s;
    synth_init(&s);
    for (size_t i = 0; i < 3000; i++) {
        synth_rec x = plain(i);
        if (i % 5 < 3)
            x.label = odd[i % 5];
        synth_add(&s, &x);
    }
    ps_vreport *r = synth_build(&s, NULL);
    char *whole = ps_vreport_json(r);
    assert_non_null(strstr(whole, "\\u0001pairshard-shared-0\\u0001"));
    free(whole);
    assert_texts_whole(r, NULL);
    ps_vreport_free(r);
    synth_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_build),
        cmocka_unit_test(test_labels_named_like_the_stand_ins),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
