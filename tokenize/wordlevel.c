/*
 * The WordLevel model (tokenizers 0.23.2 models/wordlevel): a piece is one
 * id, or the unk token's id, or an error when the vocabulary lacks the unk
 * token. "vocab" and "unk_token" (a string) are both required.
 */
#include "tokenize/hf.h"

#include <stdlib.h>
#include <string.h>

typedef struct wordlevel {
    ps_tok_model base;
    char *unk;
} wordlevel;

static void wl_destroy(ps_tok_model *model)
{
    wordlevel *m = (wordlevel *)model;
    if (!m)
        return;
    ps_tok_vocab_free(&m->base.vocab);
    free(m->unk);
    free(m);
}

static int wl_encode(const ps_tok_model *model, ps_tok_work_slot *slot, const char *s, size_t n,
                     ps_tok_ids *out, ps_error *err)
{
    const wordlevel *m = (const wordlevel *)model;
    (void)slot;
    int32_t id = ps_tok_vocab_find(&m->base.vocab, s, n);
    if (id < 0)
        id = m->base.unk_id;
    if (id < 0)
        return ps_error_set(err, PS_EINVAL, "WordLevel: '%.*s' is not in the vocabulary and the "
                            "unk token '%s' is not either", (int)(n > 60 ? 60 : n), s, m->unk);
    return ps_tok_ids_push(out, id) ? ps_error_set(err, PS_ENOMEM, "out of memory") : PS_OK;
}

/* A required string member. */
static int need_string(const ps_tok_load *c, json_t *j, const char *jpath, const char *key,
                       const char **out)
{
    json_t *v = json_object_get(j, key);
    if (json_is_string(v)) {
        *out = json_string_value(v);
        return PS_OK;
    }
    return ps_tok_load_fail_key(c, PS_EFORMAT, jpath, key, v ? "expected a string" : "missing");
}

int ps_tok_wordlevel_load(const ps_tok_load *c, json_t *j, const char *jpath, ps_tok_model **out)
{
    *out = NULL;
    if (!json_is_object(j))
        return ps_tok_load_fail(c, PS_EFORMAT, jpath, "expected an object");
    const char *type = ps_tok_json_type(j), *unk = NULL;
    char where[256];
    if (json_object_get(j, "type") && (!type || strcmp(type, "WordLevel")))
        return ps_tok_load_fail_key(c, PS_EFORMAT, jpath, "type", "expected \"WordLevel\"");
    int rc = need_string(c, j, jpath, "unk_token", &unk);
    if (!rc && !json_object_get(j, "vocab"))
        rc = ps_tok_load_fail_key(c, PS_EFORMAT, jpath, "vocab", "missing");
    if (rc)
        return rc;
    wordlevel *m = calloc(1, sizeof *m);
    if (!m || !(m->unk = strdup(unk))) {
        free(m);
        return ps_error_set(c->err, PS_ENOMEM, "out of memory");
    }
    m->base = (ps_tok_model){.kind = PS_TOK_MODEL_WORDLEVEL, .unk_id = -1, .encode = wl_encode,
                             .destroy = wl_destroy};
    ps_tok_vocab_init(&m->base.vocab);
    rc = ps_tok_model_vocab(c, json_object_get(j, "vocab"),
                            ps_tok_jpath_key(where, sizeof where, jpath, "vocab"), &m->base.vocab);
    if (rc) {
        wl_destroy(&m->base);
        return rc;
    }
    m->base.unk_id = ps_tok_vocab_find(&m->base.vocab, m->unk, strlen(m->unk));
    *out = &m->base;
    return PS_OK;
}
