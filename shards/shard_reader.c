/*
 * Shard reader: a finished shard opened read-only, without a lock file
 * (MDB_NOLOCK: a published set is never written, and readers must not
 * leave files in it). One read transaction lives as long as the shard.
 *
 * A shard file may be damaged, so before LMDB touches it every page of
 * its trees is checked (ps_lmdb_check: a damaged node offset or page
 * number would make LMDB read outside the map), the map is no larger than
 * the file, and every value LMDB returns must lie inside the file before
 * it is handed out.
 */
#include "shards/shards.h"

#include <errno.h>
#include <jansson.h>
#include <lmdb.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define META_MAX (64u << 10)

struct ps_shard {
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi blocks;
    MDB_cursor *cur;      /* for ps_shard_seek / ps_shard_next */
    int cur_state;        /* 0: before the first, 1: seek pending, 2: stepping, 3: done */
    unsigned char seek_key[8];
    int have_last;        /* the last key handed out, for messages */
    uint32_t last_bucket, last_seq;
    char *path, *meta;
    const char *map;
    uint64_t file_bytes, nblocks;
};

static int lmdb_corrupt(ps_shard *s, ps_error *err, const char *what, int rc)
{
    if (rc == ENOMEM)
        return ps_error_set(err, PS_ENOMEM, "%s: out of memory", s->path);
    if (s->have_last)
        return ps_error_set(err, PS_ECORRUPT, "%s: %s after bucket %u block %u: LMDB: %s",
                            s->path, what, s->last_bucket, s->last_seq, mdb_strerror(rc));
    return ps_error_set(err, PS_ECORRUPT, "%s: %s: LMDB: %s", s->path, what, mdb_strerror(rc));
}

/* True when [p, p + n) lies inside the file's bytes (when the map's base
 * address is unknown, see find_map, LMDB's own checks are all there is). */
static int in_file(const ps_shard *s, const void *p, size_t n)
{
    const char *c = p;
    if (!s->map)
        return 1;
    return c >= s->map && (uint64_t)(c - s->map) <= s->file_bytes &&
           n <= s->file_bytes - (uint64_t)(c - s->map);
}

/*
 * LMDB does not say where it mapped the file (mdb_env_info's me_mapaddr is
 * the fixed-map address, 0 here), so it is derived from a value LMDB
 * returned from a leaf (or overflow) page: that page starts at the value's address
 * rounded down to the page size, and its header (LMDB's MDB_page: u64
 * pgno, u16 pad, u16 flags) gives its page number, hence the base. Sound
 * when the map is page-size aligned (always, unless the file's page size
 * exceeds this machine's); returns NULL when the header does not agree.
 */
static const char *find_map(const void *value, size_t psize, uint64_t last_pgno)
{
    if (!psize || (psize & (psize - 1)))
        return NULL;
    uintptr_t start = (uintptr_t)value & ~(uintptr_t)(psize - 1);
    uint64_t pgno;
    uint16_t flags;
    memcpy(&pgno, (const void *)start, 8);
    memcpy(&flags, (const char *)start + 10, 2);
    if (!(flags & (0x02 | 0x04)) /* P_LEAF, P_OVERFLOW */ || pgno > last_pgno || pgno * psize > start)
        return NULL;
    uintptr_t base = start - (uintptr_t)(pgno * psize);
    long os_page = sysconf(_SC_PAGESIZE);
    if (os_page > 0 && base % (uintptr_t)os_page)
        return NULL;
    return (const char *)base;
}

void ps_shard_close(ps_shard *s)
{
    if (!s)
        return;
    if (s->cur)
        mdb_cursor_close(s->cur);
    if (s->txn)
        mdb_txn_abort(s->txn);
    if (s->env)
        mdb_env_close(s->env);
    free(s->path);
    free(s->meta);
    free(s);
}

