/*
 * Atomic publication of a shard set. Everything is written into a staging
 * directory beside the target, fsynced, and swapped in with one rename
 * (renameat2 RENAME_EXCHANGE when the target exists), so a crash or kill at
 * any moment leaves either the old set or the new one, never a half.
 * Readers of the old set keep their open files until they close them.
 * A builder holds an flock on a lock file in its staging directory for its
 * whole life, so that a stale one (its builder dead) is told from a live
 * one in another PID namespace or on another host, where a PID means
 * nothing.
 */
#define _GNU_SOURCE /* sync_file_range */
#include "pipeline/build.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
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

/* `name` as it fits in `room` bytes: whole, or its start (cut at a
 * character boundary) with "~" and an FNV-1a hash of the whole name, so it
 * stays recognisable and distinct. */
static void fit_name(const char *name, size_t room, char *out, size_t osz)
{
    size_t n = strlen(name);
    if (n <= room) {
        snprintf(out, osz, "%s", name);
        return;
    }
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)name[i]) * 16777619u;
    size_t keep = room - 9; /* "~" and 8 hex digits */
    while (keep > 0 && ((unsigned char)name[keep] & 0xC0) == 0x80)
        keep--; /* not inside a UTF-8 sequence */
    snprintf(out, osz, "%.*s~%08x", (int)keep, name, h);
}

/* The longest name a stopped build writes beside DIR ("DIR." + this). */
#define BESIDE_LONGEST_SUFFIX "rejects.jsonl"

void ps_path_beside(const char *dir, char *parent, size_t psz, char *prefix, size_t nsz)
{
    char name[512], fitted[NAME_MAX + 1];
    split_path(dir, parent, psz, name, sizeof name);
    fit_name(name, NAME_MAX - 1 - strlen(BESIDE_LONGEST_SUFFIX), fitted, sizeof fitted);
    snprintf(prefix, nsz, "%s.", fitted);
}

/* Removes everything inside directory `path` but the entry named `except`
 * (none when NULL). */
static void remove_entries(const char *path, const char *except)
{
    DIR *d = opendir(path);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
            (except && !strcmp(e->d_name, except)))
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

void ps_remove_tree(const char *path)
{
    remove_entries(path, NULL);
    rmdir(path);
}

#define LOCK_NAME "lock"
#define LOCK_TEXT "pairshard staging directory\n"
#define ASIDE_NAME "old" /* where the previous set waits without RENAME_EXCHANGE */
#define STAGING_SUFFIX ".tmp.XXXXXX" /* mkdtemp's six random characters */

/* The name staging directories of DIR start with: ".<name>.tmp.", the name
 * fitted within NAME_MAX (fit_name). */
static void staging_prefix(const char *name, char *out, size_t osz)
{
    char fitted[NAME_MAX + 1];
    fit_name(name, NAME_MAX - 1 - strlen(STAGING_SUFFIX), fitted, sizeof fitted);
    snprintf(out, osz, ".%s.tmp.", fitted);
}

/* True when `s` is what mkdtemp puts in place of XXXXXX. */
static bool is_random_tail(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++)
        if (!((s[n] >= 'a' && s[n] <= 'z') || (s[n] >= 'A' && s[n] <= 'Z') ||
              (s[n] >= '0' && s[n] <= '9')))
            return false;
    return n == 6;
}

/* True when directory `sub` holds nothing but LOCK_NAME. */
static bool holds_only_lock(const char *sub)
{
    DIR *d = opendir(sub);
    if (!d)
        return false;
    bool only = true;
    struct dirent *e;
    while (only && (e = readdir(d)) != NULL)
        only = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
               !strcmp(e->d_name, LOCK_NAME);
    closedir(d);
    return only;
}

/* Takes the lock of staging directory `sub` when no process holds it and
 * the directory is ours: its lock file holds LOCK_TEXT (a builder writes
 * it once it holds the lock, before anything else goes in), or holds a
 * start of it and is all the directory holds (a builder killed between
 * creating the lock file and writing it; removing that loses nothing).
 * Returns the locked descriptor, or -1. */
static int take_stale_lock(const char *sub)
{
    char path[4200];
    if (snprintf(path, sizeof path, "%s/" LOCK_NAME, sub) >= (int)sizeof path)
        return -1;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat st;
    char text[sizeof LOCK_TEXT];
    ssize_t n = -1;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && flock(fd, LOCK_EX | LOCK_NB) == 0)
        n = pread(fd, text, sizeof text, 0);
    bool whole = n == (ssize_t)sizeof LOCK_TEXT - 1 && !memcmp(text, LOCK_TEXT, (size_t)n);
    bool started = n >= 0 && n < (ssize_t)sizeof LOCK_TEXT - 1 &&
                   !memcmp(text, LOCK_TEXT, (size_t)n) && holds_only_lock(sub);
    if (!whole && !started) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Removes staging directory `root` with its lock file last, so that a
 * kill at any moment of the removal leaves a directory that is either
 * empty or still carries our lock file, and the next build removes it. */
