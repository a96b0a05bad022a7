/*
 * The index of held-out records and the find of one training record in it
 * (validate/leakage.h). Exact kinds: one sorted array of (XXH3-64 of the
 * key, record) per kind, binary searched. near_question: the distinct
 * folded questions of each held-out set, each under its LSH band keys in
 * one sorted array; a training question's candidates are verified with the
 * exact Jaccard of their shingle sets, recomputed from the stored text.
 */
#include "validate/leakage.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#define KEY_SEED 0x50534b4559ull
#define NO_TEXT UINT64_MAX

typedef struct hrec {
    uint64_t id, question, sql, db; /* offsets into the arena, NO_TEXT: none */
    uint32_t holdout;
} hrec;

typedef struct entry {
    uint64_t key;
    uint32_t rec; /* an hrec (exact kinds) or a near item (bands) */
} entry;

typedef struct table {
    entry *e;
    size_t n, cap;
} table;

enum { EXACT_DB, EXACT_Q, EXACT_SQL, EXACT_TPL, EXACT_N };
static const ps_leak_kind EXACT_KIND[EXACT_N] = {PS_LEAK_DATABASE, PS_LEAK_QUESTION, PS_LEAK_SQL,
                                                 PS_LEAK_SQL_TEMPLATE};

struct ps_leak_index {
    ps_leak_options o;
    unsigned bands, rows;
    char *names[PS_LEAK_MAX_HOLDOUTS];
    uint64_t counts[PS_LEAK_MAX_HOLDOUTS];
    unsigned n_holdouts;
    ps_buf arena;
    hrec *recs;
    size_t n_recs, cap_recs;
    table exact[EXACT_N];
    uint32_t *items; /* near items: the first record of each distinct folded question */
    size_t n_items;
    /* each item's sorted shingle set, kept so that a candidate's Jaccard is
     * one merge (no folding, hashing or sorting again): 8 bytes a shingle */
    uint64_t *sets;
    size_t n_sets, cap_sets;
    size_t *set_off;   /* n_items + 1 */
    table band;
    bool finished;
    ps_leak_scratch *build; /* the scratch finish uses */
};

struct ps_leak_scratch {
    ps_buf key, near;
    uint64_t *set;
    size_t n_set, cap_set;
    uint32_t *cand;
    size_t n_cand, cap_cand;
    uint64_t bandkeys[128];
};

static const char *const KIND_NAMES[PS_LEAK_KINDS] = {"database", "question", "near_question",
                                                      "sql", "sql_template"};

const char *ps_leak_kind_name(ps_leak_kind k)
{
    return (unsigned)k < PS_LEAK_KINDS ? KIND_NAMES[k] : "?";
}

int ps_leak_kinds_parse(const char *list, unsigned *mask, ps_error *err)
{
    *mask = 0;
    const char *p = list;
    while (*p) {
        size_t n = strcspn(p, ",");
        unsigned k = 0;
        while (k < PS_LEAK_KINDS && !(strlen(KIND_NAMES[k]) == n && !strncmp(p, KIND_NAMES[k], n)))
            k++;
        if (k == PS_LEAK_KINDS)
            return ps_error_set(err, PS_EUSAGE, "unknown leakage kind '%.*s' (kinds: database, "
                                "question, near_question, sql, sql_template)", (int)n, p);
        *mask |= 1u << k;
        p += n + (p[n] == ',');
    }
    return *mask ? 0 : ps_error_set(err, PS_EUSAGE, "no leakage kind given");
}

void ps_leak_options_init(ps_leak_options *o)
{
    o->near_threshold = 0.8;
    o->ngram = 3;
}

int ps_leak_scratch_create(ps_leak_scratch **out)
{
    *out = calloc(1, sizeof **out);
    return *out ? 0 : PS_ENOMEM;
}

void ps_leak_scratch_free(ps_leak_scratch *s)
{
    if (!s)
        return;
    ps_buf_free(&s->key);
    ps_buf_free(&s->near);
    free(s->set);
    free(s->cand);
    free(s);
}

int ps_leak_index_create(const ps_leak_options *o, ps_leak_index **out, ps_error *err)
{
    *out = NULL;
    if (!(o->near_threshold > 0.0 && o->near_threshold <= 1.0) || o->ngram < 1 || o->ngram > 16)
        return ps_error_set(err, PS_EUSAGE, "near-duplicate threshold %g must be in (0, 1] and "
                            "n-gram size %u in 1..16", o->near_threshold, o->ngram);
    ps_leak_index *x = calloc(1, sizeof *x);
    if (!x || ps_leak_scratch_create(&x->build)) {
        free(x);
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    }
    x->o = *o;
    ps_leak_lsh_shape(o->near_threshold, &x->bands, &x->rows);
    *out = x;
    return 0;
}