/* Reads meta/format and checks the magic and version. */
static int check_meta(ps_shard *s, size_t psize, uint64_t last_pgno, ps_error *err)
{
    MDB_dbi meta;
    int rc = mdb_dbi_open(s->txn, "meta", 0, &meta);
    if (rc == MDB_NOTFOUND || rc == MDB_INCOMPATIBLE)
        return ps_error_set(err, PS_ECORRUPT, "%s: not a pairshard shard (no meta database)",
                            s->path);
    if (rc)
        return lmdb_corrupt(s, err, "opening meta", rc);
    MDB_val k = {6, "format"}, v;
    rc = mdb_get(s->txn, meta, &k, &v);
    if (rc == MDB_NOTFOUND)
        return ps_error_set(err, PS_ECORRUPT, "%s: not a pairshard shard (no meta/format)",
                            s->path);
    if (rc)
        return lmdb_corrupt(s, err, "reading meta/format", rc);
    s->map = find_map(v.mv_data, psize, last_pgno);
    if (!in_file(s, v.mv_data, v.mv_size) || v.mv_size > META_MAX)
        return ps_error_set(err, PS_ECORRUPT, "%s: meta/format is damaged (%zu bytes)", s->path,
                            v.mv_size);
    s->meta = malloc(v.mv_size + 1);
    if (!s->meta)
        return ps_error_set(err, PS_ENOMEM, "%s: out of memory", s->path);
    memcpy(s->meta, v.mv_data, v.mv_size);
    s->meta[v.mv_size] = '\0';

    json_error_t je;
    json_t *root = json_loadb(s->meta, v.mv_size, JSON_REJECT_DUPLICATES, &je);
    const char *magic = root ? json_string_value(json_object_get(root, "magic")) : NULL;
    json_t *ver = root ? json_object_get(root, "format_version") : NULL;
    if (!magic || strcmp(magic, "pairshard-shard")) {
        json_decref(root);
        return ps_error_set(err, PS_ECORRUPT, "%s: not a pairshard shard (meta/format magic is "
                            "not \"pairshard-shard\")", s->path);
    }
    if (!json_is_integer(ver) || json_integer_value(ver) < 1) {
        json_decref(root);
        return ps_error_set(err, PS_ECORRUPT, "%s: meta/format has no valid format_version",
                            s->path);
    }
    json_int_t v_int = json_integer_value(ver);
    json_decref(root);
    if (v_int > PS_SHARD_FORMAT_VERSION)
        return ps_error_set(err, PS_EVERSION,
                            "%s: shard format version %lld is newer than this pairshard "
                            "supports (%d); read it with a newer pairshard",
                            s->path, (long long)v_int, PS_SHARD_FORMAT_VERSION);
    return PS_OK;
}

int ps_shard_open(ps_shard **out, const char *path, ps_error *err)
{
    *out = NULL;
    struct stat st;
    if (stat(path, &st))
        return ps_error_set(err, errno == ENOENT ? PS_ENOENT : PS_EIO, "%s: %s", path,
                            strerror(errno));
    if (!S_ISREG(st.st_mode))
        return ps_error_set(err, PS_ECORRUPT, "%s: not a regular file", path);
    /* Two meta pages of the smallest page size LMDB could have used. */
    if (st.st_size < 1024)
        return ps_error_set(err, PS_ECORRUPT, "%s: not a shard (%lld bytes, too short for LMDB)",
                            path, (long long)st.st_size);
    /* LMDB trusts its pages; check them before it reads any. */
    int crc = ps_lmdb_check(path, err);
    if (crc)
        return crc;
    ps_shard *s = calloc(1, sizeof *s);
    if (!s || !(s->path = strdup(path))) {
        free(s);
        return ps_error_set(err, PS_ENOMEM, "%s: out of memory", path);
    }
    s->file_bytes = (uint64_t)st.st_size;
    int rc = mdb_env_create(&s->env);
    if (!rc)
        rc = mdb_env_set_maxdbs(s->env, 4);
    /* Map the file and no more: pages past its end would fault. */
    if (!rc)
        rc = mdb_env_set_mapsize(s->env, (size_t)st.st_size);
    if (rc) {
        ps_shard_close(s);
        return ps_error_set(err, PS_ENOMEM, "%s: %s", path, mdb_strerror(rc));
    }
    rc = mdb_env_open(s->env, path, MDB_RDONLY | MDB_NOLOCK | MDB_NOSUBDIR | MDB_NOTLS, 0);
    if (rc) {
        /* The file passed ps_lmdb_check, so any other failure (ENOMEM
         * included: LMDB allocates from what the meta page says) is the
         * file's. */
        int code = rc == EACCES || rc == EPERM ? PS_EIO : PS_ECORRUPT;
        ps_error_set(err, code, "%s: %s: %s", path,
                     code == PS_ECORRUPT ? "not a readable shard" : "cannot open",
                     rc == MDB_INVALID ? "not an LMDB file" : mdb_strerror(rc));
        ps_shard_close(s);
        return code;
    }
    MDB_envinfo info;
    MDB_stat mst;
    mdb_env_info(s->env, &info);
    mdb_env_stat(s->env, &mst);
    uint64_t need = ((uint64_t)info.me_last_pgno + 1) * mst.ms_psize;
    if (need > s->file_bytes) {
        ps_shard_close(s);
        return ps_error_set(err, PS_ECORRUPT,
                            "%s: truncated: %llu bytes, its pages need %llu", path,
                            (unsigned long long)st.st_size, (unsigned long long)need);
    }
    rc = mdb_txn_begin(s->env, NULL, MDB_RDONLY, &s->txn);
    if (rc) {
        rc = lmdb_corrupt(s, err, "starting a read", rc);
        ps_shard_close(s);
        return rc;
    }
    if ((rc = check_meta(s, mst.ms_psize, info.me_last_pgno, err))) {
        ps_shard_close(s);
        return rc;
    }
    int mrc = mdb_dbi_open(s->txn, "blocks", 0, &s->blocks);
    if (mrc == MDB_NOTFOUND || mrc == MDB_INCOMPATIBLE)
        rc = ps_error_set(err, PS_ECORRUPT, "%s: no blocks database", path);
    else if (mrc)
        rc = lmdb_corrupt(s, err, "opening blocks", mrc);
    else if ((mrc = mdb_stat(s->txn, s->blocks, &mst)))
        rc = lmdb_corrupt(s, err, "reading block statistics", mrc);
    else if ((mrc = mdb_cursor_open(s->txn, s->blocks, &s->cur)))
        rc = lmdb_corrupt(s, err, "opening a cursor", mrc);
    if (rc) {
        ps_shard_close(s);
        return rc;
    }
    s->nblocks = mst.ms_entries;
    *out = s;
    return PS_OK;
}

