/*
 * The ids of a causal or seq2seq record (docs/BUILD.md, "Layouts").
 *
 * causal:  prefix + tokenize(prompt) + tokenize(completion). The prefix is
 *          what the tokenizer's post-processor puts before a single
 *          sequence (BOS, <s>, [CLS]; ps_tokenizer_prefix_ids); its suffix
 *          (RoBERTa's </s>, BERT's [SEP]) is not added, and the completion
 *          gets no special tokens: where a completion ends is the
 *          template's text (<|im_end|>, <|eot_id|>), so it is the same ids
 *          whatever the tokenizer's post-processor says. The two texts are
 *          tokenized apart, so the boundary between them is a token
 *          boundary by construction, never found by searching ids.
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

int ps_build_encode_gen(const ps_build_config *cfg, ps_encode_ctx *x, ps_tok_scratch *ts,
                        const char *a, size_t an, const char *b, size_t bn, ps_encoding *enc,
                        ps_error *err)
{
    size_t len = 0;
    int rc;
    bool seq2seq = cfg->layout == PS_LAYOUT_SEQ2SEQ;
    if (!seq2seq) {
        size_t np = ps_tokenizer_prefix_ids(cfg->tokenizer, NULL, 0);
        if (reserve(x, np + 1))
            return ps_error_set(err, PS_ENOMEM, "out of memory while tokenizing");
        ps_tokenizer_prefix_ids(cfg->tokenizer, x->gen_ids, np);
        memset(x->gen_types, 0, np);
        len = np;
    }
    if ((rc = put_text(cfg, x, ts, a ? a : "", an, seq2seq, 0, &len, err)))
        return rc;
    size_t source = len;
    if ((rc = put_text(cfg, x, ts, b, bn, seq2seq, 1, &len, err)))
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
