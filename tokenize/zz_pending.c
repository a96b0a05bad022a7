/*
 * TEMPORARY (removed when the component files land): weak definitions so
 * (named zz_ so the archive lists it last: a real definition is found first)
 * the library links while the tokenizer.json components are written. Each
 * loader refuses with PS_EUSAGE, so behaviour is today's: a non-BERT
 * tokenizer.json is refused.
 */
#include "tokenize/hf.h"

#define WEAK __attribute__((weak))

WEAK int ps_tok_norm_load(const ps_tok_load *c, json_t *j, const char *jpath, ps_tok_norm **out)
{
    *out = NULL;
    if (!j || json_is_null(j))
        return PS_OK;
    return ps_tok_load_fail(c, PS_EUSAGE, jpath, "only BertNormalizer (or null) is supported");
}
WEAK int ps_tok_norm_apply(const ps_tok_norm *n, ps_tok_buf *io, ps_tok_buf *tmp)
{
    return n ? n->apply(n, io, tmp) : PS_OK;
}
WEAK void ps_tok_norm_free(ps_tok_norm *n) { if (n) n->destroy(n); }
WEAK int ps_tok_pretok_load(const ps_tok_load *c, json_t *j, const char *jpath, ps_tok_pretok **out)
{
    *out = NULL;
    (void)j;
    return ps_tok_load_fail(c, PS_EUSAGE, jpath, "only the BERT WordPiece pipeline is supported");
}
WEAK int ps_tok_pretok_apply(const ps_tok_pretok *p, ps_tok_pieces *io, ps_tok_pieces *tmp)
{
    (void)p, (void)io, (void)tmp;
    return PS_EUSAGE;
}
WEAK void ps_tok_pretok_free(ps_tok_pretok *p) { if (p) p->destroy(p); }
WEAK int ps_tok_model_load(const ps_tok_load *c, json_t *j, const char *jpath, ps_tok_model **out)
{
    *out = NULL;
    (void)j;
    return ps_tok_load_fail(c, PS_EUSAGE, jpath, "only WordPiece models are supported");
}
WEAK void ps_tok_model_free(ps_tok_model *m) { if (m) m->destroy(m); }
WEAK int ps_tok_added_load(const ps_tok_load *c, json_t *j, const char *jpath, const ps_tok_norm *norm,
                           ps_tok_added **out)
{
    (void)c, (void)j, (void)jpath, (void)norm;
    *out = NULL;
    return PS_EUSAGE;
}
WEAK int ps_tok_added_split(const ps_tok_added *a, bool normalized, const char *s, size_t n,
                            ps_tok_segs *out)
{
    (void)a, (void)normalized, (void)s, (void)n, (void)out;
    return PS_EUSAGE;
}
WEAK int32_t ps_tok_added_find(const ps_tok_added *a, const char *s, size_t n)
{
    (void)a, (void)s, (void)n;
    return -1;
}
WEAK const char *ps_tok_added_token(const ps_tok_added *a, int32_t id, bool *special)
{
    (void)a, (void)id, (void)special;
    return NULL;
}
WEAK int32_t ps_tok_added_max_id(const ps_tok_added *a) { (void)a; return -1; }
WEAK void ps_tok_added_free(ps_tok_added *a) { (void)a; }
WEAK int ps_tok_post_load(const ps_tok_load *c, json_t *j, const char *jpath, ps_tok_post **out)
{
    (void)c, (void)j, (void)jpath;
    *out = NULL;
    return PS_EUSAGE;
}
WEAK size_t ps_tok_post_added(const ps_tok_post *p, bool pair) { (void)p, (void)pair; return 0; }
WEAK int ps_tok_post_apply(const ps_tok_post *p, const int32_t *a, size_t na, const int32_t *b,
                           size_t nb, bool pair, ps_tok_ids *ids, ps_tok_buf *types)
{
    (void)p, (void)a, (void)na, (void)b, (void)nb, (void)pair, (void)ids, (void)types;
    return PS_EUSAGE;
}
WEAK void ps_tok_post_free(ps_tok_post *p) { (void)p; }
WEAK int ps_tok_decoder_load(const ps_tok_load *c, json_t *j, const char *jpath,
                             ps_tok_decoder **out)
{
    (void)c, (void)j, (void)jpath;
    *out = NULL;
    return PS_OK;
}
WEAK void ps_tok_decoder_free(ps_tok_decoder *d) { if (d) d->destroy(d); }
WEAK int ps_tok_decode(const ps_tok_decoder *d, ps_tok_pieces *toks, ps_tok_pieces *tmp,
                       ps_tok_buf *out)
{
    (void)d, (void)toks, (void)tmp, (void)out;
    return PS_EUSAGE;
}
