/*
 * The LMDB page checker (ps_lmdb_check) on a hostile file, and, when it
 * passes, opening the file as a shard and walking every block, with its
 * "lengths" entry (format 2), the way inspect --verify does (LMDB trusts its
 * pages: the checker is what stands between a damaged file and a read
 * outside the mapping).
 */
#include "store/shards.h"
#include "tests/fuzz/fuzz_util.h"

typedef struct walk {
    ps_shard *s;
    volatile unsigned char acc;
} walk;

static int visit(void *user, uint32_t bucket, uint32_t seq, const void *data, size_t len)
{
    walk *w = user;
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++)
        w->acc ^= p[i];
    const uint32_t *lens;
    size_t n;
    ps_error err = {0};
    int rc = ps_shard_get_lengths(w->s, bucket, seq, &lens, &n, &err);
    FUZZ_CHECK_ERROR(rc, err);
    for (size_t i = 0; rc == 1 && i < n; i++)
        w->acc ^= (unsigned char)lens[i];
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write("shard-00000.mdb", data, size);
    ps_error err = {0};
    int rc = ps_lmdb_check(path, &err);
    FUZZ_CHECK_ERROR(rc, err);
    if (rc < 0) {
        /* PS_EVERSION: a meta page of another LMDB data version */
        if (rc != PS_ECORRUPT && rc != PS_EVERSION && rc != PS_EIO && rc != PS_ENOENT)
            abort();
        return 0;
    }
    ps_shard *s = NULL;
    rc = ps_shard_open(&s, path, &err);
    FUZZ_CHECK_ERROR(rc, err);
    if (rc < 0)
        return 0;
    walk w = {s, 0};
    (void)strlen(ps_shard_meta(s));
    (void)ps_shard_has_lengths_db(s);
    (void)ps_shard_lengths_count(s);
    rc = ps_shard_foreach(s, visit, &w, &err);
    FUZZ_CHECK_ERROR(rc, err);
    const void *blk;
    size_t len;
    rc = ps_shard_get(s, 0, 0, &blk, &len, &err);
    FUZZ_CHECK_ERROR(rc, err);
    ps_shard_close(s);
    return 0;
}
