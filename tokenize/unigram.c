/*
 * The Unigram model (SentencePiece's), id for id with HF tokenizers 0.23.2
 * models/unigram/model.rs: `encode_optimized` (a Viterbi pass over a byte
 * trie of the pieces) and `tokenize` (unk fusion, byte fallback).
 *
 * What HF does that this file reproduces on purpose:
 *  - token -> id is a hash map filled in vocab order, so a duplicated piece
 *    means its LAST index everywhere (trie hits, score, lookups);
 *  - min_score is over every entry, duplicates and "" included; a character
 *    with no one-character piece gets an unk edge scored min_score - 10;
 *  - a node is replaced only by a strictly better path (ties keep the first
 *    one found: the earliest start, and among one start the shorter piece);
 *  - the unk edge errs only when it would be taken (`ok_or(..)?` sits inside
 *    the "better" branch), so a file without unk_id encodes text the pieces
 *    cover;
 *  - fusion joins consecutive path nodes whose id is unk_id (the literal
 *    "<unk>" piece included), then looks the joined string up again: found,
 *    its id; else with byte_fallback its bytes as <0xXX> pieces when every
 *    one exists; else unk_id.
 * Scores are f64 sums in the same order as HF's, so ties and near-ties
 * resolve identically.
 */
#include "tokenize/hf.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define UG_UNK_PENALTY 10.0 /* HF's K_UNK_PENALTY */

typedef struct ug_model {
    ps_tok_model base; /* first: the model interface */
    double *score;     /* per id */
    size_t n;          /* vocabulary entries */
    double unk_score;
    bool byte_fallback;
    int32_t byte_id[256]; /* id of "<0xXX>", or -1 */
    ps_tok_trie trie;     /* every non-empty piece; node id = its hash id */
    uint64_t serial;      /* unique per load: a cache never outlives its model */
} ug_model;

/* A model freed and another loaded at the same address must not find the
 * first one's cache in a slot: slots compare this serial, not only owner. */
static atomic_uint_fast64_t ug_serials = 1;

/* A per-thread cache of short pieces' ids (HF caches each piece too; the
 * result is a pure function of the piece, so a hit is the same answer).
 * Two-way set-associative, the recent entry first, each entry one cache
 * line: Spider's 12,000 distinct words stay in it. */
#define UG_CACHE_SETS 8192 /* a power of two; two entries each */
#define UG_CACHE_KEY 22
#define UG_CACHE_IDS 8

typedef struct ug_cached { /* 64 bytes */
    uint64_t hash;
    uint8_t len; /* 0: empty */
    uint8_t n_ids;
    char key[UG_CACHE_KEY];
    int32_t ids[UG_CACHE_IDS];
} ug_cached;
_Static_assert(sizeof(ug_cached) == 64, "one cache line per entry");

/* Per-thread Viterbi arrays, indexed by byte position 0..n. Grown, never
 * shrunk, so an encode call allocates only when a piece is longer than any
 * before it in this thread. */
typedef struct ug_work {
    double *best;   /* score of the best path ending here */
    size_t *from;   /* its last node's start; SIZE_MAX: no path yet */
    int32_t *id;    /* its last node's id */
    size_t *stack;  /* node ends, back to front */
    size_t cap;
    ug_cached *cache; /* 2 * UG_CACHE_SETS entries, 64-byte aligned */
    uint64_t serial;  /* of the model the cache belongs to */
} ug_work;

static void ug_work_free(void *p)
{
    ug_work *w = p;
    if (!w)
        return;
    free(w->best);
    free(w->from);
    free(w->id);
    free(w->stack);
    free(w->cache);
    free(w);
}

