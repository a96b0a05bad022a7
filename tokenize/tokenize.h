/*
 * Internal header of the tokenize stage: the vocabulary (hash table plus
 * id -> token array), the byte tries WordPiece walks, the tokenizer object
 * and the per-thread scratch. Not installed.
 *
 * Data flow of one encode call (all in encode.c / pretokenize.c /
 * wordpiece.c): raw text -> special-token split -> fused BertNormalizer +
 * BertPreTokenizer (ASCII by table, the rest via unicode.c) -> each word to
 * WordPiece (whole-word hash hit, else longest-match walks over the tries)
 * -> ids appended to the scratch -> truncation and [CLS]/[SEP] layout.
 */
#ifndef PS_TOKENIZE_H
#define PS_TOKENIZE_H

#include "common/ps_internal.h"
#include "pairshard/tokenizer.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Limits the vocabulary loaders enforce (PS_ELIMIT beyond them). */
#define PS_TOK_MAX_TOKEN_BYTES 65535u
#define PS_TOK_MAX_TOKENS ((size_t)INT32_MAX)

/* ---- vocabulary: token <-> id -------------------------------------- */

typedef struct ps_tok_slot {
    uint64_t hash;
    size_t off;   /* of the token's bytes in the pool */
    uint32_t len;
    int32_t id;   /* -1: empty slot */
} ps_tok_slot;

typedef struct ps_tok_vocab {
    char *pool;          /* every token, each followed by a NUL */
    size_t pool_len, pool_cap;
    size_t *tok_off;     /* id -> offset in pool, SIZE_MAX for a hole */
    size_t n_ids;        /* ids are 0 .. n_ids-1 */
    size_t ids_cap;
    ps_tok_slot *slots;  /* open addressing, linear probing */
    size_t mask;         /* capacity - 1 (power of two) */
    size_t n_keys;       /* distinct tokens */
} ps_tok_vocab;

void ps_tok_vocab_init(ps_tok_vocab *v);
void ps_tok_vocab_free(ps_tok_vocab *v);

/* murmur3's finalizer: a bijection on 64 bits. */
static inline uint64_t ps_tok_fmix(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ULL;
    k ^= k >> 33;
    return k;
}

uint64_t ps_tok_hash_long(const void *p, size_t n); /* XXH3, for n > 8 */

/* Hash of a token. Keys of up to 8 bytes are packed injectively (for a
 * given length) and mixed by a bijection, so for them equal hash and equal
 * length mean equal bytes: lookups of short words never compare memory. */
static inline uint64_t ps_tok_hash(const void *p, size_t n)
{
    const unsigned char *s = p;
    uint64_t v;
    if (n > 8)
        return ps_tok_hash_long(p, n);
    if (n >= 4) {
        uint32_t a, b;
        memcpy(&a, s, 4);
        memcpy(&b, s + n - 4, 4);
        v = ((uint64_t)a << 32) | b;
    } else if (n) {
        v = ((uint64_t)s[0] << 16) | ((uint64_t)s[n >> 1] << 8) | s[n - 1];
    } else {
        v = 0;
    }
    return ps_tok_fmix(v ^ (n * 0x9E3779B97F4A7C15ULL));
}

/* ps_tok_vocab_find with tok's ps_tok_hash already known (v has slots). */
static inline int32_t ps_tok_vocab_find_hashed(const ps_tok_vocab *v, const char *tok, size_t len,
                                               uint64_t h)
{
    for (size_t j = (size_t)h & v->mask;; j = (j + 1) & v->mask) {
        const ps_tok_slot *s = &v->slots[j];
        if (s->id < 0)
            return -1;
        if (s->hash == h && s->len == len && (len <= 8 || !memcmp(v->pool + s->off, tok, len)))
            return s->id;
    }
}

/* Returns the id of tok[0..len), or -1. Inlined into the hot path. */
static inline int32_t ps_tok_vocab_find(const ps_tok_vocab *v, const char *tok, size_t len)
{
    if (!v->slots)
        return -1;
    return ps_tok_vocab_find_hashed(v, tok, len, ps_tok_hash(tok, len));
}

