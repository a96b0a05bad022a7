/*
 * Shard reader: a finished shard read with pread, never mapped.
 *
 * LMDB reads a file through a shared mapping, and a mapped file that
 * shrinks under its reader (`cp` or `rsync --inplace` over a live set,
 * `truncate -s`) kills the reader with SIGBUS at the next touch of a page
 * past the new end. No check before the touch can close that window (the
 * file may shrink between the check and the access), and LMDB touches
 * branch and leaf pages inside every lookup. So shards are not read with
 * LMDB at all: at open, ps_lmdb_walk reads every tree of the file page by
 * page with pread (checking each page, so a damaged file cannot mislead
 * it) and records where each block's bytes lie; a block is then one pread
 * into a buffer the caller owns. A file truncated later gives a short
 * read, reported as PS_ECORRUPT naming the shard and the block; a file
 * rewritten in place gives bytes that fail the block's checksum. The
 * descriptor taken at open is the one every read uses, so a file renamed
 * over the path meanwhile is never mixed in.
 *
 * The writer (shard_writer.c) still writes with LMDB; the layout read
 * here is LMDB's on-disk format (lmdb_check.c).
 */
#include "store/shards.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define META_MAX (64u << 10)

/* Where one block lies in the file. */
typedef struct blk_ref {
    uint32_t bucket, seq;
    uint64_t offset;
    uint32_t len;
} blk_ref;

struct ps_shard {
    int fd;
    char *path, *meta;
    uint64_t file_bytes;
    blk_ref *blocks;      /* in key order */
    size_t nblocks, cap;
    blk_ref *lens;        /* the "lengths" database (format 2), in key order */
    size_t nlens, lcap;
    ps_buf lbuf;          /* the lengths ps_shard_get_lengths hands out */
    blk_ref *srcs;        /* the "sources" database (several sources), in key order */
    size_t nsrcs, scap;
    ps_buf sbuf;          /* the sources ps_shard_get_sources hands out */
    int have_meta_db, have_blocks_db, have_format;
    int have_lengths_db; /* format 2 */
    int have_sources_db; /* a set of several sources */
    uint64_t meta_off, meta_len;
    size_t cursor;        /* for ps_shard_seek / ps_shard_next: the next index */
    ps_buf buf;           /* the bytes ps_shard_get / next / foreach hand out */
    ps_error *err;        /* during the walk */
};

void ps_shard_close(ps_shard *s)
{
    if (!s)
        return;
    if (s->fd >= 0)
        close(s->fd);
    free(s->blocks);
    free(s->lens);
    free(s->srcs);
    ps_buf_free(&s->buf);
    ps_buf_free(&s->lbuf);
    ps_buf_free(&s->sbuf);
    free(s->path);
    free(s->meta);
    free(s);
}

static int name_is(const char *p, size_t n, const char *want)
{
    return p && n == strlen(want) && !memcmp(p, want, n);
}

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Records a value of the "blocks", "lengths" or "sources" database (keys come in
 * key order) in *list. */
static int add_ref(ps_shard *s, blk_ref **list, size_t *n, size_t *cap, const char *db,
                   const unsigned char *key, size_t klen, uint64_t off, uint64_t len)
{
    if (klen != 8)
        return ps_error_set(s->err, PS_ECORRUPT, "%s: bad %s key (%zu bytes) after %zu entries",
                            s->path, db, klen, *n);
    blk_ref b = {be32(key), be32(key + 4), off, (uint32_t)len};
    if (len > UINT32_MAX)
        return ps_error_set(s->err, PS_ECORRUPT, "%s: %s of bucket %u block %u: %llu bytes",
                            s->path, db, b.bucket, b.seq, (unsigned long long)len);
    if (*n) {
        const blk_ref *p = &(*list)[*n - 1];
        if (p->bucket > b.bucket || (p->bucket == b.bucket && p->seq >= b.seq))
            return ps_error_set(s->err, PS_ECORRUPT,
                                "%s: damaged LMDB structure: %s keys out of order (bucket "
                                "%u block %u after bucket %u block %u)",
                                s->path, db, b.bucket, b.seq, p->bucket, p->seq);
    }
    if (*n == *cap) {
        size_t c = *cap ? 2 * *cap : 256;
        blk_ref *nb = realloc(*list, c * sizeof *nb);
        if (!nb)
            return ps_error_set(s->err, PS_ENOMEM, "%s: out of memory", s->path);
        *list = nb;
        *cap = c;
    }
    (*list)[(*n)++] = b;
    return 0;
}

