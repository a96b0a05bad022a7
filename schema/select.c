/* Schema selection: which tables and columns of a database a too-long
 * prompt keeps, ranked by what the record's inputs say — the question,
 * evidence and dialogue history, never the SQL — so that serving, which
 * has no SQL, selects exactly what the build did (docs/BUILD.md, "Schema
 * selection").
 *
 * Matching is lexical. The inputs' words are case-folded and made
 * singular ("singers" → "singer", "cities" → "city"); adjacent pairs are
 * also joined ("home town" matches Hometown). A name is split at
 * underscores, spaces, and camelCase humps (SongName → song name), and
 * scored from its original form and from Spider's natural-language name
 * ("column_names": "stuid" → "student id"), the better of the two: the
 * share of its words the inputs hold (a word that only shares a prefix of
 * 4+ characters counts 0.6), plus 1 when the whole name occurs in the
 * inputs as a phrase or one word. A column scores 0.5 more when one of
 * its example values (--databases) is a word of the inputs. A table
 * scores its name plus half its best column; a column that scores
 * anything gets half its table's name score on top ("the stadium name":
 * stadium.Name before singer.Name).
 *
 * The rank (units, keep order): tables and non-key columns that match,
 * best first (ties: tables first, then schema order); then the tables
 * that match nothing, in schema order; then the remaining columns, by
 * their table's rank, then schema order. Key columns (primary keys and
 * both ends of foreign keys; a table without any, its first column) go
 * with their table. Keeping the first k
 * units also keeps every table on a shortest foreign-key path between
 * two kept tables, so a question that names singers and concerts keeps
 * the table that joins them. Since every non-matching column ranks below
 * every table, a budget prunes columns before it cuts a table. */
#include "schema/schema.h"

#include <stdlib.h>
#include <string.h>

/* Scores are integers, thousandths of the figures above, so that a rank
 * is the same on every machine and compiler (no floating point to round
 * or contract differently). */
#define ONE 1000          /* a whole word, as a share of a name's words */
#define PREFIX_MIN 4      /* a shared prefix this long is a partial match */
#define PARTIAL 600       /* ... worth this much of a whole word */
#define PHRASE_BONUS 1000 /* the whole (multi-word or compound) name occurs */
#define VALUE_BONUS 500   /* an example value is a word of the inputs */
#define MAX_NAME_WORDS 16 /* words of a name looked at */
#define MAX_QUERY_WORDS 512 /* words of the inputs looked at */

static const char *const STOP[] = {
    "a",     "all",  "an",    "and",  "any",   "are",   "as",    "at",   "be",    "by",
    "can",   "did",  "do",    "doe",  "each",  "for",   "from",  "give", "ha",    "have",
    "how",   "i",    "in",    "is",   "it",    "list",  "many",  "me",   "much",  "of",
    "on",    "or",   "show",  "than", "that",  "the",   "their", "them", "there", "these",
    "they",  "thi",  "those", "to",   "wa",    "were",  "what",  "when", "where", "which",
    "while", "who",  "whose", "with", "would", "find",  "tell",  "return"};

static bool is_stop(const char *w, size_t n)
{
    if (n > 6)
        return false;
    for (size_t i = 0; i < sizeof STOP / sizeof *STOP; i++)
        if (STOP[i][0] == w[0] && strlen(STOP[i]) == n && !memcmp(STOP[i], w, n))
            return true;
    return false;
}

static bool alnum(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c >= 0x80;
}

static bool upper(unsigned char c) { return c >= 'A' && c <= 'Z'; }
static bool lower(unsigned char c) { return c >= 'a' && c <= 'z'; }

/* The singular of a folded word, in place: its new length. */
static size_t singular(char *w, size_t n)
{
    if (n > 4 && !memcmp(w + n - 3, "ies", 3)) {
        w[n - 3] = 'y';
        return n - 2;
    }
    if (n > 4 && (!memcmp(w + n - 4, "sses", 4) || !memcmp(w + n - 4, "ches", 4) ||
                  !memcmp(w + n - 4, "shes", 4) || !memcmp(w + n - 3, "xes", 3)))
        return n - 2;
    if (n > 3 && w[n - 1] == 's' && w[n - 2] != 's' && w[n - 2] != 'u' && w[n - 2] != 'i')
        return n - 1;
    return n;
}

