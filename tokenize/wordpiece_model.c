/*
 * The WordPiece model of a tokenizer.json pipeline (tokenizers 0.23.2
 * models/wordpiece), wrapping the fused BERT path's ps_tok_wordpiece: an
 * inner ps_tokenizer holds the vocabulary, its tries, the unk token, the
 * prefix and max_input_chars_per_word, with every normalizer option off
 * (pieces arrive normalized and pre-tokenized). unk_token,
 * continuing_subword_prefix, max_input_chars_per_word and vocab are all
 * required, as HF's WordPieceVisitor requires them.
 */
#include "tokenize/hf.h"

#include <stdlib.h>
#include <string.h>

typedef struct wp_model {
    ps_tok_model base; /* base.vocab is a shallow copy of inner->vocab */
    ps_tokenizer *inner;
    size_t max_chars; /* HF's max_input_chars_per_word; 0 allowed */
} wp_model;

static void wp_destroy(ps_tok_model *model)
{
    wp_model *m = (wp_model *)model;
    if (!m)
        return;
    ps_tokenizer_free(m->inner); /* owns the vocabulary base.vocab points into */
    free(m);
}

static void scratch_free(void *p) { ps_tok_scratch_free(p); }

static int wp_encode(const ps_tok_model *model, ps_tok_work_slot *slot, const char *s, size_t n,
                     ps_tok_ids *out, ps_error *err)
{
    const wp_model *m = (const wp_model *)model;
    if (slot->owner != m || !slot->w) {
        ps_tok_work_slot_clear(slot);
        if (!(slot->w = ps_tok_scratch_new()))
            return ps_error_set(err, PS_ENOMEM, "out of memory");
        slot->owner = m;
        slot->free_fn = scratch_free;
    }
    ps_tok_scratch *sc = slot->w;
    size_t chars = 0;
    for (size_t i = 0; i < n; i++)
        chars += ((unsigned char)s[i] & 0xC0) != 0x80;
    sc->n = 0;
    sc->fail = 0;
    int rc;
    if (chars > m->max_chars) { /* ps_tokenizer reads a limit of 0 as 100 */
        rc = m->base.unk_id < 0 ? PS_EINVAL : ps_tok_ids_push(out, m->base.unk_id);
    } else {
        rc = ps_tok_wordpiece(m->inner, sc, s, n, chars);
        if (!rc && sc->fail)
            rc = sc->fail;
        if (!rc && (rc = ps_tok_ids_reserve(out, sc->n)) == PS_OK) {
            memcpy(out->v + out->n, sc->ids, sc->n * sizeof *sc->ids);
            out->n += sc->n;
        }
    }
    if (rc == PS_EINVAL)
        return ps_error_set(err, rc, "WordPiece: the unk token '%s' is not in the vocabulary",
                            m->inner->unk);
    return rc ? ps_error_set(err, rc, "out of memory") : PS_OK;
}

/* The four required members, checked as HF's visitor checks them. */
static int read_members(const ps_tok_load *c, json_t *j, const char *jpath,
                        ps_tokenizer_options *opt)
{
    static const char *const keys[] = {"unk_token", "continuing_subword_prefix",
                                       "max_input_chars_per_word", "vocab"};
    char where[256];
    for (size_t i = 0; i < 4; i++) {
        json_t *v = json_object_get(j, keys[i]);
        ps_tok_jpath_key(where, sizeof where, jpath, keys[i]);
        if (!v)
            return ps_tok_load_fail(c, PS_EFORMAT, where, "missing");
        if (i < 2 && !json_is_string(v))
            return ps_tok_load_fail(c, PS_EFORMAT, where, "expected a string");
        if (i == 2 && (!json_is_integer(v) || json_integer_value(v) < 0))
            return ps_tok_load_fail(c, PS_EFORMAT, where, "expected an integer from 0");
    }
    opt->unk_token = json_string_value(json_object_get(j, keys[0]));
    opt->continuing_subword_prefix = json_string_value(json_object_get(j, keys[1]));
    opt->max_input_chars_per_word = (size_t)json_integer_value(json_object_get(j, keys[2]));
    const char *type = ps_tok_json_type(j);
    if (json_object_get(j, "type") && (!type || strcmp(type, "WordPiece")))
        return ps_tok_load_fail_key(c, PS_EFORMAT, jpath, "type", "expected \"WordPiece\"");
    return PS_OK;
}

int ps_tok_wordpiece_load(const ps_tok_load *c, json_t *j, const char *jpath, ps_tok_model **out)
{
    *out = NULL;
    if (!json_is_object(j))
        return ps_tok_load_fail(c, PS_EFORMAT, jpath, "expected an object");
    ps_tokenizer_options opt;
    ps_tokenizer_options_init(&opt);
    opt.lowercase = opt.handle_chinese_chars = opt.clean_text = opt.match_special_tokens = 0;
    opt.strip_accents = 0;
    int rc = read_members(c, j, jpath, &opt);
    if (rc)
        return rc;
    size_t max_chars = opt.max_input_chars_per_word;
    if (!max_chars)
        opt.max_input_chars_per_word = 1; /* any non-zero: wp_encode checks the real 0 */
    wp_model *m = calloc(1, sizeof *m);
    if (!m || !(m->inner = ps_tok_alloc())) {
        free(m);
        return ps_error_set(c->err, PS_ENOMEM, "out of memory");
    }
    char where[256];
    rc = ps_tok_model_vocab(c, json_object_get(j, "vocab"),
                            ps_tok_jpath_key(where, sizeof where, jpath, "vocab"),
                            &m->inner->vocab);
    if (!rc)
        rc = ps_tok_finish(m->inner, &opt, c->err); /* copies the strings out of j */
    if (rc) {
        wp_destroy(&m->base);
        return rc;
    }
    m->max_chars = max_chars;
    m->base = (ps_tok_model){.kind = PS_TOK_MODEL_WORDPIECE, .vocab = m->inner->vocab,
                             .unk_id = m->inner->unk_id, .encode = wp_encode,
                             .destroy = wp_destroy};
    *out = &m->base;
    return PS_OK;
}
