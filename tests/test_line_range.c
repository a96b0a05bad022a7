/* Line ranges (ingest/line_range.c): a JSONL file's lines read by the
 * workers as nominal byte ranges, told their first line in input order,
 * give exactly the records ps_record_reader_next gives: the same bytes,
 * line numbers, indices (counted, as the commit does), too-long flags and
 * blank-line count (tests/support/lines_fixture.c). Hostile generated
 * inputs (CRLF, lone CRs, blank and whitespace lines, lines over
 * max_record_bytes, lines longer than a range, runs of very short lines,
 * no final newline), ranges from 13 bytes to 256 KiB, chunks capped at 1
 * to 4096 lines; every range is read before any is told its first line,
 * as workers running side by side would. Also: ordinary lines are read
 * about once, and a file that shrinks while it is read is an error, not a
 * short input. */
#include "tests/support/lines_fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A random hostile JSONL text of `lines` lines. */
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
    for (size_t i = 0; i < lines; i++) {
        int k = rand() % 1000;
        char line[256];
        int l = snprintf(line, sizeof line, "{\"question\":\"q%zu\",\"sql\":\"SELECT %d\"}", i, k);
        if (k < 80) {
            PUT("", 0); /* a blank line */
        } else if (k < 120) {
            PUT(" \t ", 3);
        } else if (k < 140) {
            PUT("\r", 1);
        } else if (k < 170) { /* over some max_record_bytes used here */
            size_t big = 300 + (size_t)(rand() % 5000);
            for (size_t j = 0; j < big; j++)
                PUT(j % 97 ? "x" : "\r", 1);
        } else if (k < 172) { /* longer than a 256 KiB range */
            size_t big = 300000 + (size_t)(rand() % 1000);
            for (size_t j = 0; j < big; j++)
                PUT("y", 1);
        } else if (k < 185) { /* a line of about a max_record_bytes used here */
            static const size_t edge[] = {200, 300, 4096, 5000};
            size_t big = edge[rand() % 4] - 1 + (size_t)(rand() % 3);
            for (size_t j = 0; j + 1 < big; j++)
                PUT("z", 1);
            PUT(rand() % 2 ? "\r" : "z", 1);
        } else if (k < 200) { /* a run of very short lines */
            for (int j = rand() % 3000; j > 0; j--)
                PUT("1\n", 2);
            PUT("2", 1);
        } else {
            PUT(line, (size_t)l);
            if (k < 300)
                PUT("\r", 1);
        }
        if (i + 1 < lines || seed % 3)
            PUT("\n", 1);
    }
#undef PUT
    *len = n;
    return s;
}

typedef struct ranges_cfg {
    size_t max, range, max_lines, max_bytes;
} ranges_cfg;

static void split_into(const ps_line_range *lr, uint64_t first_line, recs *out)
{
    ps_raw_record *split = calloc(lr->lines ? lr->lines : 1, sizeof *split);
    assert_non_null(split);
    size_t n = ps_line_range_split(lr, first_line, split, lr->lines, &out->blank);
    for (size_t i = 0; i < n; i++)
        recs_push(out, &split[i], out->n); /* indices settled by counting, as the commit does */
    free(split);
}

/* The first record by the reader, as the build does (it may hold a BOM),
 * then the rest as ranges: all read first, then told their first line in
 * order, then chunks past the ranges while the chain is short of the end.
 * *retakes: chunks whose guess was wrong; *held: the bytes the chunks
 * held, summed. */
static void read_ranges(const char *path, const ranges_cfg *c, recs *out, size_t *retakes,
                        uint64_t *held)
{
    ps_source *src;
    ps_record_reader *rr = lines_open_reader(path, c->max, &src);
    ps_error err = {0};
    ps_raw_record rec;
    assert_int_equal(ps_record_reader_next(rr, &rec, &err), 1);
    recs_push(out, &rec, rec.index);
    uint64_t pending, line;
    assert_true(ps_record_reader_at_line(rr, &pending, &line));
    uint64_t from = ps_source_bytes_decoded(src) - pending;
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    uint64_t size = (uint64_t)st.st_size;
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    size_t n = (size_t)((size - from + c->range - 1) / c->range), k = 0;
    ps_line_range *lr = calloc(n + 1, sizeof *lr);
    uint64_t *guess = calloc(n + 1, sizeof *guess);
    assert_non_null(lr);
    assert_non_null(guess);
    for (size_t i = 0; i < n; i++) { /* side by side: every guess before any truth */
        ps_line_range_init(&lr[i]);
        lr[i].fd = fileno(f), lr[i].path = path, lr[i].size = size, lr[i].max = c->max;
        uint64_t begin = from + i * c->range;
        lr[i].end = begin + c->range < size ? begin + c->range : size;
        assert_int_equal(ps_line_range_read(&lr[i], begin, &guess[i], &err), 0);
        if (guess[i] != UINT64_MAX)
            assert_int_equal(
                ps_line_range_take(&lr[i], guess[i], c->max_lines, c->max_bytes, &err), 0);
    }
    uint64_t next = from, next_line = line;
    for (size_t i = 0; i < n || next < size; i++, k++) {
        ps_line_range *x = &lr[i < n ? i : n];
        if (i >= n) { /* past the ranges: a chunk for what is left */
            ps_line_range_free(x);
            ps_line_range_init(x);
            x->fd = fileno(f), x->path = path, x->size = size, x->max = c->max, x->end = size;
        }
        if (i >= n || guess[i] != next) {
            (*retakes)++;
            assert_int_equal(ps_line_range_take(x, next, c->max_lines, c->max_bytes, &err), 0);
        }
        assert_true(x->lines <= c->max_lines);
        size_t keep = c->max + 1 > PS_RECORD_PREFIX_KEEP ? c->max + 1 : PS_RECORD_PREFIX_KEEP;
        assert_true(x->stored - x->from <=
                    c->max_bytes + (keep > c->range ? keep : c->range) + (64 << 10));
        assert_true(i < n || x->lines > 0); /* a chunk past the ranges moves on */
        split_into(x, next_line, out);
        next_line += x->lines;
        next = x->next;
    }
    assert_int_equal(next, size);
    for (size_t i = 0; i <= n; i++) {
        *held += lr[i].data.len;
        ps_line_range_free(&lr[i]);
    }
    free(lr);
    free(guess);
    fclose(f);
    out->blank += ps_record_reader_blank_lines(rr);
    ps_record_reader_free(rr);
    ps_source_close(src);
}

