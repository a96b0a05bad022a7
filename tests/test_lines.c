/* Whole JSONL lines handed to workers (ps_record_reader_take_lines, then
 * ps_lines_split) give exactly the records ps_record_reader_next gives:
 * the same bytes, line numbers, too-long flags and blank-line count, on
 * hostile generated inputs (BOM, CRLF, lone CRs, blank and whitespace
 * lines, lines over max_record_bytes, no final newline) read in blocks of
 * every size, switching between the two ways as the build does. */
#include "tests/support/lines_fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A random hostile JSONL text of about `lines` lines. */
static char *make_input(unsigned seed, size_t lines, size_t *len)
{
    srand(seed);
    size_t cap = 1 << 16, n = 0;
    char *s = malloc(cap);
    assert_non_null(s);
#define PUT(str, l)                                                                                \
    do {                                                                                           \
        while (n + (l) + 1 > cap)                                                                  \
            assert_non_null(s = realloc(s, cap *= 2));                                             \
        memcpy(s + n, (str), (l));                                                                 \
        n += (l);                                                                                  \
    } while (0)
    if (seed % 2)
        PUT("\xEF\xBB\xBF", 3);
    for (size_t i = 0; i < lines; i++) {
        int k = rand() % 100;
        char line[256];
        int l = snprintf(line, sizeof line, "{\"question\":\"q%zu\",\"sql\":\"SELECT %d\"}", i, k);
        if (k < 8) {
            PUT("", 0); /* a blank line */
        } else if (k < 12) {
            PUT(" \t ", 3);
        } else if (k < 14) {
            PUT("\r", 1);
        } else if (k < 17) { /* over any max_record_bytes used here */
            size_t big = 300 + (size_t)(rand() % 5000);
            for (size_t j = 0; j < big; j++)
                PUT("x", 1);
        } else {
            PUT(line, (size_t)l);
            if (k < 30)
                PUT("\r", 1);
        }
        if (i + 1 < lines || seed % 3)
            PUT("\n", 1);
    }
#undef PUT
    *len = n;
    return s;
}

/* Blocks of at most `want` bytes and `max_lines` lines, the reader's
 * records between them; indices settled by counting, as the commit does. */
static void read_blocks(const char *path, size_t max, size_t want, size_t max_lines, recs *out,
                        size_t *blocks)
{
    ps_source *src;
    ps_record_reader *r = lines_open_reader(path, max, &src);
    ps_error err = {0};
    ps_buf block;
    ps_buf_init(&block);
    ps_raw_record *split = calloc(max_lines, sizeof *split);
    assert_non_null(split);
    uint64_t index = 0;
    for (;;) {
        ps_buf_reset(&block);
        uint64_t first;
        int k = ps_record_reader_take_lines(r, &block, want, max_lines, &first, &err);
        assert_true(k >= 0 && (size_t)k <= max_lines);
        if (k > 0) {
            (*blocks)++;
            size_t n = ps_lines_split(block.data, block.len, first, max, split, max_lines,
                                      &out->blank);
            for (size_t i = 0; i < n; i++) {
                assert_int_equal(split[i].index, i);
                recs_push(out, &split[i], index++);
            }
            continue;
        }
        ps_raw_record rec;
        int rc = ps_record_reader_next(r, &rec, &err);
        assert_true(rc >= 0);
        if (rc == 0)
            break;
        recs_push(out, &rec, index++);
    }
    out->blank += ps_record_reader_blank_lines(r);
    free(split);
    ps_buf_free(&block);
    ps_record_reader_free(r);
    ps_source_close(src);
}

static void test_blocks_give_the_readers_records(void **state)
{
    (void)state;
    char path[] = "/tmp/ps_test_lines_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    size_t total_blocks = 0;
    for (unsigned seed = 1; seed <= 6; seed++) {
        size_t len;
        char *text = make_input(seed, 3000 + seed * 500, &len);
        assert_int_equal(ftruncate(fd, 0), 0);
        assert_int_equal(pwrite(fd, text, len, 0), (ssize_t)len);
        free(text);
        const size_t maxes[] = {200, 4096, 1 << 20};
        const size_t wants[] = {1, 700, 64 << 10, 4 << 20};
        const size_t max_lines[] = {1, 7, 1024};
        for (size_t m = 0; m < 3; m++) {
            recs ref = {0};
            lines_read_reference(path, maxes[m], &ref);
            assert_true(ref.n > 1000 && ref.blank > 100);
            for (size_t w = 0; w < 4; w++)
                for (size_t l = 0; l < 3; l++) {
                    recs got = {0};
                    read_blocks(path, maxes[m], wants[w], max_lines[l], &got, &total_blocks);
                    recs_expect_same(&ref, &got);
                    recs_free(&got);
                }
            recs_free(&ref);
        }
    }
    assert_true(total_blocks > 1000); /* the block path ran, not only the reader */
    close(fd);
    unlink(path);
}

/* Not JSONL, or the input's first line: the reader's alone. */
static void test_no_blocks_where_the_reader_must_decide(void **state)
{
    (void)state;
    char path[] = "/tmp/ps_test_lines_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char text[] = "a,b\n1,2\n3,4\n";
    assert_int_equal(write(fd, text, sizeof text - 1), (ssize_t)(sizeof text - 1));
    close(fd);
    ps_error err = {0};
    ps_source *src;
    assert_int_equal(ps_source_open(&src, path, &err), 0);
    ps_record_reader *r = NULL;
    assert_int_equal(ps_record_reader_create(&r, src, PS_FORMAT_CSV, 1 << 20, &err), 0);
    ps_buf b;
    ps_buf_init(&b);
    uint64_t first;
    ps_raw_record rec;
    assert_int_equal(ps_record_reader_next(r, &rec, &err), 1);
    assert_int_equal(ps_record_reader_take_lines(r, &b, 1 << 20, 1024, &first, &err), 0);
    ps_record_reader_free(r);
    ps_source_close(src);
    assert_int_equal(ps_source_open(&src, path, &err), 0);
    assert_int_equal(ps_record_reader_create(&r, src, PS_FORMAT_JSONL, 1 << 20, &err), 0);
    assert_int_equal(ps_record_reader_take_lines(r, &b, 1 << 20, 1024, &first, &err), 0);
    assert_int_equal(ps_record_reader_next(r, &rec, &err), 1); /* "a,b": line 1, by the reader */
    assert_int_equal(rec.line, 1);
    assert_int_equal(ps_record_reader_take_lines(r, &b, 1 << 20, 1024, &first, &err), 2);
    assert_int_equal(first, 2);
    assert_int_equal(b.len, 8);
    ps_buf_free(&b);
    ps_record_reader_free(r);
    ps_source_close(src);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_blocks_give_the_readers_records),
        cmocka_unit_test(test_no_blocks_where_the_reader_must_decide),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
