/* The version 2 shard writer (store/shard_writer.c): the "lengths"
 * database beside "blocks" — each block's lengths under the same key, read
 * back with python-free LMDB here; the order it insists on (lengths right
 * after their block, none missing at finish); the same puts giving the same
 * bytes through map growth; and a version 1 writer leaving no such
 * database. */
#include "tests/support/testutil.h"
#include "store/shards.h"

#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *tmp_path(const char *name)
{
    const char *dir = getenv("TMPDIR");
    char *p = malloc(4096);
    assert_non_null(p);
    snprintf(p, 4096, "%s/pstest-lengths-%ld-%s", dir && *dir ? dir : "/tmp", (long)getpid(),
             name);
    unlink(p);
    return p;
}

#define META2 "{\"magic\":\"pairshard-shard\",\"format_version\":2,\"shard\":0,\"shards\":1}"

/* nblocks blocks of `len` filler bytes in 3 buckets; block i's lengths are
 * i+1 values (i, i+1, ...). initial_map 0: the default. */
static void write_v2(const char *path, int nblocks, size_t len, size_t initial_map)
{
    ps_shard_writer *w;
    ps_error err = {0};
    assert_int_equal(ps_shard_writer_open_lengths(&w, path, initial_map, &err), 0);
    unsigned char *blk = malloc(len);
    uint32_t lengths[64];
    for (int i = 0; i < nblocks; i++) {
        memset(blk, 'a' + i % 26, len);
        uint32_t b = (uint32_t)(i * 3 / nblocks), q = (uint32_t)i;
        for (int k = 0; k <= i % 64; k++)
            lengths[k] = (uint32_t)(i + k);
        if (ps_shard_writer_put(w, b, q, blk, len, &err) ||
            ps_shard_writer_put_lengths(w, b, q, lengths, (size_t)(i % 64 + 1), &err))
            fail_msg("block %d: %s", i, err.message);
    }
    free(blk);
    if (ps_shard_writer_finish(w, META2, &err))
        fail_msg("finish: %s", err.message);
}

/* Every entry of `db` in the file: calls back with key and value. */
static size_t entries(const char *path, const char *db, void (*fn)(MDB_val *, MDB_val *, size_t))
{
    MDB_env *env;
    MDB_txn *t;
    MDB_dbi dbi;
    MDB_cursor *c;
    MDB_val k, v;
    assert_int_equal(mdb_env_create(&env), 0);
    mdb_env_set_maxdbs(env, 4);
    assert_int_equal(mdb_env_open(env, path, MDB_NOSUBDIR | MDB_RDONLY | MDB_NOLOCK, 0), 0);
    assert_int_equal(mdb_txn_begin(env, NULL, MDB_RDONLY, &t), 0);
    size_t n = 0;
    if (mdb_dbi_open(t, db, 0, &dbi) == 0) {
        assert_int_equal(mdb_cursor_open(t, dbi, &c), 0);
        for (int rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0;
             rc = mdb_cursor_get(c, &k, &v, MDB_NEXT))
            fn(&k, &v, n++);
        mdb_cursor_close(c);
    } else {
        n = (size_t)-1; /* no such database */
    }
    mdb_txn_abort(t);
    mdb_env_close(env);
    return n;
}

static void check_lengths_entry(MDB_val *k, MDB_val *v, size_t i)
{
    const unsigned char *key = k->mv_data, *p = v->mv_data;
    assert_int_equal(k->mv_size, 8);
    uint32_t seq = (uint32_t)key[4] << 24 | (uint32_t)key[5] << 16 | (uint32_t)key[6] << 8 | key[7];
    assert_int_equal(seq, i); /* one entry per block, in block order */
    assert_int_equal(v->mv_size, 4 * (i % 64 + 1));
    for (size_t j = 0; j < v->mv_size / 4; j++) {
        uint32_t x = (uint32_t)p[4 * j] | (uint32_t)p[4 * j + 1] << 8 |
                     (uint32_t)p[4 * j + 2] << 16 | (uint32_t)p[4 * j + 3] << 24;
        assert_int_equal(x, i + j); /* little-endian, as put */
    }
}

