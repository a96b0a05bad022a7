/*
 * Internal header: the components of a HuggingFace tokenizer.json pipeline
 * (any model, not only BERT's). Not installed.
 *
 * A tokenizer.json whose pipeline is exactly BERT's keeps the fused
 * WordPiece path of tokenize.h (pretokenize.c, wordpiece.c). Every other
 * file is loaded into these components and encoded by hf_encode.c the way
 * tokenizers 0.23.2's TokenizerImpl::encode does:
 *
 *   raw text
 *   -> added tokens with normalized=false split out     (ps_tok_added_split)
 *   -> each other segment normalized                    (ps_tok_norm_apply)
 *   -> added tokens with normalized=true split out      (ps_tok_added_split)
 *   -> each other segment pre-tokenized into pieces     (ps_tok_pretok_apply)
 *   -> each piece through the model into ids            (model->encode)
 *   -> truncation (longest_first), then the template    (ps_tok_post_apply)
 *
 * Every component is a small "class": a struct whose first member holds its
 * function pointers, made by a *_load function from its JSON object and
 * freed through its `destroy`. Components are immutable after load and
 * shared by threads; per-thread state lives in the caller's scratch
 * (buffers passed in, or a ps_tok_work_slot).
 *
 * Loaders refuse what they do not implement exactly: an unknown "type", an
 * option value HF accepts but we do not reproduce (e.g. BPE dropout) ->
 * PS_EUSAGE; a member of the wrong JSON type -> PS_EFORMAT. The message is
 * "FILE: JSON.PATH: reason" (ps_tok_load_fail), e.g.
 * "t.json: pre_tokenizer.pretokenizers[1].type: 'FixedLength' is not supported".
 */
#ifndef PS_TOKENIZE_HF_H
#define PS_TOKENIZE_HF_H

#include "tokenize/tokenize.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- growable buffers ------------------------------------------------ */

typedef struct ps_tok_buf {
    char *p;
    size_t len, cap;
} ps_tok_buf;

/* Each returns 0 or PS_ENOMEM. `p` must not point into b->p. */
int ps_tok_buf_reserve(ps_tok_buf *b, size_t extra);
int ps_tok_buf_put(ps_tok_buf *b, const void *p, size_t n);
int ps_tok_buf_put_cp(ps_tok_buf *b, uint32_t cp); /* UTF-8 encodes cp */
void ps_tok_buf_free(ps_tok_buf *b);

/* Pre-tokenizer output: strings in one pool. */
typedef struct ps_tok_piece {
    size_t off, len; /* the bytes pool.p[off .. off+len) */
    /* The piece begins at offset 0 of the original input: HF's
     * `normalized.offsets_original().0 == 0` (Metaspace's prepend_scheme
     * "first" prepends only there). */
    bool at_start;
} ps_tok_piece;

typedef struct ps_tok_pieces {
    ps_tok_buf pool;
    ps_tok_piece *v;
    size_t n, cap;
} ps_tok_pieces;

void ps_tok_pieces_clear(ps_tok_pieces *p); /* n = 0, pool emptied */
/* Appends a piece. `s` must not point into p->pool. 0 or PS_ENOMEM. */
int ps_tok_pieces_push(ps_tok_pieces *p, const char *s, size_t len, bool at_start);
void ps_tok_pieces_free(ps_tok_pieces *p);

typedef struct ps_tok_ids {
    int32_t *v;
    size_t n, cap;
} ps_tok_ids;

int ps_tok_ids_push(ps_tok_ids *x, int32_t id); /* 0 or PS_ENOMEM */
int ps_tok_ids_reserve(ps_tok_ids *x, size_t extra);
void ps_tok_ids_free(ps_tok_ids *x);

/* Per-thread state of one component (a model's cache and work arrays),
 * kept in the caller's scratch. A component whose `owner` is not itself
 * calls free_fn(w) and makes its own; ps_tok_work_slot_clear frees it. */
typedef struct ps_tok_work_slot {
    const void *owner;
    void *w;
    void (*free_fn)(void *w);
} ps_tok_work_slot;

void ps_tok_work_slot_clear(ps_tok_work_slot *slot);

/* ---- loading: messages and JSON members ------------------------------ */

