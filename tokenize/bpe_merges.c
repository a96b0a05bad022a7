/*
 * The fast path of loading BPE merges: a batch at a time, so that the
 * memory each merge touches (three vocabulary slots, one merge slot, all
 * random in tables of megabytes) is prefetched for the whole batch before
 * any of it is read. One at a time, a 150k-merge file spends most of its
 * load waiting on those cache misses.
 *
 * A batch with anything wrong in it is not reported here: the caller runs
 * the plain path (bpe_load.c) over it, which names the first bad merge.
 * `pre` (fastload.c), when set, replaces the JSON array arr.
 */
#include "tokenize/bpe.h"

#include <string.h>

typedef struct pend {
    const char *a, *b;
    size_t na, nb, nn;
    uint64_t ha, hb, hn;
    int32_t ia, ib, in;
    size_t slot; /* in the merge table */
} pend;

/* Splits element e into its two tokens; false when it is not a well-formed
 * merge. *skip: a "#version" line. */
static bool split(json_t *e, const ps_tok_pre_merge *pm, bool is_str, pend *p, bool *skip)
{
    *skip = false;
    if (pm && !is_str) { /* pre-parsed: a pair of strings by construction */
        *p = (pend){.a = pm->a, .na = pm->na, .b = pm->b, .nb = pm->nb};
        return true;
    }
    if (is_str) {
        if (!pm && !json_is_string(e))
            return false;
        const char *s = pm ? pm->a : json_string_value(e);
        size_t n = pm ? pm->na : json_string_length(e);
        if (n >= 8 && !memcmp(s, "#version", 8))
            return *skip = true;
        const char *sp = memchr(s, ' ', n);
        if (!sp || memchr(sp + 1, ' ', n - (size_t)(sp - s) - 1))
            return false;
        *p = (pend){.a = s, .na = (size_t)(sp - s), .b = sp + 1, .nb = n - (size_t)(sp - s) - 1};
        return true;
    }
    json_t *a = json_array_get(e, 0), *b = json_array_get(e, 1);
    if (!json_is_array(e) || json_array_size(e) != 2 || !json_is_string(a) || !json_is_string(b))
        return false;
    *p = (pend){.a = json_string_value(a), .na = json_string_length(a),
                .b = json_string_value(b), .nb = json_string_length(b)};
    return true;
}

bool ps_bpe_merges_batch(ps_bpe *m, json_t *arr, const ps_tok_pre *pre, bool is_str,
                         size_t start, size_t count, uint32_t *rank, char *buf, size_t longest)
{
    pend p[PS_BPE_BATCH];
    size_t k = 0;
    const ps_tok_vocab *v = &m->base.vocab;
    for (size_t i = 0; i < count; i++) { /* parse, join, hash, prefetch */
        bool skip;
        if (!split(pre ? NULL : json_array_get(arr, start + i), pre ? &pre->merges[start + i] : NULL,
                   is_str, &p[k], &skip))
            return false;
        if (skip)
            continue;
        pend *q = &p[k];
        if (q->nb < m->prefix_len || (q->nn = q->na + q->nb - m->prefix_len) > longest)
            return false;
        char *cat = buf + k * (longest + 1);
        memcpy(cat, q->a, q->na);
        memcpy(cat + q->na, q->b + m->prefix_len, q->nb - m->prefix_len);
        q->ha = ps_tok_hash(q->a, q->na);
        q->hb = ps_tok_hash(q->b, q->nb);
        q->hn = ps_tok_hash(cat, q->nn);
        __builtin_prefetch(&v->slots[q->ha & v->mask]);
        __builtin_prefetch(&v->slots[q->hb & v->mask]);
        __builtin_prefetch(&v->slots[q->hn & v->mask]);
        k++;
    }
    for (size_t i = 0; i < k; i++) { /* resolve, prefetch the merge slot */
        pend *q = &p[i];
        q->ia = ps_tok_vocab_find_hashed(v, q->a, q->na, q->ha);
        q->ib = ps_tok_vocab_find_hashed(v, q->b, q->nb, q->hb);
        q->in = ps_tok_vocab_find_hashed(v, buf + i * (longest + 1), q->nn, q->hn);
        if (q->ia < 0 || q->ib < 0 || q->in < 0)
            return false;
        q->slot = (size_t)ps_tok_fmix(ps_bpe_key(q->ia, q->ib)) & m->merge_mask;
        __builtin_prefetch(&m->merges[q->slot], 1);
    }
    for (size_t i = 0; i < k; i++) { /* insert in order: a later duplicate wins */
        uint64_t key = ps_bpe_key(p[i].ia, p[i].ib);
        size_t j = p[i].slot;
        while (m->merges[j].key != PS_BPE_EMPTY && m->merges[j].key != key)
            j = (j + 1) & m->merge_mask;
        if (m->merges[j].key == PS_BPE_EMPTY)
            m->n_merges++;
        m->merges[j] = (ps_bpe_merge){key, (*rank)++, p[i].in};
    }
    return true;
}
