/*
 * ingest/json_fast.c — fast path for flat JSON records; see json_fast.h.
 *
 * Grammar accepted (anything else defers):
 *
 *   record  = ws '{' ws [ member *( ws ',' ws member ) ws ] '}' ws END
 *   member  = string ws ':' ws scalar          (key without backslashes)
 *   scalar  = string | number | "true" | "false" | "null"
 *   number  = [ '-' ] ( '0' | [1-9][0-9]* ) [ '.' [0-9]+ ] [ [eE] [+-]? [0-9]+ ]
 *   ws      = *( ' ' | '\t' | '\n' | '\r' )
 *
 * This is exactly RFC 8259 restricted to flat objects; jansson 2.14
 * accepts the same language (its lexer is strict: no leading zeros, no
 * "1.", no ".5", no trailing commas, no BOM, whitespace as above, strict
 * UTF-8 with no surrogates / overlongs / > U+10FFFF), plus these checks
 * that jansson makes and we mirror:
 *   - duplicate keys are rejected (JSON_REJECT_DUPLICATES), byte-wise;
 *   - an integer (no '.', 'e', 'E') must fit int64 (strtoll without ERANGE);
 *   - a real must not overflow (strtod returning +-HUGE_VAL with ERANGE);
 *     underflow (1e-400) is accepted and gives strtod's value;
 *   - \uD800-\uDBFF must be followed by \uDC00-\uDFFF; a lone low or high
 *     surrogate is an error;
 *   - \u0000 is allowed in values (JSON_ALLOW_NUL); keys with escapes defer.
 */
#include "common/unicode.h"
#include "ingest/json_fast.h"

#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define PS_JF_SWAR 1
#else
#define PS_JF_SWAR 0
#endif

/* Reals longer than this defer (they are converted in a stack buffer). */
#define PS_JF_REAL_MAX 127

static inline bool is_ws(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static inline const char *skip_ws(const char *p, const char *end)
{
    while (p < end && is_ws((unsigned char)*p))
        p++;
    return p;
}

/* Length (2-4) of the valid UTF-8 sequence at p (p[0] >= 0x80), 0 if the
 * sequence is invalid or truncated. Strict: no overlongs, no surrogates,
 * nothing above U+10FFFF — the same set jansson's utf8_check_full accepts. */
static inline size_t utf8_len(const unsigned char *p, const unsigned char *end)
{
    unsigned char c = p[0];
    size_t avail = (size_t)(end - p);
    if (c >= 0xC2 && c <= 0xDF) {
        if (avail < 2 || (p[1] & 0xC0) != 0x80)
            return 0;
        return 2;
    }
    if (c >= 0xE0 && c <= 0xEF) {
        if (avail < 3)
            return 0;
        unsigned char lo = 0x80, hi = 0xBF;
        if (c == 0xE0)
            lo = 0xA0; /* overlong */
        else if (c == 0xED)
            hi = 0x9F; /* surrogates */
        if (p[1] < lo || p[1] > hi || (p[2] & 0xC0) != 0x80)
            return 0;
        return 3;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        if (avail < 4)
            return 0;
        unsigned char lo = 0x80, hi = 0xBF;
        if (c == 0xF0)
            lo = 0x90; /* overlong */
        else if (c == 0xF4)
            hi = 0x8F; /* > U+10FFFF */
        if (p[1] < lo || p[1] > hi || (p[2] & 0xC0) != 0x80 || (p[3] & 0xC0) != 0x80)
            return 0;
        return 4;
    }
    return 0; /* continuation byte, C0, C1, F5..FF */
}

#if PS_JF_SWAR
#define ONES UINT64_C(0x0101010101010101)
#define HIGHS UINT64_C(0x8080808080808080)
/* High bit set in each byte that is '"', '\\', < 0x20 or >= 0x80. Only the
 * lowest set bit is exact (borrows may flag bytes above it), which is all
 * the caller uses. */
static inline uint64_t special_bytes(uint64_t w)
{
    uint64_t q = w ^ (ONES * '"');
    uint64_t b = w ^ (ONES * '\\');
    uint64_t m = ((q - ONES) & ~q) | ((b - ONES) & ~b) | ((w - ONES * 0x20) & ~w) | w;
    return m & HIGHS;
}
#endif

/* Scans string content from p (after '"' or after an escape) to the next
 * '"' or '\\', validating that there are no control bytes and that
 * non-ASCII bytes are valid UTF-8. Returns a pointer to that '"' or '\\',
 * or NULL (invalid, or no terminator before end). */
static const char *scan_plain(const char *p, const char *end)
{
    for (;;) {
#if PS_JF_SWAR
        while (end - p >= 8) {
            uint64_t w;
            memcpy(&w, p, 8);
            uint64_t m = special_bytes(w);
            if (m) {
                p += (unsigned)__builtin_ctzll(m) >> 3;
                goto special;
            }
            p += 8;
        }
#endif
        for (;;) {
            if (p >= end)
                return NULL;
            unsigned char c = (unsigned char)*p;
            if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80)
                break;
            p++;
        }
#if PS_JF_SWAR
    special:;
#endif
        unsigned char c = (unsigned char)*p;
        if (c == '"' || c == '\\')
            return p;
        if (c < 0x20)
            return NULL;
        size_t k = utf8_len((const unsigned char *)p, (const unsigned char *)end);
        if (!k)
            return NULL;
        p += k;
    }
}

