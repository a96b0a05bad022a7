/*
 * pairshard/preprocess.h — a shard set's exact preprocessing, at serving.
 *
 * A model trained on a set saw each record after cleaning (normalisation,
 * control removal, the user's rules, whitespace folding), rendering by a
 * template and tokenization. A ps_preprocessor is recreated from the set
 * alone: its manifest's configuration and the files the build embedded in
 * DIR/preprocess/ (rules, template, tokenizer file, schemas), each checked
 * against the SHA-256 the manifest lists. ps_preprocess then takes a raw
 * record and returns what the build would have stored for it — the ids,
 * token types and mask, id for id — or the reason the build would have
 * rejected it. It runs the build's own per-record code (ps_clean_record,
 * then the build's encoder), not a copy of it.
 *
 * Thread safety: a preprocessor may be shared by any number of threads.
 * ps_preprocess and ps_preprocessor_clean may be called on one preprocessor
 * from several threads at once, and give each thread what serial calls
 * would. Each thread works in scratch of its own (cleaner worker,
 * tokenizer scratch, output buffers), taken from the preprocessor's pool
 * on its first call and kept until the thread ends or calls
 * ps_preprocessor_release; a thread that ends gives it back to the pool
 * for the next thread, so a server that starts a thread per request does
 * not allocate per request. What a call returns is the calling thread's:
 * it stays valid until that thread's next call on the same preprocessor
 * (or its ps_preprocessor_release), whatever other threads do. The pool
 * holds at most as many scratch sets as threads have held at once.
 * ps_preprocessor_open and ps_preprocessor_free are not to be called
 * concurrently with other calls on the same preprocessor: free it only
 * after every thread's last call on it has returned (and its results are
 * no longer read). Distinct preprocessors are independent.
 */
#ifndef PAIRSHARD_PREPROCESS_H
#define PAIRSHARD_PREPROCESS_H

#include "pairshard/common.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ps_preprocessor ps_preprocessor;

/* Opens the preprocessing of the shard set at `dir`.
 * @return 0, or (message in err):
 *   PS_ENOENT    no manifest.json in dir
 *   PS_EVERSION  the set was built before sets embedded their
 *                preprocessing (rebuild it to serve it); or this host's
 *                utf8proc or PCRE2 has another Unicode version than the
 *                set was built with, and the set's tokenizer depends on it
 *                (ps_preprocessor_open_opts below)
 *   PS_ECORRUPT  an embedded file is missing or its SHA-256 differs from the
 *                manifest's (the message names the file), or what it holds
 *                does not match what the build used (the tokenizer file's
 *                and rules file's SHA-256, the schemas' and template's
 *                digests)
 *   PS_EFORMAT   the manifest is not JSON / lacks its configuration
 *   PS_ENOMEM    out of memory; or a code of the loaders (tokenizer,
 *                rules, template, schemas) with their message. */
PS_API int ps_preprocessor_open(const char *dir, ps_preprocessor **out, ps_error *err);

/* The same for source `source` of a set built from several sources (its
 * manifest's "sources"): that source's cleaning options, template and
 * schemas (docs/BUILD.md, "Mixtures"), so that its prompts are rendered
 * as the build rendered them: ps_preprocessor_open_opts with the default
 * options and `source`. `source` NULL is ps_preprocessor_open. A set
 * of several sources opened without a source, or with a name it does not
 * have, is PS_EUSAGE (the message lists its sources). */
PS_API int ps_preprocessor_open_source(const char *dir, const char *source,
                                       ps_preprocessor **out, ps_error *err);
/* Options of ps_preprocessor_open_opts: an options struct that grows
 * (pairshard/common.h); initialise it with ps_preprocess_options_init. */
typedef struct ps_preprocess_options {
    size_t struct_size;
    /* Token ids depend on the Unicode data of utf8proc and PCRE2
     * (docs/TOKENIZER.md, "Unicode versions"). When this host's differ from
     * those the set was built with, or from those pairshard's tables were
     * generated for, in a library the set's tokenizer depends on, the open
     * is refused (PS_EVERSION) unless this is non-zero: then it succeeds
     * and ps_preprocessor_get_warning names the libraries and versions.
     * Default 0. */
    int allow_unicode_mismatch;
    /* Of a set built from several sources (its manifest's "sources"): the
     * source whose cleaning options, template and schemas to serve with
     * (docs/BUILD.md, "Mixtures"). NULL (the default): the set must have
     * one source. A set of several opened without one, or with a name it
     * does not have, is PS_EUSAGE (the message lists its sources). */
    const char *source;
} ps_preprocess_options;

/* Writes the defaults into the caller's `struct_size` bytes; call it
 * through ps_preprocess_options_init(&o). 0 or PS_EINVAL (a size no
 * version of the struct had). */
PS_API int ps_preprocess_options_init_size(ps_preprocess_options *o, size_t struct_size);
#define ps_preprocess_options_init(o) ps_preprocess_options_init_size((o), sizeof *(o))

/* ps_preprocessor_open with options (NULL: the defaults, which is what
 * ps_preprocessor_open does). Also returns PS_EVERSION when this host's
 * utf8proc or PCRE2 Unicode version differs from the set's (or from the
 * one pairshard's tables assume) in a library the set's tokenizer depends
 * on, unless opt->allow_unicode_mismatch; PS_EINVAL for an options struct
 * of a size no version had. */
