/*
 * BPE encode of one piece, as tokenizers 0.23.2's BPE::tokenize:
 *
 *   ignore_merges and the piece is a token    -> that one id
 *   the per-thread cache knows the piece      -> its ids
 *   else merge_word: one symbol per character (the prefix before every
 *   character but the first, the suffix after the last; an unknown one
 *   becomes "<0xXX>" bytes, or unk, fused or not, or nothing), then
 *   merge_all: a queue of (rank, position) entries, lowest first.
 *
 * The queue is emulated entry for entry, stale entries included: HF checks
 * a popped entry only against the *new id* of the pair now at its
 * position, so an outdated entry can still merge a different pair that
 * yields the same token (converted SentencePiece merges list several pairs
 * per token). Entries are ordered by the key rank << 32 | pos, the order
 * of HF's heap; entries with equal keys are identical, so any min-queue
 * pops them in HF's order. Short words scan a small array for the
 * minimum; longer ones use a binary heap.
 */
#include "tokenize/bpe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Words with fewer symbols than this use the linear-scan queue. */
#define LINEAR_MAX 16

typedef struct sym {
    int32_t c;          /* token id */
    int32_t prev, next; /* -1: none */
    uint32_t len;       /* bytes covered; 0: merged away */
} sym;

typedef struct entry {
    uint64_t key; /* rank << 32 | pos */
    int32_t new_id;
} entry;

typedef struct work {
    sym *syms;
    size_t n_syms, syms_cap;
    entry *q;
    size_t qn, q_cap;
    int32_t *ids; /* the result of the last merge_word */
    size_t ids_cap;
    ps_tok_buf tmp; /* prefix + character + suffix */
    ps_bpe_cache *cache;
} work;

static void work_free(void *p)
{
    work *w = p;
    if (!w)
        return;
    free(w->syms);
    free(w->q);
    free(w->ids);
    ps_tok_buf_free(&w->tmp);
    ps_bpe_cache_free(w->cache);
    free(w);
}

/* The calling thread's work area for model m (made on first use). */
static work *get_work(const ps_bpe *m, ps_tok_work_slot *slot)
{
    if (slot->owner == m && slot->w)
        return slot->w;
    ps_tok_work_slot_clear(slot);
    work *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->cache = ps_bpe_cache_new(); /* NULL: run uncached */
    slot->owner = m;
    slot->w = w;
    slot->free_fn = work_free;
    return w;
}

static int grow(void **p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return PS_OK;
    size_t c = *cap ? *cap : 64;
    while (c < need)
        c *= 2;
    void *q = realloc(*p, c * size);
    if (!q)
        return PS_ENOMEM;
    *p = q;
    *cap = c;
    return PS_OK;
}

static void add_sym(work *w, int32_t c, size_t len)
{
    int32_t i = (int32_t)w->n_syms;
    if (i > 0)
        w->syms[i - 1].next = i;
    w->syms[w->n_syms++] = (sym){c, i - 1, -1, (uint32_t)len};
}

void ps_bpe_slot_uncached(const ps_tok_model *model, ps_tok_work_slot *slot)
{
    work *w = get_work((const ps_bpe *)model, slot);
    if (w) {
        ps_bpe_cache_free(w->cache);
        w->cache = NULL;
    }
}

/* ---- merge_word: the initial symbols --------------------------------- */

static size_t utf8_len(unsigned char b)
{
    return b < 0xC0 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
}

/* prefix? + s[0..len) + suffix? into w->tmp. */
static int build_str(const ps_bpe *m, work *w, const char *s, size_t len, bool first, bool last)
{
    w->tmp.len = 0;
    if ((!first && m->prefix && ps_tok_buf_put(&w->tmp, m->prefix, m->prefix_len)) ||
        ps_tok_buf_put(&w->tmp, s, len) ||
        (last && m->suffix && ps_tok_buf_put(&w->tmp, m->suffix, m->suffix_len)))
        return PS_ENOMEM;
    return PS_OK;
}