static void test_ranges_give_the_readers_records(void **state)
{
    (void)state;
    size_t retakes = 0;
    for (unsigned seed = 1; seed <= 4; seed++) {
        size_t len;
        char *text = make_input(seed, 1500 + seed * 400, &len);
        char *path = ps_test_tmpfile(text, len, ".jsonl");
        free(text);
        const ranges_cfg cfgs[] = {
            {200, 13, 4096, 13},        {4096, 97, 7, 97},
            {1 << 20, 4096, 4096, 4096}, {300, 65536, 1, 65536},
            {1 << 20, 256 << 10, PS_RANGE_RECORDS, PS_RANGE_BYTES},
            {5000, 256 << 10, 64, PS_RANGE_BYTES},
        };
        for (size_t m = 0; m < sizeof cfgs / sizeof cfgs[0]; m++) {
            recs ref = {0}, got = {0};
            lines_read_reference(path, cfgs[m].max, &ref);
            assert_true(ref.n > 1000 && ref.blank > 100);
            uint64_t held = 0;
            read_ranges(path, &cfgs[m], &got, &retakes, &held);
            recs_expect_same(&ref, &got);
            recs_free(&ref);
            recs_free(&got);
        }
        unlink(path);
        free(path);
    }
    assert_true(retakes > 100); /* the retaking path ran, not only the guesses */
}

/* Lines of ordinary length: every guess holds, no chunk reads twice, and
 * the chunks together read the file about once. */
static void test_ordinary_lines_read_once(void **state)
{
    (void)state;
    ps_buf b;
    ps_buf_init(&b);
    for (int i = 0; i < 20000; i++) {
        char line[200];
        int l = snprintf(line, sizeof line,
                         "{\"question\": \"How many singers are older than %d?\", \"sql\": "
                         "\"SELECT count(*) FROM singer WHERE age > %d\"}\n", i, i);
        assert_int_equal(ps_buf_append(&b, line, (size_t)l), 0);
    }
    char *path = ps_test_tmpfile(b.data, b.len, ".jsonl");
    size_t b_len = b.len;
    ps_buf_free(&b);
    recs ref = {0}, got = {0};
    lines_read_reference(path, 1 << 20, &ref);
    size_t retakes = 0;
    uint64_t held = 0;
    ranges_cfg c = {1 << 20, 64 << 10, PS_RANGE_RECORDS, PS_RANGE_BYTES};
    read_ranges(path, &c, &got, &retakes, &held);
    recs_expect_same(&ref, &got);
    assert_int_equal(retakes, 0);
    /* a range and the rest of its last line, not a max_record_bytes more */
    assert_true(held < (uint64_t)b_len + b_len / 10);
    recs_free(&ref);
    recs_free(&got);
    unlink(path);
    free(path);
}

/* A file cut short after its ranges began: PS_EIO naming it. */
static void test_a_shrunk_file_is_an_error(void **state)
{
    (void)state;
    char text[4000];
    for (size_t i = 0; i < sizeof text; i++)
        text[i] = i % 40 == 39 ? '\n' : 'a';
    char *path = ps_test_tmpfile(text, sizeof text, ".jsonl");
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    ps_line_range lr;
    ps_line_range_init(&lr);
    lr.fd = fileno(f), lr.path = path, lr.size = sizeof text, lr.max = 1 << 20, lr.end = 2000;
    assert_int_equal(truncate(path, 1000), 0);
    ps_error err = {0};
    uint64_t guess;
    assert_int_equal(ps_line_range_read(&lr, 1000, &guess, &err), PS_EIO);
    assert_non_null(strstr(err.message, path));
    assert_non_null(strstr(err.message, "changed while it was read"));
    ps_line_range_free(&lr);
    fclose(f);
    unlink(path);
    free(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ranges_give_the_readers_records),
        cmocka_unit_test(test_ordinary_lines_read_once),
        cmocka_unit_test(test_a_shrunk_file_is_an_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
