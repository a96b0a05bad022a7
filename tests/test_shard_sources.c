/* The "sources" database of a shard (store/shard_writer.c,
 * store/shard_reader.c): each block's records' source indices under the
 * block's key, beside "lengths" or without it; read back by the pread
 * reader exactly as put, through map growth; the order the writer insists
 * on; a shard written without sources keeping no such database (so its
 * bytes are unchanged); a damaged value refused; and the manifest's
 * "sources" member read with its untrusted-input checks. */
#include "tests/support/testutil.h"
#include "store/inspect.h"
#include "store/shards.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *tmp_path(const char *name)
{
    const char *dir = getenv("TMPDIR");
    char *p = malloc(4096);
    assert_non_null(p);
    snprintf(p, 4096, "%s/pstest-sources-%ld-%s", dir && *dir ? dir : "/tmp", (long)getpid(),
             name);
    unlink(p);
    return p;
}

#define META2 "{\"magic\":\"pairshard-shard\",\"format_version\":2,\"shard\":0,\"shards\":1}"

/* Block i's sources: i % 40 + 1 values (i * 7 + k) % 1000. */
static uint32_t n_of(int i) { return (uint32_t)(i % 40 + 1); }
static uint16_t src_of(int i, uint32_t k) { return (uint16_t)((i * 7 + (int)k) % 1000); }

/* nblocks blocks in 2 buckets, with lengths when `lengths`, sources put
 * before the lengths when `sources_first`. */
static void write_set(const char *path, int nblocks, size_t initial_map, bool lengths,
                      bool sources_first)
{
    ps_shard_writer *w;
    ps_error err = {0};
    int rc = lengths ? ps_shard_writer_open_lengths(&w, path, initial_map, &err)
                     : ps_shard_writer_open_map(&w, path, initial_map, &err);
    assert_int_equal(rc, 0);
    if (ps_shard_writer_enable_sources(w, &err))
        fail_msg("enable: %s", err.message);
    char blk[700];
    uint16_t src[40];
    uint32_t lens[40];
    for (int i = 0; i < nblocks; i++) {
        memset(blk, 'a' + i % 26, sizeof blk);
        uint32_t b = (uint32_t)(i * 2 / nblocks), q = (uint32_t)i, n = n_of(i);
        for (uint32_t k = 0; k < n; k++) {
            src[k] = src_of(i, k);
            lens[k] = k;
        }
        rc = ps_shard_writer_put(w, b, q, blk, sizeof blk, &err);
        if (!rc && lengths && !sources_first)
            rc = ps_shard_writer_put_lengths(w, b, q, lens, n, &err);
        if (!rc)
            rc = ps_shard_writer_put_sources(w, b, q, src, n, &err);
        if (!rc && lengths && sources_first)
            rc = ps_shard_writer_put_lengths(w, b, q, lens, n, &err);
        if (rc)
            fail_msg("block %d: %s", i, err.message);
    }
    if (ps_shard_writer_finish(w, META2, &err))
        fail_msg("finish: %s", err.message);
}

static void check_read_back(const char *path, int nblocks, bool lengths)
{
    ps_shard *s;
    ps_error err = {0};
    assert_int_equal(ps_shard_open(&s, path, &err), 0);
    assert_true(ps_shard_has_sources_db(s));
    assert_int_equal(ps_shard_has_lengths_db(s), lengths);
    assert_int_equal(ps_shard_sources_count(s), nblocks);
    for (int i = 0; i < nblocks; i++) {
        uint32_t b = (uint32_t)(i * 2 / nblocks);
        const uint16_t *src;
        size_t n;
        assert_int_equal(ps_shard_get_sources(s, b, (uint32_t)i, &src, &n, &err), 1);
        assert_int_equal(n, n_of(i));
        for (uint32_t k = 0; k < n; k++)
            assert_int_equal(src[k], src_of(i, k));
    }
    const uint16_t *src;
    size_t n;
    assert_int_equal(ps_shard_get_sources(s, 7, 0, &src, &n, &err), 0); /* no such key */
    ps_shard_close(s);
}

