/* Unit tests of merge (pipeline/merge.c, ps_merge_run): two parts of one
 * --part build merge into the set the whole build makes (the same records,
 * labels and accounting), and parts that do not belong together — out of
 * order, one missing, built with other options, a whole set, no set at all —
 * are refused with PS_EUSAGE or PS_ENOENT, naming why, and publish nothing. */
#include "tests/support/testutil.h"

#include "pipeline/build.h"
#include "validate/validate.h"

#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static char g_tmp[PATH_MAX];

static const char *at(const char *rel)
{
    return ps_test_path(g_tmp, rel);
}

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* Builds Spider dev into `out`: part `index` of `count` (count 0: the whole
 * input), with fixed buckets so that parts and the whole agree. */
static void build(const char *out, size_t index, size_t count, size_t block_records)
{
    static const uint32_t bounds[] = {16, 32, 64, 128};
    ps_test_build_opts o = {.label_field = "db_id", .shards = 2, .block_records = block_records,
                            .buckets = bounds, .n_buckets = 4, .part_index = index,
                            .part_count = count};
    ps_test_build(ps_test_data("spider/dev.json"), out, &o);
}

static int setup(void **state)
{
    (void)state;
    const char *t = getenv("TMPDIR");
    snprintf(g_tmp, sizeof g_tmp, "%s/ps-merge-XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(g_tmp))
        return -1;
    build(at("whole"), 0, 0, 32);
    build(at("part0"), 0, 2, 32);
    build(at("part1"), 1, 2, 32);
    build(at("part1-other"), 1, 2, 16); /* another block size: another build */
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    ps_remove_tree(g_tmp);
    return 0;
}

static json_t *load_json(const char *dir, const char *name)
{
    char path[PATH_MAX + 400];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    if (!j)
        fail_msg("%s: %s", path, je.text);
    return j;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every record id of the set in `dir`, read back with the reader, sorted. */
static char **read_ids(const char *dir, size_t *n)
{
    ps_reader_options o;
    ps_reader_options_init(&o);
    o.batch_size = 64;
    ps_reader *r = NULL;
    ps_error err;
    ps_error_clear(&err);
    if (ps_reader_open(dir, &o, NULL, &r, &err) != 0)
        fail_msg("open %s: %s", dir, err.message);
    size_t cap = 2048;
    char **ids = malloc(cap * sizeof *ids);
    assert_non_null(ids);
    *n = 0;
    const ps_batch *b;
    int rc;
    while ((rc = ps_reader_next(r, &b, &err)) == 1) {
        for (uint32_t i = 0; i < b->B; i++) {
            if (*n == cap) {
                cap *= 2;
                ids = realloc(ids, cap * sizeof *ids);
                assert_non_null(ids);
            }
            ids[(*n)++] = strdup(b->ids[i]);
        }
        ps_batch_release(r, b);
    }
    assert_int_equal(rc, 0);
    ps_reader_close(r);
    qsort(ids, *n, sizeof *ids, cmp_str);
    return ids;
}

static void free_ids(char **ids, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(ids[i]);
    free(ids);
}

static json_int_t accounting(json_t *m, const char *key)
{
    return json_integer_value(json_object_get(json_object_get(m, "accounting"), key));
}

static void test_merge_two_parts_is_the_whole(void **state)
{
    (void)state;
    const char *dirs[2] = {at("part0"), at("part1")};
    ps_error err;
    ps_error_clear(&err);
    ps_merge_opts mo = {0};
    int rc = ps_merge_run(at("merged"), dirs, 2, &mo, &err);
    if (rc)
        fail_msg("merge: %s", err.message);
    assert_false(mo.gate_failed);

    json_t *whole = load_json(at("whole"), "manifest.json");
    json_t *merged = load_json(at("merged"), "manifest.json");
    json_t *p0 = load_json(at("part0"), "manifest.json");
    json_t *p1 = load_json(at("part1"), "manifest.json");
    /* each part holds some of the records, and together all of them */
    assert_true(accounting(p0, "records_in") > 0 && accounting(p1, "records_in") > 0);
    assert_int_equal(accounting(p0, "records_in") + accounting(p1, "records_in"),
                     accounting(whole, "records_in"));
    assert_int_equal(accounting(merged, "records_in"), accounting(whole, "records_in"));
    assert_int_equal(accounting(merged, "kept"), accounting(whole, "kept"));
    assert_null(json_object_get(merged, "part")); /* a whole set again */
    assert_true(json_equal(json_object_get(merged, "labels"), json_object_get(whole, "labels")));
    assert_true(json_equal(json_object_get(merged, "buckets"), json_object_get(whole, "buckets")));
    json_decref(whole);
    json_decref(merged);
    json_decref(p0);
    json_decref(p1);

    /* the same records, each once */
    size_t nw, nm;
    char **w = read_ids(at("whole"), &nw), **m = read_ids(at("merged"), &nm);
    assert_true(nw > 1000);
    assert_int_equal(nm, nw);
    for (size_t i = 0; i < nw; i++)
        assert_string_equal(m[i], w[i]);
    for (size_t i = 1; i < nm; i++)
        assert_true(strcmp(m[i - 1], m[i]) < 0);
    free_ids(w, nw);
    free_ids(m, nm);

    /* the merged statistics are there for validate */
    json_t *stats = load_json(at("merged"), "stats.json");
    assert_true(json_is_object(stats));
    json_decref(stats);
}

/* Merging `dirs` into "refused" fails with `code`, the message holding
 * `needle`, and publishes nothing. */
static void expect_refused(const char *const *dirs, size_t n, int code, const char *needle)
{
    ps_error err;
    ps_error_clear(&err);
    ps_merge_opts mo = {0};
    int rc = ps_merge_run(at("refused"), dirs, n, &mo, &err);
    if (rc != code)
        fail_msg("merge: expected %s, got %s: %s", ps_err_name(code), ps_err_name(rc),
                 err.message);
    assert_int_equal(err.code, code);
    if (!strstr(err.message, needle))
        fail_msg("message '%s' lacks '%s'", err.message, needle);
    assert_false(exists(at("refused")));
}

static void test_merge_refuses_parts_out_of_order(void **state)
{
    (void)state;
    const char *dirs[2] = {at("part1"), at("part0")};
    expect_refused(dirs, 2, PS_EUSAGE, "give the parts in order 0..1");
}

static void test_merge_refuses_a_missing_part(void **state)
{
    (void)state;
    const char *dirs[1] = {at("part0")};
    expect_refused(dirs, 1, PS_EUSAGE, "the parts say there are 2 of them, 1 given");
}

static void test_merge_refuses_a_part_twice(void **state)
{
    (void)state;
    const char *dirs[2] = {at("part0"), at("part0")};
    expect_refused(dirs, 2, PS_EUSAGE, "is part 0");
}

static void test_merge_refuses_parts_of_other_builds(void **state)
{
    (void)state;
    const char *dirs[2] = {at("part0"), at("part1-other")};
    expect_refused(dirs, 2, PS_EUSAGE, "block_records");
}

static void test_merge_refuses_a_whole_set(void **state)
{
    (void)state;
    const char *dirs[2] = {at("part0"), at("whole")};
    expect_refused(dirs, 2, PS_EUSAGE, "not a partial set");
}

static void test_merge_refuses_what_is_no_set(void **state)
{
    (void)state;
    assert_int_equal(mkdir(at("empty"), 0755), 0);
    const char *dirs[2] = {at("part0"), at("empty")};
    expect_refused(dirs, 2, PS_ENOENT, "no manifest.json");
    expect_refused(dirs, 0, PS_EUSAGE, "at least one part");
}

static void test_merge_cancelled_publishes_nothing(void **state)
{
    (void)state;
    static volatile sig_atomic_t stop = 1;
    const char *dirs[2] = {at("part0"), at("part1")};
    ps_error err;
    ps_error_clear(&err);
    ps_merge_opts mo = {0};
    mo.cancel = &stop;
    assert_int_equal(ps_merge_run(at("cancelled"), dirs, 2, &mo, &err), PS_ECANCELED);
    assert_non_null(strstr(err.message, "nothing was published"));
    assert_false(exists(at("cancelled")));
}

/* Adds statistics of SQL checked against its schema to a part's stats.json,
 * as a build with --schema writes them: n records, of which `broken`
 * compiled before cleaning and not after (changed by rule `rule`). */
static void add_sql(const char *dir, const char *const *rules, size_t n_rules, int n, int broken)
{
    ps_vsql *v = ps_vsql_new(rules, n_rules);
    assert_non_null(v);
    unsigned char touched[2] = {0, 2};
    for (int i = 0; i < n; i++) {
        char id[32];
        snprintf(id, sizeof id, "%s#%d", dir + strlen(dir) - 5, i);
        bool bad = i < broken;
        ps_vsql_record r = {.id = id, .label = i % 2 ? "concert_singer" : "pets_1", .raw_class = 0,
                            .clean_class = bad ? 3 : 0,
                            .clean_msg = bad ? "no such column: T1.Name" : NULL,
                            .touched = bad ? touched : NULL, .exec_status = -1};
        assert_int_equal(ps_vsql_add(v, &r), 0);
    }
    json_t *stats = load_json(dir, "stats.json");
    json_object_set_new(stats, "sql", ps_vsql_to_json(v));
    char path[PATH_MAX + 20];
    snprintf(path, sizeof path, "%s/stats.json", dir);
    assert_int_equal(json_dump_file(stats, path, JSON_PRESERVE_ORDER), 0);
    json_decref(stats);
    ps_vsql_free(v);
}

/* The parts' SQL statistics add up in the merged report, its checks run on
 * the sum (a regression in one part stops the merge), and parts cleaned
 * with other rules are refused. Runs last: it rewrites the parts' stats. */
static void test_merge_adds_the_parts_sql(void **state)
{
    (void)state;
    static const char *const rules[2] = {"fold-quotes", "rename-alias"};
    char p0[PATH_MAX + 8], p1[PATH_MAX + 8]; /* at() reuses 4 buffers */
    snprintf(p0, sizeof p0, "%s", at("part0"));
    snprintf(p1, sizeof p1, "%s", at("part1"));
    const char *dirs[2] = {p0, p1};
    add_sql(dirs[1], rules, 2, 30, 0); /* a part without "sql" adds nothing: part0 has none yet */
    ps_error err;
    ps_error_clear(&err);
    ps_merge_opts mo = {0};
    if (ps_merge_run(at("merged-sql1"), dirs, 2, &mo, &err))
        fail_msg("merge: %s", err.message);
    assert_false(mo.gate_failed);
    json_t *rep = load_json(at("merged-sql1"), "report.json");
    json_t *sql = json_object_get(rep, "sql");
    assert_int_equal(json_integer_value(json_object_get(sql, "checked")), 30);
    json_decref(rep);

    add_sql(dirs[0], rules, 2, 20, 2);
    ps_error_clear(&err);
    mo = (ps_merge_opts){0};
    char *summary = NULL;
    mo.summary = &summary;
    if (ps_merge_run(at("merged-sql"), dirs, 2, &mo, &err))
        fail_msg("merge: %s", err.message);
    assert_true(mo.gate_failed); /* two regressions: nothing published, the report beside */
    assert_false(exists(at("merged-sql")));
    rep = load_json(g_tmp, "merged-sql.report.json");
    sql = json_object_get(rep, "sql");
    assert_int_equal(json_integer_value(json_object_get(sql, "checked")), 50);
    assert_int_equal(json_integer_value(json_object_get(sql, "compiled_clean")), 48);
    json_t *reg = json_object_get(sql, "regressions");
    assert_int_equal(json_integer_value(json_object_get(reg, "count")), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(reg, "by_rule"), 0),
                                                          "rule")), "rename-alias");
    assert_non_null(strstr(summary, "SQL: 50 checked, 50 compiled raw, 48 after cleaning, 2 regressions"));
    assert_non_null(strstr(summary, "FAIL sql_compile_regression"));
    json_decref(rep);
    free(summary);

    static const char *const other[2] = {"fold-quotes", "rename-aliases"};
    add_sql(dirs[1], other, 2, 30, 0);
    expect_refused(dirs, 2, PS_EINVAL, "rules differ");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_merge_two_parts_is_the_whole),
        cmocka_unit_test(test_merge_refuses_parts_out_of_order),
        cmocka_unit_test(test_merge_refuses_a_missing_part),
        cmocka_unit_test(test_merge_refuses_a_part_twice),
        cmocka_unit_test(test_merge_refuses_parts_of_other_builds),
        cmocka_unit_test(test_merge_refuses_a_whole_set),
        cmocka_unit_test(test_merge_refuses_what_is_no_set),
        cmocka_unit_test(test_merge_cancelled_publishes_nothing),
        cmocka_unit_test(test_merge_adds_the_parts_sql), /* last: rewrites the parts' stats */
    };
    return cmocka_run_group_tests_name("merge", tests, setup, teardown);
}
