/*
 * Byte sources: a file or stdin, decoded on the fly when it is gzip (zlib,
 * concatenated members allowed) or zstd (libzstd, multiple frames allowed).
 * Compression is told by the magic bytes, so a renamed file still works and
 * a ".gz" that is not gzip is reported rather than read as text.
 */
#include "ingest/ingest.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#define RAW_CHUNK (128 * 1024)

struct ps_source {
    char *path;
    int fd;
    bool owns_fd;
    ps_compression comp;
    /* raw (compressed) input buffer */
    unsigned char *raw;
    size_t raw_pos, raw_len;
    bool raw_eof;
    /* peek buffer: decoded bytes handed out before the regular reads */
    char *peek;
    size_t peek_pos, peek_len;
    uint64_t decoded;
    ps_error pending; /* an error met while peeking, reported after the peeked bytes */
    z_stream z;
    bool z_init, z_member_done, z_fed;
    ZSTD_DStream *zs;
    bool zs_frame_open;
};

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Fills the raw buffer when it is empty. Returns 0, or PS_EIO. */
static int raw_fill(ps_source *s, ps_error *err)
{
    if (s->raw_pos < s->raw_len || s->raw_eof)
        return 0;
    ssize_t r;
    do
        r = read(s->fd, s->raw, RAW_CHUNK);
    while (r < 0 && errno == EINTR);
    if (r < 0)
        return ps_error_set(err, PS_EIO, "%s: read failed: %s", s->path, strerror(errno));
    s->raw_pos = 0;
    s->raw_len = (size_t)r;
    if (r == 0)
        s->raw_eof = true;
    return 0;
}

int ps_source_open(ps_source **out, const char *path, ps_error *err)
{
    *out = NULL;
    ps_source *s = calloc(1, sizeof *s);
    if (!s)
        return ps_error_set(err, PS_ENOMEM, "out of memory opening %s", path);
    s->path = strdup(strcmp(path, "-") == 0 ? "<stdin>" : path);
    s->raw = malloc(RAW_CHUNK);
    if (!s->path || !s->raw) {
        ps_source_close(s);
        return ps_error_set(err, PS_ENOMEM, "out of memory opening %s", path);
    }
    if (strcmp(path, "-") == 0) {
        s->fd = STDIN_FILENO;
    } else {
        s->fd = open(path, O_RDONLY | O_CLOEXEC);
        if (s->fd < 0) {
            int e = errno;
            ps_source_close(s);
            return ps_error_set(err, ps_errno_code(e), "%s: cannot open: %s",
                                path, strerror(e));
        }
        s->owns_fd = true;
    }
    int rc = raw_fill(s, err);
    if (rc) {
        ps_source_close(s);
        return rc;
    }
    /* Magic bytes, read from what the first fill returned (>= 4 bytes for
     * any real file; a shorter stream is plain). */
    const unsigned char *m = s->raw;
    if (s->raw_len >= 2 && m[0] == 0x1F && m[1] == 0x8B)
        s->comp = PS_COMP_GZIP;
    else if (s->raw_len >= 4 && m[0] == 0x28 && m[1] == 0xB5 && m[2] == 0x2F && m[3] == 0xFD)
        s->comp = PS_COMP_ZSTD;
    if (s->comp == PS_COMP_NONE && (ends_with(path, ".gz") || ends_with(path, ".zst"))) {
        ps_source_close(s);
        return ps_error_set(err, PS_EDECOMPRESS, "%s: the name says %s but the data is not",
                            path, ends_with(path, ".gz") ? "gzip" : "zstd");
    }
    if (s->comp == PS_COMP_GZIP) {
        if (inflateInit2(&s->z, 15 + 16) != Z_OK) {
            ps_source_close(s);
            return ps_error_set(err, PS_ENOMEM, "%s: cannot start gzip decoder", path);
        }
        s->z_init = true;
    } else if (s->comp == PS_COMP_ZSTD) {
        s->zs = ZSTD_createDStream();
        if (!s->zs || ZSTD_isError(ZSTD_initDStream(s->zs))) {
            ps_source_close(s);
            return ps_error_set(err, PS_ENOMEM, "%s: cannot start zstd decoder", path);
        }
    }
    *out = s;
    return 0;
}

