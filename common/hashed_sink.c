/*
 * A producer's bytes into a file through a pipe: a thread of this file's
 * reads the pipe, writes what it reads to the file, hashes it (SHA-256)
 * and starts its writeback every KICK_BYTES. A file written this way is
 * hashed as it is written rather than read back afterwards, and the fsync
 * that follows waits for a short tail instead of the whole file.
 *
 * The thread drains the pipe to its end even after a failed write, so
 * the producer never writes into a pipe nobody reads (a SIGPIPE, or a
 * producer blocked for ever); the failure is reported once it is done.
 */
#define _GNU_SOURCE /* pipe2, F_SETPIPE_SZ, sync_file_range */
#include "common/hashed_sink.h"
#include "common/ps_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <nettle/sha2.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BUF_BYTES ((size_t)1 << 20)
#define KICK_BYTES ((uint64_t)4 << 20) /* as ps_outfile_write's, see outfile.c */

typedef struct {
    int in, out;
    char *buf;
    struct sha256_ctx sha;
    uint64_t written, kicked;
    int write_errno; /* the first failed write's */
    int read_errno;  /* a failed read of the pipe (not EINTR) */
} sink;

static void sink_take(sink *s, const char *p, size_t n)
{
    sha256_update(&s->sha, n, (const uint8_t *)p);
    if (s->write_errno)
        return; /* drained only */
    int e = ps_fd_write_all(s->out, p, n);
    if (e) {
        s->write_errno = e;
        return;
    }
    s->written += n;
    if (s->written - s->kicked >= KICK_BYTES) {
        (void)sync_file_range(s->out, (off_t)s->kicked, (off_t)(s->written - s->kicked),
                              SYNC_FILE_RANGE_WRITE);
        s->kicked = s->written;
    }
}

static void *sink_main(void *arg)
{
    sink *s = arg;
    for (;;) {
        ssize_t r = read(s->in, s->buf, BUF_BYTES);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            /* Not seen on a pipe but for a bug: closing the read end gives
             * the producer EPIPE rather than a wait for ever. */
            s->read_errno = errno;
            break;
        }
        if (r == 0)
            break;
        sink_take(s, s->buf, (size_t)r);
    }
    return NULL;
}

/* Without a pipe or a thread: the producer writes the file, which is then
 * read back to be hashed. */
static int unpiped(int out, const char *path, ps_fd_producer produce, void *arg, int *produced,
                   char hex[65], uint64_t *bytes, ps_error *err)
{
    *produced = produce(arg, out);
    return *produced ? 0 : ps_sha256_file(path, hex, bytes, err);
}

int ps_hashed_sink_run(int out, const char *path, ps_fd_producer produce, void *arg,
                       int *produced, char hex[65], uint64_t *bytes, ps_error *err)
{
    int fds[2];
    sink s = {.out = out};
    s.buf = malloc(BUF_BYTES);
    if (!s.buf || pipe2(fds, O_CLOEXEC) != 0) {
        free(s.buf);
        return unpiped(out, path, produce, arg, produced, hex, bytes, err);
    }
    /* A bigger pipe: fewer switches between producer and sink (the
     * default 64 KiB is kept where the limit refuses it). */
    (void)fcntl(fds[1], F_SETPIPE_SZ, (int)BUF_BYTES);
    s.in = fds[0];
    sha256_init(&s.sha);
    pthread_t t;
    if (ps_thread_create(&t, sink_main, &s, "ps-sink") != 0) {
        close(fds[0]);
        close(fds[1]);
        free(s.buf);
        return unpiped(out, path, produce, arg, produced, hex, bytes, err);
    }
    *produced = produce(arg, fds[1]);
    close(fds[1]); /* the sink's end of input */
    pthread_join(t, NULL);
    close(fds[0]);
    free(s.buf);
    if (*produced)
        return 0;
    if (s.write_errno)
        return ps_error_set(err, PS_EIO, "%s: write failed: %s", path, strerror(s.write_errno));
    if (s.read_errno)
        return ps_error_set(err, PS_EIO, "%s: reading the copy's pipe: %s", path,
                            strerror(s.read_errno));
    ps_sha256_digest_hex(&s.sha, hex);
    if (bytes)
        *bytes = s.written;
    return 0;
}
