/* What an output path names (see outfile.h): the real file a rename must
 * replace, or a stream to write into, or something that cannot be an
 * output. */
#include "common/outfile.h"
#include "common/ps_internal.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Links like /dev/fd/N point at pipes and sockets ("pipe:[123]"), not at
 * paths: they are written through as they are, never resolved. */
static bool is_fd_path(const char *p)
{
    static const char *const prefixes[] = {"/dev/fd/", "/proc/self/fd/", "/proc/thread-self/fd/"};
    for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++)
        if (strncmp(p, prefixes[i], strlen(prefixes[i])) == 0)
            return true;
    return strcmp(p, "/dev/stdout") == 0 || strcmp(p, "/dev/stderr") == 0;
}

static const char *kind_name(mode_t m)
{
    return S_ISDIR(m) ? "a directory" : S_ISSOCK(m) ? "a socket" : S_ISBLK(m) ? "a block device"
                                                                                : "not a file";
}

/* "dir/name" split at the last '/': the directory part ("." when none). */
static char *dir_of(const char *p)
{
    const char *slash = strrchr(p, '/');
    if (!slash)
        return strdup(".");
    if (slash == p)
        return strdup("/");
    return strndup(p, (size_t)(slash - p));
}

/* The real path of `p`, which does not exist: its directory resolved. */
static int absent_target(const char *path, const char *p, char **out, ps_error *err)
{
    const char *base = strrchr(p, '/') ? strrchr(p, '/') + 1 : p;
    if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
        return ps_error_set(err, PS_EUSAGE, "%s: names a directory, not a file", path);
    char *dir = dir_of(p);
    char *real = dir ? realpath(dir, NULL) : NULL;
    int e = errno;
    free(dir);
    if (!real)
        return ps_error_set(err, e == ENOMEM ? PS_ENOMEM : PS_EUSAGE,
                            "%s: cannot create: its directory: %s", path, strerror(e));
    size_t n = strlen(real) + strlen(base) + 2;
    *out = malloc(n);
    if (*out)
        snprintf(*out, n, "%s%s%s", real, strcmp(real, "/") ? "/" : "", base);
    free(real);
    return *out ? 0 : ps_error_set(err, PS_ENOMEM, "out of memory");
}

/* Follows the symlinks of a path that does not resolve (absent, or a
 * dangling link) to the name a new file must take. */
static int follow_dangling(const char *path, char **out, ps_error *err)
{
    char *cur = strdup(path);
    for (int hops = 0; cur && hops < 40; hops++) {
        struct stat ls;
        if (lstat(cur, &ls) != 0) {
            int rc = errno == ENOENT ? absent_target(path, cur, out, err)
                                     : ps_error_set(err, PS_EUSAGE, "%s: %s", path, strerror(errno));
            free(cur);
            return rc;
        }
        if (!S_ISLNK(ls.st_mode)) { /* appeared meanwhile */
            free(cur);
            return ps_error_set(err, PS_EUSAGE, "%s: changed while being checked", path);
        }
        char link[PATH_MAX];
        ssize_t n = readlink(cur, link, sizeof link - 1);
        if (n < 0) {
            free(cur);
            return ps_error_set(err, PS_EUSAGE, "%s: %s", path, strerror(errno));
        }
        link[n] = '\0';
        char *next = NULL;
        if (link[0] == '/') {
            next = strdup(link);
        } else {
            char *dir = dir_of(cur);
            size_t len = (dir ? strlen(dir) : 0) + (size_t)n + 2;
            next = dir ? malloc(len) : NULL;
            if (next)
                snprintf(next, len, "%s/%s", dir, link);
            free(dir);
        }
        free(cur);
        cur = next;
    }
    if (!cur)
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    free(cur);
    return ps_error_set(err, PS_EUSAGE, "%s: %s", path, strerror(ELOOP));
}

int ps_out_classify(const char *path, ps_out_info *info, ps_error *err)
{
    memset(info, 0, sizeof *info);
    if (strcmp(path, "-") == 0) {
        info->kind = PS_OUT_STDOUT;
        info->exists = fstat(STDOUT_FILENO, &info->st) == 0;
        return 0;
    }
    if (!*path)
        return ps_error_set(err, PS_EUSAGE, "an output path is empty");
    if (stat(path, &info->st) == 0) {
        mode_t m = info->st.st_mode;
        info->exists = true;
        if (S_ISFIFO(m) || S_ISCHR(m) || (is_fd_path(path) && S_ISREG(m))) {
            info->kind = PS_OUT_STREAM;
            return 0;
        }
        if (!S_ISREG(m))
            return ps_error_set(err, PS_EUSAGE,
                                "%s: is %s; an output must be a regular file, a FIFO or a "
                                "character device", path, kind_name(m));
        info->kind = PS_OUT_FILE;
        info->target = realpath(path, NULL);
        if (!info->target)
            return ps_error_set(err, PS_EUSAGE, "%s: %s", path, strerror(errno));
        return 0;
    }
    if (errno != ENOENT)
        return ps_error_set(err, PS_EUSAGE, "%s: %s", path, strerror(errno));
    if (is_fd_path(path))
        return ps_error_set(err, PS_EUSAGE, "%s: no such open descriptor", path);
    info->kind = PS_OUT_FILE;
    return follow_dangling(path, &info->target, err);
}
