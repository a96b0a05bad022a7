/*
 * Loading "added_tokens" the way tokenizers 0.23.2 does: the file's entries
 * are read (every member is required, as HF's serde wants them), then added
 * in order by AddedVocabulary::add_tokens, whose id rules are in added.c's
 * header comment. Then the two pattern tries are built.
 */
#include "tokenize/hf.h"
#include "tokenize/added_internal.h"

#include <stdlib.h>
#include <string.h>

/* Load state: the tokens by id and the content -> id map, each with an
 * open-addressing index (slot = position + 1, 0 = empty) sized for every
 * entry of the file, so it never grows. */
typedef struct build {
    ps_tok_added *a;
    uint32_t *by_name, *by_id;
    size_t mask;
    size_t cap; /* entries of the file */
} build;

static size_t slot_of_name(const build *b, const char *s, size_t n)
{
    size_t j = (size_t)ps_tok_hash(s, n) & b->mask;
    for (;; j = (j + 1) & b->mask) {
        uint32_t k = b->by_name[j];
        if (!k)
            return j;
        const ps_tok_added_name *e = &b->a->map[k - 1];
        if (e->len == n && !memcmp(e->content, s, n))
            return j;
    }
}

static size_t slot_of_id(const build *b, int32_t id)
{
    size_t j = (size_t)ps_tok_fmix((uint64_t)(uint32_t)id) & b->mask;
    for (;; j = (j + 1) & b->mask) {
        uint32_t k = b->by_id[j];
        if (!k || b->a->toks[k - 1].id == id)
            return j;
    }
}

/* One entry of the file, members checked. */
typedef struct entry {
    const char *content;
    size_t len;
    uint64_t file_id;
    ps_tok_added_flags f;
} entry;

static int read_entry(const ps_tok_load *c, json_t *o, const char *jp, entry *e)
{
    if (!json_is_object(o))
        return ps_tok_load_fail(c, PS_EFORMAT, jp, "expected an object");
    static const char *const req[] = {"id", "content", "single_word", "lstrip",
                                      "rstrip", "normalized", "special"};
    for (size_t i = 0; i < sizeof req / sizeof *req; i++)
        if (!json_object_get(o, req[i]))
            return ps_tok_load_fail(c, PS_EFORMAT, jp, "missing member '%s'", req[i]);
    int rc;
    e->content = NULL;
    if ((rc = ps_tok_json_uint(c, o, jp, "id", UINT32_MAX, &e->file_id)) ||
        (rc = ps_tok_json_string(c, o, jp, "content", &e->content, &e->len)) ||
        (rc = ps_tok_json_bool(c, o, jp, "single_word", &e->f.single_word)) ||
        (rc = ps_tok_json_bool(c, o, jp, "lstrip", &e->f.lstrip)) ||
        (rc = ps_tok_json_bool(c, o, jp, "rstrip", &e->f.rstrip)) ||
        (rc = ps_tok_json_bool(c, o, jp, "normalized", &e->f.normalized)) ||
        (rc = ps_tok_json_bool(c, o, jp, "special", &e->f.special)))
        return rc;
    if (!e->content || json_is_null(json_object_get(o, "id"))) /* null where HF wants a value */
        return ps_tok_load_fail(c, PS_EFORMAT, jp, "'content' and 'id' may not be null");
    return PS_OK;
}

static bool same_token(const ps_tok_added_tok *t, const entry *e)
{
    return t->len == e->len && !memcmp(t->content, e->content, e->len) &&
           t->f.single_word == e->f.single_word && t->f.lstrip == e->f.lstrip &&
           t->f.rstrip == e->f.rstrip && t->f.normalized == e->f.normalized &&
           t->f.special == e->f.special;
}

/* The content through the normalizer, when that changes it: HF's
 * normalized_cache entry (kept per id, never dropped by a later token). */
static int normalize_content(const ps_tok_norm *norm, const entry *e, ps_tok_added_tok *t)
{
    ps_tok_buf io = {0}, tmp = {0};
    int rc = ps_tok_buf_put(&io, e->content, e->len);
    if (!rc)
        rc = norm->apply(norm, &io, &tmp); /* what ps_tok_norm_apply does for non-NULL */
    if (!rc && (io.len != e->len || memcmp(io.p, e->content, e->len))) {
        char *p = ps_strndup(io.p ? io.p : "", io.len);
        if (!p) {
            rc = PS_ENOMEM;
        } else {
            free(t->normed);
            t->normed = p;
            t->normed_len = io.len;
        }
    }
    ps_tok_buf_free(&io);
    ps_tok_buf_free(&tmp);
    return rc;
}

