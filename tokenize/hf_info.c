/*
 * What a trainer needs to know of a tokenizer.json beyond encoding: the
 * special ids (bos, eos, pad, unk). A tokenizer.json has
 * no field for bos/eos/pad (transformers keeps them in
 * tokenizer_config.json), so they are found in this order, documented in
 * docs/TOKENIZER.md:
 *   bos: the first special token before $A in the post-processor's single
 *        template (RoBERTa/BERT: cls), else a token named <s>,
 *        <|begin_of_text|>, <|startoftext|>, <bos>;
 *   eos: the last special token after $A in that template (sep), else
 *        </s>, <|end_of_text|>, <|endoftext|>, <eos>;
 *   pad: "padding.pad_id" when the file sets padding, else [PAD], <pad>,
 *        <|pad|>;
 *   unk: the model's unk token.
 * Absent stays -1 (GPT-2 and Llama have no pad: the reader then pads with
 * its documented default and the attention mask marks the padding).
 */
#include "tokenize/hf.h"

#include <string.h>

static int32_t by_name(const struct ps_tok_hf *hf, const char *const *names)
{
    for (; *names; names++) {
        size_t n = strlen(*names);
        int32_t id = ps_tok_added_find(hf->added, *names, n);
        if (id < 0)
            id = ps_tok_vocab_find(&hf->model->vocab, *names, n);
        if (id >= 0)
            return id;
    }
    return -1;
}

void ps_tok_hf_find_specials(struct ps_tok_hf *hf, json_t *root)
{
    static const char *const bos_names[] = {"<s>", "<|begin_of_text|>", "<|startoftext|>", "<bos>",
                                            NULL};
    static const char *const eos_names[] = {"</s>", "<|end_of_text|>", "<|endoftext|>", "<eos>",
                                            NULL};
    static const char *const pad_names[] = {"[PAD]", "<pad>", "<|pad|>", NULL};
    ps_tok_hf_specials *sp = &hf->specials;
    sp->bos = sp->eos = sp->pad = -1;
    sp->unk = hf->model->unk_id;
    ps_tok_post_ends(hf->post, &sp->bos, &sp->eos);
    if (sp->bos < 0)
        sp->bos = by_name(hf, bos_names);
    if (sp->eos < 0)
        sp->eos = by_name(hf, eos_names);
    json_t *pad = json_object_get(json_object_get(root, "padding"), "pad_id");
    if (json_is_integer(pad) && json_integer_value(pad) >= 0 && json_integer_value(pad) <= INT32_MAX)
        sp->pad = (int32_t)json_integer_value(pad);
    else
        sp->pad = by_name(hf, pad_names);
}