static ug_work *ug_work_get(const ug_model *m, ps_tok_work_slot *slot, size_t n)
{
    if (slot->owner != m || slot->free_fn != ug_work_free ||
        ((ug_work *)slot->w)->serial != m->serial) {
        ps_tok_work_slot_clear(slot);
        ug_work *w = calloc(1, sizeof(ug_work));
        if (w)
            w->cache = aligned_alloc(64, 2 * UG_CACHE_SETS * sizeof *w->cache);
        if (w && w->cache)
            memset(w->cache, 0, 2 * UG_CACHE_SETS * sizeof *w->cache);
        if (!w || !w->cache) {
            ug_work_free(w);
            return NULL;
        }
        w->serial = m->serial;
        slot->w = w;
        slot->owner = m;
        slot->free_fn = ug_work_free;
    }
    ug_work *w = slot->w;
    if (n + 1 <= w->cap)
        return w;
    size_t cap = w->cap ? w->cap : 256;
    while (cap < n + 1) {
        if (cap > SIZE_MAX / 2 / sizeof(double))
            return NULL;
        cap *= 2;
    }
    if (ps_array_resize(&w->best, cap, sizeof *w->best) ||
        ps_array_resize(&w->from, cap, sizeof *w->from) ||
        ps_array_resize(&w->id, cap, sizeof *w->id) ||
        ps_array_resize(&w->stack, cap, sizeof *w->stack))
        return NULL;
    w->cap = cap;
    return w;
}

/* Length of the UTF-8 sequence led by byte c (the input is valid UTF-8). */
static inline size_t utf8_len(unsigned char c)
{
    return c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
}

