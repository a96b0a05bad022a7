/* validate/unk_words.c — the words that became [UNK] (per field, bounded
 * and mergeable), their JSON, and the hints reports give for them. */
#include "common/unicode.h"
#include "pairshard/tokenizer.h"
#include "validate/vinternal.h"

#include <stdlib.h>
#include <string.h>

const char *const ps_vunk_field_names[PS_VUNK_FIELDS] = {"question", "sql"};

static const char *const HINT_NAMES[] = {NULL, "lowercase", "rules", "html_escaped"};
#define N_HINTS (sizeof HINT_NAMES / sizeof HINT_NAMES[0])

static uint64_t word_hash(const char *w, size_t len)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)w[i]) * 1099511628211ULL;
    return h;
}

/* The slot of w[0..len) in the index: its entry, or the empty slot it
 * would take. */
static size_t slot_of_n(const ps_vunk *u, const char *w, size_t len)
{
    size_t mask = 2 * PS_VUNK_CAP - 1, j = (size_t)word_hash(w, len) & mask;
    for (; u->slot[j]; j = (j + 1) & mask) {
        const char *e = u->w[u->slot[j] - 1].word;
        if (!strncmp(e, w, len) && !e[len])
            break;
    }
    return j;
}

static size_t slot_of(const ps_vunk *u, const char *w) { return slot_of_n(u, w, strlen(w)); }

static void reindex(ps_vunk *u)
{
    memset(u->slot, 0, sizeof u->slot);
    for (size_t i = 0; i < u->n; i++)
        u->slot[slot_of(u, u->w[i].word)] = (uint16_t)(i + 1);
}

void ps_vunk_clear(ps_vunk *u)
{
    for (size_t i = 0; i < u->n; i++) {
        free(u->w[i].word);
        free(u->w[i].example);
    }
    memset(u, 0, sizeof *u);
}

/* The entry a new word replaces: least count, then largest word. */
static size_t victim(const ps_vunk *u)
{
    size_t v = 0;
    for (size_t i = 1; i < u->n; i++) {
        const ps_vunk_word *a = &u->w[i], *b = &u->w[v];
        if (a->count < b->count || (a->count == b->count && strcmp(a->word, b->word) > 0))
            v = i;
    }
    return v;
}

/* The length of the word cut to PS_VUNK_WORD_MAX bytes at a character
 * boundary. */
static size_t kept_len(const char *word, size_t len)
{
    if (len > PS_VUNK_WORD_MAX) {
        len = PS_VUNK_WORD_MAX;
        while (len && ((unsigned char)word[len] & 0xC0) == 0x80)
            len--;
    }
    return len;
}

int ps_vunk_add(ps_vunk *u, const char *word, size_t len, uint64_t count, uint64_t error,
                const char *example, int hint)
{
    len = kept_len(word, len);
    u->total += count;
    size_t j = slot_of_n(u, word, len);
    if (u->slot[j]) { /* the common case: no allocation */
        ps_vunk_word *e = &u->w[u->slot[j] - 1];
        e->count += count;
        e->error += error;
        if (!e->example && example && !(e->example = strdup(example)))
            return PS_ENOMEM;
        return 0;
    }
    char *w = ps_strndup(word, len), *ex = example ? strdup(example) : NULL;
    if (!w || (example && !ex)) {
        free(w);
        free(ex);
        return PS_ENOMEM;
    }
    ps_vunk_word *e;
    uint64_t base = 0;
    if (u->n < PS_VUNK_CAP) {
        e = &u->w[u->n++];
    } else {
        e = &u->w[victim(u)];
        base = e->count;
        free(e->word);
        free(e->example);
    }
    *e = (ps_vunk_word){w, ex, base + count, base + error, hint};
    if (base)
        reindex(u);
    else
        u->slot[j] = (uint16_t)u->n;
    return 0;
}