static ssize_t read_gzip(ps_source *s, unsigned char *buf, size_t n, ps_error *err)
{
    for (;;) {
        int rc = raw_fill(s, err);
        if (rc)
            return rc;
        if (s->raw_pos == s->raw_len) { /* end of the compressed file */
            if (s->z_fed && !s->z_member_done)
                return ps_error_set(err, PS_EDECOMPRESS,
                                    "%s: truncated gzip stream (ends inside a member)",
                                    s->path);
            return 0;
        }
        if (s->z_member_done) { /* another member follows */
            inflateReset(&s->z);
            s->z_member_done = false;
        }
        s->z_fed = true;
        s->z.next_in = s->raw + s->raw_pos;
        s->z.avail_in = (uInt)(s->raw_len - s->raw_pos);
        s->z.next_out = buf;
        s->z.avail_out = (uInt)(n > UINT32_MAX ? UINT32_MAX : n);
        int zr = inflate(&s->z, Z_NO_FLUSH);
        s->raw_pos = s->raw_len - s->z.avail_in;
        size_t got = (size_t)(s->z.next_out - buf);
        if (zr == Z_STREAM_END) {
            s->z_member_done = true;
        } else if (zr != Z_OK && !(zr == Z_BUF_ERROR && got > 0)) {
            return ps_error_set(err, PS_EDECOMPRESS, "%s: corrupt gzip data: %s", s->path,
                                s->z.msg ? s->z.msg : zError(zr));
        }
        if (got)
            return (ssize_t)got;
    }
}

static ssize_t read_zstd(ps_source *s, unsigned char *buf, size_t n, ps_error *err)
{
    for (;;) {
        int rc = raw_fill(s, err);
        if (rc)
            return rc;
        if (s->raw_pos == s->raw_len) {
            if (s->zs_frame_open)
                return ps_error_set(err, PS_EDECOMPRESS,
                                    "%s: truncated zstd stream (ends inside a frame)", s->path);
            return 0;
        }
        ZSTD_inBuffer in = {s->raw, s->raw_len, s->raw_pos};
        ZSTD_outBuffer o = {buf, n, 0};
        size_t zr = ZSTD_decompressStream(s->zs, &o, &in);
        s->raw_pos = in.pos;
        if (ZSTD_isError(zr))
            return ps_error_set(err, PS_EDECOMPRESS, "%s: corrupt zstd data: %s", s->path,
                                ZSTD_getErrorName(zr));
        s->zs_frame_open = zr != 0;
        if (o.pos)
            return (ssize_t)o.pos;
    }
}

static ssize_t read_decoded(ps_source *s, void *buf, size_t n, ps_error *err)
{
    if (s->comp == PS_COMP_GZIP)
        return read_gzip(s, buf, n, err);
    if (s->comp == PS_COMP_ZSTD)
        return read_zstd(s, buf, n, err);
    int rc = raw_fill(s, err);
    if (rc)
        return rc;
    size_t k = s->raw_len - s->raw_pos;
    if (k > n)
        k = n;
    memcpy(buf, s->raw + s->raw_pos, k);
    s->raw_pos += k;
    return (ssize_t)k;
}

ssize_t ps_source_peek(ps_source *s, const char **p, size_t n, ps_error *err)
{
    if (!s->peek) {
        s->peek = malloc(n ? n : 1);
        if (!s->peek)
            return ps_error_set(err, PS_ENOMEM, "%s: out of memory", s->path);
        while (s->peek_len < n) {
            ssize_t r = read_decoded(s, s->peek + s->peek_len, n - s->peek_len, &s->pending);
            if (r < 0 && s->peek_len == 0) {
                if (err)
                    *err = s->pending;
                return r;
            }
            if (r < 0)
                break; /* hand out what decoded cleanly first */
            if (r == 0)
                break;
            s->peek_len += (size_t)r;
        }
    }
    *p = s->peek;
    return (ssize_t)(s->peek_len < n ? s->peek_len : n);
}

ssize_t ps_source_read(ps_source *s, void *buf, size_t n, ps_error *err)
{
    ssize_t r;
    if (s->peek_pos < s->peek_len) {
        size_t k = s->peek_len - s->peek_pos;
        if (k > n)
            k = n;
        memcpy(buf, s->peek + s->peek_pos, k);
        s->peek_pos += k;
        r = (ssize_t)k;
    } else if (s->pending.code) {
        if (err)
            *err = s->pending;
        r = s->pending.code;
    } else {
        r = read_decoded(s, buf, n, err);
    }
    if (r > 0)
        s->decoded += (uint64_t)r;
    return r;
}

void ps_source_close(ps_source *s)
{
    if (!s)
        return;
    if (s->owns_fd && s->fd >= 0)
        close(s->fd);
    if (s->z_init)
        inflateEnd(&s->z);
    ZSTD_freeDStream(s->zs);
    free(s->peek);
    free(s->raw);
    free(s->path);
    free(s);
}

const char *ps_source_path(const ps_source *s) { return s->path; }
uint64_t ps_source_bytes_decoded(const ps_source *s) { return s->decoded; }

int ps_source_plain_fd(const ps_source *s)
{
    return s->owns_fd && s->comp == PS_COMP_NONE ? s->fd : -1;
}
