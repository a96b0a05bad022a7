/*
 * WordPiece: greedy longest-match-first, as HF's WordPiece::tokenize.
 *
 * HF tries the whole remaining word, then drops one character at a time
 * until the vocabulary has the substring (with "##" after the first piece).
 * The longest vocabulary entry that is a prefix of the rest is exactly what
 * one walk down a byte trie finds, so each piece costs its length in steps.
 * Whole words are the common case, so one hash probe comes first.
 */
#include "tokenize/tokenize.h"

#include <string.h>

/* Longest key of `t` that is a prefix of s[0..n): returns its id and stores
 * its length, or returns -1. */
static inline int32_t trie_longest(const ps_tok_trie *t, const unsigned char *s, size_t n,
                                   size_t *match_len)
{
    uint32_t cur = t->root_child[s[0]];
    if (!cur)
        return -1;
    int32_t best = -1;
    size_t best_len = 0, i = 1;
    for (;;) {
        const ps_tok_trie_node *node = &t->nodes[cur];
        if (node->id >= 0) {
            best = node->id;
            best_len = i;
        }
        if (i == n || !node->n_children)
            break;
        /* a node's labels are distinct bytes (at most 256): memchr scans
         * them as fast as a binary search would narrow them */
        const uint8_t *lab = t->labels + node->first_child;
        const uint8_t *hit = memchr(lab, s[i], node->n_children);
        if (!hit)
            break;
        cur = node->first_child + (uint32_t)(hit - lab);
        i++;
    }
    *match_len = best_len;
    return best;
}

static int push_unk(const ps_tokenizer *tok, ps_tok_scratch *s)
{
    if (tok->unk_id < 0) {
        s->fail = PS_EINVAL;
        return PS_EINVAL;
    }
    s->ids[s->n++] = tok->unk_id;
    return PS_OK;
}

int ps_tok_wordpiece(const ps_tokenizer *tok, ps_tok_scratch *s, const char *w, size_t len,
                     size_t chars)
{
    /* at most one id per byte */
    if (PS_UNLIKELY(s->cap - s->n < len + 1)) {
        int rc = ps_tok_scratch_reserve(s, len + 1);
        if (rc)
            return rc;
    }
    if (chars > tok->max_chars)
        return push_unk(tok, s);
    int32_t id = ps_tok_vocab_find(&tok->vocab, w, len);
    if (id >= 0) {
        s->ids[s->n++] = id;
        return PS_OK;
    }
    const unsigned char *p = (const unsigned char *)w;
    size_t start = s->n, pos = 0, m = 0;
    id = trie_longest(&tok->word_trie, p, len, &m);
    while (id >= 0) {
        s->ids[s->n++] = id;
        pos += m;
        if (pos == len)
            return PS_OK;
        id = trie_longest(&tok->cont_trie, p + pos, len - pos, &m);
    }
    s->n = start; /* some piece has no token: the whole word is unk */
    return push_unk(tok, s);
}