typedef struct ps_tok_load {
    const char *file; /* for messages */
    ps_error *err;
    /* Counts the non-empty patterns compiled by PCRE2 (NULL: not counted):
     * a tokenizer with one depends on PCRE2's Unicode (unicode_check.c). */
    unsigned *regexes;
} ps_tok_load;

/* Sets the error to "FILE: JPATH: <fmt...>" and returns `code`. */
int ps_tok_load_fail(const ps_tok_load *c, int code, const char *jpath, const char *fmt, ...)
    PS_PRINTF(4, 5);

/* The same at member `key` of jpath: "FILE: JPATH.KEY: <fmt...>". */
int ps_tok_load_fail_key(const ps_tok_load *c, int code, const char *jpath, const char *key,
                         const char *fmt, ...) PS_PRINTF(5, 6);

/* The "type" member of obj, or NULL when absent or not a string. */
const char *ps_tok_json_type(json_t *obj);

/* Optional members of obj (at JSON path `jpath`): an absent member (or JSON
 * null, for strings) leaves *out unchanged and returns 0; a member of the
 * wrong type returns PS_EFORMAT naming "jpath.key". */
int ps_tok_json_bool(const ps_tok_load *c, json_t *obj, const char *jpath, const char *key,
                     bool *out);
int ps_tok_json_string(const ps_tok_load *c, json_t *obj, const char *jpath, const char *key,
                       const char **out, size_t *len);
int ps_tok_json_uint(const ps_tok_load *c, json_t *obj, const char *jpath, const char *key,
                     uint64_t max, uint64_t *out);

/* Required members (serde fields without a default): obj's `key`, or NULL
 * with *rc set to PS_EFORMAT "missing member 'key'" at jpath. */
json_t *ps_tok_json_need(const ps_tok_load *c, json_t *obj, const char *jpath, const char *key,
                         int *rc);
/* A required bool: missing or not true/false is PS_EFORMAT. */
int ps_tok_json_need_bool(const ps_tok_load *c, json_t *obj, const char *jpath, const char *key,
                          bool *out);
/* obj's "type" is `want`, else PS_EFORMAT "expected 'want'" at jpath.type
 * (a tagged variant tried on a value of another type). */
int ps_tok_json_check_type(const ps_tok_load *c, json_t *obj, const char *jpath,
                           const char *want);

/* What HF's deserializer refuses that the loaders would not read
 * (hf_serde.c): JSON nested 128 levels deep (serde_json's recursion
 * limit; PS_ELIMIT), and "truncation" or "padding" members of the wrong
 * shape or type (pad_id not a u32...; PS_EFORMAT), named by JSON path. */
int ps_tok_check_serde(const ps_tok_load *c, json_t *root);

/* Writes "jpath.key" or "jpath[i]" into buf (truncated to size). */
const char *ps_tok_jpath_key(char *buf, size_t size, const char *jpath, const char *key);
const char *ps_tok_jpath_idx(char *buf, size_t size, const char *jpath, size_t i);

/* ---- regular expressions (PCRE2, UTF + UCP, JIT when available) ------ */

typedef struct ps_tok_regex ps_tok_regex;

/* Compiles an Oniguruma-syntax pattern as HF's SysRegex would use it.
 * PS_EUSAGE (with the PCRE2 message) when PCRE2 cannot compile it. */
int ps_tok_regex_compile(const ps_tok_load *c, const char *jpath, const char *pattern,
                         size_t len, ps_tok_regex **out);
/* Finds the first match in s[0..n) at or after byte `start`: returns 1 and
 * sets [*mb, *me), 0 for none, or a negative PS_E* code. Thread-safe (the
 * match data is per thread). An empty match is reported as such; callers
 * step past it as HF's find_iter does. */
int ps_tok_regex_find(const ps_tok_regex *re, const char *s, size_t n, size_t start, size_t *mb,
                      size_t *me);
void ps_tok_regex_free(ps_tok_regex *re);

/* The step budget of one encode's regex matches (regex_budget.c): begun
 * with the bytes of the text encoded, ended when the encode returns. A
 * match that runs past it (or past PCRE2's depth or heap limits) returns
 * PS_ELIMIT, and ps_tok_regex_why() then says which pattern (its JSON
 * path) and why, until the next begin. */
