/* The vocabulary: a token -> id hash table over a string pool, the
 * id -> token array, and the vocab.txt parser with HF's line semantics. */
#include "tokenize/tokenize.h"
#include "tokenize/unicode.h"

#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

uint64_t ps_tok_hash_long(const void *p, size_t n) { return XXH3_64bits(p, n); }

void ps_tok_vocab_init(ps_tok_vocab *v) { memset(v, 0, sizeof *v); }

void ps_tok_vocab_free(ps_tok_vocab *v)
{
    free(v->pool);
    free(v->tok_off);
    free(v->slots);
    memset(v, 0, sizeof *v);
}

/* Rehashes into `cap` slots (a power of two above the keys held). */
static int resize_slots(ps_tok_vocab *v, size_t cap)
{
    ps_tok_slot *slots = malloc(cap * sizeof *slots);
    if (!slots)
        return PS_ENOMEM;
    for (size_t i = 0; i < cap; i++)
        slots[i].id = -1;
    if (v->slots) {
        for (size_t i = 0; i <= v->mask; i++) {
            if (v->slots[i].id < 0)
                continue;
            size_t j = (size_t)v->slots[i].hash & (cap - 1);
            while (slots[j].id >= 0)
                j = (j + 1) & (cap - 1);
            slots[j] = v->slots[i];
        }
        free(v->slots);
    }
    v->slots = slots;
    v->mask = cap - 1;
    return PS_OK;
}

/* A capacity of at least `need`: `cap` (or `first` when 0) doubled;
 * false on overflow. */
static bool doubled_to(size_t cap, size_t first, size_t need, size_t *out)
{
    cap = cap ? cap : first;
    while (cap < need) {
        if (cap > SIZE_MAX / 2)
            return false;
        cap *= 2;
    }
    *out = cap;
    return true;
}

/* Makes room for `need` items of `size` bytes in *items (a T **), whose
 * capacity *cap grows by doubling from `first`. */
static int reserve(void *items, size_t *cap, size_t first, size_t need, size_t size)
{
    size_t nc;
    if (need <= *cap)
        return PS_OK;
    if (!doubled_to(*cap, first, need, &nc) || ps_array_resize(items, nc, size))
        return PS_ENOMEM;
    *cap = nc;
    return PS_OK;
}

static int pool_reserve(ps_tok_vocab *v, size_t need)
{
    return reserve(&v->pool, &v->pool_cap, 4096, need, 1);
}

/* Room for ids 0 .. want-1 in the id -> token array. */
static int ids_reserve(ps_tok_vocab *v, size_t want)
{
    return reserve(&v->tok_off, &v->ids_cap, 1024, want, sizeof *v->tok_off);
}

static int pool_add(ps_tok_vocab *v, const char *tok, size_t len, size_t *off)
{
    size_t need;
    if (!ps_size_add(v->pool_len, len + 1, &need) || pool_reserve(v, need))
        return PS_ENOMEM;
    *off = v->pool_len;
    memcpy(v->pool + v->pool_len, tok, len);
    v->pool[v->pool_len + len] = '\0';
    v->pool_len = need;
    return PS_OK;
}

static int record_id(ps_tok_vocab *v, int32_t id, size_t off)
{
    size_t want = (size_t)id + 1;
    if (ids_reserve(v, want))
        return PS_ENOMEM;
    for (size_t i = v->n_ids; i < want; i++)
        v->tok_off[i] = SIZE_MAX; /* a hole until some token claims it */
    if (want > v->n_ids)
        v->n_ids = want;
    v->tok_off[id] = off;
    return PS_OK;
}

static int grow_slots(ps_tok_vocab *v)
{
    return resize_slots(v, v->slots ? (v->mask + 1) * 2 : 1024);
}

int ps_tok_vocab_reserve(ps_tok_vocab *v, size_t n_tokens)
{
    size_t cap = 1024;
    while (cap / 4 * 3 < n_tokens + 1) {
        if (cap > SIZE_MAX / 2 / sizeof *v->slots)
            return PS_ENOMEM;
        cap *= 2;
    }
    return v->slots && cap <= v->mask + 1 ? PS_OK : resize_slots(v, cap);
}

