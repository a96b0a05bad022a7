/*
 * The "model" of a tokenizer.json: dispatch on "type" to the BPE,
 * WordPiece, WordLevel or Unigram loader, and the token -> id "vocab"
 * object those models share.
 *
 * A model without "type" (files saved by old versions, e.g. RoBERTa's and
 * T5's) is what HF's untagged ModelWrapper makes of it: the first of BPE,
 * WordPiece, WordLevel, Unigram whose deserializer accepts the object.
 */
#include "tokenize/hf.h"

#include <stdio.h>
#include <string.h>

/* Ids index arrays, so a hostile file must not make them huge: holes are
 * allowed, ids far beyond the number of tokens are not. */
static json_int_t id_limit(size_t n_tokens)
{
    return (json_int_t)n_tokens * 16 + 65536;
}

/* The pre-parsed vocabulary (fastload.c): the same checks and the same
 * ps_tok_vocab_set calls in the same order as below. A duplicated key
 * (jansson keeps one, at its first place) fails: the plain path redoes it. */
static int pre_vocab(const ps_tok_load *c, ps_tok_pre *pre, ps_tok_vocab *v)
{
    pre->vocab_used = true;
    json_int_t limit = id_limit(pre->n_vocab);
    int rc = ps_tok_vocab_reserve(v, pre->n_vocab) ? PS_ENOMEM : PS_OK;
    for (size_t i = 0; i < pre->n_vocab && !rc; i++) {
        const ps_tok_pre_entry *e = &pre->vocab[i];
        size_t before = v->n_keys;
        if (e->id >= (json_int_t)PS_TOK_MAX_TOKENS || e->id >= limit)
            rc = PS_ELIMIT;
        else if (!(rc = ps_tok_vocab_set(v, e->key, e->len, (int32_t)e->id)) && v->n_keys == before)
            rc = PS_EFORMAT;
    }
    if (!rc)
        return PS_OK;
    pre->failed = true;
    return ps_error_set(c->err, rc, "fast path: model.vocab left to the plain path");
}

int ps_tok_model_vocab(const ps_tok_load *c, json_t *obj, const char *jpath, ps_tok_vocab *v)
{
    ps_tok_pre *pre = ps_tok_pre_for(obj);
    if (pre && obj == pre->vocab_stub)
        return pre_vocab(c, pre, v);
    if (!json_is_object(obj))
        return ps_tok_load_fail(c, PS_EFORMAT, jpath, "expected an object of token -> id");
    json_int_t limit = id_limit(json_object_size(obj));
    if (ps_tok_vocab_reserve(v, json_object_size(obj)))
        return ps_error_set(c->err, PS_ENOMEM, "out of memory");
    const char *key;
    size_t key_len;
    json_t *idv;
    json_object_keylen_foreach(obj, key, key_len, idv) {
        json_int_t id = json_is_integer(idv) ? json_integer_value(idv) : -1;
        int rc = PS_OK;
        const char *why = NULL;
        if (id < 0 || id >= (json_int_t)PS_TOK_MAX_TOKENS) {
            rc = json_is_integer(idv) && id > 0 ? PS_ELIMIT : PS_EFORMAT;
            why = rc == PS_ELIMIT ? "id beyond 2^31-2" : "id is not an integer from 0";
        } else if (id >= limit) {
            rc = PS_ELIMIT;
            why = "id far beyond the number of tokens (too sparse)";
        } else if ((rc = ps_tok_vocab_set(v, key, key_len, (int32_t)id))) {
            why = ps_strerror(rc);
        }
        if (rc) {
            char where[320];
            snprintf(where, sizeof where, "%s[\"%.*s\"]", jpath, (int)(key_len > 60 ? 60 : key_len),
                     key);
            return ps_tok_load_fail(c, rc, where, "%s", why);
        }
    }
    return PS_OK;
}

void ps_tok_model_free(ps_tok_model *m)
{
    if (m)
        m->destroy(m);
}

typedef int (*loader_fn)(const ps_tok_load *, json_t *, const char *, ps_tok_model **);

static const struct {
    const char *type;
    loader_fn load;
} models[] = {
    /* HF's untagged order: WordPiece before WordLevel, whose members are a
     * subset of WordPiece's */
    {"BPE", ps_tok_bpe_load},
    {"WordPiece", ps_tok_wordpiece_load},
    {"WordLevel", ps_tok_wordlevel_load},
    {"Unigram", ps_tok_unigram_load},
};

#define N_MODELS (sizeof models / sizeof models[0])

/* No "type": the first model that loads. A PS_EFORMAT failure means "not
 * this model" (HF's deserializer would fail too); any other failure (an
 * unsupported option, a limit, no memory) is the answer. */
static int load_untagged(const ps_tok_load *c, json_t *j, const char *jpath, ps_tok_model **out)
{
    ps_error first = {0};
    for (size_t i = 0; i < N_MODELS; i++) {
        int rc = models[i].load(c, j, jpath, out);
        if (rc != PS_EFORMAT)
            return rc;
        if (!i && c->err)
            first = *c->err;
        /* the next model's failure must not be read as this one's (a
         * loader names running out of memory only over an empty err) */
        if (c->err)
            ps_error_clear(c->err);
    }
    /* "merges" says it was meant as BPE: why BPE failed is the useful part */
    if (json_object_get(j, "merges") && first.code)
        return ps_error_set(c->err, PS_EFORMAT, "%s", first.message);
    return ps_tok_load_fail(c, PS_EFORMAT, jpath,
                            "no \"type\", and the members match no model (BPE needs vocab and "
                            "merges; WordPiece unk_token, continuing_subword_prefix, "
                            "max_input_chars_per_word and vocab; WordLevel unk_token and vocab; "
                            "Unigram vocab as [piece, score] pairs)");
}

int ps_tok_model_load(const ps_tok_load *c, json_t *j, const char *jpath, ps_tok_model **out)
{
    *out = NULL;
    if (!json_is_object(j))
        return ps_tok_load_fail(c, PS_EFORMAT, jpath, "expected an object");
    json_t *t = json_object_get(j, "type");
    if (!t)
        return load_untagged(c, j, jpath, out);
    char where[256];
    ps_tok_jpath_key(where, sizeof where, jpath, "type");
    if (!json_is_string(t))
        return ps_tok_load_fail(c, PS_EFORMAT, where, "expected a string");
    for (size_t i = 0; i < N_MODELS; i++)
        if (!strcmp(json_string_value(t), models[i].type))
            return models[i].load(c, j, jpath, out);
    return ps_tok_load_fail(c, PS_EUSAGE, where,
                            "'%s' is not supported (BPE, WordPiece, WordLevel, Unigram are)",
                            json_string_value(t));
}
