/*
 * A structural check of an LMDB file before LMDB itself reads it.
 *
 * LMDB trusts its pages: a damaged node offset, key size or page number
 * in a branch or leaf page makes it read outside the map and crash. A
 * shard file may be damaged, so ps_shard_open first walks every tree of
 * the file (the free DB, the main DB and the named databases in it) over
 * a private read-only mapping and checks each page against the file:
 * page numbers, header bounds, every node inside its page, every child
 * and overflow page inside the file and reached once, depths, entry
 * counts. Data bytes are not looked at (blocks carry their own checksum).
 *
 * The layout is LMDB's on-disk format, data version 1 (liblmdb 0.9.x,
 * 64-bit): a 16-byte page header {u64 pgno, u16 pad, u16 flags, u16 lower,
 * u16 upper | u32 overflow pages}, u16 node offsets after it, 8-byte node
 * headers {u16 lo, u16 hi, u16 flags, u16 ksize}; the meta record in pages
 * 0 and 1 is {u32 magic, u32 version, u64 address, u64 mapsize,
 * MDB_db free, MDB_db main, u64 last_pg, u64 txnid} with 48-byte MDB_db
 * records {u32 pad (the page size, in the free DB's), u16 flags, u16
 * depth, u64 branch, leaf, overflow pages, entries, root}.
 */
#include "shards/shards.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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
#define P_INVALID UINT64_MAX
#define MAX_DEPTH 64u

typedef struct walker {
    const unsigned char *map;
    uint64_t size, psize, last_pg;
    unsigned char *seen; /* one bit a page */
    const char *path;
    ps_error *err;
    int depth_cap;
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

/* Checks page `pgno` at `level` (1 = root) of a tree `depth` deep. */
static int walk_page(walker *w, uint64_t pgno, unsigned level, unsigned depth, int is_main,
                     tally *t)
{
    const unsigned char *pg = w->map + pgno * w->psize;
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
        uint16_t lo = u16(nd), hi = u16(nd + 2), nflags = u16(nd + 4), ksize = u16(nd + 6);
        uint64_t kend = (uint64_t)off + NODE + ksize;
        if (kend > w->psize)
            return damaged(w, pgno, "node %u: a %u-byte key runs past the page", i, ksize);
        if (kind == P_BRANCH) {
            uint64_t child = (uint64_t)lo | (uint64_t)hi << 16 | (uint64_t)nflags << 32;
            int rc = reach(w, child, pgno);
            if (!rc)
                rc = walk_page(w, child, level + 1, depth, is_main, t);
            if (rc)
                return rc;
            continue;
        }
        uint64_t dsize = (uint64_t)lo | (uint64_t)hi << 16;
        t->entries++;
        if (nflags & ~(unsigned)(F_BIGDATA | F_SUBDATA) || (nflags & F_DUPDATA))
            return damaged(w, pgno, "node %u: unexpected flags 0x%x", i, nflags);
        if (nflags & F_BIGDATA) {
            if (kend + 8 > w->psize)
                return damaged(w, pgno, "node %u: overflow reference runs past the page", i);
            uint64_t op = u64(pg + kend);
            int rc = reach(w, op, pgno);
            if (rc)
                return rc;
            const unsigned char *oh = w->map + op * w->psize;
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
        } else if (kend + dsize > w->psize) {
            return damaged(w, pgno, "node %u: %llu data bytes run past the page", i,
                           (unsigned long long)dsize);
        }
        if (nflags & F_SUBDATA) {
            if (!is_main || dsize != DB_BYTES || (nflags & F_BIGDATA))
                return damaged(w, pgno, "node %u: a misplaced database record", i);
            db_rec sub;
            read_db(pg + kend, &sub);
            char name[64];
            snprintf(name, sizeof name, "database '%.*s'", ksize < 40 ? ksize : 40,
                     (const char *)nd + NODE);
            int rc = walk_db(w, &sub, 0, name);
            if (rc)
                return rc;
        }
    }
    return 0;
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

int ps_lmdb_check(const char *path, ps_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return ps_error_set(err, errno == ENOENT ? PS_ENOENT : PS_EIO, "%s: %s", path,
                            strerror(errno));
    struct stat st;
    if (fstat(fd, &st)) {
        close(fd);
        return ps_error_set(err, PS_EIO, "%s: %s", path, strerror(errno));
    }
    uint64_t size = (uint64_t)st.st_size;
    if (size < 2 * 512) {
        close(fd);
        return ps_error_set(err, PS_ECORRUPT, "%s: not a shard (%llu bytes, too short for LMDB)",
                            path, (unsigned long long)size);
    }
    const unsigned char *map = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED)
        return ps_error_set(err, PS_EIO, "%s: mmap: %s", path, strerror(errno));
    walker w = {.map = map, .size = size, .path = path, .err = err};
    int rc = 0;
    /* Meta pages: page 0 gives the page size, the newer of 0 and 1 wins. */
    const unsigned char *m0 = map + HDR;
    uint64_t psize = u32(m0 + 24);
    if (u32(m0) != MAGIC || u32(m0 + 4) != 1) {
        rc = ps_error_set(err, PS_ECORRUPT, "%s: not an LMDB file (no LMDB meta page)", path);
        goto out;
    }
    if (psize < 512 || psize > 65536 || (psize & (psize - 1)) || 2 * psize > size) {
        rc = ps_error_set(err, PS_ECORRUPT, "%s: damaged LMDB meta page: page size %llu", path,
                          (unsigned long long)psize);
        goto out;
    }
    const unsigned char *m1 = map + psize + HDR;
    if (u32(m1) != MAGIC || u32(m1 + 4) != 1 || u32(m1 + 24) != psize ||
        !(u16(map + 10) & P_META) || !(u16(map + psize + 10) & P_META)) {
        rc = ps_error_set(err, PS_ECORRUPT, "%s: damaged LMDB meta pages", path);
        goto out;
    }
    const unsigned char *m = u64(m0 + 128) < u64(m1 + 128) ? m1 : m0;
    w.psize = psize;
    w.last_pg = u64(m + 120);
    if (w.last_pg < 1 || w.last_pg >= size / psize) {
        rc = ps_error_set(err, PS_ECORRUPT, "%s: truncated: %llu bytes, its pages need %llu",
                          path, (unsigned long long)size,
                          (unsigned long long)((w.last_pg + 1) * psize));
        goto out;
    }
    w.seen = calloc((size_t)(w.last_pg / 8 + 1), 1);
    if (!w.seen) {
        rc = ps_error_set(err, PS_ENOMEM, "%s: out of memory", path);
        goto out;
    }
    db_rec freedb, maindb;
    read_db(m + 24, &freedb);
    read_db(m + 24 + DB_BYTES, &maindb);
    rc = walk_db(&w, &freedb, 0, "the free list");
    if (!rc)
        rc = walk_db(&w, &maindb, 1, "the main database");
    free(w.seen);
out:
    munmap((void *)map, (size_t)size);
    return rc;
}
