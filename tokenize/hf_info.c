/*
 * What a trainer needs to know of a tokenizer.json beyond encoding: the
 * special ids (bos, eos, pad, unk) and the largest id. A tokenizer.json has
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

static int32_t first_id(json_t *ids, bool last)
{
    size_t n = json_array_size(ids);
    json_t *v = n ? json_array_get(ids, last ? n - 1 : 0) : NULL;
    return json_is_integer(v) && json_integer_value(v) >= 0 &&
                   json_integer_value(v) <= INT32_MAX
               ? (int32_t)json_integer_value(v)
               : -1;
}

/* [token, id] of RobertaProcessing / BertProcessing. */
static int32_t pair_id(json_t *pp, const char *key)
{
    json_t *v = json_array_get(json_object_get(pp, key), 1);
    return json_is_integer(v) && json_integer_value(v) >= 0 && json_integer_value(v) <= INT32_MAX
               ? (int32_t)json_integer_value(v)
               : -1;
}

/* bos/eos from a TemplateProcessing "single" template. */
static void template_ends(json_t *pp, int32_t *bos, int32_t *eos)
{
    json_t *single = json_object_get(pp, "single"), *specials = json_object_get(pp, "special_tokens");
    bool seen_a = false;
    size_t i;
    json_t *piece;
    json_array_foreach(single, i, piece) {
        json_t *st = json_object_get(piece, "SpecialToken");
        if (json_object_get(piece, "Sequence")) {
            seen_a = true;
            continue;
        }
        json_t *name = json_object_get(st, "id");
        if (!json_is_string(name))
            continue;
        json_t *ids = json_object_get(json_object_get(specials, json_string_value(name)), "ids");
        if (!seen_a && *bos < 0)
            *bos = first_id(ids, false);
        else if (seen_a)
            *eos = first_id(ids, true);
    }
}

static void post_ends(json_t *pp, int32_t *bos, int32_t *eos)
{
    const char *type = ps_tok_json_type(pp);
    if (!type)
        return;
    if (!strcmp(type, "TemplateProcessing")) {
        template_ends(pp, bos, eos);
    } else if (!strcmp(type, "RobertaProcessing") || !strcmp(type, "BertProcessing")) {
        *bos = pair_id(pp, "cls");
        *eos = pair_id(pp, "sep");
    } else if (!strcmp(type, "Sequence")) {
        size_t i;
        json_t *p;
        json_array_foreach(json_object_get(pp, "processors"), i, p)
            post_ends(p, bos, eos);
    }
}

void ps_tok_post_max_id(json_t *j, size_t *max)
{
    const char *type = ps_tok_json_type(j);
    if (!type)
        return;
    int32_t ids[2] = {-1, -1};
    if (!strcmp(type, "RobertaProcessing") || !strcmp(type, "BertProcessing")) {
        ids[0] = pair_id(j, "cls");
        ids[1] = pair_id(j, "sep");
    } else if (!strcmp(type, "Sequence")) {
        size_t i;
        json_t *p;
        json_array_foreach(json_object_get(j, "processors"), i, p)
            ps_tok_post_max_id(p, max);
    } else if (!strcmp(type, "TemplateProcessing")) {
        const char *key;
        json_t *def;
        json_object_foreach(json_object_get(j, "special_tokens"), key, def) {
            size_t i;
            json_t *v;
            json_array_foreach(json_object_get(def, "ids"), i, v)
                if (json_is_integer(v) && json_integer_value(v) >= 0 &&
                    json_integer_value(v) <= INT32_MAX && (size_t)json_integer_value(v) > *max)
                    *max = (size_t)json_integer_value(v);
        }
    }
    for (int k = 0; k < 2; k++)
        if (ids[k] >= 0 && (size_t)ids[k] > *max)
            *max = (size_t)ids[k];
}

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
    post_ends(json_object_get(root, "post_processor"), &sp->bos, &sp->eos);
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