/* ps_lmdb_walk's callback: the named databases and what they hold. */
static int on_value(void *user, const char *db, size_t db_len, const unsigned char *key,
                    size_t key_len, uint64_t off, uint64_t len, unsigned kind)
{
    ps_shard *s = user;
    if (!db) {
        if (kind == PS_LMDB_DATABASE && name_is((const char *)key, key_len, "meta"))
            s->have_meta_db = 1;
        if (kind == PS_LMDB_DATABASE && name_is((const char *)key, key_len, "blocks"))
            s->have_blocks_db = 1;
        if (kind == PS_LMDB_DATABASE && name_is((const char *)key, key_len, "lengths"))
            s->have_lengths_db = 1;
        if (kind == PS_LMDB_DATABASE && name_is((const char *)key, key_len, PS_SHARD_SOURCES_DB))
            s->have_sources_db = 1;
        return 0;
    }
    if (name_is(db, db_len, "blocks"))
        return add_ref(s, &s->blocks, &s->nblocks, &s->cap, "block", key, key_len, off, len);
    if (name_is(db, db_len, "lengths"))
        return add_ref(s, &s->lens, &s->nlens, &s->lcap, "lengths", key, key_len, off, len);
    if (name_is(db, db_len, PS_SHARD_SOURCES_DB))
        return add_ref(s, &s->srcs, &s->nsrcs, &s->scap, "sources", key, key_len, off, len);
    if (name_is(db, db_len, "meta") && name_is((const char *)key, key_len, "format")) {
        s->have_format = 1;
        s->meta_off = off;
        s->meta_len = len;
    }
    return 0;
}

/* Reads len bytes at off into out (reset first). A short read means the
 * file shrank after it was opened. `what` names the bytes in messages. */
