/* Unit tests of what a build may replace (pipeline/outdir.c) and of its
 * staging directories (pipeline/publish.c): the -o rule, names within
 * NAME_MAX, stale staging told from live by its lock, what a killed builder
 * leaves (removed, or the previous set put back), cancellation. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "pipeline/build.h"
#include "tests/support/testutil.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char g_tmp[PATH_MAX];

static int setup(void **state)
{
    (void)state;
    snprintf(g_tmp, sizeof g_tmp, "%s/ps-publish-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR")
                                                                            : "/tmp");
    return mkdtemp(g_tmp) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    ps_remove_tree(g_tmp);
    return 0;
}

static const char *at(const char *rel)
{
    return ps_test_path(g_tmp, rel);
}

/* Entries of g_tmp whose names start with `prefix`. */
static size_t count_prefixed(const char *prefix)
{
    return ps_test_count_entries(g_tmp, prefix);
}

static void test_outdir_rule(void **state)
{
    (void)state;
    ps_error err;
    ps_publish_opts force = {NULL, 0, 1, NULL};
    assert_int_equal(ps_output_dir_check(at("missing"), NULL, &err), 0);
    mkdir(at("empty"), 0755);
    assert_int_equal(ps_output_dir_check(at("empty"), NULL, &err), 0);

    mkdir(at("thesis"), 0755);
    ps_test_write_file(at("thesis/ch1.tex"), "years of work\n");
    assert_int_equal(ps_output_dir_check(at("thesis"), NULL, &err), PS_EUSAGE);
    assert_non_null(strstr(err.message, "thesis"));
    assert_int_equal(ps_output_dir_check(at("thesis"), &force, &err), 0);

    mkdir(at("set"), 0755);
    ps_test_write_file(at("set/manifest.json"),
                       "{\"format\": \"pairshard-manifest\", \"format_version\": 1}");
    ps_test_write_file(at("set/shard-00000.mdb"), "x");
    assert_int_equal(ps_output_dir_check(at("set"), NULL, &err), 0);
    mkdir(at("other"), 0755);
    ps_test_write_file(at("other/manifest.json"),
                       "{\"format\": \"something-else\", \"format_version\": 1}");
    assert_int_equal(ps_output_dir_check(at("other"), NULL, &err), PS_EUSAGE);

    /* Never a link or a non-directory, even forced. */
    assert_int_equal(symlink("set", at("link")), 0);
    assert_int_equal(ps_output_dir_check(at("link"), &force, &err), PS_EUSAGE);
    assert_non_null(strstr(err.message, "symbolic link"));
    char slash[PATH_MAX + 300];
    snprintf(slash, sizeof slash, "%s/", at("link"));
    assert_int_equal(ps_output_dir_check(slash, &force, &err), PS_EUSAGE);
    ps_test_write_file(at("file"), "x");
    assert_int_equal(ps_output_dir_check(at("file"), &force, &err), PS_EUSAGE);
    assert_int_equal(mkfifo(at("fifo"), 0644), 0);
    assert_int_equal(ps_output_dir_check(at("fifo"), &force, &err), PS_EUSAGE);

    /* Never a directory holding an input, even forced. */
    const char *inputs[] = {at("set/shard-00000.mdb")};
    ps_publish_opts with_input = {inputs, 1, 1, NULL};
    assert_int_equal(ps_output_dir_check(at("set"), &with_input, &err), PS_EUSAGE);
    assert_non_null(strstr(err.message, "input"));
}

static void test_long_name_staging(void **state)
{
    (void)state;
    char name[256];
    memset(name, 'n', 255);
    name[255] = '\0';
    ps_staging stg;
    ps_error err;
    assert_int_equal(ps_staging_create(at(name), NULL, &stg, &err), 0);
    const char *base = strrchr(stg.root, '/') + 1;
    assert_true(strlen(base) <= NAME_MAX);
    assert_memory_equal(base, ".nnnn", 5); /* recognisable */
    ps_staging_discard(&stg);
    assert_int_equal(count_prefixed(".n"), 0);
}

static void test_stale_and_live_staging(void **state)
{
    (void)state;
    ps_staging live, dead, next;
    ps_error err;
    assert_int_equal(ps_staging_create(at("out"), NULL, &live, &err), 0);
    assert_int_equal(ps_staging_create(at("out"), NULL, &dead, &err), 0);
    char dead_root[PATH_MAX + 300];
    snprintf(dead_root, sizeof dead_root, "%s", dead.root);
    close(dead.lock_fd); /* its builder died: the lock is released */
    dead.lock_fd = -1;
    assert_int_equal(ps_staging_create(at("out"), NULL, &next, &err), 0);
    struct stat st;
    assert_int_equal(stat(live.root, &st), 0);  /* lock held: kept */
    assert_int_not_equal(stat(dead_root, &st), 0); /* removed */
    free(dead.root);
    free(dead.set);
    ps_staging_discard(&live);
    ps_staging_discard(&next);
    assert_int_equal(count_prefixed(".out.tmp."), 0);
}

/* A builder killed between creating its lock file and writing it leaves
 * the lock file alone, empty or part-written: the next builder removes that
 * (nothing is lost), but not an empty lock file beside anything else. */
