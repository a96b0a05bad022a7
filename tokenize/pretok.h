/*
 * Internal header of the pre-tokenizers (tokenize/pretok*.c): the split
 * behaviours of HF's NormalizedString::split, the loaders of each family
 * and the hand-written scanners of the GPT-2 / Llama-3 / Qwen2 patterns.
 */
#ifndef PS_TOKENIZE_PRETOK_H
#define PS_TOKENIZE_PRETOK_H

#include "tokenize/hf.h"
#include "common/unicode.h"

/* HF's SplitDelimiterBehavior. */
typedef enum ps_pretok_behavior {
    PS_PRETOK_REMOVED,
    PS_PRETOK_ISOLATED,
    PS_PRETOK_MERGED_PREV,
    PS_PRETOK_MERGED_NEXT,
    PS_PRETOK_CONTIGUOUS
} ps_pretok_behavior;

/* Turns the stretches of a Pattern (matches and the text between, in
 * order, as ps_tok_pattern_split reports them) into pieces the way
 * NormalizedString::split does for `behavior`, streaming: at most one piece
 * is held back (merging needs to see the next stretch). Empty pieces are
 * dropped, as PreTokenizedString::split drops them.
 *
 * The string split is either outside out->pool (`in_pool` false: pieces are
 * copied) or already in out->pool at byte `base` (pieces point at it; the
 * pool must not grow while emitting). A piece inherits the input's at_start
 * flag when it begins at offset <= start_upto (0, or the length of a prefix
 * the pre-tokenizer prepended: prepended characters align to the first
 * original character, so they and it all begin at original offset 0). */
typedef struct ps_pretok_emit {
    ps_tok_pieces *out;
    const char *src;
    bool in_pool;
    size_t base;
    bool at_start;
    size_t start_upto;
    ps_pretok_behavior behavior;
    bool invert;
    bool prev_match; /* the flag of the previous stretch */
    bool pending;    /* a piece [pb, pe) held back */
    bool pending_match;
    size_t pb, pe;
} ps_pretok_emit;

void ps_pretok_emit_init(ps_pretok_emit *e, ps_tok_pieces *out, const char *src, bool at_start,
                         ps_pretok_behavior behavior, bool invert);
/* A ps_tok_stretch_fn (ctx is the ps_pretok_emit). */
int ps_pretok_emit_stretch(void *ctx, size_t off, size_t len, bool is_match);
/* Flushes the held-back piece. */
int ps_pretok_emit_end(ps_pretok_emit *e);

/* Appends a piece that points at out->pool[off .. off+len) (no copy). */
int ps_pretok_push_ref_grow(ps_tok_pieces *out, size_t off, size_t len, bool at_start);
static inline int ps_pretok_push_ref(ps_tok_pieces *out, size_t off, size_t len, bool at_start)
{
    if (out->n == out->cap) /* a piece per match: keep the common path inline */
        return ps_pretok_push_ref_grow(out, off, len, at_start);
    out->v[out->n++] = (ps_tok_piece){.off = off, .len = len, .at_start = at_start};
    return PS_OK;
}

/* Parses a "behavior" string; PS_EFORMAT naming jpath when unknown. */
int ps_pretok_behavior_parse(const ps_tok_load *c, json_t *obj, const char *jpath,
                             bool required, ps_pretok_behavior *out);

/* Rejects a missing member HF requires: PS_EFORMAT "missing field". */
/* A zeroed pre-tokenizer of `size` bytes (its ps_tok_pretok first) with
 * its split and destroy set; NULL when out of memory. */
ps_tok_pretok *ps_pretok_new(size_t size,
                             int (*split)(const ps_tok_pretok *, const char *, size_t, bool,
                                          ps_tok_pieces *),
                             void (*destroy)(ps_tok_pretok *));
int ps_pretok_require(const ps_tok_load *c, json_t *obj, const char *jpath, const char *key);

/* The single character of a JSON string (HF's `char` fields): PS_EFORMAT
 * unless the member is a string of exactly one code point. */
int ps_pretok_json_char(const ps_tok_load *c, json_t *obj, const char *jpath, const char *key,
                        uint32_t *cp);

/* Loaders of each family (obj's "type" already dispatched on). */
int ps_pretok_split_load(const ps_tok_load *c, json_t *j, const char *jpath, ps_tok_pretok **out);
int ps_pretok_bytelevel_load(const ps_tok_load *c, json_t *j, const char *jpath,
                             ps_tok_pretok **out);
int ps_pretok_metaspace_load(const ps_tok_load *c, json_t *j, const char *jpath,
                             ps_tok_pretok **out);
/* A Split pre-tokenizer on a literal (is_regex false) or a regex; with
 * use_scanner false a GPT-2/Llama-3/Qwen2 pattern goes through PCRE2 too
 * (the differential tests and the benchmark compare the two). */
int ps_pretok_split_new(const ps_tok_load *c, const char *jpath, const char *pattern, size_t len,
                        bool is_regex, ps_pretok_behavior behavior, bool invert, bool use_scanner,
                        ps_tok_pretok **out);

/* Whitespace, WhitespaceSplit, Punctuation, Digits, BertPreTokenizer,
 * CharDelimiterSplit: splits on a per-character class. */
int ps_pretok_chars_load(const ps_tok_load *c, json_t *j, const char *jpath, const char *type,
                         ps_tok_pretok **out);

/* ---- hand-written scanners of the hot regexes (pretok_scan.c) ---------- */

typedef enum ps_pretok_scan_kind {
    PS_SCAN_NONE = 0,
    PS_SCAN_GPT2,   /* ByteLevel's use_regex pattern */
    PS_SCAN_LLAMA3, /* ... \p{N}{1,3} ... */
    PS_SCAN_QWEN2   /* ... \p{N} ... */
} ps_pretok_scan_kind;

/* The scanner for a pattern string, or PS_SCAN_NONE when it is not one of
 * the three (compared byte for byte). */
ps_pretok_scan_kind ps_pretok_scan_lookup(const char *pattern, size_t len);
/* The length of the match at s[i..n) (i < n, valid UTF-8): these patterns
 * match at every position, so their matches tile the string. */
size_t ps_pretok_scan_match(ps_pretok_scan_kind k, const char *s, size_t n, size_t i);
/* The pattern text of a scanner (for tests and messages). */
const char *ps_pretok_scan_pattern(ps_pretok_scan_kind k);
/* Calls fn(ctx, off, len, true) for each match, in order (the stretches
 * ps_tok_pattern_split would report: never text between). */
int ps_pretok_scan_split(ps_pretok_scan_kind k, const char *s, size_t n, ps_tok_stretch_fn fn,
                         void *ctx);

/* General category groups as HF's Rust side sees them (regex engine,
 * char::is_numeric: Unicode 16): utf8proc corrected by a generated table
 * of the newer characters (pretok_uclass.inc). */
enum { PS_UCAT_OTHER, PS_UCAT_L, PS_UCAT_M, PS_UCAT_ND, PS_UCAT_NL, PS_UCAT_NO };
int ps_pretok_ucat(uint32_t cp);

/* Character classes the scanners use: \s (White_Space) first, then
 * \p{L}, \p{N}, or other. */
enum { PS_UC_OTHER = 0, PS_UC_L = 1, PS_UC_N = 2, PS_UC_S = 3 };
int ps_pretok_uclass(uint32_t cp);
/* The scanners' table for ASCII byte b (-1 for b >= 0x80). */
int ps_pretok_ascii_class(unsigned char b);

#endif /* PS_TOKENIZE_PRETOK_H */