void ps_leak_index_free(ps_leak_index *x)
{
    if (!x)
        return;
    for (unsigned i = 0; i < x->n_holdouts; i++)
        free(x->names[i]);
    ps_buf_free(&x->arena);
    free(x->recs);
    for (int k = 0; k < EXACT_N; k++)
        free(x->exact[k].e);
    free(x->items);
    free(x->sets);
    free(x->set_off);
    free(x->band.e);
    ps_leak_scratch_free(x->build);
    free(x);
}

int ps_leak_index_add_holdout(ps_leak_index *x, const char *name, unsigned *holdout,
                              ps_error *err)
{
    if (x->n_holdouts == PS_LEAK_MAX_HOLDOUTS)
        return ps_error_set(err, PS_ELIMIT, "more than %d held-out sets", PS_LEAK_MAX_HOLDOUTS);
    if (!(x->names[x->n_holdouts] = strdup(name)))
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    *holdout = x->n_holdouts++;
    return 0;
}

static int put_text(ps_buf *arena, const char *s, uint64_t *off)
{
    *off = NO_TEXT;
    if (!s)
        return 0;
    *off = arena->len;
    return ps_buf_append(arena, s, strlen(s) + 1);
}

static const char *text_at(const ps_leak_index *x, uint64_t off)
{
    return off == NO_TEXT ? NULL : x->arena.data + off;
}

static int table_push(table *t, uint64_t key, uint32_t rec)
{
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 1024;
        entry *e = realloc(t->e, cap * sizeof *e);
        if (!e)
            return PS_ENOMEM;
        t->e = e;
        t->cap = cap;
    }
    t->e[t->n++] = (entry){key, rec};
    return 0;
}

int ps_leak_index_add(ps_leak_index *x, unsigned holdout, const ps_leak_text *r, ps_error *err)
{
    if (x->finished || holdout >= x->n_holdouts)
        return ps_error_set(err, PS_EINVAL, "held-out record added after the index was finished "
                            "or to an undeclared set");
    if (x->n_recs >= UINT32_MAX)
        return ps_error_set(err, PS_ELIMIT, "more than %u held-out records", UINT32_MAX - 1);
    if (x->n_recs == x->cap_recs) {
        size_t cap = x->cap_recs ? x->cap_recs * 2 : 1024;
        hrec *p = realloc(x->recs, cap * sizeof *p);
        if (!p)
            return ps_error_set(err, PS_ENOMEM, "out of memory");
        x->recs = p;
        x->cap_recs = cap;
    }
    hrec *h = &x->recs[x->n_recs];
    h->holdout = holdout;
    if (put_text(&x->arena, r->id, &h->id) || put_text(&x->arena, r->question, &h->question) ||
        put_text(&x->arena, r->sql, &h->sql) || put_text(&x->arena, r->db_id, &h->db))
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    x->n_recs++;
    x->counts[holdout]++;
    return 0;
}

static int cmp_entry(const void *a, const void *b)
{
    const entry *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return (x->rec > y->rec) - (x->rec < y->rec);
}

/* The keys of one record's exact kinds (0 where it has no such text). */
static int exact_keys(ps_leak_scratch *s, const ps_leak_text *r, uint64_t keys[EXACT_N],
                      bool has[EXACT_N])
{
    const char *src[EXACT_N] = {r->db_id, r->question, r->sql, r->sql};
    for (int k = 0; k < EXACT_N; k++) {
        has[k] = false;
        if (!src[k])
            continue;
        size_t n = strlen(src[k]);
        int rc = k == EXACT_DB  ? (ps_buf_reset(&s->key), ps_buf_append(&s->key, src[k], n))
                 : k == EXACT_Q ? ps_leak_question_key(src[k], n, &s->key)
                 : k == EXACT_SQL ? ps_leak_sql_key(src[k], n, &s->key)
                                  : ps_leak_sql_template(src[k], n, &s->key);
        if (rc)
            return rc;
        if (s->key.len == 0)
            continue;
        has[k] = true;
        keys[k] = XXH3_64bits_withSeed(s->key.data, s->key.len, KEY_SEED + (uint64_t)k);
    }
    return 0;
}

/* The folded question's shingles into s->set; false when it has none. */
static int question_set(const ps_leak_index *x, ps_leak_scratch *s, const char *q, bool *any)
{
    *any = false;
    if (!q)
        return 0;
    int rc = ps_leak_near_text(q, strlen(q), &s->near);
    if (!rc && s->near.len)
        rc = ps_leak_shingles(s->near.data, s->near.len, x->o.ngram, &s->set, &s->n_set,
                              &s->cap_set);
    *any = !rc && s->n_set > 0 && s->near.len > 0;
    return rc;
}

