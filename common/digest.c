/* SHA-256 of files (nettle), for manifests: inputs, vocabularies, shards. */
#include "common/ps_internal.h"

#include <errno.h>
#include <nettle/sha2.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

void ps_sha256_digest_hex(struct sha256_ctx *ctx, char hex[65])
{
    uint8_t d[SHA256_DIGEST_SIZE];
    sha256_digest(ctx, sizeof d, d);
    for (size_t i = 0; i < sizeof d; i++)
        snprintf(hex + 2 * i, 3, "%02x", d[i]);
}

int ps_sha256_fd(int fd, const char *path, char hex[65], uint64_t *bytes, ps_error *err)
{
    struct sha256_ctx ctx;
    sha256_init(&ctx);
    static __thread unsigned char buf[1 << 16];
    uint64_t total = 0;
    for (;;) { /* pread: the descriptor's offset is its owner's */
        ssize_t r = pread(fd, buf, sizeof buf, (off_t)total);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return ps_error_set(err, PS_EIO, "%s: read failed: %s", path, strerror(errno));
        if (r == 0)
            break;
        sha256_update(&ctx, (size_t)r, buf);
        total += (uint64_t)r;
    }
    ps_sha256_digest_hex(&ctx, hex);
    if (bytes)
        *bytes = total;
    return 0;
}

int ps_sha256_file(const char *path, char hex[65], uint64_t *bytes, ps_error *err)
{
    /* A regular file only: a FIFO would block (or be read by two), a
     * device might never end. */
    int fd;
    int rc = ps_file_open_regular(path, "file to hash", &fd, err);
    if (rc)
        return rc;
    rc = ps_sha256_fd(fd, path, hex, bytes, err);
    close(fd);
    return rc;
}

void ps_sha256_hex(const void *data, size_t len, char hex[65])
{
    struct sha256_ctx ctx;
    sha256_init(&ctx);
    sha256_update(&ctx, len, data);
    ps_sha256_digest_hex(&ctx, hex);
}