void ps_tok_regex_budget_begin(size_t bytes);
void ps_tok_regex_budget_end(void);
/* At most `want` steps of what is left (a fixed cap outside an encode). */
uint64_t ps_tok_regex_budget_take(uint64_t want);
/* Charges steps spent. */
void ps_tok_regex_budget_spend(uint64_t steps);
/* Records why a match of the pattern at `where` failed; PS_ELIMIT. */
int ps_tok_regex_fail(const char *where, const char *fmt, ...) PS_PRINTF(2, 3);
const char *ps_tok_regex_why(void);

/* Splits s[0..n) on a literal string or a regex as HF's Pattern does
 * (find_matches): calls fn(ctx, off, len, is_match) for each stretch in
 * order, the matches and the text between them. Text between is never
 * empty; a match may be (an empty regex match, reported as HF reports it;
 * an empty match right after the previous match's end is skipped, as
 * Rust's find_iter does). `re` NULL: the literal lit[0..lit_len) is the
 * pattern (non-overlapping, leftmost; empty: nothing matches). Empty text
 * gives no stretch. Returns 0, fn's non-zero value, or a negative code. */
typedef int (*ps_tok_stretch_fn)(void *ctx, size_t off, size_t len, bool is_match);
int ps_tok_pattern_split(const ps_tok_regex *re, const char *lit, size_t lit_len, const char *s,
                         size_t n, ps_tok_stretch_fn fn, void *ctx);

/* ---- byte-level alphabet (GPT-2's bytes_to_unicode) ------------------- */

/* The code point byte b is shown as (printable bytes stand for themselves,
 * the rest map to U+0100..). */
uint32_t ps_tok_bytelevel_char(uint8_t b);
/* The byte shown by cp, or -1 when cp is not in the alphabet. */
int ps_tok_bytelevel_byte(uint32_t cp);

/* ---- normalizers ------------------------------------------------------ */

typedef struct ps_tok_norm ps_tok_norm;
struct ps_tok_norm {
    /* Normalizes io->p[0..io->len) (valid UTF-8) in place, using tmp as it
     * likes. 0 or PS_ENOMEM. */
    int (*apply)(const ps_tok_norm *n, ps_tok_buf *io, ps_tok_buf *tmp);
    void (*destroy)(ps_tok_norm *n);
};

/* Loads the "normalizer" value j (JSON null or NULL: *out = NULL, the
 * identity). Sequence, NFC, NFD, NFKC, NFKD, Lowercase, Strip,
 * StripAccents, Replace, Prepend, BertNormalizer, Precompiled, ByteLevel. */
int ps_tok_norm_load(const ps_tok_load *c, json_t *j, const char *jpath, ps_tok_norm **out);
/* NULL n is the identity. */
int ps_tok_norm_apply(const ps_tok_norm *n, ps_tok_buf *io, ps_tok_buf *tmp);
void ps_tok_norm_free(ps_tok_norm *n);

/* SentencePiece's Precompiled charsmap (precompiled.c), for norm_load. */
int ps_tok_precompiled_load(const ps_tok_load *c, json_t *j, const char *jpath,
                            ps_tok_norm **out);

/* ---- pre-tokenizers --------------------------------------------------- */

typedef struct ps_tok_pretok ps_tok_pretok;
struct ps_tok_pretok {
    /* Appends the pieces s[0..n) splits into to `out` (which may already
     * hold pieces); `at_start` is the input piece's flag. 0 or PS_ENOMEM
     * (or another negative code). */
    int (*split)(const ps_tok_pretok *p, const char *s, size_t n, bool at_start,
                 ps_tok_pieces *out);
    void (*destroy)(ps_tok_pretok *p);
};

/* Loads the "pre_tokenizer" value (null: *out = NULL, one piece per
 * segment). Sequence, ByteLevel, Split, Metaspace, Whitespace,
 * WhitespaceSplit, Punctuation, Digits, BertPreTokenizer. */
int ps_tok_pretok_load(const ps_tok_load *c, json_t *j, const char *jpath, ps_tok_pretok **out);
/* Replaces the pieces in io by their splits (tmp is work space). NULL p
 * leaves io as it is. */
int ps_tok_pretok_apply(const ps_tok_pretok *p, ps_tok_pieces *io, ps_tok_pieces *tmp);
void ps_tok_pretok_free(ps_tok_pretok *p);

