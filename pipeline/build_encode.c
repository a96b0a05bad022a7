/*
 * What a kept record is tokenized from, and how it is made to fit.
 *
 * Without a template: question and SQL as a pair (segments A and B),
 * truncated longest_first to max_length, as HuggingFace does. With one:
 * the rendered prompt and completion as segments A and B, or the prompt
 * alone when the template has no completion. A prompt that holds a
 * schema is never truncated — cutting it would cut the question or the
 * SQL's tables out of a text the model must read whole — so when the
 * prompt alone is over its budget (ps_build_prompt_budget: config alone)
 * its schema is selected instead: the most tables and columns, in the
 * order the question ranks them (schema/select.c; never the SQL), that
 * fit. Serving, which has no SQL or completion, runs the same code and
 * selects the same. A record whose prompt and completion are still over
 * max_length is rejected too_long. The SQL is read afterwards only to
 * measure what the selection kept (gold recall, schema/shorten.c).
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
    free(x->gold_table);
    free(x->gold_column);
    free(x->texts);
    ps_select_scratch_free(&x->sel);
    ps_leak_scratch_free(x->leak_s);
    free(x->leak_h);
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

/* Room for the gold flags of `s` (measuring only). */
static int reserve_gold(ps_encode_ctx *x, const ps_schema *s)
{
    if (s->n_tables + 1 > x->cap_gold_t) {
        if (ps_array_resize(&x->gold_table, s->n_tables + 1, 1))
            return PS_ENOMEM;
        x->cap_gold_t = s->n_tables + 1;
    }
    if (s->n_columns + 1 > x->cap_gold_c) {
        if (ps_array_resize(&x->gold_column, s->n_columns + 1, 1))
            return PS_ENOMEM;
        x->cap_gold_c = s->n_columns + 1;
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

size_t ps_build_prompt_budget(const ps_build_config *cfg)
{
    if (!cfg->max_length || cfg->max_prompt_length)
        return cfg->max_prompt_length;
    /* a seq2seq source has max_length to itself; elsewhere the completion
     * shares it, and a quarter is left for it */
    return cfg->layout == PS_LAYOUT_SEQ2SEQ ? cfg->max_length
                                            : cfg->max_length - cfg->max_length / 4;
}

/* The texts the ranking reads: the question, every field the prompt
 * shows ({evidence}), and the dialogue's earlier utterances — what
 * serving has too, never the SQL. */
static size_t select_texts(const ps_build_config *cfg, ps_encode_ctx *x,
                           const ps_render_fields *f)
{
    ps_template_info ti;
    ps_template_get_info(cfg->tmpl, &ti);
    size_t n = 0, want = 1 + ti.n_fields + f->n_history;
    if (want > x->cap_texts) {
        ps_select_text *t = realloc(x->texts, want * sizeof *t);
        if (!t)
            return SIZE_MAX;
        x->texts = t;
        x->cap_texts = want;
    }
    x->texts[n++] = (ps_select_text){f->question, f->question_len};
    for (size_t i = 0; i < ti.n_fields; i++) {
        char ph[160];
        snprintf(ph, sizeof ph, "{%s}", ti.fields[i]);
        if (f->values && f->values[i] && strstr(ti.prompt, ph))
            x->texts[n++] = (ps_select_text){f->values[i], f->value_lens[i]};
    }
    for (size_t i = 0; i < f->n_history; i++)
        x->texts[n++] = (ps_select_text){f->history[i], f->history_lens[i]};
    return n;
}

/* Renders the record's prompt keeping the first k units of the rank (see
 * schema/select.c) into x->prompt. */
static int render_kept(const ps_build_config *cfg, ps_encode_ctx *x, const ps_clean_item *it,
                       size_t k, ps_error *err)
{
    ps_schema_mask_keep(&x->sel, it->schema, x->units, k, x->keep_table, x->keep_column);
    ps_schema_mask mask = {x->keep_table, x->keep_column};
    bool has_completion = false;
    int rc = ps_template_render(cfg->tmpl, &it->render, &mask, &x->prompt, &x->completion,
                                &has_completion, x->detail, sizeof x->detail);
    if (rc == PS_ENOMEM)
        return ps_error_set(err, rc, "out of memory rendering %s", it->res.id);
    if (rc) /* it rendered whole; a part of it cannot fail to */
        return ps_error_set(err, PS_EINVAL, "%s: record %s: %s", it->res.source, it->res.id,
                            x->detail);
    return 0;
}

/* ... and encodes it alone: its length against the budget. */
static int encode_kept(const ps_build_config *cfg, ps_encode_ctx *x, ps_tok_scratch *ts,
                       const ps_clean_item *it, size_t k, ps_encoded *out, ps_error *err)
{
    int rc = render_kept(cfg, x, it, k, err);
    if (rc)
        return rc;
    out->a = x->prompt.data;
    out->a_len = x->prompt.len;
    return encode_texts(cfg, x, ts, out->a, out->a_len, NULL, 0, 0, &out->enc, err);
}

/* Where the boundary likely is: the most units whose prompt would fit at
 * the whole prompt's tokens per byte. Renders only (a few microseconds),
 * so that the exact search below encodes two or three prompts, not
 * log2(units). */
static int guess_kept(const ps_build_config *cfg, ps_encode_ctx *x, const ps_clean_item *it,
                      size_t nu, size_t budget, size_t full_len, size_t *guess, ps_error *err)
{
    uint64_t full_bytes = it->res.prompt_len ? it->res.prompt_len : 1;
    size_t lo = 0, hi = nu;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        int rc = render_kept(cfg, x, it, mid, err);
        if (rc)
            return rc;
        if ((uint64_t)x->prompt.len * full_len <= (uint64_t)budget * full_bytes)
            lo = mid;
        else
            hi = mid;
    }
    *guess = lo;
    return 0;
}

/* Selects the schema of a prompt over its budget: the most units of the
 * rank whose prompt fits (the prompt grows with the units kept), found
 * exactly, starting where the rendered length says; build and serving
 * search alike, so they find the same. Sets out->too_long when not even
 * an empty schema fits. */
static int select_schema(const ps_build_config *cfg, ps_encode_ctx *x, ps_tok_scratch *ts,
                         const ps_clean_item *it, size_t budget, size_t full_len,
                         ps_encoded *out, ps_error *err)
{
    const ps_schema *s = it->schema;
    size_t nu = 0, nt = select_texts(cfg, x, &it->render), guess;
    if (nt == SIZE_MAX || reserve(x, s) ||
        ps_schema_rank(&x->sel, s, x->texts, nt, x->units, &nu))
        return ps_error_set(err, PS_ENOMEM, "out of memory selecting the schema of %s",
                            it->res.id);
    int n = guess_kept(cfg, x, it, nu, budget, full_len, &guess, err);
    if (n)
        return n;
    size_t lo = 0, hi = nu, last = SIZE_MAX; /* lo fits (k = 0: checked last), hi does not */
    for (size_t probe = guess; probe <= guess + 1; probe++) {
        if (probe <= lo || probe >= hi)
            continue;
        if ((n = encode_kept(cfg, x, ts, it, probe, out, err)) < 0)
            return n;
        last = probe;
        *((size_t)n <= budget ? &lo : &hi) = probe;
    }
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if ((n = encode_kept(cfg, x, ts, it, mid, out, err)) < 0)
            return n;
        last = mid;
        *((size_t)n <= budget ? &lo : &hi) = mid;
    }
    if (last != lo && (n = encode_kept(cfg, x, ts, it, lo, out, err)) < 0)
        return n;
    if (lo == 0 && (size_t)n > budget) {
        out->too_long = true;
        snprintf(x->detail, sizeof x->detail,
                 "the prompt is %zu tokens with the whole schema and %d with none of its tables, "
                 "over the prompt budget %zu (--max-prompt-length)",
                 full_len, n, budget);
        return 0;
    }
    out->shortened = true;
    for (size_t t = 0; t < s->n_tables; t++)
        out->tables_dropped += !x->keep_table[t];
    for (size_t c = 0; c < s->n_columns; c++)
        out->columns_dropped += !x->keep_column[c];
    return 0;
}

