/* Error codes, their names and messages, and the ps_error helpers. */
#include "common/ps_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *ps_strerror(int code)
{
    switch (code) {
    case PS_OK:
        return "success";
#define PS_ERRNO_TEXT_(name, value, text)                                      \
    case PS_##name:                                                            \
        return text;
        PS_ERRNO_MAP(PS_ERRNO_TEXT_)
#undef PS_ERRNO_TEXT_
    default:
        return "unknown error";
    }
}

const char *ps_err_name(int code)
{
    switch (code) {
    case PS_OK:
        return "PS_OK";
#define PS_ERRNO_NAME_(name, value, text)                                      \
    case PS_##name:                                                            \
        return "PS_" #name;
        PS_ERRNO_MAP(PS_ERRNO_NAME_)
#undef PS_ERRNO_NAME_
    default:
        return "PS_EUNKNOWN";
    }
}

const char *ps_version_string(void) { return PS_VERSION_STRING; }

void ps_error_clear(ps_error *err)
{
    if (err) {
        err->code = 0;
        err->message[0] = '\0';
    }
}

int ps_errno_code(int e) { return e == ENOENT ? PS_ENOENT : PS_EIO; }

int ps_error_source(ps_error *err, int code, const char *source)
{
    if (err) {
        char was[sizeof err->message];
        memcpy(was, err->message, sizeof was);
        int n = snprintf(err->message, sizeof err->message, "source '%s': ", source);
        size_t at = n < 0 ? 0 : (size_t)n < sizeof err->message ? (size_t)n
                                                                : sizeof err->message - 1;
        size_t room = sizeof err->message - 1 - at, len = strnlen(was, sizeof was - 1);
        memcpy(err->message + at, was, len < room ? len : room);
        err->message[at + (len < room ? len : room)] = '\0';
        err->code = code;
    }
    return code;
}

int ps_error_set(ps_error *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        err->code = code;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
    }
    return code;
}
