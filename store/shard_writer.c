/*
 * Shard writer: blocks go into a temporary LMDB environment (PATH.build,
 * no lock file, no syncs: it is scratch), which is then copied compacted
 * into PATH.part, fsynced and renamed to PATH. A compacted copy renumbers
 * pages in tree order and starts at transaction 1, and its meta pages get
 * the map size MAP_INITIAL (or what the data needs, when more), so the
 * final bytes are a function of the puts: two writers given the same puts
 * produce identical files (tests/test_shards.c checks it).
 *
 * One caveat, documented in docs/FORMAT.md: LMDB recycles freed page
 * buffers without clearing them, so the unused bytes inside a page depend
 * on the writer's history. That history is itself a function of the puts
 * (commits happen every LOG_COMMIT logged bytes, the map grows at fixed
 * points), but a writer started with a different initial map size can
 * differ in those unused bytes, never in content.
 *
 * The map is grown on MDB_MAP_FULL. A full map aborts the transaction, so
 * the puts since the last commit are kept in a log and replayed into a
 * bigger map; the transaction is committed (and the log emptied) every
 * LOG_COMMIT logged bytes.
 *
 * The log is kept only while the map might fill. A transaction starts
 * unlogged when the map's free pages exceed twice a bound on the pages
 * its puts can take (their overflow pages, a leaf and a branch each, and
 * what a commit adds), plus LOG_SLACK pages; it notes the keys it puts.
 * Before the put that would pass that bound, the data of the puts so far
 * is read back from the live transaction into the log, which from then on
 * is kept as before. So copying every block a second time, and touching a
 * log as large as the transaction, is left to shards that come near their
 * map's size (1 GiB to start with), and LMDB sees the same calls either way:
 * the bytes do not depend on it (tests/test_shards.c compares the two).
 */
#define _GNU_SOURCE /* sched_getcpu, pthread_{get,set}affinity_np */
#include "store/shards.h"

#include "common/hashed_sink.h"

#include <errno.h>
#include <fcntl.h>
#include <lmdb.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define MAP_INITIAL ((size_t)1 << 30) /* sparse: costs nothing until used */
#define MAP_MAX ((size_t)1 << 40)
#define LOG_COMMIT ((size_t)32 << 20)
#define LOG_SLACK 1024 /* pages: the database roots, their paths and the freelist */

enum { DB_BLOCKS = 0, DB_META = 1, DB_LENGTHS = 2, DB_SOURCES = 3 };

struct ps_shard_writer {
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi[4];
    int lengths;         /* version 2: keeps the "lengths" database */
    int lengths_due;     /* the last block put awaits its lengths */
    int sources;         /* keeps the "sources" database (a set of several sources) */
    int sources_due;     /* the last block put awaits its sources */
    size_t mapsize;
    char *path, *tmp;
    int have_last;
    uint32_t last_bucket, last_seq;
    ps_buf log; /* puts since the last commit: db u8, klen u8, dlen u64, key, data */
    /* The transaction's puts when it is unlogged (db u8, klen u8, key): read
     * back into `log` once it might not fit the map. */
    ps_buf keys;
    bool logging;       /* `log` holds this transaction's puts */
    bool always_log;    /* tests: log every put, as if the map were always nearly full */
    size_t logged;      /* the bytes the log holds, or would hold, for this transaction */
    size_t psize;       /* LMDB's page size */
    uint64_t pages_free; /* the map's pages past the last used one, at the transaction's start */
    uint64_t pages_due;  /* a bound on the pages this transaction's puts take */
};

static char *concat(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    char *s = malloc(la + lb + 1);
    if (s) {
        memcpy(s, a, la);
        memcpy(s + la, b, lb + 1);
    }
    return s;
}

/* LMDB reports a write the disk cut short as EIO; when the filesystem
 * holding the shard is (nearly) full, that is what the message says. */
static const char *short_write_why(const char *path, char *buf, size_t n)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    struct rlimit fs;
    if (getrlimit(RLIMIT_FSIZE, &fs) == 0 && fs.rlim_cur != RLIM_INFINITY) {
        /* ulimit -f: the write stopped at the limit (SIGXFSZ ignored) */
        snprintf(buf, n, " (a short write: the file size limit is %llu bytes: %s)",
                 (unsigned long long)fs.rlim_cur, strerror(EFBIG));
        return buf;
    }
    struct statvfs sv;
    if (statvfs(slash ? dir : ".", &sv) != 0 ||
        (unsigned long long)sv.f_bavail * sv.f_frsize >= (1u << 20))
        return "";
    snprintf(buf, n, " (a short write: %s, %llu bytes free)", strerror(ENOSPC),
             (unsigned long long)sv.f_bavail * sv.f_frsize);
    return buf;
}

