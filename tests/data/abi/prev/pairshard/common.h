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
 *     prints; the caller decides what to show (the build's progress, for
 *     one, is a callback; tests/cli/layers.sh checks that no library folder
 *     calls printf, fprintf, puts or perror).
 *   - Each function's comment lists the codes it can return ("Errors:").
 *     The lists are complete for today's code; new codes may be added to a
 *     function in later versions, so a caller should treat any other
 *     negative value as a failure too.
 *
 * API conventions (every header follows them):
 *   - Arguments: inputs first, then out-parameters, then `ps_error *err`
 *     last: ps_reader_open(dir, opt, resume, &reader, &err). On failure an
 *     out-pointer is set to NULL (or left as the function documents).
 *   - Getters are named ps_<noun>_get_<what> (ps_reader_get_info,
 *     ps_cleaner_get_counts, ps_tokenizer_get_options). Functions ending in
 *     _json return a new malloc'ed JSON text the caller free()s.
 *   - Pointers a function returns are owned by the object they came from
 *     and live as long as it (or as documented), unless the comment says
 *     "free() it".
 *   - `err` may always be NULL. A pointer argument not documented as "may
 *     be NULL" must not be NULL (passing NULL is undefined behaviour, as in
 *     the C library).
 *   - Objects (ps_cleaner, ps_reader, ps_tokenizer) say in their header
 *     which calls may run concurrently. Every function of this header is
 *     thread-safe.
 *
 * Options structs that grow. A public options struct (ps_clean_options,
 * ps_reader_options) begins with `size_t struct_size`, so fields can be
 * appended in later versions without breaking callers built against an
 * older header:
 *   - ps_<x>_options_init(&o) is a macro that calls
 *     ps_<x>_options_init_size(&o, sizeof o): it writes the defaults into
 *     the caller's bytes only, and sets o.struct_size to the caller's size.
 *     A binding (python/pairshard) passes the size of its mirror.
 *   - Functions taking the struct read only its first struct_size bytes.
 *     A smaller size that the struct had in an earlier published version
 *     is accepted, and the fields after it take their defaults; any other
 *     size (0 from a struct never given to _init, a larger one from a newer
 *     header than the library) is refused with PS_EINVAL, naming the struct
 *     and the size, before anything else is done.
 *   - Each version of a struct is larger than the one before (a new field
 *     never hides in the old tail padding); fields are never removed or
 *     reordered.
 * Always initialise an options struct with its _init before setting
 * fields: a struct filled by hand (or memset to 0) is refused. The
 * options structs are ps_clean_options, ps_reader_options and
 * ps_tokenizer_options.
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

/* What a set's records hold (docs/FORMAT.md, "Layouts"). The block format
 * is the same for all three; the manifest's `layout` says how a record's
 * boundary is read.
 *   PS_LAYOUT_PAIR     an encoder's input (BERT routers and classifiers):
 *                      the tokenizer's pair encoding of segments A and B;
 *                      the boundary is the first type-1 token; class label.
 *   PS_LAYOUT_CAUSAL   a decoder's row (Qwen, Llama, GPT-2): the
 *                      single-sequence prefix of the post-processor (e.g.
 *                      BOS), tokens(prompt), tokens(completion); the
 *                      boundary is the prompt length, every id before the
 *                      completion. The completion is never truncated.
 *   PS_LAYOUT_SEQ2SEQ  an encoder-decoder's pair (T5): source = the
 *                      post-processed prompt, then target = the
 *                      post-processed completion; the boundary is the
 *                      source length. */
typedef enum ps_layout {
    PS_LAYOUT_PAIR = 0,
    PS_LAYOUT_CAUSAL = 1,
    PS_LAYOUT_SEQ2SEQ = 2
} ps_layout;

/* "pair", "causal" or "seq2seq"; NULL for any other value. Thread-safe. */
PS_API const char *ps_layout_name(int layout);

/* The ps_layout named `name` (as ps_layout_name spells it), or PS_EINVAL
 * for NULL or any other name. Thread-safe. */
PS_API int ps_layout_parse(const char *name);

/* Error codes. Negative, stable, never reused. ps_strerror() describes them
 * and ps_err_name() names them. What each means in general (a function's
 * comment says what it means there):
 *   PS_ENOMEM      an allocation failed
 *   PS_EIO         a read, write, fsync or rename failed (not a missing file)
 *   PS_EINVAL      an argument the caller controls is wrong (a bad size, a
 *                  NULL where one is not allowed, a mismatched resume state)
 *   PS_ENOENT      a file or directory that must exist does not
 *   PS_EFORMAT     a file's syntax or structure is wrong (JSON, CSV header,
 *                  manifest, vocabulary, state blob)
 *   PS_EUTF8       text is not valid UTF-8 where it must be
 *   PS_ERANGE      a number is out of its range
 *   PS_ECORRUPT    stored data fails its checks (a checksum, a bound)
 *   PS_EVERSION    a format version this library does not read
 *   PS_EUSAGE      options or configuration that cannot work together
 *   PS_ERULE       a cleaning rule cannot be compiled or is malformed
 *   PS_EDECOMPRESS a gzip or zstd stream is corrupt or truncated
 *   PS_ELIMIT      a size or resource limit was reached
 *   PS_EEOF        input ended where more was required
 *   PS_EEMPTY      a shard set holds no records
 *   PS_ECANCELED   the caller's cancel flag stopped the operation */
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

/* A human-readable description of `code`: "success" for PS_OK, "unknown
 * error" for a code that is no PS_E*.
 * @return a static string, never NULL; never fails; thread-safe. */
PS_API const char *ps_strerror(int code);

/* The symbolic name of `code`, e.g. "PS_EFORMAT"; "PS_OK" for 0 and
 * "PS_EUNKNOWN" for a code that is no PS_E*.
 * @return a static string, never NULL; never fails; thread-safe. */
PS_API const char *ps_err_name(int code);

/* The library's version, "MAJOR.MINOR.PATCH" (PS_VERSION_STRING of the
 * library that is running, which may differ from the header's).
 * @return a static string, never NULL; thread-safe. */
PS_API const char *ps_version_string(void);

/* Writes one "name version" line for every linked dependency (LMDB, zstd,
 * utf8proc with its Unicode version, jansson, PCRE2, xxHash, zlib, nettle,
 * CUDA) into buf[0..n), NUL-terminated, cut short when it does not fit (as
 * snprintf). `buf` may be NULL when n is 0, to ask for the length.
 * @return the length of the whole text (excluding the NUL: the text was
 *         cut when it is >= n), or PS_EINVAL when formatting failed.
 * Thread-safe. */
PS_API int ps_dependency_versions(char *buf, size_t n);

/* Resets `err` to the no-error state (code 0, empty message). `err` may be
 * NULL (then nothing happens). A function that fails fills the ps_error it
 * was given; one that succeeds does not clear it, so clear it before a
 * call when you read it after one that may not have failed. */
PS_API void ps_error_clear(ps_error *err);

#ifdef __cplusplus
}
#endif

#endif /* PAIRSHARD_COMMON_H */