PS_API int ps_preprocessor_open_opts(const char *dir, const ps_preprocess_options *opt,
                                     ps_preprocessor **out, ps_error *err);

/* What the open let pass with a warning (allow_unicode_mismatch: the
 * Unicode versions that differ, and the libraries), or NULL when nothing
 * did. Valid until ps_preprocessor_free. */
PS_API const char *ps_preprocessor_get_warning(const ps_preprocessor *p);

/* NULL is a no-op. */
PS_API void ps_preprocessor_free(ps_preprocessor *p);

/* A named field of the raw record besides question, sql and db_id: what a
 * template's {NAME} placeholder reads ({evidence} for BIRD). */
typedef struct ps_preprocess_field {
    const char *name;  /* NUL-terminated */
    const char *value; /* UTF-8, NUL-terminated */
} ps_preprocess_field;

/* One record to preprocess: either `record`, a raw JSON object as the
 * build's inputs held it (one JSONL line or array element), or the fields
 * (record NULL). NUL-terminated strings. */
typedef struct ps_preprocess_input {
    const char *record;       /* a raw JSON record; the others are then unused */
    size_t record_len;
    const char *question;
    const char *sql;          /* NULL at serving: the ids are then those of
                                 the prompt alone (template) or of the
                                 question alone ([CLS] q [SEP], pair layout) */
    const char *db_id;        /* NULL when the set has no schemas or template */
    const ps_preprocess_field *fields;
    size_t n_fields;
    /* A set built from dialogues (--turns): the earlier utterances of the
     * dialogue, most recent first, as {history} reads them (raw: each is
     * cleaned like the question); none for a first turn. Other sets ignore
     * it. A raw `record` is refused for such a set: give the fields. */
    const char *const *history;
    size_t n_history;
} ps_preprocess_input;

/* What the build would have stored. Pointers belong to the preprocessor
 * (the calling thread's scratch) and stay valid until the same thread's
 * next ps_preprocess or ps_preprocessor_clean call on it, its
 * ps_preprocessor_release, or ps_preprocessor_free. Filled by
 * ps_preprocess; fields are only ever appended (pairshard/common.h,
 * "Structs the library fills"). */
typedef struct ps_preprocess_output {
    int rejected;             /* 1: the build would have rejected the record */
    const char *reason;       /* rejected: the reason code (pairshard/clean.h) */
    const char *rule;         /* rejected by a rule: its name, else NULL */
    const char *detail;       /* rejected: one sentence */
    const char *question;     /* the cleaned question */
    size_t question_len;
    const char *sql;          /* the cleaned SQL; NULL when the input had none */
    size_t sql_len;
    const char *prompt;       /* with a template: the rendered prompt, as
                                 tokenized (its schema shortened when it had
                                 to be); else NULL */
    size_t prompt_len;
    const char *completion;   /* with a template and sql: the completion */
    size_t completion_len;
    const int32_t *input_ids;
    const uint8_t *token_type_ids;
    const uint8_t *attention_mask; /* all ones: one record has no padding */
    size_t length;
    int truncated;            /* max_length cut ids off */
    int shortened;            /* the prompt's schema was shortened to fit */
} ps_preprocess_output;

/* Cleans, renders and tokenizes one record as the set's build did, and
 * fills *out (not NULL), writing `out_size` bytes and no more (also on
 * failure, when it is cleared). Call it through the macro
 * ps_preprocess(p, in, out, err), which passes sizeof *out.
 * Thread-safe: see the top of this header.
 * @return 0 (out->rejected says whether it would have been kept), or a
 *         negative code for what is not the record's fault: PS_EINVAL (in
 *         lacks a question and a record; `out_size` smaller than
 *         ps_preprocess_output has ever been, 136 bytes, and nothing
 *         written), PS_EUSAGE (a raw `record` for a set built from
 *         dialogues: give the turn's fields and history), PS_ENOMEM, a
 *         rule's failure. */
PS_API int ps_preprocess_size(ps_preprocessor *p, const ps_preprocess_input *in,
                              ps_preprocess_output *out, size_t out_size, ps_error *err);
#define ps_preprocess(p, in, out, err) ps_preprocess_size((p), (in), (out), sizeof *(out), (err))

/* Cleans one field's text as the set's build cleaned `field` ("question",
 * "sql", or a template field such as "evidence": cleaned like the
 * question). On 0, *out (valid as ps_preprocess's output: until the
 * calling thread's next call on p) holds the cleaned text, or *reason the
 * rejection code (*out NULL). Thread-safe. */
PS_API int ps_preprocessor_clean(ps_preprocessor *p, const char *field, const char *text,
                                 size_t len, const char **out, size_t *out_len,
                                 const char **reason, ps_error *err);

/* Gives the calling thread's scratch back to p's pool now rather than when
 * the thread ends (what its last call returned is then no longer valid):
 * for a long-lived thread that is done with p for a while. A thread that
 * holds none, or p NULL: a no-op. Thread-safe. */
PS_API void ps_preprocessor_release(ps_preprocessor *p);

/* The set's max_length (0: none) and the tokenizer's pad id (-1: none). */
PS_API size_t ps_preprocessor_get_max_length(const ps_preprocessor *p);
PS_API int32_t ps_preprocessor_get_pad_id(const ps_preprocessor *p);

#ifdef __cplusplus
}
#endif

#endif /* PAIRSHARD_PREPROCESS_H */
