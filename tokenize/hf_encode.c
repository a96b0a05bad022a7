/*
 * Encoding through the generic pipeline (tokenize/hf.h), step for step as
 * tokenizers 0.23.2's TokenizerImpl::encode:
 *   1. split the raw text on added tokens with normalized=false;
 *   2. normalize each other stretch, split it on the normalized added
 *      tokens; empty stretches vanish (PreTokenizedString::split);
 *   3. pre-tokenize each stretch and give each piece to the model;
 *   4. with truncation, stop after the first piece that brings the
 *      sequence to max_length ids (tokenize_with_limit: added tokens count
 *      but do not stop it), then longest_first on max_length less the
 *      post-processor's tokens, then the post-processor's template.
 */
#include "tokenize/hf.h"
#include "tokenize/unicode.h"

#include <stdlib.h>
#include <string.h>

/* Walk state of one sequence. */
typedef struct walk {
    const struct ps_tok_hf *hf;
    struct ps_tok_hfwork *w;
    ps_tok_ids *ids;
    size_t start, limit; /* limit 0: no truncation */
    ps_word_fn fn;       /* set: report pieces instead of encoding them */
    void *ctx;
    ps_error *err;
    bool stopped; /* the limit was reached (not an error) */
} walk;

static int oom(ps_error *err) { return ps_error_set(err, PS_ENOMEM, "out of memory while tokenizing"); }

/* The error of a failed step (`what`: "pre-tokenizer", "normalizer"): out
 * of memory, or a regex of it that ran out of steps on this text, which
 * ps_tok_regex_why names (PS_ELIMIT: the text is at fault, not the
 * tokenizer, so callers may reject the record and go on). */
static int step_failed(ps_error *err, int rc, const char *what)
{
    if (rc == PS_ENOMEM)
        return oom(err);
    const char *why = ps_tok_regex_why();
    if (why)
        return ps_error_set(err, rc, "%s: %s", what, why);
    return ps_error_set(err, rc, "%s failed: %s", what, ps_strerror(rc));
}

static int emit_added(walk *k, int32_t id, const char *text, size_t len)
{
    if (k->fn)
        return k->fn(k->ctx, text, len);
    return ps_tok_ids_push(k->ids, id) ? oom(k->err) : PS_OK;
}

static int run_pieces(walk *k, const char *s, size_t n, bool at_start)
{
    struct ps_tok_hfwork *w = k->w;
    ps_tok_pieces_clear(&w->pieces);
    int rc = ps_tok_pieces_push(&w->pieces, s, n, at_start);
    if (!rc)
        rc = ps_tok_pretok_apply(k->hf->pretok, &w->pieces, &w->pieces_tmp);
    if (rc)
        return step_failed(k->err, rc, "pre-tokenizer");
    for (size_t i = 0; i < w->pieces.n; i++) {
        const ps_tok_piece *p = &w->pieces.v[i];
        if (!p->len)
            continue;
        const char *str = w->pieces.pool.p + p->off;
        if (k->fn) {
            if ((rc = k->fn(k->ctx, str, p->len)))
                return rc;
            continue;
        }
        const ps_tok_model *m = k->hf->model;
        if ((rc = m->encode(m, &w->model_slot, str, p->len, k->ids, k->err)))
            return rc == PS_ENOMEM ? oom(k->err) : rc;
        if (k->limit && k->ids->n - k->start >= k->limit) {
            k->stopped = true;
            return 1;
        }
    }
    return PS_OK;
}

/* Whether the normalized text still begins with (the output of) the
 * input's first character, i.e. HF's offsets_original().0 == 0 for its
 * first piece. A normalizer that drops the first character (StripAccents
 * on a leading mark, Strip, a control character cleaned away) moves the
 * start past it, and Metaspace's "first" scheme then prepends nothing.
 * Normalizers keep no alignments here, so it is measured: the text without
 * its first character normalizes to the same string exactly when that
 * character contributed nothing. */
static int first_char_kept(walk *k, const char *s, size_t n, bool *kept)
{
    struct ps_tok_hfwork *w = k->w;
    size_t c = 1;
    while (c < n && ((unsigned char)s[c] & 0xC0) == 0x80)
        c++;
    w->origin.len = 0;
    int rc = ps_tok_buf_put(&w->origin, s + c, n - c);
    if (!rc)
        rc = ps_tok_norm_apply(k->hf->norm, &w->origin, &w->origin_tmp);
    if (rc)
        return rc;
    *kept = w->origin.len != w->norm.len || memcmp(w->origin.p, w->norm.p, w->norm.len);
    return PS_OK;
}