/* Appends to l the word of the n bytes a then b (b NULL: none), folded
 * and made singular; its stop flag. */
static int add_word(ps_select_words *l, const char *a, size_t an, const char *b, size_t bn)
{
    if (ps_array_grow(&l->w, &l->cap, l->n, sizeof *l->w, 32) ||
        ps_buf_reserve(&l->text, an + bn + 1))
        return PS_ENOMEM;
    char *w = l->text.data + l->text.len;
    memcpy(w, a, an);
    if (b)
        memcpy(w + an, b, bn);
    size_t n = an + bn;
    for (size_t i = 0; i < n; i++)
        w[i] = upper((unsigned char)w[i]) ? (char)(w[i] + 32) : w[i];
    n = singular(w, n);
    w[n] = '\0';
    /* a stop word's length has the top bit: kept for phrases, never a match */
    l->w[l->n].off = (uint32_t)l->text.len;
    l->w[l->n++].len = (uint32_t)n | (is_stop(w, n) ? 0x80000000u : 0);
    l->text.len += n + 1;
    return 0;
}

static void words_reset(ps_select_words *l)
{
    ps_buf_reset(&l->text);
    l->n = 0;
}

#define WLEN(l, i) ((l)->w[i].len & 0x7fffffffu)
#define WSTOP(l, i) (((l)->w[i].len & 0x80000000u) != 0)
#define WORD(l, i) ((l)->text.data + (l)->w[i].off)

/* Splits `s` into words (camelCase humps too) into l (reset). */
static int split(ps_select_words *l, const char *s, bool camel)
{
    words_reset(l);
    for (size_t i = 0; s[i];) {
        if (!alnum((unsigned char)s[i])) {
            i++;
            continue;
        }
        size_t j = i + 1;
        for (; s[j] && alnum((unsigned char)s[j]); j++) {
            unsigned char p = (unsigned char)s[j - 1], c = (unsigned char)s[j];
            if (camel && upper(c) && (lower(p) || (upper(p) && lower((unsigned char)s[j + 1]))))
                break; /* songName, HTMLParser */
        }
        if (l->n < MAX_NAME_WORDS && add_word(l, s + i, j - i, NULL, 0))
            return PS_ENOMEM;
        i = j;
    }
    return 0;
}

/* The inputs' words (x->words) and the joined adjacent pairs (x->pairs,
 * "home town" → "hometown"), in order; at most MAX_QUERY_WORDS. */
static int query_words(ps_select_scratch *x, const ps_select_text *t, size_t nt)
{
    words_reset(&x->words);
    words_reset(&x->pairs);
    for (size_t k = 0; k < nt; k++) {
        const char *s = t[k].text, *prev = NULL;
        size_t prev_len = 0;
        for (size_t i = 0; s && i < t[k].len && x->words.n < MAX_QUERY_WORDS;) {
            if (!alnum((unsigned char)s[i])) {
                i++;
                continue;
            }
            size_t j = i;
            while (j < t[k].len && alnum((unsigned char)s[j]))
                j++;
            if (add_word(&x->words, s + i, j - i, NULL, 0) ||
                (prev && add_word(&x->pairs, prev, prev_len, s + i, j - i)))
                return PS_ENOMEM;
            prev = s + i;
            prev_len = j - i;
            i = j;
        }
    }
    return 0;
}

/* Whether w (n bytes) is a word of l that is no stop word; *partial when
 * one of them and w share their first PREFIX_MIN+ bytes, one a prefix of
 * the other. */