/* Id of the character s[0..len) at its position, or -1. */
static int32_t char_id(const ps_bpe *m, work *w, const char *s, size_t len, bool first,
                       bool last, int *rc)
{
    const unsigned char *u = (const unsigned char *)s;
    unsigned kind = (unsigned)!first | (unsigned)last << 1;
    /* Pieces are valid UTF-8; a stray byte (a caller's bug) still takes
     * the slow path and is simply not found, rather than aliasing a
     * character in the table. */
    if (len == 1 && u[0] < 0x80)
        return m->char_id[kind][u[0]];
    if (len == 2 && u[0] >= 0xC2 && (u[1] & 0xC0) == 0x80)
        return m->char_id[kind][((uint32_t)(u[0] & 0x1F) << 6) | (u[1] & 0x3F)];
    if ((*rc = build_str(m, w, s, len, first, last)))
        return -1;
    return ps_tok_vocab_find(&m->base.vocab, w->tmp.p, w->tmp.len);
}

/* An unknown character: its bytes as "<0xXX>" tokens when all exist. */
static int byte_fallback(const ps_bpe *m, work *w, const char *s, size_t len, bool first,
                         bool last, bool *done)
{
    int rc = build_str(m, w, s, len, first, last);
    if (rc)
        return rc;
    *done = false;
    for (size_t i = 0; i < w->tmp.len; i++)
        if (m->byte_id[(unsigned char)w->tmp.p[i]] < 0)
            return PS_OK;
    for (size_t i = 0; i < w->tmp.len; i++)
        add_sym(w, m->byte_id[(unsigned char)w->tmp.p[i]], 1);
    *done = true;
    return PS_OK;
}

static int merge_word(const ps_bpe *m, work *w, const char *s, size_t n, ps_error *err)
{
    /* at most one symbol per byte of prefix + piece + suffix */
    size_t most = n * (1 + m->prefix_len) + m->suffix_len;
    if (grow((void **)&w->syms, &w->syms_cap, most, sizeof *w->syms))
        return PS_ENOMEM;
    w->n_syms = 0;
    int32_t unk = -1; /* a pending unk symbol (HF's `unk`), and its length */
    size_t unk_len = 0;
    for (size_t i = 0; i < n;) {
        size_t len = utf8_len((unsigned char)s[i]);
        if (len > n - i)
            len = n - i;
        bool first = i == 0, last = i + len == n;
        int rc = PS_OK;
        int32_t id = char_id(m, w, s + i, len, first, last, &rc);
        if (rc)
            return rc;
        if (id >= 0) {
            if (unk >= 0)
                add_sym(w, unk, unk_len);
            unk = -1;
            add_sym(w, id, len);
            i += len;
            continue;
        }
        bool done = false;
        /* byte tokens go in before a pending unk, as in HF */
        if (m->byte_fallback && (rc = byte_fallback(m, w, s + i, len, first, last, &done)))
            return rc;
        if (!done && m->unk) {
            if (m->unk_id < 0)
                return ps_error_set(err, PS_EINVAL, "BPE: unk token '%s' is not in the vocabulary",
                                    m->unk);
            if (unk >= 0 && m->fuse_unk) {
                unk_len += len;
            } else {
                if (unk >= 0)
                    add_sym(w, unk, unk_len);
                unk = m->unk_id;
                unk_len = len;
            }
        }
        i += len;
    }
    if (unk >= 0)
        add_sym(w, unk, unk_len);
    return PS_OK;
}

/* ---- merge_all: the queue -------------------------------------------- */

static void heap_push(work *w, entry e)
{
    size_t i = w->qn++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (w->q[parent].key <= e.key)
            break;
        w->q[i] = w->q[parent];
        i = parent;
    }
    w->q[i] = e;
}

static entry heap_pop(work *w)
{
    entry top = w->q[0], last = w->q[--w->qn];
    size_t i = 0, n = w->qn;
    for (;;) {
        size_t l = 2 * i + 1, best = i;
        if (l >= n)
            break;
        best = l + 1 < n && w->q[l + 1].key < w->q[l].key ? l + 1 : l;
        if (last.key <= w->q[best].key)
            break;
        w->q[i] = w->q[best];
        i = best;
    }
    if (n)
        w->q[i] = last;
    return top;
}

