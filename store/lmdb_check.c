/*
 * A structural walk of an LMDB file, read with pread, never mapped.
 *
 * Shard files are read without LMDB (see shard_reader.c): this walk is
 * both the check and the index. It visits every tree of the file (the
 * free DB, the main DB and the named databases in it), one page at a time
 * read into an owned buffer, and checks each page against the file: page
 * numbers, header bounds, every node inside its page, every child and
 * overflow page inside the file and reached once, depths, entry counts.
 * Each value's place in the file (offset, length) goes to the caller's
 * callback. Data bytes are not looked at (blocks carry their own
 * checksum). Nothing is mapped, so a file truncated meanwhile gives a
 * short read (reported as truncation), never SIGBUS.
 *
 * The layout is LMDB's on-disk format, data version 1 (liblmdb 0.9.x,
 * 64-bit; a file whose meta pages carry another version is PS_EVERSION,
 * as liblmdb itself refuses it, and tests/test_lmdb_pages.c compares this
 * walk with liblmdb's own reading of real shards): a 16-byte page header
 * {u64 pgno, u16 pad, u16 flags, u16 lower, u16 upper | u32 overflow
 * pages}, u16 node offsets after it, 8-byte node headers {u16 lo, u16 hi,
 * u16 flags, u16 ksize}; the meta record in pages
 * 0 and 1 is {u32 magic, u32 version, u64 address, u64 mapsize,
 * MDB_db free, MDB_db main, u64 last_pg, u64 txnid} with 48-byte MDB_db
 * records {u32 pad (the page size, in the free DB's), u16 flags, u16
 * depth, u64 branch, leaf, overflow pages, entries, root}.
 */
#include "store/shards.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define HDR 16u
#define NODE 8u
#define DB_BYTES 48u
#define P_BRANCH 0x01u
#define P_LEAF 0x02u
#define P_OVERFLOW 0x04u
#define P_META 0x08u
#define F_BIGDATA 0x01u
#define F_SUBDATA 0x02u
#define F_DUPDATA 0x04u
#define MAGIC 0xBEEFC0DEu
/* mdb.c's MDB_DATA_VERSION: liblmdb refuses a file whose meta pages carry
 * another (MDB_VERSION_MISMATCH), and so does this walk (PS_EVERSION). */
#define DATA_VERSION 1u
#define P_INVALID UINT64_MAX
#define MAX_DEPTH 64u

typedef struct walker {
    int fd;
    uint64_t size, psize, last_pg;
    unsigned char *seen; /* one bit a page */
    const char *path;
    ps_error *err;
    ps_lmdb_value_fn on_value;
    void *user;
    const char *db;      /* the named database being walked, NULL for the main one */
    size_t db_len;
} walker;

static uint16_t u16(const unsigned char *p)
{
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}
static uint32_t u32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}
static uint64_t u64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* Reads n bytes at `off` into buf; a short read means the file shrank
 * since it was measured. */
static int read_at(int fd, const char *path, uint64_t off, void *buf, size_t n, ps_error *err)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(fd, (char *)buf + got, n - got, (off_t)(off + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return ps_error_set(err, PS_EIO, "%s: read failed at offset %llu: %s", path,
                                (unsigned long long)(off + got), strerror(errno));
        if (r == 0)
            return ps_error_set(err, PS_ECORRUPT,
                                "%s: truncated while being read (no bytes at offset %llu)", path,
                                (unsigned long long)(off + got));
        got += (size_t)r;
    }
    return 0;
}

PS_PRINTF(3, 4)
static int damaged(walker *w, uint64_t pgno, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return ps_error_set(w->err, PS_ECORRUPT, "%s: damaged LMDB structure: page %llu: %s",
                        w->path, (unsigned long long)pgno, msg);
}

/* Marks `pgno` reached; a page reached twice means a cycle or a lie. */
static int reach(walker *w, uint64_t pgno, uint64_t from)
{
    if (pgno < 2 || pgno > w->last_pg)
        return damaged(w, from, "refers to page %llu, outside 2..%llu",
                       (unsigned long long)pgno, (unsigned long long)w->last_pg);
    if (w->seen[pgno >> 3] & (1u << (pgno & 7)))
        return damaged(w, from, "refers to page %llu, which is already in use",
                       (unsigned long long)pgno);
    w->seen[pgno >> 3] |= (unsigned char)(1u << (pgno & 7));
    return 0;
}

typedef struct db_rec {
    uint16_t flags, depth;
    uint64_t branch, leaf, overflow, entries, root;
} db_rec;