static bool in_list(const ps_select_words *l, const char *w, size_t n, bool *partial)
{
    for (size_t i = 0; i < l->n; i++) {
        if (WSTOP(l, i))
            continue;
        size_t el = WLEN(l, i);
        const char *e = WORD(l, i);
        if (e[0] != w[0])
            continue;
        if (el == n && !memcmp(e, w, n))
            return true;
        size_t m = el < n ? el : n;
        if (partial && m >= PREFIX_MIN && !memcmp(e, w, m))
            *partial = true;
    }
    return false;
}

/* Whether the name's words occur in the inputs one after the other. */
static bool phrase(const ps_select_words *q, const ps_select_words *nw)
{
    for (size_t i = 0; i + nw->n <= q->n; i++) {
        size_t k = 0;
        while (k < nw->n && WLEN(q, i + k) == WLEN(nw, k) &&
               !memcmp(WORD(q, i + k), WORD(nw, k), WLEN(nw, k)))
            k++;
        if (k == nw->n)
            return true;
    }
    return false;
}

/* How well the inputs name `name` (see the top); 0: not at all. */
static int32_t name_score(ps_select_scratch *x, const char *name, bool camel)
{
    ps_select_words *nw = &x->name;
    if (!name || split(nw, name, camel) || !nw->n)
        return 0;
    int32_t got = 0;
    for (size_t i = 0; i < nw->n; i++) {
        bool part = false;
        if (WSTOP(nw, i))
            continue;
        if (in_list(&x->words, WORD(nw, i), WLEN(nw, i), &part))
            got += ONE;
        else if (part)
            got += PARTIAL;
    }
    int32_t s = got / (int32_t)nw->n;
    if (nw->n > 1 && phrase(&x->words, nw))
        return s + PHRASE_BONUS;
    if (nw->n == 1 && WLEN(nw, 0) < 2 * PREFIX_MIN)
        return s;
    /* a compound: "hometown" for "home town", "songname" for song_name */
    ps_buf_reset(&x->joined);
    for (size_t i = 0; i < nw->n; i++)
        if (ps_buf_append(&x->joined, WORD(nw, i), WLEN(nw, i)))
            return s;
    if (in_list(&x->pairs, x->joined.data, x->joined.len, NULL) ||
        (nw->n > 1 && in_list(&x->words, x->joined.data, x->joined.len, NULL)))
        s += PHRASE_BONUS;
    return s;
}

/* Whether `natural` says no more than `name` does: the same letters and
 * digits, case and separators aside ("song name" for Song_Name), so that
 * scoring it again would find the same. */
static bool same_name(const char *name, const char *natural)
{
    const char *a = name, *b = natural;
    for (;;) {
        while (*a && !alnum((unsigned char)*a))
            a++;
        while (*b && !alnum((unsigned char)*b))
            b++;
        if (!*a || !*b)
            return !*a && !*b;
        char ca = upper((unsigned char)*a) ? (char)(*a + 32) : *a;
        char cb = upper((unsigned char)*b) ? (char)(*b + 32) : *b;
        if (ca != cb)
            return false;
        a++, b++;
    }
}

/* The better of a name's score and its natural name's. */
static int32_t best_score(ps_select_scratch *x, const char *name, const char *natural)
{
    int32_t a = name_score(x, name, true);
    if (!natural || same_name(name, natural))
        return a;
    int32_t b = name_score(x, natural, false);
    return a > b ? a : b;
}

/* Whether one of the column's example values is a word (4+ bytes, not a
 * stop word) of the inputs: "'France', 'US'" and "... in France". */
static bool value_match(ps_select_scratch *x, const char *examples)
{
    if (!examples || split(&x->name, examples, false))
        return false;
    for (size_t i = 0; i < x->name.n; i++)
        if (WLEN(&x->name, i) >= PREFIX_MIN &&
            in_list(&x->words, WORD(&x->name, i), WLEN(&x->name, i), NULL))
            return true;
    return false;
}

