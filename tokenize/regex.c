/*
 * Regular expressions of tokenizer.json files (Split pre-tokenizer, Replace
 * normalizer and decoder) through PCRE2. HF compiles them with Oniguruma;
 * with PCRE2_UTF | PCRE2_UCP the patterns models ship (GPT-2, Llama-3,
 * Qwen2: \p{L}, \p{N}, \s, (?i:...), lookahead) mean the same once \s,
 * \p{L} and \p{N} are rewritten to HF's sets (onig_compat); the
 * conformance tests compare the two on every code point. Other Unicode
 * properties (\p{Lu}, \w, ...) keep PCRE2's Unicode 14.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenize/hf.h"
#include "tokenize/unicode.h"

#include <pcre2.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct ps_tok_regex {
    pcre2_code *code;
    char *where; /* the pattern's JSON path, for messages */
};

/* A match's first limit (PCRE2 steps; doubled while a call runs out, see
 * regex_budget.c) and the interpreter's nesting limit (the JIT has its own
 * stack limit). */
#define FIRST_LIMIT 10000u
#define DEPTH_LIMIT 250000u

/* One match-data block and match context per thread (a regex is shared
 * by threads). */
typedef struct per_thread {
    pcre2_match_data *md;
    pcre2_match_context *mc;
} per_thread;

static pthread_key_t md_key;
static pthread_once_t md_once = PTHREAD_ONCE_INIT;
static int md_key_ok;

static void md_free(void *p)
{
    per_thread *t = p;
    pcre2_match_data_free(t->md);
    pcre2_match_context_free(t->mc);
    free(t);
}
static void md_init(void) { md_key_ok = pthread_key_create(&md_key, md_free) == 0; }

static per_thread *thread_match_data(void)
{
    pthread_once(&md_once, md_init);
    if (!md_key_ok)
        return NULL;
    per_thread *t = pthread_getspecific(md_key);
    if (!t && (t = calloc(1, sizeof *t)) != NULL) {
        t->md = pcre2_match_data_create(1, NULL); /* only the whole match is used */
        t->mc = pcre2_match_context_create(NULL);
        if (!t->md || !t->mc || pthread_setspecific(md_key, t)) {
            md_free(t);
            return NULL;
        }
        pcre2_set_depth_limit(t->mc, DEPTH_LIMIT);
    }
    return t;
}

/* What PCRE2's Unicode (14.0) lacks of HF's \p{L} and \p{N} (16.0): the
 * letters and digits added since, as class ranges, ps_uni_pcre2_gap_L/N of
 * the generated unicode_tables.c (scripts/gen-unicode.py); PCRE2 has none
 * that HF lacks. unicode_check.c refuses another PCRE2 Unicode version. */
/* The rewrite of one escape, or NULL to copy it as it is. \s is White_Space
 * spelled out as Oniguruma means it (PCRE2's adds U+180E; \p{Z} is the rest
 * in Unicode 14); \p{L} and \p{N} get the newer characters. Outside a
 * class the set is bracketed (negated for \S, \P{..}); inside one it is
 * spliced in, except a negated escape, left to PCRE2. */
static const char *escape_set(const char *p, size_t left, size_t *used, bool *neg)
{
    static const struct { const char *esc, *set; } map[] = {
        {"s", "\\t-\\r\\x{85}\\p{Z}"}, {"S", NULL},
        {"p{L}", "\\p{L}"}, {"P{L}", NULL}, {"pL", "\\p{L}"}, {"PL", NULL},
        {"p{N}", "\\p{N}"}, {"P{N}", NULL}, {"pN", "\\p{N}"}, {"PN", NULL},
    };
    for (size_t i = 0; i < sizeof map / sizeof *map; i++) {
        size_t n = strlen(map[i].esc);
        if (n <= left && !memcmp(p, map[i].esc, n) && (n > 1 || map[i].esc[0] == p[0])) {
            *used = n;
            *neg = map[i].set == NULL;
            return map[*neg ? i - 1 : i].set;
        }
    }
    return NULL;
}

static int put_set(ps_tok_buf *o, const char *set, bool letters, bool digits)
{
    return ps_tok_buf_put(o, set, strlen(set)) ||
           (letters && ps_tok_buf_put(o, ps_uni_pcre2_gap_L, strlen(ps_uni_pcre2_gap_L))) ||
           (digits && ps_tok_buf_put(o, ps_uni_pcre2_gap_N, strlen(ps_uni_pcre2_gap_N)));
}

