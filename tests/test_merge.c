/* Unit tests of merge (pipeline/merge.c, ps_merge_run): two parts of one
 * --part build merge into the set the whole build makes (the same records,
 * labels and accounting), and parts that do not belong together — out of
 * order, one missing, built with other options, a whole set, no set at all —
 * are refused with PS_EUSAGE or PS_ENOENT, naming why, and publish nothing.
 * A part read as one snapshot (merge_snapshot.c): a part rebuilt, or a shard
 * of it written, at any step of the merge (ps_merge_opts.hook stops the merge
 * at that very point) is refused naming the part, and so are a part whose
 * manifest's sums do not add up and a part with a damaged block (naming the
 * shard file and the block). */
#define _GNU_SOURCE /* memmem */
#include "tests/support/testutil.h"

#include "pipeline/build.h"
#include "store/inspect.h"
#include "validate/validate.h"

#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

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
    /* another input: the first 1200 records of Spider train */
    json_error_t je;
    json_t *train = json_load_file(ps_test_data("spider/train.json"), 0, &je);
    if (!train)
        return -1;
    json_t *head = json_array();
    for (size_t i = 0; i < 1200; i++)
        json_array_append(head, json_array_get(train, i));
    int rc = json_dump_file(head, at("train-head.json"), 0);
    json_decref(train);
    json_decref(head);
    return rc;
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

/* Copies the set directory src (its files and preprocess/) to dst. */
static void copy_set(const char *src, const char *dst)
{
    assert_int_equal(mkdir(dst, 0755), 0);
    DIR *d = opendir(src);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char from[PATH_MAX + 300], to[PATH_MAX + 300];
        snprintf(from, sizeof from, "%s/%s", src, e->d_name);
        snprintf(to, sizeof to, "%s/%s", dst, e->d_name);
        struct stat st;
        assert_int_equal(stat(from, &st), 0);
        if (S_ISDIR(st.st_mode)) {
            copy_set(from, to);
            continue;
        }
        size_t len;
        unsigned char *b = ps_test_read_file(from, &len);
        FILE *f = fopen(to, "wb");
        assert_non_null(f);
        assert_int_equal(fwrite(b, 1, len, f), len);
        assert_int_equal(fclose(f), 0);
        free(b);
    }
    closedir(d);
}

/* Writes `len` bytes over the file at `path`, in place (the same inode). */
static void overwrite(const char *path, const void *data, size_t len)
{
    int fd = open(path, O_WRONLY | O_TRUNC);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, len), (ssize_t)len);
    assert_int_equal(close(fd), 0);
}

/* How a part changes while merge reads it. */
enum change {
    REBUILT_OTHER_INPUT,  /* rebuilt from another input into the same -o */
    REBUILT_OTHER_BLOCKS, /* rebuilt with other options (block size) */
    REBUILT_OTHER_LEVEL,  /* rebuilt with another zstd level: other bytes, same records */
    SHARD_WRITTEN,        /* a shard file written over in place */
    N_CHANGES
};

typedef struct changer {
    size_t part;
    int step; /* ps_merge_hook_step */
    int how;  /* enum change */
    char dir[PATH_MAX + 80];
    int done;
} changer;

static void change_part(void *user, size_t part, int step)
{
    changer *c = user;
    if (c->done || part != c->part || step != c->step)
        return;
    c->done = 1;
    static const uint32_t bounds[] = {16, 32, 64, 128};
    ps_test_build_opts o = {.label_field = "db_id", .shards = 2, .block_records = 32,
                            .buckets = bounds, .n_buckets = 4, .part_index = 1,
                            .part_count = 2};
    if (c->how == REBUILT_OTHER_INPUT) {
        ps_test_build(at("train-head.json"), c->dir, &o);
    } else if (c->how == REBUILT_OTHER_BLOCKS) {
        build(c->dir, 1, 2, 16);
    } else if (c->how == REBUILT_OTHER_LEVEL) {
        o.zstd_level = 19;
        ps_test_build(ps_test_data("spider/dev.json"), c->dir, &o);
    } else {
        char src[PATH_MAX + 40], dst[PATH_MAX + 120];
        snprintf(src, sizeof src, "%s/shard-00000.mdb", at("part1-other"));
        snprintf(dst, sizeof dst, "%s/shard-00000.mdb", c->dir);
        size_t len;
        unsigned char *b = ps_test_read_file(src, &len);
        overwrite(dst, b, len);
        free(b);
    }
}

#define PART_PATH (PATH_MAX + 80)

/* Fresh copies of part0 and part1 in g_tmp/NAME/; dirs[] point at them. */
static void fresh_parts(const char *name, char p0[PART_PATH], char p1[PART_PATH])
{
    snprintf(p0, PART_PATH, "%s/%.60s/part0", g_tmp, name);
    snprintf(p1, PART_PATH, "%s/%.60s/part1", g_tmp, name);
    *strrchr(p0, '/') = '\0';
    assert_int_equal(mkdir(p0, 0755), 0);
    p0[strlen(p0)] = '/';
    copy_set(at("part0"), p0);
    copy_set(at("part1"), p1);
}

/* A part rebuilt (from another input, with another block size or zstd
 * level) or a shard
 * of it written in place, after merge read its manifest, after it opened
 * and checked every file, or after it wrote the merged set: every time
 * the merge fails naming the part, and publishes nothing. (Before parts
 * were read as snapshots, a rebuild after the manifest was read published
 * the first build's manifest over the second build's records.) */