static int grow(ps_select_scratch *x, const ps_schema *s)
{
    size_t nt = s->n_tables + 1, nc = s->n_columns + 1;
    if (nt > x->cap_t) {
        if (ps_array_resize(&x->tscore, nt, sizeof *x->tscore) ||
            ps_array_resize(&x->tname, nt, sizeof *x->tname) ||
            ps_array_resize(&x->queue, nt, sizeof *x->queue) ||
            ps_array_resize(&x->parent, nt, sizeof *x->parent))
            return PS_ENOMEM;
        x->cap_t = nt;
    }
    if (nc > x->cap_c) {
        if (ps_array_resize(&x->cscore, nc, sizeof *x->cscore) ||
            ps_array_resize(&x->key, nc, sizeof *x->key))
            return PS_ENOMEM;
        x->cap_c = nc;
    }
    return 0;
}

/* Scores every table and column of s against the inputs. */
static void score_all(ps_select_scratch *x, const ps_schema *s)
{
    memset(x->key, 0, s->n_columns);
    for (size_t f = 0; f < s->n_fks; f++)
        x->key[s->fks[f].column] = x->key[s->fks[f].ref_column] = 1;
    for (size_t c = 0; c < s->n_columns; c++)
        x->key[c] |= s->columns[c].primary;
    /* a table without a key keeps its first column: CREATE TABLE t ()
     * is not SQL, and a table named without columns tells nothing */
    for (size_t t = 0; t < s->n_tables; t++)
        x->tscore[t] = -1; /* for now: no key column seen */
    for (size_t c = 0; c < s->n_columns; c++)
        if (x->key[c])
            x->tscore[s->columns[c].table] = 0;
    for (size_t c = 0; c < s->n_columns; c++)
        if (x->tscore[s->columns[c].table] < 0) {
            x->key[c] = 1;
            x->tscore[s->columns[c].table] = 0;
        }
    for (size_t t = 0; t < s->n_tables; t++)
        x->tscore[t] = 0; /* from here: the table's best column */
    for (size_t c = 0; c < s->n_columns; c++) {
        const ps_schema_column *col = &s->columns[c];
        x->cscore[c] = best_score(x, col->name, col->natural) +
                       (value_match(x, col->examples) ? VALUE_BONUS : 0);
        if (x->cscore[c] > x->tscore[col->table])
            x->tscore[col->table] = x->cscore[c]; /* the best column, for now */
    }
    for (size_t t = 0; t < s->n_tables; t++) {
        x->tname[t] = best_score(x, s->tables[t], s->tables_natural ? s->tables_natural[t] : NULL);
        x->tscore[t] = x->tname[t] + x->tscore[t] / 2;
    }
    /* "the stadium name": Name of the table the inputs name ranks above
     * the other tables' Name */
    for (size_t c = 0; c < s->n_columns; c++)
        if (x->cscore[c] > 0)
            x->cscore[c] += x->tname[s->columns[c].table] / 2;
}

static int32_t unit_score(const ps_select_scratch *x, ps_shorten_unit u)
{
    return u.is_column ? x->cscore[u.index] : x->tscore[u.index];
}

/* Best first, stably: units come in tables-then-columns schema order, so
 * ties keep it. An insertion sort: a few dozen units match a question. */
static void sort_units(const ps_select_scratch *x, ps_shorten_unit *u, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        ps_shorten_unit v = u[i];
        int32_t sv = unit_score(x, v);
        size_t j = i;
        for (; j > 0 && unit_score(x, u[j - 1]) < sv; j--)
            u[j] = u[j - 1];
        u[j] = v;
    }
}

