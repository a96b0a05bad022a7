/* The page reader (store/lmdb_check.c) against liblmdb itself: every shard
 * of sets built here (different sizes, block sizes, bucket counts, shard
 * counts) is read both through liblmdb (a read-only, lock-free
 * environment, a cursor over the main database and over every named
 * database it records) and through ps_lmdb_walk, and the two readings
 * must hold the same entries in the same order, key by key and value by
 * value. Then meta pages carrying another LMDB data version: liblmdb
 * refuses them (MDB_VERSION_MISMATCH) and so must the page reader, with
 * PS_EVERSION naming the file, the version found and the one it reads. */
#include "tests/support/testutil.h"

#include "store/shards.h"

#include <fcntl.h>
#include <glob.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* One entry of an LMDB file: the named database it is in ("" for the
 * main one), its key, its value, and whether it records a database. */
typedef struct entry {
    char db[64];
    unsigned char *key, *val;
    size_t key_len, val_len;
    int is_db;
} entry;

typedef struct entries {
    entry *v;
    size_t n, cap;
    int fd; /* the page reader's: values are read from their offsets */
} entries;

static void add(entries *e, const char *db, size_t db_len, const void *key, size_t key_len,
                const void *val, size_t val_len, int is_db)
{
    if (e->n == e->cap) {
        e->cap = e->cap ? 2 * e->cap : 256;
        e->v = realloc(e->v, e->cap * sizeof *e->v);
        assert_non_null(e->v);
    }
    entry *x = &e->v[e->n++];
    assert_true(db_len < sizeof x->db);
    memcpy(x->db, db, db_len);
    x->db[db_len] = 0;
    x->key = malloc(key_len + 1);
    x->val = malloc(val_len + 1);
    assert_true(x->key && x->val);
    memcpy(x->key, key, key_len);
    if (val_len)
        memcpy(x->val, val, val_len);
    x->key_len = key_len;
    x->val_len = val_len;
    x->is_db = is_db;
}

static void entries_free(entries *e)
{
    for (size_t i = 0; i < e->n; i++) {
        free(e->v[i].key);
        free(e->v[i].val);
    }
    free(e->v);
    memset(e, 0, sizeof *e);
}

/* Every entry of the database `dbi` (named `db`) through a cursor. */
static void lmdb_db(MDB_txn *txn, MDB_dbi dbi, const char *db, entries *e)
{
    MDB_cursor *c;
    assert_int_equal(mdb_cursor_open(txn, dbi, &c), 0);
    MDB_val k, v;
    int rc;
    for (rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
        if (*db) {
            add(e, db, strlen(db), k.mv_data, k.mv_size, v.mv_data, v.mv_size, 0);
            continue;
        }
        /* The main database: a key that opens as a named database is
         * one, walked right after its record (as ps_lmdb_walk does). */
        char name[64];
        assert_true(k.mv_size < sizeof name);
        memcpy(name, k.mv_data, k.mv_size);
        name[k.mv_size] = 0;
        MDB_dbi sub;
        int is_db = memchr(k.mv_data, 0, k.mv_size) == NULL &&
                    mdb_dbi_open(txn, name, 0, &sub) == 0;
        add(e, "", 0, k.mv_data, k.mv_size, v.mv_data, v.mv_size, is_db);
        if (is_db)
            lmdb_db(txn, sub, name, e);
    }
    assert_int_equal(rc, MDB_NOTFOUND);
    mdb_cursor_close(c);
}

/* The shard at `path` read by liblmdb, as a read-only reader that leaves
 * no lock file (the shard is one file, not a directory). */
static int lmdb_read(const char *path, entries *e)
{
    MDB_env *env;
    assert_int_equal(mdb_env_create(&env), 0);
    assert_int_equal(mdb_env_set_maxdbs(env, 16), 0);
    int rc = mdb_env_open(env, path, MDB_RDONLY | MDB_NOLOCK | MDB_NOSUBDIR, 0444);
    if (rc) {
        mdb_env_close(env);
        return rc;
    }
    MDB_txn *txn;
    MDB_dbi main_db;
    assert_int_equal(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn), 0);
    assert_int_equal(mdb_dbi_open(txn, NULL, 0, &main_db), 0);
    lmdb_db(txn, main_db, "", e);
    mdb_txn_abort(txn);
    mdb_env_close(env);
    return 0;
}