static void no_check(MDB_val *k, MDB_val *v, size_t i) { (void)k, (void)v, (void)i; }

static void test_lengths_written(void **state)
{
    (void)state;
    char *a = tmp_path("a.mdb"), *b = tmp_path("b.mdb");
    write_v2(a, 200, 500, 0);
    assert_int_equal(entries(a, "lengths", check_lengths_entry), 200);
    assert_int_equal(entries(a, "blocks", no_check), 200);
    /* the shard reader opens it (version 2 is known) */
    ps_shard *s;
    ps_error err = {0};
    assert_int_equal(ps_shard_open(&s, a, &err), 0);
    assert_int_equal(ps_shard_block_count(s), 200);
    ps_shard_close(s);
    /* the same puts through a map grown many times (64 KiB start: aborts,
     * replays of blocks and lengths): the same bytes */
    write_v2(b, 200, 500, 64 << 10);
    assert_int_equal(entries(b, "lengths", check_lengths_entry), 200);
    size_t la, lb;
    unsigned char *da = ps_test_read_file(a, &la), *db = ps_test_read_file(b, &lb);
    assert_int_equal(la, lb);
    free(da);
    free(db);
    unlink(a);
    unlink(b);
    free(a);
    free(b);
}

static void test_version1_has_none(void **state)
{
    (void)state;
    char *a = tmp_path("v1.mdb");
    ps_shard_writer *w;
    ps_error err = {0};
    assert_int_equal(ps_shard_writer_open(&w, a, &err), 0);
    assert_int_equal(ps_shard_writer_put(w, 0, 0, "x", 1, &err), 0);
    uint32_t one = 1; /* a version 1 writer keeps no lengths */
    assert_int_equal(ps_shard_writer_put_lengths(w, 0, 0, &one, 1, &err), PS_EINVAL);
    assert_int_equal(ps_shard_writer_finish(w, META2, &err), 0);
    assert_int_equal(entries(a, "lengths", no_check), (size_t)-1);
    unlink(a);
    free(a);
}

static void test_order_enforced(void **state)
{
    (void)state;
    char *a = tmp_path("o.mdb");
    ps_shard_writer *w;
    ps_error err = {0};
    uint32_t l[2] = {3, 4};
    assert_int_equal(ps_shard_writer_open_lengths(&w, a, 0, &err), 0);
    assert_int_equal(ps_shard_writer_put(w, 0, 0, "xy", 2, &err), 0);
    /* the next block before this one's lengths */
    assert_int_equal(ps_shard_writer_put(w, 0, 1, "z", 1, &err), PS_EINVAL);
    assert_non_null(strstr(err.message, "before the lengths of bucket 0 block 0"));
    /* lengths of another key */
    assert_int_equal(ps_shard_writer_put_lengths(w, 0, 1, l, 2, &err), PS_EINVAL);
    assert_non_null(strstr(err.message, "not the block just put"));
    assert_int_equal(ps_shard_writer_put_lengths(w, 0, 0, l, 2, &err), 0);
    /* twice */
    assert_int_equal(ps_shard_writer_put_lengths(w, 0, 0, l, 2, &err), PS_EINVAL);
    assert_int_equal(ps_shard_writer_put(w, 1, 0, "z", 1, &err), 0);
    /* finishing with a block's lengths missing: refused, nothing left behind */
    assert_int_equal(ps_shard_writer_finish(w, META2, &err), PS_EINVAL);
    assert_non_null(strstr(err.message, "bucket 1 block 0 has no lengths"));
    assert_int_not_equal(access(a, F_OK), 0);
    free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lengths_written),
        cmocka_unit_test(test_version1_has_none),
        cmocka_unit_test(test_order_enforced),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