static void test_killed_before_lock_written(void **state)
{
    (void)state;
    mkdir(at(".out.tmp.Aa0000"), 0755);
    ps_test_write_file(at(".out.tmp.Aa0000/lock"), "");
    mkdir(at(".out.tmp.Bb1111"), 0755);
    ps_test_write_file(at(".out.tmp.Bb1111/lock"), "pairshard st");
    mkdir(at(".out.tmp.Cc2222"), 0755);
    ps_test_write_file(at(".out.tmp.Cc2222/lock"), "");
    ps_test_write_file(at(".out.tmp.Cc2222/notes.txt"), "someone else's\n");
    mkdir(at(".out.tmp.Dd3333"), 0755);
    ps_test_write_file(at(".out.tmp.Dd3333/lock"), "not our text");
    ps_staging stg;
    ps_error err;
    assert_int_equal(ps_staging_create(at("out"), NULL, &stg, &err), 0);
    struct stat st;
    assert_int_not_equal(stat(at(".out.tmp.Aa0000"), &st), 0);
    assert_int_not_equal(stat(at(".out.tmp.Bb1111"), &st), 0);
    assert_int_equal(stat(at(".out.tmp.Cc2222/notes.txt"), &st), 0);
    assert_int_equal(stat(at(".out.tmp.Dd3333/lock"), &st), 0);
    ps_staging_discard(&stg);
    assert_int_equal(count_prefixed(".out.tmp."), 2);
}

/* Without RENAME_EXCHANGE the previous set is moved aside before the new
 * one goes in; a builder killed between the two renames leaves DIR absent
 * and the previous set in its staging. The next builder puts it back. */
static void test_killed_between_renames(void **state)
{
    (void)state;
    mkdir(at(".pub.tmp.Ee4444"), 0755);
    ps_test_write_file(at(".pub.tmp.Ee4444/lock"), "pairshard staging directory\n");
    mkdir(at(".pub.tmp.Ee4444/old"), 0755);
    ps_test_write_file(at(".pub.tmp.Ee4444/old/manifest.json"),
                       "{\"format\": \"pairshard-manifest\", \"format_version\": 1}");
    mkdir(at(".pub.tmp.Ee4444/set"), 0755);
    ps_staging stg;
    ps_error err;
    assert_int_equal(ps_staging_create(at("pub"), NULL, &stg, &err), 0);
    struct stat st;
    assert_int_equal(stat(at("pub/manifest.json"), &st), 0); /* back in place */
    assert_int_not_equal(stat(at(".pub.tmp.Ee4444"), &st), 0);
    ps_staging_discard(&stg);
    assert_int_equal(count_prefixed(".pub.tmp."), 0);
}

static void test_cancel_before_swap(void **state)
{
    (void)state;
    volatile sig_atomic_t cancel = 0;
    ps_publish_opts o = {NULL, 0, 0, &cancel};
    ps_staging stg;
    ps_error err;
    mkdir(at("pub"), 0755);
    ps_test_write_file(at("pub/manifest.json"),
                       "{\"format\": \"pairshard-manifest\", \"format_version\": 1}");
    assert_int_equal(ps_staging_create(at("pub"), &o, &stg, &err), 0);
    char path[PATH_MAX + 300];
    snprintf(path, sizeof path, "%s/manifest.json", stg.set);
    ps_test_write_file(path,
                       "{\"format\": \"pairshard-manifest\", \"format_version\": 1, \"new\": 1}");
    cancel = 1;
    assert_int_equal(ps_staging_publish(&stg, at("pub"), &o, &err), PS_ECANCELED);
    ps_staging_discard(&stg);
    FILE *f = fopen(at("pub/manifest.json"), "r");
    char buf[200] = "";
    assert_non_null(f);
    assert_non_null(fgets(buf, sizeof buf, f));
    fclose(f);
    assert_null(strstr(buf, "new")); /* untouched */
    assert_int_equal(count_prefixed(".pub.tmp."), 0);

    cancel = 0;
    assert_int_equal(ps_staging_create(at("pub"), &o, &stg, &err), 0);
    snprintf(path, sizeof path, "%s/manifest.json", stg.set);
    ps_test_write_file(path,
                       "{\"format\": \"pairshard-manifest\", \"format_version\": 1, \"new\": 1}");
    assert_int_equal(ps_staging_publish(&stg, at("pub"), &o, &err), 0);
    ps_staging_discard(&stg);
    f = fopen(at("pub/manifest.json"), "r");
    assert_non_null(f);
    assert_non_null(fgets(buf, sizeof buf, f));
    fclose(f);
    assert_non_null(strstr(buf, "new")); /* swapped in */
    assert_int_equal(count_prefixed(".pub.tmp."), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_outdir_rule, setup, teardown),
        cmocka_unit_test_setup_teardown(test_long_name_staging, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stale_and_live_staging, setup, teardown),
        cmocka_unit_test_setup_teardown(test_killed_before_lock_written, setup, teardown),
        cmocka_unit_test_setup_teardown(test_killed_between_renames, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel_before_swap, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