static int lmdb_err(ps_shard_writer *w, ps_error *err, const char *what, int rc)
{
    char why[128] = "";
    return ps_error_set(err, rc == ENOMEM ? PS_ENOMEM : PS_EIO, "%s: %s: %s%s", w->path, what,
                        mdb_strerror(rc),
                        rc == EIO ? short_write_why(w->path, why, sizeof why) : "");
}

/* Begins a write transaction and opens (creating) both databases. */
static int begin(ps_shard_writer *w)
{
    int rc = mdb_txn_begin(w->env, NULL, 0, &w->txn);
    if (rc)
        return rc;
    rc = mdb_dbi_open(w->txn, "blocks", MDB_CREATE, &w->dbi[DB_BLOCKS]);
    if (!rc)
        rc = mdb_dbi_open(w->txn, "meta", MDB_CREATE, &w->dbi[DB_META]);
    if (!rc && w->lengths) /* only then: a version 1 shard keeps its bytes */
        rc = mdb_dbi_open(w->txn, PS_SHARD_LENGTHS_DB, MDB_CREATE, &w->dbi[DB_LENGTHS]);
    if (!rc && w->sources) /* likewise: a set of one source keeps its bytes */
        rc = mdb_dbi_open(w->txn, PS_SHARD_SOURCES_DB, MDB_CREATE, &w->dbi[DB_SOURCES]);
    if (rc) {
        mdb_txn_abort(w->txn);
        w->txn = NULL;
    }
    return rc;
}

static int put_raw(ps_shard_writer *w, int db, const void *key, size_t klen, const void *data,
                   size_t dlen)
{
    MDB_val k = {klen, (void *)key}, v = {dlen, (void *)data};
    return mdb_put(w->txn, w->dbi[db], &k, &v, db == DB_META ? 0 : MDB_APPEND);
}

/* Replays the log into the current (fresh) transaction. */
static int replay(ps_shard_writer *w)
{
    const unsigned char *p = (const unsigned char *)w->log.data, *end = p + w->log.len;
    while (p < end) {
        int db = p[0];
        size_t klen = p[1];
        uint64_t dlen;
        memcpy(&dlen, p + 2, 8);
        p += 10;
        int rc = put_raw(w, db, p, klen, p + klen, (size_t)dlen);
        if (rc)
            return rc;
        p += klen + dlen;
    }
    return 0;
}

/* After MDB_MAP_FULL: aborts, doubles the map and replays the log until it
 * fits (or the map would pass MAP_MAX). Leaves a live transaction. */
static int grow(ps_shard_writer *w, ps_error *err)
{
    for (;;) {
        if (w->txn)
            mdb_txn_abort(w->txn);
        w->txn = NULL;
        if (w->mapsize >= MAP_MAX)
            return ps_error_set(err, PS_ELIMIT, "%s: shard larger than %zu bytes", w->path,
                                (size_t)MAP_MAX);
        w->mapsize *= 2;
        int rc = mdb_env_set_mapsize(w->env, w->mapsize);
        if (!rc)
            rc = begin(w);
        if (!rc)
            rc = replay(w);
        if (rc == MDB_MAP_FULL)
            continue;
        return rc ? lmdb_err(w, err, "growing the map", rc) : 0;
    }
}

/* A new transaction (begun): unlogged when its puts cannot fill the map
 * before LOG_COMMIT bytes (see the top of the file). */
static int txn_started(ps_shard_writer *w)
{
    MDB_envinfo info;
    int rc = mdb_env_info(w->env, &info);
    if (rc)
        return rc;
    uint64_t pages = w->mapsize / w->psize, used = (uint64_t)info.me_last_pgno + 1;
    w->pages_free = pages > used ? pages - used : 0;
    w->pages_due = 0;
    w->logged = 0;
    w->logging = w->always_log;
    ps_buf_reset(&w->keys);
    return 0;
}

/* A bound on the pages a put takes: its overflow pages (LMDB rounds them
 * up past a page header), a leaf and a branch page. */
static uint64_t put_pages(const ps_shard_writer *w, size_t klen, size_t dlen)
{
    return (uint64_t)(klen + dlen) / w->psize + 4;
}

