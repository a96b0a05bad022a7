/* Writing a whole buffer to a descriptor: write(2) may take fewer bytes
 * than asked (a pipe, a signal, a nearly full disk), so every writer of a
 * raw descriptor loops the same way. */
#include "common/ps_internal.h"

#include <errno.h>
#include <unistd.h>

int ps_fd_write_all(int fd, const void *p, size_t n)
{
    const char *at = p;
    while (n > 0) {
        ssize_t w = write(fd, at, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return w < 0 ? errno : EIO; /* 0: no progress, as a full device gives */
        at += w;
        n -= (size_t)w;
    }
    return 0;
}
