/* Byte tries over the vocabulary, so WordPiece finds the longest token at a
 * position in one walk instead of hashing every shorter substring as HF's
 * reference loop does. Children of a node are contiguous and sorted, built
 * breadth-first from the sorted keys. */
#include "tokenize/tokenize.h"

#include <stdlib.h>
#include <string.h>

typedef struct key {
    const unsigned char *p;
    size_t len;
    int32_t id;
} key;

static int key_cmp(const void *a, const void *b)
{
    const key *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->p, y->p, n);
    if (c)
        return c;
    return (x->len > y->len) - (x->len < y->len);
}

typedef struct span {
    size_t lo, hi, depth;
} span;

void ps_tok_trie_free(ps_tok_trie *t)
{
    free(t->nodes);
    free(t->labels);
    memset(t, 0, sizeof *t);
}

int ps_tok_trie_build(ps_tok_trie *t, const ps_tok_vocab *v, const char *prefix,
                      size_t prefix_len)
{
    memset(t, 0, sizeof *t);
    size_t n = 0, total = 0;
    key *keys = malloc((v->n_keys ? v->n_keys : 1) * sizeof *keys);
    if (!keys)
        return PS_ENOMEM;
    for (size_t i = 0; v->slots && i <= v->mask; i++) {
        const ps_tok_slot *s = &v->slots[i];
        if (s->id < 0 || s->len <= prefix_len || memcmp(v->pool + s->off, prefix, prefix_len))
            continue;
        keys[n] = (key){(const unsigned char *)v->pool + s->off + prefix_len,
                        s->len - prefix_len, s->id};
        total += keys[n].len;
        n++;
    }
    qsort(keys, n, sizeof *keys, key_cmp);

    /* At most one node per key byte, plus the root. */
    size_t cap = total + 1;
    t->nodes = malloc(cap * sizeof *t->nodes);
    t->labels = malloc(cap);
    span *spans = malloc(cap * sizeof *spans);
    if (!t->nodes || !t->labels || !spans) {
        free(keys);
        free(spans);
        ps_tok_trie_free(t);
        return PS_ENOMEM;
    }
    t->nodes[0] = (ps_tok_trie_node){0, 0, -1};
    t->labels[0] = 0;
    spans[0] = (span){0, n, 0};
    t->n_nodes = 1;
    for (size_t i = 0; i < t->n_nodes; i++) {
        size_t lo = spans[i].lo, hi = spans[i].hi, d = spans[i].depth;
        if (lo < hi && keys[lo].len == d) /* the key ending at this node */
            t->nodes[i].id = keys[lo++].id;
        t->nodes[i].first_child = (uint32_t)t->n_nodes;
        while (lo < hi) {
            unsigned char b = keys[lo].p[d];
            size_t end = lo + 1;
            while (end < hi && keys[end].p[d] == b)
                end++;
            size_t c = t->n_nodes++;
            t->nodes[c] = (ps_tok_trie_node){0, 0, -1};
            t->labels[c] = b;
            spans[c] = (span){lo, end, d + 1};
            t->nodes[i].n_children++;
            if (i == 0)
                t->root_child[b] = (uint32_t)c;
            lo = end;
        }
    }
    free(spans);
    free(keys);
    return PS_OK;
}
