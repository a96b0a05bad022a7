/*
 * pairshard/tokenizer.h — tokenizers (stage 2).
 *
 * Encodes text exactly as HuggingFace tokenizers 0.23.2 does, id for id:
 * a BERT vocab.txt (as BertTokenizerFast builds it), or any tokenizer.json
 * whose components pairshard implements — models BPE (byte-level and
 * SentencePiece-style), Unigram, WordPiece, WordLevel; the normalizers,
 * pre-tokenizers, post-processors, added tokens and decoders listed in
 * docs/TOKENIZER.md. A file with anything else is refused at load with a
 * message naming the component and its JSON path, never approximated.
 * Truncation is HF's longest_first for pairs, for every model.
 *
 * Threads: a ps_tokenizer is immutable once loaded and may be shared by any
 * number of threads without locking. Each thread encodes with its own
 * ps_tok_scratch (workspace buffers); a scratch must not be used by two
 * threads at once.
 *
 * Errors follow pairshard/common.h: functions return 0 (or a count) on
 * success and a negative PS_E* code on failure, and fill the optional
 * ps_error with a message naming the file, line or byte offset and reason.
 *
 *   ps_tokenizer_options opt;
 *   ps_tokenizer_options_init(&opt);              // lowercase on, as uncased BERT
 *   ps_tokenizer *tok;
 *   if (ps_tokenizer_load_vocab("vocab.txt", &opt, &tok, &err) < 0) ...
 *   ps_tok_scratch *s = ps_tok_scratch_new();
 *   ps_encoding enc;
 *   if (ps_tokenizer_encode_pair(tok, s, q, qlen, sql, sqllen, 128, &enc, &err) < 0) ...
 *   // enc.input_ids[0..enc.len), enc.token_type_ids[0..enc.len)
 *   ps_tok_scratch_free(s);
 *   ps_tokenizer_free(tok);
 */
#ifndef PAIRSHARD_TOKENIZER_H
#define PAIRSHARD_TOKENIZER_H

#include "pairshard/common.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A loaded vocabulary with its normalizer settings. Opaque, read-only. */
typedef struct ps_tokenizer ps_tokenizer;

/* Per-thread workspace for encoding. Opaque. */
typedef struct ps_tok_scratch ps_tok_scratch;

/* How text is normalized and split; the fields mirror HF's BertNormalizer
 * and WordPiece model. Strings are copied by the loaders. */
typedef struct ps_tokenizer_options {
    size_t struct_size;       /* set by ps_tokenizer_options_init (pairshard/common.h) */
    int lowercase;            /* 1: lowercase (Rust char::to_lowercase) */
    int strip_accents;        /* 1, 0, or -1: follow `lowercase` (HF's None) */
    int handle_chinese_chars; /* 1: CJK ideographs become words of their own */
    int clean_text;           /* 1: drop control chars, U+0000, U+FFFD; map
                                 whitespace to a space */
    const char *unk_token;    /* NULL: "[UNK]" */
    const char *continuing_subword_prefix; /* NULL: "##" */
    const char *cls_token;    /* NULL: "[CLS]" */
    const char *sep_token;    /* NULL: "[SEP]" */
    size_t max_input_chars_per_word; /* 0: 100; longer words become unk */
    /* 1: split the raw input on the special tokens ([PAD], [UNK], [CLS],
     * [SEP], [MASK] where the vocabulary has them) before normalizing and
     * encode each as its own id, as BertTokenizerFast does. */
    int match_special_tokens;
} ps_tokenizer_options;

/* The encoded result: views into the scratch that produced it, valid until
 * that scratch is used again or freed. */
typedef struct ps_encoding {
    const int32_t *input_ids;
    const uint8_t *token_type_ids; /* 0 for the first sequence, 1 for the second */
    size_t len;
    int truncated; /* 1 when max_length cut ids off (the text was longer) */
} ps_encoding;

