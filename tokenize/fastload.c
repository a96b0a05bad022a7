/*
 * The fast path of loading a tokenizer.json. Two members make a 150k-token
 * file slow under jansson (one allocation per key and per value): the
 * model's "vocab" (an object token -> id) and "merges". A skipper finds
 * their byte spans, a strict parser reads them into flat arrays, and
 * jansson gets a copy of the text with those spans replaced by {} / [].
 *
 * The parser accepts only what jansson surely reads the same way (plain
 * integers, well-formed UTF-8, paired surrogates, no \u0000); anything
 * else leaves the member in the text for jansson. A walked key with a
 * backslash, or a duplicated "model", "vocab" or "merges", gives up on
 * the fast path altogether. The caller redoes the whole load on the plain
 * path whenever the fast one fails, so messages stay the plain path's.
 */
#include "tokenize/hf.h"
#include "common/unicode.h"

#include <stdlib.h>
#include <string.h>

_Thread_local ps_tok_pre *ps_tok_pre_current;

typedef struct cur {
    const char *p, *end;
} cur;

typedef struct span {
    const char *s, *e; /* s == NULL: absent */
} span;

static void ws(cur *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

static bool skip_string(cur *c)
{
    for (c->p++; c->p < c->end;) {
        char ch = *c->p++;
        if (ch == '"')
            return true;
        if (ch == '\\' && c->p++ >= c->end)
            return false;
    }
    return false;
}

/* Skips any value: brackets matched, strings skipped whole. jansson checks
 * all of it later, in the copy. */
static bool skip_value(cur *c)
{
    if (c->p >= c->end)
        return false;
    if (*c->p == '"')
        return skip_string(c);
    if (*c->p == '{' || *c->p == '[') {
        size_t depth = 0;
        while (c->p < c->end) {
            char ch = *c->p;
            if (ch == '"') {
                if (!skip_string(c))
                    return false;
                continue;
            }
            c->p++;
            if (ch == '{' || ch == '[')
                depth++;
            else if ((ch == '}' || ch == ']') && --depth == 0)
                return true;
        }
        return false;
    }
    const char *s = c->p;
    while (c->p < c->end && (strchr("+-.eE", *c->p) || (*c->p >= '0' && *c->p <= '9') ||
                             (*c->p >= 'a' && *c->p <= 'z')))
        c->p++;
    return c->p > s;
}

/* Walks the object at c; out[k] gets the value span of member names[k].
 * False on anything unexpected: a key with an escape, a duplicate. */
static bool members(cur *c, const char *const *names, size_t n, span *out)
{
    ws(c);
    if (c->p >= c->end || *c->p++ != '{')
        return false;
    ws(c);
    if (c->p < c->end && *c->p == '}')
        return true;
    for (;;) {
        ws(c);
        const char *k = c->p + 1;
        if (c->p >= c->end || *c->p != '"' || !skip_string(c))
            return false;
        size_t klen = (size_t)(c->p - 1 - k);
        if (memchr(k, '\\', klen))
            return false;
        ws(c);
        if (c->p >= c->end || *c->p++ != ':')
            return false;
        ws(c);
        const char *v = c->p;
        if (!skip_value(c))
            return false;
        for (size_t i = 0; i < n; i++)
            if (strlen(names[i]) == klen && !memcmp(names[i], k, klen)) {
                if (out[i].s)
                    return false;
                out[i] = (span){v, c->p};
            }
        ws(c);
        if (c->p >= c->end)
            return false;
        char ch = *c->p++;
        if (ch == '}')
            return true;
        if (ch != ',')
            return false;
    }
}

static int hex4(const char *p)
{
    int v = 0;
    for (int i = 0; i < 4; i++) {
        char ch = p[i];
        int d = ch >= '0' && ch <= '9' ? ch - '0'
                : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
                : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    return v;
}

/* Length of the well-formed UTF-8 sequence at p (lead byte >= 0x80), 0 if
 * it is not one (overlong, surrogate, beyond U+10FFFF, cut short). */
static size_t utf8_len(const unsigned char *p, const unsigned char *end)
{
    unsigned char b = p[0];
    size_t n = b >= 0xC2 && b <= 0xDF ? 2 : b >= 0xE0 && b <= 0xEF ? 3 : b >= 0xF0 && b <= 0xF4 ? 4 : 0;
    if (!n || (size_t)(end - p) < n)
        return 0;
    for (size_t i = 1; i < n; i++)
        if ((p[i] & 0xC0) != 0x80)
            return 0;
    if ((b == 0xE0 && p[1] < 0xA0) || (b == 0xED && p[1] > 0x9F) || (b == 0xF0 && p[1] < 0x90) ||
        (b == 0xF4 && p[1] > 0x8F))
        return 0;
    return n;
}

/* \uXXXX (and its low surrogate) at c->p (past the 'u'), as UTF-8 in o. */
static bool unicode_escape(cur *c, char **o)
{
    if (c->end - c->p < 4)
        return false;
    int u = hex4(c->p);
    c->p += 4;
    if (u <= 0 || (u >= 0xDC00 && u <= 0xDFFF))
        return false; /* \u0000 and lone low surrogates: jansson's to judge */
    uint32_t cp = (uint32_t)u;
    if (u >= 0xD800 && u <= 0xDBFF) {
        if (c->end - c->p < 6 || c->p[0] != '\\' || c->p[1] != 'u')
            return false;
        int lo = hex4(c->p + 2);
        if (lo < 0xDC00 || lo > 0xDFFF)
            return false;
        c->p += 6;
        cp = 0x10000 + (((uint32_t)u - 0xD800) << 10) + ((uint32_t)lo - 0xDC00);
    }
    *o += ps_utf8_encode(cp, *o);
    return true;
}

/* A string at c, decoded into *arena (NUL-terminated). */
static bool string(cur *c, char **arena, const char **s, size_t *n)
{
    if (c->p >= c->end || *c->p != '"')
        return false;
    char *o = *arena;
    for (c->p++; c->p < c->end;) {
        unsigned char ch = (unsigned char)*c->p;
        if (ch == '"') {
            c->p++;
            *s = *arena;
            *n = (size_t)(o - *arena);
            *o++ = '\0';
            *arena = o;
            return true;
        }
        if (ch < 0x20)
            return false;
        if (ch >= 0x80) {
            size_t k = utf8_len((const unsigned char *)c->p, (const unsigned char *)c->end);
            if (!k)
                return false;
            memcpy(o, c->p, k);
            o += k;
            c->p += k;
        } else if (ch != '\\') {
            *o++ = (char)ch;
            c->p++;
        } else {
            if (++c->p >= c->end)
                return false;
            static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
            const char *e = strchr(from, *c->p);
            if (*c->p == 'u') {
                c->p++;
                if (!unicode_escape(c, &o))
                    return false;
            } else if (e && *e) {
                *o++ = to[e - from];
                c->p++;
            } else {
                return false;
            }
        }
    }
    return false;
}

/* Consumes the expected punctuation `ch` after whitespace. */
static bool punct(cur *c, char ch)
{
    ws(c);
    if (c->p >= c->end || *c->p != ch)
        return false;
    c->p++;
    ws(c);
    return true;
}

/* The list separator: true and *more after ',', true and !*more at close. */
static bool next(cur *c, char close, bool *more)
{
    ws(c);
    if (c->p >= c->end)
        return false;
    *more = *c->p == ',';
    if (*c->p != ',' && *c->p != close)
        return false;
    c->p++;
    ws(c);
    return true;
}

/* A plain non-negative integer of at most 10 digits, as jansson reads it. */
static bool id_value(cur *c, int64_t *out)
{
    const char *s = c->p;
    int64_t v = 0;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9' && c->p - s < 11)
        v = v * 10 + (*c->p++ - '0');
    size_t n = (size_t)(c->p - s);
    if (!n || n > 10 || (n > 1 && *s == '0'))
        return false;
    if (c->p < c->end && (*c->p == '.' || *c->p == 'e' || *c->p == 'E'))
        return false;
    *out = v;
    return true;
}

static bool parse_vocab(span sp, char **arena, ps_tok_pre *pre)
{
    cur c = {sp.s, sp.e};
    size_t cap = 0;
    if (!punct(&c, '{'))
        return false;
    bool more = c.p < c.end && *c.p != '}';
    if (!more)
        c.p++;
    while (more) {
        if (pre->n_vocab == cap) {
            cap = cap ? cap * 2 : 1024;
            ps_tok_pre_entry *v = realloc(pre->vocab, cap * sizeof *v);
            if (!v)
                return false;
            pre->vocab = v;
        }
        ps_tok_pre_entry *e = &pre->vocab[pre->n_vocab];
        if (!string(&c, arena, &e->key, &e->len) || !punct(&c, ':') || !id_value(&c, &e->id) ||
            !next(&c, '}', &more))
            return false;
        pre->n_vocab++;
    }
    ws(&c);
    return c.p == c.end;
}

static bool parse_merge(cur *c, char **arena, ps_tok_pre_merge *m, int *kind)
{
    int k = c->p < c->end && *c->p == '[' ? 2 : 1;
    if (*kind && *kind != k)
        return false; /* mixed forms: the plain path names the odd one */
    *kind = k;
    *m = (ps_tok_pre_merge){0};
    if (k == 1)
        return string(c, arena, &m->a, &m->na);
    bool more;
    return punct(c, '[') && string(c, arena, &m->a, &m->na) && next(c, ']', &more) && more &&
           string(c, arena, &m->b, &m->nb) && next(c, ']', &more) && !more;
}

static bool parse_merges(span sp, char **arena, ps_tok_pre *pre)
{
    cur c = {sp.s, sp.e};
    size_t cap = 0;
    int kind = 0;
    if (!punct(&c, '['))
        return false;
    bool more = c.p < c.end && *c.p != ']';
    if (!more)
        c.p++;
    while (more) {
        if (pre->n_merges == cap) {
            cap = cap ? cap * 2 : 1024;
            ps_tok_pre_merge *v = realloc(pre->merges, cap * sizeof *v);
            if (!v)
                return false;
            pre->merges = v;
        }
        if (!parse_merge(&c, arena, &pre->merges[pre->n_merges], &kind) || !next(&c, ']', &more))
            return false;
        pre->n_merges++;
    }
    pre->merges_is_str = kind == 1;
    ws(&c);
    return c.p == c.end;
}

void ps_tok_pre_free(ps_tok_pre *pre)
{
    free(pre->vocab);
    free(pre->merges);
    free(pre->arena);
    *pre = (ps_tok_pre){0};
}

/* Text with the spans in sp[0..1] (those set) replaced by their stubs. */
static char *stub_copy(const char *data, size_t len, span *sp, const char *const *stub,
                       size_t *out_len)
{
    char *t = malloc(len + 1);
    if (!t)
        return NULL;
    int first = sp[0].s && (!sp[1].s || sp[0].s < sp[1].s) ? 0 : 1;
    const char *p = data;
    char *o = t;
    for (int i = 0; i < 2; i++) {
        span *s = &sp[(first + i) % 2];
        if (!s->s)
            continue;
        memcpy(o, p, (size_t)(s->s - p));
        o += s->s - p;
        memcpy(o, stub[(first + i) % 2], 2);
        o += 2;
        p = s->e;
    }
    memcpy(o, p, (size_t)(data + len - p));
    o += data + len - p;
    *o = '\0';
    *out_len = (size_t)(o - t);
    return t;
}

int ps_tok_pre_parse(const char *data, size_t len, ps_tok_pre *pre, char **text, size_t *text_len)
{
    *pre = (ps_tok_pre){0};
    *text = NULL;
    static const char *const top[] = {"model"}, *const inner[] = {"vocab", "merges"};
    static const char *const stubs[] = {"{}", "[]"};
    span model = {0}, sp[2] = {{0}, {0}};
    cur c = {data, data + len};
    if (!members(&c, top, 1, &model) || !model.s)
        return PS_EUSAGE;
    cur m = {model.s, model.e};
    if (!members(&m, inner, 2, sp) || !(pre->arena = malloc(len + 1)))
        return PS_EUSAGE;
    char *arena = pre->arena;
    /* a member this parser cannot read stays in the text, for jansson */
    if (sp[0].s && (*sp[0].s != '{' || !parse_vocab(sp[0], &arena, pre))) {
        sp[0].s = NULL;
        pre->n_vocab = 0;
    }
    if (sp[1].s && (*sp[1].s != '[' || !parse_merges(sp[1], &arena, pre))) {
        sp[1].s = NULL;
        pre->n_merges = 0;
    }
    pre->has_vocab = sp[0].s != NULL;
    pre->has_merges = sp[1].s != NULL;
    if (!pre->has_vocab && !pre->has_merges) {
        ps_tok_pre_free(pre);
        return PS_EUSAGE;
    }
    if (!(*text = stub_copy(data, len, sp, stubs, text_len))) {
        ps_tok_pre_free(pre);
        return PS_ENOMEM;
    }
    return PS_OK;
}

/* Finds the stubs jansson parsed; false when they are not where expected. */
bool ps_tok_pre_bind(ps_tok_pre *pre, json_t *root)
{
    json_t *model = json_object_get(root, "model");
    pre->vocab_stub = pre->has_vocab ? json_object_get(model, "vocab") : NULL;
    pre->merges_stub = pre->has_merges ? json_object_get(model, "merges") : NULL;
    return (!pre->has_vocab || (json_is_object(pre->vocab_stub) && !json_object_size(pre->vocab_stub))) &&
           (!pre->has_merges || (json_is_array(pre->merges_stub) && !json_array_size(pre->merges_stub)));
}

bool ps_tok_pre_complete(const ps_tok_pre *pre)
{
    return !pre->failed && (!pre->has_vocab || pre->vocab_used) &&
           (!pre->has_merges || pre->merges_used);
}

ps_tok_pre *ps_tok_pre_for(json_t *member)
{
    ps_tok_pre *pre = ps_tok_pre_current;
    if (!pre || !member || (member != pre->vocab_stub && member != pre->merges_stub))
        return NULL;
    return pre;
}
