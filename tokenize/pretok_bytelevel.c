/*
 * The ByteLevel pre-tokenizer (GPT-2, RoBERTa, Llama-3, Qwen2): an optional
 * leading space, the GPT-2 regex split (isolated), then every byte of every
 * piece shown as its byte-level character (bytelevel.c). trim_offsets only
 * moves offsets, which pieces do not carry: it is accepted and ignored.
 */
#include "tokenize/pretok.h"

#include <stdlib.h>
#include <string.h>

typedef struct bytelevel_pt {
    ps_tok_pretok base;
    bool add_prefix_space, use_regex;
} bytelevel_pt;

typedef struct bl_ctx {
    const char *src;
    ps_tok_pieces *out;
    bool at_start;
    size_t start_upto;
} bl_ctx;

/* One match of the regex, mapped byte by byte into the pool. */
static int bl_piece(void *ctx, size_t off, size_t len, bool is_match)
{
    (void)is_match; /* Isolated: matches and the text between alike */
    bl_ctx *x = ctx;
    if (!len)
        return PS_OK;
    ps_tok_buf *pool = &x->out->pool;
    if (ps_tok_buf_reserve(pool, 2 * len))
        return PS_ENOMEM;
    size_t base = pool->len;
    unsigned char *w = (unsigned char *)pool->p + base;
    const unsigned char *r = (const unsigned char *)x->src + off;
    for (size_t i = 0; i < len; i++) {
        if (r[i] >= '!' && r[i] <= '~') { /* printable ASCII stands for itself */
            *w++ = r[i];
            continue;
        }
        uint32_t cp = ps_tok_bytelevel_char(r[i]);
        if (cp < 0x80) {
            *w++ = (unsigned char)cp;
        } else { /* all of the alphabet lies below U+0800: two bytes */
            *w++ = (unsigned char)(0xC0 | (cp >> 6));
            *w++ = (unsigned char)(0x80 | (cp & 0x3F));
        }
    }
    size_t n = (size_t)((char *)w - (pool->p + base));
    pool->len += n;
    return ps_pretok_push_ref(x->out, base, n, x->at_start && off <= x->start_upto);
}

static int bl_split(const ps_tok_pretok *p, const char *s, size_t n, bool at_start,
                    ps_tok_pieces *out)
{
    const bytelevel_pt *q = (const bytelevel_pt *)p;
    if (!n)
        return PS_OK; /* prepend() leaves an empty string empty */
    char stack[512], *heap = NULL;
    const char *src = s;
    bool prefix = q->add_prefix_space && s[0] != ' ';
    if (prefix) {
        char *b = n + 1 <= sizeof stack ? stack : (heap = malloc(n + 1));
        if (!b)
            return PS_ENOMEM;
        b[0] = ' ';
        memcpy(b + 1, s, n);
        src = b;
        n++;
    }
    bl_ctx x = {.src = src, .out = out, .at_start = at_start, .start_upto = prefix ? 1 : 0};
    int rc = q->use_regex ? ps_pretok_scan_split(PS_SCAN_GPT2, src, n, bl_piece, &x)
                          : bl_piece(&x, 0, n, true);
    free(heap);
    return rc;
}

static void bl_destroy(ps_tok_pretok *p) { free(p); }

int ps_pretok_bytelevel_load(const ps_tok_load *c, json_t *j, const char *jpath,
                             ps_tok_pretok **out)
{
    bytelevel_pt *q = (bytelevel_pt *)ps_pretok_new(sizeof *q, bl_split, bl_destroy);
    if (!q)
        return ps_tok_load_fail(c, PS_ENOMEM, jpath, "out of memory");
    q->use_regex = true; /* serde default */
    bool trim = false;
    int rc;
    if ((rc = ps_pretok_require(c, j, jpath, "add_prefix_space")) ||
        (rc = ps_pretok_require(c, j, jpath, "trim_offsets")) ||
        (rc = ps_tok_json_bool(c, j, jpath, "add_prefix_space", &q->add_prefix_space)) ||
        (rc = ps_tok_json_bool(c, j, jpath, "trim_offsets", &trim)) ||
        (rc = ps_tok_json_bool(c, j, jpath, "use_regex", &q->use_regex))) {
        free(q);
        return rc;
    }
    *out = &q->base;
    return PS_OK;
}
