/*
 * Loading a BPE "model" object as tokenizers 0.23.2's BPEVisitor and
 * BpeBuilder::build do: the options, the vocabulary, the merges in either
 * format ("a b" strings, with "#version" lines skipped, or ["a", "b"]
 * pairs), each merge resolved to (rank, id of a + b) where b loses
 * continuing_subword_prefix's length in bytes first (unconditionally, as
 * HF does), and every token of a merge required in the vocabulary.
 */
#include "tokenize/bpe.h"

#include <stdlib.h>
#include <string.h>

void ps_bpe_destroy(ps_tok_model *model)
{
    ps_bpe *m = (ps_bpe *)model;
    if (!m)
        return;
    ps_tok_vocab_free(&m->base.vocab);
    free(m->merges);
    free(m->prefix);
    free(m->suffix);
    free(m->unk);
    if (m->char_id[0] != m->char_id[1])
        for (int k = 1; k < 4; k++)
            free(m->char_id[k]);
    free(m->char_id[0]);
    free(m);
}

/* An optional string option: absent, null or "" leave *out NULL. */
static int opt_string(const ps_tok_load *c, json_t *j, const char *jpath, const char *key,
                      char **out, size_t *len)
{
    const char *s = NULL;
    size_t n = 0;
    int rc = ps_tok_json_string(c, j, jpath, key, &s, &n);
    if (rc || !s || (!n && len))
        return rc;
    if (!(*out = malloc(n + 1)))
        return ps_error_set(c->err, PS_ENOMEM, "out of memory");
    memcpy(*out, s, n + 1);
    if (len)
        *len = n;
    return PS_OK;
}

/* An optional boolean option: null counts as absent (HF's Option<bool>). */
static int opt_bool(const ps_tok_load *c, json_t *j, const char *jpath, const char *key,
                    bool *out)
{
    json_t *v = json_object_get(j, key);
    return v && !json_is_null(v) ? ps_tok_json_bool(c, j, jpath, key, out) : PS_OK;
}

/* dropout: HF reads an f32 and draws a random number per merge unless it
 * is 0.0; at 1.0 every draw skips, which is deterministic (no merges). */
static int read_dropout(const ps_tok_load *c, json_t *j, const char *jpath, ps_bpe *m)
{
    json_t *v = json_object_get(j, "dropout");
    char where[256];
    ps_tok_jpath_key(where, sizeof where, jpath, "dropout");
    if (!v || json_is_null(v))
        return PS_OK;
    if (!json_is_number(v))
        return ps_tok_load_fail(c, PS_EFORMAT, where, "expected a number or null");
    float p = (float)json_number_value(v);
    if (!(p >= 0.0f && p <= 1.0f))
        return ps_tok_load_fail(c, PS_EFORMAT, where, "must be between 0 and 1, inclusive");
    if (p == 1.0f)
        m->no_merges = true;
    else if (p != 0.0f)
        return ps_tok_load_fail(c, PS_EUSAGE, where,
                                "%g is not supported (HF would drop merges at random)",
                                (double)p);
    return PS_OK;
}

static int read_options(const ps_tok_load *c, json_t *j, const char *jpath, ps_bpe *m)
{
    const char *type = ps_tok_json_type(j);
    if (json_object_get(j, "type") && (!type || strcmp(type, "BPE"))) {
        return ps_tok_load_fail_key(c, PS_EFORMAT, jpath, "type", "expected \"BPE\"");
    }
    int rc;
    if ((rc = read_dropout(c, j, jpath, m)) ||
        (rc = opt_string(c, j, jpath, "unk_token", &m->unk, NULL)) ||
        (rc = opt_string(c, j, jpath, "continuing_subword_prefix", &m->prefix, &m->prefix_len)) ||
        (rc = opt_string(c, j, jpath, "end_of_word_suffix", &m->suffix, &m->suffix_len)) ||
        (rc = opt_bool(c, j, jpath, "fuse_unk", &m->fuse_unk)) ||
        (rc = opt_bool(c, j, jpath, "byte_fallback", &m->byte_fallback)) ||
        (rc = opt_bool(c, j, jpath, "ignore_merges", &m->ignore_merges)))
        return rc;
    return PS_OK;
}

/* ---- the merge table ---------------------------------------------------- */

static void merge_set(ps_bpe *m, int32_t a, int32_t b, uint32_t rank, int32_t new_id)
{
    uint64_t k = ps_bpe_key(a, b);
    size_t j = (size_t)ps_tok_fmix(k) & m->merge_mask;
    while (m->merges[j].key != PS_BPE_EMPTY && m->merges[j].key != k)
        j = (j + 1) & m->merge_mask;
    if (m->merges[j].key == PS_BPE_EMPTY)
        m->n_merges++;
    m->merges[j] = (ps_bpe_merge){k, rank, new_id}; /* a later duplicate wins */
}

/* Where a merge is, for messages: "model.merges[12]" (written only when
 * one is needed, it would cost more than the merge itself). */
typedef struct at {
    const char *jpath;
    size_t i;
    char buf[256];
} at;