static int on_value(void *user, const char *db, size_t db_len, const unsigned char *key,
                    size_t key_len, uint64_t offset, uint64_t len, unsigned kind)
{
    entries *e = user;
    unsigned char *val = malloc(len + 1);
    assert_non_null(val);
    assert_int_equal(pread(e->fd, val, len, (off_t)offset), (ssize_t)len);
    add(e, db ? db : "", db ? db_len : 0, key, key_len, val, len, kind == PS_LMDB_DATABASE);
    free(val);
    return 0;
}

/* The shard at `path` read by the page reader; its code. */
static int pages_read(const char *path, entries *e, ps_error *err)
{
    e->fd = open(path, O_RDONLY | O_CLOEXEC);
    assert_true(e->fd >= 0);
    ps_error_clear(err);
    int rc = ps_lmdb_walk(e->fd, path, on_value, e, err);
    close(e->fd);
    return rc;
}

typedef struct seen {
    size_t shards, entries, blocks, small, big; /* values under 1 KiB, over a page */
} seen;

/* Both readings of `path` hold the same entries, in the same order. */
static void compare_shard(const char *path, seen *s)
{
    entries a = {0}, b = {0};
    ps_error err;
    assert_int_equal(lmdb_read(path, &a), 0);
    int rc = pages_read(path, &b, &err);
    if (rc)
        fail_msg("%s: %s", path, err.message);
    assert_int_equal(a.n, b.n);
    size_t dbs = 0;
    for (size_t i = 0; i < a.n; i++) {
        const entry *x = &a.v[i], *y = &b.v[i];
        assert_string_equal(x->db, y->db);
        assert_int_equal(x->is_db, y->is_db);
        assert_int_equal(x->key_len, y->key_len);
        assert_memory_equal(x->key, y->key, x->key_len);
        assert_int_equal(x->val_len, y->val_len);
        if (x->val_len)
            assert_memory_equal(x->val, y->val, x->val_len);
        dbs += (size_t)x->is_db;
        if (!strcmp(x->db, "blocks")) {
            s->blocks++;
            s->small += x->val_len < 1024;
            s->big += x->val_len > 4096;
        }
    }
    assert_true(dbs >= 2); /* blocks and meta at least */
    s->shards++;
    s->entries += a.n;
    entries_free(&a);
    entries_free(&b);
}

static void compare_set(const char *dir, seen *s)
{
    char pat[4096];
    snprintf(pat, sizeof pat, "%s/shard-*.mdb", dir);
    glob_t g;
    assert_int_equal(glob(pat, 0, NULL, &g), 0);
    for (size_t i = 0; i < g.gl_pathc; i++)
        compare_shard(g.gl_pathv[i], s);
    globfree(&g);
}

static char *g_dir; /* the sets of this file */

static const char *set_dir(const char *name)
{
    return ps_test_path(g_dir, name);
}

static int setup(void **state)
{
    (void)state;
    g_dir = ps_test_tmpdir("ps-lmdb-pages");
    return g_dir ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    int rc = system(cmd);
    free(g_dir);
    return rc ? -1 : 0;
}

/* Sets of different sizes, block sizes and bucket counts, every shard
 * read both ways. Small blocks are values inside leaf pages, large ones
 * overflow pages: both must be met. */