static int log_append(ps_shard_writer *w, int db, const void *key, size_t klen, const void *data,
                      size_t dlen)
{
    /* The log's room up front: grown by doubling it would be copied
     * again and again on its way to LOG_COMMIT (pages are touched only
     * as the log fills them). */
    if (!w->log.cap && ps_buf_reserve(&w->log, LOG_COMMIT + ((size_t)1 << 20)))
        return PS_ENOMEM;
    unsigned char hdr[10];
    uint64_t d64 = dlen;
    hdr[0] = (unsigned char)db;
    hdr[1] = (unsigned char)klen;
    memcpy(hdr + 2, &d64, 8);
    if (ps_buf_append(&w->log, hdr, sizeof hdr) || ps_buf_append(&w->log, key, klen) ||
        ps_buf_append(&w->log, data, dlen))
        return PS_ENOMEM;
    return 0;
}

/* Starts logging mid-transaction: the puts so far, read back from it (a
 * read changes nothing in it), into the log as they would have been. */
static int log_from_txn(ps_shard_writer *w, ps_error *err)
{
    const unsigned char *p = (const unsigned char *)w->keys.data, *end = p + w->keys.len;
    while (p < end) {
        int db = p[0];
        MDB_val k = {p[1], (void *)(p + 2)}, v;
        int rc = mdb_get(w->txn, w->dbi[db], &k, &v);
        if (rc)
            return lmdb_err(w, err, "reading a put back", rc);
        if (log_append(w, db, k.mv_data, k.mv_size, v.mv_data, v.mv_size))
            return ps_error_set(err, PS_ENOMEM, "%s: out of memory", w->path);
        p += 2 + k.mv_size;
    }
    ps_buf_reset(&w->keys);
    w->logging = true;
    return 0;
}

/* An unlogged transaction met a full map, which its bound rules out: it
 * cannot be replayed, so the shard fails rather than lose its puts. */
static int bound_broken(ps_shard_writer *w, ps_error *err)
{
    return ps_error_set(err, PS_EIO, "%s: the map filled before its bound said it could",
                        w->path);
}

/* Notes one put (its data in the log, or its key while unlogged) and
 * applies it, growing the map when it is full. */
static int put(ps_shard_writer *w, int db, const void *key, size_t klen, const void *data,
               size_t dlen, ps_error *err)
{
    int rc;
    w->pages_due += put_pages(w, klen, dlen);
    if (!w->logging && 2 * w->pages_due + LOG_SLACK > w->pages_free &&
        (rc = log_from_txn(w, err)) != 0)
        return rc;
    if (w->logging) {
        if (log_append(w, db, key, klen, data, dlen))
            return ps_error_set(err, PS_ENOMEM, "%s: out of memory", w->path);
    } else {
        unsigned char hdr[2] = {(unsigned char)db, (unsigned char)klen};
        if (ps_buf_append(&w->keys, hdr, sizeof hdr) || ps_buf_append(&w->keys, key, klen))
            return ps_error_set(err, PS_ENOMEM, "%s: out of memory", w->path);
    }
    w->logged += 10 + klen + dlen;
    rc = put_raw(w, db, key, klen, data, dlen);
    if (rc == MDB_MAP_FULL && w->logging)
        return grow(w, err);
    if (rc) {
        mdb_txn_abort(w->txn); /* a failed put leaves the transaction unusable */
        w->txn = NULL;
        return rc == MDB_MAP_FULL ? bound_broken(w, err) : lmdb_err(w, err, "put", rc);
    }
    return 0;
}

/* Commits the transaction; on a full map grows, replays and commits again. */
static int commit(ps_shard_writer *w, ps_error *err)
{
    for (;;) {
        int rc = mdb_txn_commit(w->txn);
        w->txn = NULL;
        if (rc == MDB_MAP_FULL && !w->logging)
            return bound_broken(w, err);
        if (rc == MDB_MAP_FULL) {
            rc = grow(w, err);
            if (rc)
                return rc;
            continue;
        }
        if (rc)
            return lmdb_err(w, err, "commit", rc);
        ps_buf_reset(&w->log);
        return 0;
    }
}

/* Begins a transaction and notes its start. */
static int begin_noted(ps_shard_writer *w)
{
    int rc = begin(w);
    if (!rc && (rc = txn_started(w)) != 0) {
        mdb_txn_abort(w->txn);
        w->txn = NULL;
    }
    return rc;
}