int ps_vunk_merge(ps_vunk *into, const ps_vunk *from)
{
    uint64_t total = into->total + from->total;
    for (size_t i = 0; i < from->n; i++) {
        const ps_vunk_word *e = &from->w[i];
        int rc = ps_vunk_add(into, e->word, strlen(e->word), e->count, e->error, e->example,
                             e->hint);
        if (rc)
            return rc;
    }
    into->total = total; /* the adds counted overstated counts; the sum is exact */
    return 0;
}

size_t *ps_vunk_sorted(const ps_vunk *u)
{
    if (!u->n)
        return NULL;
    size_t *ix = malloc(u->n * sizeof *ix);
    if (!ix)
        return NULL;
    for (size_t i = 0; i < u->n; i++)
        ix[i] = i;
    /* an insertion sort: the table is small and this needs no global state */
    for (size_t i = 1; i < u->n; i++) {
        size_t k = ix[i], j = i;
        for (; j > 0; j--) {
            const ps_vunk_word *x = &u->w[k], *y = &u->w[ix[j - 1]];
            if (y->count > x->count || (y->count == x->count && strcmp(y->word, x->word) < 0))
                break;
            ix[j] = ix[j - 1];
        }
        ix[j] = k;
    }
    return ix;
}

/* ---- JSON -------------------------------------------------------------------- */

static json_t *word_json(const ps_vunk_word *e)
{
    const char *h = e->hint > 0 && (size_t)e->hint < N_HINTS ? HINT_NAMES[e->hint] : NULL;
    return json_pack("{sssosososo}", "word", e->word, "count", ps_vjson_uint(e->count), "error",
                     ps_vjson_uint(e->error), "example",
                     e->example ? json_string(e->example) : json_null(), "hint",
                     h ? json_string(h) : json_null());
}

static json_t *table_json(const ps_vunk *u, size_t top)
{
    json_t *words = json_array();
    size_t *ix = ps_vunk_sorted(u);
    int bad = !words || (u->n && !ix);
    size_t n = top && top < u->n ? top : u->n;
    for (size_t i = 0; i < n && !bad; i++) {
        json_t *e = word_json(&u->w[ix[i]]);
        bad |= !e || json_array_append_new(words, e);
    }
    free(ix);
    if (bad) {
        json_decref(words);
        return NULL;
    }
    return json_pack("{soso}", "total", ps_vjson_uint(u->total), "words", words);
}