/* Fills `opt` with the defaults of HF's BertTokenizerFast for an uncased
 * model: lowercase 1, strip_accents -1, handle_chinese_chars 1,
 * clean_text 1, match_special_tokens 1, the [UNK]/[CLS]/[SEP] and "##"
 * defaults, max_input_chars_per_word 100. */
PS_API int ps_tokenizer_options_init_size(ps_tokenizer_options *opt, size_t struct_size);
/* Call it through this macro, which passes the caller's sizeof; returns 0,
 * or PS_EINVAL for a NULL opt or a size this library does not know. */
#define ps_tokenizer_options_init(opt) ps_tokenizer_options_init_size((opt), sizeof *(opt))

/* Loads a BERT vocab.txt (one token a line, id = line number counted from 0;
 * trailing whitespace, CR and a missing final newline are tolerated; a
 * duplicated token keeps the id of its last line, as HF's HashMap does).
 * `opt` may be NULL for the defaults, else it must have been set up by
 * ps_tokenizer_options_init (its struct_size is checked: PS_EINVAL). On
 * success stores a new tokenizer in *out and returns 0. Errors: PS_ENOENT /
 * PS_EIO (cannot open/read),
 * PS_EUTF8 (a line is not valid UTF-8; message "file:line: ..."),
 * PS_ELIMIT (more than INT32_MAX tokens or a token over 65535 bytes),
 * PS_EFORMAT (an empty file), PS_EINVAL (bad arguments or options),
 * PS_ENOMEM. */
PS_API int ps_tokenizer_load_vocab(const char *path, const ps_tokenizer_options *opt,
                                   ps_tokenizer **out, ps_error *err);

/* As ps_tokenizer_load_vocab, from `len` bytes in memory; `name` (may be
 * NULL) is used in error messages in place of a file name. */
PS_API int ps_tokenizer_load_vocab_buffer(const char *data, size_t len, const char *name,
                                          const ps_tokenizer_options *opt,
                                          ps_tokenizer **out, ps_error *err);

/* Loads a HuggingFace tokenizer.json: its normalizer, pre-tokenizer,
 * model, added tokens, post-processor and decoder ("truncation" and
 * "padding" are not applied: callers pass max_length, the reader pads).
 * Returns 0 and stores *out, or: PS_ENOENT / PS_EIO, PS_EFORMAT (not JSON,
 * or a member of the wrong type; the message names the line or the JSON
 * path), PS_EUSAGE (a component or option pairshard does not implement,
 * e.g. BPE dropout or a UnicodeScripts pre-tokenizer; the message names it
 * and its JSON path), PS_ELIMIT, PS_ENOMEM. */
PS_API int ps_tokenizer_load_json(const char *path, ps_tokenizer **out, ps_error *err);

/* Warnings about a damaged vocabulary found at load (the tokens load as
 * HuggingFace loads them regardless): a UTF-8 byte-order mark, CRLF line
 * endings, duplicated tokens, HTML-escaped entries (&lt; &gt; &amp; &quot;
 * where < > & " are missing), missing special tokens ([PAD] [UNK] [CLS]
 * [SEP] [MASK]; [PAD] and [MASK] are then added with new ids, as HF adds
 * them). Each is one line "FILE:LINE: what" (or "FILE: what"); the string
 * is owned by `tok`. The library prints nothing: the caller shows them. */
PS_API size_t ps_tokenizer_warning_count(const ps_tokenizer *tok);
PS_API const char *ps_tokenizer_warning(const ps_tokenizer *tok, size_t i);

/* What a trainer needs to know of a tokenizer beyond its ids. */
typedef struct ps_tokenizer_info {
    const char *model; /* "WordPiece", "BPE", "Unigram" or "WordLevel" (owned by the tokenizer) */
    size_t vocab_size; /* as ps_tokenizer_vocab_size */
    /* Special ids, -1 when the tokenizer has none (GPT-2 and Llama have no
     * pad). BERT: bos = [CLS], eos = [SEP], pad = [PAD]. A tokenizer.json
     * has no field for them; docs/TOKENIZER.md lists where they are found
     * (the post-processor's template, "padding", well-known names). */
    int32_t bos_id, eos_id, pad_id, unk_id;
} ps_tokenizer_info;

