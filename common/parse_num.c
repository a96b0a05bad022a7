/* Strict decimal parsing for flags and environment variables: see parse_num.h. */
#include "common/parse_num.h"

#include "common/ps_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

/* Accumulates the digits of `s` (all of it must be digits) into *mag;
 * `overflow` is set when the value does not fit in 64 bits. */
static ps_num_status digits(const char *s, uint64_t *mag, int *overflow)
{
    if (!*s)
        return PS_NUM_JUNK;
    uint64_t v = 0;
    *overflow = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return PS_NUM_JUNK;
        unsigned d = (unsigned)(*s - '0');
        if (v > (UINT64_MAX - d) / 10)
            *overflow = 1;
        else
            v = v * 10 + d;
    }
    *mag = v;
    return PS_NUM_OK;
}

ps_num_status ps_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
    if (!s || !*s)
        return PS_NUM_EMPTY;
    uint64_t v;
    int overflow;
    if (*s == '-')
        return digits(s + 1, &v, &overflow) == PS_NUM_OK ? PS_NUM_NEGATIVE : PS_NUM_JUNK;
    if (digits(s, &v, &overflow))
        return PS_NUM_JUNK;
    if (overflow || v < min || v > max)
        return PS_NUM_RANGE;
    *out = v;
    return PS_NUM_OK;
}

ps_num_status ps_parse_i64(const char *s, int64_t min, int64_t max, int64_t *out)
{
    if (!s || !*s)
        return PS_NUM_EMPTY;
    int neg = *s == '-';
    uint64_t mag;
    int overflow;
    if (digits(s + neg, &mag, &overflow))
        return PS_NUM_JUNK;
    /* -2^63 is the one magnitude that fits negative but not positive. */
    if (overflow || mag > (uint64_t)INT64_MAX + (uint64_t)neg)
        return PS_NUM_RANGE;
    int64_t v = neg ? (mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag) : (int64_t)mag;
    if (v < min || v > max)
        return PS_NUM_RANGE;
    *out = v;
    return PS_NUM_OK;
}

static const char *reason(ps_num_status st)
{
    switch (st) {
    case PS_NUM_EMPTY: return "is empty, not a whole number";
    case PS_NUM_NEGATIVE: return "is negative, not a whole number";
    case PS_NUM_RANGE: return "is out of range";
    default: return "is not a whole number";
    }
}

/* The user's text, quotable on one line: control bytes as \xHH, at most
 * ~60 bytes. */
static void shown(char *buf, size_t cap, const char *s)
{
    size_t o = 0;
    for (; s && *s && o + 5 < cap && o < 60; s++) {
        unsigned char c = (unsigned char)*s;
        o += (size_t)snprintf(buf + o, cap - o, c < 0x20 || c == 0x7f ? "\\x%02x" : "%c", c);
    }
    if (s && *s && o + 4 < cap)
        o += (size_t)snprintf(buf + o, cap - o, "...");
    buf[o < cap ? o : cap - 1] = '\0';
}

void ps_num_explain_u64(char *buf, size_t cap, ps_num_status st, const char *s, uint64_t min,
                        uint64_t max)
{
    char text[80];
    shown(text, sizeof text, s);
    snprintf(buf, cap, "'%s' %s (%" PRIu64 "..%" PRIu64 ")", text, reason(st), min, max);
}

void ps_num_explain_i64(char *buf, size_t cap, ps_num_status st, const char *s, int64_t min,
                        int64_t max)
{
    char text[80];
    shown(text, sizeof text, s);
    snprintf(buf, cap, "'%s' %s (%" PRId64 "..%" PRId64 ")", text, reason(st), min, max);
}

int ps_env_i64(const char *who, const char *name, int64_t min, int64_t max, int64_t dflt,
               int64_t *out, int *was_set, ps_error *err)
{
    const char *s = getenv(name);
    *was_set = 0;
    if (!s) {
        *out = dflt;
        return PS_OK;
    }
    ps_num_status st = ps_parse_i64(s, min, max, out);
    if (st == PS_NUM_OK) {
        *was_set = 1;
        return PS_OK;
    }
    char why[200];
    ps_num_explain_i64(why, sizeof why, st, s, min, max);
    return ps_error_set(err, PS_EUSAGE, "%s: %s=%s", who, name, why);
}
