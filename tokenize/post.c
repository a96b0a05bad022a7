/*
 * The "post_processor" of a tokenizer.json, as tokenizers 0.23.2 applies it
 * (add_special_tokens=true): the special tokens around the sequence(s) and
 * the type ids.
 *
 * HF reads the value as an untagged enum, trying in turn RobertaProcessing
 * (sep, cls, trim_offsets, add_prefix_space), BertProcessing (sep, cls),
 * ByteLevel (needs "type":"ByteLevel"), TemplateProcessing (single, pair,
 * special_tokens) and Sequence (needs "type":"Sequence"). Only ByteLevel and
 * Sequence check "type": {"type":"RobertaProcessing"} without trim_offsets
 * is a BertProcessing to HF, and so it is here (post_load.c).
 *
 * Type ids: HF gives the first sequence 0 and the second 1 before the
 * processor runs; RobertaProcessing then sets every one to 0, Bert adds
 * [CLS] A [SEP] with 0 and B [SEP] with 1, a template sets each piece's own.
 * ByteLevel only trims offsets, so a Sequence acts as its one processor
 * that adds tokens (two such are refused at load).
 */
#include "tokenize/hf.h"
#include "tokenize/post_internal.h"

#include <stdlib.h>

void ps_tok_post_free(ps_tok_post *p)
{
    if (!p)
        return;
    free(p->single);
    free(p->pair);
    for (size_t i = 0; i < p->n_sp; i++) {
        free(p->sp[i].name);
        free(p->sp[i].ids);
    }
    free(p->sp);
    free(p);
}

size_t ps_tok_post_added(const ps_tok_post *p, bool pair)
{
    if (!p)
        return 0;
    switch (p->kind) {
    case PS_POST_ROBERTA:
        return pair ? 4 : 2;
    case PS_POST_BERT:
        return pair ? 3 : 2;
    case PS_POST_TEMPLATE:
        return pair ? p->added_pair : p->added_single;
    default:
        return 0;
    }
}

int32_t ps_tok_post_max_id(const ps_tok_post *p)
{
    int32_t max = -1;
    if (!p)
        return max;
    if (p->kind == PS_POST_ROBERTA || p->kind == PS_POST_BERT)
        return p->cls > p->sep ? p->cls : p->sep;
    for (size_t i = 0; i < p->n_sp; i++)
        for (size_t k = 0; k < p->sp[i].n; k++)
            if (p->sp[i].ids[k] > max)
                max = p->sp[i].ids[k];
    return max;
}

void ps_tok_post_ends(const ps_tok_post *p, int32_t *bos, int32_t *eos)
{
    *bos = *eos = -1;
    if (!p)
        return;
    if (p->kind == PS_POST_ROBERTA || p->kind == PS_POST_BERT) {
        *bos = p->cls;
        *eos = p->sep;
        return;
    }
    bool seen_a = false;
    for (size_t i = 0; p->kind == PS_POST_TEMPLATE && i < p->n_single; i++) {
        const ps_tok_post_piece *q = &p->single[i];
        if (q->sp < 0) {
            seen_a = true;
            continue;
        }
        const ps_tok_post_special *sp = &p->sp[q->sp];
        if (!sp->n)
            continue;
        if (!seen_a && *bos < 0)
            *bos = sp->ids[0];
        else if (seen_a)
            *eos = sp->ids[sp->n - 1];
    }
}

size_t ps_tok_post_prefix(const ps_tok_post *p, int32_t *ids, size_t cap)
{
    size_t n = 0;
    if (!p)
        return 0;
    if (p->kind == PS_POST_ROBERTA || p->kind == PS_POST_BERT) {
        if (cap)
            ids[0] = p->cls;
        return 1;
    }
    for (size_t i = 0; p->kind == PS_POST_TEMPLATE && i < p->n_single; i++) {
        const ps_tok_post_piece *q = &p->single[i];
        if (q->sp < 0) /* $A (a single template holds no $B): the prefix ends */
            break;
        const ps_tok_post_special *sp = &p->sp[q->sp];
        for (size_t k = 0; k < sp->n; k++, n++)
            if (n < cap)
                ids[n] = sp->ids[k];
    }
    return n;
}

static int put(ps_tok_ids *ids, ps_tok_buf *types, const int32_t *v, size_t n, uint8_t type)
{
    if (ps_tok_ids_reserve(ids, n) || ps_tok_buf_reserve(types, n))
        return PS_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        ids->v[ids->n++] = v[i];
        types->p[types->len++] = (char)type;
    }
    return PS_OK;
}

static int apply_template(const ps_tok_post *p, const int32_t *a, size_t na, const int32_t *b,
                          size_t nb, bool pair, ps_tok_ids *ids, ps_tok_buf *types)
{
    if (pair && p->pair_broken) /* HF panics ("no entry found for key") */
        return PS_EUSAGE;
    const ps_tok_post_piece *t = pair ? p->pair : p->single;
    size_t n = pair ? p->n_pair : p->n_single;
    for (size_t i = 0; i < n; i++) {
        int rc;
        if (t[i].sp >= 0)
            rc = put(ids, types, p->sp[t[i].sp].ids, p->sp[t[i].sp].n, t[i].type_id);
        else if (t[i].seq == 0)
            rc = put(ids, types, a, na, t[i].type_id);
        else
            rc = put(ids, types, b, pair ? nb : 0, t[i].type_id);
        if (rc)
            return rc;
    }
    return PS_OK;
}

int ps_tok_post_apply(const ps_tok_post *p, const int32_t *a, size_t na, const int32_t *b,
                      size_t nb, bool pair, ps_tok_ids *ids, ps_tok_buf *types)
{
    int kind = p ? p->kind : PS_POST_NONE;
    int rc = PS_OK;
    switch (kind) {
    case PS_POST_TEMPLATE:
        return apply_template(p, a, na, b, nb, pair, ids, types);
    case PS_POST_ROBERTA: /* <s> A </s> (</s> B </s>), every type id 0 */
        if ((rc = put(ids, types, &p->cls, 1, 0)) || (rc = put(ids, types, a, na, 0)) ||
            (rc = put(ids, types, &p->sep, 1, 0)))
            return rc;
        if (pair && ((rc = put(ids, types, &p->sep, 1, 0)) || (rc = put(ids, types, b, nb, 0)) ||
                     (rc = put(ids, types, &p->sep, 1, 0))))
            return rc;
        return PS_OK;
    case PS_POST_BERT: /* [CLS] A [SEP] with 0, (B [SEP] with 1) */
        if ((rc = put(ids, types, &p->cls, 1, 0)) || (rc = put(ids, types, a, na, 0)) ||
            (rc = put(ids, types, &p->sep, 1, 0)))
            return rc;
        if (pair && ((rc = put(ids, types, b, nb, 1)) || (rc = put(ids, types, &p->sep, 1, 1))))
            return rc;
        return PS_OK;
    default: /* no processor, ByteLevel: A with 0, B with 1 */
        if ((rc = put(ids, types, a, na, 0)))
            return rc;
        return pair ? put(ids, types, b, nb, 1) : PS_OK;
    }
}
