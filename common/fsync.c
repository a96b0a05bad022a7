/* fsync of files and directories: what makes a rename or a new file survive
 * a crash (the build's staging directory, shard files, their parents). */
#include "common/ps_internal.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int ps_fsync_path(const char *path, int flags)
{
    int fd = open(path, flags | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

int ps_fsync_dir(const char *dir) { return ps_fsync_path(dir, O_RDONLY | O_DIRECTORY); }

int ps_fsync_parent(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir = slash ? strndup(path, (size_t)(slash - path) + (slash == path)) : strdup(".");
    if (!dir)
        return -1;
    int rc = ps_fsync_dir(dir);
    free(dir);
    return rc;
}
