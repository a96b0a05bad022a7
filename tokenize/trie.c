/* Byte tries over the vocabulary, so WordPiece finds the longest token at a
 * position in one walk instead of hashing every shorter substring as HF's
 * reference loop does. Children of a node are contiguous and sorted, built
 * breadth-first from the sorted keys. */
#include "tokenize/tokenize.h"

#include <stdlib.h>
#include <string.h>

/* A key: its first 8 bytes big-endian (zero-padded) decide most
 * comparisons and most trie levels without touching the pool, whose tokens
 * lie in hash-slot order (a cache miss each). */
typedef struct key {
    uint64_t head;
    const unsigned char *p;
    uint32_t len;
    int32_t id;
} key;

static uint64_t head_of(const unsigned char *p, size_t len)
{
    uint64_t h = 0;
    for (size_t i = 0; i < 8; i++)
        h = h << 8 | (i < len ? p[i] : 0);
    return h;
}

/* Bytewise order, a key before its extensions. Equal heads mean equal
 * bytes up to the shorter key's length where that is 8 or less. */
static int key_cmp(const void *a, const void *b)
{
    const key *x = a, *y = b;
    if (x->head != y->head)
        return x->head < y->head ? -1 : 1;
    size_t n = x->len < y->len ? x->len : y->len;
    if (n > 8) {
        int c = memcmp(x->p + 8, y->p + 8, n - 8);
        if (c)
            return c;
    }
    return (x->len > y->len) - (x->len < y->len);
}

static unsigned char key_byte(const key *k, size_t d)
{
    return d < 8 ? (unsigned char)(k->head >> (56 - 8 * d)) : k->p[d];
}

/* Sorts keys in key_cmp order: a stable radix sort on the heads (passes
 * over a byte every key shares skipped), then runs with one head, keys
 * longer than 8 bytes, by comparison. Several times faster than qsort
 * alone on a 30k-token vocabulary, a cost every load pays. */
static void sort_keys(key *keys, size_t n)
{
    key *tmp = n > 64 ? malloc(n * sizeof *tmp) : NULL;
    if (!tmp) {
        qsort(keys, n, sizeof *keys, key_cmp);
        return;
    }
    key *from = keys, *to = tmp;
    for (unsigned shift = 0; shift < 64; shift += 8) {
        size_t count[256] = {0};
        for (size_t i = 0; i < n; i++)
            count[(from[i].head >> shift) & 0xff]++;
        if (count[(from[0].head >> shift) & 0xff] == n)
            continue; /* every key has this byte */
        size_t at = 0;
        for (int b = 0; b < 256; b++) {
            size_t c = count[b];
            count[b] = at;
            at += c;
        }
        for (size_t i = 0; i < n; i++)
            to[count[(from[i].head >> shift) & 0xff]++] = from[i];
        key *swap = from;
        from = to;
        to = swap;
    }
    if (from != keys)
        memcpy(keys, from, n * sizeof *keys);
    free(tmp);
    for (size_t i = 0, j; i < n; i = j) {
        for (j = i + 1; j < n && keys[j].head == keys[i].head; j++)
            ;
        if (j - i > 1)
            qsort(keys + i, j - i, sizeof *keys, key_cmp);
    }
}

typedef struct span {
    uint32_t lo, hi, depth;
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
        const unsigned char *p = (const unsigned char *)v->pool + s->off + prefix_len;
        keys[n] = (key){head_of(p, s->len - prefix_len), p, (uint32_t)(s->len - prefix_len), s->id};
        total += keys[n].len;
        n++;
    }
    sort_keys(keys, n);

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
    spans[0] = (span){0, (uint32_t)n, 0};
    t->n_nodes = 1;
    for (size_t i = 0; i < t->n_nodes; i++) {
        uint32_t lo = spans[i].lo, hi = spans[i].hi, d = spans[i].depth;
        if (lo < hi && keys[lo].len == d) /* the key ending at this node */
            t->nodes[i].id = keys[lo++].id;
        t->nodes[i].first_child = (uint32_t)t->n_nodes;
        while (lo < hi) {
            unsigned char b = key_byte(&keys[lo], d);
            uint32_t end = lo + 1;
            while (end < hi && key_byte(&keys[end], d) == b)
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
