/*
 * The keys leakage compares (validate/leakage.h): a question folded for
 * exact and near comparison (utf8proc: NFKC, full case folding, Unicode
 * categories), a SQL query folded outside its literals, and its template.
 */
#include "validate/leakage.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

static bool all_ascii(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] >= 0x80)
            return false;
    return true;
}

static bool is_space(int32_t cp)
{
    if (cp < 0x80)
        return cp == ' ' || (cp >= 0x09 && cp <= 0x0D);
    utf8proc_category_t c = utf8proc_category(cp);
    return c == UTF8PROC_CATEGORY_ZS || c == UTF8PROC_CATEGORY_ZL ||
           c == UTF8PROC_CATEGORY_ZP || cp == 0x85;
}

static bool is_punct(int32_t cp)
{
    utf8proc_category_t c = utf8proc_category(cp);
    return c >= UTF8PROC_CATEGORY_PC && c <= UTF8PROC_CATEGORY_PO;
}

/* NFKC + case folding + punctuation removed; whitespace removed (keep_space
 * false) or folded to one U+0020 between words (true). */
static int fold_question(const char *s, size_t n, bool keep_space, ps_buf *out)
{
    ps_buf_reset(out);
    utf8proc_uint8_t *mapped = NULL;
    const utf8proc_uint8_t *p = (const utf8proc_uint8_t *)s;
    utf8proc_ssize_t len = (utf8proc_ssize_t)n;
    bool ascii = all_ascii(s, n);
    if (!ascii) {
        len = utf8proc_map(p, len, &mapped, UTF8PROC_STABLE | UTF8PROC_COMPOSE |
                                                UTF8PROC_COMPAT | UTF8PROC_CASEFOLD);
        if (len < 0) { /* invalid UTF-8 (the cleaner lets none through): compare the bytes */
            free(mapped);
            mapped = NULL;
            len = (utf8proc_ssize_t)n;
            ascii = true;
        } else {
            p = mapped;
        }
    }
    int rc = ps_buf_reserve(out, (size_t)len);
    bool pending_space = false;
    for (utf8proc_ssize_t i = 0; !rc && i < len;) {
        int32_t cp = p[i];
        utf8proc_ssize_t step = 1;
        if (!ascii && cp >= 0x80) {
            step = utf8proc_iterate(p + i, len - i, &cp);
            if (step <= 0) {
                cp = p[i];
                step = 1;
            }
        }
        if (is_space(cp)) {
            pending_space = keep_space && out->len > 0;
        } else if (!is_punct(cp)) {
            if (pending_space)
                rc = ps_buf_putc(out, ' ');
            pending_space = false;
            if (!rc && cp < 0x80)
                rc = ps_buf_putc(out, (char)tolower(cp));
            else if (!rc)
                rc = ps_buf_append(out, p + i, (size_t)step);
        }
        i += step;
    }
    free(mapped);
    return rc;
}

int ps_leak_question_key(const char *s, size_t n, ps_buf *out)
{
    return fold_question(s, n, false, out);
}

int ps_leak_near_text(const char *s, size_t n, ps_buf *out)
{
    return fold_question(s, n, true, out);
}

/* The end of the literal opened by s[i] (quote q; a doubled quote is one
 * quote character), or n when it is not closed. */
static size_t literal_end(const char *s, size_t n, size_t i, char q)
{
    for (size_t j = i + 1; j < n; j++) {
        if (s[j] != q)
            continue;
        if (j + 1 < n && s[j + 1] == q) {
            j++;
            continue;
        }
        return j + 1;
    }
    return n;
}

static bool ident_char(unsigned char c)
{
    return isalnum(c) || c == '_' || c >= 0x80;
}

/* A number starting at s[i] (digits, one '.', an exponent) not inside an
 * identifier: its end, else i. */
static size_t number_end(const char *s, size_t n, size_t i, bool after_ident)
{
    if (after_ident)
        return i;
    size_t j = i;
    bool dot = false;
    while (j < n && (isdigit((unsigned char)s[j]) || (s[j] == '.' && !dot))) {
        dot = dot || s[j] == '.';
        j++;
    }
    if (j == i || (j == i + 1 && s[i] == '.'))
        return i;
    if (j < n && (s[j] == 'e' || s[j] == 'E')) {
        size_t k = j + 1;
        if (k < n && (s[k] == '+' || s[k] == '-'))
            k++;
        if (k < n && isdigit((unsigned char)s[k])) {
            while (k < n && isdigit((unsigned char)s[k]))
                k++;
            j = k;
        }
    }
    return j < n && ident_char((unsigned char)s[j]) && s[j] != '.' ? i : j;
}

/* The SQL key, literals and numbers masked when `mask`. */
static int fold_sql(const char *s, size_t n, bool mask, ps_buf *out)
{
    ps_buf_reset(out);
    int rc = ps_buf_reserve(out, n);
    bool space = false;
    for (size_t i = 0; !rc && i < n;) {
        unsigned char c = (unsigned char)s[i];
        if (isspace(c)) {
            space = out->len > 0;
            i++;
            continue;
        }
        if (space)
            rc = ps_buf_putc(out, ' ');
        space = false;
        size_t end = i + 1;
        if (c == '\'' || c == '"') {
            end = literal_end(s, n, i, (char)c);
            rc = rc ? rc : mask ? ps_buf_putc(out, '?') : ps_buf_append(out, s + i, end - i);
        } else if (mask && (end = number_end(s, n, i, i > 0 && ident_char((unsigned char)s[i - 1]))) > i) {
            rc = rc ? rc : ps_buf_putc(out, '?');
        } else {
            end = i + 1;
            rc = rc ? rc : ps_buf_putc(out, (char)(c < 0x80 ? tolower(c) : c));
        }
        i = end;
    }
    /* a trailing ';' (and the spaces before it) says nothing */
    while (!rc && out->len > 0 && (out->data[out->len - 1] == ';' || out->data[out->len - 1] == ' '))
        out->data[--out->len] = '\0';
    return rc;
}

int ps_leak_sql_key(const char *s, size_t n, ps_buf *out)
{
    return fold_sql(s, n, false, out);
}

int ps_leak_sql_template(const char *s, size_t n, ps_buf *out)
{
    return fold_sql(s, n, true, out);
}