/* Sets token -> id (a later set of the same token replaces the id, as HF's
 * HashMap insert does) and records id -> token. 0 or PS_ENOMEM/PS_ELIMIT. */
int ps_tok_vocab_set(ps_tok_vocab *v, const char *tok, size_t len, int32_t id);
/* Sizes the hash table for n_tokens keys at once (a loader that knows the
 * count skips the rehashes of growing). 0 or PS_ENOMEM. */
int ps_tok_vocab_reserve(ps_tok_vocab *v, size_t n_tokens);
/* Parses vocab.txt text into v. `name` is for messages. */
/* Length of a line after Rust's str::trim_end (valid UTF-8). */
size_t ps_tok_trim_end_len(const char *line, size_t len);
/* The lines of a vocab.txt as Rust's BufRead::lines yields them: split at
 * '\n', no final empty line after a trailing '\n'. Start with {data, len};
 * each ps_tok_next_line sets *line, *line_len (the '\n' excluded) and
 * counts line_no (1-based); false at the end. */
typedef struct ps_tok_lines {
    const char *data;
    size_t len, pos, line_no;
} ps_tok_lines;
bool ps_tok_next_line(ps_tok_lines *it, const char **line, size_t *line_len);
int ps_tok_vocab_parse_txt(ps_tok_vocab *v, const char *data, size_t len, const char *name,
                           ps_error *err);

/* PS_EUTF8 "invalid UTF-8 at byte N of the text" (or "of the second
 * sequence" when which is 2) unless text[0..len) is valid UTF-8. */
int ps_tok_utf8_check(const char *text, size_t len, int which, ps_error *err);

/* ---- byte trie for longest-prefix matches --------------------------- */

typedef struct ps_tok_trie_node {
    uint32_t first_child; /* index of the first child node */
    uint32_t n_children;  /* children are contiguous, sorted by label */
    int32_t id;           /* token ending here, or -1 */
} ps_tok_trie_node;

typedef struct ps_tok_trie {
    ps_tok_trie_node *nodes; /* nodes[0] is the root */
    uint8_t *labels;         /* labels[i]: the byte on the edge into node i */
    size_t n_nodes;
    uint32_t root_child[256]; /* root's child per byte, 0 = none */
} ps_tok_trie;

/* Builds a trie of every vocabulary token that starts with `prefix`
 * (prefix_len 0: every token), keyed by the bytes after the prefix. */
int ps_tok_trie_build(ps_tok_trie *t, const ps_tok_vocab *v, const char *prefix,
                      size_t prefix_len);
void ps_tok_trie_free(ps_tok_trie *t);

/* ---- the tokenizer -------------------------------------------------- */

enum { PS_TOK_WORD = 0, PS_TOK_SPACE = 1, PS_TOK_PUNCT = 2, PS_TOK_DROP = 3 };
/* Flag in ascii_class: a special token may start with this byte. */
#define PS_TOK_SPECIAL_START 0x80

typedef struct ps_tok_special {
    char *text;
    size_t len;
    int32_t id;
} ps_tok_special;

struct ps_tokenizer {
    bool lowercase, strip_accents, chinese, clean, match_specials;
    size_t max_chars;
    char *unk, *prefix, *cls, *sep;
    size_t prefix_len;
    int32_t unk_id, cls_id, sep_id; /* -1 when absent */
    ps_tok_vocab vocab;
    ps_tok_trie word_trie; /* tokens that may start a word */
    ps_tok_trie cont_trie; /* "##" tokens, keyed without the prefix */
    uint8_t ascii_class[128];
    uint8_t ascii_map[128];
    ps_tok_special *specials;
    size_t n_specials;
    uint8_t special_first[256]; /* 1: some special token starts with it */
    bool specials_ascii;        /* every special token starts with ASCII */
    char **warnings;            /* signs of a damaged vocabulary, at load */
    size_t n_warnings;
    /* Any other tokenizer.json: its components (tokenize/hf.h); NULL for
     * the fused BERT WordPiece path above. */
    struct ps_tok_hf *hf;
    char *model_type; /* "WordPiece", "BPE", "Unigram", "WordLevel" */
    unsigned unicode_deps; /* PS_UNIDEP_*: whose Unicode its ids depend on */
};