static void test_sources_round_trip(void **state)
{
    (void)state;
    char *a = tmp_path("a.mdb"), *b = tmp_path("b.mdb"), *c = tmp_path("c.mdb");
    write_set(a, 300, 0, true, false);
    check_read_back(a, 300, true);
    /* the same puts again: the same bytes */
    write_set(b, 300, 0, true, false);
    size_t la, lb;
    unsigned char *da = ps_test_read_file(a, &la), *db = ps_test_read_file(b, &lb);
    assert_int_equal(la, lb);
    assert_memory_equal(da, db, la);
    free(da);
    free(db);
    unlink(b);
    /* through a map grown many times (aborts, replays of all three
     * databases), sources put before lengths: the same content and size
     * (unused bytes inside pages may differ, docs/FORMAT.md) */
    write_set(b, 300, 64 << 10, true, true);
    check_read_back(b, 300, true);
    da = ps_test_read_file(a, &la);
    db = ps_test_read_file(b, &lb);
    assert_int_equal(la, lb);
    free(da);
    free(db);
    /* a pair (version 1) shard with sources and no lengths */
    write_set(c, 50, 0, false, false);
    check_read_back(c, 50, false);
    unlink(a);
    unlink(b);
    unlink(c);
    free(a);
    free(b);
    free(c);
}

/* A writer never asked for sources: no database, and the same bytes as
 * ever (enable_sources is what adds it). */
static void test_none_without_enable(void **state)
{
    (void)state;
    char *a = tmp_path("n.mdb");
    ps_shard_writer *w;
    ps_error err = {0};
    assert_int_equal(ps_shard_writer_open(&w, a, &err), 0);
    assert_int_equal(ps_shard_writer_put(w, 0, 0, "x", 1, &err), 0);
    uint16_t one = 1;
    assert_int_equal(ps_shard_writer_put_sources(w, 0, 0, &one, 1, &err), PS_EINVAL);
    assert_int_equal(ps_shard_writer_finish(w, META2, &err), 0);
    ps_shard *s;
    assert_int_equal(ps_shard_open(&s, a, &err), 0);
    assert_false(ps_shard_has_sources_db(s));
    assert_int_equal(ps_shard_sources_count(s), 0);
    const uint16_t *src;
    size_t n;
    assert_int_equal(ps_shard_get_sources(s, 0, 0, &src, &n, &err), 0);
    ps_shard_close(s);
    unlink(a);
    free(a);
}

static void test_order_enforced(void **state)
{
    (void)state;
    char *a = tmp_path("o.mdb");
    ps_shard_writer *w;
    ps_error err = {0};
    uint16_t s2[2] = {0, 1};
    uint32_t l2[2] = {1, 1};
    assert_int_equal(ps_shard_writer_open_lengths(&w, a, 0, &err), 0);
    assert_int_equal(ps_shard_writer_enable_sources(w, &err), 0);
    assert_int_equal(ps_shard_writer_put(w, 0, 0, "xy", 2, &err), 0);
    assert_int_equal(ps_shard_writer_put_lengths(w, 0, 0, l2, 2, &err), 0);
    /* the next block before this one's sources */
    assert_int_equal(ps_shard_writer_put(w, 0, 1, "z", 1, &err), PS_EINVAL);
    assert_non_null(strstr(err.message, "before the sources of bucket 0 block 0"));
    assert_int_equal(ps_shard_writer_put_sources(w, 0, 1, s2, 2, &err), PS_EINVAL);
    assert_non_null(strstr(err.message, "not the block just put"));
    assert_int_equal(ps_shard_writer_put_sources(w, 0, 0, s2, 2, &err), 0);
    assert_int_equal(ps_shard_writer_put_sources(w, 0, 0, s2, 2, &err), PS_EINVAL); /* twice */
    /* enabling after the first put: refused */
    assert_int_equal(ps_shard_writer_enable_sources(w, &err), PS_EINVAL);
    assert_int_equal(ps_shard_writer_put(w, 1, 0, "z", 1, &err), 0);
    assert_int_equal(ps_shard_writer_put_lengths(w, 1, 0, l2, 1, &err), 0);
    /* finishing with a block's sources missing: refused, nothing left */
    assert_int_equal(ps_shard_writer_finish(w, META2, &err), PS_EINVAL);
    assert_non_null(strstr(err.message, "bucket 1 block 0 has no sources"));
    assert_int_not_equal(access(a, F_OK), 0);
    free(a);
}