/* Rewrites p[0..len) as above into o (NUL-terminated). 0 or PS_ENOMEM. */
static int onig_compat(const char *p, size_t len, ps_tok_buf *o)
{
    bool in_class = false;
    int rc = 0;
    for (size_t i = 0; i < len && !rc; i++) {
        char ch = p[i];
        if (ch == '\\' && i + 1 < len) {
            size_t used;
            bool neg;
            const char *set = escape_set(p + i + 1, len - i - 1, &used, &neg);
            if (set && !(neg && in_class)) {
                bool l = strstr(set, "{L}") != NULL, d = strstr(set, "{N}") != NULL;
                rc = (!in_class && ps_tok_buf_put(o, neg ? "[^" : "[", neg ? 2 : 1)) ||
                     put_set(o, set, l, d) || (!in_class && ps_tok_buf_put(o, "]", 1));
                i += used;
            } else {
                rc = ps_tok_buf_put(o, p + i, 2);
                i++;
            }
            continue;
        }
        size_t n = 1;
        if (ch == '[' && !in_class) {
            in_class = true;
            if (i + n < len && p[i + n] == '^')
                n++;
            if (i + n < len && p[i + n] == ']') /* a leading ] is literal */
                n++;
        } else if (ch == '[' && in_class && i + 1 < len && p[i + 1] == ':') { /* [:alpha:] */
            const char *e = memchr(p + i + 2, ']', len - i - 2);
            if (e)
                n = (size_t)(e - (p + i)) + 1;
        } else if (ch == ']' && in_class) {
            in_class = false;
        }
        rc = ps_tok_buf_put(o, p + i, n);
        i += n - 1;
    }
    return rc || ps_tok_buf_put(o, "", 1) ? PS_ENOMEM : PS_OK;
}

int ps_tok_regex_compile(const ps_tok_load *c, const char *jpath, const char *pattern,
                         size_t len, ps_tok_regex **out)
{
    *out = NULL;
    if (c->regexes && len)
        ++*c->regexes;
    int ec;
    PCRE2_SIZE eoff;
    ps_tok_buf pat = {0};
    if (onig_compat(pattern, len, &pat)) {
        ps_tok_buf_free(&pat);
        return ps_tok_load_fail(c, PS_ENOMEM, jpath, "out of memory");
    }
    pcre2_code *code = pcre2_compile((PCRE2_SPTR)pat.p, pat.len - 1, PCRE2_UTF | PCRE2_UCP, &ec,
                                     &eoff, NULL);
    ps_tok_buf_free(&pat);
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
    re->where = strdup(jpath ? jpath : "regex");
    if (!re->where) {
        ps_tok_regex_free(re);
        return ps_tok_load_fail(c, PS_ENOMEM, jpath, "out of memory");
    }
    *out = re;
    return PS_OK;
}

int ps_tok_regex_find(const ps_tok_regex *re, const char *s, size_t n, size_t start, size_t *mb,
                      size_t *me)
{
    per_thread *t = thread_match_data();
    if (!t)
        return PS_ENOMEM;
    /* The first limit, then twice as many steps while the call runs out
     * and the budget allows; a limit that ran out was spent. */
    int rc;
    for (uint64_t want = FIRST_LIMIT;; want *= 2) {
        uint64_t limit = ps_tok_regex_budget_take(want);
        pcre2_set_match_limit(t->mc, (uint32_t)(limit < UINT32_MAX ? limit : UINT32_MAX));
        rc = pcre2_match(re->code, (PCRE2_SPTR)s, n, start, PCRE2_NO_UTF_CHECK, t->md, t->mc);
        if (rc != PCRE2_ERROR_MATCHLIMIT)
            break;
        ps_tok_regex_budget_spend(limit);
        if (limit < want || limit >= UINT32_MAX)
            return ps_tok_regex_fail(re->where, "the regex ran out of steps at byte %zu", start);
    }
    if (rc == PCRE2_ERROR_NOMATCH)
        return 0;
    if (rc == PCRE2_ERROR_NOMEMORY)
        return PS_ENOMEM;
    if (rc < 0) { /* the depth, heap or JIT stack limit */
        PCRE2_UCHAR msg[120];
        pcre2_get_error_message(rc, msg, sizeof msg);
        return ps_tok_regex_fail(re->where, "the regex failed at byte %zu: %s", start,
                                 (const char *)msg);
    }
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(t->md);
    *mb = ov[0];
    *me = ov[1];
    return 1;
}

void ps_tok_regex_free(ps_tok_regex *re)
{
    if (!re)
        return;
    pcre2_code_free(re->code);
    free(re->where);
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
    if (!n) /* HF: one empty stretch, which every caller drops: none at all */
        return PS_OK;
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
