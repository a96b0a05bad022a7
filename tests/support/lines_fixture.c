/* The JSONL splitting tests' fixture: see lines_fixture.h. */
#include "tests/support/lines_fixture.h"

#include <stdlib.h>
#include <string.h>

void recs_push(recs *rs, const ps_raw_record *r, uint64_t index)
{
    if (rs->n == rs->cap) {
        rs->cap = rs->cap ? rs->cap * 2 : 256;
        rs->v = realloc(rs->v, rs->cap * sizeof *rs->v);
        assert_non_null(rs->v);
    }
    got_rec *d = &rs->v[rs->n++];
    d->data = malloc(r->len + 1);
    assert_non_null(d->data);
    memcpy(d->data, r->data, r->len);
    d->len = r->len;
    d->line = r->line;
    d->index = index;
    d->too_long = r->too_long;
}

void recs_free(recs *rs)
{
    for (size_t i = 0; i < rs->n; i++)
        free(rs->v[i].data);
    free(rs->v);
    memset(rs, 0, sizeof *rs);
}

ps_record_reader *lines_open_reader(const char *path, size_t max, ps_source **src)
{
    ps_error err = {0};
    assert_int_equal(ps_source_open(src, path, &err), 0);
    ps_record_reader *r = NULL;
    assert_int_equal(ps_record_reader_create(&r, *src, PS_FORMAT_JSONL, max, &err), 0);
    return r;
}

void lines_read_reference(const char *path, size_t max, recs *out)
{
    ps_source *src;
    ps_record_reader *r = lines_open_reader(path, max, &src);
    ps_error err = {0};
    ps_raw_record rec;
    int rc;
    while ((rc = ps_record_reader_next(r, &rec, &err)) == 1)
        recs_push(out, &rec, rec.index);
    assert_int_equal(rc, 0);
    out->blank = ps_record_reader_blank_lines(r);
    ps_record_reader_free(r);
    ps_source_close(src);
}

void recs_expect_same(const recs *a, const recs *b)
{
    assert_int_equal(a->n, b->n);
    assert_int_equal(a->blank, b->blank);
    for (size_t i = 0; i < a->n; i++) {
        assert_int_equal(a->v[i].len, b->v[i].len);
        assert_memory_equal(a->v[i].data, b->v[i].data, a->v[i].len);
        assert_int_equal(a->v[i].line, b->v[i].line);
        assert_int_equal(a->v[i].index, b->v[i].index);
        assert_int_equal(a->v[i].too_long, b->v[i].too_long);
    }
}