static int run_raw_stretch(walk *k, const char *s, size_t n, bool at_start)
{
    struct ps_tok_hfwork *w = k->w;
    w->norm.len = 0;
    int rc = ps_tok_buf_put(&w->norm, s, n);
    if (!rc)
        rc = ps_tok_norm_apply(k->hf->norm, &w->norm, &w->norm_tmp);
    if (!rc && at_start && k->hf->needs_origin && n)
        rc = first_char_kept(k, s, n, &at_start);
    if (!rc)
        rc = ps_tok_added_split(k->hf->added, true, w->norm.p, w->norm.len, &w->norm_segs);
    if (rc)
        return step_failed(k->err, rc, "normalizer");
    for (size_t i = 0; i < w->norm_segs.n; i++) {
        ps_tok_seg g = w->norm_segs.v[i];
        if (!g.len)
            continue;
        if (g.id >= 0)
            rc = emit_added(k, g.id, w->norm.p + g.off, g.len);
        else
            rc = run_pieces(k, w->norm.p + g.off, g.len, at_start && g.off == 0);
        if (rc)
            return rc;
    }
    return PS_OK;
}

/* Appends the ids of one sequence to k->ids (or reports its pieces). */
static int run_sequence(walk *k, const char *text, size_t len, int which)
{
    int rc = ps_tok_utf8_check(text, len, which, k->err);
    if (rc)
        return rc;
    struct ps_tok_hfwork *w = k->w;
    k->start = k->ids ? k->ids->n : 0;
    if ((rc = ps_tok_added_split(k->hf->added, false, text, len, &w->raw_segs)))
        return oom(k->err);
    for (size_t i = 0; i < w->raw_segs.n && !rc; i++) {
        ps_tok_seg g = w->raw_segs.v[i];
        if (!g.len)
            continue;
        if (g.id >= 0)
            rc = emit_added(k, g.id, text + g.off, g.len);
        else
            rc = run_raw_stretch(k, text + g.off, g.len, g.off == 0);
    }
    if (k->stopped) { /* the rest must still be valid UTF-8: checked above */
        k->stopped = false;
        return PS_OK;
    }
    return rc;
}

/* Copies the laid-out ids and types into the scratch's public arrays. */
static int publish(ps_tok_scratch *s, const struct ps_tok_hfwork *w, bool truncated,
                   ps_encoding *out, ps_error *err)
{
    s->n = 0;
    if (ps_tok_scratch_reserve(s, w->out.n + 1))
        return oom(err);
    if (w->out.n) { /* an empty encoding may have no arrays yet: memcpy(NULL) is UB */
        memcpy(s->ids, w->out.v, w->out.n * sizeof *s->ids);
        memcpy(s->types, w->types.p, w->out.n);
    }
    s->n = w->out.n;
    return ps_tok_finish_encoding(s, truncated, out);
}

static int hf_encode(const ps_tokenizer *tok, ps_tok_scratch *s, const char *a, size_t a_len,
                     const char *b, size_t b_len, bool pair, bool add_special,
                     size_t max_length, ps_encoding *out, ps_error *err)
{
    struct ps_tok_hfwork *w = ps_tok_hfwork_of(s);
    if (!w)
        return oom(err);
    const struct ps_tok_hf *hf = tok->hf;
    size_t added = add_special ? ps_tok_post_added(hf->post, pair) : 0;
    if (max_length && max_length < added)
        return ps_error_set(err, PS_EINVAL, "max_length %zu is below the %zu special tokens",
                            max_length, added);
    walk k = {.hf = hf, .w = w, .limit = max_length, .err = err};
    w->a.n = w->b.n = 0;
    k.ids = &w->a;
    int rc = run_sequence(&k, a ? a : "", a_len, 1);
    if (!rc && pair) {
        k.ids = &w->b;
        rc = run_sequence(&k, b ? b : "", b_len, 2);
    }
    if (rc)
        return rc;
    size_t ka = w->a.n, kb = w->b.n;
    if (max_length) {
        size_t budget = max_length - added;
        if (pair)
            ps_tok_longest_first(&ka, &kb, budget);
        else if (ka > budget)
            ka = budget;
    }
    w->out.n = 0;
    w->types.len = 0;
    if ((rc = ps_tok_post_apply(add_special ? hf->post : NULL, w->a.v, ka, w->b.v, kb, pair,
                                &w->out, &w->types)))
        return rc == PS_ENOMEM ? oom(err) : ps_error_set(err, rc, "post-processor failed");
    return publish(s, w, ka < w->a.n || kb < w->b.n, out, err);
}

int ps_tok_hf_encode(const ps_tokenizer *tok, ps_tok_scratch *s, const char *a, size_t a_len,
                     const char *b, size_t b_len, bool pair, bool add_special,
                     size_t max_length, ps_encoding *out, ps_error *err)
{
    ps_tok_regex_budget_begin(a_len + (pair ? b_len : 0));
    int rc = hf_encode(tok, s, a, a_len, b, b_len, pair, add_special, max_length, out, err);
    ps_tok_regex_budget_end();
    return rc;
}

int ps_tok_hf_words(const ps_tokenizer *tok, ps_tok_scratch *s, const char *text, size_t len,
                    ps_word_fn fn, void *ctx, ps_error *err)
{
    struct ps_tok_hfwork *w = ps_tok_hfwork_of(s);
    if (!w)
        return oom(err);
    walk k = {.hf = tok->hf, .w = w, .fn = fn, .ctx = ctx, .err = err};
    ps_tok_regex_budget_begin(len);
    int rc = run_sequence(&k, text ? text : "", len, 1);
    ps_tok_regex_budget_end();
    return rc;
}