static void test_liblmdb_and_pages_agree(void **state)
{
    (void)state;
    static const uint32_t one[] = {128}, four[] = {32, 64, 96, 128};
    struct {
        const char *name, *input;
        ps_test_build_opts o;
        size_t shards;
    } sets[] = {
        {"dev-1x128-auto", "spider/dev.json", {.shards = 1, .block_records = 128}, 1},
        {"dev-3x4-one", "spider/dev.json",
         {.shards = 3, .block_records = 4, .buckets = one, .n_buckets = 1}, 3},
        {"train-2x32-four", "spider/train.json",
         {.shards = 2, .block_records = 32, .buckets = four, .n_buckets = 4}, 2},
    };
    seen total = {0};
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++) {
        char *out = strdup(set_dir(sets[i].name));
        char *in = strdup(ps_test_data(sets[i].input));
        assert_true(out && in);
        ps_test_build(in, out, &sets[i].o);
        seen s = {0};
        compare_set(out, &s);
        assert_int_equal(s.shards, sets[i].shards);
        assert_true(s.blocks > 0);
        total.small += s.small;
        total.big += s.big;
        total.entries += s.entries;
        free(out);
        free(in);
    }
    print_message("%zu entries compared, %zu small and %zu overflow blocks\n", total.entries, total.small, total.big);
    assert_true(total.small > 0);
    assert_true(total.big > 0);
}

/* A copy of the first set's first shard with the u32 at `off` of meta
 * page `page` (0, 1 or 2 for both) set to `v`; its malloc'ed path. */
static char *patched_shard(const char *name, unsigned page, size_t off, uint32_t v)
{
    const char *src_dir = set_dir("dev-1x128-auto");
    char src[4096];
    snprintf(src, sizeof src, "%s/shard-00000.mdb", src_dir);
    size_t len;
    unsigned char *bytes = ps_test_read_file(src, &len);
    uint32_t psize;
    memcpy(&psize, bytes + 16 + 24, 4); /* the free DB's md_pad: the page size */
    assert_true(psize >= 512 && 2u * psize <= len);
    for (unsigned p = 0; p < 2; p++)
        if (page == 2 || page == p)
            memcpy(bytes + (size_t)p * psize + 16 + off, &v, 4);
    char *dst = strdup(set_dir(name));
    assert_non_null(dst);
    FILE *f = fopen(dst, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(bytes, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
    free(bytes);
    return dst;
}

static void expect_version(const char *path, unsigned version, unsigned page)
{
    entries e = {0};
    assert_int_equal(lmdb_read(path, &e), MDB_VERSION_MISMATCH);
    ps_error err;
    assert_int_equal(pages_read(path, &e, &err), PS_EVERSION);
    assert_int_equal(e.n, 0);
    char want[256];
    snprintf(want, sizeof want, "%s: LMDB data version %u (meta page %u); this reader supports "
             "data version 1 only", path, version, page);
    if (!strstr(err.message, want))
        fail_msg("message '%s' lacks '%s'", err.message, want);
    ps_error_clear(&err);
    assert_int_equal(ps_lmdb_check(path, &err), PS_EVERSION);
    assert_non_null(strstr(err.message, want));
}

/* A newer data version in either meta page, or both: liblmdb refuses the
 * file as MDB_VERSION_MISMATCH, the page reader as PS_EVERSION naming the
 * file, the version and the one it supports; and so does the reader's
 * open of a set holding such a shard. */
static void test_other_data_version(void **state)
{
    (void)state;
    char *both = patched_shard("v2-both.mdb", 2, 4, 2);
    char *first = patched_shard("v999-page0.mdb", 0, 4, 999);
    char *second = patched_shard("v2-page1.mdb", 1, 4, 2);
    expect_version(both, 2, 0);
    expect_version(first, 999, 0);
    expect_version(second, 2, 1);

    ps_shard *s = NULL;
    ps_error err;
    ps_error_clear(&err);
    assert_int_equal(ps_shard_open(&s, both, &err), PS_EVERSION);
    assert_null(s);
    free(both);
    free(first);
    free(second);
}

/* No LMDB magic is still damage, not a version: liblmdb says MDB_INVALID,
 * the page reader PS_ECORRUPT. */
static void test_no_magic_is_corrupt(void **state)
{
    (void)state;
    char *p = patched_shard("nomagic.mdb", 2, 0, 0x12345678u);
    entries e = {0};
    assert_int_equal(lmdb_read(p, &e), MDB_INVALID);
    ps_error err;
    assert_int_equal(pages_read(p, &e, &err), PS_ECORRUPT);
    assert_non_null(strstr(err.message, "not an LMDB file"));
    free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_liblmdb_and_pages_agree),
        cmocka_unit_test(test_other_data_version),
        cmocka_unit_test(test_no_magic_is_corrupt),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