int ps_schema_rank(ps_select_scratch *x, const ps_schema *s, const ps_select_text *texts,
                   size_t n_texts, ps_shorten_unit *units, size_t *n)
{
    *n = 0;
    if (grow(x, s) || query_words(x, texts, n_texts))
        return PS_ENOMEM;
    score_all(x, s);
    size_t k = 0;
    for (size_t t = 0; t < s->n_tables; t++)
        if (x->tscore[t] > 0)
            units[k++] = (ps_shorten_unit){(uint32_t)t, false};
    for (size_t c = 0; c < s->n_columns; c++)
        if (!x->key[c] && x->cscore[c] > 0)
            units[k++] = (ps_shorten_unit){(uint32_t)c, true};
    sort_units(x, units, k);
    for (size_t t = 0; t < s->n_tables; t++)
        if (x->tscore[t] <= 0)
            units[k++] = (ps_shorten_unit){(uint32_t)t, false};
    /* each table's rank: where it (or its first column) comes */
    for (size_t t = 0; t < s->n_tables; t++)
        x->parent[t] = UINT32_MAX;
    for (size_t i = 0; i < k; i++) {
        uint32_t t = units[i].is_column ? s->columns[units[i].index].table : units[i].index;
        if (x->parent[t] == UINT32_MAX)
            x->parent[t] = (uint32_t)i;
    }
    size_t rest = k;
    for (size_t i = 0; i < k; i++) { /* tables in rank order: their other columns */
        uint32_t t = units[i].is_column ? s->columns[units[i].index].table : units[i].index;
        if (x->parent[t] != i)
            continue;
        for (size_t c = 0; c < s->n_columns; c++)
            if (s->columns[c].table == t && !x->key[c] && x->cscore[c] <= 0)
                units[rest++] = (ps_shorten_unit){(uint32_t)c, true};
    }
    *n = rest;
    return 0;
}

/* Marks in keep_table the tables on a shortest foreign-key path (the
 * first found, exploring tables in index order) between two kept ones. */
static void keep_paths(ps_select_scratch *x, const ps_schema *s, unsigned char *keep_table)
{
    size_t nt = s->n_tables;
    for (size_t from = 0; from < nt; from++) {
        if (keep_table[from] != 1) /* 1: chosen; 2: added as a path */
            continue;
        for (size_t t = 0; t < nt; t++)
            x->parent[t] = UINT32_MAX;
        x->parent[from] = (uint32_t)from;
        size_t head = 0, tail = 0;
        x->queue[tail++] = (uint32_t)from;
        while (head < tail) {
            uint32_t t = x->queue[head++];
            for (size_t f = 0; f < s->n_fks; f++) {
                uint32_t a = s->columns[s->fks[f].column].table;
                uint32_t b = s->columns[s->fks[f].ref_column].table;
                uint32_t o = a == t ? b : b == t ? a : UINT32_MAX;
                if (o != UINT32_MAX && x->parent[o] == UINT32_MAX) {
                    x->parent[o] = t;
                    x->queue[tail++] = o;
                }
            }
        }
        for (size_t to = from + 1; to < nt; to++)
            if (keep_table[to] == 1 && x->parent[to] != UINT32_MAX)
                for (uint32_t t = x->parent[to]; t != from; t = x->parent[t])
                    keep_table[t] = keep_table[t] ? keep_table[t] : 2;
    }
}

void ps_schema_mask_keep(ps_select_scratch *x, const ps_schema *s, const ps_shorten_unit *units,
                         size_t k, unsigned char *keep_table, unsigned char *keep_column)
{
    memset(keep_table, 0, s->n_tables);
    memset(keep_column, 0, s->n_columns);
    for (size_t i = 0; i < k; i++) {
        uint32_t t = units[i].index;
        if (units[i].is_column) {
            keep_column[t] = 1;
            t = s->columns[t].table;
        }
        keep_table[t] = 1;
    }
    keep_paths(x, s, keep_table);
    for (size_t c = 0; c < s->n_columns; c++)
        if (x->key[c] && keep_table[s->columns[c].table])
            keep_column[c] = 1;
}

void ps_select_scratch_free(ps_select_scratch *x)
{
    ps_select_words *w[] = {&x->words, &x->pairs, &x->name};
    for (size_t i = 0; i < 3; i++) {
        ps_buf_free(&w[i]->text);
        free(w[i]->w);
    }
    ps_buf_free(&x->joined);
    free(x->tscore);
    free(x->tname);
    free(x->cscore);
    free(x->key);
    free(x->queue);
    free(x->parent);
    memset(x, 0, sizeof *x);
}
