/* What a build frees before its end (pipeline/build_release.c): the
 * validation state once the reports are in the set (on the checks' thread
 * beside phase 2, or on a thread of its own with one thread), the worker
 * spools once the last shard is written (by whichever shard writer
 * finishes last). What the caller gets must not change:
 * the summary's verdict and text are the report's (report.json's
 * "verdict" and "summary"), the same at every thread count, also when the
 * gate fails and nothing is freed early; no spool is left; and the
 * profile's phases, the teardown among them, add up to its wall. ASan
 * (leaks, a use after the free) and TSan (the frees against the build's
 * last steps) run these builds too. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "pipeline/build.h"
#include "tests/support/build_fixture.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct result {
    int rc;
    ps_build_summary sum;
} result;

/* Builds Spider dev into `out` with `threads` threads and `shards`
 * shards; max_length 16 truncates most records, which fails the gate. */
static void build(const char *out, size_t threads, size_t shards, size_t max_length,
                  result *r)
{
    ps_test_bert_build b;
    ps_test_bert_build_init(&b, ps_test_data("spider/dev.json"), out);
    b.cfg.clean.label_field = "db_id";
    b.cfg.max_length = max_length;
    b.cfg.threads = threads;
    b.cfg.shards = shards;
    ps_error err;
    ps_error_clear(&err);
    memset(&r->sum, 0, sizeof r->sum);
    r->rc = ps_build_run(&b.cfg, &r->sum, &err);
    if (r->rc)
        print_message("build: %s\n", err.message);
    ps_test_bert_build_free(&b);
    assert_int_equal(r->sum.counts.records_in, 1034); /* Spider dev's pairs */
}

/* report.json's member `key` (a string), malloc'ed. */
static char *report_string(const char *report_json, const char *key)
{
    json_error_t je;
    json_t *j = json_load_file(report_json, 0, &je);
    assert_non_null(j);
    const char *v = json_string_value(json_object_get(j, key));
    assert_non_null(v);
    char *copy = strdup(v);
    json_decref(j);
    return copy;
}

/* The summary's first line is report.json's summary, and its verdict the
 * report's; the phases add up to the wall, the teardown included. */
static void check_summary(const result *r, const char *report_json)
{
    char *verdict = report_string(report_json, "verdict");
    char *summary = report_string(report_json, "summary");
    assert_string_equal(r->sum.verdict, verdict);
    assert_non_null(r->sum.report_summary);
    size_t n = strlen(summary);
    assert_memory_equal(r->sum.report_summary, summary, n);
    assert_true(r->sum.report_summary[n] == '\n' || r->sum.report_summary[n] == '\0');
    const ps_build_profile *p = &r->sum.profile;
    double phases = p->setup + p->phase1 + p->checks + p->phase2 + p->publish + p->teardown;
    assert_true(p->teardown >= 0 && p->wall > 0);
    assert_true(fabs(phases - p->wall) < 1e-6);
    assert_true(fabs(r->sum.seconds - p->wall) < 1e-9);
    free(verdict);
    free(summary);
}

/* A published set at 1, 2 and 3 threads, one and three shards: the same
 * summary text each time, and the report's. */
static void test_published_summary(void **state)
{
    (void)state;
    char *dir = ps_test_tmpdir("release");
    char *first = NULL;
    const size_t runs[][2] = {{1, 1}, {2, 1}, {3, 1}, {1, 3}, {2, 3}, {3, 3}};
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        char out[4096], report[4200];
        snprintf(out, sizeof out, "%s/t%zu-s%zu", dir, runs[i][0], runs[i][1]);
        result r;
        build(out, runs[i][0], runs[i][1], 128, &r);
        assert_int_equal(r.rc, 0);
        assert_false(r.sum.gate_failed);
        snprintf(report, sizeof report, "%s/report.json", out);
        check_summary(&r, report);
        /* the spools are gone, whichever thread removed them */
        assert_int_equal(ps_test_count_entries(out, ".spool"), 0);
        if (!first)
            first = strdup(r.sum.report_summary);
        else
            assert_string_equal(r.sum.report_summary, first);
        free(r.sum.report_summary);
    }
    free(first);
    free(dir);
}

/* A failed gate keeps the validation state for the reports beside DIR:
 * the summary is still the report's, at 1 and 2 threads. */
static void test_gate_failed_summary(void **state)
{
    (void)state;
    char *dir = ps_test_tmpdir("release-gate");
    for (size_t threads = 1; threads <= 2; threads++) {
        char out[4096], report[4200];
        snprintf(out, sizeof out, "%s/t%zu", dir, threads);
        result r;
        build(out, threads, 1, 16, &r);
        assert_int_equal(r.rc, 0);
        assert_true(r.sum.gate_failed);
        assert_string_equal(r.sum.verdict, "fail");
        snprintf(report, sizeof report, "%s.report.json", out);
        check_summary(&r, report);
        assert_int_equal(ps_test_count_entries(dir, ".t"), 0); /* no staging left */
        free(r.sum.report_summary);
    }
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_published_summary),
        cmocka_unit_test(test_gate_failed_summary),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