/* Removes repeats of a key within one held-out set: the first record stays. */
static void unique_per_holdout(const ps_leak_index *x, table *t)
{
    size_t u = 0;
    for (size_t i = 0; i < t->n; i++) {
        bool dup = u > 0 && t->e[u - 1].key == t->e[i].key &&
                   x->recs[t->e[u - 1].rec].holdout == x->recs[t->e[i].rec].holdout;
        if (!dup)
            t->e[u++] = t->e[i];
    }
    t->n = u;
}

/* Item i's shingle set into x->sets. */
static int keep_set(ps_leak_index *x, size_t i, const uint64_t *set, size_t n)
{
    if (x->n_sets + n > x->cap_sets) {
        size_t cap = x->cap_sets ? x->cap_sets * 2 : 4096;
        while (cap < x->n_sets + n)
            cap *= 2;
        uint64_t *p = realloc(x->sets, cap * sizeof *p);
        if (!p)
            return PS_ENOMEM;
        x->sets = p;
        x->cap_sets = cap;
    }
    x->set_off[i] = x->n_sets;
    memcpy(x->sets + x->n_sets, set, n * sizeof *set);
    x->n_sets += n;
    x->set_off[i + 1] = x->n_sets;
    return 0;
}

static int build_near(ps_leak_index *x)
{
    ps_leak_scratch *s = x->build;
    table distinct = {0};
    int rc = 0;
    for (size_t i = 0; !rc && i < x->n_recs; i++) {
        bool any;
        rc = question_set(x, s, text_at(x, x->recs[i].question), &any);
        if (!rc && any)
            rc = table_push(&distinct, XXH3_64bits_withSeed(s->near.data, s->near.len,
                                                            KEY_SEED + 99), (uint32_t)i);
    }
    if (!rc && distinct.n)
        qsort(distinct.e, distinct.n, sizeof *distinct.e, cmp_entry);
    unique_per_holdout(x, &distinct);
    if (!rc && distinct.n) {
        /* items in record order, so that a find meets the first record first */
        for (size_t i = 0; i < distinct.n; i++)
            distinct.e[i].key = distinct.e[i].rec;
        qsort(distinct.e, distinct.n, sizeof *distinct.e, cmp_entry);
        x->items = malloc(distinct.n * sizeof *x->items);
        x->set_off = malloc((distinct.n + 1) * sizeof *x->set_off);
        rc = x->items && x->set_off ? 0 : PS_ENOMEM;
    }
    for (size_t i = 0; !rc && i < distinct.n; i++) {
        x->items[x->n_items++] = distinct.e[i].rec;
        bool any;
        rc = question_set(x, s, text_at(x, x->recs[distinct.e[i].rec].question), &any);
        rc = rc ? rc : keep_set(x, i, s->set, s->n_set);
        ps_leak_band_keys(s->set, s->n_set, x->bands, x->rows, s->bandkeys);
        for (unsigned b = 0; !rc && b < x->bands; b++)
            rc = table_push(&x->band, s->bandkeys[b], (uint32_t)i);
    }
    free(distinct.e);
    if (!rc && x->band.n)
        qsort(x->band.e, x->band.n, sizeof *x->band.e, cmp_entry);
    return rc;
}

int ps_leak_index_finish(ps_leak_index *x, ps_error *err)
{
    if (x->finished)
        return 0;
    int rc = 0;
    for (size_t i = 0; !rc && i < x->n_recs; i++) {
        const hrec *h = &x->recs[i];
        ps_leak_text r = {NULL, text_at(x, h->question), text_at(x, h->sql), text_at(x, h->db)};
        uint64_t keys[EXACT_N];
        bool has[EXACT_N];
        rc = exact_keys(x->build, &r, keys, has);
        for (int k = 0; !rc && k < EXACT_N; k++)
            if (has[k])
                rc = table_push(&x->exact[k], keys[k], (uint32_t)i);
    }
    for (int k = 0; !rc && k < EXACT_N; k++) {
        if (x->exact[k].n)
            qsort(x->exact[k].e, x->exact[k].n, sizeof *x->exact[k].e, cmp_entry);
        unique_per_holdout(x, &x->exact[k]);
    }
    if (!rc)
        rc = build_near(x);
    if (rc)
        return ps_error_set(err, rc, "out of memory indexing %zu held-out records", x->n_recs);
    x->finished = true;
    return 0;
}

size_t ps_leak_index_holdouts(const ps_leak_index *x) { return x->n_holdouts; }

