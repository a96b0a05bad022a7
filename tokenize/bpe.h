/*
 * Internal header of the BPE model (bpe_load.c, bpe.c, bpe_cache.c):
 * the loaded model and its merge table, and the per-thread piece cache.
 * Semantics are those of tokenizers 0.23.2's models/bpe (model.rs,
 * word.rs, serialization.rs).
 */
#ifndef PS_TOKENIZE_BPE_H
#define PS_TOKENIZE_BPE_H

#include "tokenize/hf.h"

/* One merge: the pair (a, b) as key a << 32 | b (ids are < 2^31, so the
 * all-ones key never occurs and marks an empty slot), its rank (index in
 * "merges"; a later duplicate wins, as HF's HashMap collect does) and the
 * id of the merged token. */
#define PS_BPE_EMPTY UINT64_MAX

typedef struct ps_bpe_merge {
    uint64_t key;
    uint32_t rank;
    int32_t new_id;
} ps_bpe_merge;

/* Code points below this have their initial-symbol ids in a table. */
#define PS_BPE_TABLE_CPS 0x800u

typedef struct ps_bpe {
    ps_tok_model base;
    ps_bpe_merge *merges; /* open addressing, linear probing */
    size_t merge_mask;    /* capacity - 1 */
    size_t n_merges;
    /* NULL when absent or "": both mean "add nothing" in HF */
    char *prefix, *suffix;
    size_t prefix_len, suffix_len;
    char *unk;      /* unk_token, or NULL (unknown characters are dropped) */
    int32_t unk_id; /* its id, -1 when not in the vocabulary (an encode error) */
    bool fuse_unk, byte_fallback, ignore_merges;
    bool no_merges; /* dropout 1.0: every merge skipped, no ignore_merges */
    int32_t byte_id[256]; /* id of "<0xXX>", -1 when absent */
    /* Id of a character's initial symbol, by position kind (bit 0: not the
     * first character, so the prefix goes before it; bit 1: the last, so
     * the suffix goes after it), for code points < PS_BPE_TABLE_CPS; -1
     * when that string is not in the vocabulary. Without prefix and suffix
     * the four point at one table. */
    int32_t *char_id[4];
} ps_bpe;

static inline uint64_t ps_bpe_key(int32_t a, int32_t b)
{
    return ((uint64_t)(uint32_t)a << 32) | (uint32_t)b;
}

/* The merge of pair (a, b), or NULL. */
static inline const ps_bpe_merge *ps_bpe_merge_find(const ps_bpe *m, int32_t a, int32_t b)
{
    if (!m->merges)
        return NULL;
    uint64_t k = ps_bpe_key(a, b);
    for (size_t j = (size_t)ps_tok_fmix(k) & m->merge_mask;; j = (j + 1) & m->merge_mask) {
        const ps_bpe_merge *e = &m->merges[j];
        if (e->key == k)
            return e;
        if (e->key == PS_BPE_EMPTY)
            return NULL;
    }
}

/* encode and destroy of the model (bpe.c), set by the loader */
int ps_bpe_encode(const ps_tok_model *model, ps_tok_work_slot *slot, const char *s, size_t n,
                  ps_tok_ids *out, ps_error *err);
void ps_bpe_destroy(ps_tok_model *model);
/* Makes the slot's work area for this model run without a cache (for
 * measuring the merge itself). */
void ps_bpe_slot_uncached(const ps_tok_model *model, ps_tok_work_slot *slot);

/* Merges loaded per batch (bpe_merges.c). */
#define PS_BPE_BATCH 32

/* Resolves and inserts arr[start .. start+count) (count <= PS_BPE_BATCH),
 * advancing *rank; buf holds PS_BPE_BATCH * (longest + 1) bytes. False
 * when some merge is malformed or names a token not in the vocabulary:
 * nothing of the batch is inserted then, and the caller's one-by-one path
 * finds and reports the first bad merge. */
bool ps_bpe_merges_batch(ps_bpe *m, json_t *arr, const ps_tok_pre *pre, bool is_str,
                         size_t start, size_t count,
                         uint32_t *rank, char *buf, size_t longest);

/* ---- per-thread cache: piece bytes -> ids (bpe_cache.c) ---------------- */

/* Pieces this long or longer are not cached (HF's MAX_LENGTH). */
#define PS_BPE_CACHE_MAX_PIECE 256u

typedef struct ps_bpe_cache ps_bpe_cache;

ps_bpe_cache *ps_bpe_cache_new(void);
void ps_bpe_cache_free(ps_bpe_cache *c);
/* The cached ids of s[0..n) (hash h = ps_tok_hash(s, n)): returns the
 * count and sets *ids, or returns -1 on a miss. */
int ps_bpe_cache_get(const ps_bpe_cache *c, uint64_t h, const char *s, size_t n,
                     const int32_t **ids);
/* Remembers ids for s[0..n). When the cache is full it is emptied first:
 * results are deterministic, so what is cached never changes the output. */
void ps_bpe_cache_put(ps_bpe_cache *c, uint64_t h, const char *s, size_t n, const int32_t *ids,
                      size_t n_ids);

#endif /* PS_TOKENIZE_BPE_H */
