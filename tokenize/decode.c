/*
 * Ids back to text, as HF's Tokenizer::decode: each id to its token (added
 * tokens first, then the model; special tokens dropped when asked), then
 * the file's decoder over the token strings. The BERT path has no decoder
 * object of its own: it uses WordPiece's ("##", cleanup), the decoder
 * BertTokenizerFast and BERT's tokenizer.json files carry.
 */
#include "tokenize/hf.h"
#include "common/options.h"

#include <string.h>

/* ps_tokenizer_info's size in 0.2.0, its first published version. */
#define TOKINFO_SIZE_0_2 PS_SIZE_THROUGH(ps_tokenizer_info, unk_id)

int ps_tokenizer_is_special(const ps_tokenizer *tok, int32_t id)
{
    if (tok->hf) {
        bool special = false;
        return ps_tok_added_token(tok->hf->added, id, &special) && special;
    }
    for (size_t i = 0; i < tok->n_specials; i++)
        if (tok->specials[i].id == id)
            return true;
    return id == tok->cls_id || id == tok->sep_id;
}

static int bert_decoder(const ps_tokenizer *tok, ps_tok_decoder **out, ps_error *err)
{
    json_t *j = json_pack("{sssssb}", "type", "WordPiece", "prefix", tok->prefix ? tok->prefix : "##",
                          "cleanup", 1);
    if (!j)
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    ps_tok_load c = {"(BERT decoder)", err, NULL};
    int rc = ps_tok_decoder_load(&c, j, "decoder", out);
    json_decref(j);
    return rc;
}

static int gather(const ps_tokenizer *tok, ps_tok_pieces *toks, const int32_t *ids, size_t n,
                  int skip_special, ps_error *err)
{
    ps_tok_pieces_clear(toks);
    for (size_t i = 0; i < n; i++) {
        const char *t = ps_tokenizer_id_to_token(tok, ids[i]);
        if (!t || (skip_special && ps_tokenizer_is_special(tok, ids[i])))
            continue; /* HF skips ids it cannot name */
        if (ps_tok_pieces_push(toks, t, strlen(t), i == 0))
            return ps_error_set(err, PS_ENOMEM, "out of memory");
    }
    return PS_OK;
}

int ps_tokenizer_decode(const ps_tokenizer *tok, ps_tok_scratch *s, const int32_t *ids, size_t n,
                        int skip_special_tokens, const char **text, size_t *len, ps_error *err)
{
    if (!tok || !s || (!ids && n) || !text)
        return ps_error_set(err, PS_EINVAL, "ps_tokenizer_decode: bad arguments");
    struct ps_tok_hfwork *w = ps_tok_hfwork_of(s);
    if (!w)
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    int rc = gather(tok, &w->dec_toks, ids, n, skip_special_tokens, err);
    if (rc)
        return rc;
    ps_tok_decoder *own = NULL;
    const ps_tok_decoder *d = tok->hf ? tok->hf->decoder : NULL;
    if (!tok->hf) {
        if ((rc = bert_decoder(tok, &own, err)))
            return rc;
        d = own;
    }
    rc = ps_tok_decode(d, &w->dec_toks, &w->dec_tmp, &w->dec_out);
    ps_tok_decoder_free(own);
    if (rc)
        return ps_error_set(err, rc, "decoding failed: %s", ps_strerror(rc));
    if (ps_tok_buf_reserve(&w->dec_out, 0))
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    w->dec_out.p[w->dec_out.len] = '\0';
    *text = w->dec_out.p;
    if (len)
        *len = w->dec_out.len;
    return PS_OK;
}

static void tokinfo_fill(const ps_tokenizer *tok, ps_tokenizer_info *info)
{
    memset(info, 0, sizeof *info);
    info->model = tok->model_type ? tok->model_type : "WordPiece";
    info->vocab_size = ps_tokenizer_vocab_size(tok);
    if (tok->hf) {
        info->bos_id = tok->hf->specials.bos;
        info->eos_id = tok->hf->specials.eos;
        info->pad_id = tok->hf->specials.pad;
        info->unk_id = tok->hf->specials.unk;
        return;
    }
    int32_t pad = ps_tokenizer_token_to_id(tok, "[PAD]", 5);
    info->bos_id = tok->cls_id;
    info->eos_id = tok->sep_id;
    info->pad_id = pad >= 0 ? pad : -1;
    info->unk_id = tok->unk_id;
}

int ps_tokenizer_get_info_size(const ps_tokenizer *tok, ps_tokenizer_info *info, size_t size)
{
    ps_tokenizer_info o;
    tokinfo_fill(tok, &o);
    return ps_struct_out(info, size, &o, sizeof o, TOKINFO_SIZE_0_2, "ps_tokenizer_info", NULL);
}

/* The 0.2.0 entry point (pairshard/common.h, "Structs the library fills"). */
#undef ps_tokenizer_get_info
PS_API void ps_tokenizer_get_info(const ps_tokenizer *tok, ps_tokenizer_info *info);

void ps_tokenizer_get_info(const ps_tokenizer *tok, ps_tokenizer_info *info)
{
    ps_tokenizer_get_info_size(tok, info, TOKINFO_SIZE_0_2);
}