const ps_leak_options *ps_leak_index_options(const ps_leak_index *x) { return &x->o; }

const char *ps_leak_index_holdout_name(const ps_leak_index *x, unsigned holdout)
{
    return holdout < x->n_holdouts ? x->names[holdout] : NULL;
}

uint64_t ps_leak_index_holdout_records(const ps_leak_index *x, unsigned holdout)
{
    return holdout < x->n_holdouts ? x->counts[holdout] : 0;
}

void ps_leak_index_record(const ps_leak_index *x, int64_t rec, ps_leak_text *out)
{
    memset(out, 0, sizeof *out);
    if (rec < 0 || (size_t)rec >= x->n_recs)
        return;
    const hrec *h = &x->recs[rec];
    *out = (ps_leak_text){text_at(x, h->id), text_at(x, h->question), text_at(x, h->sql),
                          text_at(x, h->db)};
}

/* The first entry of t with `key`, or t->n. */
static size_t lower_bound(const table *t, uint64_t key)
{
    size_t lo = 0, hi = t->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->e[mid].key < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int push_cand(ps_leak_scratch *s, uint32_t item)
{
    if (s->n_cand == s->cap_cand) {
        size_t cap = s->cap_cand ? s->cap_cand * 2 : 256;
        uint32_t *p = realloc(s->cand, cap * sizeof *p);
        if (!p)
            return PS_ENOMEM;
        s->cand = p;
        s->cap_cand = cap;
    }
    s->cand[s->n_cand++] = item;
    return 0;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* near_question: LSH candidates, verified in item (record) order. */
static int find_near(const ps_leak_index *x, ps_leak_scratch *s, const char *q, ps_leak_hits *h)
{
    bool any;
    int rc = question_set(x, s, q, &any);
    if (rc || !any || !x->band.n)
        return rc;
    ps_leak_band_keys(s->set, s->n_set, x->bands, x->rows, s->bandkeys);
    s->n_cand = 0;
    for (unsigned b = 0; !rc && b < x->bands; b++)
        for (size_t i = lower_bound(&x->band, s->bandkeys[b]);
             !rc && i < x->band.n && x->band.e[i].key == s->bandkeys[b]; i++)
            rc = push_cand(s, x->band.e[i].rec);
    if (rc || !s->n_cand)
        return rc;
    qsort(s->cand, s->n_cand, sizeof *s->cand, cmp_u32);
    /* the training set is in s->set; each candidate's is kept in the index */
    for (size_t i = 0; !rc && i < s->n_cand; i++) {
        if (i && s->cand[i] == s->cand[i - 1])
            continue;
        uint32_t rec = x->items[s->cand[i]];
        unsigned ho = x->recs[rec].holdout;
        if (h->rec[PS_LEAK_NEAR_QUESTION][ho] >= 0)
            continue;
        const uint64_t *other = x->sets + x->set_off[s->cand[i]];
        size_t n_other = x->set_off[s->cand[i] + 1] - x->set_off[s->cand[i]];
        double j = ps_leak_jaccard(s->set, s->n_set, other, n_other);
        if (j >= x->o.near_threshold) {
            h->rec[PS_LEAK_NEAR_QUESTION][ho] = rec;
            h->jaccard[ho] = j;
            h->kinds |= 1u << PS_LEAK_NEAR_QUESTION;
        }
    }
    return rc;
}

int ps_leak_find(const ps_leak_index *x, ps_leak_scratch *s, const ps_leak_text *r,
                 ps_leak_hits *h, ps_error *err)
{
    h->kinds = 0;
    for (int k = 0; k < PS_LEAK_KINDS; k++)
        for (unsigned i = 0; i < x->n_holdouts; i++)
            h->rec[k][i] = -1;
    uint64_t keys[EXACT_N];
    bool has[EXACT_N];
    int rc = exact_keys(s, r, keys, has);
    for (int k = 0; !rc && k < EXACT_N; k++) {
        if (!has[k])
            continue;
        const table *t = &x->exact[k];
        ps_leak_kind kind = EXACT_KIND[k];
        for (size_t i = lower_bound(t, keys[k]); i < t->n && t->e[i].key == keys[k]; i++) {
            unsigned ho = x->recs[t->e[i].rec].holdout;
            if (h->rec[kind][ho] < 0)
                h->rec[kind][ho] = t->e[i].rec;
            h->kinds |= 1u << kind;
        }
    }
    if (!rc)
        rc = find_near(x, s, r->question, h);
    return rc ? ps_error_set(err, rc, "out of memory comparing record '%s' with the held-out "
                             "sets", r->id ? r->id : "?")
              : 0;
}