static int read_bytes(const ps_shard *s, uint64_t off, uint64_t len, ps_buf *out,
                      const char *what, ps_error *err)
{
    ps_buf_reset(out);
    if (ps_buf_reserve(out, (size_t)len) < 0)
        return ps_error_set(err, PS_ENOMEM, "%s: %s: out of memory", s->path, what);
    size_t got = 0;
    while (got < len) {
        ssize_t r = pread(s->fd, out->data + got, (size_t)len - got, (off_t)(off + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return ps_error_set(err, PS_EIO, "%s: %s: read failed: %s", s->path, what,
                                strerror(errno));
        if (r == 0) {
            struct stat st;
            long long now = fstat(s->fd, &st) ? -1 : (long long)st.st_size;
            return ps_error_set(err, PS_ECORRUPT,
                                "%s: %s: the file was truncated while open (%lld bytes now, "
                                "%llu when opened; the %llu bytes at offset %llu are gone)",
                                s->path, what, now, (unsigned long long)s->file_bytes,
                                (unsigned long long)len, (unsigned long long)off);
        }
        got += (size_t)r;
    }
    out->len = (size_t)len;
    out->data[len] = '\0';
    return 0;
}

/* Reads meta/format and checks the magic and version. */
static int check_meta(ps_shard *s, ps_error *err)
{
    if (!s->have_meta_db)
        return ps_error_set(err, PS_ECORRUPT, "%s: not a pairshard shard (no meta database)",
                            s->path);
    if (!s->have_format)
        return ps_error_set(err, PS_ECORRUPT, "%s: not a pairshard shard (no meta/format)",
                            s->path);
    if (s->meta_len > META_MAX)
        return ps_error_set(err, PS_ECORRUPT, "%s: meta/format is damaged (%llu bytes)", s->path,
                            (unsigned long long)s->meta_len);
    int rc = read_bytes(s, s->meta_off, s->meta_len, &s->buf, "meta/format", err);
    if (rc)
        return rc;
    s->meta = s->buf.data;
    ps_buf_init(&s->buf);

    json_error_t je;
    json_t *root = json_loadb(s->meta, s->meta_len, JSON_REJECT_DUPLICATES, &je);
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

int ps_shard_open_fd(ps_shard **out, int fd, const char *path, ps_error *err)
{
    *out = NULL;
    struct stat st;
    if (fstat(fd, &st)) {
        int e = errno;
        close(fd);
        return ps_error_set(err, PS_EIO, "%s: %s", path, strerror(e));
    }
    ps_shard *s = calloc(1, sizeof *s);
    if (!s || !(s->path = strdup(path))) {
        free(s);
        close(fd);
        return ps_error_set(err, PS_ENOMEM, "%s: out of memory", path);
    }
    s->fd = fd;
    s->file_bytes = (uint64_t)st.st_size;
    ps_buf_init(&s->buf);
    ps_buf_init(&s->lbuf);
    ps_buf_init(&s->sbuf);
    s->err = err;
    int rc = ps_lmdb_walk(fd, path, on_value, s, err);
    s->err = NULL;
    if (!rc)
        rc = check_meta(s, err);
    if (!rc && !s->have_blocks_db)
        rc = ps_error_set(err, PS_ECORRUPT, "%s: no blocks database", path);
    if (rc) {
        ps_shard_close(s);
        return rc;
    }
    *out = s;
    return PS_OK;
}

int ps_shard_open(ps_shard **out, const char *path, ps_error *err)
{
    *out = NULL;
    /* O_NONBLOCK: a FIFO in a shard's place must not block the open (it
     * is refused as not a regular file). */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return ps_error_set(err, ps_errno_code(errno), "%s: %s", path,
                            strerror(errno));
    return ps_shard_open_fd(out, fd, path, err);
}

const char *ps_shard_meta(const ps_shard *s) { return s->meta; }
uint64_t ps_shard_block_count(const ps_shard *s) { return s->nblocks; }
uint64_t ps_shard_file_bytes(const ps_shard *s) { return s->file_bytes; }

/* The index of the first entry of list[0..n) with key >= (bucket, seq). */
static size_t lower_bound_in(const blk_ref *list, size_t n, uint32_t bucket, uint32_t seq)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const blk_ref *b = &list[mid];
        if (b->bucket < bucket || (b->bucket == bucket && b->seq < seq))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static size_t lower_bound(const ps_shard *s, uint32_t bucket, uint32_t seq)
{
    return lower_bound_in(s->blocks, s->nblocks, bucket, seq);
}

static int read_block(const ps_shard *s, const blk_ref *b, ps_buf *out, ps_error *err)
{
    char what[64];
    snprintf(what, sizeof what, "bucket %u block %u", b->bucket, b->seq);
    return read_bytes(s, b->offset, b->len, out, what, err);
}

int ps_shard_read(const ps_shard *s, uint32_t bucket, uint32_t seq, ps_buf *out, ps_error *err)
{
    size_t i = lower_bound(s, bucket, seq);
    if (i == s->nblocks || s->blocks[i].bucket != bucket || s->blocks[i].seq != seq)
        return 0;
    int rc = read_block(s, &s->blocks[i], out, err);
    return rc ? rc : 1;
}

int ps_shard_get(ps_shard *s, uint32_t bucket, uint32_t seq, const void **data, size_t *len,
                 ps_error *err)
{
    int rc = ps_shard_read(s, bucket, seq, &s->buf, err);
    if (rc == 1) {
        *data = s->buf.data;
        *len = s->buf.len;
    }
    return rc;
}

int ps_shard_foreach(ps_shard *s,
                     int (*fn)(void *user, uint32_t bucket, uint32_t seq, const void *data,
                               size_t len),
                     void *user, ps_error *err)
{
    for (size_t i = 0; i < s->nblocks; i++) {
        const blk_ref *b = &s->blocks[i];
        int rc = read_block(s, b, &s->buf, err);
        if (!rc)
            rc = fn(user, b->bucket, b->seq, s->buf.data, s->buf.len);
        if (rc)
            return rc;
    }
    return 0;
}

int ps_shard_seek(ps_shard *s, uint32_t bucket, uint32_t seq, ps_error *err)
{
    (void)err;
    s->cursor = lower_bound(s, bucket, seq);
    return PS_OK;
}

int ps_shard_next(ps_shard *s, uint32_t *bucket, uint32_t *seq, const void **data, size_t *len,
                  ps_error *err)
{
    if (s->cursor >= s->nblocks)
        return 0;
    const blk_ref *b = &s->blocks[s->cursor];
    int rc = read_block(s, b, &s->buf, err);
    if (rc) {
        s->cursor = s->nblocks; /* as LMDB's cursor did: no step after an error */
        return rc;
    }
    s->cursor++;
    *bucket = b->bucket;
    *seq = b->seq;
    *data = s->buf.data;
    *len = s->buf.len;
    return 1;
}

int ps_shard_get_lengths(ps_shard *s, uint32_t bucket, uint32_t seq, const uint32_t **lengths,
                         size_t *n, ps_error *err)
{
    size_t i = lower_bound_in(s->lens, s->nlens, bucket, seq);
    if (i == s->nlens || s->lens[i].bucket != bucket || s->lens[i].seq != seq)
        return 0;
    const blk_ref *b = &s->lens[i];
    char what[80];
    snprintf(what, sizeof what, "lengths of bucket %u block %u", bucket, seq);
    if (b->len % 4)
        return ps_error_set(err, PS_ECORRUPT, "%s: %s: %u bytes, not a multiple of 4", s->path,
                            what, b->len);
    int rc = read_bytes(s, b->offset, b->len, &s->lbuf, what, err);
    if (rc)
        return rc;
    /* Little-endian on disk: decoded in place (ps_buf data is malloc'ed,
     * so aligned for uint32_t). */
    uint32_t *v = (uint32_t *)(void *)s->lbuf.data;
    size_t cnt = b->len / 4;
    for (size_t k = 0; k < cnt; k++)
        v[k] = ps_get_le32((const unsigned char *)s->lbuf.data + 4 * k);
    *lengths = v;
    *n = cnt;
    return 1;
}

size_t ps_shard_lengths_count(const ps_shard *s) { return s->nlens; }

bool ps_shard_has_lengths_db(const ps_shard *s) { return s->have_lengths_db != 0; }

int ps_shard_read_sources(const ps_shard *s, uint32_t bucket, uint32_t seq, ps_buf *out,
                          size_t *n, ps_error *err)
{
    size_t i = lower_bound_in(s->srcs, s->nsrcs, bucket, seq);
    if (i == s->nsrcs || s->srcs[i].bucket != bucket || s->srcs[i].seq != seq)
        return 0;
    const blk_ref *b = &s->srcs[i];
    char what[80];
    snprintf(what, sizeof what, "sources of bucket %u block %u", bucket, seq);
    if (b->len % 2)
        return ps_error_set(err, PS_ECORRUPT, "%s: %s: %u bytes, not a multiple of 2", s->path,
                            what, b->len);
    int rc = read_bytes(s, b->offset, b->len, out, what, err);
    if (rc)
        return rc;
    /* Little-endian on disk: decoded in place (malloc'ed, so aligned). */
    uint16_t *v = (uint16_t *)(void *)out->data;
    const unsigned char *p = (const unsigned char *)out->data;
    size_t cnt = b->len / 2;
    for (size_t k = 0; k < cnt; k++)
        v[k] = (uint16_t)(p[2 * k] | p[2 * k + 1] << 8);
    *n = cnt;
    return 1;
}

int ps_shard_get_sources(ps_shard *s, uint32_t bucket, uint32_t seq, const uint16_t **src,
                         size_t *n, ps_error *err)
{
    int rc = ps_shard_read_sources(s, bucket, seq, &s->sbuf, n, err);
    if (rc == 1)
        *src = (const uint16_t *)(const void *)s->sbuf.data;
    return rc;
}

size_t ps_shard_sources_count(const ps_shard *s) { return s->nsrcs; }

bool ps_shard_has_sources_db(const ps_shard *s) { return s->have_sources_db != 0; }