static inline int hexval(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c |= 0x20;
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* p points at 'u'; reads 4 hex digits. Returns the value or -1. */
static inline int32_t hex4(const char *p, const char *end)
{
    if (end - p < 5)
        return -1;
    int32_t v = 0;
    for (int i = 1; i <= 4; i++) {
        int h = hexval((unsigned char)p[i]);
        if (h < 0)
            return -1;
        v = (v << 4) | h;
    }
    return v;
}

/* Processes escapes starting at the backslash at q, through the closing
 * quote. When d is not NULL, the decoded bytes are written there (the
 * caller has already copied the unescaped prefix) and *dend receives the
 * end of the output. Returns a pointer to the closing '"' or NULL. */
static const char *scan_escaped(const char *q, const char *end, char *d, char **dend)
{
    for (;;) {
        /* q is at a backslash */
        q++;
        if (q >= end)
            return NULL;
        char c;
        switch (*q) {
        case '"': c = '"'; break;
        case '\\': c = '\\'; break;
        case '/': c = '/'; break;
        case 'b': c = '\b'; break;
        case 'f': c = '\f'; break;
        case 'n': c = '\n'; break;
        case 'r': c = '\r'; break;
        case 't': c = '\t'; break;
        case 'u': {
            int32_t v = hex4(q, end);
            if (v < 0)
                return NULL;
            q += 5;
            uint32_t cp = (uint32_t)v;
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                if (end - q < 2 || q[0] != '\\' || q[1] != 'u')
                    return NULL; /* jansson: "invalid Unicode '\uD8xx'" */
                int32_t v2 = hex4(q + 1, end);
                if (v2 < 0xDC00 || v2 > 0xDFFF)
                    return NULL;
                q += 6;
                cp = (((cp - 0xD800) << 10) | ((uint32_t)v2 - 0xDC00)) + 0x10000;
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                return NULL; /* lone low surrogate */
            }
            if (d)
                d += ps_utf8_encode(cp, d);
            goto plain;
        }
        default:
            return NULL;
        }
        if (d)
            *d++ = c;
        q++;
    plain:;
        const char *r = scan_plain(q, end);
        if (!r)
            return NULL;
        if (d) {
            memcpy(d, q, (size_t)(r - q));
            d += r - q;
        }
        q = r;
        if (*q == '"') {
            if (dend)
                *dend = d;
            return q;
        }
    }
}

/* jansson's conversion of a real: '.' replaced by the locale's decimal
 * point, then strtod. Returns false if it cannot be done identically. */
static bool real_value(const char *s, size_t n, double *out)
{
    char buf[PS_JF_REAL_MAX + 1];
    if (n > PS_JF_REAL_MAX)
        return false;
    memcpy(buf, s, n);
    buf[n] = '\0';
    const struct lconv *lc = localeconv();
    const char *dp = lc ? lc->decimal_point : ".";
    if (!dp || !dp[0] || dp[1])
        return false;
    if (dp[0] != '.') {
        char *dot = memchr(buf, '.', n);
        if (dot)
            *dot = dp[0];
    }
    char *e;
    errno = 0;
    double v = strtod(buf, &e);
    if (e != buf + n)
        return false;
    if ((v == HUGE_VAL || v == -HUGE_VAL) && errno == ERANGE)
        return false;
    *out = v;
    return true;
}

/* Scans a number starting at p (a '-' or a digit). Returns the end, or
 * NULL when the text is not a number jansson accepts (or might not be).
 * Sets *is_real; for integers stores the value in *ival. */
