/*
 * What a kept record is tokenized from, and how it is made to fit.
 *
 * Without a template: question and SQL as a pair (segments A and B),
 * truncated longest_first to max_length, as HuggingFace does. With one:
 * the rendered prompt and completion as segments A and B, or the prompt
 * alone when the template has no completion. A prompt that holds a
 * schema is never truncated — cutting it would cut the question or the
 * SQL's tables out of a text the model must read whole — so when it is
 * over max_length the schema is shortened instead: the tables the gold
 * SQL does not mention go first, then the columns it does not mention
 * (schema/shorten.c decides the order). The fewest drops that fit are
 * found by bisection over that order, so a record costs about log2(tables
 * + columns) extra encodings, and only when it is too long.
 */
#include "pipeline/build_internal.h"
#include "schema/schema.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ps_encode_ctx_free(ps_encode_ctx *x)
{
    ps_buf_free(&x->prompt);
    ps_buf_free(&x->completion);
    ps_buf_free(&x->whole);
    free(x->keep_table);
    free(x->keep_column);
    free(x->units);
    free(x->gen_ids);
    free(x->gen_types);
    memset(x, 0, sizeof *x);
}

/* Room for the masks and drop order of `s`. */
static int reserve(ps_encode_ctx *x, const ps_schema *s)
{
    size_t nt = s->n_tables + 1, nc = s->n_columns + 1;
    if (nt > x->cap_tables) {
        unsigned char *p = realloc(x->keep_table, nt);
        if (!p)
            return PS_ENOMEM;
        x->keep_table = p;
        x->cap_tables = nt;
    }
    if (nc > x->cap_columns) {
        unsigned char *p = realloc(x->keep_column, nc);
        if (!p)
            return PS_ENOMEM;
        x->keep_column = p;
        x->cap_columns = nc;
    }
    if (nt + nc > x->cap_units) {
        ps_shorten_unit *u = realloc(x->units, (nt + nc) * sizeof *u);
        if (!u)
            return PS_ENOMEM;
        x->units = u;
        x->cap_units = nt + nc;
    }
    return 0;
}

/* Encodes a (and b when not NULL) with the tokenizer's post-processor, or
 * as the causal and seq2seq layouts lay them out (never truncated). */
static int encode_texts(const ps_build_config *cfg, ps_encode_ctx *x, ps_tok_scratch *ts,
                        const char *a, size_t an, const char *b, size_t bn, size_t max_length,
                        ps_encoding *enc, ps_error *err)
{
    if (cfg->layout != PS_LAYOUT_PAIR)
        return ps_build_encode_gen(cfg, x, ts, a, an, b, bn, enc, err);
    if (b)
        return ps_tokenizer_encode_pair(cfg->tokenizer, ts, a, an, b, bn, max_length, enc, err);
    return ps_tokenizer_encode(cfg->tokenizer, ts, a, an, max_length, enc, err);
}

/* Renders the record's prompt with the first k units of the drop order
 * removed from its schema, and encodes it with the completion. */
static int encode_dropped(const ps_build_config *cfg, ps_encode_ctx *x, ps_tok_scratch *ts,
                          const ps_clean_item *it, size_t k, ps_encoded *out, ps_error *err)
{
    const ps_schema *s = it->schema;
    ps_schema_mask_drop(s, x->units, k, x->keep_table, x->keep_column);
    ps_schema_mask mask = {x->keep_table, x->keep_column};
    bool has_completion = false;
    int rc = ps_template_render(cfg->tmpl, &it->render, &mask, &x->prompt, &x->completion,
                                &has_completion, x->detail, sizeof x->detail);
    if (rc == PS_ENOMEM)
        return ps_error_set(err, rc, "out of memory rendering %s", it->res.id);
    if (rc) /* it rendered whole; a part of it cannot fail to */
        return ps_error_set(err, PS_EINVAL, "%s: record %s: %s", it->res.source, it->res.id,
                            x->detail);
    out->a = x->prompt.data;
    out->a_len = x->prompt.len;
    has_completion = has_completion && !x->a_only;
    out->b = has_completion ? x->completion.data : NULL;
    out->b_len = has_completion ? x->completion.len : 0;
    return encode_texts(cfg, x, ts, out->a, out->a_len, out->b, out->b_len, 0, &out->enc, err);
}

