/*
 * Pre-tokenizers that split on a class of single characters: Whitespace
 * (\w+|[^\w\s]+ in Rust's regex semantics), WhitespaceSplit, Punctuation,
 * Digits, BertPreTokenizer and CharDelimiterSplit. HF's char-predicate
 * Pattern makes every matching character a match of its own (so
 * Contiguous, not the pattern, joins runs); we emit stretches the same way.
 */
#include "tokenize/pretok.h"
#include "tokenize/unicode.h"

#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

typedef enum {
    K_WHITESPACE,
    K_WS_SPLIT,
    K_PUNCT,
    K_DIGITS,
    K_BERT,
    K_DELIM
} chars_kind;

typedef struct chars_pt {
    ps_tok_pretok base;
    chars_kind kind;
    ps_pretok_behavior behavior;
    uint32_t delim;
} chars_pt;

/* Rust char::is_numeric: Nd, Nl, No. Rust's std is a Unicode newer (17)
 * than its regex crate (16): the Tolong Siki digits and U+16FF4..16FF6
 * are numeric to it (found by the conformance test on every code point). */
static bool is_numeric(uint32_t cp)
{
    if (cp < 0x80)
        return cp >= '0' && cp <= '9';
    if ((cp >= 0x11DE0 && cp <= 0x11DE9) || (cp >= 0x16FF4 && cp <= 0x16FF6))
        return true;
    int k = ps_pretok_ucat(cp);
    return k == PS_UCAT_ND || k == PS_UCAT_NL || k == PS_UCAT_NO;
}

/* regex-syntax's Unicode \w: Alphabetic, M*, Nd, Pc, Join_Control.
 * Alphabetic is L*, Nl and Other_Alphabetic; the Other_Alphabetic code
 * points outside M* are the circled and squared Latin letters (So). */
static bool is_word(uint32_t cp)
{
    if (cp < 0x80)
        return (cp | 0x20) - 'a' < 26 || cp - '0' < 10 || cp == '_';
    if (cp == 0x200C || cp == 0x200D || (cp >= 0x24B6 && cp <= 0x24E9) ||
        (cp >= 0x1F130 && cp <= 0x1F149) || (cp >= 0x1F150 && cp <= 0x1F169) ||
        (cp >= 0x1F170 && cp <= 0x1F189))
        return true;
    int k = ps_pretok_ucat(cp);
    return k == PS_UCAT_L || k == PS_UCAT_M || k == PS_UCAT_ND || k == PS_UCAT_NL ||
           utf8proc_category((utf8proc_int32_t)cp) == UTF8PROC_CATEGORY_PC;
}

static size_t next_cp(const char *s, size_t n, size_t i, uint32_t *cp)
{
    unsigned l = ps_tok_utf8_decode((const unsigned char *)s + i, n - i, cp);
    if (!l) { /* not reached on valid input; a stray byte stands alone */
        *cp = 0xFFFD;
        l = 1;
    }
    return l;
}

/* Whitespace: maximal runs of \w and of [^\w\s] are pieces; \s is dropped. */
static int whitespace_split(const char *s, size_t n, ps_pretok_emit *e)
{
    int cur = -1; /* class of the open run: 0 word, 1 other */
    size_t start = 0;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t l = next_cp(s, n, i, &cp);
        int k = ps_is_white_space(cp) ? -1 : is_word(cp) ? 0 : 1;
        if (k != cur) {
            int rc;
            if (cur >= 0 && (rc = ps_pretok_emit_stretch(e, start, i - start, false)))
                return rc;
            cur = k;
            start = i;
        }
        i += l;
    }
    return cur >= 0 ? ps_pretok_emit_stretch(e, start, n - start, false) : PS_OK;
}

static bool matches(const chars_pt *q, uint32_t cp)
{
    switch (q->kind) {
    case K_WS_SPLIT:
        return ps_is_white_space(cp);
    case K_PUNCT:
        return ps_uni_is_punctuation(cp);
    case K_DIGITS:
        return is_numeric(cp);
    case K_DELIM:
        return cp == q->delim;
    default:
        return false;
    }
}

