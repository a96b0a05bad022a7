/*
 * A part as one snapshot. A part can be rebuilt while merge reads it (a
 * --part job rerun, a second pipeline writing the same OUT): a rebuild
 * publishes a new directory in the part's place and removes the old one.
 * Reading the manifest by path and the shards by path later could give
 * the manifest of one build and the records of another. So merge opens
 * the directory first and every file through that descriptor (files
 * opened so come from that one directory, whatever its path names later),
 * holds the descriptors and reads only through them; checks, once all are
 * open, that the directory still holds the manifest it read (a rebuild
 * that removed it fails here); verifies every shard against the manifest
 * read in the same snapshot (blocks, counts, size, SHA-256) and the
 * manifest's sums; and, before the merged set is published, that every
 * file is as it was opened and the part's path still names the same
 * directory. A part changed at any point is refused, naming it.
 */
#include "pipeline/merge_snapshot.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const EXTRA[PS_SNAP_EXTRAS] = {"rejects.jsonl", "duplicates.jsonl",
                                                  "stats.json"};

static bool same_file(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* Same file, same size, same modification time. */
static bool same_content(const struct stat *a, const struct stat *b)
{
    return same_file(a, b) && a->st_size == b->st_size &&
           a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

int ps_part_snap_open(ps_part_snap *s, const char *dir, size_t index, ps_error *err)
{
    memset(s, 0, sizeof *s);
    s->dir = dir;
    s->index = index;
    s->dfd = -1;
    for (int k = 0; k < PS_SNAP_EXTRAS; k++)
        s->extra[k] = -1;
    s->dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (s->dfd < 0 && (errno == ENOENT || errno == ENOTDIR))
        return ps_error_set(err, PS_ENOENT, "%s: no manifest.json (not a part built with "
                            "--part?)", dir);
    if (s->dfd < 0 || fstat(s->dfd, &s->dir_st))
        return ps_error_set(err, PS_EIO, "%s: cannot open the part: %s", dir, strerror(errno));
    char path[4096];
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    int fd;
    int rc = ps_file_openat_regular(s->dfd, "manifest.json", path, "manifest", &fd, err);
    if (rc == PS_ENOENT)
        return ps_error_set(err, PS_ENOENT, "%s: no manifest.json (not a part built with "
                            "--part?)", dir);
    if (rc)
        return rc;
    if (fstat(fd, &s->manifest_st))
        rc = ps_error_set(err, PS_EIO, "%s: %s", path, strerror(errno));
    if (!rc)
        rc = ps_file_read_fd(fd, path, "manifest", PS_MANIFEST_MAX_BYTES, &s->manifest,
                             &s->manifest_len, err);
    close(fd);
    return rc;
}

/* The part was rebuilt or removed since its manifest was read: the
 * directory no longer holds that manifest. */
static int still_there(const ps_part_snap *s, ps_error *err)
{
    struct stat now;
    if (fstatat(s->dfd, "manifest.json", &now, 0) != 0 ||
        !same_file(&now, &s->manifest_st))
        return ps_error_set(err, PS_ECORRUPT,
                            "part %zu: %s/manifest.json was replaced or removed while merge read "
                            "the part (rebuilt?); nothing was published: merge once its build "
                            "has finished",
                            s->index, s->dir);
    return 0;
}

static int open_files(ps_part_snap *s, const char *const *files, size_t n, ps_error *err)
{
    s->fds = malloc((n + 1) * sizeof *s->fds);
    s->names = calloc(n + 1, sizeof *s->names);
    s->shard_st = calloc(n + 1, sizeof *s->shard_st);
    if (!s->fds || !s->names || !s->shard_st)
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    char path[4096];
    int rc = 0;
    for (; !rc && s->n_shards < n; s->n_shards++) {
        size_t k = s->n_shards;
        s->fds[k] = -1;
        if (!ps_shard_name_ok(files[k]))
            return ps_error_set(err, PS_ECORRUPT, "%s: bad shard file name in the manifest",
                                s->dir);
        if (!(s->names[k] = strdup(files[k])))
            return ps_error_set(err, PS_ENOMEM, "out of memory");
        snprintf(path, sizeof path, "%s/%s", s->dir, files[k]);
        rc = ps_file_openat_regular(s->dfd, files[k], path, "shard", &s->fds[k], err);
        if (!rc && fstat(s->fds[k], &s->shard_st[k]))
            rc = ps_error_set(err, PS_EIO, "%s: %s", path, strerror(errno));
    }
    for (int k = 0; !rc && k < PS_SNAP_EXTRAS; k++) {
        snprintf(path, sizeof path, "%s/%s", s->dir, EXTRA[k]);
        rc = ps_file_openat_regular(s->dfd, EXTRA[k], path, "part's file", &s->extra[k], err);
        if (rc == PS_ENOENT && k != PS_SNAP_STATS) {
            rc = 0; /* an older part without it */
            ps_error_clear(err);
        } else if (!rc && fstat(s->extra[k], &s->extra_st[k])) {
            rc = ps_error_set(err, PS_EIO, "%s: %s", path, strerror(errno));
        }
    }
    return rc;
}

int ps_part_snap_verify(ps_part_snap *s, const char *const *files, size_t n, ps_error *err)
{
    int rc = open_files(s, files, n, err);
    if (rc == PS_ENOENT && still_there(s, err))
        return err->code; /* a file gone because the part was rebuilt: say that */
    if (rc)
        return rc;
    if ((rc = still_there(s, err)))
        return rc;
    char where[4096];
    snprintf(where, sizeof where, "%s/manifest.json", s->dir);
    ps_manifest *m = NULL;
    if ((rc = ps_manifest_parse(s->manifest, s->manifest_len, where, &m, err)))
        return rc;
    ps_verify_report rep;
    memset(&rep, 0, sizeof rep);
    ps_error e;
    ps_error_clear(&e);
    /* m and the caller's list come from the same bytes: the same shards */
    rc = m->n_shards == n ? ps_set_verify_fds(s->dir, m, s->fds, &rep, &e)
                          : ps_error_set(&e, PS_EFORMAT, "%s: %zu shards, %zu listed", where,
                                         m->n_shards, n);
    if (rc == PS_ECORRUPT && rep.kind && !strcmp(rep.kind, "accounting"))
        ps_error_set(err, rc, "part %zu: %s; nothing was published", s->index, e.message);
    else if (rc == PS_ECORRUPT)
        ps_error_set(err, rc,
                     "part %zu: %s; the part is not what its manifest says (damaged, or "
                     "changed while merge read it): nothing was published",
                     s->index, e.message);
    else if (rc)
        ps_error_set(err, rc, "part %zu: %s", s->index, e.message);
    ps_verify_report_free(&rep);
    ps_manifest_free(m);
    return rc;
}

int ps_part_snap_unchanged(const ps_part_snap *s, ps_error *err)
{
    struct stat now;
    const char *what = NULL;
    char name[64] = "";
    for (size_t k = 0; !what && k < s->n_shards; k++)
        if (fstat(s->fds[k], &now) || !same_content(&now, &s->shard_st[k])) {
            what = "was written";
            snprintf(name, sizeof name, "/%s", s->names[k]);
        }
    for (int k = 0; !what && k < PS_SNAP_EXTRAS; k++)
        if (s->extra[k] >= 0 && (fstat(s->extra[k], &now) || !same_content(&now, &s->extra_st[k]))) {
            what = "was written";
            snprintf(name, sizeof name, "/%s", EXTRA[k]);
        }
    if (!what && (stat(s->dir, &now) || !same_file(&now, &s->dir_st)))
        what = "now names another directory (rebuilt?)";
    if (!what)
        return still_there(s, err);
    return ps_error_set(err, PS_ECORRUPT,
                        "part %zu: %s%s %s while merge read it; nothing was published: merge "
                        "once its build has finished",
                        s->index, s->dir, name, what);
}

int ps_part_snap_read_extra(const ps_part_snap *s, int which, char **data, size_t *len,
                            ps_error *err)
{
    *data = NULL;
    *len = 0;
    if (s->extra[which] < 0)
        return 0;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", s->dir, EXTRA[which]);
    if (lseek(s->extra[which], 0, SEEK_SET) < 0)
        return ps_error_set(err, PS_EIO, "%s: %s", path, strerror(errno));
    return ps_file_read_fd(s->extra[which], path, EXTRA[which], (size_t)1 << 30, data, len, err);
}

int ps_part_snap_append_extra(const ps_part_snap *s, int which, int out, const char *out_path,
                              ps_error *err)
{
    if (s->extra[which] < 0)
        return 0;
    char path[4096], buf[65536];
    snprintf(path, sizeof path, "%s/%s", s->dir, EXTRA[which]);
    for (off_t off = 0;;) {
        ssize_t r = pread(s->extra[which], buf, sizeof buf, off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return ps_error_set(err, PS_EIO, "%s: read failed: %s", path, strerror(errno));
        if (r == 0)
            return 0;
        int e = ps_fd_write_all(out, buf, (size_t)r);
        if (e)
            return ps_error_set(err, PS_EIO, "%s: write failed: %s", out_path, strerror(e));
        off += r;
    }
}

void ps_part_snap_close(ps_part_snap *s)
{
    for (size_t k = 0; s->fds && k < s->n_shards; k++)
        if (s->fds[k] >= 0)
            close(s->fds[k]);
    for (int k = 0; k < PS_SNAP_EXTRAS; k++)
        if (s->extra[k] >= 0)
            close(s->extra[k]);
    if (s->dfd >= 0)
        close(s->dfd);
    for (size_t k = 0; s->names && k < s->n_shards; k++)
        free(s->names[k]);
    free(s->fds);
    free(s->names);
    free(s->shard_st);
    free(s->manifest);
    memset(s, 0, sizeof *s);
    s->dfd = -1;
}
