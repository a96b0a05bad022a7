/*
 * The single-sequence prefix (pairshard/tokenizer.h): what the build puts
 * before a causal record's prompt, so that a model sees the BOS its
 * tokenizer would give the prompt alone. The BERT vocab.txt path lays out
 * [CLS] text [SEP] itself (encode.c), so its prefix is [CLS].
 */
#include "tokenize/hf.h"
#include "tokenize/tokenize.h"

size_t ps_tokenizer_prefix_ids(const ps_tokenizer *tok, int32_t *ids, size_t cap)
{
    if (!tok)
        return 0;
    if (tok->hf)
        return ps_tok_post_prefix(tok->hf->post, ids, cap);
    if (tok->cls_id < 0)
        return 0;
    if (cap)
        ids[0] = tok->cls_id;
    return 1;
}
