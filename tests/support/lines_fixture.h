/* The JSONL splitting tests' fixture (tests/support/lines_fixture.c):
 * records as the record reader gives them (ps_record_reader_next), kept
 * with their bytes, and compared with those another way of splitting the
 * same input gives (tests/test_lines.c: whole lines handed to workers;
 * tests/test_line_range.c: line ranges read by the workers). */
#ifndef PS_TEST_LINES_FIXTURE_H
#define PS_TEST_LINES_FIXTURE_H

#include "tests/support/testutil.h"
#include "ingest/ingest.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct got_rec {
    char *data;
    size_t len;
    uint64_t line, index;
    bool too_long;
} got_rec;

typedef struct recs {
    got_rec *v;
    size_t n, cap;
    uint64_t blank;
} recs;

/* Appends a copy of r as the index-th record of its input. */
void recs_push(recs *rs, const ps_raw_record *r, uint64_t index);
void recs_free(recs *rs);
/* A JSONL record reader over `path` (its source in *src). */
ps_record_reader *lines_open_reader(const char *path, size_t max, ps_source **src);
/* Every record of `path` by ps_record_reader_next, and its blank lines. */
void lines_read_reference(const char *path, size_t max, recs *out);
/* The same records, bytes, line numbers, indices, too-long flags and
 * blank-line count. */
void recs_expect_same(const recs *a, const recs *b);

#endif