/* Whether the prompt still holds every table (and column) its gold SQL
 * uses: measured for the report, never used to choose. */
static int gold_recall(const ps_build_config *cfg, ps_encode_ctx *x, const ps_clean_item *it,
                       ps_encoded *out, ps_error *err)
{
    const ps_schema *s = it->schema;
    if (reserve(x, s) || reserve_gold(x, s) ||
        ps_schema_gold(s, it->res.sql, it->res.sql_len, x->gold_table, x->gold_column))
        return ps_error_set(err, PS_ENOMEM, "out of memory measuring %s", it->res.id);
    out->has_gold = true;
    out->gold_tables_kept = out->gold_columns_kept = true;
    if (!out->shortened)
        return 0;
    for (size_t t = 0; t < s->n_tables; t++)
        out->gold_tables_kept &= !x->gold_table[t] || x->keep_table[t];
    for (size_t c = 0; c < s->n_columns; c++)
        out->gold_columns_kept &= !x->gold_column[c] || x->keep_column[c];
    out->lost_gold = cfg->reject_lost_schema && !out->gold_tables_kept;
    if (out->lost_gold)
        snprintf(x->detail, sizeof x->detail,
                 "the schema selected for the prompt's budget lacks a table the SQL uses "
                 "(--reject-lost-schema)");
    return 0;
}