/* The char-predicate Pattern: each matching character one match, the
 * runs between them non-matches. */
static int pred_split(const chars_pt *q, const char *s, size_t n, ps_pretok_emit *e)
{
    size_t prev = 0;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t l = next_cp(s, n, i, &cp);
        if (matches(q, cp)) {
            int rc;
            if ((i > prev && (rc = ps_pretok_emit_stretch(e, prev, i - prev, false))) ||
                (rc = ps_pretok_emit_stretch(e, i, l, true)))
                return rc;
            prev = i + l;
        }
        i += l;
    }
    return prev < n ? ps_pretok_emit_stretch(e, prev, n - prev, false) : PS_OK;
}

/* BertPreTokenizer: whitespace removed, then punctuation isolated; both
 * steps are per character, so one pass does them. */
static int bert_split(const char *s, size_t n, ps_pretok_emit *e)
{
    size_t start = 0;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t l = next_cp(s, n, i, &cp);
        bool ws = ps_is_white_space(cp);
        if (ws || ps_uni_is_punctuation(cp)) {
            int rc;
            if ((i > start && (rc = ps_pretok_emit_stretch(e, start, i - start, false))) ||
                (!ws && (rc = ps_pretok_emit_stretch(e, i, l, false))))
                return rc;
            start = i + l;
        }
        i += l;
    }
    return start < n ? ps_pretok_emit_stretch(e, start, n - start, false) : PS_OK;
}

static int chars_split(const ps_tok_pretok *p, const char *s, size_t n, bool at_start,
                       ps_tok_pieces *out)
{
    const chars_pt *q = (const chars_pt *)p;
    if (!n)
        return PS_OK;
    ps_pretok_emit e;
    ps_pretok_emit_init(&e, out, s, at_start, q->behavior, false);
    int rc = q->kind == K_WHITESPACE ? whitespace_split(s, n, &e)
             : q->kind == K_BERT     ? bert_split(s, n, &e)
                                     : pred_split(q, s, n, &e);
    return rc ? rc : ps_pretok_emit_end(&e);
}

static void chars_destroy(ps_tok_pretok *p) { free(p); }

int ps_pretok_chars_load(const ps_tok_load *c, json_t *j, const char *jpath, const char *type,
                         ps_tok_pretok **out)
{
    chars_pt q = {.base = {.split = chars_split, .destroy = chars_destroy},
                  .behavior = PS_PRETOK_REMOVED};
    int rc = PS_OK;
    if (!strcmp(type, "Whitespace")) {
        q.kind = K_WHITESPACE; /* emits kept runs only: Removed keeps them all */
    } else if (!strcmp(type, "WhitespaceSplit")) {
        q.kind = K_WS_SPLIT;
    } else if (!strcmp(type, "BertPreTokenizer")) {
        q.kind = K_BERT;
    } else if (!strcmp(type, "Punctuation")) {
        q.kind = K_PUNCT;
        q.behavior = PS_PRETOK_ISOLATED; /* serde default */
        rc = ps_pretok_behavior_parse(c, j, jpath, false, &q.behavior);
    } else if (!strcmp(type, "Digits")) {
        bool individual = false;
        q.kind = K_DIGITS;
        if (!(rc = ps_pretok_require(c, j, jpath, "individual_digits")) &&
            !(rc = ps_tok_json_bool(c, j, jpath, "individual_digits", &individual)))
            q.behavior = individual ? PS_PRETOK_ISOLATED : PS_PRETOK_CONTIGUOUS;
    } else { /* CharDelimiterSplit */
        q.kind = K_DELIM;
        if (!(rc = ps_pretok_require(c, j, jpath, "delimiter")))
            rc = ps_pretok_json_char(c, j, jpath, "delimiter", &q.delim);
    }
    if (rc)
        return rc;
    chars_pt *p = malloc(sizeof *p);
    if (!p)
        return ps_tok_load_fail(c, PS_ENOMEM, jpath, "out of memory");
    *p = q;
    *out = &p->base;
    return PS_OK;
}