static const char *where_of(at *w)
{
    return ps_tok_jpath_idx(w->buf, sizeof w->buf, w->jpath, w->i);
}

static int32_t find_or_fail(const ps_tok_load *c, const ps_bpe *m, at *where, const char *s,
                            size_t n, int *rc)
{
    int32_t id = ps_tok_vocab_find(&m->base.vocab, s, n);
    if (id < 0)
        *rc = ps_tok_load_fail(c, PS_EFORMAT, where_of(where),
                               "token '%.*s' is not in the vocabulary", (int)(n > 200 ? 200 : n),
                               s);
    return id;
}

/* Resolves merge a + b (rank `rank`) into the table. buf holds at least
 * the longest token + 1 bytes. */
static int add_merge(const ps_tok_load *c, ps_bpe *m, at *where, const char *a,
                     size_t na, const char *b, size_t nb, uint32_t rank, char *buf,
                     size_t buf_len)
{
    int rc = PS_OK;
    int32_t ia = find_or_fail(c, m, where, a, na, &rc);
    int32_t ib = ia < 0 ? -1 : find_or_fail(c, m, where, b, nb, &rc);
    if (ib < 0)
        return rc;
    /* HF slices prefix_len bytes off b whether or not b starts with it
     * (and panics when b is shorter) */
    if (nb < m->prefix_len)
        return ps_tok_load_fail(c, PS_EFORMAT, where_of(where),
                                "token '%s' is shorter than continuing_subword_prefix", b);
    size_t nn = na + nb - m->prefix_len;
    if (nn > buf_len) /* longer than any token */
        return ps_tok_load_fail(c, PS_EFORMAT, where_of(where), "token '%.*s%.*s' is not in the vocabulary",
                                (int)(na > 100 ? 100 : na), a,
                                (int)(nb - m->prefix_len > 100 ? 100 : nb - m->prefix_len),
                                b + m->prefix_len);
    memcpy(buf, a, na);
    memcpy(buf + na, b + m->prefix_len, nb - m->prefix_len);
    int32_t id = find_or_fail(c, m, where, buf, nn, &rc);
    if (id < 0)
        return rc;
    merge_set(m, ia, ib, rank, id);
    return PS_OK;
}

/* One element of "merges": "a b" (is_str) or ["a", "b"]. */
static int read_merge(const ps_tok_load *c, ps_bpe *m, json_t *e, bool is_str, at *where,
                      uint32_t *rank, char *buf, size_t buf_len)
{
    if (is_str) {
        if (!json_is_string(e))
            return ps_tok_load_fail(c, PS_EFORMAT, where_of(where),
                                    "expected a string like the other merges (\"a b\")");
        const char *s = json_string_value(e);
        size_t n = json_string_length(e);
        if (n >= 8 && !memcmp(s, "#version", 8))
            return PS_OK; /* a merges.txt header line, skipped without a rank */
        const char *sp = memchr(s, ' ', n);
        if (!sp || memchr(sp + 1, ' ', n - (size_t)(sp - s) - 1))
            return ps_tok_load_fail(c, PS_EFORMAT, where_of(where),
                                    "expected two tokens separated by one space");
        return add_merge(c, m, where, s, (size_t)(sp - s), sp + 1, n - (size_t)(sp - s) - 1,
                         (*rank)++, buf, buf_len);
    }
    json_t *a = json_array_get(e, 0), *b = json_array_get(e, 1);
    if (!json_is_array(e) || json_array_size(e) != 2 || !json_is_string(a) || !json_is_string(b))
        return ps_tok_load_fail(c, PS_EFORMAT, where_of(where),
                                "expected a pair of strings like the other merges ([\"a\", \"b\"])");
    return add_merge(c, m, where, json_string_value(a), json_string_length(a),
                     json_string_value(b), json_string_length(b), (*rank)++, buf, buf_len);
}

static int read_merges_in(const ps_tok_load *c, json_t *arr, const char *jpath, ps_bpe *m,
                          size_t longest)
{
    at where = {.jpath = jpath};
    ps_tok_pre *pre = ps_tok_pre_for(arr);
    if (pre && arr != pre->merges_stub)
        pre = NULL;
    if (pre)
        pre->merges_used = true;
    size_t n = pre ? pre->n_merges : json_array_size(arr), cap = 16;
    while (cap < 2 * n)
        cap *= 2;
    if (n > UINT32_MAX / 2 || !(m->merges = malloc(cap * sizeof *m->merges)))
        return ps_error_set(c->err, PS_ENOMEM, "out of memory");
    for (size_t i = 0; i < cap; i++)
        m->merges[i].key = PS_BPE_EMPTY;
    m->merge_mask = cap - 1;
    /* a merged token longer than the longest token is not in the vocabulary */
    if (longest > ((size_t)64 << 20) / PS_BPE_BATCH)
        return ps_error_set(c->err, PS_ELIMIT, "token of %zu bytes", longest);
    char *buf = malloc(PS_BPE_BATCH * (longest + 1));
    if (!buf)
        return ps_error_set(c->err, PS_ENOMEM, "out of memory");
    bool is_str = pre ? pre->merges_is_str : n && json_is_string(json_array_get(arr, 0));
    uint32_t rank = 0;
    int rc = PS_OK;
    for (size_t s = 0; s < n && !rc; s += PS_BPE_BATCH) {
        size_t count = n - s < PS_BPE_BATCH ? n - s : PS_BPE_BATCH;
        if (ps_bpe_merges_batch(m, arr, pre, is_str, s, count, &rank, buf, longest))
            continue;
        if (pre) { /* the plain path redoes the load and names the bad merge */
            pre->failed = true;
            rc = ps_error_set(c->err, PS_EFORMAT, "fast path: model.merges left to the plain path");
            break;
        }
        for (size_t i = s; i < s + count && !rc; i++) { /* finds what is wrong */
            where.i = i;
            rc = read_merge(c, m, json_array_get(arr, i), is_str, &where, &rank, buf, longest);
        }
    }
    free(buf);
    return rc;
}