/* The child of trie node `node` along byte b, or 0. */
static inline uint32_t trie_child(const ps_tok_trie *t, uint32_t node, unsigned char b)
{
    if (node == 0)
        return t->root_child[b];
    const ps_tok_trie_node *nd = &t->nodes[node];
    uint32_t lo = nd->first_child, hi = lo + nd->n_children;
    while (lo < hi) { /* children are sorted by label */
        uint32_t mid = lo + (hi - lo) / 2;
        if (t->labels[mid] < b)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < nd->first_child + nd->n_children && t->labels[lo] == b ? lo : 0;
}

/* Offers the edge [start, end) with `id` scoring `cand` to node `end`. */
static inline bool offer(ug_work *w, size_t start, size_t end, int32_t id, double cand)
{
    if (w->from[end] != SIZE_MAX && !(cand > w->best[end]))
        return false;
    w->best[end] = cand;
    w->from[end] = start;
    w->id[end] = id;
    return true;
}

static int missing_unk(ps_error *err)
{
    return ps_error_set(err, PS_EINVAL,
                        "Unigram: Encountered an unknown token but `unk_id` is missing");
}

/* HF's encode_optimized: the forward pass. */
static int viterbi(const ug_model *m, ug_work *w, const unsigned char *s, size_t n,
                   ps_error *err)
{
    for (size_t i = 0; i <= n; i++)
        w->from[i] = SIZE_MAX;
    w->best[0] = 0.0;
    for (size_t pos = 0; pos < n;) {
        double here = w->best[pos]; /* 0.0 when unreached, as HF's default node */
        if (w->from[pos] == SIZE_MAX)
            here = 0.0;
        size_t mblen = utf8_len(s[pos]);
        if (mblen > n - pos) /* only invalid UTF-8, which callers never pass */
            mblen = n - pos;
        bool single = false;
        uint32_t node = 0;
        for (size_t k = pos; k < n; k++) {
            node = trie_child(&m->trie, node, s[k]);
            if (!node)
                break;
            int32_t id = m->trie.nodes[node].id;
            if (id < 0)
                continue;
            offer(w, pos, k + 1, id, m->score[id] + here);
            if (k + 1 - pos == mblen)
                single = true;
        }
        if (!single) {
            size_t end = pos + mblen;
            double cand = m->unk_score + here;
            if (w->from[end] == SIZE_MAX || cand > w->best[end]) {
                if (m->base.unk_id < 0)
                    return missing_unk(err);
                offer(w, pos, end, m->base.unk_id, cand);
            }
        }
        pos += mblen;
    }
    return PS_OK;
}

/* Emits the fused unk run s[a, b) as HF's tokenize does. */
static int emit_run(const ug_model *m, const unsigned char *s, size_t a, size_t b,
                    ps_tok_ids *out, ps_error *err)
{
    int32_t id = ps_tok_vocab_find(&m->base.vocab, (const char *)s + a, b - a);
    if (id >= 0)
        return ps_tok_ids_push(out, id);
    if (m->byte_fallback) {
        size_t k = a;
        while (k < b && m->byte_id[s[k]] >= 0)
            k++;
        if (k == b) {
            if (ps_tok_ids_reserve(out, b - a))
                return PS_ENOMEM;
            for (k = a; k < b; k++)
                out->v[out->n++] = m->byte_id[s[k]];
            return PS_OK;
        }
    }
    if (m->base.unk_id < 0)
        return missing_unk(err);
    return ps_tok_ids_push(out, m->base.unk_id);
}

/* Viterbi, then the path back to front, fused and emitted front to back. */
static int encode_piece(const ug_model *m, ug_work *w, const unsigned char *s, size_t n,
                        ps_tok_ids *out, ps_error *err)
{
    int rc = viterbi(m, w, s, n, err);
    if (rc < 0)
        return rc;
    size_t k = 0;
    for (size_t end = n; end > 0; end = w->from[end])
        w->stack[k++] = end;
    size_t run = SIZE_MAX; /* start of the pending unk run */
    for (size_t i = k; i-- > 0;) {
        size_t end = w->stack[i], start = w->from[end];
        int32_t id = w->id[end];
        if (id == m->base.unk_id) {
            if (run == SIZE_MAX)
                run = start;
            continue;
        }
        if (run != SIZE_MAX) {
            if ((rc = emit_run(m, s, run, start, out, err)) < 0)
                return rc;
            run = SIZE_MAX;
        }
        if (ps_tok_ids_push(out, id))
            return PS_ENOMEM;
    }
    if (run != SIZE_MAX)
        return emit_run(m, s, run, n, out, err);
    return PS_OK;
}

static int ug_encode(const ps_tok_model *base, ps_tok_work_slot *slot, const char *text,
                     size_t n, ps_tok_ids *out, ps_error *err)
{
    const ug_model *m = (const ug_model *)base;
    if (n == 0)
        return PS_OK;
    ug_work *w = ug_work_get(m, slot, n);
    if (!w)
        return PS_ENOMEM;
    ug_cached *c = NULL;
    uint64_t h = 0;
    if (n <= UG_CACHE_KEY) {
        h = ps_tok_hash(text, n);
        c = &w->cache[2 * (h & (UG_CACHE_SETS - 1))];
        for (int way = 0; way < 2; way++) {
            ug_cached *e = &c[way];
            if (e->len == n && e->hash == h && !memcmp(e->key, text, n)) {
                if (ps_tok_ids_reserve(out, e->n_ids))
                    return PS_ENOMEM;
                memcpy(out->v + out->n, e->ids, e->n_ids * sizeof *e->ids);
                out->n += e->n_ids;
                if (way) { /* the recent one first */
                    ug_cached t = c[0];
                    c[0] = c[1];
                    c[1] = t;
                }
                return PS_OK;
            }
        }
    }
    size_t before = out->n;
    int rc = encode_piece(m, w, (const unsigned char *)text, n, out, err);
    if (rc == 0 && c && out->n - before <= UG_CACHE_IDS) {
        c[1] = c[0]; /* the older entry goes */
        c->hash = h;
        c->len = (uint8_t)n;
        c->n_ids = (uint8_t)(out->n - before);
        memcpy(c->key, text, n);
        memcpy(c->ids, out->v + before, c->n_ids * sizeof *c->ids);
    }
    return rc;
}

static void ug_destroy(ps_tok_model *base)
{
    ug_model *m = (ug_model *)base;
    if (!m)
        return;
    ps_tok_vocab_free(&m->base.vocab);
    ps_tok_trie_free(&m->trie);
    free(m->score);
    free(m);
}

/* Reads vocab[i] = [piece, score] into the model. */
static int load_entry(const ps_tok_load *c, ug_model *m, json_t *e, const char *vpath, size_t i)
{
    char where[256];
    json_t *piece = json_array_get(e, 0), *score = json_array_get(e, 1);
    if (!json_is_array(e) || json_array_size(e) != 2 || !json_is_string(piece) ||
        !json_is_number(score))
        return ps_tok_load_fail(c, PS_EFORMAT, ps_tok_jpath_idx(where, sizeof where, vpath, i),
                                "expected a [piece, score] pair");
    size_t len = json_string_length(piece);
    int rc = ps_tok_vocab_set(&m->base.vocab, json_string_value(piece), len, (int32_t)i);
    if (rc == PS_ELIMIT)
        return ps_tok_load_fail(c, rc, ps_tok_jpath_idx(where, sizeof where, vpath, i),
                                "piece of %zu bytes (at most %u)", len, PS_TOK_MAX_TOKEN_BYTES);
    if (rc < 0)
        return rc;
    m->score[i] = json_number_value(score);
    return PS_OK;
}

static int load_vocab(const ps_tok_load *c, ug_model *m, json_t *j, const char *jpath)
{
    char vpath[256];
    ps_tok_jpath_key(vpath, sizeof vpath, jpath, "vocab");
    json_t *vocab = json_object_get(j, "vocab");
    if (!vocab)
        return ps_tok_load_fail(c, PS_EFORMAT, jpath, "Unigram: missing \"vocab\"");
    if (!json_is_array(vocab))
        return ps_tok_load_fail(c, PS_EFORMAT, vpath, "expected an array of [piece, score]");
    m->n = json_array_size(vocab);
    if (m->n > PS_TOK_MAX_TOKENS)
        return ps_tok_load_fail(c, PS_ELIMIT, vpath, "more than %zu pieces", PS_TOK_MAX_TOKENS);
    m->score = malloc((m->n ? m->n : 1) * sizeof *m->score);
    if (!m->score)
        return PS_ENOMEM;
    double min = INFINITY;
    for (size_t i = 0; i < m->n; i++) {
        int rc = load_entry(c, m, json_array_get(vocab, i), vpath, i);
        if (rc < 0)
            return rc;
        if (m->score[i] < min)
            min = m->score[i];
    }
    m->unk_score = min - UG_UNK_PENALTY;
    return PS_OK;
}

/* unk_id, byte_fallback and HF's checks of them. */
static int load_options(const ps_tok_load *c, ug_model *m, json_t *j, const char *jpath)
{
    char where[256];
    uint64_t unk = UINT64_MAX;
    int rc = ps_tok_json_uint(c, j, jpath, "unk_id", INT32_MAX, &unk);
    if (rc < 0)
        return rc;
    if (unk != UINT64_MAX) {
        ps_tok_jpath_key(where, sizeof where, jpath, "unk_id");
        if (m->n == 0)
            return ps_tok_load_fail(c, PS_EFORMAT, where,
                                    "the vocabulary is empty but at least <unk> is needed");
        if (unk >= m->n)
            return ps_tok_load_fail(c, PS_EFORMAT, where,
                                    "%llu is not below the vocabulary size %zu",
                                    (unsigned long long)unk, m->n);
        m->base.unk_id = (int32_t)unk;
    }
    rc = ps_tok_json_bool(c, j, jpath, "byte_fallback", &m->byte_fallback);
    if (rc < 0)
        return rc;
    for (unsigned b = 0; b < 256; b++) {
        char name[8];
        snprintf(name, sizeof name, "<0x%02X>", b);
        m->byte_id[b] = ps_tok_vocab_find(&m->base.vocab, name, 6);
    }
    return PS_OK;
}

int ps_tok_unigram_load(const ps_tok_load *c, json_t *j, const char *jpath, ps_tok_model **out)
{
    *out = NULL;
    if (!json_is_object(j))
        return ps_tok_load_fail(c, PS_EFORMAT, jpath, "expected an object");
    const char *type = ps_tok_json_type(j);
    if (json_object_get(j, "type") && (!type || strcmp(type, "Unigram") != 0)) {
        return ps_tok_load_fail_key(c, PS_EFORMAT, jpath, "type", "expected \"Unigram\"");
    }
    ug_model *m = calloc(1, sizeof *m);
    if (!m)
        return ps_tok_load_fail(c, PS_ENOMEM, jpath, "out of memory");
    m->base.kind = PS_TOK_MODEL_UNIGRAM;
    m->base.unk_id = -1;
    m->base.encode = ug_encode;
    m->base.destroy = ug_destroy;
    m->serial = atomic_fetch_add(&ug_serials, 1);
    ps_tok_vocab_init(&m->base.vocab);
    int rc = load_vocab(c, m, j, jpath);
    if (rc == PS_OK)
        rc = load_options(c, m, j, jpath);
    if (rc == PS_OK)
        rc = ps_tok_trie_build(&m->trie, &m->base.vocab, "", 0);
    if (rc < 0) {
        if (rc == PS_ENOMEM && c->err && !c->err->code)
            ps_tok_load_fail(c, rc, jpath, "out of memory");
        ug_destroy(&m->base);
        return rc;
    }
    *out = &m->base;
    return PS_OK;
}