/* Commits once LOG_COMMIT bytes are logged (or would be), and begins anew. */
static int maybe_commit(ps_shard_writer *w, ps_error *err)
{
    if (w->logged < LOG_COMMIT)
        return PS_OK;
    int rc = commit(w, err);
    if (rc)
        return rc;
    rc = begin_noted(w);
    return rc ? lmdb_err(w, err, "begin", rc) : PS_OK;
}

static void destroy(ps_shard_writer *w)
{
    if (w->txn)
        mdb_txn_abort(w->txn);
    if (w->env)
        mdb_env_close(w->env);
    if (w->tmp)
        unlink(w->tmp);
    ps_buf_free(&w->log);
    ps_buf_free(&w->keys);
    free(w->path);
    free(w->tmp);
    free(w);
}

int ps_shard_writer_open(ps_shard_writer **out, const char *path, ps_error *err)
{
    return ps_shard_writer_open_map(out, path, 0, err);
}

static int open_impl(ps_shard_writer **out, const char *path, size_t initial_map, int lengths,
                     ps_error *err)
{
    *out = NULL;
    ps_shard_writer *w = calloc(1, sizeof *w);
    if (!w)
        return ps_error_set(err, PS_ENOMEM, "%s: out of memory", path);
    w->lengths = lengths;
    ps_buf_init(&w->log);
    ps_buf_init(&w->keys);
    w->path = strdup(path);
    w->tmp = concat(path, ".build");
    if (!w->path || !w->tmp) {
        destroy(w);
        return ps_error_set(err, PS_ENOMEM, "%s: out of memory", path);
    }
    struct stat st;
    if (lstat(path, &st) == 0) {
        destroy(w);
        return ps_error_set(err, PS_EIO, "%s: already exists", path);
    }
    unlink(w->tmp); /* a previous run's leftover */
    w->mapsize = initial_map ? initial_map : MAP_INITIAL;
    int rc = mdb_env_create(&w->env);
    if (!rc)
        rc = mdb_env_set_maxdbs(w->env, 4);
    if (!rc)
        rc = mdb_env_set_mapsize(w->env, w->mapsize);
    if (!rc)
        rc = mdb_env_open(w->env, w->tmp,
                          MDB_NOSUBDIR | MDB_NOLOCK | MDB_NOSYNC | MDB_NOMETASYNC, 0644);
    MDB_stat ms;
    if (!rc && (rc = mdb_env_stat(w->env, &ms)) == 0)
        w->psize = ms.ms_psize;
    if (!rc)
        rc = begin_noted(w);
    if (rc) {
        ps_error_set(err, rc == ENOMEM ? PS_ENOMEM : PS_EIO, "%s: creating %s: %s", path,
                     w->tmp, mdb_strerror(rc));
        int code = err ? err->code : PS_EIO;
        destroy(w);
        return code;
    }
    *out = w;
    return PS_OK;
}

void ps_shard_writer_log_always(ps_shard_writer *w)
{
    w->always_log = true;
    w->logging = true;
}

int ps_shard_writer_open_map(ps_shard_writer **out, const char *path, size_t initial_map,
                             ps_error *err)
{
    return open_impl(out, path, initial_map, 0, err);
}

int ps_shard_writer_open_lengths(ps_shard_writer **out, const char *path, size_t initial_map,
                                 ps_error *err)
{
    return open_impl(out, path, initial_map, 1, err);
}

static void block_key(unsigned char key[8], uint32_t bucket, uint32_t seq)
{
    for (int i = 0; i < 4; i++) {
        key[i] = (unsigned char)(bucket >> (24 - 8 * i));
        key[4 + i] = (unsigned char)(seq >> (24 - 8 * i));
    }
}

int ps_shard_writer_put_lengths(ps_shard_writer *w, uint32_t bucket, uint32_t seq,
                                const uint32_t *lengths, size_t n, ps_error *err)
{
    if (!w->lengths || !w->lengths_due || bucket != w->last_bucket || seq != w->last_seq)
        return ps_error_set(err, PS_EINVAL,
                            "%s: lengths of bucket %u block %u: not the block just put", w->path,
                            bucket, seq);
    if (!w->txn)
        return ps_error_set(err, PS_EIO, "%s: writer failed earlier", w->path);
    unsigned char key[8];
    block_key(key, bucket, seq);
    unsigned char *le = malloc(n ? 4 * n : 1);
    if (!le)
        return ps_error_set(err, PS_ENOMEM, "%s: out of memory", w->path);
    for (size_t i = 0; i < n; i++)
        ps_put_le32(le + 4 * i, lengths[i]);
    int rc = put(w, DB_LENGTHS, key, sizeof key, le, 4 * n, err);
    free(le);
    if (rc)
        return rc;
    w->lengths_due = 0;
    return w->sources_due ? PS_OK : maybe_commit(w, err);
}

