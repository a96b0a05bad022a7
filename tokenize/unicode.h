/*
 * Character properties with HuggingFace tokenizers' exact semantics.
 *
 * HF's BertNormalizer and BertPreTokenizer take their properties from three
 * places: Rust's char methods (is_whitespace, to_lowercase: Unicode 16), the
 * `unicode_categories` crate (control/format/unassigned, nonspacing marks,
 * punctuation: an older Unicode) and `unicode-normalization-alignments` (NFD).
 * We answer from utf8proc and correct it with override tables
 * (unicode_overrides.c) for the code points where those sources disagree;
 * tests/conformance/run.sh checks every code point against the real binding.
 */
#ifndef PS_TOKENIZE_UNICODE_H
#define PS_TOKENIZE_UNICODE_H

#include "common/unicode.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Most code points one input code point can become after NFD and full
 * lowercasing (NFD of Hangul is 3, of some characters 4; lowercase of a
 * decomposed character never grows it more than once). */
#define PS_UNI_EXPAND_MAX 18


/* HF BertNormalizer's is_control: `unicode_categories` is_other (Cc, Cf, Cn,
 * Co) except tab, newline and carriage return. */
bool ps_uni_is_control(uint32_t cp);

/* HF's is_bert_punc: ASCII punctuation or a Unicode P* character. */
bool ps_uni_is_punctuation(uint32_t cp);

/* HF's is_chinese_char: the CJK ideograph blocks BERT pads with spaces. */
bool ps_uni_is_chinese(uint32_t cp);

/* `unicode_categories` is_mark_nonspacing (Mn), as HF's strip_accents uses. */
bool ps_uni_is_nonspacing_mark(uint32_t cp);

/* Canonical combining class, for NFD's canonical reordering. */
int ps_uni_combining_class(uint32_t cp);

/* Writes the full canonical decomposition (NFD, unordered) of `cp` to out;
 * returns the number of code points (>= 1, <= 4). */
int ps_uni_nfd(uint32_t cp, uint32_t out[4]);

/* Rust char::to_lowercase: writes the full lowercase mapping; returns the
 * number of code points (1..3). */
int ps_uni_lowercase(uint32_t cp, uint32_t out[3]);

/* Decodes one UTF-8 sequence at p[0..n) (n >= 1) strictly: no overlong
 * forms, surrogates or values above U+10FFFF. Returns its length (1..4) and
 * stores the code point, or returns 0 when the bytes are not valid UTF-8. */
static inline unsigned ps_tok_utf8_decode(const unsigned char *p, size_t n, uint32_t *cp)
{
    unsigned c = p[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    if (c < 0xC2 || c > 0xF4)
        return 0;
    if (c < 0xE0) {
        if (n < 2 || (p[1] & 0xC0) != 0x80)
            return 0;
        *cp = ((c & 0x1Fu) << 6) | (p[1] & 0x3Fu);
        return 2;
    }
    if (c < 0xF0) {
        if (n < 3 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80)
            return 0;
        if ((c == 0xE0 && p[1] < 0xA0) || (c == 0xED && p[1] >= 0xA0))
            return 0; /* overlong, or a surrogate */
        *cp = ((c & 0x0Fu) << 12) | ((p[1] & 0x3Fu) << 6) | (p[2] & 0x3Fu);
        return 3;
    }
    if (n < 4 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80 || (p[3] & 0xC0) != 0x80)
        return 0;
    if ((c == 0xF0 && p[1] < 0x90) || (c == 0xF4 && p[1] >= 0x90))
        return 0; /* overlong, or above U+10FFFF */
    *cp = ((c & 0x07u) << 18) | ((p[1] & 0x3Fu) << 12) | ((p[2] & 0x3Fu) << 6) | (p[3] & 0x3Fu);
    return 4;
}

/* Override tables (unicode_overrides.c): sorted code point lists. */
typedef struct { uint32_t lo, hi; } ps_uni_range;

/* Whether cp lies in one of the n sorted, inclusive, disjoint ranges r. */
static inline bool ps_uni_in_ranges(const ps_uni_range *r, size_t n, uint32_t cp)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cp < r[mid].lo)
            hi = mid;
        else if (cp > r[mid].hi)
            lo = mid + 1;
        else
            return true;
    }
    return false;
}
extern const ps_uni_range ps_uni_hf_not_control[];     /* newer Cf: kept */
extern const unsigned ps_uni_hf_not_control_n;
extern const ps_uni_range ps_uni_hf_not_punct[];       /* utf8proc P*, HF not */
extern const unsigned ps_uni_hf_not_punct_n;
extern const ps_uni_range ps_uni_hf_punct[];           /* HF P*, utf8proc not */
extern const unsigned ps_uni_hf_punct_n;
extern const ps_uni_range ps_uni_hf_mn[];              /* HF Mn, utf8proc not */
extern const unsigned ps_uni_hf_mn_n;
extern const ps_uni_range ps_uni_hf_no_nfd[];          /* HF leaves undecomposed */
extern const unsigned ps_uni_hf_no_nfd_n;
/* The views of ps_uni_hf_marks (unicode_overrides.c) in which HF does not
 * see a mark as utf8proc does. */
enum {
    PS_UNI_HF_NOT_MN = 1,   /* utf8proc Mn, BertNormalizer keeps it */
    PS_UNI_HF_NOT_MARK = 2, /* utf8proc M*, not a mark for HF's normalizers */
    PS_UNI_HF_CCC_ZERO = 4, /* nonzero combining class in utf8proc, 0 for HF */
};
typedef struct { uint32_t lo, hi; unsigned views; } ps_uni_mark_range;
extern const ps_uni_mark_range ps_uni_hf_marks[]; /* sorted, disjoint */
extern const unsigned ps_uni_hf_marks_n;

/* Whether HF sees cp otherwise than utf8proc in `view` (a PS_UNI_HF_*). */
bool ps_uni_hf_mark_differs(uint32_t cp, unsigned view);

typedef struct { uint32_t cp, lower; } ps_uni_case_pair;
extern const ps_uni_case_pair ps_uni_hf_lower[];       /* Rust's newer mappings */
extern const unsigned ps_uni_hf_lower_n;

#endif