/* A prompt with a schema, under max_length: its schema selected when the
 * prompt alone is over its budget (a function of the config, so that
 * serving, without SQL or completion, selects the same), then the record
 * encoded whole and rejected too_long when still over the limits. */
static int encode_schema_prompt(const ps_build_config *cfg, ps_encode_ctx *x,
                                ps_tok_scratch *ts, const ps_clean_item *it, ps_encoded *out,
                                ps_error *err)
{
    const ps_clean_result *r = &it->res;
    out->a = r->prompt;
    out->a_len = r->prompt_len;
    size_t budget = ps_build_prompt_budget(cfg);
    int n = encode_texts(cfg, x, ts, out->a, out->a_len, NULL, 0, 0, &out->enc, err);
    if (n < 0)
        return n;
    if ((size_t)n > budget && ((n = select_schema(cfg, x, ts, it, budget, (size_t)n, out, err)) ||
                               out->too_long))
        return n;
    if (x->a_only) /* serving: the prompt alone, as just encoded */
        return 0;
    const char *a = out->a;
    size_t an = out->a_len;
    if (r->completion) {
        out->b = r->completion;
        out->b_len = r->completion_len;
    }
    n = encode_texts(cfg, x, ts, a, an, out->b, out->b_len, 0, &out->enc, err);
    if (n < 0)
        return n;
    bool over;
    if (cfg->layout != PS_LAYOUT_PAIR) {
        over = ps_build_gen_too_long(cfg, x, (size_t)n) != 0;
    } else {
        over = (size_t)n > cfg->max_length;
        if (over)
            snprintf(x->detail, sizeof x->detail,
                     "the prompt and completion are %d tokens, over --max-length %zu", n,
                     cfg->max_length);
    }
    if (over) {
        out->too_long = true;
        return 0;
    }
    return gold_recall(cfg, x, it, out, err);
}

/* A causal or seq2seq record without a schema to select: prompt and
 * completion (the question and the SQL without a template), rejected when
 * over the limits. */
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
    out->too_long = ps_build_gen_too_long(cfg, x, (size_t)n) != 0;
    return 0;
}

/* A pair-layout record without a schema to fit: the question alone when
 * serving, the pair as read, or the template's prompt and completion. */
static int encode_pair(const ps_build_config *cfg, ps_encode_ctx *x, ps_tok_scratch *ts,
                       const ps_clean_item *it, ps_encoded *out, ps_error *err)
{
    const ps_clean_result *r = &it->res;
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
    int n = encode_texts(cfg, x, ts, out->a, out->a_len, out->b, out->b_len, cfg->max_length,
                         &out->enc, err);
    return n < 0 ? n : 0;
}

int ps_build_encode(const ps_build_config *cfg, ps_encode_ctx *x, ps_tok_scratch *ts,
                    const ps_clean_item *it, ps_encoded *out, ps_error *err)
{
    const ps_clean_result *r = &it->res;
    memset(out, 0, sizeof *out);
    int rc;
    if (r->prompt && it->schema && cfg->max_length && ps_template_uses_schema(cfg->tmpl))
        rc = encode_schema_prompt(cfg, x, ts, it, out, err);
    else if (cfg->layout != PS_LAYOUT_PAIR)
        rc = encode_gen(cfg, x, ts, it, out, err);
    else
        return encode_pair(cfg, x, ts, it, out, err);
    if (cfg->layout != PS_LAYOUT_PAIR) { /* of the encoding kept, the last one */
        out->prefix_len = x->gen_prefix;
        out->eos_appended = x->gen_eos;
        out->end_in_text = x->gen_end_in_text;
        out->junction_merged = x->gen_junction;
    }
    return rc;
}
