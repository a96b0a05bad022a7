/*
 * pairshard/common.h — version and error model shared by every stage.
 * Trainers include <pairshard/pairshard.h>, which includes this.
 *
 * Error model (as in libuv and zstd):
 *   - Every fallible function returns an `int`: 0 (PS_OK) on success, or one of
 *     the negative PS_E* codes below. Functions that return a count return
 *     the count (>= 0) or a negative code; test with `rc < 0`.
 *   - A function that can fail on input also takes a `ps_error *` (may be
 *     NULL). On failure it fills it with the code and a message naming the
 *     file, the record and the reason, e.g.
 *       "dev.json:#17: field 'question' is a number, expected a string".
 *   - Library code never calls exit() or abort() on bad input and never
 *     prints; the caller decides what to show.
 */
#ifndef PAIRSHARD_COMMON_H
#define PAIRSHARD_COMMON_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PS_VERSION_MAJOR 0
#define PS_VERSION_MINOR 1
#define PS_VERSION_PATCH 0
#define PS_VERSION_STRING "0.1.0"

#if defined(__GNUC__) && __GNUC__ >= 4
#define PS_API __attribute__((visibility("default")))
#else
#define PS_API
#endif

/* Error codes. Negative, stable, never reused. ps_strerror() names them. */
#define PS_ERRNO_MAP(X)                                                        \
    X(ENOMEM, -1, "out of memory")                                             \
    X(EIO, -2, "input/output error")                                           \
    X(EINVAL, -3, "invalid argument")                                          \
    X(ENOENT, -4, "no such file")                                              \
    X(EFORMAT, -5, "malformed input")                                          \
    X(EUTF8, -6, "invalid UTF-8")                                              \
    X(ERANGE, -7, "value out of range")                                        \
    X(ECORRUPT, -8, "corrupt data")                                            \
    X(EVERSION, -9, "unsupported format version")                              \
    X(EUSAGE, -10, "invalid usage or configuration")                           \
    X(ERULE, -11, "invalid cleaning rule")                                     \
    X(EDECOMPRESS, -12, "decompression failed")                                \
    X(ELIMIT, -13, "resource limit exceeded")                                  \
    X(EEOF, -14, "end of input")                                               \
    X(EEMPTY, -15, "the shard set holds no records")                         \
    X(ECANCELED, -16, "cancelled")

enum {
    PS_OK = 0,
#define PS_ERRNO_ENUM_(name, value, text) PS_##name = (value),
    PS_ERRNO_MAP(PS_ERRNO_ENUM_)
#undef PS_ERRNO_ENUM_
};

/* Maximum length, including the terminating NUL, of an error message. */
#define PS_ERROR_MESSAGE_MAX 512

/* Detailed error: a code plus a message that names file, record and reason. */
typedef struct ps_error {
    int code;                              /* 0 or a PS_E* code */
    char message[PS_ERROR_MESSAGE_MAX];    /* NUL-terminated, "" when code==0 */
} ps_error;

/* Returns a static, human-readable description of `code` (never NULL).
 * Unknown codes give "unknown error". */
PS_API const char *ps_strerror(int code);

/* Returns the symbolic name of `code`, e.g. "PS_EFORMAT" (never NULL). */
PS_API const char *ps_err_name(int code);

/* Returns the library version as "MAJOR.MINOR.PATCH" (static string). */
PS_API const char *ps_version_string(void);

/* Writes "name version" lines for every linked dependency (LMDB, zstd,
 * utf8proc and its Unicode version, jansson, PCRE2, xxHash, zlib, CUDA) into
 * buf. Returns the length it needed (like snprintf; the text is cut when
 * that is >= n), or PS_EINVAL. */
PS_API int ps_dependency_versions(char *buf, size_t n);

/* Resets `err` to the no-error state. `err` may be NULL. */
PS_API void ps_error_clear(ps_error *err);

#ifdef __cplusplus
}
#endif

#endif /* PAIRSHARD_COMMON_H */