/* HF's add_tokens for one token. *next_id: the next free id. */
static int add_one(const ps_tok_load *c, build *b, const entry *e, const ps_tok_norm *norm,
                   const ps_tok_model *model, int64_t *next_id, const char *jp)
{
    ps_tok_added *a = b->a;
    size_t ns = slot_of_name(b, e->content, e->len);
    int32_t id = b->by_name[ns] ? a->map[b->by_name[ns] - 1].id : -1;
    if (id >= 0 && same_token(&a->toks[b->by_id[slot_of_id(b, id)] - 1], e))
        return PS_OK; /* HF's fast path: the very same token again */
    if (id < 0 && model)
        id = ps_tok_vocab_find(&model->vocab, e->content, e->len);
    if (id < 0) {
        int64_t want = model ? (*next_id)++ : (int64_t)e->file_id;
        if (want > INT32_MAX)
            return ps_tok_load_fail(c, PS_ELIMIT, jp, "id %lld is above 2147483647",
                                    (long long)want);
        id = (int32_t)want;
    }
    if (!b->by_name[ns]) {
        char *p = ps_strndup(e->content, e->len);
        if (!p)
            return PS_ENOMEM;
        a->map[a->n_map] = (ps_tok_added_name){p, e->len, id, false};
        b->by_name[ns] = (uint32_t)++a->n_map;
    } else {
        a->map[b->by_name[ns] - 1].id = id;
    }
    a->map[b->by_name[ns] - 1].special |= e->f.special;
    size_t is = slot_of_id(b, id);
    ps_tok_added_tok *t;
    if (b->by_id[is]) { /* this id's token is replaced; its normalized form stays */
        t = &a->toks[b->by_id[is] - 1];
        free(t->content);
    } else {
        t = &a->toks[a->n];
        memset(t, 0, sizeof *t);
        b->by_id[is] = (uint32_t)++a->n;
    }
    t->content = ps_strndup(e->content, e->len);
    if (!t->content)
        return PS_ENOMEM;
    t->len = e->len;
    t->id = id;
    t->f = e->f;
    int rc;
    if (e->f.normalized && norm && (rc = normalize_content(norm, e, t)))
        return rc;
    return PS_OK;
}

/* The model's vocabulary size as HF's get_vocab_size counts it: the
 * vocabulary map's distinct tokens (Unigram: its pieces). */
static int64_t model_size(const ps_tok_model *m)
{
    return m->kind == PS_TOK_MODEL_UNIGRAM ? (int64_t)m->vocab.n_ids : (int64_t)m->vocab.n_keys;
}

static int name_cmp(const void *x, const void *y)
{
    const ps_tok_added_name *a = x, *b = y;
    size_t n = a->len < b->len ? a->len : b->len;
    int c = memcmp(a->content, b->content, n);
    return c ? c : (a->len > b->len) - (a->len < b->len);
}

static int tok_id_cmp(const void *x, const void *y)
{
    const ps_tok_added_tok *a = x, *b = y;
    return (a->id > b->id) - (a->id < b->id);
}

/* Builds the trie of one pattern set. Two tokens whose patterns are equal
 * (two contents a normalizer maps to one string) are both in HF's
 * automaton, and which one matches depends on a random hash order there;
 * here the lower id wins (set last). */
static int build_trie(ps_tok_added *a, bool normalized)
{
    ps_tok_vocab v;
    ps_tok_vocab_init(&v);
    int rc = PS_OK;
    for (size_t i = a->n; i-- > 0 && !rc;) {
        const ps_tok_added_tok *t = &a->toks[i];
        if (t->f.normalized != normalized)
            continue;
        bool use_normed = normalized && t->normed;
        rc = ps_tok_vocab_set(&v, use_normed ? t->normed : t->content,
                              use_normed ? t->normed_len : t->len, (int32_t)i);
    }
    if (!rc && v.n_keys)
        rc = ps_tok_trie_build(&a->trie[normalized], &v, "", 0);
    ps_tok_vocab_free(&v);
    return rc;
}

static int finish(ps_tok_added *a)
{
    qsort(a->toks, a->n, sizeof *a->toks, tok_id_cmp);
    qsort(a->map, a->n_map, sizeof *a->map, name_cmp);
    int rc = build_trie(a, false);
    return rc ? rc : build_trie(a, true);
}

static int alloc_build(build *b, size_t n)
{
    size_t cap = 16;
    while (cap < 2 * n + 2)
        cap *= 2;
    b->mask = cap - 1;
    b->cap = n;
    b->a = calloc(1, sizeof *b->a);
    b->by_name = calloc(cap, sizeof *b->by_name);
    b->by_id = calloc(cap, sizeof *b->by_id);
    if (!b->a || !b->by_name || !b->by_id)
        return PS_ENOMEM;
    size_t m = n ? n : 1;
    b->a->toks = calloc(m, sizeof *b->a->toks);
    b->a->map = calloc(m, sizeof *b->a->map);
    return b->a->toks && b->a->map ? PS_OK : PS_ENOMEM;
}

int ps_tok_added_load_model(const ps_tok_load *c, json_t *j, const char *jpath,
                            const ps_tok_norm *norm, const ps_tok_model *model,
                            ps_tok_added **out)
{
    *out = NULL;
    if (!j || json_is_null(j))
        return PS_OK;
    if (!json_is_array(j))
        return ps_tok_load_fail(c, PS_EFORMAT, jpath, "expected an array");
    size_t n = json_array_size(j);
    if (n > UINT32_MAX / 4)
        return ps_tok_load_fail(c, PS_ELIMIT, jpath, "too many added tokens (%zu)", n);
    build b = {0};
    int rc = alloc_build(&b, n);
    int64_t next_id = model ? model_size(model) : 0;
    for (size_t i = 0; i < n && !rc; i++) {
        char jp[256];
        entry e;
        ps_tok_jpath_idx(jp, sizeof jp, jpath, i);
        if ((rc = read_entry(c, json_array_get(j, i), jp, &e)))
            break;
        if (e.len) /* HF skips an empty content */
            rc = add_one(c, &b, &e, norm, model, &next_id, jp);
    }
    if (!rc)
        rc = finish(b.a);
    free(b.by_name);
    free(b.by_id);
    if (rc) {
        if (rc == PS_ENOMEM)
            ps_tok_load_fail(c, rc, jpath, "out of memory");
        ps_tok_added_free(b.a);
        return rc;
    }
    if (!b.a->n) { /* nothing to match or look up */
        ps_tok_added_free(b.a);
        return PS_OK;
    }
    *out = b.a;
    return PS_OK;
}

