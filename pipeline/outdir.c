/*
 * The one rule for what `build -o DIR` and `merge -o DIR` may replace.
 * Publishing swaps DIR out and deletes what was there, so DIR must be
 * something pairshard made or nothing at all: missing, an empty directory
 * or a shard set (a manifest.json of ours). A directory of anything else
 * (a thesis, the inputs, the current directory) is refused unless the
 * caller forces it; a symbolic link, a regular file, a FIFO or a device is
 * refused always, and so is a DIR holding an input or the current
 * directory, whose loss nothing could justify.
 */
#include "pipeline/build.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MANIFEST_MAX_BYTES (256u << 20)

static const char *kind_of(mode_t m)
{
    if (S_ISLNK(m))
        return "a symbolic link";
    if (S_ISREG(m))
        return "a regular file";
    if (S_ISFIFO(m))
        return "a FIFO";
    if (S_ISCHR(m) || S_ISBLK(m))
        return "a device";
    if (S_ISSOCK(m))
        return "a socket";
    return "not a directory";
}

/* 1 when directory `dir` has no entries, 0 when it has, -1 when unreadable. */
static int dir_is_empty(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    struct dirent *e;
    int empty = 1;
    while (empty && (e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            empty = 0;
    closedir(d);
    return empty;
}

/* True when dir/manifest.json is a regular file whose "format" and
 * "format_version" are a pairshard manifest's (as manifest reading checks
 * them first). Opened without following links and without blocking. */
static bool holds_our_manifest(const char *dir)
{
    char path[PATH_MAX + 32];
    if (snprintf(path, sizeof path, "%s/manifest.json", dir) >= (int)sizeof path)
        return false;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return false;
    struct stat st;
    char *text = NULL;
    bool ours = false;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
        (uint64_t)st.st_size <= MANIFEST_MAX_BYTES && (text = malloc((size_t)st.st_size)) &&
        read(fd, text, (size_t)st.st_size) == st.st_size) {
        json_error_t je;
        json_t *root = json_loadb(text, (size_t)st.st_size, 0, &je);
        const char *fmt = json_string_value(json_object_get(root, "format"));
        json_t *ver = json_object_get(root, "format_version");
        ours = fmt && !strcmp(fmt, "pairshard-manifest") && json_is_integer(ver) &&
               json_integer_value(ver) >= 1;
        json_decref(root);
    }
    free(text);
    close(fd);
    return ours;
}

/* True when `inner` is `outer` or lies below it (both canonical). */
static bool path_within(const char *inner, const char *outer)
{
    size_t n = strlen(outer);
    if (n == 1 && outer[0] == '/')
        return true;
    return strncmp(inner, outer, n) == 0 && (inner[n] == '\0' || inner[n] == '/');
}

/* Refuses a DIR that holds an input or the current directory. */
static int check_not_holding(const char *dir, const char *real_dir, const ps_publish_opts *o,
                             ps_error *err)
{
    for (size_t i = 0; o && i < o->n_inputs; i++) {
        char real_in[PATH_MAX];
        if (!strcmp(o->inputs[i], "-") || !realpath(o->inputs[i], real_in))
            continue;
        if (path_within(real_in, real_dir))
            return ps_error_set(err, PS_EUSAGE,
                                "%s: holds the input %s; refusing to replace it (write the "
                                "shard set to a new directory)",
                                dir, o->inputs[i]);
    }
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof cwd) && path_within(cwd, real_dir))
        return ps_error_set(err, PS_EUSAGE,
                            "%s: is the current directory or holds it; refusing to replace it "
                            "(write the shard set to a new directory)",
                            dir);
    return 0;
}

int ps_output_dir_check(const char *dir, const ps_publish_opts *o, ps_error *err)
{
    /* "link/" would follow the link: look at the name itself. */
    char name[PATH_MAX];
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        n--;
    if (n >= sizeof name)
        return ps_error_set(err, PS_EUSAGE, "%s: path too long", dir);
    memcpy(name, dir, n);
    name[n] = '\0';
    struct stat st;
    if (lstat(name, &st) != 0) {
        if (errno == ENOENT)
            return 0; /* created by the publication */
        return ps_error_set(err, PS_EUSAGE, "%s: cannot use as the output directory: %s", dir,
                            strerror(errno));
    }
    if (!S_ISDIR(st.st_mode))
        return ps_error_set(err, PS_EUSAGE,
                            "%s: is %s, not a directory; pairshard replaces only a missing, "
                            "empty or shard-set directory and never follows a link",
                            dir, kind_of(st.st_mode));
    char real_dir[PATH_MAX];
    if (!realpath(dir, real_dir))
        return ps_error_set(err, PS_EUSAGE, "%s: cannot resolve: %s", dir, strerror(errno));
    int rc = check_not_holding(dir, real_dir, o, err);
    if (rc)
        return rc;
    int empty = dir_is_empty(dir);
    if (empty < 0)
        return ps_error_set(err, PS_EUSAGE, "%s: cannot list: %s", dir, strerror(errno));
    if (empty || holds_our_manifest(dir) || (o && o->force))
        return 0;
    return ps_error_set(err, PS_EUSAGE,
                        "%s: exists and is neither empty nor a shard set (no pairshard "
                        "manifest.json); refusing to replace it and delete its files (choose "
                        "a new directory, or --force to replace it anyway)",
                        dir);
}
