/*
 * Loading any tokenizer.json into the generic pipeline (tokenize/hf.h):
 * each top-level component through its own loader, then the numbers the
 * rest of pairshard asks of a tokenizer (vocabulary size, special ids).
 * "truncation" and "padding" are not applied: callers pass max_length, and
 * the reader pads; "padding" only names the pad id.
 */
#include "tokenize/hf.h"

#include <stdlib.h>
#include <string.h>

void ps_tok_hf_free(struct ps_tok_hf *hf)
{
    if (!hf)
        return;
    ps_tok_norm_free(hf->norm);
    ps_tok_pretok_free(hf->pretok);
    ps_tok_model_free(hf->model);
    ps_tok_added_free(hf->added);
    ps_tok_post_free(hf->post);
    ps_tok_decoder_free(hf->decoder);
    free(hf);
}

void ps_tok_hfwork_free(struct ps_tok_hfwork *w)
{
    if (!w)
        return;
    ps_tok_segs_free(&w->raw_segs);
    ps_tok_segs_free(&w->norm_segs);
    ps_tok_buf_free(&w->norm);
    ps_tok_buf_free(&w->norm_tmp);
    ps_tok_pieces_free(&w->pieces);
    ps_tok_pieces_free(&w->pieces_tmp);
    ps_tok_ids_free(&w->a);
    ps_tok_ids_free(&w->b);
    ps_tok_ids_free(&w->out);
    ps_tok_buf_free(&w->types);
    ps_tok_work_slot_clear(&w->model_slot);
    ps_tok_pieces_free(&w->dec_toks);
    ps_tok_pieces_free(&w->dec_tmp);
    ps_tok_buf_free(&w->dec_out);
    ps_tok_ids_free(&w->unk_probe);
    ps_tok_buf_free(&w->origin);
    ps_tok_buf_free(&w->origin_tmp);
    free(w);
}

struct ps_tok_hfwork *ps_tok_hfwork_of(ps_tok_scratch *s)
{
    if (!s->hw)
        s->hw = calloc(1, sizeof *s->hw);
    return s->hw;
}

static const char *model_name(ps_tok_model_kind k)
{
    switch (k) {
    case PS_TOK_MODEL_BPE: return "BPE";
    case PS_TOK_MODEL_UNIGRAM: return "Unigram";
    case PS_TOK_MODEL_WORDPIECE: return "WordPiece";
    case PS_TOK_MODEL_WORDLEVEL: return "WordLevel";
    }
    return "unknown";
}

/* One more than the largest id of the model, the added tokens and the
 * post-processor's special tokens (which need not be in the vocabulary). */
static size_t vocab_size(const struct ps_tok_hf *hf)
{
    size_t n = hf->model->vocab.n_ids;
    int32_t a = ps_tok_added_max_id(hf->added);
    if (a >= 0 && (size_t)a + 1 > n)
        n = (size_t)a + 1;
    int32_t pp = ps_tok_post_max_id(hf->post);
    size_t max_pp = pp > 0 ? (size_t)pp : 0;
    return max_pp + 1 > n ? max_pp + 1 : n;
}

/* True when a Metaspace in the pre-tokenizer `j` prepends only to the
 * piece at the start of the input (prepend_scheme "first"). */
static bool metaspace_first(json_t *j)
{
    const char *type = ps_tok_json_type(j);
    if (type && !strcmp(type, "Sequence")) {
        size_t i;
        json_t *p;
        json_array_foreach(json_object_get(j, "pretokenizers"), i, p)
            if (metaspace_first(p))
                return true;
        return false;
    }
    json_t *scheme = json_object_get(j, "prepend_scheme");
    return type && !strcmp(type, "Metaspace") && json_is_string(scheme) &&
           !strcmp(json_string_value(scheme), "first");
}

static int load_components(const ps_tok_load *c, json_t *root, struct ps_tok_hf *hf)
{
    int rc;
    if ((rc = ps_tok_norm_load(c, json_object_get(root, "normalizer"), "normalizer", &hf->norm)) ||
        (rc = ps_tok_pretok_load(c, json_object_get(root, "pre_tokenizer"), "pre_tokenizer",
                                 &hf->pretok)) ||
        (rc = ps_tok_model_load(c, json_object_get(root, "model"), "model", &hf->model)) ||
        /* with the model: HF's ids (the file's "id" is only a hint to HF) */
        (rc = ps_tok_added_load_model(c, json_object_get(root, "added_tokens"), "added_tokens",
                                      hf->norm, hf->model, &hf->added)) ||
        (rc = ps_tok_post_load(c, json_object_get(root, "post_processor"), "post_processor",
                               &hf->post)) ||
        (rc = ps_tok_decoder_load(c, json_object_get(root, "decoder"), "decoder", &hf->decoder)))
        return rc;
    return PS_OK;
}

int ps_tok_hf_load(const ps_tok_load *c, json_t *root, ps_tokenizer **out)
{
    *out = NULL;
    if (!json_is_object(root))
        return ps_tok_load_fail(c, PS_EFORMAT, "", "expected a JSON object");
    if (!json_is_object(json_object_get(root, "model")))
        return ps_tok_load_fail(c, PS_EFORMAT, "model", "missing or not an object");
    ps_tokenizer *tok = ps_tok_alloc();
    struct ps_tok_hf *hf = calloc(1, sizeof *hf);
    if (!tok || !hf) {
        free(hf);
        ps_tokenizer_free(tok);
        return ps_tok_load_fail(c, PS_ENOMEM, "", "out of memory");
    }
    tok->hf = hf;
    int rc = load_components(c, root, hf);
    if (!rc && !(tok->model_type = strdup(model_name(hf->model->kind))))
        rc = ps_tok_load_fail(c, PS_ENOMEM, "", "out of memory");
    if (rc) {
        ps_tokenizer_free(tok);
        return rc;
    }
    hf->vocab_size = vocab_size(hf);
    hf->needs_origin = hf->norm && metaspace_first(json_object_get(root, "pre_tokenizer"));
    ps_tok_hf_find_specials(hf, root);
    tok->unk_id = hf->specials.unk;
    *out = tok;
    return PS_OK;
}
