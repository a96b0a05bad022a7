/* A file written and hashed in one pass (common/hashed_sink.c): the file
 * holds exactly what the producer wrote, in order, and the hash and size
 * are those of the file read back; the producer's own failure comes back
 * untouched; a failed write is reported naming the file, after the pipe
 * was drained (a producer that writes far more than a pipe holds is never
 * left blocked). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "support/testutil.h"

#include "common/hashed_sink.h"
#include "common/ps_internal.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TOTAL ((size_t)11 << 20) /* past the sink's buffer and its writeback step */

typedef struct {
    const char *data;
    size_t len;
    int fail_after; /* return this after writing half (0: succeed) */
} producer;

/* Writes in pieces of 1 byte to 3 MiB, as a copy of varying pages would. */
static int produce(void *arg, int fd)
{
    static const size_t sizes[] = {1, 290, 4096, 1048575, 1, 3u << 20, 77, 1048576, 12345};
    producer *pr = arg;
    size_t stop = pr->fail_after ? pr->len / 2 : pr->len;
    for (size_t at = 0, k = 0; at < stop; k++) {
        size_t n = sizes[k % (sizeof sizes / sizeof sizes[0])];
        if (n > stop - at)
            n = stop - at;
        if (ps_fd_write_all(fd, pr->data + at, n))
            return -1;
        at += n;
    }
    return pr->fail_after;
}

static char *pattern(void) { return ps_test_pattern(TOTAL); }

static void test_sink_writes_and_hashes(void **state)
{
    (void)state;
    char path[] = "/tmp/ps_sink_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    char *p = pattern();
    producer pr = {p, TOTAL, 0};
    char hex[65] = "", want[65];
    uint64_t bytes = 0, want_bytes = 0;
    int produced = -7;
    ps_error err = {0};
    assert_int_equal(ps_hashed_sink_run(fd, path, produce, &pr, &produced, hex, &bytes, &err), 0);
    assert_int_equal(produced, 0);
    close(fd);
    assert_int_equal(bytes, TOTAL);
    assert_int_equal(ps_sha256_file(path, want, &want_bytes, &err), 0);
    assert_int_equal(want_bytes, TOTAL);
    assert_string_equal(hex, want);
    size_t len = 0;
    char *got = NULL;
    assert_int_equal(ps_file_read_all(path, "file", TOTAL + 1, &got, &len, &err), 0);
    assert_int_equal(len, TOTAL);
    assert_memory_equal(got, p, TOTAL);
    ps_sha256_hex(p, TOTAL, want);
    assert_string_equal(hex, want);
    free(got);
    free(p);
    unlink(path);
}

static void test_sink_passes_the_producers_failure(void **state)
{
    (void)state;
    char path[] = "/tmp/ps_sink_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    char *p = pattern();
    producer pr = {p, TOTAL, 42};
    char hex[65] = "untouched";
    int produced = 0;
    ps_error err = {0};
    assert_int_equal(ps_hashed_sink_run(fd, path, produce, &pr, &produced, hex, NULL, &err), 0);
    assert_int_equal(produced, 42);
    assert_string_equal(hex, "untouched");
    close(fd);
    free(p);
    unlink(path);
}

static void test_sink_reports_a_failed_write(void **state)
{
    (void)state;
    int fd = open("/dev/full", O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
        skip(); /* reported as a skip by cmocka */
        return;
    }
    char *p = pattern();
    producer pr = {p, TOTAL, 0};
    char hex[65];
    int produced = -7;
    ps_error err = {0};
    alarm(60); /* a sink that stopped draining would leave the producer blocked */
    assert_int_equal(ps_hashed_sink_run(fd, "/dev/full", produce, &pr, &produced, hex, NULL, &err),
                     PS_EIO);
    alarm(0);
    assert_int_equal(produced, 0); /* it wrote everything: the pipe was drained */
    assert_non_null(strstr(err.message, "/dev/full"));
    assert_non_null(strstr(err.message, "No space"));
    close(fd);
    free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sink_writes_and_hashes),
        cmocka_unit_test(test_sink_passes_the_producers_failure),
        cmocka_unit_test(test_sink_reports_a_failed_write),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
