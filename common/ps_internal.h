/*
 * Internal helpers shared by all stages: error setting, growable byte
 * buffers, checked allocation. Not installed; not part of the public API.
 */
#ifndef PS_INTERNAL_H
#define PS_INTERNAL_H

#include "pairshard/common.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__GNUC__)
#define PS_PRINTF(a, b) __attribute__((format(printf, a, b)))
#define PS_LIKELY(x) __builtin_expect(!!(x), 1)
#define PS_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define PS_PRINTF(a, b)
#define PS_LIKELY(x) (x)
#define PS_UNLIKELY(x) (x)
#endif

/* Fills `err` (if not NULL) with `code` and a formatted message; returns
 * `code`, so callers can write `return ps_error_set(err, PS_EFORMAT, ...)`. */
int ps_error_set(ps_error *err, int code, const char *fmt, ...) PS_PRINTF(3, 4);
/* Prefixes err's message with "source 'NAME': " (a mixture's source, which
 * the message did not name) and sets `code`; returns it. */
int ps_error_source(ps_error *err, int code, const char *source);
/* The code for a failed open: PS_ENOENT when errno value `e` says the file
 * is missing, PS_EIO for anything else. */
int ps_errno_code(int e);

/* Makes room for one more item in the array at `items` (a T **) of n items
 * of `size` bytes (capacity *cap): when full, doubles the capacity (first
 * `first`) and reallocates. 0, or PS_ENOMEM with the array unchanged. */
int ps_array_grow(void *items, size_t *cap, size_t n, size_t size, size_t first);

/* Reallocates the array whose pointer is at `pp` (a T **) to n items of
 * `size` bytes. On failure (0 or PS_ENOMEM) the array is as it was, so a
 * struct of parallel arrays stays freeable when one of them cannot grow. */
int ps_array_resize(void *pp, size_t n, size_t size);

/* A NUL-terminated copy of s[0..n); NULL when out of memory. */
char *ps_strndup(const char *s, size_t n);
/* strdup(s), or NULL for a NULL s (optional strings of a record). */
char *ps_strdup_opt(const char *s);