/* ---- models ----------------------------------------------------------- */

typedef enum ps_tok_model_kind {
    PS_TOK_MODEL_BPE = 1,
    PS_TOK_MODEL_UNIGRAM,
    PS_TOK_MODEL_WORDPIECE,
    PS_TOK_MODEL_WORDLEVEL
} ps_tok_model_kind;

typedef struct ps_tok_model ps_tok_model;
struct ps_tok_model {
    ps_tok_model_kind kind;
    ps_tok_vocab vocab; /* token <-> id (Unigram: its pieces, id = index) */
    int32_t unk_id;     /* -1 when the model has no unk token */
    /* Appends the ids of one pre-tokenized piece s[0..n) (non-empty) to
     * out. 0, PS_ENOMEM, or PS_EINVAL with the message set through `err`
     * (a piece the model cannot encode without an unk token, as HF errs). */
    int (*encode)(const ps_tok_model *m, ps_tok_work_slot *slot, const char *s, size_t n,
                  ps_tok_ids *out, ps_error *err);
    void (*destroy)(ps_tok_model *m); /* frees everything, m included */
};

/* Loads "model": dispatches on "type" (BPE, Unigram, WordPiece, WordLevel;
 * a file without "type" is recognised by its members, as HF's untagged
 * deserializer does). */
int ps_tok_model_load(const ps_tok_load *c, json_t *j, const char *jpath, ps_tok_model **out);
int ps_tok_bpe_load(const ps_tok_load *c, json_t *j, const char *jpath, ps_tok_model **out);
int ps_tok_unigram_load(const ps_tok_load *c, json_t *j, const char *jpath, ps_tok_model **out);
int ps_tok_wordlevel_load(const ps_tok_load *c, json_t *j, const char *jpath, ps_tok_model **out);
int ps_tok_wordpiece_load(const ps_tok_load *c, json_t *j, const char *jpath, ps_tok_model **out);
void ps_tok_model_free(ps_tok_model *m);
/* Reads a model's "vocab" object (token -> id, ids 0 .. 2^31-2, not far
 * sparser than the number of tokens) into v (initialised, empty). A later
 * duplicate key wins, as in HF. PS_EFORMAT / PS_ELIMIT / PS_ENOMEM. */
int ps_tok_model_vocab(const ps_tok_load *c, json_t *obj, const char *jpath, ps_tok_vocab *v);

/* ---- the fast load path (fastload.c) ------------------------------------
 * model.vocab and model.merges read without jansson, which parses a copy of
 * the text with them replaced by {} / []. A loader that meets one of those
 * stubs (ps_tok_pre_for) reads the pre-parsed form instead; on any failure
 * it sets `failed`, and ps_tokenizer_load_json redoes the whole load on the
 * plain path, whose messages are the only ones a caller sees. */

typedef struct ps_tok_pre_entry {
    const char *key;
    size_t len;
    int64_t id;
} ps_tok_pre_entry;

typedef struct ps_tok_pre_merge {
    const char *a, *b; /* "a b" form: the whole string in a, b NULL */
    size_t na, nb;
} ps_tok_pre_merge;

typedef struct ps_tok_pre {
    ps_tok_pre_entry *vocab; /* in file order */
    size_t n_vocab;
    ps_tok_pre_merge *merges;
    size_t n_merges;
    bool merges_is_str, has_vocab, has_merges;
    json_t *vocab_stub, *merges_stub; /* in the parsed copy */
    bool vocab_used, merges_used, failed;
    char *arena; /* the decoded strings */
} ps_tok_pre;

/* The load in progress on this thread: a global rather than a member of
 * ps_tok_load so that no loader's signature changes; ps_tok_pre_for only
 * answers for the very stub objects of this load. */
extern _Thread_local ps_tok_pre *ps_tok_pre_current;

/* PS_OK with *text (malloc'd, stubbed) when a member was pre-parsed;
 * PS_EUSAGE when the fast path does not apply; PS_ENOMEM. */