static void test_merge_refuses_a_part_changed_while_read(void **state)
{
    (void)state;
    static const int steps[] = {PS_MERGE_HOOK_MANIFEST, PS_MERGE_HOOK_VERIFIED,
                                PS_MERGE_HOOK_COPIED};
    for (size_t si = 0; si < 3; si++)
        for (int how = 0; how < N_CHANGES; how++) {
            char name[32], p0[PART_PATH], p1[PART_PATH], out[PART_PATH];
            snprintf(name, sizeof name, "changed-%d-%d", steps[si], how);
            fresh_parts(name, p0, p1);
            snprintf(out, sizeof out, "%s/%s/merged", g_tmp, name);
            changer c = {.part = 1, .step = steps[si], .how = how};
            snprintf(c.dir, sizeof c.dir, "%s", p1);
            const char *dirs[2] = {p0, p1};
            ps_merge_opts mo = {.hook = change_part, .hook_user = &c};
            ps_error err;
            ps_error_clear(&err);
            int rc = ps_merge_run(out, dirs, 2, &mo, &err);
            assert_true(c.done);
            if (rc != PS_ECORRUPT)
                fail_msg("step %d, change %d: merge returned %s: %s", steps[si], how,
                         ps_err_name(rc), err.message);
            if (!strstr(err.message, "part 1") || !strstr(err.message, p1))
                fail_msg("step %d, change %d: '%s' does not name part 1 (%s)", steps[si], how,
                         err.message, p1);
            assert_false(exists(out));
            print_message("step %d, change %d: %s\n", steps[si], how, err.message);
        }
}

/* Merges {part0, dir} into g_tmp/NAME-merged: must fail with PS_ECORRUPT,
 * the message holding each of needles[], nothing published. */
static void expect_part1_refused(const char *p0, const char *p1, const char *name,
                                 const char *const *needles, size_t n)
{
    char out[PART_PATH];
    snprintf(out, sizeof out, "%s/%.40s-merged", g_tmp, name);
    const char *dirs[2] = {p0, p1};
    ps_merge_opts mo = {0};
    ps_error err;
    ps_error_clear(&err);
    int rc = ps_merge_run(out, dirs, 2, &mo, &err);
    if (rc != PS_ECORRUPT)
        fail_msg("%s: merge returned %s: %s", name, ps_err_name(rc), err.message);
    for (size_t i = 0; i < n; i++)
        if (!strstr(err.message, needles[i]))
            fail_msg("%s: '%s' lacks '%s'", name, err.message, needles[i]);
    assert_false(exists(out));
}

/* A part's manifest with accounting.kept and records_in both raised by 5
 * (records_in = kept + rejected + duplicates still holds): verification
 * fails naming the sum that does not hold, and merge refuses the part. */
static void test_merge_refuses_accounting_that_does_not_add_up(void **state)
{
    (void)state;
    char p0[PART_PATH], p1[PART_PATH];
    fresh_parts("lying", p0, p1);
    json_t *m = load_json(p1, "manifest.json");
    json_t *acct = json_object_get(m, "accounting");
    for (int k = 0; k < 2; k++) {
        const char *key = k ? "kept" : "records_in";
        json_object_set_new(acct, key, json_integer(accounting(m, key) + 5));
    }
    char path[PART_PATH + 20];
    snprintf(path, sizeof path, "%s/manifest.json", p1);
    assert_int_equal(json_dump_file(m, path, JSON_INDENT(2) | JSON_PRESERVE_ORDER), 0);
    json_decref(m);

    ps_manifest *mf = NULL;
    ps_error err;
    ps_error_clear(&err);
    assert_int_equal(ps_manifest_read(p1, &mf, &err), 0);
    ps_verify_report rep;
    assert_int_equal(ps_set_verify(p1, mf, &rep, &err), PS_ECORRUPT);
    assert_string_equal(rep.kind, "accounting");
    if (!strstr(err.message, "accounting: records_in") || !strstr(err.message, "inputs"))
        fail_msg("verify: '%s' does not name the sum", err.message);
    ps_verify_report_free(&rep);
    ps_manifest_free(mf);

    static const char *const needles[] = {"part 1", "manifest.json: accounting"};
    expect_part1_refused(p0, p1, "lying", needles, 2);
}

/* A block of a part whose zstd checksum no longer matches: merge names the
 * part, the shard file, the block's key and the reason. */
static void test_merge_names_a_damaged_block(void **state)
{
    (void)state;
    char p0[PART_PATH], p1[PART_PATH], shard[PART_PATH + 20];
    fresh_parts("damaged", p0, p1);
    snprintf(shard, sizeof shard, "%s/shard-00001.mdb", p1);
    ps_shard *s = NULL;
    ps_error err;
    ps_error_clear(&err);
    assert_int_equal(ps_shard_open(&s, shard, &err), 0);
    uint32_t bucket, seq;
    const void *data;
    size_t len;
    assert_int_equal(ps_shard_next(s, &bucket, &seq, &data, &len, &err), 1);
    size_t flen;
    unsigned char *file = ps_test_read_file(shard, &flen);
    unsigned char *at_block = memmem(file, flen, data, len);
    assert_non_null(at_block);
    at_block[len - 2] ^= 0x40; /* inside the frame's content checksum */
    ps_shard_close(s);
    overwrite(shard, file, flen);
    free(file);
    char key[64];
    snprintf(key, sizeof key, "bucket %u block %u", bucket, seq);
    const char *const needles[] = {"part 1", "shard-00001.mdb", key, "checksum"};
    expect_part1_refused(p0, p1, "damaged", needles, 4);
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
        cmocka_unit_test(test_merge_refuses_a_part_changed_while_read),
        cmocka_unit_test(test_merge_refuses_accounting_that_does_not_add_up),
        cmocka_unit_test(test_merge_names_a_damaged_block),
        cmocka_unit_test(test_merge_adds_the_parts_sql), /* last: rewrites the parts' stats */
    };
    return cmocka_run_group_tests_name("merge", tests, setup, teardown);
}