int ps_shard_writer_enable_sources(ps_shard_writer *w, ps_error *err)
{
    if (w->have_last)
        return ps_error_set(err, PS_EINVAL, "%s: sources enabled after the first block",
                            w->path);
    if (!w->txn)
        return ps_error_set(err, PS_EIO, "%s: writer failed earlier", w->path);
    if (w->sources)
        return PS_OK;
    int rc = mdb_dbi_open(w->txn, PS_SHARD_SOURCES_DB, MDB_CREATE, &w->dbi[DB_SOURCES]);
    if (rc)
        return lmdb_err(w, err, "creating the sources database", rc);
    w->sources = 1;
    return PS_OK;
}

int ps_shard_writer_put_sources(ps_shard_writer *w, uint32_t bucket, uint32_t seq,
                                const uint16_t *src, uint32_t n, ps_error *err)
{
    if (!w->sources || !w->sources_due || bucket != w->last_bucket || seq != w->last_seq)
        return ps_error_set(err, PS_EINVAL,
                            "%s: sources of bucket %u block %u: not the block just put", w->path,
                            bucket, seq);
    if (!w->txn)
        return ps_error_set(err, PS_EIO, "%s: writer failed earlier", w->path);
    unsigned char key[8];
    block_key(key, bucket, seq);
    unsigned char *le = malloc(n ? 2 * (size_t)n : 1);
    if (!le)
        return ps_error_set(err, PS_ENOMEM, "%s: out of memory", w->path);
    for (size_t i = 0; i < n; i++) {
        le[2 * i] = (unsigned char)(src[i] & 0xff);
        le[2 * i + 1] = (unsigned char)(src[i] >> 8);
    }
    int rc = put(w, DB_SOURCES, key, sizeof key, le, 2 * (size_t)n, err);
    free(le);
    if (rc)
        return rc;
    w->sources_due = 0;
    return w->lengths_due ? PS_OK : maybe_commit(w, err);
}

int ps_shard_writer_put(ps_shard_writer *w, uint32_t bucket, uint32_t seq, const void *block,
                        size_t len, ps_error *err)
{
    if (w->lengths_due || w->sources_due)
        return ps_error_set(err, PS_EINVAL, "%s: bucket %u block %u put before the %s of "
                            "bucket %u block %u", w->path, bucket, seq,
                            w->lengths_due ? "lengths" : "sources", w->last_bucket,
                            w->last_seq);
    if (w->have_last && (bucket < w->last_bucket ||
                         (bucket == w->last_bucket && seq <= w->last_seq)))
        return ps_error_set(err, PS_EINVAL,
                            "%s: bucket %u block %u put after bucket %u block %u (keys must "
                            "increase)",
                            w->path, bucket, seq, w->last_bucket, w->last_seq);
    if (!block && len)
        return ps_error_set(err, PS_EINVAL, "%s: bucket %u block %u: no data", w->path, bucket,
                            seq);
    unsigned char key[8];
    block_key(key, bucket, seq);
    if (!w->txn)
        return ps_error_set(err, PS_EIO, "%s: writer failed earlier", w->path);
    int rc = put(w, DB_BLOCKS, key, sizeof key, block ? block : "", len, err);
    if (rc)
        return rc;
    w->have_last = 1;
    w->last_bucket = bucket;
    w->last_seq = seq;
    /* committed with its lengths and sources: a block is never alone */
    w->lengths_due = w->lengths;
    w->sources_due = w->sources;
    if (w->lengths || w->sources)
        return PS_OK;
    return maybe_commit(w, err);
}

/* The compacted copy into fd (ps_fd_producer).
 *
 * LMDB's compacting copy walks the tree on this thread and writes on a
 * thread of its own, and at every value of more than one page (every
 * block of a shard) it hands its buffer over and waits: thousands of
 * hand-offs a shard. Between two CPUs each is a cross-CPU wake-up (an
 * interrupt, dearer still under a hypervisor); on one CPU, a plain switch.
 * The writing thread takes the CPU set of the thread that starts it, so
 * for the copy this thread keeps to the CPU it is on, and gets its own set
 * back after. Writers finishing at the same time are each running, so on
 * CPUs of their own. Where the affinity calls fail, the copy runs as it
 * would have: the bytes are the same either way. */
