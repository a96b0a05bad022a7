/*
 * The ids of a causal or seq2seq record (docs/BUILD.md, "Layouts").
 *
 * causal:  prefix + tokenize(prompt) + the completion's ids + the end. The
 *          prefix is what the tokenizer's post-processor puts before a
 *          single sequence (BOS, <s>, [CLS]; ps_tokenizer_prefix_ids); its
 *          suffix (RoBERTa's </s>, BERT's [SEP]) is not added. The
 *          completion is tokenized as the continuation it is: the whole
 *          text prompt + completion is tokenized once, and when its first
 *          ids are the prompt's own (the text has a token boundary at the
 *          junction) the rest are the completion's, so prompt + completion
 *          is id for id what the tokenizer gives the whole text: no
 *          Metaspace prefix or BOS before the completion, no space added.
 *          When a token of the whole text crosses the junction (a prompt
 *          ending in a space before "SELECT"), no split of the whole
 *          text's ids keeps the prompt the server sends: the completion is
 *          tokenized apart, and the record is counted (junction_merged).
 *          The end: a completion whose text ends in a special token (the
 *          template's <|im_end|>, <|eot_id|>, </s>) ends there; any other
 *          gets the tokenizer's EOS, unless --no-append-eos.
 * seq2seq: encode(prompt) + encode(completion), each with the
 *          single-sequence post-processor (T5: text </s>), stored one after
 *          the other; the boundary is the source's length.
 * Nothing is cut: a record over the limits is shortened (a schema prompt,
 * build_encode.c) or rejected too_long by the caller.
 */
#include "pipeline/build_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int reserve(ps_encode_ctx *x, size_t n)
{
    if (n <= x->gen_cap)
        return 0;
    size_t cap = x->gen_cap ? x->gen_cap : 256;
    while (cap < n)
        cap *= 2;
    int32_t *ids = realloc(x->gen_ids, cap * sizeof *ids);
    if (!ids)
        return PS_ENOMEM;
    x->gen_ids = ids;
    uint8_t *types = realloc(x->gen_types, cap);
    if (!types)
        return PS_ENOMEM;
    x->gen_types = types;
    x->gen_cap = cap;
    return 0;
}

/* Appends ids[0..n) with type `type` after the first *len. */
static int append(ps_encode_ctx *x, size_t *len, const int32_t *ids, size_t n, uint8_t type)
{
    if (reserve(x, *len + n + 1))
        return PS_ENOMEM;
    if (n)
        memcpy(x->gen_ids + *len, ids, n * sizeof *ids);
    memset(x->gen_types + *len, type, n);
    *len += n;
    return 0;
}

/* Encodes text (NULL: nothing) with the post-processor (`special`) or
 * without, and appends it. */
static int put_text(const ps_build_config *cfg, ps_encode_ctx *x, ps_tok_scratch *ts,
                    const char *text, size_t n, bool special, uint8_t type, size_t *len,
                    ps_error *err)
{
    if (!text)
        return 0;
    ps_encoding e;
    int rc = special ? ps_tokenizer_encode(cfg->tokenizer, ts, text, n, 0, &e, err)
                     : ps_tokenizer_tokenize(cfg->tokenizer, ts, text, n, &e, err);
    if (rc < 0)
        return rc;
    if (append(x, len, e.input_ids, e.len, type))
        return ps_error_set(err, PS_ENOMEM, "out of memory while tokenizing");
    return 0;
}

/* The completion b as it continues the prompt a, whose ids (without the
 * prefix) are x->gen_ids[np..*len): the ids of the whole text past the
 * prompt's when they begin with the prompt's (a token boundary at the
 * junction), else b tokenized apart (x->gen_junction). */
static int put_continuation(const ps_build_config *cfg, ps_encode_ctx *x, ps_tok_scratch *ts,
                            const char *a, size_t an, const char *b, size_t bn, size_t np,
                            size_t *len, ps_error *err)
{
    size_t plen = *len - np;
    ps_buf_reset(&x->whole);
    if (ps_buf_append(&x->whole, a, an) || ps_buf_append(&x->whole, b, bn))
        return ps_error_set(err, PS_ENOMEM, "out of memory while tokenizing");
    ps_encoding w;
    int rc = ps_tokenizer_tokenize(cfg->tokenizer, ts, x->whole.data ? x->whole.data : "",
                                   x->whole.len, &w, err);
    if (rc < 0)
        return rc;
    if (w.len >= plen && memcmp(w.input_ids, x->gen_ids + np, plen * sizeof *w.input_ids) == 0) {
        if (append(x, len, w.input_ids + plen, w.len - plen, 1))
            return ps_error_set(err, PS_ENOMEM, "out of memory while tokenizing");
        return 0;
    }
    x->gen_junction = true;
    return put_text(cfg, x, ts, b, bn, false, 1, len, err);
}