const char *ps_shard_meta(const ps_shard *s) { return s->meta; }
uint64_t ps_shard_block_count(const ps_shard *s) { return s->nblocks; }
uint64_t ps_shard_file_bytes(const ps_shard *s) { return s->file_bytes; }
const char *ps_shard_path(const ps_shard *s) { return s->path; }

static void make_key(unsigned char k[8], uint32_t bucket, uint32_t seq)
{
    for (int i = 0; i < 4; i++) {
        k[i] = (unsigned char)(bucket >> (24 - 8 * i));
        k[4 + i] = (unsigned char)(seq >> (24 - 8 * i));
    }
}

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

int ps_shard_get(ps_shard *s, uint32_t bucket, uint32_t seq, const void **data, size_t *len,
                 ps_error *err)
{
    unsigned char kb[8];
    make_key(kb, bucket, seq);
    MDB_val k = {8, kb}, v;
    int rc = mdb_get(s->txn, s->blocks, &k, &v);
    if (rc == MDB_NOTFOUND)
        return 0;
    if (rc)
        return ps_error_set(err, PS_ECORRUPT, "%s: bucket %u block %u: LMDB: %s", s->path,
                            bucket, seq, mdb_strerror(rc));
    if (!in_file(s, v.mv_data, v.mv_size))
        return ps_error_set(err, PS_ECORRUPT,
                            "%s: bucket %u block %u: value (%zu bytes) lies outside the file",
                            s->path, bucket, seq, v.mv_size);
    *data = v.mv_data;
    *len = v.mv_size;
    return 1;
}

/* One cursor step with the checks every handed-out block gets. */
static int step(ps_shard *s, MDB_cursor *cur, MDB_cursor_op op, MDB_val *k, uint32_t *bucket,
                uint32_t *seq, const void **data, size_t *len, ps_error *err)
{
    MDB_val v;
    int rc = mdb_cursor_get(cur, k, &v, op);
    if (rc == MDB_NOTFOUND)
        return 0;
    if (rc)
        return lmdb_corrupt(s, err, "reading blocks", rc);
    if (k->mv_size != 8 || !in_file(s, k->mv_data, 8))
        return lmdb_corrupt(s, err, "bad block key", MDB_CORRUPTED);
    uint32_t b = be32(k->mv_data), q = be32((const unsigned char *)k->mv_data + 4);
    if (!in_file(s, v.mv_data, v.mv_size))
        return ps_error_set(err, PS_ECORRUPT,
                            "%s: bucket %u block %u: value (%zu bytes) lies outside the file",
                            s->path, b, q, v.mv_size);
    s->have_last = 1;
    s->last_bucket = b;
    s->last_seq = q;
    *bucket = b;
    *seq = q;
    *data = v.mv_data;
    *len = v.mv_size;
    return 1;
}

int ps_shard_foreach(ps_shard *s,
                     int (*fn)(void *user, uint32_t bucket, uint32_t seq, const void *data,
                               size_t len),
                     void *user, ps_error *err)
{
    MDB_cursor *cur;
    int rc = mdb_cursor_open(s->txn, s->blocks, &cur);
    if (rc)
        return lmdb_corrupt(s, err, "opening a cursor", rc);
    s->have_last = 0;
    MDB_cursor_op op = MDB_FIRST;
    for (;;) {
        MDB_val k;
        uint32_t b, q;
        const void *d;
        size_t n;
        rc = step(s, cur, op, &k, &b, &q, &d, &n, err);
        if (rc <= 0)
            break;
        op = MDB_NEXT;
        if ((rc = fn(user, b, q, d, n)))
            break;
    }
    mdb_cursor_close(cur);
    return rc;
}

int ps_shard_seek(ps_shard *s, uint32_t bucket, uint32_t seq, ps_error *err)
{
    (void)err;
    make_key(s->seek_key, bucket, seq);
    s->cur_state = 1;
    s->have_last = 0;
    return PS_OK;
}

int ps_shard_next(ps_shard *s, uint32_t *bucket, uint32_t *seq, const void **data, size_t *len,
                  ps_error *err)
{
    if (s->cur_state == 3)
        return 0;
    MDB_val k = {8, s->seek_key};
    MDB_cursor_op op = s->cur_state == 0 ? MDB_FIRST : s->cur_state == 1 ? MDB_SET_RANGE : MDB_NEXT;
    int rc = step(s, s->cur, op, &k, bucket, seq, data, len, err);
    s->cur_state = rc == 1 ? 2 : 3;
    return rc;
}
