/* Output files that appear whole or not at all, and never replace what the
 * path names when that is not a regular file (see outfile.h). */
#define _GNU_SOURCE /* sync_file_range */
#include "common/outfile.h"
#include "common/outfile_behind.h"
#include "common/ps_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

const char *ps_outfile_name(const ps_outfile *o)
{
    return o->path ? o->path : "stdout";
}

/* A new temporary beside `target`, created with O_EXCL and mode 0666 so the
 * kernel applies the umask (mkstemp would give 0600 whatever the umask). */
static int create_temp(ps_outfile *o, ps_error *err)
{
    size_t n = strlen(o->target) + 24;
    o->tmp = malloc(n);
    if (!o->tmp)
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    static unsigned counter;
    for (int tries = 0; tries < 100; tries++) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        unsigned r = ((unsigned)ts.tv_nsec ^ (unsigned)getpid() * 2654435761u) + counter++ * 40503u;
        /* A name near NAME_MAX keeps only its first 200 bytes in the
         * temporary's name, which must fit too. */
        const char *base = strrchr(o->target, '/') + 1;
        int keep = (int)(base - o->target) + (strlen(base) > 200 ? 200 : (int)strlen(base));
        snprintf(o->tmp, n, "%.*s.tmp.%06x", keep, o->target, r & 0xffffffu);
        int fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0)
            return fd;
        if (errno != EEXIST)
            break;
    }
    int e = errno;
    free(o->tmp);
    o->tmp = NULL;
    return ps_error_set(err, PS_EIO, "%s: cannot create a temporary beside %s: %s", o->path,
                        o->target, strerror(e));
}

static int open_fd(ps_outfile *o, const ps_out_info *info, ps_error *err)
{
    if (info->kind == PS_OUT_STREAM) {
        /* Into FIFOs and devices as they are; O_TRUNC only where it means
         * something (a regular file behind /dev/fd/N). */
        int fd = open(o->path, O_WRONLY | O_CLOEXEC | (S_ISREG(info->st.st_mode) ? O_TRUNC : 0));
        if (fd < 0)
            return ps_error_set(err, PS_EIO, "%s: cannot open: %s", o->path, strerror(errno));
        return fd;
    }
    o->target = strdup(info->target);
    if (!o->target)
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    int fd = create_temp(o, err);
    if (fd >= 0 && info->exists && fchmod(fd, info->st.st_mode & 0777) != 0) {
        int e = errno;
        close(fd);
        return ps_error_set(err, PS_EIO, "%s: cannot set the mode of %s: %s", o->path, o->tmp,
                            strerror(e));
    }
    return fd;
}

int ps_outfile_open(ps_outfile *o, const char *path, ps_error *err)
{
    memset(o, 0, sizeof *o);
    ps_out_info info;
    int rc = ps_out_classify(path, &info, err);
    if (rc) {
        free(info.target);
        return rc;
    }
    if (info.kind == PS_OUT_STDOUT) {
        o->f = stdout;
        return 0;
    }
    o->path = strdup(path);
    int fd = o->path ? open_fd(o, &info, err) : ps_error_set(err, PS_ENOMEM, "out of memory");
    free(info.target);
    if (fd < 0) {
        ps_outfile_abort(o);
        return fd;
    }
    o->f = fdopen(fd, "w");
    if (!o->f) {
        close(fd);
        ps_outfile_abort(o);
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    }
    setvbuf(o->f, NULL, _IOFBF, 1 << 20);
    return 0;
}

/* Starts the writeback of what a temporary holds every KICK_BYTES, so the
 * disk writes while the rest is produced and the commit's fsync waits for
 * the tail only. The fsync still makes the file durable: this only starts
 * the writes early (SYNC_FILE_RANGE_WRITE waits for nothing). */
#define KICK_BYTES (4u << 20)

static int kick_writeback(ps_outfile *o)
{
    if (!o->tmp || o->written - o->kicked < KICK_BYTES)
        return 0;
    errno = 0;
    if (fflush(o->f))
        return errno ? errno : EIO;
    (void)sync_file_range(fileno(o->f), (off_t)o->kicked, (off_t)(o->written - o->kicked),
                          SYNC_FILE_RANGE_WRITE);
    o->kicked = o->written;
    return 0;
}