json_t *ps_vunk_to_json(const ps_vunk u[PS_VUNK_FIELDS], size_t top)
{
    static const ps_vunk empty; /* no [UNK] word yet */
    json_t *o = json_object();
    int bad = !o;
    for (int f = 0; f < PS_VUNK_FIELDS && !bad; f++) {
        json_t *t = table_json(u ? &u[f] : &empty, top);
        bad |= !t || json_object_set_new(o, ps_vunk_field_names[f], t);
    }
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static int hint_of(json_t *h, int *out)
{
    *out = PS_UNK_HINT_NONE;
    if (!h || json_is_null(h))
        return 0;
    for (size_t i = 1; i < N_HINTS; i++)
        if (json_is_string(h) && !strcmp(json_string_value(h), HINT_NAMES[i])) {
            *out = (int)i;
            return 0;
        }
    return -1;
}

static int table_from_json(json_t *t, ps_vunk *u, const char *ctx, ps_error *err)
{
    json_t *words = json_object_get(t, "words");
    int rc;
    if (!json_is_object(t) || !json_is_array(words) || json_array_size(words) > PS_VUNK_CAP)
        return ps_error_set(err, PS_EFORMAT, "%s: must be {\"total\", \"words\": [<= %u]}", ctx,
                            PS_VUNK_CAP);
    uint64_t total, sum = 0, count, error;
    if ((rc = ps_vjson_u64(t, "total", &total, ctx, err)))
        return rc;
    size_t i;
    json_t *e;
    json_array_foreach(words, i, e)
    {
        const char *w = json_string_value(json_object_get(e, "word"));
        json_t *ex = json_object_get(e, "example");
        int hint;
        if (!json_is_object(e) || !w || !*w || strlen(w) > PS_VUNK_WORD_MAX ||
            (ex && !json_is_null(ex) && !json_is_string(ex)) ||
            hint_of(json_object_get(e, "hint"), &hint))
            return ps_error_set(err, PS_EFORMAT,
                                "%s: word %zu needs a 'word' (1..%u bytes), an 'example' "
                                "string or null and a known 'hint' or null",
                                ctx, i, PS_VUNK_WORD_MAX);
        if ((rc = ps_vjson_u64(e, "count", &count, ctx, err)) ||
            (rc = ps_vjson_u64(e, "error", &error, ctx, err)))
            return rc;
        if (!count || error >= count || __builtin_add_overflow(sum, count - error, &sum))
            return ps_error_set(err, PS_EFORMAT, "%s: word %zu: count must be >= 1 and > error",
                                ctx, i);
        if (u->slot[slot_of(u, w)])
            return ps_error_set(err, PS_EFORMAT, "%s: word '%s' appears twice", ctx, w);
        if (ps_vunk_add(u, w, strlen(w), count, error, json_string_value(ex), hint))
            return ps_error_set(err, PS_ENOMEM, "out of memory");
    }
    if (sum > total) /* each word was seen at least count - error times */
        return ps_error_set(err, PS_EFORMAT, "%s: the words' counts exceed 'total'", ctx);
    u->total = total;
    return 0;
}

int ps_vunk_from_json(json_t *j, ps_vunk u[PS_VUNK_FIELDS], ps_error *err)
{
    if (!json_is_object(j))
        return ps_error_set(err, PS_EFORMAT, "statistics: 'unk_words' must be an object");
    for (int f = 0; f < PS_VUNK_FIELDS; f++) {
        char ctx[64];
        snprintf(ctx, sizeof ctx, "statistics: unk_words.%s", ps_vunk_field_names[f]);
        int rc = table_from_json(json_object_get(j, ps_vunk_field_names[f]), &u[f], ctx, err);
        if (rc)
            return rc;
    }
    return 0;
}

/* ---- hints ------------------------------------------------------------------- */

/* The ASCII a typographic character is usually written as ("" to drop). */
static const char *ascii_for(uint32_t cp, char buf[2])
{
    if (cp >= 0xFF01 && cp <= 0xFF5E) { /* full-width ASCII */
        buf[0] = (char)(cp - 0xFEE0);
        buf[1] = '\0';
        return buf;
    }
    switch (cp) {
    case 0x201C: case 0x201D: case 0x201E: case 0x201F: case 0x2033: case 0x300C: case 0x300D:
    case 0x300E: case 0x300F:
        return "\"";
    case 0x2018: case 0x2019: case 0x201A: case 0x201B: case 0x2032:
        return "'";
    case 0x2010: case 0x2011: case 0x2012: case 0x2013: case 0x2014: case 0x2015:
        return "-";
    case 0x3001:
        return ",";
    case 0x3002:
        return ".";
    case 0x2026:
        return "...";
    case 0x3000: case 0x00A0:
        return " ";
    default:
        return "";
    }
}

typedef struct rule_acc {
    char with[8][4];
    ps_buf cls[8]; /* the characters of each replacement's class */
    bool field[8][PS_VUNK_FIELDS];
    size_t n;
} rule_acc;

/* Decodes one code point of valid UTF-8 (the words come from the
 * tokenizer, which checked them); returns its length. */
static unsigned decode(const unsigned char *p, uint32_t *cp)
{
    unsigned len = p[0] < 0x80 ? 1 : p[0] < 0xE0 ? 2 : p[0] < 0xF0 ? 3 : 4;
    uint32_t c = len == 1 ? p[0] : p[0] & (0x7Fu >> len);
    for (unsigned i = 1; i < len; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 1; /* not valid: skip a byte */
        c = (c << 6) | (p[i] & 0x3F);
    }
    *cp = c;
    return len;
}

/* Adds one typographic character to the class of its replacement. */
static int rule_add_char(rule_acc *r, const char *ch, unsigned len, uint32_t cp, int field)
{
    char buf[2];
    const char *with = ascii_for(cp, buf);
    size_t k = 0;
    while (k < r->n && strcmp(r->with[k], with))
        k++;
    if (k == r->n) {
        if (r->n == 8)
            return 0;
        snprintf(r->with[k], sizeof r->with[k], "%s", with);
        ps_buf_init(&r->cls[k]);
        r->n++;
    }
    r->field[k][field] = true;
    for (size_t i = 0; i + len <= r->cls[k].len; i++)
        if (!memcmp(r->cls[k].data + i, ch, len))
            return 0; /* already in the class */
    return ps_buf_append(&r->cls[k], ch, len) ? PS_ENOMEM : 0;
}

static int rule_add(rule_acc *r, const char *word, int field)
{
    const unsigned char *p = (const unsigned char *)word;
    while (*p) {
        uint32_t cp = 0;
        unsigned len = decode(p, &cp);
        int rc = ps_is_typographic(cp) ? rule_add_char(r, (const char *)p, len, cp, field) : 0;
        if (rc)
            return rc;
        p += len;
    }
    return 0;
}

/* A --rules file replacing the characters: one rule per replacement. */
static json_t *rules_example(rule_acc *r)
{
    json_t *a = json_array();
    for (size_t k = 0; a && k < r->n; k++) {
        char name[32];
        snprintf(name, sizeof name, "unk-chars-%zu", k + 1);
        const char *field = r->field[k][0] && r->field[k][1] ? "both"
                            : r->field[k][0]                ? "question"
                                                            : "sql";
        char *pat = malloc(r->cls[k].len + 3);
        if (pat)
            snprintf(pat, r->cls[k].len + 3, "[%.*s]", (int)r->cls[k].len, r->cls[k].data);
        json_t *rule = pat ? json_pack("{ssssssss}", "name", name, "field", field, "replace", pat,
                                       "with", r->with[k])
                           : NULL;
        free(pat);
        if (!rule || json_array_append_new(a, rule)) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

static void rule_acc_free(rule_acc *r)
{
    for (size_t k = 0; k < r->n; k++)
        ps_buf_free(&r->cls[k]);
}

/* Up to 8 words of one hint, most frequent first, both fields. */
static json_t *hint_words(const ps_vunk u[PS_VUNK_FIELDS], size_t *const ix[PS_VUNK_FIELDS],
                          int hint, rule_acc *rules)
{
    json_t *a = json_array();
    for (int f = 0; f < PS_VUNK_FIELDS && a; f++)
        for (size_t i = 0; i < u[f].n; i++) {
            const ps_vunk_word *e = &u[f].w[ix[f][i]];
            if (e->hint != hint)
                continue;
            if (rules && rule_add(rules, e->word, f)) {
                json_decref(a);
                return NULL;
            }
            bool seen = false;
            for (size_t k = 0; k < json_array_size(a); k++)
                seen |= !strcmp(json_string_value(json_array_get(a, k)), e->word);
            if (!seen && json_array_size(a) < 8)
                json_array_append_new(a, json_string(e->word));
        }
    return a;
}

static const char *const HINT_TEXT[] = {
    NULL,
    "the vocabulary is lower-case: try --lowercase (lower-cased, these words have no [UNK])",
    "typographic, full-width or emoji characters the vocabulary lacks: map them to ASCII with "
    "a --rules file such as the one below",
    "the vocabulary looks HTML-escaped (it holds &lt; &gt; &amp; where < > & belong): use the "
    "model's original vocab.txt",
};

static json_t *hints_json(const ps_vunk u[PS_VUNK_FIELDS], size_t *const ix[PS_VUNK_FIELDS])
{
    json_t *a = json_array();
    for (int h = 1; h < (int)N_HINTS && a; h++) {
        rule_acc rules = {0};
        json_t *words = hint_words(u, ix, h, h == PS_UNK_HINT_RULES ? &rules : NULL);
        json_t *e = NULL;
        if (words && json_array_size(words)) {
            e = json_pack("{sssssO}", "hint", HINT_NAMES[h], "message", HINT_TEXT[h], "words",
                          words);
            if (e && h == PS_UNK_HINT_RULES)
                json_object_set_new(e, "rules", rules_example(&rules));
        }
        rule_acc_free(&rules);
        json_decref(words);
        if (e && json_array_append_new(a, e)) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

json_t *ps_vunk_details(const ps_vunk u[PS_VUNK_FIELDS])
{
    if (!u)
        return ps_vunk_to_json(NULL, PS_VUNK_TOP);
    size_t *ix[PS_VUNK_FIELDS] = {ps_vunk_sorted(&u[0]), ps_vunk_sorted(&u[1])};
    json_t *o = NULL;
    if ((!u[0].n || ix[0]) && (!u[1].n || ix[1])) {
        o = ps_vunk_to_json(u, PS_VUNK_TOP);
        json_t *h = o ? hints_json(u, ix) : NULL;
        if (!h || json_object_set_new(o, "hints", h)) {
            json_decref(o);
            o = NULL;
        }
    }
    free(ix[0]);
    free(ix[1]);
    return o;
}

/* ---- terminal summary -------------------------------------------------------- */

static int summary_field(ps_buf *b, json_t *t, const char *field)
{
    json_t *words = json_object_get(t, "words");
    if (!json_array_size(words))
        return 0;
    int bad = ps_buf_printf(b, "  [UNK] words in %s (%lld in all; top %zu):\n", field,
                            (long long)json_integer_value(json_object_get(t, "total")),
                            json_array_size(words)) != 0;
    size_t i;
    json_t *e;
    json_array_foreach(words, i, e)
    {
        const char *hint = json_string_value(json_object_get(e, "hint"));
        const char *ex = json_string_value(json_object_get(e, "example"));
        const char *w = json_string_value(json_object_get(e, "word"));
        w = w ? w : "";
        size_t cols = 0; /* pad by characters, not bytes */
        for (const char *c = w; *c; c++)
            cols += ((unsigned char)*c & 0xC0) != 0x80;
        long long over = json_integer_value(json_object_get(e, "error"));
        bad |= ps_buf_printf(b, "    %s%*s %8lld  e.g. %s%s%s", w, cols < 16 ? (int)(16 - cols) : 0,
                             "", (long long)json_integer_value(json_object_get(e, "count")),
                             ex ? ex : "?", hint ? "  hint: " : "", hint ? hint : "") != 0;
        if (over > 0) /* a word that entered a full table inherits the count it replaced */
            bad |= ps_buf_printf(b, "  (count overstated by at most %lld)", over) != 0;
        bad |= ps_buf_putc(b, '\n') != 0;
    }
    return bad;
}

int ps_vunk_summary(ps_buf *b, json_t *unk_words)
{
    int bad = 0;
    for (int f = 0; f < PS_VUNK_FIELDS; f++)
        bad |= summary_field(b, json_object_get(unk_words, ps_vunk_field_names[f]),
                             ps_vunk_field_names[f]);
    size_t i;
    json_t *h;
    json_array_foreach(json_object_get(unk_words, "hints"), i, h)
    {
        bad |= ps_buf_printf(b, "  hint: %s\n        words:",
                             json_string_value(json_object_get(h, "message"))) != 0;
        size_t k;
        json_t *w;
        json_array_foreach(json_object_get(h, "words"), k, w)
            bad |= ps_buf_printf(b, " %s", json_string_value(w)) != 0;
        bad |= ps_buf_putc(b, '\n') != 0;
        json_t *rules = json_object_get(h, "rules");
        if (rules) {
            char *txt = json_dumps(rules, JSON_COMPACT);
            bad |= !txt || ps_buf_printf(b, "        rules: %s\n", txt) != 0;
            free(txt);
        }
    }
    return bad ? PS_ENOMEM : 0;
}
