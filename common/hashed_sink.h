/* common/hashed_sink.h — a file written and hashed in one pass (hashed_sink.c). */
#ifndef PS_COMMON_HASHED_SINK_H
#define PS_COMMON_HASHED_SINK_H

#include "pairshard/common.h"

#include <stdint.h>

/* Writes everything it produces to fd (which may be a pipe); returns 0 or
 * an error code of its own, passed through untouched. */
typedef int (*ps_fd_producer)(void *arg, int fd);

/* Runs produce(arg, fd) with fd the write end of a pipe, and writes what
 * comes out of the pipe to `out` (from its offset), starting the
 * writeback every 4 MiB, while hashing it. `path` names `out` in messages
 * and is read back when no pipe or thread can be had (the producer then
 * writes `out` itself).
 *
 * Returns 0 with *produced the producer's result: when that is 0, hex (64
 * hex digits and a NUL) and *bytes (if not NULL) are the SHA-256 and size
 * of what was written; otherwise the file is incomplete and they are not
 * set. Returns PS_EIO when writing `out` failed (the message names `path`
 * and the errno), PS_ENOENT/PS_EIO from reading it back. Does not fsync,
 * close or remove `out`. */
int ps_hashed_sink_run(int out, const char *path, ps_fd_producer produce, void *arg,
                       int *produced, char hex[65], uint64_t *bytes, ps_error *err);

#endif