/* Any failure on pre-parsed merges (fastload.c) sends the load back to
 * the plain path, whose message is the one to report. */
static int read_merges(const ps_tok_load *c, json_t *arr, const char *jpath, ps_bpe *m,
                       size_t longest)
{
    int rc = read_merges_in(c, arr, jpath, m, longest);
    ps_tok_pre *pre = ps_tok_pre_for(arr);
    if (rc && pre)
        pre->failed = true;
    return rc;
}

/* ---- derived tables ------------------------------------------------------ */

static int build_tables(ps_bpe *m)
{
    for (int b = 0; b < 256; b++) {
        char name[8];
        snprintf(name, sizeof name, "<0x%02X>", b);
        m->byte_id[b] = ps_tok_vocab_find(&m->base.vocab, name, 6);
    }
    if (m->unk)
        m->unk_id = ps_tok_vocab_find(&m->base.vocab, m->unk, strlen(m->unk));
    m->base.unk_id = m->unk_id;
    bool plain = !m->prefix && !m->suffix;
    ps_tok_buf s = {0};
    for (unsigned k = 0; k < 4; k++) {
        if (plain && k) {
            m->char_id[k] = m->char_id[0];
            continue;
        }
        if (!(m->char_id[k] = malloc(PS_BPE_TABLE_CPS * sizeof(int32_t))))
            goto nomem;
        for (uint32_t cp = 0; cp < PS_BPE_TABLE_CPS; cp++) {
            s.len = 0;
            if (((k & 1) && m->prefix && ps_tok_buf_put(&s, m->prefix, m->prefix_len)) ||
                ps_tok_buf_put_cp(&s, cp) ||
                ((k & 2) && m->suffix && ps_tok_buf_put(&s, m->suffix, m->suffix_len)))
                goto nomem;
            m->char_id[k][cp] = ps_tok_vocab_find(&m->base.vocab, s.p, s.len);
        }
    }
    ps_tok_buf_free(&s);
    return PS_OK;
nomem:
    ps_tok_buf_free(&s);
    return PS_ENOMEM;
}

static size_t longest_token(const ps_tok_vocab *v)
{
    size_t longest = 0;
    for (size_t j = 0; v->slots && j <= v->mask; j++)
        if (v->slots[j].id >= 0 && v->slots[j].len > longest)
            longest = v->slots[j].len;
    return longest;
}

int ps_tok_bpe_load(const ps_tok_load *c, json_t *j, const char *jpath, ps_tok_model **out)
{
    *out = NULL;
    if (!json_is_object(j))
        return ps_tok_load_fail(c, PS_EFORMAT, jpath, "expected an object");
    ps_bpe *m = calloc(1, sizeof *m);
    if (!m)
        return ps_error_set(c->err, PS_ENOMEM, "out of memory");
    m->base = (ps_tok_model){.kind = PS_TOK_MODEL_BPE, .unk_id = -1, .encode = ps_bpe_encode,
                             .destroy = ps_bpe_destroy};
    ps_tok_vocab_init(&m->base.vocab);
    m->unk_id = -1;
    char where[256];
    json_t *vocab = json_object_get(j, "vocab"), *merges = json_object_get(j, "merges");
    int rc = read_options(c, j, jpath, m);
    if (!rc && (!vocab || !merges))
        rc = ps_tok_load_fail(c, PS_EFORMAT, jpath, "missing \"vocab\" or \"merges\"");
    if (!rc)
        rc = ps_tok_model_vocab(c, vocab, ps_tok_jpath_key(where, sizeof where, jpath, "vocab"),
                                &m->base.vocab);
    if (!rc && !json_is_array(merges))
        rc = ps_tok_load_fail_key(c, PS_EFORMAT, jpath, "merges", "expected an array");
    if (!rc)
        rc = read_merges(c, merges, ps_tok_jpath_key(where, sizeof where, jpath, "merges"), m,
                         longest_token(&m->base.vocab));
    if (!rc && build_tables(m))
        rc = ps_error_set(c->err, PS_ENOMEM, "out of memory");
    if (rc) {
        ps_bpe_destroy(&m->base);
        return rc;
    }
    *out = &m->base;
    return PS_OK;
}