static const char *scan_number(const char *p, const char *end, bool *is_real, int64_t *ival)
{
    const char *s = p;
    bool neg = false;
    if (*p == '-') {
        neg = true;
        p++;
    }
    if (p >= end)
        return NULL;
    const char *ip = p; /* integer digits */
    if (*p == '0') {
        p++;
    } else if (*p >= '1' && *p <= '9') {
        do
            p++;
        while (p < end && *p >= '0' && *p <= '9');
    } else {
        return NULL;
    }
    size_t nint = (size_t)(p - ip);
    const char *fp = NULL;
    size_t nfrac = 0;
    if (p < end && *p == '.') {
        p++;
        fp = p;
        while (p < end && *p >= '0' && *p <= '9')
            p++;
        nfrac = (size_t)(p - fp);
        if (!nfrac)
            return NULL;
    }
    bool has_exp = false;
    int64_t ex = 0;
    if (p < end && (*p == 'e' || *p == 'E')) {
        has_exp = true;
        p++;
        bool eneg = false;
        if (p < end && (*p == '+' || *p == '-')) {
            eneg = *p == '-';
            p++;
        }
        const char *ep = p;
        while (p < end && *p >= '0' && *p <= '9') {
            if (ex < 1000000000)
                ex = ex * 10 + (*p - '0'); /* saturates: only the magnitude matters */
            p++;
        }
        if (p == ep)
            return NULL;
        if (eneg)
            ex = -ex;
    }
    if (!fp && !has_exp) {
        /* Integer: must fit int64 exactly as strtoll decides. */
        *is_real = false;
        if (nint > 19)
            return NULL;
        uint64_t u = 0;
        for (size_t i = 0; i < nint; i++)
            u = u * 10 + (uint64_t)(ip[i] - '0');
        uint64_t lim = neg ? (UINT64_C(1) << 63) : (UINT64_C(1) << 63) - 1;
        if (u > lim)
            return NULL; /* "too big integer" / "too big negative integer" */
        if (neg)
            *ival = u == (UINT64_C(1) << 63) ? INT64_MIN : -(int64_t)u;
        else
            *ival = (int64_t)u;
        return p;
    }
    /* Real: defer unless it certainly does not overflow. Find the decimal
     * exponent E of the leading nonzero digit (value in [10^E, 10^(E+1))).
     * E <= 307 means value < 10^308 < DBL_MAX even after rounding. */
    *is_real = true;
    if (p - s >= PS_JF_REAL_MAX)
        return NULL; /* too long to convert without allocating: defer */
    int64_t lead;
    size_t i = 0;
    while (i < nint && ip[i] == '0')
        i++;
    if (i < nint) {
        lead = (int64_t)(nint - i) - 1;
    } else {
        size_t j = 0;
        while (j < nfrac && fp[j] == '0')
            j++;
        if (j == nfrac)
            return p; /* zero: never overflows */
        lead = -(int64_t)j - 1;
    }
    if (lead + ex >= 309)
        return NULL; /* >= 1e309 > DBL_MAX: overflow */
    if (lead + ex == 308) {
        double d; /* [1e308, 1e309): ask strtod, as jansson does */
        if (!real_value(s, (size_t)(p - s), &d))
            return NULL;
    }
    return p;
}

static inline bool name_eq(const char *name, const char *key, size_t klen)
{
    return name[0] == (klen ? key[0] : '\0') && strncmp(name, key, klen) == 0 &&
           name[klen] == '\0';
}

static void clear_out(ps_json_value *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        out[i].kind = PS_JV_ABSENT;
        out[i].str = NULL;
        out[i].len = 0;
        out[i].integer = 0;
        out[i].real = 0.0;
    }
}

typedef struct key_ref {
    const char *p;
    size_t len;
} key_ref;

/* The scanner's state machine, kept whole although it runs past the house
 * limit of 150 lines (scripts/long-functions.py lists it as the exception):
 * it is the ingest hot loop, and split into functions its position, key
 * table and scratch would travel through calls on every value. */