int ps_tok_vocab_set(ps_tok_vocab *v, const char *tok, size_t len, int32_t id)
{
    if (len > PS_TOK_MAX_TOKEN_BYTES || id < 0)
        return PS_ELIMIT;
    if (!v->slots || (v->n_keys + 1) * 4 > (v->mask + 1) * 3) {
        int rc = grow_slots(v);
        if (rc < 0)
            return rc;
    }
    uint64_t h = ps_tok_hash(tok, len);
    size_t j = (size_t)h & v->mask;
    for (;; j = (j + 1) & v->mask) {
        ps_tok_slot *s = &v->slots[j];
        if (s->id < 0)
            break;
        if (s->hash == h && s->len == len && !memcmp(v->pool + s->off, tok, len)) {
            s->id = id; /* a duplicate: the later id wins */
            return record_id(v, id, s->off);
        }
    }
    size_t off;
    int rc = pool_add(v, tok, len, &off);
    if (rc < 0)
        return rc;
    rc = record_id(v, id, off);
    if (rc < 0)
        return rc;
    v->slots[j] = (ps_tok_slot){.hash = h, .off = off, .len = (uint32_t)len, .id = id};
    v->n_keys++;
    return PS_OK;
}

/* Length of `line` after Rust's str::trim_end (trailing White_Space). The
 * line is known to be valid UTF-8. */
size_t ps_tok_trim_end_len(const char *line, size_t len)
{
    while (len > 0) {
        size_t start = len - 1;
        while (start > 0 && ((unsigned char)line[start] & 0xC0) == 0x80)
            start--;
        uint32_t cp;
        if (!ps_tok_utf8_decode((const unsigned char *)line + start, len - start, &cp) ||
            !ps_is_white_space(cp))
            break;
        len = start;
    }
    return len;
}

/* Returns the byte offset of the first invalid UTF-8 sequence, or len. */
static size_t utf8_invalid_at(const char *p, size_t len)
{
    size_t i = 0;
    while (i < len) {
        if ((unsigned char)p[i] < 0x80) {
            i++;
            continue;
        }
        uint32_t cp;
        unsigned n = ps_tok_utf8_decode((const unsigned char *)p + i, len - i, &cp);
        if (!n)
            return i;
        i += n;
    }
    return len;
}

bool ps_tok_next_line(ps_tok_lines *it, const char **line, size_t *line_len)
{
    if (it->pos >= it->len)
        return false;
    const char *p = it->data + it->pos;
    const char *nl = memchr(p, '\n', it->len - it->pos);
    *line = p;
    *line_len = nl ? (size_t)(nl - p) : it->len - it->pos;
    it->pos += *line_len + (nl ? 1 : 0);
    it->line_no++;
    return true;
}

int ps_tok_vocab_parse_txt(ps_tok_vocab *v, const char *data, size_t len, const char *name,
                           ps_error *err)
{
    /* Room for every line up front: growing the table and the pool by
     * doubling rehashed and faulted in fresh pages six times over. */
    size_t lines = 1;
    for (const char *p = data, *end = data + len; (p = memchr(p, '\n', (size_t)(end - p))); p++)
        lines++;
    if (ps_tok_vocab_reserve(v, lines) || pool_reserve(v, len + lines) ||
        ids_reserve(v, lines))
        return ps_error_set(err, PS_ENOMEM, "%s: out of memory", name);
    /* Each line trimmed with trim_end, as HF's read_file. */
    ps_tok_lines it = {data, len, 0, 0};
    const char *line;
    size_t line_len, line_no = 0;
    while (ps_tok_next_line(&it, &line, &line_len)) {
        line_no = it.line_no;
        if (line_no > PS_TOK_MAX_TOKENS)
            return ps_error_set(err, PS_ELIMIT, "%s:%zu: more than %zu tokens", name, line_no,
                                PS_TOK_MAX_TOKENS);
        size_t bad = utf8_invalid_at(line, line_len);
        if (bad < line_len)
            return ps_error_set(err, PS_EUTF8, "%s:%zu: invalid UTF-8 at byte %zu of the line",
                                name, line_no, bad + 1);
        size_t tok_len = ps_tok_trim_end_len(line, line_len);
        if (tok_len > PS_TOK_MAX_TOKEN_BYTES)
            return ps_error_set(err, PS_ELIMIT, "%s:%zu: token of %zu bytes (limit %u)", name,
                                line_no, tok_len, PS_TOK_MAX_TOKEN_BYTES);
        int rc = ps_tok_vocab_set(v, line, tok_len, (int32_t)(line_no - 1));
        if (rc < 0)
            return ps_error_set(err, rc, "%s:%zu: %s", name, line_no, ps_strerror(rc));
    }
    if (line_no == 0)
        return ps_error_set(err, PS_EFORMAT, "%s: empty vocabulary", name);
    return PS_OK;
}