int ps_tok_pre_parse(const char *data, size_t len, ps_tok_pre *pre, char **text, size_t *text_len);
bool ps_tok_pre_bind(ps_tok_pre *pre, json_t *root);
bool ps_tok_pre_complete(const ps_tok_pre *pre);
void ps_tok_pre_free(ps_tok_pre *pre);
/* The pre-parsed form behind `member` when it is a stub of this load. */
ps_tok_pre *ps_tok_pre_for(json_t *member);
/* Internal switch (tests): false forces the plain jansson path. */
void ps_tok_fastload_enable(bool on);
/* How many loads the fast path completed (tests: it was taken). */
unsigned long ps_tok_fastload_hits(void);

/* ---- added tokens ------------------------------------------------------ */

typedef struct ps_tok_added ps_tok_added;

/* One stretch of a split: an added token's id, or -1 for text between. */
typedef struct ps_tok_seg {
    size_t off, len;
    int32_t id;
} ps_tok_seg;

typedef struct ps_tok_segs {
    ps_tok_seg *v;
    size_t n, cap;
} ps_tok_segs;

void ps_tok_segs_free(ps_tok_segs *s);

/* Loads "added_tokens" (an array; null or absent: none). Tokens with
 * normalized=true are matched in normalized text, so their content is put
 * through `norm` here, as HF's AddedVocabulary does. Ids are HF's: HF
 * ignores the "id" in the file and gives each token the id its content has
 * (an earlier added token, then `model`'s vocabulary) or the next id from
 * the model's vocabulary size on (AddedVocabulary::add_tokens); with model
 * NULL the file's ids are taken instead. */
int ps_tok_added_load_model(const ps_tok_load *c, json_t *j, const char *jpath,
                            const ps_tok_norm *norm, const ps_tok_model *model,
                            ps_tok_added **out);
/* Splits s[0..n) into stretches (out is cleared first) on the added tokens
 * whose `normalized` flag equals `normalized`, with HF's leftmost-longest
 * matching and single_word / lstrip / rstrip rules. NULL a: one stretch. */
int ps_tok_added_split(const ps_tok_added *a, bool normalized, const char *s, size_t n,
                       ps_tok_segs *out);
/* id of an added token's content, or -1. */
int32_t ps_tok_added_find(const ps_tok_added *a, const char *s, size_t n);
/* Content of added token `id` (NUL-terminated), or NULL. *special: its flag. */
const char *ps_tok_added_token(const ps_tok_added *a, int32_t id, bool *special);
/* HF's is_special_token: s[0..n) is the content of a token added with
 * special=true (what decode(skip_special_tokens) drops). */
bool ps_tok_added_is_special(const ps_tok_added *a, const char *s, size_t n);
/* The largest added id, or -1 when none. */
int32_t ps_tok_added_max_id(const ps_tok_added *a);
void ps_tok_added_free(ps_tok_added *a);

/* ---- post-processor ----------------------------------------------------- */

typedef struct ps_tok_post ps_tok_post;

/* Loads "post_processor" (TemplateProcessing, RobertaProcessing,
 * BertProcessing, ByteLevel (ids unchanged), Sequence of those with at most
 * one that adds tokens; null: none). */
int ps_tok_post_load(const ps_tok_load *c, json_t *j, const char *jpath, ps_tok_post **out);
/* Special tokens it adds to a single sequence or a pair (HF's added_tokens). */
size_t ps_tok_post_added(const ps_tok_post *p, bool pair);
/* Lays a (and b when pair) out as the template says, appending to ids and
 * types (one type id per id). NULL p: a then b, types 0 then 1. */
int ps_tok_post_apply(const ps_tok_post *p, const int32_t *a, size_t na, const int32_t *b,
                      size_t nb, bool pair, ps_tok_ids *ids, ps_tok_buf *types);
/* The largest id the post-processor adds, or -1 (NULL p: none). */
int32_t ps_tok_post_max_id(const ps_tok_post *p);
/* bos: the first id of the first special token before $A in the single
 * template (Roberta/Bert: cls); eos: the last id of the last special
 * token after it (sep). -1 when there is none. */
void ps_tok_post_ends(const ps_tok_post *p, int32_t *bos, int32_t *eos);
/* The ids of the special tokens before $A in the single template (Roberta,
 * Bert: cls; none, ByteLevel: nothing): copies min(count, cap) of them
 * into ids and returns the count. */
