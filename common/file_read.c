/*
 * Reading the small files pairshard is given besides its data: reader
 * state, statistics, vocabularies, tokenizer.json, rules, configuration,
 * manifests. Each is opened without blocking (a FIFO in its place would
 * otherwise wait forever for a writer), refused unless it is a regular
 * file (a FIFO, a directory or a device like /dev/zero is never read), and
 * read whole up to a bound, so a file that keeps growing cannot exhaust
 * memory. Data inputs (clean, build) are not read this way: a pipe or
 * process substitution is a real input there.
 */
#include "common/ps_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *ps_file_kind(unsigned mode)
{
    switch (mode & S_IFMT) {
    case S_IFREG: return "a regular file";
    case S_IFDIR: return "a directory";
    case S_IFIFO: return "a FIFO";
    case S_IFCHR: return "a character device";
    case S_IFBLK: return "a block device";
    case S_IFSOCK: return "a socket";
    case S_IFLNK: return "a symbolic link";
    default: return "not a regular file";
    }
}

int ps_file_open_regular(const char *path, const char *what, int *fd_out, ps_error *err)
{
    return ps_file_openat_regular(AT_FDCWD, path, path, what, fd_out, err);
}

int ps_file_openat_regular(int dfd, const char *name, const char *path, const char *what,
                           int *fd_out, ps_error *err)
{
    *fd_out = -1;
    int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        int e = errno;
        return ps_error_set(err, ps_errno_code(e), "%s: cannot open %s: %s",
                            path, what, strerror(e));
    }
    struct stat st;
    if (fstat(fd, &st)) {
        int e = errno;
        close(fd);
        return ps_error_set(err, PS_EIO, "%s: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return ps_error_set(err, PS_EIO, "%s: not a regular file (%s); the %s must be one", path,
                            ps_file_kind((unsigned)st.st_mode), what);
    }
    /* Back to blocking reads (no effect on a regular file, but reads that
     * could ever return EAGAIN are not wanted). */
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    *fd_out = fd;
    return 0;
}

/* Reads fd to its end into b, failing past max bytes. */
static int read_bounded(int fd, const char *path, const char *what, size_t max, ps_buf *b,
                        ps_error *err)
{
    for (;;) {
        if (b->cap - b->len < 2 && ps_buf_reserve(b, b->cap < 4096 ? 4096 : b->cap) < 0)
            return ps_error_set(err, PS_ENOMEM, "%s: out of memory", path);
        size_t room = b->cap - b->len - 1; /* the NUL */
        ssize_t r = read(fd, b->data + b->len, room);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return ps_error_set(err, PS_EIO, "%s: read failed: %s", path, strerror(errno));
        if (r == 0)
            break;
        b->len += (size_t)r;
        if (b->len > max)
            return ps_error_set(err, PS_ELIMIT, "%s: more than %zu bytes, more than a %s may have",
                                path, max, what);
    }
    b->data[b->len] = '\0';
    return 0;
}

int ps_file_read_all(const char *path, const char *what, size_t max, char **data, size_t *len,
                     ps_error *err)
{
    *data = NULL;
    *len = 0;
    int fd;
    int rc = ps_file_open_regular(path, what, &fd, err);
    if (rc)
        return rc;
    rc = ps_file_read_fd(fd, path, what, max, data, len, err);
    close(fd);
    return rc;
}

int ps_file_read_fd(int fd, const char *path, const char *what, size_t max, char **data,
                    size_t *len, ps_error *err)
{
    *data = NULL;
    *len = 0;
    struct stat st;
    uint64_t size = fstat(fd, &st) ? 0 : (uint64_t)st.st_size;
    if (size > max)
        return ps_error_set(err, PS_ELIMIT, "%s: %llu bytes, more than a %s may have (%zu)",
                            path, (unsigned long long)size, what, max);
    ps_buf b;
    ps_buf_init(&b);
    /* Room for the whole file and one byte more, so its end is one read. */
    if (ps_buf_reserve(&b, (size_t)size + 1) < 0)
        return ps_error_set(err, PS_ENOMEM, "%s: out of memory", path);
    int rc = read_bounded(fd, path, what, max, &b, err);
    if (rc) {
        ps_buf_free(&b);
        return rc;
    }
    *data = b.data;
    *len = b.len;
    return 0;
}
