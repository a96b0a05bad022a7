/*
 * Regular expressions of tokenizer.json files (Split pre-tokenizer, Replace
 * normalizer and decoder) through PCRE2. HF compiles them with Oniguruma;
 * with PCRE2_UTF | PCRE2_UCP the patterns models ship (GPT-2, Llama-3,
 * Qwen2: \p{L}, \p{N}, \s, (?i:...), lookahead) mean the same; the
 * conformance tests compare the two on every code point.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenize/hf.h"

#include <pcre2.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ps_tok_regex {
    pcre2_code *code;
};

/* One match-data block per thread (a regex is shared by threads). */
static pthread_key_t md_key;
static pthread_once_t md_once = PTHREAD_ONCE_INIT;
static int md_key_ok;

static void md_free(void *p) { pcre2_match_data_free(p); }
static void md_init(void) { md_key_ok = pthread_key_create(&md_key, md_free) == 0; }

static pcre2_match_data *thread_match_data(void)
{
    pthread_once(&md_once, md_init);
    if (!md_key_ok)
        return NULL;
    pcre2_match_data *md = pthread_getspecific(md_key);
    if (!md) {
        md = pcre2_match_data_create(1, NULL); /* only the whole match is used */
        if (md && pthread_setspecific(md_key, md)) {
            pcre2_match_data_free(md);
            md = NULL;
        }
    }
    return md;
}

/* Oniguruma's \s is the White_Space property; PCRE2's (with UCP) adds
 * U+180E MONGOLIAN VOWEL SEPARATOR (through \h). Rewrites \s and \S
 * outside character classes, and \s inside them, to White_Space spelled
 * out (\t-\r, U+0085 and \p{Z}, which is the rest in Unicode 14). A \S
 * inside a class is left to PCRE2. Returns a malloc'ed pattern or NULL. */
static char *onig_spaces(const char *p, size_t len, size_t *out_len)
{
    static const char ws[] = "\\t-\\r\\x{85}\\p{Z}";
    char *o = malloc(len * (sizeof ws + 3) + 1);
    if (!o)
        return NULL;
    size_t k = 0;
    bool in_class = false;
    for (size_t i = 0; i < len; i++) {
        char ch = p[i];
        if (ch == '\\' && i + 1 < len) {
            char nx = p[++i];
            if (nx == 's' || (nx == 'S' && !in_class)) {
                k += (size_t)sprintf(o + k, "%s%s%s", in_class ? "" : nx == 's' ? "[" : "[^", ws,
                                     in_class ? "" : "]");
            } else {
                o[k++] = ch;
                o[k++] = nx;
            }
            continue;
        }
        if (ch == '[' && !in_class) {
            in_class = true;
            o[k++] = ch;
            if (i + 1 < len && p[i + 1] == '^')
                o[k++] = p[++i];
            if (i + 1 < len && p[i + 1] == ']') /* a leading ] is literal */
                o[k++] = p[++i];
            continue;
        }
        if (ch == '[' && in_class && i + 1 < len && p[i + 1] == ':') { /* [:alpha:] */
            const char *e = memchr(p + i + 2, ']', len - i - 2);
            if (e) {
                size_t m = (size_t)(e - (p + i)) + 1;
                memcpy(o + k, p + i, m);
                k += m;
                i += m - 1;
                continue;
            }
        }
        if (ch == ']' && in_class)
            in_class = false;
        o[k++] = ch;
    }
    o[k] = 0;
    *out_len = k;
    return o;
}

int ps_tok_regex_compile(const ps_tok_load *c, const char *jpath, const char *pattern,
                         size_t len, ps_tok_regex **out)
{
    *out = NULL;
    int ec;
    PCRE2_SIZE eoff;
    size_t plen;
    char *pat = onig_spaces(pattern, len, &plen);
    if (!pat)
        return ps_tok_load_fail(c, PS_ENOMEM, jpath, "out of memory");
    pcre2_code *code = pcre2_compile((PCRE2_SPTR)pat, plen, PCRE2_UTF | PCRE2_UCP, &ec, &eoff,
                                     NULL);
    free(pat);
    if (!code) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(ec, msg, sizeof msg);
        return ps_tok_load_fail(c, PS_EUSAGE, jpath, "regex not supported at offset %zu: %s",
                                (size_t)eoff, (const char *)msg);
    }
    (void)pcre2_jit_compile(code, PCRE2_JIT_COMPLETE); /* falls back to the interpreter */
    ps_tok_regex *re = malloc(sizeof *re);
    if (!re) {
        pcre2_code_free(code);
        return ps_tok_load_fail(c, PS_ENOMEM, jpath, "out of memory");
    }
    re->code = code;
    *out = re;
    return PS_OK;
}

int ps_tok_regex_find(const ps_tok_regex *re, const char *s, size_t n, size_t start, size_t *mb,
                      size_t *me)
{
    pcre2_match_data *md = thread_match_data();
    if (!md)
        return PS_ENOMEM;
    int rc = pcre2_match(re->code, (PCRE2_SPTR)s, n, start, PCRE2_NO_UTF_CHECK, md, NULL);
    if (rc == PCRE2_ERROR_NOMATCH)
        return 0;
    if (rc < 0)
        return rc == PCRE2_ERROR_NOMEMORY ? PS_ENOMEM : PS_ELIMIT; /* match/depth limits */
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
    *mb = ov[0];
    *me = ov[1];
    return 1;
}

void ps_tok_regex_free(ps_tok_regex *re)
{
    if (!re)
        return;
    pcre2_code_free(re->code);
    free(re);
}

/* Length of the UTF-8 sequence starting with byte b (1 for a stray byte). */
static size_t char_len(unsigned char b)
{
    return b < 0xC0 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
}

static int next_match(const ps_tok_regex *re, const char *lit, size_t lit_len, const char *s,
                      size_t n, size_t from, size_t *mb, size_t *me)
{
    if (re)
        return ps_tok_regex_find(re, s, n, from, mb, me);
    if (!lit_len || from >= n)
        return 0;
    for (size_t i = from; n - i >= lit_len;) {
        const char *hit = memchr(s + i, lit[0], n - i - lit_len + 1);
        if (!hit)
            return 0;
        i = (size_t)(hit - s);
        if (!memcmp(hit, lit, lit_len)) {
            *mb = i;
            *me = i + lit_len;
            return 1;
        }
        i++;
    }
    return 0;
}

int ps_tok_pattern_split(const ps_tok_regex *re, const char *lit, size_t lit_len, const char *s,
                         size_t n, ps_tok_stretch_fn fn, void *ctx)
{
    size_t prev = 0, from = 0, last_end = SIZE_MAX;
    while (from <= n) {
        size_t mb, me;
        int rc = next_match(re, lit, lit_len, s, n, from, &mb, &me);
        if (rc < 0)
            return rc;
        if (!rc)
            break;
        if (mb == me && me == last_end) { /* Rust's find_iter: no empty match at the last end */
            if (from >= n)
                break;
            from += char_len((unsigned char)s[from]);
            continue;
        }
        if (mb > prev && (rc = fn(ctx, prev, mb - prev, false)))
            return rc;
        if ((rc = fn(ctx, mb, me - mb, true)))
            return rc;
        prev = last_end = me;
        if (me == mb) { /* an empty match: search again one character on */
            if (me >= n)
                break;
            from = me + char_len((unsigned char)s[me]);
        } else {
            from = me;
        }
    }
    if (prev < n)
        return fn(ctx, prev, n - prev, false);
    return PS_OK;
}