static void read_db(const unsigned char *p, db_rec *d)
{
    d->flags = u16(p + 4);
    d->depth = u16(p + 6);
    d->branch = u64(p + 8);
    d->leaf = u64(p + 16);
    d->overflow = u64(p + 24);
    d->entries = u64(p + 32);
    d->root = u64(p + 40);
}

typedef struct tally {
    uint64_t branch, leaf, overflow, entries;
} tally;

static int walk_db(walker *w, const db_rec *d, int is_main, const char *name);
static int walk_page(walker *w, uint64_t pgno, unsigned level, unsigned depth, int is_main,
                     tally *t);

/* Checks the overflow pages of a big value (leaf node i of page pgno) and
 * reports where its bytes are. */
static int big_value(walker *w, uint64_t pgno, unsigned i, uint64_t op, uint64_t dsize,
                     uint64_t *off, tally *t)
{
    int rc = reach(w, op, pgno);
    if (rc)
        return rc;
    unsigned char oh[HDR];
    if ((rc = read_at(w->fd, w->path, op * w->psize, oh, HDR, w->err)))
        return rc;
    uint32_t pages = u32(oh + 12);
    if (u64(oh) != op || !(u16(oh + 10) & P_OVERFLOW) || pages == 0 ||
        pages - 1 > w->last_pg - op)
        return damaged(w, op, "not a valid overflow page (for page %llu node %u)",
                       (unsigned long long)pgno, i);
    if (dsize > (uint64_t)pages * w->psize - HDR)
        return damaged(w, op, "%llu data bytes do not fit its %u pages",
                       (unsigned long long)dsize, pages);
    for (uint64_t q = op + 1; q < op + pages; q++)
        if ((rc = reach(w, q, op)))
            return rc;
    t->overflow += pages;
    *off = op * w->psize + HDR;
    return 0;
}

/* Checks leaf node i (at `nd`, key ending at page offset kend) of page
 * pgno; reports its value, and walks a named database it records. */
static int leaf_node(walker *w, const unsigned char *pg, uint64_t pgno, unsigned i,
                     const unsigned char *nd, uint64_t kend, int is_main, tally *t)
{
    uint16_t nflags = u16(nd + 4), ksize = u16(nd + 6);
    uint64_t dsize = (uint64_t)u16(nd) | (uint64_t)u16(nd + 2) << 16;
    uint64_t off = pgno * w->psize + kend;
    t->entries++;
    if (nflags & ~(unsigned)(F_BIGDATA | F_SUBDATA) || (nflags & F_DUPDATA))
        return damaged(w, pgno, "node %u: unexpected flags 0x%x", i, nflags);
    int rc;
    if (nflags & F_BIGDATA) {
        if (kend + 8 > w->psize)
            return damaged(w, pgno, "node %u: overflow reference runs past the page", i);
        if ((rc = big_value(w, pgno, i, u64(pg + kend), dsize, &off, t)))
            return rc;
    } else if (kend + dsize > w->psize) {
        return damaged(w, pgno, "node %u: %llu data bytes run past the page", i,
                       (unsigned long long)dsize);
    }
    unsigned kind = 0;
    if (nflags & F_SUBDATA) {
        if (!is_main || dsize != DB_BYTES || (nflags & F_BIGDATA))
            return damaged(w, pgno, "node %u: a misplaced database record", i);
        kind = PS_LMDB_DATABASE;
    }
    if (w->on_value &&
        (rc = w->on_value(w->user, w->db, w->db_len, nd + NODE, ksize, off, dsize, kind)))
        return rc;
    if (!(nflags & F_SUBDATA))
        return 0;
    db_rec sub;
    read_db(pg + kend, &sub);
    char name[64];
    snprintf(name, sizeof name, "database '%.*s'", ksize < 40 ? ksize : 40,
             (const char *)nd + NODE);
    w->db = (const char *)nd + NODE;
    w->db_len = ksize;
    rc = walk_db(w, &sub, 0, name);
    w->db = NULL;
    w->db_len = 0;
    return rc;
}

/* Checks the nodes of page `pgno` (its bytes in pg) at `level` (1 = root)
 * of a tree `depth` deep. */