/* Fills *info. `tok` and `info` must not be NULL. */
PS_API void ps_tokenizer_get_info(const ps_tokenizer *tok, ps_tokenizer_info *info);

/* Decodes ids back to text as HF's decode does: each id to its token (ids
 * with no token are skipped; special tokens too when skip_special_tokens is
 * 1), then the file's decoder (BERT: WordPiece's "##" joining and cleanup;
 * no decoder: tokens joined by spaces). On success stores a NUL-terminated
 * string in *text (and its length in *len, which may be NULL), valid until
 * the scratch is used again, and returns 0; or PS_EINVAL (NULL arguments),
 * PS_ENOMEM. For showing what was built (pairshard inspect --show). */
PS_API int ps_tokenizer_decode(const ps_tokenizer *tok, ps_tok_scratch *s, const int32_t *ids,
                               size_t n, int skip_special_tokens, const char **text, size_t *len,
                               ps_error *err);

/* Frees a tokenizer (NULL is allowed). No scratch may be in use with it. */
PS_API void ps_tokenizer_free(ps_tokenizer *tok);

/* Copies the effective options into *opt, struct_size included (strings
 * point into `tok`, valid while it lives; strip_accents is resolved to 0
 * or 1). A tokenizer.json that is not BERT's reports only unk_token. */
PS_API void ps_tokenizer_get_options(const ps_tokenizer *tok, ps_tokenizer_options *opt);

/* Returns one more than the largest id any encode can return: the number
 * of lines of a vocab.txt (HF's get_vocab_size counts distinct tokens
 * instead, which is smaller when a token is duplicated); for a
 * tokenizer.json the largest id of the model, the added tokens and the
 * post-processor, plus one. */
PS_API size_t ps_tokenizer_vocab_size(const ps_tokenizer *tok);

/* Returns the id of the token spelled by `len` bytes at `token`, or
 * PS_ENOENT when the vocabulary lacks it. */
PS_API int32_t ps_tokenizer_token_to_id(const ps_tokenizer *tok, const char *token, size_t len);

/* Returns the NUL-terminated token of `id` (owned by `tok`), or NULL when
 * `id` is out of range. */
PS_API const char *ps_tokenizer_id_to_token(const ps_tokenizer *tok, int32_t id);

/* Returns a new workspace, or NULL when out of memory. */
PS_API ps_tok_scratch *ps_tok_scratch_new(void);

/* Frees a workspace (NULL is allowed). */
PS_API void ps_tok_scratch_free(ps_tok_scratch *s);

/* Encodes the pair as `[CLS] a [SEP] b [SEP]` with token types 0..0 1..1.
 * `max_length` 0 means no truncation; otherwise the result has at most
 * max_length ids, trimmed with HF's longest_first strategy (max_length must
 * be >= 3). The text must be valid UTF-8; it may be empty and may contain
 * NUL bytes. Returns the number of ids (also in out->len), or:
 * PS_EUTF8 (invalid UTF-8; the message names the sequence and byte offset),
 * PS_EINVAL (max_length 1 or 2, or the vocabulary lacks the unk, [CLS] or
 * [SEP] token it needs; the message names it), PS_ENOMEM.
 * Truncation follows tokenizers 0.23.2 exactly, including where it stops
 * reading a long sequence (see docs/TOKENIZER.md). */
PS_API int ps_tokenizer_encode_pair(const ps_tokenizer *tok, ps_tok_scratch *s,
                                    const char *a, size_t a_len,
                                    const char *b, size_t b_len,
                                    size_t max_length, ps_encoding *out, ps_error *err);