static void remove_staging(const char *root)
{
    remove_entries(root, LOCK_NAME);
    char lock[4200];
    if (snprintf(lock, sizeof lock, "%s/" LOCK_NAME, root) < (int)sizeof lock)
        unlink(lock);
    rmdir(root);
}

/* Removes the staging directories of DIR ("<prefix>XXXXXX" in `parent`)
 * whose builder is gone: its flock on the lock file died with it, on this
 * host or another, in this PID namespace or another. A live builder's
 * lock cannot be taken, and a directory without our lock file is left
 * alone, but an empty one, which a builder retries when it vanishes.
 * A builder killed between its two renames (no RENAME_EXCHANGE) left DIR
 * absent and the previous set aside in its staging: that set goes back. */
static void remove_stale(const char *dir, const char *parent, const char *prefix)
{
    DIR *d = opendir(parent);
    if (!d)
        return;
    size_t pl = strlen(prefix);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, prefix, pl) != 0 || !is_random_tail(e->d_name + pl))
            continue;
        char sub[4096];
        struct stat st;
        if (snprintf(sub, sizeof sub, "%s/%s", parent, e->d_name) >= (int)sizeof sub ||
            lstat(sub, &st) != 0 || !S_ISDIR(st.st_mode))
            continue;
        if (rmdir(sub) == 0)
            continue; /* it was empty */
        int fd = take_stale_lock(sub);
        if (fd < 0)
            continue;
        char aside[4200];
        if (lstat(dir, &st) != 0 && errno == ENOENT &&
            snprintf(aside, sizeof aside, "%s/" ASIDE_NAME, sub) < (int)sizeof aside &&
            lstat(aside, &st) == 0 && S_ISDIR(st.st_mode))
            rename(aside, dir);
        remove_staging(sub); /* holding the lock */
        close(fd);
    }
    closedir(d);
}

/* mkdtemp's the staging directory from `templ` and locks it. Returns 0,
 * or an errno (ENOENT: a cleaner removed it while still empty; retry). */
static int make_locked(char *templ, ps_staging *stg)
{
    if (!mkdtemp(templ))
        return errno;
    char path[4200];
    snprintf(path, sizeof path, "%s/" LOCK_NAME, templ);
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) {
        int e = errno;
        rmdir(templ); /* still empty (EMFILE, say); gone already on ENOENT */
        return e;
    }
    if (flock(fd, LOCK_EX) != 0 ||
        write(fd, LOCK_TEXT, sizeof LOCK_TEXT - 1) != (ssize_t)sizeof LOCK_TEXT - 1) {
        int e = errno ? errno : EIO;
        close(fd);
        remove_staging(templ);
        return e;
    }
    stg->lock_fd = fd;
    snprintf(path, sizeof path, "%s/set", templ);
    if (mkdir(path, 0755) != 0 || !(stg->set = strdup(path))) {
        int e = errno ? errno : ENOMEM;
        remove_staging(templ);
        close(fd);
        stg->lock_fd = -1;
        return e;
    }
    return 0;
}

int ps_staging_create(const char *dir, const ps_publish_opts *o, ps_staging *stg, ps_error *err)
{
    memset(stg, 0, sizeof *stg);
    stg->lock_fd = -1;
    /* prefix stays within NAME_MAX; sized for `name` so the compiler sees it fits */
    char parent[4096], name[512], prefix[512 + 16];
    split_path(dir, parent, sizeof parent, name, sizeof name);
    if (!*name || !strcmp(name, ".") || !strcmp(name, ".."))
        return ps_error_set(err, PS_EUSAGE, "%s: not a usable output directory name", dir);
    int rc = ps_output_dir_check(dir, o, err);
    if (rc)
        return rc;
    /* Create missing parents, as `mkdir -p` would (a build into a/b/c). */
    for (char *q = parent + 1; *q; q++) {
        if (*q != '/')
            continue;
        *q = '\0';
        mkdir(parent, 0755);
        *q = '/';
    }
    mkdir(parent, 0755);
    staging_prefix(name, prefix, sizeof prefix);
    remove_stale(dir, parent, prefix);
    size_t n = strlen(parent) + strlen(prefix) + 16;
    if (!(stg->root = malloc(n)))
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    int e = ENOENT;
    for (int attempt = 0; attempt < 3 && e == ENOENT; attempt++) {
        snprintf(stg->root, n, "%s/%sXXXXXX", parent, prefix);
        e = make_locked(stg->root, stg);
    }
    if (e) {
        free(stg->root);
        stg->root = NULL;
        return ps_error_set(err, PS_EIO, "%s: cannot create the staging directory beside it: %s",
                            dir, strerror(e));
    }
    return 0;
}

