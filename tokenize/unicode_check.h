/*
 * Which host Unicode data a tokenizer's ids depend on, and whether the
 * host's utf8proc and PCRE2 carry the Unicode versions the generated tables
 * (unicode_tables.c) were made for: the tables correct exactly the code
 * points where that version and HF's crates disagree, so with another
 * version they correct the wrong ones and ids can change.
 */
#ifndef PS_TOKENIZE_UNICODE_CHECK_H
#define PS_TOKENIZE_UNICODE_CHECK_H

#include "tokenize/tokenize.h"

#include <stdbool.h>
#include <stddef.h>

/* Whose Unicode data a tokenizer's ids depend on: utf8proc's (categories,
 * normalization, case: every normalizer and pre-tokenizer, BERT's
 * pipeline, single_word added tokens) and PCRE2's (a Split or Replace
 * regex). */
enum { PS_UNIDEP_UTF8PROC = 1, PS_UNIDEP_PCRE2 = 2 };

/* The Unicode versions of the linked utf8proc and PCRE2 ("15.0.0"). */
const char *ps_uni_host_utf8proc(void);
const char *ps_uni_host_pcre2(void);

/* PS_UNIDEP_* names, joined by ", " ("utf8proc, PCRE2"), into buf. */
void ps_uni_deps_names(unsigned deps, char *buf, size_t n);

/* The first library whose Unicode versions differ: its name ("utf8proc",
 * "PCRE2") and the two versions ("unknown" for one not known). */
typedef struct ps_uni_mismatch {
    const char *lib, *have, *want;
} ps_uni_mismatch;

/* Compares the Unicode versions `have` (utf8proc's, PCRE2's: NULL for one
 * not known, which differs from any) with `want` for the libraries in
 * `deps`: true when they match, else false with *mm the first that
 * differs. */
bool ps_uni_versions_match(unsigned deps, const char *want_utf8proc, const char *want_pcre2,
                           const char *have_utf8proc, const char *have_pcre2,
                           ps_uni_mismatch *mm);

/* Sets tok->unicode_deps from its components (`regexes`: how many PCRE2
 * patterns its load compiled) and, unless `any_host`, refuses with
 * PS_EVERSION (naming `name`, both versions and the library) a host whose
 * utf8proc or PCRE2 has another Unicode than the tables were generated for,
 * when the tokenizer's ids depend on it. */
int ps_tok_unicode_check(ps_tokenizer *tok, const char *name, unsigned regexes,
                         bool any_host, ps_error *err);


#endif
