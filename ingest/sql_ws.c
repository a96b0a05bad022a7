/*
 * Whitespace folding for SQL that never changes what the query means:
 * runs of whitespace become one space and the ends are trimmed, except
 *   - inside '...' string literals ('' escapes; \' too when asked),
 *   - inside "..." `...` [...] quoted identifiers and $tag$...$tag$ strings,
 *   - the newline that ends a -- comment, which is kept (folding it into a
 *     space would comment out the rest of the query).
 * Quotes inside comments do not open literals.
 */
#include "ingest/ingest.h"

#include <string.h>

typedef enum {
    ST_NORMAL,
    ST_QUOTED,        /* ' " ` or [ ... ] : ends at `close`, doubled = escape */
    ST_DOLLAR,        /* $tag$ ... $tag$ */
    ST_LINE_COMMENT,  /* -- ... newline */
    ST_BLOCK_COMMENT  /* / * ... * / */
} state;

typedef enum { PEND_NONE, PEND_SPACE, PEND_NEWLINE } pending;

static bool is_ident_byte(unsigned char c)
{
    return c == '_' || c == '$' || c >= 0x80 || (c >= '0' && c <= '9') ||
           ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
}

/* If s[0] == '$' starts a dollar-quote delimiter ($$ or $tag$), returns
 * its length, else 0. A tag is an identifier that does not start with a
 * digit ($1 is a parameter). */
static size_t dollar_delim(const unsigned char *s, size_t n)
{
    size_t i = 1;
    if (i < n && s[i] >= '0' && s[i] <= '9')
        return 0;
    while (i < n && s[i] != '$' && is_ident_byte(s[i]))
        i++;
    return (i < n && s[i] == '$') ? i + 1 : 0;
}

/* Bytes that need a look in ST_NORMAL: whitespace, quotes, comment and
 * dollar-quote starters (' " ` [ - / $), and non-ASCII bytes (possible
 * Unicode spaces). Every other byte is copied in bulk. */
static const unsigned char SPECIAL[256] = {
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 0, 1, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0,
    1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
};
static inline bool special(unsigned char c) { return SPECIAL[c]; }

int ps_sql_fold_whitespace(const char *in, size_t n, bool backslash_escapes, ps_buf *out,
                           bool *unterminated)
{
    ps_buf_reset(out);
    int rc = ps_buf_reserve(out, n);
    if (rc)
        return rc;
    const unsigned char *p = (const unsigned char *)in;
    char *o = out->data;
    size_t len = 0, i = 0;
    state st = ST_NORMAL;
    pending pend = PEND_NONE;
    unsigned char close = 0;     /* ST_QUOTED: closing quote */
    const char *tag = NULL;      /* ST_DOLLAR: the delimiter, in the input */
    size_t tag_len = 0;

    while (i < n) {
        unsigned char c = p[i];
        if (st == ST_NORMAL && pend == PEND_NONE && !special(c)) {
            /* A single space between two plain bytes stays as it is, so it
             * is copied with them rather than folded. */
            size_t j = i + 1;
            while (j < n && (!special(p[j]) ||
                             (p[j] == ' ' && j + 1 < n && !special(p[j + 1]))))
                j++;
            memcpy(o + len, p + i, j - i);
            len += j - i;
            i = j;
            continue;
        }
        if (st == ST_QUOTED) {
            o[len++] = (char)c;
            i++;
            if (c == close) {
                if (i < n && p[i] == close) /* doubled: an escaped quote */
                    o[len++] = (char)p[i++];
                else
                    st = ST_NORMAL;
            } else if (c == '\\' && backslash_escapes && close == '\'' && i < n) {
                o[len++] = (char)p[i++];
            }
            continue;
        }
        if (st == ST_DOLLAR) {
            if (c == '$' && n - i >= tag_len && memcmp(p + i, tag, tag_len) == 0) {
                memcpy(o + len, p + i, tag_len);
                len += tag_len;
                i += tag_len;
                st = ST_NORMAL;
            } else {
                o[len++] = (char)c;
                i++;
            }
            continue;
        }
        /* NORMAL and the comments fold whitespace. */
        if (st == ST_LINE_COMMENT && (c == '\n' || c == '\r')) {
            st = ST_NORMAL;
            pend = PEND_NEWLINE;
            i++;
            continue;
        }
        int k = ps_space_len(p + i, n - i);
        if (k) {
            if (len > 0 && pend == PEND_NONE)
                pend = PEND_SPACE;
            i += (size_t)k;
            continue;
        }
        if (pend != PEND_NONE) {
            o[len++] = pend == PEND_NEWLINE ? '\n' : ' ';
            pend = PEND_NONE;
        }
        if (st == ST_LINE_COMMENT) {
            o[len++] = (char)p[i++];
            continue;
        }
        if (st == ST_BLOCK_COMMENT) {
            if (c == '*' && i + 1 < n && p[i + 1] == '/') {
                o[len++] = '*';
                o[len++] = '/';
                i += 2;
                st = ST_NORMAL;
            } else {
                o[len++] = (char)p[i++];
            }
            continue;
        }
        /* ST_NORMAL, visible character. */
        if (c == '\'' || c == '"' || c == '`' || c == '[') {
            st = ST_QUOTED;
            close = c == '[' ? ']' : c;
            o[len++] = (char)p[i++];
            continue;
        }
        if (c == '-' && i + 1 < n && p[i + 1] == '-') {
            st = ST_LINE_COMMENT;
            o[len++] = '-';
            o[len++] = '-';
            i += 2;
            continue;
        }
        if (c == '/' && i + 1 < n && p[i + 1] == '*') {
            st = ST_BLOCK_COMMENT;
            o[len++] = '/';
            o[len++] = '*';
            i += 2;
            continue;
        }
        if (c == '$' && (len == 0 || !is_ident_byte((unsigned char)o[len - 1]))) {
            size_t d = dollar_delim(p + i, n - i);
            if (d) {
                st = ST_DOLLAR;
                tag = in + i;
                tag_len = d;
                memcpy(o + len, p + i, d);
                len += d;
                i += d;
                continue;
            }
        }
        o[len++] = (char)p[i++];
    }
    o[len] = '\0';
    out->len = len;
    if (unterminated)
        *unterminated = st == ST_QUOTED || st == ST_DOLLAR || st == ST_BLOCK_COMMENT;
    return PS_OK;
}