void ps_staging_discard(ps_staging *stg)
{
    if (!stg->root)
        return;
    remove_staging(stg->root); /* still holding the lock */
    if (stg->lock_fd >= 0)
        close(stg->lock_fd);
    free(stg->root);
    free(stg->set);
    memset(stg, 0, sizeof *stg);
    stg->lock_fd = -1;
}

/* Writes dir/name; fsyncs it, or only starts its writeback. */
static int write_file(const char *dir, const char *name, const char *data, size_t len,
                      bool sync, ps_error *err)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
        return ps_error_set(err, PS_EIO, "%s: path too long", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return ps_error_set(err, PS_EIO, "%s: cannot create: %s", path, strerror(errno));
    int e = ps_fd_write_all(fd, data, len);
    if (e) {
        close(fd);
        return ps_error_set(err, PS_EIO, "%s: write failed: %s", path, strerror(e));
    }
    if (!sync)
        (void)sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE); /* a hint: the fsync is later */
    if ((sync && fsync(fd) != 0) || close(fd) != 0)
        return ps_error_set(err, PS_EIO, "%s: %s failed: %s", path, sync ? "fsync" : "close",
                            strerror(errno));
    return 0;
}

int ps_write_file(const char *dir, const char *name, const char *data, size_t len,
                  ps_error *err)
{
    return write_file(dir, name, data, len, true, err);
}

int ps_write_set_file(const char *set, const char *name, const char *data, size_t len,
                      ps_error *err)
{
    return write_file(set, name, data, len, false, err);
}

/* fsyncs every file of the new set and the set directory. */
static int sync_set(const char *set, ps_error *err)
{
    DIR *d = opendir(set);
    if (!d)
        return ps_error_set(err, PS_EIO, "%s: cannot list: %s", set, strerror(errno));
    struct dirent *e;
    int bad = 0;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char sub[4096];
        bad |= snprintf(sub, sizeof sub, "%s/%s", set, e->d_name) >= (int)sizeof sub ||
               ps_fsync_path(sub, O_RDONLY) != 0;
    }
    closedir(d);
    if (bad || ps_fsync_dir(set) != 0)
        return ps_error_set(err, PS_EIO, "%s: fsync failed: %s", set, strerror(errno));
    return 0;
}

int ps_staging_publish(ps_staging *stg, const char *dir, const ps_publish_opts *o,
                       ps_error *err)
{
    int rc = sync_set(stg->set, err);
    if (rc)
        return rc;
    /* DIR may have changed during the build: the rule holds at the swap. */
    if ((rc = ps_output_dir_check(dir, o, err)) != 0)
        return rc;
    if (o && o->cancel && *o->cancel)
        return ps_error_set(err, PS_ECANCELED, "%s: cancelled; nothing was published", dir);
    char parent[4096], name[512];
    split_path(dir, parent, sizeof parent, name, sizeof name);
    struct stat st;
    if (lstat(dir, &st) == 0) {
        /* Swap in one step; the old set ends up inside the staging dir. */
        if (syscall(SYS_renameat2, AT_FDCWD, stg->set, AT_FDCWD, dir, RENAME_EXCHANGE) != 0) {
            if (errno != EINVAL && errno != ENOSYS)
                return ps_error_set(err, PS_EIO, "%s: cannot publish: %s", dir,
                                    strerror(errno));
            /* No exchange on this filesystem: move the old set aside first
             * (a short window without `dir`, never a partial one). */
            char aside[4200];
            if (snprintf(aside, sizeof aside, "%s/" ASIDE_NAME, stg->root) >= (int)sizeof aside)
                return ps_error_set(err, PS_EIO, "%s: path too long", stg->root);
            if (rename(dir, aside) != 0)
                return ps_error_set(err, PS_EIO, "%s: cannot publish: %s", dir,
                                    strerror(errno));
            if (rename(stg->set, dir) != 0) {
                int e = errno;
                rename(aside, dir); /* put the old set back */
                return ps_error_set(err, PS_EIO, "%s: cannot publish: %s", dir, strerror(e));
            }
        }
    } else if (rename(stg->set, dir) != 0) {
        return ps_error_set(err, PS_EIO, "%s: cannot publish: %s", dir, strerror(errno));
    }
    ps_fsync_dir(parent);
    return 0;
}