/* The completion's end (see the top): x->gen_end_in_text or x->gen_eos. */
static int put_end(const ps_build_config *cfg, ps_encode_ctx *x, size_t source, size_t *len)
{
    if (*len > source && ps_tokenizer_is_special(cfg->tokenizer, x->gen_ids[*len - 1])) {
        x->gen_end_in_text = true;
        return 0;
    }
    if (cfg->no_append_eos)
        return 0;
    ps_tokenizer_info ti;
    ps_tokenizer_get_info(cfg->tokenizer, &ti);
    if (ti.eos_id < 0) /* refused before the build (ps_build_check_end) */
        return 0;
    x->gen_eos = true;
    return append(x, len, &ti.eos_id, 1, 1);
}

int ps_build_encode_gen(const ps_build_config *cfg, ps_encode_ctx *x, ps_tok_scratch *ts,
                        const char *a, size_t an, const char *b, size_t bn, ps_encoding *enc,
                        ps_error *err)
{
    size_t len = 0, np = 0;
    int rc;
    bool seq2seq = cfg->layout == PS_LAYOUT_SEQ2SEQ;
    x->gen_eos = x->gen_end_in_text = x->gen_junction = false;
    if (!seq2seq) {
        np = ps_tokenizer_prefix_ids(cfg->tokenizer, NULL, 0);
        if (reserve(x, np + 1))
            return ps_error_set(err, PS_ENOMEM, "out of memory while tokenizing");
        ps_tokenizer_prefix_ids(cfg->tokenizer, x->gen_ids, np);
        memset(x->gen_types, 0, np);
        len = np;
    }
    x->gen_prefix = (uint32_t)np;
    if ((rc = put_text(cfg, x, ts, a ? a : "", an, seq2seq, 0, &len, err)))
        return rc;
    size_t source = len;
    if (seq2seq)
        rc = put_text(cfg, x, ts, b, bn, true, 1, &len, err);
    else if (b && !(rc = put_continuation(cfg, x, ts, a ? a : "", an, b, bn, np, &len, err)) &&
             put_end(cfg, x, source, &len))
        rc = ps_error_set(err, PS_ENOMEM, "out of memory while tokenizing");
    if (rc)
        return rc;
    if (len > INT32_MAX)
        return ps_error_set(err, PS_ELIMIT, "a record of %zu tokens", len);
    x->gen_target = len - source;
    enc->input_ids = x->gen_ids;
    enc->token_type_ids = x->gen_types;
    enc->len = len;
    enc->truncated = 0;
    return (int)(seq2seq ? source : len);
}

int ps_build_gen_too_long(const ps_build_config *cfg, ps_encode_ctx *x, size_t fit)
{
    size_t max_target = cfg->max_target_length ? cfg->max_target_length : cfg->max_length;
    if (cfg->layout == PS_LAYOUT_SEQ2SEQ && max_target && x->gen_target > max_target) {
        snprintf(x->detail, sizeof x->detail,
                 "the target is %zu tokens, over --max-target-length %zu (a target is never "
                 "truncated)",
                 x->gen_target, max_target);
        return PS_GEN_OVER_TARGET;
    }
    if (cfg->max_length && fit > cfg->max_length) {
        snprintf(x->detail, sizeof x->detail, "the %s is %zu tokens, over --max-length %zu",
                 cfg->layout == PS_LAYOUT_SEQ2SEQ ? "source" : "record (prompt and completion)",
                 fit, cfg->max_length);
        return PS_GEN_OVER_LENGTH;
    }
    return 0;
}

/* Whether the text `src` (a template's completion as written) ends in a
 * special token of the tokenizer. */
static int ends_special(const ps_tokenizer *tok, const char *src, bool *yes, ps_error *err)
{
    *yes = false;
    ps_tok_scratch *ts = ps_tok_scratch_new();
    if (!ts)
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    ps_encoding e;
    int rc = ps_tokenizer_tokenize(tok, ts, src, strlen(src), &e, err);
    if (rc >= 0) {
        *yes = e.len && ps_tokenizer_is_special(tok, e.input_ids[e.len - 1]);
        rc = 0;
    }
    ps_tok_scratch_free(ts);
    return rc;
}

int ps_build_check_end(const ps_build_config *cfg, ps_error *err)
{
    if (cfg->layout != PS_LAYOUT_CAUSAL || cfg->no_append_eos)
        return 0;
    ps_tokenizer_info ti;
    ps_tokenizer_get_info(cfg->tokenizer, &ti);
    if (ti.eos_id >= 0)
        return 0;
    ps_template_info t = {0};
    if (cfg->tmpl)
        ps_template_get_info(cfg->tmpl, &t);
    bool in_text = false;
    int rc = t.completion ? ends_special(cfg->tokenizer, t.completion, &in_text, err) : 0;
    if (rc || in_text)
        return rc;
    return ps_error_set(err, PS_EUSAGE,
                        "--layout causal: the tokenizer has no EOS token (docs/TOKENIZER.md, "
                        "\"Special ids\") and %s does not end its completion with a special "
                        "token, so no record would teach the model to stop: end the "
                        "template's completion with the model's end token (e.g. "
                        "\"{sql}<|im_end|>\"), or pass --no-append-eos to build without one",
                        t.name ? "the template" : "a build without a template");
}