/* Two optional strings are equal: both NULL, or both strings alike. */
static inline bool ps_str_eq_opt(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* A growable byte buffer. `data` is always NUL-terminated when non-NULL
 * (the NUL is not counted in `len`), so it can be handed to C string APIs. */
typedef struct ps_buf {
    char *data;
    size_t len;
    size_t cap;
} ps_buf;

void ps_buf_init(ps_buf *b);
void ps_buf_free(ps_buf *b);
/* Asks the kernel for transparent huge pages on the 2 MiB-aligned part of
 * [p, p + n) (a hint; nothing when n is smaller or THP is off). A 4 KiB
 * page fault per page first touched is what large fresh buffers cost
 * most (in a virtual machine some ten microseconds each); ps_buf_reserve
 * does this for buffers of 2 MiB and more. */
void ps_mem_hint_huge(void *p, size_t n);
/* Makes room for `extra` more bytes (plus the NUL). 0 or PS_ENOMEM. */
int ps_buf_reserve(ps_buf *b, size_t extra);
int ps_buf_append(ps_buf *b, const void *p, size_t n);
int ps_buf_putc(ps_buf *b, char c);
int ps_buf_puts(ps_buf *b, const char *s);
int ps_buf_printf(ps_buf *b, const char *fmt, ...) PS_PRINTF(2, 3);
/* Appends the decimal digits of v (no printf on hot paths). */
int ps_buf_put_u64(ps_buf *b, uint64_t v);
static inline void ps_buf_reset(ps_buf *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

/* Little-endian integers in byte buffers (the block and state formats). */
static inline void ps_put_le32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
    p[2] = (unsigned char)(v >> 16);
    p[3] = (unsigned char)(v >> 24);
}
static inline uint32_t ps_get_le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline void ps_put_le64(unsigned char *p, uint64_t v)
{
    ps_put_le32(p, (uint32_t)v);
    ps_put_le32(p + 4, (uint32_t)(v >> 32));
}
static inline uint64_t ps_get_le64(const unsigned char *p)
{
    return (uint64_t)ps_get_le32(p) | (uint64_t)ps_get_le32(p + 4) << 32;
}

/* Overflow-checked size arithmetic: returns false on overflow. */
static inline bool ps_size_mul(size_t a, size_t b, size_t *out)
{
    return !__builtin_mul_overflow(a, b, out);
}
static inline bool ps_size_add(size_t a, size_t b, size_t *out)
{
    return !__builtin_add_overflow(a, b, out);
}

/* SHA-256 of the file at `path` as 64 hex digits (+ NUL) and its size.
 * Returns 0, PS_ENOENT or PS_EIO. */
int ps_sha256_file(const char *path, char hex[65], uint64_t *bytes, ps_error *err);
/* The same through an open descriptor of a regular file (`path` names it
 * in messages), read from offset 0 with pread, left open. 0 or PS_EIO. */
int ps_sha256_fd(int fd, const char *path, char hex[65], uint64_t *bytes, ps_error *err);
/* SHA-256 of len bytes as 64 hex digits (+ NUL). Never fails. */
void ps_sha256_hex(const void *data, size_t len, char hex[65]);
/* Finishes a nettle SHA-256 context (which it resets) into 64 hex digits
 * (+ NUL), for whoever hashes as it goes. */
struct sha256_ctx;
void ps_sha256_digest_hex(struct sha256_ctx *ctx, char hex[65]);

/* Returns the final path component of `path` (a pointer into it). */
const char *ps_path_basename(const char *path);
/* A directory's name: the last component of `dir`, trailing slashes
 * ignored ("sets/bird/" -> "bird"; "set" when there is none, as for "/").
 * malloc'ed; NULL when out of memory. Names a set used as one source. */
char *ps_dir_name(const char *dir);

/* Auxiliary files (file_read.c): state, statistics, vocabularies, rules,
 * configuration, manifests. `what` names the file's role in messages
 * ("vocabulary", "rules file", ...). */
/* The largest JSON configuration file read (--config). */
#define PS_CONFIG_FILE_MAX ((size_t)16 << 20)
/* "a FIFO", "a directory", ... for a st_mode. */
const char *ps_file_kind(unsigned mode);
/* Opens `path` for reading without blocking on a FIFO and refuses it
 * unless it is a regular file ("PATH: not a regular file (a FIFO); the
 * WHAT must be one"). Returns 0 and the descriptor (blocking again),
 * PS_ENOENT or PS_EIO. */
int ps_file_open_regular(const char *path, const char *what, int *fd_out, ps_error *err);
/* ps_file_open_regular, then the whole file into a malloc'ed buffer
 * (NUL-terminated, not counted in *len); PS_ELIMIT when it has more than
 * `max` bytes (checked before reading and while reading). */
int ps_file_read_all(const char *path, const char *what, size_t max, char **data, size_t *len,
                     ps_error *err);
/* ps_file_open_regular of `name` relative to the directory descriptor
 * dfd (AT_FDCWD: the current directory); `path` names it in messages.
 * Files opened through one directory descriptor come from that directory
 * even when its path is renamed or replaced meanwhile. */
int ps_file_openat_regular(int dfd, const char *name, const char *path, const char *what,
                           int *fd_out, ps_error *err);
/* The rest of the open regular file fd (from its offset) into a malloc'ed
 * buffer, as ps_file_read_all; fd stays open. */
int ps_file_read_fd(int fd, const char *path, const char *what, size_t max, char **data,
                    size_t *len, ps_error *err);

/* Writes all n bytes to fd, retrying short writes and EINTR (fd_write.c):
 * 0, or the errno of the failure (EIO when write(2) made no progress). */
int ps_fd_write_all(int fd, const void *p, size_t n);

/* Durability (fsync.c). Each returns 0, or -1 with errno set. */
/* Opens `path` with `flags` (O_CLOEXEC added), fsyncs and closes it. */
int ps_fsync_path(const char *path, int flags);
/* fsyncs the directory `dir`, so entries created or renamed in it last. */
int ps_fsync_dir(const char *dir);
/* fsyncs the directory holding `path` ("." when it has no slash). */
int ps_fsync_parent(const char *path);

/* pthread_create with default attributes; the new thread names itself
 * `name` (its first 15 bytes, the kernel's limit) before it calls fn, for
 * top -H, perf and debuggers, which otherwise show every thread as
 * "pairshard". Returns pthread_create's result; a thread that could not be
 * named still runs (thread_create.c). */
int ps_thread_create(pthread_t *t, void *(*fn)(void *), void *arg, const char *name);

#endif /* PS_INTERNAL_H */
