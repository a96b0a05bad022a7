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