static entry linear_pop(work *w)
{
    size_t best = 0;
    for (size_t i = 1; i < w->qn; i++)
        if (w->q[i].key < w->q[best].key)
            best = i;
    entry top = w->q[best];
    w->q[best] = w->q[--w->qn];
    return top;
}

/* Queues the pair starting at symbol pos, if it has a merge. */
static int push_pair(const ps_bpe *m, work *w, int32_t pos, bool linear)
{
    const ps_bpe_merge *mg = ps_bpe_merge_find(m, w->syms[pos].c, w->syms[w->syms[pos].next].c);
    if (!mg)
        return PS_OK;
    if (w->qn == w->q_cap && grow((void **)&w->q, &w->q_cap, w->qn + 1, sizeof *w->q))
        return PS_ENOMEM;
    entry e = {((uint64_t)mg->rank << 32) | (uint32_t)pos, mg->new_id};
    if (linear)
        w->q[w->qn++] = e;
    else
        heap_push(w, e);
    return PS_OK;
}

static int merge_all(const ps_bpe *m, work *w)
{
    bool linear = w->n_syms < LINEAR_MAX;
    w->qn = 0;
    for (size_t i = 0; i + 1 < w->n_syms; i++)
        if (push_pair(m, w, (int32_t)i, linear))
            return PS_ENOMEM;
    sym *y = w->syms;
    while (w->qn) {
        entry top = linear ? linear_pop(w) : heap_pop(w);
        int32_t pos = (int32_t)(uint32_t)top.key;
        if (!y[pos].len || y[pos].next < 0)
            continue; /* merged away, or now the last symbol */
        int32_t nx = y[pos].next;
        const ps_bpe_merge *mg = ps_bpe_merge_find(m, y[pos].c, y[nx].c);
        if (!mg || mg->new_id != top.new_id)
            continue; /* an expired entry */
        y[pos].c = top.new_id;
        y[pos].len += y[nx].len;
        y[pos].next = y[nx].next;
        y[nx].len = 0;
        if (y[pos].next >= 0)
            y[y[pos].next].prev = pos;
        if ((y[pos].prev >= 0 && push_pair(m, w, y[pos].prev, linear)) ||
            (y[pos].next >= 0 && push_pair(m, w, pos, linear)))
            return PS_ENOMEM;
    }
    return PS_OK;
}

/* ---- the model's encode ---------------------------------------------- */

static int emit(ps_tok_ids *out, const int32_t *ids, size_t n)
{
    if (!n) /* every character dropped; ids may be NULL */
        return PS_OK;
    if (ps_tok_ids_reserve(out, n))
        return PS_ENOMEM;
    memcpy(out->v + out->n, ids, n * sizeof *ids);
    out->n += n;
    return PS_OK;
}

int ps_bpe_encode(const ps_tok_model *model, ps_tok_work_slot *slot, const char *s, size_t n,
                  ps_tok_ids *out, ps_error *err)
{
    const ps_bpe *m = (const ps_bpe *)model;
    if (!n)
        return PS_OK;
    if (m->ignore_merges && !m->no_merges) {
        int32_t id = ps_tok_vocab_find(&m->base.vocab, s, n);
        if (id >= 0)
            return ps_tok_ids_push(out, id);
    }
    work *w = get_work(m, slot);
    if (!w)
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    uint64_t h = 0;
    if (w->cache) {
        const int32_t *hit;
        h = ps_tok_hash(s, n);
        int k = ps_bpe_cache_get(w->cache, h, s, n, &hit);
        if (k >= 0)
            return emit(out, hit, (size_t)k);
    }
    int rc = merge_word(m, w, s, n, err);
    if (!rc && !m->no_merges)
        rc = merge_all(m, w);
    if (!rc)
        rc = grow((void **)&w->ids, &w->ids_cap, w->n_syms, sizeof *w->ids);
    if (rc)
        return rc == PS_ENOMEM ? ps_error_set(err, rc, "out of memory") : rc;
    size_t k = 0;
    for (size_t i = 0; i < w->n_syms; i++)
        if (w->syms[i].len)
            w->ids[k++] = w->syms[i].c;
    if (w->cache)
        ps_bpe_cache_put(w->cache, h, s, n, w->ids, k);
    return emit(out, w->ids, k);
}
