/*
 * Small shared pieces of the tokenizer.json components (tokenize/hf.h):
 * growable buffers, piece and id lists, per-thread work slots, load
 * messages and typed JSON members.
 */
#include "tokenize/hf.h"
#include "common/unicode.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Grows *cap to hold `need` elements of `size` bytes (doubling). */
static int grow(void **p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return PS_OK;
    size_t c = *cap ? *cap : 16;
    while (c < need) {
        if (c > SIZE_MAX / 2 / size)
            return PS_ENOMEM;
        c *= 2;
    }
    void *q = realloc(*p, c * size);
    if (!q)
        return PS_ENOMEM;
    *p = q;
    *cap = c;
    return PS_OK;
}

int ps_tok_buf_reserve(ps_tok_buf *b, size_t extra)
{
    if (extra > SIZE_MAX - b->len - 1)
        return PS_ENOMEM;
    return grow((void **)&b->p, &b->cap, b->len + extra + 1, 1); /* room for a NUL */
}

int ps_tok_buf_put(ps_tok_buf *b, const void *p, size_t n)
{
    if (ps_tok_buf_reserve(b, n))
        return PS_ENOMEM;
    if (n)
        memcpy(b->p + b->len, p, n);
    b->len += n;
    return PS_OK;
}

int ps_tok_buf_put_cp(ps_tok_buf *b, uint32_t cp)
{
    char u[4];
    return ps_tok_buf_put(b, u, ps_utf8_encode(cp, u));
}

void ps_tok_buf_free(ps_tok_buf *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

void ps_tok_pieces_clear(ps_tok_pieces *p)
{
    p->n = 0;
    p->pool.len = 0;
}

int ps_tok_pieces_push(ps_tok_pieces *p, const char *s, size_t len, bool at_start)
{
    if (grow((void **)&p->v, &p->cap, p->n + 1, sizeof *p->v))
        return PS_ENOMEM;
    size_t off = p->pool.len;
    if (ps_tok_buf_put(&p->pool, s, len))
        return PS_ENOMEM;
    p->v[p->n++] = (ps_tok_piece){.off = off, .len = len, .at_start = at_start};
    return PS_OK;
}

void ps_tok_pieces_free(ps_tok_pieces *p)
{
    ps_tok_buf_free(&p->pool);
    free(p->v);
    memset(p, 0, sizeof *p);
}

int ps_tok_ids_reserve(ps_tok_ids *x, size_t extra)
{
    if (extra > SIZE_MAX / sizeof *x->v - x->n)
        return PS_ENOMEM;
    return grow((void **)&x->v, &x->cap, x->n + extra, sizeof *x->v);
}

int ps_tok_ids_push(ps_tok_ids *x, int32_t id)
{
    if (x->n == x->cap && ps_tok_ids_reserve(x, 1))
        return PS_ENOMEM;
    x->v[x->n++] = id;
    return PS_OK;
}

void ps_tok_ids_free(ps_tok_ids *x)
{
    free(x->v);
    memset(x, 0, sizeof *x);
}

void ps_tok_work_slot_clear(ps_tok_work_slot *slot)
{
    if (slot->w && slot->free_fn)
        slot->free_fn(slot->w);
    memset(slot, 0, sizeof *slot);
}

void ps_tok_segs_free(ps_tok_segs *s)
{
    free(s->v);
    memset(s, 0, sizeof *s);
}

int ps_tok_load_fail(const ps_tok_load *c, int code, const char *jpath, const char *fmt, ...)
{
    char why[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    return ps_error_set(c->err, code, "%s: %s: %s", c->file ? c->file : "tokenizer.json",
                        jpath && *jpath ? jpath : "(top level)", why);
}

int ps_tok_load_fail_key(const ps_tok_load *c, int code, const char *jpath, const char *key,
                         const char *fmt, ...)
{
    char why[512], where[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    return ps_tok_load_fail(c, code, ps_tok_jpath_key(where, sizeof where, jpath, key), "%s", why);
}

const char *ps_tok_json_type(json_t *obj)
{
    json_t *t = json_object_get(obj, "type");
    return json_is_string(t) ? json_string_value(t) : NULL;
}

const char *ps_tok_jpath_key(char *buf, size_t size, const char *jpath, const char *key)
{
    snprintf(buf, size, "%s%s%s", jpath && *jpath ? jpath : "", jpath && *jpath ? "." : "", key);
    return buf;
}

const char *ps_tok_jpath_idx(char *buf, size_t size, const char *jpath, size_t i)
{
    snprintf(buf, size, "%s[%zu]", jpath ? jpath : "", i);
    return buf;
}

int ps_tok_json_bool(const ps_tok_load *c, json_t *obj, const char *jpath, const char *key,
                     bool *out)
{
    json_t *v = json_object_get(obj, key);
    if (!v)
        return PS_OK;
    if (!json_is_boolean(v)) {
        return ps_tok_load_fail_key(c, PS_EFORMAT, jpath, key, "expected true or false");
    }
    *out = json_is_true(v);
    return PS_OK;
}

int ps_tok_json_string(const ps_tok_load *c, json_t *obj, const char *jpath, const char *key,
                       const char **out, size_t *len)
{
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v))
        return PS_OK;
    if (!json_is_string(v)) {
        return ps_tok_load_fail_key(c, PS_EFORMAT, jpath, key, "expected a string");
    }
    *out = json_string_value(v);
    if (len)
        *len = json_string_length(v);
    return PS_OK;
}

int ps_tok_json_uint(const ps_tok_load *c, json_t *obj, const char *jpath, const char *key,
                     uint64_t max, uint64_t *out)
{
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v))
        return PS_OK;
    if (!json_is_integer(v) || json_integer_value(v) < 0 ||
        (uint64_t)json_integer_value(v) > max) {
        return ps_tok_load_fail_key(c, PS_EFORMAT, jpath, key, "expected an integer from 0 to %llu",
                                    (unsigned long long)max);
    }
    *out = (uint64_t)json_integer_value(v);
    return PS_OK;
}

json_t *ps_tok_json_need(const ps_tok_load *c, json_t *obj, const char *jpath, const char *key,
                         int *rc)
{
    json_t *v = json_object_get(obj, key);
    if (!v)
        *rc = ps_tok_load_fail(c, PS_EFORMAT, jpath, "missing member '%s'", key);
    return v;
}

int ps_tok_json_need_bool(const ps_tok_load *c, json_t *obj, const char *jpath, const char *key,
                          bool *out)
{
    int rc = PS_OK;
    if (!ps_tok_json_need(c, obj, jpath, key, &rc))
        return rc;
    return ps_tok_json_bool(c, obj, jpath, key, out);
}

int ps_tok_json_check_type(const ps_tok_load *c, json_t *obj, const char *jpath,
                           const char *want)
{
    const char *t = ps_tok_json_type(obj);
    if (!t || strcmp(t, want))
        return ps_tok_load_fail_key(c, PS_EFORMAT, jpath, "type", "expected '%s'", want);
    return PS_OK;
}