int ps_outfile_write_behind(ps_outfile *o, ps_error *err)
{
    if (o->wb || !o->f)
        return 0;
    /* the thread writes the descriptor: whatever the stream holds first */
    if (fflush(o->f) != 0)
        return ps_error_set(err, PS_EIO, "%s: write failed: %s", ps_outfile_name(o),
                            strerror(errno));
    if (ps_write_behind_new(&o->wb, fileno(o->f), o->tmp != NULL, o->written, o->kicked))
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    return 0;
}

int ps_outfile_write(ps_outfile *o, const void *p, size_t n, ps_error *err)
{
    if (o->write_errno)
        return PS_EIO;
    errno = 0;
    int e;
    if (o->wb) { /* its thread starts the writeback */
        e = ps_write_behind_write(o->wb, p, n);
        if (!e)
            o->written += n;
    } else {
        /* one thread writes an outfile at a time: no stream lock per write */
        e = fwrite_unlocked(p, 1, n, o->f) != n ? (errno ? errno : EIO) : 0;
        if (!e) {
            o->written += n;
            e = kick_writeback(o);
        }
    }
    if (e) {
        o->write_errno = e;
        return ps_error_set(err, PS_EIO, "%s: write failed: %s", ps_outfile_name(o),
                            strerror(e));
    }
    return 0;
}

/* Renames the fsynced temporary over the target and fsyncs its directory,
 * so the new file survives a crash. */
static int put_in_place(ps_outfile *o, ps_error *err)
{
    if (rename(o->tmp, o->target) != 0)
        return ps_error_set(err, PS_EIO, "%s: cannot rename %s into place: %s", o->path, o->tmp,
                            strerror(errno));
    free(o->tmp);
    o->tmp = NULL;
    char *slash = strrchr(o->target, '/');
    if (!slash)
        return 0;
    *slash = '\0';
    int fd = open(slash == o->target ? "/" : o->target, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int rc = fd >= 0 && fsync(fd) != 0 && errno != EINVAL
                 ? ps_error_set(err, PS_EIO, "%s: fsync of its directory %s: %s", o->path,
                                o->target, strerror(errno))
                 : 0;
    *slash = '/';
    if (fd >= 0)
        close(fd);
    return rc;
}

/* Writes what the write-behind holds and stops its thread; an errno. */
static int finish_behind(ps_outfile *o)
{
    if (!o->wb)
        return 0;
    int e = ps_write_behind_finish(o->wb);
    ps_write_behind_free(o->wb);
    o->wb = NULL;
    if (e && !o->write_errno)
        o->write_errno = e;
    return e;
}

int ps_outfile_commit(ps_outfile *o, ps_error *err)
{
    if (!o->f)
        return 0;
    if (!o->write_errno)
        finish_behind(o);
    if (o->f == stdout) {
        o->f = NULL;
        if (o->write_errno || fflush(stdout) != 0 || ferror(stdout))
            return ps_error_set(err, PS_EIO, "stdout: write failed: %s",
                                strerror(o->write_errno ? o->write_errno : errno));
        return 0;
    }
    const char *step = "write failed";
    int e = o->write_errno;
    if (!e && (fflush(o->f) != 0 || ferror(o->f)))
        e = errno ? errno : EIO;
    /* fsync on a FIFO or a device means nothing (EINVAL); on a file it is
     * what makes the rename safe. */
    if (!e && o->target && fsync(fileno(o->f)) != 0)
        e = errno, step = "fsync failed";
    if (fclose(o->f) != 0 && !e)
        e = errno, step = "close failed";
    o->f = NULL;
    int rc = e ? ps_error_set(err, PS_EIO, "%s: %s: %s", o->path, step, strerror(e))
               : o->target ? put_in_place(o, err) : 0;
    ps_outfile_abort(o);
    return rc;
}

void ps_outfile_abort(ps_outfile *o)
{
    ps_write_behind_free(o->wb); /* before the descriptor closes */
    o->wb = NULL;
    if (o->f && o->f != stdout)
        fclose(o->f);
    o->f = NULL;
    if (o->tmp)
        unlink(o->tmp);
    free(o->tmp);
    free(o->target);
    free(o->path);
    o->tmp = o->target = o->path = NULL;
}

int ps_outfile_write_all(const char *path, const void *p, size_t n, ps_error *err)
{
    ps_outfile o;
    int rc = ps_outfile_open(&o, path, err);
    if (!rc)
        rc = ps_outfile_write(&o, p, n, err);
    if (!rc)
        return ps_outfile_commit(&o, err);
    ps_outfile_abort(&o);
    return rc;
}