/* ps_tokenizer_load_json and ps_tokenizer_load_vocab_buffer, which refuse
 * a host whose utf8proc or PCRE2 has another Unicode than the tables
 * assume (unicode_check.h) unless any_host: for ps_preprocessor_open, which
 * compares the versions itself and may be told to serve anyway. */
int ps_tok_load_json_host(const char *path, bool any_host, ps_tokenizer **out, ps_error *err);
int ps_tok_load_vocab_host(const char *data, size_t len, const char *name,
                           const ps_tokenizer_options *opt, bool any_host, ps_tokenizer **out,
                           ps_error *err);

/* Fills a tokenizer whose vocab is already loaded: copies the options,
 * resolves special ids, builds the tries and tables. On failure the caller
 * frees it with ps_tokenizer_free. */
int ps_tok_finish(ps_tokenizer *tok, const ps_tokenizer_options *opt, ps_error *err);
/* Adds a special token matched verbatim in raw input. */
int ps_tok_add_special(ps_tokenizer *tok, const char *text, size_t len, int32_t id);
ps_tokenizer *ps_tok_alloc(void);
/* The largest vocabulary or tokenizer.json read (ps_file_read_all's bound;
 * the largest public tokenizer.json files are tens of MiB). */
#define PS_TOK_FILE_MAX ((size_t)256 << 20)
/* Appends a formatted load warning; PS_ENOMEM or 0. */
int ps_tok_warn(ps_tokenizer *tok, const char *fmt, ...) PS_PRINTF(2, 3);
/* Looks over a vocab.txt the tokenizer was just loaded from for signs of
 * damage (BOM, CRLF, duplicates, HTML-escaped entries) and records them
 * as warnings. PS_ENOMEM or 0. */
int ps_tok_vocab_check(ps_tokenizer *tok, const char *data, size_t len, const char *name);

/* ---- per-thread scratch --------------------------------------------- */

typedef struct ps_tok_pending {
    uint32_t cp;
    int ccc;
} ps_tok_pending;

struct ps_tok_scratch {
    int32_t *ids;
    uint8_t *types;
    size_t n, cap;
    char *word; /* the word being built (normalized UTF-8) */
    size_t word_len, word_cap, word_chars;
    ps_tok_pending *pend; /* NFD run of non-starters awaiting reordering */
    size_t pend_n, pend_cap;
    int fail; /* first error inside a walk (PS_ENOMEM, PS_EINVAL) */
    size_t seq_start; /* index in ids where the current sequence began */
    size_t stop_at;   /* stop at a word boundary once it has this many ids */
    bool stopped;     /* the walk ended early because of stop_at */
    /* where words go: WordPiece ids, or a user callback */
    ps_word_fn word_fn;
    void *word_ctx;
    int word_rc;
    struct ps_tok_hfwork *hw; /* buffers of the generic pipeline, on first use */
};

/* Points *out (may be NULL) at the scratch's ids and types; returns the
 * count, or PS_ELIMIT past INT32_MAX (encode.c). */
int ps_tok_finish_encoding(ps_tok_scratch *s, bool truncated, ps_encoding *out);

/* HF's truncate_encodings, LongestFirst, on a pair of lengths (encode.c). */
void ps_tok_longest_first(size_t *na, size_t *nb, size_t max);

/* Makes room for `extra` more ids. 0 or PS_ENOMEM. */
int ps_tok_scratch_reserve(ps_tok_scratch *s, size_t extra);

/* Normalizes and pre-tokenizes text[0..len) (specials included) and hands
 * every word to WordPiece (appending ids to s->ids) or to s->word_fn.
 * `which` (1 or 2) names the sequence in UTF-8 errors. */
int ps_tok_run(const ps_tokenizer *tok, ps_tok_scratch *s, const char *text, size_t len,
               int which, ps_error *err);

/* WordPiece of one normalized word; appends ids. 0 or a negative code. */
int ps_tok_wordpiece(const ps_tokenizer *tok, ps_tok_scratch *s, const char *w, size_t len,
                     size_t chars);

#endif /* PS_TOKENIZE_H */
