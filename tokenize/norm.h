/*
 * Internal header: the normalizer types behind ps_tok_norm_load
 * (normalizers.c dispatches; norm_simple.c, norm_unicode.c and norm_bert.c
 * implement). Each *_load reads its JSON object `j` (at JSON path `jpath`)
 * the way tokenizers 0.23.2's serde does: required members missing or of
 * the wrong type -> PS_EFORMAT, unknown members ignored.
 */
#ifndef PS_TOKENIZE_NORM_H
#define PS_TOKENIZE_NORM_H

#include "tokenize/hf.h"
#include "tokenize/unicode.h"

/* Unicode normalization forms. */
typedef enum ps_nf_form { PS_NF_C, PS_NF_D, PS_NF_KC, PS_NF_KD } ps_nf_form;

int ps_norm_nf_load(ps_nf_form form, ps_tok_norm **out);
int ps_norm_strip_accents_load(ps_tok_norm **out);
int ps_norm_lowercase_load(ps_tok_norm **out);
int ps_norm_bytelevel_load(ps_tok_norm **out);
int ps_norm_nmt_load(ps_tok_norm **out);
int ps_norm_strip_load(const ps_tok_load *c, json_t *j, const char *jpath, ps_tok_norm **out);
int ps_norm_prepend_load(const ps_tok_load *c, json_t *j, const char *jpath, ps_tok_norm **out);
int ps_norm_replace_load(const ps_tok_load *c, json_t *j, const char *jpath, ps_tok_norm **out);
int ps_norm_bert_load(const ps_tok_load *c, json_t *j, const char *jpath, ps_tok_norm **out);

/* Applies a normalization form to io->p[0..io->len) (valid UTF-8) exactly
 * as HF's NormalizedString::nfc/nfd/nfkc/nfkd (unicode-normalization-
 * alignments, Unicode 9 data): tmp is work space. 0 or PS_ENOMEM. */
int ps_norm_nf_apply(ps_nf_form form, ps_tok_buf *io, ps_tok_buf *tmp);

/* A required member of obj: returns it, or NULL after setting the error
 * "jpath.key: missing field" (PS_EFORMAT, in *rc). */
json_t *ps_norm_required(const ps_tok_load *c, json_t *obj, const char *jpath, const char *key,
                         int *rc);
/* Required boolean / string members (PS_EFORMAT when missing or of another
 * JSON type; a string must be present, not null). */
int ps_norm_required_bool(const ps_tok_load *c, json_t *obj, const char *jpath, const char *key,
                          bool *out);
int ps_norm_required_string(const ps_tok_load *c, json_t *obj, const char *jpath,
                            const char *key, const char **out, size_t *len);

/* A zeroed normalizer of `size` bytes (its ps_tok_norm first) with its
 * apply and destroy set; NULL when out of memory. */
ps_tok_norm *ps_norm_new(size_t size,
                         int (*apply)(const ps_tok_norm *, ps_tok_buf *, ps_tok_buf *),
                         void (*destroy)(ps_tok_norm *));

/* Appends cp lowercased as Rust's char::to_lowercase: 0 or PS_ENOMEM. */
int ps_norm_put_lower(ps_tok_buf *out, uint32_t cp);

/* Appends what code point cp becomes to out: 0 or a negative code. */
typedef int (*ps_norm_char_fn)(const void *ctx, uint32_t cp, ps_tok_buf *out);
/* Rebuilds io->p[from..len) through fn, character by character, in tmp,
 * then swaps io and tmp (io->p[0..from) is kept as it is). */
int ps_norm_map_chars(ps_tok_buf *io, ps_tok_buf *tmp, size_t from, ps_norm_char_fn fn,
                      const void *ctx);
/* Length of io's leading run of ASCII bytes. */
size_t ps_norm_ascii_prefix(const ps_tok_buf *io);

/* Exchanges two buffers (an apply that rebuilt the text in tmp hands it
 * back to io without a copy). */
static inline void ps_norm_swap(ps_tok_buf *a, ps_tok_buf *b)
{
    ps_tok_buf t = *a;
    *a = *b;
    *b = t;
}


/* `unicode-normalization-alignments`' is_combining_mark (General_Category
 * M in its Unicode 9 tables), which StripAccents removes. */
bool ps_uni_is_combining_mark(uint32_t cp);

/* Override tables (generated: unicode_tables.c, scripts/gen-unicode.py). */
extern const ps_uni_range ps_uni_hf_no_nfkd[]; /* HF leaves whole under NFKD */
extern const unsigned ps_uni_hf_no_nfkd_n;
extern const ps_uni_range ps_uni_hf_mark[]; /* HF mark, utf8proc not M* */
extern const unsigned ps_uni_hf_mark_n;

#endif