size_t ps_tok_post_prefix(const ps_tok_post *p, int32_t *ids, size_t cap);
void ps_tok_post_free(ps_tok_post *p);

/* ---- decoders ------------------------------------------------------------ */

typedef struct ps_tok_decoder ps_tok_decoder;
struct ps_tok_decoder {
    /* HF's decode_chain: rewrites the n token strings in place (toks is a
     * pieces list). 0 or PS_ENOMEM. */
    int (*chain)(const ps_tok_decoder *d, ps_tok_pieces *toks, ps_tok_pieces *tmp);
    void (*destroy)(ps_tok_decoder *d);
};

/* Loads "decoder" (ByteLevel, Metaspace, ByteFallback, Fuse, Strip,
 * Replace, WordPiece, BPEDecoder, Sequence; null: *out = NULL). */
int ps_tok_decoder_load(const ps_tok_load *c, json_t *j, const char *jpath,
                        ps_tok_decoder **out);
/* Decodes tokens: chain, then concatenation into out (cleared first). NULL d
 * joins the tokens with spaces, as HF does without a decoder. */
int ps_tok_decode(const ps_tok_decoder *d, ps_tok_pieces *toks, ps_tok_pieces *tmp,
                  ps_tok_buf *out);
void ps_tok_decoder_free(ps_tok_decoder *d);

/* ---- the whole pipeline (hf_load.c, hf_encode.c) ---------------------- */

/* Special ids the tokenizer.json implies; -1 when absent (hf_info.c). */
typedef struct ps_tok_hf_specials {
    int32_t bos, eos, pad, unk;
} ps_tok_hf_specials;

struct ps_tok_hf {
    ps_tok_norm *norm;
    ps_tok_pretok *pretok;
    ps_tok_model *model;
    ps_tok_added *added;
    ps_tok_post *post;
    ps_tok_decoder *decoder;
    size_t vocab_size; /* one more than the largest id an encode can give */
    ps_tok_hf_specials specials;
    /* A Metaspace with prepend_scheme "first" is in the pre-tokenizer: it
     * needs to know whether a piece begins at original offset 0, which a
     * normalizer that drops the first character changes (hf_encode.c). */
    bool needs_origin;
};

/* Per-thread buffers of one encode (hung on the scratch, made on first use). */
struct ps_tok_hfwork {
    ps_tok_segs raw_segs, norm_segs;
    ps_tok_buf norm, norm_tmp;
    ps_tok_pieces pieces, pieces_tmp;
    ps_tok_ids a, b, out;
    ps_tok_buf types;
    ps_tok_work_slot model_slot;
    ps_tok_pieces dec_toks, dec_tmp; /* ps_tokenizer_decode */
    ps_tok_buf dec_out;
    ps_tok_ids unk_probe; /* ps_tokenizer_unk_words */
    ps_tok_buf origin, origin_tmp; /* the first character's fate (needs_origin) */
};

/* The scratch's generic-pipeline buffers, made on first use (NULL: no memory). */
struct ps_tok_hfwork *ps_tok_hfwork_of(ps_tok_scratch *s);

/* Loads every component of the parsed file `root` into a new tokenizer
 * (tok->hf set). PS_EUSAGE for a component outside the supported set. */
int ps_tok_hf_load(const ps_tok_load *c, json_t *root, ps_tokenizer **out);
/* Finds bos/eos/pad/unk in the file (template, padding, well-known names). */
void ps_tok_hf_find_specials(struct ps_tok_hf *hf, json_t *root);

void ps_tok_hf_free(struct ps_tok_hf *hf);
void ps_tok_hfwork_free(struct ps_tok_hfwork *w);

/* Encoders of the generic pipeline behind the public ps_tokenizer_* calls
 * (same contracts). `b` NULL: a single sequence. */
int ps_tok_hf_encode(const ps_tokenizer *tok, ps_tok_scratch *s, const char *a, size_t a_len,
                     const char *b, size_t b_len, bool pair, bool add_special,
                     size_t max_length, ps_encoding *out, ps_error *err);
int ps_tok_hf_words(const ps_tokenizer *tok, ps_tok_scratch *s, const char *text, size_t len,
                    ps_word_fn fn, void *ctx, ps_error *err);

#endif /* PS_TOKENIZE_HF_H */