static int walk_nodes(walker *w, const unsigned char *pg, uint64_t pgno, unsigned level,
                      unsigned depth, int is_main, tally *t)
{
    if (u64(pg) != pgno)
        return damaged(w, pgno, "its header says page %llu", (unsigned long long)u64(pg));
    uint16_t flags = u16(pg + 10), lower = u16(pg + 12), upper = u16(pg + 14);
    unsigned kind = flags & (P_BRANCH | P_LEAF | P_OVERFLOW | P_META);
    if (kind != P_BRANCH && kind != P_LEAF)
        return damaged(w, pgno, "flags 0x%x, expected a %s page", flags,
                       level < depth ? "branch" : "leaf");
    if ((kind == P_LEAF) != (level == depth))
        return damaged(w, pgno, "a %s page at level %u of a tree %u deep",
                       kind == P_LEAF ? "leaf" : "branch", level, depth);
    if (flags & ~(unsigned)(P_BRANCH | P_LEAF | 0x10u /* P_DIRTY, harmless */))
        return damaged(w, pgno, "unexpected flags 0x%x", flags);
    if (lower < HDR || lower > upper || upper > w->psize || (lower - HDR) % 2)
        return damaged(w, pgno, "bad bounds lower %u upper %u", lower, upper);
    unsigned n = (lower - HDR) / 2;
    if (n == 0)
        return damaged(w, pgno, "no nodes");
    if (kind == P_BRANCH)
        t->branch++;
    else
        t->leaf++;
    for (unsigned i = 0; i < n; i++) {
        uint16_t off = u16(pg + HDR + 2 * i);
        if (off < upper || (uint64_t)off + NODE > w->psize || off % 2)
            return damaged(w, pgno, "node %u at offset %u, outside %u..%llu", i, off, upper,
                           (unsigned long long)w->psize);
        const unsigned char *nd = pg + off;
        uint64_t kend = (uint64_t)off + NODE + u16(nd + 6);
        if (kend > w->psize)
            return damaged(w, pgno, "node %u: a %u-byte key runs past the page", i, u16(nd + 6));
        int rc;
        if (kind == P_LEAF) {
            rc = leaf_node(w, pg, pgno, i, nd, kend, is_main, t);
        } else {
            uint64_t child = (uint64_t)u16(nd) | (uint64_t)u16(nd + 2) << 16 |
                             (uint64_t)u16(nd + 4) << 32;
            rc = reach(w, child, pgno);
            if (!rc)
                rc = walk_page(w, child, level + 1, depth, is_main, t);
        }
        if (rc)
            return rc;
    }
    return 0;
}

/* Reads page `pgno` into its own buffer (one a level, freed on return)
 * and checks it. */
static int walk_page(walker *w, uint64_t pgno, unsigned level, unsigned depth, int is_main,
                     tally *t)
{
    unsigned char *pg = malloc((size_t)w->psize);
    if (!pg)
        return ps_error_set(w->err, PS_ENOMEM, "%s: out of memory", w->path);
    int rc = read_at(w->fd, w->path, pgno * w->psize, pg, (size_t)w->psize, w->err);
    if (!rc)
        rc = walk_nodes(w, pg, pgno, level, depth, is_main, t);
    free(pg);
    return rc;
}

static int walk_db(walker *w, const db_rec *d, int is_main, const char *name)
{
    if (d->root == P_INVALID) {
        if (d->entries || d->depth)
            return ps_error_set(w->err, PS_ECORRUPT,
                                "%s: damaged LMDB structure: %s is empty but counts %llu entries",
                                w->path, name, (unsigned long long)d->entries);
        return 0;
    }
    if (d->depth == 0 || d->depth > MAX_DEPTH)
        return ps_error_set(w->err, PS_ECORRUPT, "%s: damaged LMDB structure: %s is %u deep",
                            w->path, name, d->depth);
    int rc = reach(w, d->root, 0);
    tally t = {0, 0, 0, 0};
    if (!rc)
        rc = walk_page(w, d->root, 1, d->depth, is_main, &t);
    if (rc)
        return rc;
    if (t.entries != d->entries || t.branch != d->branch || t.leaf != d->leaf ||
        t.overflow != d->overflow)
        return ps_error_set(w->err, PS_ECORRUPT,
                            "%s: damaged LMDB structure: %s counts %llu entries in %llu/%llu/"
                            "%llu branch/leaf/overflow pages, its pages hold %llu in "
                            "%llu/%llu/%llu",
                            w->path, name, (unsigned long long)d->entries,
                            (unsigned long long)d->branch, (unsigned long long)d->leaf,
                            (unsigned long long)d->overflow, (unsigned long long)t.entries,
                            (unsigned long long)t.branch, (unsigned long long)t.leaf,
                            (unsigned long long)t.overflow);
    return 0;
}