/* Shortens the schema of a prompt over max_length (see the top). */
static int shorten(const ps_build_config *cfg, ps_encode_ctx *x, ps_tok_scratch *ts,
                   const ps_clean_item *it, size_t full_len, ps_encoded *out, ps_error *err)
{
    const ps_schema *s = it->schema;
    size_t nu = 0;
    int n;
    if (reserve(x, s) ||
        ps_schema_shorten_order(s, it->res.sql, it->res.sql_len, x->units, &nu))
        return ps_error_set(err, PS_ENOMEM, "out of memory shortening %s", it->res.id);
    size_t lo = 1, hi = nu, best = 0;
    if (nu) {
        if ((n = encode_dropped(cfg, x, ts, it, nu, out, err)) < 0)
            return n;
        if ((size_t)n <= cfg->max_length)
            best = nu;
        else
            full_len = (size_t)n;
    }
    while (best && lo < hi) { /* the fewest drops that fit are in [lo, hi] */
        size_t mid = lo + (hi - lo) / 2;
        if ((n = encode_dropped(cfg, x, ts, it, mid, out, err)) < 0)
            return n;
        if ((size_t)n <= cfg->max_length)
            hi = mid;
        else
            lo = mid + 1;
    }
    if (!best) {
        out->too_long = true;
        snprintf(x->detail, sizeof x->detail,
                 "%s %zu tokens with every table and column the SQL does not mention dropped "
                 "from the schema (%zu), over --max-length %zu",
                 cfg->layout == PS_LAYOUT_SEQ2SEQ ? "the source is"
                                                  : "the prompt and completion are",
                 full_len, nu, cfg->max_length);
        return 0;
    }
    if ((n = encode_dropped(cfg, x, ts, it, hi, out, err)) < 0)
        return n;
    out->shortened = true;
    for (size_t i = 0; i < hi; i++) {
        out->columns_dropped += x->units[i].is_column;
        out->tables_dropped += !x->units[i].is_column;
    }
    return 0;
}

/* A causal or seq2seq record: prompt and completion (the question and the
 * SQL without a template), shortened or rejected when over the limits. */
static int encode_gen(const ps_build_config *cfg, ps_encode_ctx *x, ps_tok_scratch *ts,
                      const ps_clean_item *it, ps_encoded *out, ps_error *err)
{
    const ps_clean_result *r = &it->res;
    out->a = r->prompt ? r->prompt : r->question;
    out->a_len = r->prompt ? r->prompt_len : r->question_len;
    out->b = x->a_only ? NULL : r->prompt ? r->completion : r->sql;
    out->b_len = !out->b ? 0 : r->prompt ? r->completion_len : r->sql_len;
    int n = ps_build_encode_gen(cfg, x, ts, out->a, out->a_len, out->b, out->b_len, &out->enc,
                                err);
    if (n < 0)
        return n;
    int over = ps_build_gen_too_long(cfg, x, (size_t)n);
    if (!over)
        return 0;
    /* only a schema can give way, and only to the source's limit */
    if (over == PS_GEN_OVER_LENGTH && r->prompt && it->schema && ps_template_uses_schema(cfg->tmpl))
        return shorten(cfg, x, ts, it, (size_t)n, out, err);
    out->too_long = true;
    return 0;
}

int ps_build_encode(const ps_build_config *cfg, ps_encode_ctx *x, ps_tok_scratch *ts,
                    const ps_clean_item *it, ps_encoded *out, ps_error *err)
{
    const ps_clean_result *r = &it->res;
    memset(out, 0, sizeof *out);
    if (cfg->layout != PS_LAYOUT_PAIR) {
        int rc = encode_gen(cfg, x, ts, it, out, err);
        out->prefix_len = x->gen_prefix; /* of the encoding kept, the last one */
        out->eos_appended = x->gen_eos;
        out->end_in_text = x->gen_end_in_text;
        out->junction_merged = x->gen_junction;
        return rc;
    }
    if (!r->prompt && x->a_only) { /* serving a question without SQL */
        out->a = r->question;
        out->a_len = r->question_len;
        int n = ps_tokenizer_encode(cfg->tokenizer, ts, r->question, r->question_len,
                                    cfg->max_length, &out->enc, err);
        return n < 0 ? n : 0;
    }
    if (!r->prompt) { /* no template: the pair as read */
        out->a = r->question;
        out->a_len = r->question_len;
        out->b = r->sql;
        out->b_len = r->sql_len;
        int n = ps_tokenizer_encode_pair(cfg->tokenizer, ts, r->question, r->question_len,
                                         r->sql, r->sql_len, cfg->max_length, &out->enc, err);
        return n < 0 ? n : 0;
    }
    out->a = r->prompt;
    out->a_len = r->prompt_len;
    out->b = x->a_only ? NULL : r->completion;
    out->b_len = out->b ? r->completion_len : 0;
    bool fit_schema = it->schema && cfg->max_length && ps_template_uses_schema(cfg->tmpl);
    int n = encode_texts(cfg, x, ts, out->a, out->a_len, out->b, out->b_len,
                         fit_schema ? 0 : cfg->max_length, &out->enc, err);
    if (n < 0 || !fit_schema || (size_t)n <= cfg->max_length)
        return n < 0 ? n : 0;
    return shorten(cfg, x, ts, it, (size_t)n, out, err);
}
