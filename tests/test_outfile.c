/* Output files (common/outfile.c): the write-behind thread writes exactly
 * the bytes the synchronous path writes, in order, across its buffers,
 * also into a FIFO read slowly (the caller waits for a free buffer);
 * a failed write is reported, naming the file; an aborted output leaves
 * nothing behind. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "support/testutil.h"

#include "common/outfile.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TOTAL ((size_t)11 << 20) /* past the write-behind's 4 buffers of 1 MiB */

static char *dir_new(void)
{
    char tmpl[] = "/tmp/ps_outfile_XXXXXX";
    char *d = mkdtemp(tmpl);
    assert_non_null(d);
    return strdup(d);
}

static size_t entries(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* Bytes that differ everywhere, written in pieces of 1 byte to 3 MiB. */
static char *pattern(void) { return ps_test_pattern(TOTAL); }

static void write_pieces(ps_outfile *o, const char *p)
{
    static const size_t sizes[] = {1, 290, 4096, 1048575, 1, 3u << 20, 77, 1048576, 12345};
    ps_error err = {0};
    for (size_t at = 0, k = 0; at < TOTAL; k++) {
        size_t n = sizes[k % (sizeof sizes / sizeof *sizes)];
        if (n > TOTAL - at)
            n = TOTAL - at;
        assert_int_equal(ps_outfile_write(o, p + at, n, &err), 0);
        at += n;
    }
}

static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char *b = malloc(TOTAL + 8);
    assert_non_null(b);
    *n = fread(b, 1, TOTAL + 8, f);
    fclose(f);
    return b;
}

static void test_behind_writes_the_same_bytes(void **state)
{
    (void)state;
    char *dir = dir_new(), path[256], *p = pattern();
    ps_error err = {0};
    for (int behind = 0; behind < 2; behind++) {
        snprintf(path, sizeof path, "%s/out%d", dir, behind);
        ps_outfile o;
        assert_int_equal(ps_outfile_open(&o, path, &err), 0);
        assert_int_equal(ps_outfile_write(&o, "head", 4, &err), 0); /* before: kept first */
        if (behind)
            assert_int_equal(ps_outfile_write_behind(&o, &err), 0);
        write_pieces(&o, p);
        assert_int_equal(ps_outfile_commit(&o, &err), 0);
        size_t n;
        char *got = slurp(path, &n);
        assert_int_equal(n, TOTAL + 4);
        assert_memory_equal(got, "head", 4);
        assert_memory_equal(got + 4, p, TOTAL);
        free(got);
    }
    assert_int_equal(entries(dir), 2); /* no temporary left */
    unlink(strcat(strcpy(path, dir), "/out0"));
    unlink(strcat(strcpy(path, dir), "/out1"));
    rmdir(dir);
    free(p);
    free(dir);
}

typedef struct slow_reader {
    const char *path;
    char *got;
    size_t n;
} slow_reader;

/* Reads the FIFO 64 KiB at a time, pausing, so that the writer's thread
 * blocks and the caller fills every buffer while one is being written. */
static void *read_slowly(void *arg)
{
    slow_reader *r = arg;
    int fd = open(r->path, O_RDONLY);
    if (fd < 0)
        return NULL;
    struct timespec pause = {0, 200000};
    for (ssize_t k; r->n < TOTAL + 8 && (k = read(fd, r->got + r->n, 65536)) > 0;) {
        r->n += (size_t)k;
        nanosleep(&pause, NULL);
    }
    close(fd);
    return NULL;
}

static void test_behind_waits_for_a_slow_reader(void **state)
{
    (void)state;
    char *dir = dir_new(), path[256], *p = pattern();
    snprintf(path, sizeof path, "%s/fifo", dir);
    assert_int_equal(mkfifo(path, 0600), 0);
    slow_reader r = {path, malloc(TOTAL + 8 + 65536), 0};
    assert_non_null(r.got);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, read_slowly, &r), 0);
    ps_outfile o;
    ps_error err = {0};
    assert_int_equal(ps_outfile_open(&o, path, &err), 0); /* a FIFO: written into */
    assert_int_equal(ps_outfile_write_behind(&o, &err), 0);
    write_pieces(&o, p);
    assert_int_equal(ps_outfile_commit(&o, &err), 0);
    pthread_join(th, NULL);
    assert_int_equal(r.n, TOTAL);
    assert_memory_equal(r.got, p, TOTAL);
    unlink(path);
    rmdir(dir);
    free(r.got);
    free(p);
    free(dir);
}

static void test_behind_reports_a_failed_write(void **state)
{
    (void)state;
    if (access("/dev/full", W_OK) != 0) {
        skip(); /* reported as a skip by cmocka */
        return;
    }
    char *p = pattern();
    /* small: the thread never starts, the commit writes and fails */
    ps_outfile o;
    ps_error err = {0};
    assert_int_equal(ps_outfile_open(&o, "/dev/full", &err), 0);
    assert_int_equal(ps_outfile_write_behind(&o, &err), 0);
    assert_int_equal(ps_outfile_write(&o, p, 1000, &err), 0);
    assert_int_equal(ps_outfile_commit(&o, &err), PS_EIO);
    assert_non_null(strstr(err.message, "/dev/full"));
    assert_non_null(strstr(err.message, "No space"));
    /* large: the thread's failure reaches a later write or the commit */
    ps_error_clear(&err);
    assert_int_equal(ps_outfile_open(&o, "/dev/full", &err), 0);
    assert_int_equal(ps_outfile_write_behind(&o, &err), 0);
    int rc = 0;
    for (size_t at = 0; at < TOTAL && !rc; at += 65536)
        rc = ps_outfile_write(&o, p + at, 65536, &err);
    if (!rc)
        rc = ps_outfile_commit(&o, &err);
    else
        ps_outfile_abort(&o);
    assert_int_equal(rc, PS_EIO);
    assert_non_null(strstr(err.message, "/dev/full"));
    assert_non_null(strstr(err.message, "No space"));
    free(p);
}

static void test_behind_abort_leaves_nothing(void **state)
{
    (void)state;
    char *dir = dir_new(), path[256], *p = pattern();
    ps_error err = {0};
    snprintf(path, sizeof path, "%s/out", dir);
    ps_outfile o;
    assert_int_equal(ps_outfile_open(&o, path, &err), 0);
    assert_int_equal(ps_outfile_write_behind(&o, &err), 0);
    write_pieces(&o, p); /* buffers queued and written */
    assert_int_equal(entries(dir), 1); /* the temporary */
    ps_outfile_abort(&o);
    assert_int_equal(entries(dir), 0);
    rmdir(dir);
    free(p);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_behind_writes_the_same_bytes),
        cmocka_unit_test(test_behind_waits_for_a_slow_reader),
        cmocka_unit_test(test_behind_reports_a_failed_write),
        cmocka_unit_test(test_behind_abort_leaves_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