/* What liblmdb's mdb_env_read_header checks first on meta page `n` (its
 * record at m): LMDB's magic, then the data version. Another version is
 * not damage: it is a format this walk does not know. */
static int meta_kind(walker *w, const unsigned char *m, unsigned n)
{
    if (u32(m) != MAGIC)
        return n == 0 ? ps_error_set(w->err, PS_ECORRUPT,
                                     "%s: not an LMDB file (no LMDB meta page)", w->path)
                      : ps_error_set(w->err, PS_ECORRUPT,
                                     "%s: damaged LMDB meta pages (page 1 has no LMDB magic)",
                                     w->path);
    if (u32(m + 4) != DATA_VERSION)
        return ps_error_set(w->err, PS_EVERSION,
                            "%s: LMDB data version %u (meta page %u); this reader supports "
                            "data version %u only (liblmdb 0.9.x)",
                            w->path, u32(m + 4), n, DATA_VERSION);
    return 0;
}

/* The meta pages: page 0 gives the page size, the newer of 0 and 1 wins.
 * Fills w->psize and w->last_pg and the two database records. */
static int read_meta(walker *w, db_rec *freedb, db_rec *maindb)
{
    enum { META_BYTES = HDR + 136 };
    unsigned char m0[META_BYTES], m1[META_BYTES];
    int rc = read_at(w->fd, w->path, 0, m0, META_BYTES, w->err);
    if (rc)
        return rc;
    uint64_t psize = u32(m0 + HDR + 24);
    if ((rc = meta_kind(w, m0 + HDR, 0)))
        return rc;
    if (psize < 512 || psize > 65536 || (psize & (psize - 1)) || 2 * psize > w->size)
        return ps_error_set(w->err, PS_ECORRUPT, "%s: damaged LMDB meta page: page size %llu",
                            w->path, (unsigned long long)psize);
    if ((rc = read_at(w->fd, w->path, psize, m1, META_BYTES, w->err)))
        return rc;
    if ((rc = meta_kind(w, m1 + HDR, 1)))
        return rc;
    if (u32(m1 + HDR + 24) != psize ||
        !(u16(m0 + 10) & P_META) || !(u16(m1 + 10) & P_META))
        return ps_error_set(w->err, PS_ECORRUPT, "%s: damaged LMDB meta pages", w->path);
    const unsigned char *m = u64(m0 + HDR + 128) < u64(m1 + HDR + 128) ? m1 + HDR : m0 + HDR;
    w->psize = psize;
    w->last_pg = u64(m + 120);
    if (w->last_pg < 1 || w->last_pg >= w->size / psize)
        return ps_error_set(w->err, PS_ECORRUPT, "%s: truncated: %llu bytes, its pages need %llu",
                            w->path, (unsigned long long)w->size,
                            (unsigned long long)((w->last_pg + 1) * psize));
    read_db(m + 24, freedb);
    read_db(m + 24 + DB_BYTES, maindb);
    return 0;
}

int ps_lmdb_walk(int fd, const char *path, ps_lmdb_value_fn on_value, void *user,
                 ps_error *err)
{
    struct stat st;
    if (fstat(fd, &st))
        return ps_error_set(err, PS_EIO, "%s: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return ps_error_set(err, PS_ECORRUPT, "%s: not a regular file", path);
    uint64_t size = (uint64_t)st.st_size;
    if (size < 2 * 512)
        return ps_error_set(err, PS_ECORRUPT, "%s: not a shard (%llu bytes, too short for LMDB)",
                            path, (unsigned long long)size);
    walker w = {.fd = fd, .size = size, .path = path, .err = err, .on_value = on_value,
                .user = user};
    db_rec freedb, maindb;
    int rc = read_meta(&w, &freedb, &maindb);
    if (rc)
        return rc;
    w.seen = calloc((size_t)(w.last_pg / 8 + 1), 1);
    if (!w.seen)
        return ps_error_set(err, PS_ENOMEM, "%s: out of memory", path);
    walker fw = w;
    fw.on_value = NULL; /* the free list's entries are LMDB's own */
    rc = walk_db(&fw, &freedb, 0, "the free list");
    if (!rc)
        rc = walk_db(&w, &maindb, 1, "the main database");
    free(w.seen);
    return rc;
}

int ps_lmdb_check(const char *path, ps_error *err)
{
    /* O_NONBLOCK: a FIFO in a shard's place must not block the open. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return ps_error_set(err, ps_errno_code(errno), "%s: %s", path,
                            strerror(errno));
    int rc = ps_lmdb_walk(fd, path, NULL, NULL, err);
    close(fd);
    return rc;
}
