/*
 * Atomic publication of a shard set. Everything is written into a staging
 * directory beside the target, fsynced, and swapped in with one rename
 * (renameat2 RENAME_EXCHANGE when the target exists), so a crash or kill at
 * any moment leaves either the old set or the new one, never a half.
 * Readers of the old set keep their open files until they close them.
 */
#include "shards/build.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* dirname and basename of `dir` without modifying it; trailing slashes
 * ("out/") are ignored. */
static void split_path(const char *dir, char *parent, size_t psz, char *name, size_t nsz)
{
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        n--;
    size_t cut = n; /* start of the last component */
    while (cut > 0 && dir[cut - 1] != '/')
        cut--;
    if (cut == 0)
        snprintf(parent, psz, ".");
    else
        snprintf(parent, psz, "%.*s", (int)(cut > 1 ? cut - 1 : 1), dir);
    snprintf(name, nsz, "%.*s", (int)(n - cut), dir + cut);
}

void ps_path_beside(const char *dir, char *parent, size_t psz, char *prefix, size_t nsz)
{
    char name[512];
    split_path(dir, parent, psz, name, sizeof name);
    snprintf(prefix, nsz, "%s.", name);
}

void ps_remove_tree(const char *path)
{
    DIR *d = opendir(path);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            char sub[4096];
            if (snprintf(sub, sizeof sub, "%s/%s", path, e->d_name) >= (int)sizeof sub)
                continue;
            struct stat st;
            if (lstat(sub, &st) == 0 && S_ISDIR(st.st_mode))
                ps_remove_tree(sub);
            else
                unlink(sub);
        }
        closedir(d);
    }
    rmdir(path);
}

/* The start time (clock ticks since boot) of process `pid`, or 0 when it
 * does not exist. With the pid it names a process uniquely: a pid alone
 * may have been reused by the time a stale staging directory is found. */
static unsigned long long process_start(long pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')'); /* the command name may hold spaces */
    if (!p)
        return 0;
    unsigned long long start = 0;
    /* after ") ": state is field 3; starttime is field 22 */
    int field = 2;
    for (char *tok = p + 1; *tok && field < 22; tok++)
        if (*tok == ' ')
            field++, start = strtoull(tok + 1, NULL, 10);
    return field == 22 ? start : 0;
}

/* Removes ".<name>.tmp.<pid>.<start>" directories whose process is gone. */
static void remove_stale(const char *parent, const char *name)
{
    DIR *d = opendir(parent);
    if (!d)
        return;
    char prefix[600];
    snprintf(prefix, sizeof prefix, ".%s.tmp.", name);
    size_t pl = strlen(prefix);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, prefix, pl) != 0)
            continue;
        char *end;
        long pid = strtol(e->d_name + pl, &end, 10);
        if (pid <= 0 || *end != '.')
            continue; /* not a staging directory of ours */
        unsigned long long start = strtoull(end + 1, &end, 10);
        if (*end && strcmp(end, ".old") != 0)
            continue;
        if (process_start(pid) == start)
            continue; /* its builder still runs */
        char sub[4096];
        if (snprintf(sub, sizeof sub, "%s/%s", parent, e->d_name) < (int)sizeof sub)
            ps_remove_tree(sub);
    }
    closedir(d);
}

int ps_staging_create(const char *dir, char **staging, ps_error *err)
{
    char parent[4096], name[512];
    split_path(dir, parent, sizeof parent, name, sizeof name);
    if (!*name || !strcmp(name, ".") || !strcmp(name, ".."))
        return ps_error_set(err, PS_EINVAL, "%s: not a usable output directory name", dir);
    /* Create missing parents, as `mkdir -p` would (a build into a/b/c). */
    for (char *q = parent + 1; *q; q++) {
        if (*q != '/')
            continue;
        *q = '\0';
        mkdir(parent, 0755);
        *q = '/';
    }
    mkdir(parent, 0755);
    remove_stale(parent, name);
    size_t n = strlen(parent) + strlen(name) + 64;
    char *s = malloc(n);
    if (!s)
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    long pid = (long)getpid();
    snprintf(s, n, "%s/.%s.tmp.%ld.%llu", parent, name, pid, process_start(pid));
    ps_remove_tree(s);
    if (mkdir(s, 0755) != 0) {
        int e = errno;
        free(s);
        return ps_error_set(err, PS_EIO, "%s: cannot create the staging directory beside it: %s",
                            dir, strerror(e));
    }
    *staging = s;
    return 0;
}

static int fsync_path(const char *path, int flags)
{
    int fd = open(path, flags | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

int ps_write_file(const char *dir, const char *name, const char *data, size_t len,
                  ps_error *err)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
        return ps_error_set(err, PS_EIO, "%s: path too long", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return ps_error_set(err, PS_EIO, "%s: cannot create: %s", path, strerror(errno));
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(fd, data + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int e = errno;
            close(fd);
            return ps_error_set(err, PS_EIO, "%s: write failed: %s", path, strerror(e));
        }
        off += (size_t)w;
    }
    if (fsync(fd) != 0 || close(fd) != 0)
        return ps_error_set(err, PS_EIO, "%s: fsync failed: %s", path, strerror(errno));
    return 0;
}

int ps_staging_publish(const char *staging, const char *dir, ps_error *err)
{
    DIR *d = opendir(staging);
    if (!d)
        return ps_error_set(err, PS_EIO, "%s: cannot list: %s", staging, strerror(errno));
    struct dirent *e;
    int bad = 0;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char sub[4096];
        bad |= snprintf(sub, sizeof sub, "%s/%s", staging, e->d_name) >= (int)sizeof sub ||
               fsync_path(sub, O_RDONLY) != 0;
    }
    closedir(d);
    if (bad || fsync_path(staging, O_RDONLY | O_DIRECTORY) != 0)
        return ps_error_set(err, PS_EIO, "%s: fsync failed: %s", staging, strerror(errno));

    char parent[4096], name[512];
    split_path(dir, parent, sizeof parent, name, sizeof name);
    struct stat st;
    if (lstat(dir, &st) == 0) {
        if (!S_ISDIR(st.st_mode))
            return ps_error_set(err, PS_EIO, "%s: exists and is not a directory", dir);
        /* Swap in one step; the old set ends up at the staging path. */
        if (syscall(SYS_renameat2, AT_FDCWD, staging, AT_FDCWD, dir, RENAME_EXCHANGE) != 0) {
            if (errno != EINVAL && errno != ENOSYS)
                return ps_error_set(err, PS_EIO, "%s: cannot publish: %s", dir,
                                    strerror(errno));
            /* No exchange on this filesystem: move the old set aside first
             * (a short window without `dir`, never a partial one). */
            char aside[4200];
            if (snprintf(aside, sizeof aside, "%s.old", staging) >= (int)sizeof aside)
                return ps_error_set(err, PS_EIO, "%s: path too long", staging);
            if (rename(dir, aside) != 0 || rename(staging, dir) != 0)
                return ps_error_set(err, PS_EIO, "%s: cannot publish: %s", dir,
                                    strerror(errno));
            ps_remove_tree(aside);
        } else {
            ps_remove_tree(staging);
        }
    } else if (rename(staging, dir) != 0) {
        return ps_error_set(err, PS_EIO, "%s: cannot publish: %s", dir, strerror(errno));
    }
    fsync_path(parent, O_RDONLY | O_DIRECTORY);
    return 0;
}
