/*
 * ingest/json_fast.h — a fast, strict, allocation-free extractor of the
 * top-level members of ONE flat JSON object, used before jansson.
 *
 * jansson stays the authority. The fast path either produces exactly what
 * json_loadb(data, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &err)
 * (jansson 2.14, no JSON_DECODE_ANY) followed by json_object_get() would
 * give, or it DEFERS and the caller must parse the record with jansson.
 * It never accepts a record jansson rejects, and never yields a value that
 * differs from jansson's.
 *
 * What it handles: a top-level object whose member values are all scalars
 * (string, number, true, false, null), with keys free of backslash escapes.
 * Everything else defers: any nested object or array value (even one that
 * is not asked for), any syntax error, a key containing an escape, a
 * duplicate key, a number jansson rejects (an integer outside int64, a real
 * that overflows a double) or a real longer than 127 characters, a lone or
 * invalid surrogate escape, a raw control byte (< 0x20) or invalid UTF-8 in
 * a string, a top-level value that is not an object, trailing
 * non-whitespace, more than PS_JSON_FAST_MAX_KEYS members, and so on. Whitespace is JSON's (and
 * jansson's): space, \t, \n, \r, allowed before, between and after tokens.
 */
#ifndef PS_INGEST_JSON_FAST_H
#define PS_INGEST_JSON_FAST_H

#include "common/ps_internal.h"

#include <stddef.h>
#include <stdint.h>

/* Records with more members than this defer (duplicate detection uses a
 * fixed, stack-allocated table). */
#define PS_JSON_FAST_MAX_KEYS 64

typedef enum {
    PS_JV_ABSENT = 0, /* no member with that name */
    PS_JV_STRING,     /* json_is_string */
    PS_JV_NULL,       /* json_is_null */
    PS_JV_TRUE,       /* json_is_true */
    PS_JV_FALSE,      /* json_is_false */
    PS_JV_INTEGER,    /* json_is_integer: no '.', 'e' or 'E' in the text */
    PS_JV_REAL        /* json_is_real */
} ps_jv_kind;

typedef struct ps_json_value {
    ps_jv_kind kind;
    /* STRING: the fully unescaped value (\uXXXX and surrogate pairs as
     *   UTF-8, \u0000 as a NUL byte); it may contain NUL bytes, exactly
     *   like json_string_value()/json_string_length(). Points into `data`
     *   when the value has no escapes (then NOT NUL-terminated), else into
     *   scratch->data (NUL-terminated there, but rely on `len`).
     * INTEGER, REAL: the raw number text in `data` (not NUL-terminated).
     * Other kinds: NULL and 0. */
    const char *str;
    size_t len;
    int64_t integer; /* INTEGER: equals json_integer_value() */
    double real;     /* REAL: equals json_real_value() (same strtod, same
                      * locale handling as jansson) */
} ps_json_value;

/*! ps_json_fast_extract() :
 *  Parses data[0..len) as one JSON record and extracts the top-level
 *  members names[0..n) (plain NUL-terminated byte strings, compared
 *  byte-for-byte with the record's keys, like json_object_get(); a name may
 *  appear more than once in `names`, each copy is filled). Dotted paths are
 *  NOT resolved: a name is only ever matched literally.
 *  `data` need not be NUL-terminated; nothing outside [0, len) is read.
 *  `scratch` (caller-owned, initialised with ps_buf_init) is reset by every
 *  call and holds the unescaped strings; it is grown at most once, to at
 *  least len + 1 bytes. It may be NULL: then a requested string value that
 *  contains escapes makes the call defer.
 *  out[0..n) is always written (all ABSENT unless the call returns 1).
 *
 * @return : 1 : the record is a JSON object that jansson accepts; out[i]
 *               describes member names[i] (PS_JV_ABSENT if not present).
 *               The pointers in out[] stay valid while `data` lives and
 *               `scratch` is not modified or freed.
 *           0 : DEFER: not certain to match jansson (or certainly invalid);
 *               parse the record with jansson instead. out[] is all ABSENT.
 *           < 0 : a PS_E* code: PS_ENOMEM (growing scratch failed) or
 *               PS_EINVAL (NULL data with len > 0, or NULL names or out
 *               with n > 0; names[i] must not be NULL).
 *  Tell them apart with `rc > 0`, `rc == 0`, `rc < 0`.
 *  Thread-safe as long as `out` and `scratch` are not shared (REAL values
 *  read the current locale's decimal point, as jansson does). */
int ps_json_fast_extract(const char *data, size_t len, const char *const *names, size_t n,
                         ps_json_value *out, ps_buf *scratch);

#endif /* PS_INGEST_JSON_FAST_H */