/* Writes DIR/manifest.json with `text` and reads it back. */
static int read_manifest_text(const char *text, ps_manifest **out, ps_error *err)
{
    char *dir = tmp_path("mf");
    mkdir(dir, 0755);
    char path[4200];
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    int rc = ps_manifest_read(dir, out, err);
    unlink(path);
    rmdir(dir);
    free(dir);
    return rc;
}

#define MF_HEAD                                                                              \
    "{\"format\":\"pairshard-manifest\",\"format_version\":1,"                              \
    "\"tokenizer\":{\"vocab_size\":100,\"id_width\":2},\"labels\":[],\"buckets\":[64],"     \
    "\"block_records\":4,\"shards\":[]"

static void test_manifest_sources(void **state)
{
    (void)state;
    ps_manifest *m = NULL;
    ps_error err = {0};
    assert_int_equal(read_manifest_text(MF_HEAD "}", &m, &err), 0);
    assert_int_equal(m->n_sources, 0); /* absent: a set of one source */
    ps_manifest_free(m);
    const char *good = MF_HEAD ",\"sources\":[{\"name\":\"spider\",\"records\":5,\"tokens\":50,"
                       "\"accounting\":{}},{\"name\":\"bird\",\"records\":2,\"tokens\":9}]}";
    assert_int_equal(read_manifest_text(good, &m, &err), 0);
    assert_int_equal(m->n_sources, 2);
    assert_string_equal(m->source_names[0], "spider");
    assert_string_equal(m->source_names[1], "bird");
    assert_int_equal(m->source_counts[0].records, 5);
    assert_int_equal(m->source_counts[1].tokens, 9);
    ps_manifest_free(m);
    static const struct {
        const char *sources, *msg;
    } bad[] = {
        {"{}", "must be an array"},
        {"[]", "must be an array"},
        {"[{\"records\":1,\"tokens\":1}]", "sources[0]: \"name\""},
        {"[{\"name\":\"\",\"records\":1,\"tokens\":1}]", "sources[0]: \"name\""},
        {"[{\"name\":\"a=b\",\"records\":1,\"tokens\":1}]", "sources[0]: \"name\""},
        {"[{\"name\":\"a b\",\"records\":1,\"tokens\":1}]", "sources[0]: \"name\""},
        {"[{\"name\":\"a\",\"records\":1,\"tokens\":1},{\"name\":\"a\",\"records\":1,"
         "\"tokens\":1}]", "also sources[0]'s"},
        {"[{\"name\":\"a\",\"records\":-1,\"tokens\":1}]", "\"records\""},
        {"[{\"name\":\"a\",\"records\":1}]", "\"tokens\""},
        {"[{\"name\":\"a\",\"records\":1,\"tokens\":1,\"accounting\":3}]", "\"accounting\""},
        {"[7]", "sources[0]"},
    };
    char text[1024];
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(text, sizeof text, MF_HEAD ",\"sources\":%s}", bad[i].sources);
        m = NULL;
        int rc = read_manifest_text(text, &m, &err);
        if (rc != PS_EFORMAT || !strstr(err.message, bad[i].msg))
            fail_msg("%s: rc %d, message %s", bad[i].sources, rc, err.message);
        assert_null(m);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sources_round_trip),
        cmocka_unit_test(test_none_without_enable),
        cmocka_unit_test(test_order_enforced),
        cmocka_unit_test(test_manifest_sources),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