static int copy_compact(void *env, int fd)
{
    cpu_set_t saved, one;
    bool pinned = false;
    int cpu = sched_getcpu();
    if (cpu >= 0 && cpu < CPU_SETSIZE &&
        pthread_getaffinity_np(pthread_self(), sizeof saved, &saved) == 0) {
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        pinned = pthread_setaffinity_np(pthread_self(), sizeof one, &one) == 0;
    }
    int rc = mdb_env_copyfd2(env, fd, MDB_CP_COMPACT);
    if (pinned)
        (void)pthread_setaffinity_np(pthread_self(), sizeof saved, &saved);
    return rc;
}

/* The compacted copy into fd: through a hashing sink when the hash is
 * asked for (*mrc: LMDB's result). */
static int copy_into(ps_shard_writer *w, int fd, const char *part, int *mrc, char sha256[65],
                     uint64_t *bytes, ps_error *err)
{
    if (!sha256) {
        *mrc = copy_compact(w->env, fd);
        return 0;
    }
    return ps_hashed_sink_run(fd, part, copy_compact, w->env, mrc, sha256, bytes, err);
}

int ps_shard_writer_finish(ps_shard_writer *w, const char *meta_json, ps_error *err)
{
    return ps_shard_writer_finish_hashed(w, meta_json, NULL, NULL, err);
}

int ps_shard_writer_finish_hashed(ps_shard_writer *w, const char *meta_json, char sha256[65],
                                  uint64_t *bytes, ps_error *err)
{
    int rc = 0;
    char *part = NULL;
    if (!w->txn) {
        rc = ps_error_set(err, PS_EIO, "%s: writer failed earlier", w->path);
        goto out;
    }
    if (w->lengths_due || w->sources_due) {
        rc = ps_error_set(err, PS_EINVAL, "%s: bucket %u block %u has no %s", w->path,
                          w->last_bucket, w->last_seq, w->lengths_due ? "lengths" : "sources");
        goto out;
    }
    if (!meta_json) {
        rc = ps_error_set(err, PS_EINVAL, "%s: no meta", w->path);
        goto out;
    }
    if ((rc = put(w, DB_META, "format", 6, meta_json, strlen(meta_json), err)))
        goto out;
    if ((rc = commit(w, err)))
        goto out;
    /* The copy records the map size in its meta pages: make it the same
     * for every shard that fits MAP_INITIAL (LMDB rounds it up when the
     * data needs more). */
    int src = mdb_env_set_mapsize(w->env, MAP_INITIAL);
    if (src) {
        rc = lmdb_err(w, err, "resizing the map", src);
        goto out;
    }
    /* The compacted copy goes to PATH.part and is renamed into place once
     * synced, so PATH is never a partial file. */
    part = concat(w->path, ".part");
    if (!part) {
        rc = ps_error_set(err, PS_ENOMEM, "%s: out of memory", w->path);
        goto out;
    }
    unlink(part);
    int fd = open(part, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        rc = ps_error_set(err, PS_EIO, "%s: %s", part, strerror(errno));
        goto out;
    }
    int mrc = 0;
    rc = copy_into(w, fd, part, &mrc, sha256, bytes, err);
    if (mrc) {
        rc = lmdb_err(w, err, "compacting copy", mrc);
    } else if (!rc && fsync(fd)) {
        rc = ps_error_set(err, PS_EIO, "%s: fsync: %s", part, strerror(errno));
    }
    if (close(fd) && !rc)
        rc = ps_error_set(err, PS_EIO, "%s: close: %s", part, strerror(errno));
    if (!rc && rename(part, w->path))
        rc = ps_error_set(err, PS_EIO, "%s: rename from %s: %s", w->path, part, strerror(errno));
    if (rc) {
        unlink(part);
    } else if (ps_fsync_parent(w->path)) {
        rc = ps_error_set(err, PS_EIO, "%s: syncing its directory: %s", w->path,
                          strerror(errno));
        unlink(w->path);
    }
out:
    free(part);
    destroy(w);
    return rc;
}

void ps_shard_writer_abort(ps_shard_writer *w)
{
    if (w)
        destroy(w);
}
