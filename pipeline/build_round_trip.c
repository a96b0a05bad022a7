/*
 * The round-trip check of a causal or seq2seq record (docs/BUILD.md,
 * "Where a completion ends"): its ids decode back to the text it was
 * rendered as. causal: decode(prompt ids + completion ids), without the
 * prefix and an appended EOS (they are no text), equals prompt +
 * completion; seq2seq: each side decodes (special tokens skipped) to its
 * text. A record whose text the tokenizer does not give back from its own
 * encoding (a normalizer that folds case or spaces, [UNK]) has nothing to
 * compare and is counted not lossless; one whose own encoding decodes
 * back but whose stored ids do not is a mismatch, which fails the gate:
 * the set would teach a text the template never rendered.
 */
#include "pipeline/build_internal.h"

#include <stdio.h>
#include <string.h>

/* Whether ids[0..n) decode to text t[0..tn) (lossless: that they are a
 * prefix of it). -1 on error. */
static int decodes_to(const ps_build_config *cfg, ps_tok_scratch *ts, const int32_t *ids,
                      size_t n, int skip, const char *t, size_t tn, bool prefix, ps_error *err)
{
    const char *d;
    size_t dn;
    if (ps_tokenizer_decode(cfg->tokenizer, ts, ids, n, skip, &d, &dn, err))
        return -1;
    return prefix ? dn <= tn && memcmp(d, t, dn) == 0 : dn == tn && memcmp(d, t, dn) == 0;
}

/* Names the first token of ids[0..n) after which the decoded text stops
 * being a prefix of t (bisection: a prefix's decoding grows with it). */
static void first_difference(const ps_build_config *cfg, ps_tok_scratch *ts, const int32_t *ids,
                             size_t n, size_t first, bool junction, const char *t, size_t tn,
                             char *detail, size_t dsz)
{
    size_t lo = 0, hi = n; /* ids[0..lo) decode to a prefix; ids[0..hi) do not */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        int r = decodes_to(cfg, ts, ids, mid, 0, t, tn, true, NULL);
        if (r < 0)
            break;
        *(r ? &lo : &hi) = mid;
    }
    const char *tok = hi ? ps_tokenizer_id_to_token(cfg->tokenizer, ids[hi - 1]) : NULL;
    snprintf(detail, dsz, "token %zu (id %d, '%.40s') is the first that does not read as the "
             "rendered text%s", first + (hi ? hi - 1 : 0), hi ? ids[hi - 1] : -1, tok ? tok : "?",
             junction ? " (a token of the whole text crosses from the prompt into the "
                        "completion, which was tokenized apart)" : "");
}

static int causal(const ps_build_config *cfg, ps_encode_ctx *x, ps_tok_scratch *ts,
                  const ps_encoded *e, char *detail, size_t dsz, ps_error *err)
{
    size_t from = e->prefix_len, to = e->enc.len - (e->eos_appended ? 1 : 0);
    ps_buf_reset(&x->whole);
    if (ps_buf_append(&x->whole, e->a, e->a_len) || ps_buf_append(&x->whole, e->b, e->b_len))
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    const char *t = x->whole.data ? x->whole.data : "";
    size_t tn = x->whole.len;
    const int32_t *ids = e->enc.input_ids + from;
    int r = decodes_to(cfg, ts, ids, to - from, 0, t, tn, false, err);
    if (r)
        return r < 0 ? r : PS_VGEN_RT_OK;
    ps_encoding w; /* the text's own encoding: does it decode back? */
    if (ps_tokenizer_tokenize(cfg->tokenizer, ts, t, tn, &w, err) < 0)
        return -1;
    if ((r = decodes_to(cfg, ts, w.input_ids, w.len, 0, t, tn, false, err)) <= 0)
        return r < 0 ? r : PS_VGEN_RT_LOSSY;
    first_difference(cfg, ts, ids, to - from, from, e->junction_merged, t, tn, detail, dsz);
    return PS_VGEN_RT_MISMATCH;
}

int ps_build_round_trip(const ps_build_config *cfg, ps_encode_ctx *x, ps_tok_scratch *ts,
                        const ps_encoded *e, char *detail, size_t dsz, ps_error *err)
{
    if (!e->b || cfg->layout == PS_LAYOUT_PAIR)
        return PS_VGEN_RT_NONE;
    if (cfg->layout == PS_LAYOUT_CAUSAL)
        return causal(cfg, x, ts, e, detail, dsz, err);
    /* seq2seq: the source and the target, each encoded with its specials */
    size_t src = e->enc.len - x->gen_target;
    int r = decodes_to(cfg, ts, e->enc.input_ids, src, 1, e->a, e->a_len, false, err);
    if (r > 0)
        r = decodes_to(cfg, ts, e->enc.input_ids + src, x->gen_target, 1, e->b, e->b_len,
                       false, err);
    return r < 0 ? r : r ? PS_VGEN_RT_OK : PS_VGEN_RT_LOSSY;
}