/* Encodes one sequence as `[CLS] text [SEP]` (token types all 0), truncated
 * to max_length ids when max_length > 0 (which must then be >= 2). Returns
 * the number of ids or a negative code, as ps_tokenizer_encode_pair. */
PS_API int ps_tokenizer_encode(const ps_tokenizer *tok, ps_tok_scratch *s,
                               const char *text, size_t len, size_t max_length,
                               ps_encoding *out, ps_error *err);

/* The ids the post-processor puts before the text of a single sequence
 * (ps_tokenizer_encode's leading special tokens): BOS of a Llama-style
 * template, <s> of RoBERTa, [CLS] of BERT, nothing for GPT-2 (ByteLevel or
 * no post-processor) or T5 ("$A </s>"). What follows the text (RoBERTa's
 * </s>, BERT's [SEP]) is not part of it. Copies min(count, cap) ids into
 * `ids` (may be NULL when cap is 0) and returns the count, so that
 * encode(text) == prefix + tokenize(text) + the suffix. A causal set's
 * records start with it (pairshard build --layout causal). */
PS_API size_t ps_tokenizer_prefix_ids(const ps_tokenizer *tok, int32_t *ids, size_t cap);

/* Tokenizes without special tokens or truncation (HF's
 * encode(add_special_tokens=false)). Returns the count, as above. */
PS_API int ps_tokenizer_tokenize(const ps_tokenizer *tok, ps_tok_scratch *s,
                                 const char *text, size_t len, ps_encoding *out,
                                 ps_error *err);

/* Called once per word of the normalized, pre-tokenized text; a non-zero
 * return stops the walk and becomes the walk's return value. */
typedef int (*ps_word_fn)(void *ctx, const char *word, size_t len);

/* Runs the normalizer and pre-tokenizer only (the strings WordPiece would
 * see; special tokens appear verbatim) and calls `fn` for each word.
 * Returns 0, the first non-zero value `fn` returned, or PS_EUTF8/PS_ENOMEM.
 * For inspection and conformance tests. */
PS_API int ps_tokenizer_words(const ps_tokenizer *tok, ps_tok_scratch *s,
                              const char *text, size_t len, ps_word_fn fn, void *ctx,
                              ps_error *err);

/* Calls `fn` for each word of text[0..len) (normalized and pre-tokenized,
 * as ps_tokenizer_words gives it) that the model turns into the unk token,
 * in text order; the whole text is walked (no truncation). WordPiece and
 * WordLevel lose whole words; for BPE and Unigram, which keep the known
 * tokens of a word beside its unk tokens, `fn` gets the span from the
 * word's first to its last character that is unk by itself (T5's "▁<"
 * is reported as "<": the marker ▁ is a token). For diagnosing
 * [UNK]: call it only for text whose encoding held one. Uses the scratch
 * (its encoding is overwritten). Returns 0, fn's first non-zero value, or
 * PS_EUTF8/PS_ENOMEM/PS_EINVAL. */
PS_API int ps_tokenizer_unk_words(const ps_tokenizer *tok, ps_tok_scratch *s,
                                  const char *text, size_t len, ps_word_fn fn, void *ctx,
                                  ps_error *err);

/* Why a word (as ps_tokenizer_unk_words reports it) may have become [UNK]. */
enum {
    PS_UNK_HINT_NONE = 0,
    PS_UNK_HINT_LOWERCASE = 1, /* the word lower-cased is in the vocabulary: --lowercase */
    PS_UNK_HINT_RULES = 2,     /* a typographic/full-width/emoji character: a cleaning rule */
    PS_UNK_HINT_HTML = 3       /* the vocabulary holds its HTML entity (&lt; for <) */
};

/* Returns a PS_UNK_HINT_* for `word`. Uses the scratch as above. */
PS_API int ps_tokenizer_unk_hint(const ps_tokenizer *tok, ps_tok_scratch *s, const char *word,
                                 size_t len);

#ifdef __cplusplus
}
#endif

#endif /* PAIRSHARD_TOKENIZER_H */