static int parse(const char *data, size_t len, const char *const *names, size_t n,
                 ps_json_value *out, ps_buf *scratch)
{
    const char *p = data, *end = data + len;
    key_ref keys[PS_JSON_FAST_MAX_KEYS];
    size_t nkeys = 0;
    bool reserved = false;

    p = skip_ws(p, end);
    if (p >= end || *p != '{')
        return 0;
    p = skip_ws(p + 1, end);
    if (p >= end)
        return 0;
    if (*p == '}') {
        p++;
        goto done;
    }
    for (;;) {
        /* key */
        if (*p != '"')
            return 0;
        const char *k = p + 1;
        const char *ke = scan_plain(k, end);
        if (!ke || *ke != '"')
            return 0; /* invalid, or an escape in the key: defer */
        size_t klen = (size_t)(ke - k);
        for (size_t i = 0; i < nkeys; i++)
            if (keys[i].len == klen && (klen == 0 || (keys[i].p[0] == k[0] &&
                                                      memcmp(keys[i].p, k, klen) == 0)))
                return 0; /* duplicate key */
        if (nkeys == PS_JSON_FAST_MAX_KEYS)
            return 0;
        keys[nkeys].p = k;
        keys[nkeys].len = klen;
        nkeys++;

        size_t want = n;
        for (size_t i = 0; i < n; i++)
            if (name_eq(names[i], k, klen)) {
                want = i;
                break;
            }

        p = skip_ws(ke + 1, end);
        if (p >= end || *p != ':')
            return 0;
        p = skip_ws(p + 1, end);
        if (p >= end)
            return 0;

        /* value */
        ps_json_value v = {PS_JV_ABSENT, NULL, 0, 0, 0.0};
        switch (*p) {
        case '"': {
            const char *s = p + 1;
            const char *q = scan_plain(s, end);
            if (!q)
                return 0;
            if (*q == '"') {
                v.kind = PS_JV_STRING;
                v.str = s;
                v.len = (size_t)(q - s);
                p = q + 1;
                break;
            }
            if (want == n) {
                q = scan_escaped(q, end, NULL, NULL);
                if (!q)
                    return 0;
                p = q + 1;
                break;
            }
            if (!scratch)
                return 0;
            if (!reserved) {
                /* All decoded values (each + NUL) fit in len + 1 bytes:
                 * decoding never lengthens and the strings are disjoint. */
                ps_buf_reset(scratch);
                int rc = ps_buf_reserve(scratch, len);
                if (rc)
                    return rc;
                reserved = true;
            }
            char *d0 = scratch->data + scratch->len, *d = d0;
            memcpy(d, s, (size_t)(q - s));
            d += q - s;
            q = scan_escaped(q, end, d, &d);
            if (!q)
                return 0;
            *d = '\0';
            scratch->len += (size_t)(d - d0) + 1;
            v.kind = PS_JV_STRING;
            v.str = d0;
            v.len = (size_t)(d - d0);
            p = q + 1;
            break;
        }
        case 't':
            if (end - p < 4 || memcmp(p, "true", 4) != 0)
                return 0;
            v.kind = PS_JV_TRUE;
            p += 4;
            break;
        case 'f':
            if (end - p < 5 || memcmp(p, "false", 5) != 0)
                return 0;
            v.kind = PS_JV_FALSE;
            p += 5;
            break;
        case 'n':
            if (end - p < 4 || memcmp(p, "null", 4) != 0)
                return 0;
            v.kind = PS_JV_NULL;
            p += 4;
            break;
        case '-': case '0': case '1': case '2': case '3': case '4':
        case '5': case '6': case '7': case '8': case '9': {
            bool is_real = false;
            int64_t iv = 0;
            const char *ne = scan_number(p, end, &is_real, &iv);
            if (!ne)
                return 0;
            v.str = p;
            v.len = (size_t)(ne - p);
            if (is_real) {
                v.kind = PS_JV_REAL;
                if (want != n && !real_value(p, v.len, &v.real))
                    return 0;
            } else {
                v.kind = PS_JV_INTEGER;
                v.integer = iv;
            }
            p = ne;
            break;
        }
        default:
            return 0; /* '{', '[' (nested: defer) or an invalid token */
        }
        if (want != n) {
            out[want] = v;
            for (size_t i = want + 1; i < n; i++)
                if (name_eq(names[i], k, klen))
                    out[i] = v;
        }

        p = skip_ws(p, end);
        if (p >= end)
            return 0;
        if (*p == '}') {
            p++;
            break;
        }
        if (*p != ',')
            return 0;
        p = skip_ws(p + 1, end);
        if (p >= end)
            return 0;
    }
done:
    p = skip_ws(p, end);
    return p == end ? 1 : 0;
}

int ps_json_fast_extract(const char *data, size_t len, const char *const *names, size_t n,
                         ps_json_value *out, ps_buf *scratch)
{
    if (n && !out)
        return PS_EINVAL;
    clear_out(out, n);
    if ((!data && len) || (n && !names))
        return PS_EINVAL;
    if (scratch)
        ps_buf_reset(scratch);
    if (!data)
        return 0;
    int rc = parse(data, len, names, n, out, scratch);
    if (rc <= 0)
        clear_out(out, n);
    return rc;
}
