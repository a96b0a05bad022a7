/*
 * Loading a HuggingFace tokenizer.json. A file whose pipeline is BERT's
 * takes the fused WordPiece path below; any other goes to the general
 * pipeline (hf_load.c). The BERT path:
 * WordPiece model, BertNormalizer (or none), BertPreTokenizer,
 * BertProcessing or TemplateProcessing of the [CLS] $A [SEP] $B:1 [SEP]:1
 * shape, and added tokens matched verbatim in the raw text; anything else
 * returns PS_EUSAGE from here, and the general loader takes over.
 * "truncation" and "padding" in the file are ignored: callers pass
 * max_length explicitly.
 */
#include "common/json_where.h"
#include "tokenize/hf.h"
#include "tokenize/tokenize.h"
#include "tokenize/unicode_check.h"

#include <jansson.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

typedef struct ctx {
    const char *path;
    ps_error *err;
} ctx;

static int bad(const ctx *c, int code, const char *what, const char *why)
{
    return ps_error_set(c->err, code, "%s: %s: %s", c->path, what, why);
}

/* Optional boolean member: absent keeps *out. */
static int get_bool(const ctx *c, json_t *obj, const char *key, const char *where, int *out)
{
    json_t *v = json_object_get(obj, key);
    if (!v)
        return PS_OK;
    if (!json_is_boolean(v)) {
        char what[128];
        snprintf(what, sizeof what, "%s.%s", where, key);
        return bad(c, PS_EFORMAT, what, "expected true or false");
    }
    *out = json_is_true(v);
    return PS_OK;
}

static const char *type_of(json_t *obj)
{
    json_t *t = json_object_get(obj, "type");
    return json_is_string(t) ? json_string_value(t) : NULL;
}

static int read_normalizer(const ctx *c, json_t *n, ps_tokenizer_options *opt)
{
    if (!n || json_is_null(n)) { /* no normalizer: text goes to the pre-tokenizer as is */
        opt->lowercase = opt->clean_text = opt->handle_chinese_chars = 0;
        opt->strip_accents = 0;
        return PS_OK;
    }
    const char *type = type_of(n);
    if (!type || strcmp(type, "BertNormalizer"))
        return bad(c, PS_EUSAGE, "normalizer", "only BertNormalizer (or null) is supported");
    int rc;
    if ((rc = get_bool(c, n, "clean_text", "normalizer", &opt->clean_text)) ||
        (rc = get_bool(c, n, "handle_chinese_chars", "normalizer", &opt->handle_chinese_chars)) ||
        (rc = get_bool(c, n, "lowercase", "normalizer", &opt->lowercase)))
        return rc;
    json_t *sa = json_object_get(n, "strip_accents");
    if (!sa || json_is_null(sa))
        opt->strip_accents = -1; /* follow lowercase */
    else if (json_is_boolean(sa))
        opt->strip_accents = json_is_true(sa);
    else
        return bad(c, PS_EFORMAT, "normalizer.strip_accents", "expected true, false or null");
    return PS_OK;
}

/* read_model's loop over the pre-parsed vocabulary (fastload.c): the same
 * checks and calls in the same order; a duplicated key (jansson keeps one,
 * at its first place) or any failure sends the load to the plain path. */
static int read_pre_vocab(const ctx *c, ps_tok_pre *pre, ps_tokenizer *tok)
{
    pre->vocab_used = true;
    int64_t id_limit = (int64_t)pre->n_vocab * 16 + 65536;
    int rc = PS_OK;
    for (size_t i = 0; i < pre->n_vocab && !rc; i++) {
        const ps_tok_pre_entry *e = &pre->vocab[i];
        size_t before = tok->vocab.n_keys;
        if (e->id >= id_limit || e->id >= (int64_t)PS_TOK_MAX_TOKENS)
            rc = PS_ELIMIT;
        else if (!(rc = ps_tok_vocab_set(&tok->vocab, e->key, e->len, (int32_t)e->id)) &&
                 tok->vocab.n_keys == before)
            rc = PS_EFORMAT;
    }
    if (!rc && !tok->vocab.n_keys)
        rc = PS_EFORMAT;
    if (!rc)
        return PS_OK;
    pre->failed = true;
    return bad(c, rc, "model.vocab", "left to the plain path");
}

static int read_model(const ctx *c, json_t *m, ps_tokenizer *tok, ps_tokenizer_options *opt)
{
    if (!json_is_object(m))
        return bad(c, PS_EFORMAT, "model", "missing or not an object");
    const char *type = type_of(m);
    if (type && strcmp(type, "WordPiece"))
        return bad(c, PS_EUSAGE, "model.type", "only WordPiece models are supported");
    json_t *v = json_object_get(m, "unk_token");
    if (v && !json_is_string(v))
        return bad(c, PS_EFORMAT, "model.unk_token", "expected a string");
    if (v)
        opt->unk_token = json_string_value(v);
    v = json_object_get(m, "continuing_subword_prefix");
    if (v && !json_is_string(v))
        return bad(c, PS_EFORMAT, "model.continuing_subword_prefix", "expected a string");
    if (v)
        opt->continuing_subword_prefix = json_string_value(v);
    v = json_object_get(m, "max_input_chars_per_word");
    if (v) {
        if (!json_is_integer(v) || json_integer_value(v) < 1)
            return bad(c, PS_EFORMAT, "model.max_input_chars_per_word", "expected a positive integer");
        opt->max_input_chars_per_word = (size_t)json_integer_value(v);
    }
    json_t *vocab = json_object_get(m, "vocab");
    if (!json_is_object(vocab))
        return bad(c, PS_EFORMAT, "model.vocab", "missing or not an object");
    ps_tok_pre *pre = ps_tok_pre_for(vocab);
    if (pre && vocab == pre->vocab_stub)
        return read_pre_vocab(c, pre, tok);
    /* ids index an array, so a hostile file must not make it huge: allow
     * holes, but not ids far beyond the number of tokens */
    json_int_t id_limit = (json_int_t)json_object_size(vocab) * 16 + 65536;
    const char *key;
    json_t *idv;
    json_object_foreach(vocab, key, idv) {
        if (json_is_integer(idv) && json_integer_value(idv) >= id_limit &&
            json_integer_value(idv) < (json_int_t)PS_TOK_MAX_TOKENS) {
            char what[96];
            snprintf(what, sizeof what, "model.vocab[\"%.60s\"]", key);
            return bad(c, PS_ELIMIT, what, "id far beyond the number of tokens (too sparse)");
        }
        if (!json_is_integer(idv) || json_integer_value(idv) < 0 ||
            json_integer_value(idv) >= (json_int_t)PS_TOK_MAX_TOKENS) {
            char what[96];
            snprintf(what, sizeof what, "model.vocab[\"%.60s\"]", key);
            return bad(c, PS_EFORMAT, what, "id is not an integer in 0..2^31-2");
        }
        int rc = ps_tok_vocab_set(&tok->vocab, key, strlen(key), (int32_t)json_integer_value(idv));
        if (rc) {
            char what[96];
            snprintf(what, sizeof what, "model.vocab[\"%.60s\"]", key);
            return bad(c, rc, what, ps_strerror(rc));
        }
    }
    if (!tok->vocab.n_keys)
        return bad(c, PS_EFORMAT, "model.vocab", "empty vocabulary");
    return PS_OK;
}

/* The id of a TemplateProcessing special token, and its name. */
static int template_special(const ctx *c, json_t *pp, json_t *piece, const char **name,
                            int32_t *id)
{
    json_t *st = json_object_get(piece, "SpecialToken");
    json_t *nm = st ? json_object_get(st, "id") : NULL;
    if (!json_is_string(nm))
        return bad(c, PS_EUSAGE, "post_processor", "template is not BERT's [CLS] $A [SEP] $B:1 [SEP]:1");
    *name = json_string_value(nm);
    json_t *def = json_object_get(json_object_get(pp, "special_tokens"), *name);
    json_t *ids = def ? json_object_get(def, "ids") : NULL;
    if (!json_is_array(ids) || json_array_size(ids) != 1 || !json_is_integer(json_array_get(ids, 0)))
        return bad(c, PS_EUSAGE, "post_processor.special_tokens", "each special token must have one id");
    json_int_t v = json_integer_value(json_array_get(ids, 0));
    if (v < 0 || v >= (json_int_t)PS_TOK_MAX_TOKENS)
        return bad(c, PS_EFORMAT, "post_processor.special_tokens", "id out of range");
    *id = (int32_t)v;
    return PS_OK;
}

static bool piece_is(json_t *piece, const char *kind, const char *id, int type_id)
{
    json_t *p = json_object_get(piece, kind);
    if (!p)
        return false;
    json_t *t = json_object_get(p, "type_id");
    if (!json_is_integer(t) || json_integer_value(t) != type_id)
        return false;
    if (!id)
        return true;
    json_t *i = json_object_get(p, "id");
    return json_is_string(i) && !strcmp(json_string_value(i), id);
}

static int read_post_processor(const ctx *c, json_t *pp, ps_tokenizer *tok,
                               ps_tokenizer_options *opt)
{
    const char *type = pp ? type_of(pp) : NULL;
    if (type && !strcmp(type, "BertProcessing")) {
        json_t *sep = json_object_get(pp, "sep"), *cls = json_object_get(pp, "cls");
        if (!json_is_array(sep) || !json_is_array(cls) || !json_is_string(json_array_get(sep, 0)) ||
            !json_is_integer(json_array_get(sep, 1)) || !json_is_string(json_array_get(cls, 0)) ||
            !json_is_integer(json_array_get(cls, 1)))
            return bad(c, PS_EFORMAT, "post_processor", "BertProcessing needs sep and cls as [token, id]");
        opt->sep_token = json_string_value(json_array_get(sep, 0));
        opt->cls_token = json_string_value(json_array_get(cls, 0));
        tok->sep_id = (int32_t)json_integer_value(json_array_get(sep, 1));
        tok->cls_id = (int32_t)json_integer_value(json_array_get(cls, 1));
        return PS_OK;
    }
    if (!type || strcmp(type, "TemplateProcessing"))
        return bad(c, PS_EUSAGE, "post_processor", "only BertProcessing or TemplateProcessing is supported");
    json_t *single = json_object_get(pp, "single"), *pair = json_object_get(pp, "pair");
    if (!json_is_array(single) || json_array_size(single) != 3 || !json_is_array(pair) ||
        json_array_size(pair) != 5)
        return bad(c, PS_EUSAGE, "post_processor", "template is not BERT's [CLS] $A [SEP] $B:1 [SEP]:1");
    const char *cls, *sep, *name;
    int32_t cls_id, sep_id, id;
    int rc;
    if ((rc = template_special(c, pp, json_array_get(single, 0), &cls, &cls_id)) ||
        (rc = template_special(c, pp, json_array_get(single, 2), &sep, &sep_id)))
        return rc;
    bool ok = piece_is(json_array_get(single, 0), "SpecialToken", cls, 0) &&
              piece_is(json_array_get(single, 1), "Sequence", "A", 0) &&
              piece_is(json_array_get(single, 2), "SpecialToken", sep, 0) &&
              piece_is(json_array_get(pair, 0), "SpecialToken", cls, 0) &&
              piece_is(json_array_get(pair, 1), "Sequence", "A", 0) &&
              piece_is(json_array_get(pair, 2), "SpecialToken", sep, 0) &&
              piece_is(json_array_get(pair, 3), "Sequence", "B", 1) &&
              piece_is(json_array_get(pair, 4), "SpecialToken", sep, 1);
    if (!ok || template_special(c, pp, json_array_get(pair, 4), &name, &id) || id != sep_id)
        return bad(c, PS_EUSAGE, "post_processor", "template is not BERT's [CLS] $A [SEP] $B:1 [SEP]:1");
    opt->cls_token = cls;
    opt->sep_token = sep;
    tok->cls_id = cls_id;
    tok->sep_id = sep_id;
    return PS_OK;
}

static int read_added_tokens(const ctx *c, json_t *added, ps_tokenizer *tok)
{
    if (!added || json_is_null(added))
        return PS_OK;
    if (!json_is_array(added))
        return bad(c, PS_EFORMAT, "added_tokens", "expected an array");
    size_t i;
    json_t *t;
    json_array_foreach(added, i, t) {
        char what[64];
        snprintf(what, sizeof what, "added_tokens[%zu]", i);
        json_t *content = json_object_get(t, "content"), *id = json_object_get(t, "id");
        if (!json_is_string(content) || !json_string_length(content) || !json_is_integer(id) ||
            json_integer_value(id) < 0 || json_integer_value(id) >= (json_int_t)PS_TOK_MAX_TOKENS)
            return bad(c, PS_EFORMAT, what, "needs a non-empty \"content\" and an integer \"id\"");
        static const char *const unsupported[] = {"single_word", "lstrip", "rstrip", "normalized"};
        for (size_t k = 0; k < 4; k++)
            if (json_is_true(json_object_get(t, unsupported[k]))) {
                char why[96];
                snprintf(why, sizeof why, "\"%s\": true is not supported", unsupported[k]);
                return bad(c, PS_EUSAGE, what, why);
            }
        int rc = ps_tok_add_special(tok, json_string_value(content), json_string_length(content),
                                    (int32_t)json_integer_value(id));
        if (rc)
            return bad(c, rc, what, ps_strerror(rc));
    }
    return PS_OK;
}

/* The fused BERT path: WordPiece + BertNormalizer + BertPreTokenizer +
 * BERT's template. PS_EUSAGE when the file is anything else. */
static int load_bert(const ctx *c, json_t *root, ps_tokenizer **out)
{
    ps_tokenizer *tok = ps_tok_alloc();
    ps_tokenizer_options opt;
    ps_tokenizer_options_init(&opt);
    if (!tok)
        return ps_error_set(c->err, PS_ENOMEM, "out of memory");
    int rc = PS_OK;
    const char *pre = type_of(json_object_get(root, "pre_tokenizer"));
    if (!pre || strcmp(pre, "BertPreTokenizer"))
        rc = bad(c, PS_EUSAGE, "pre_tokenizer", "only BertPreTokenizer is supported");
    if (!rc)
        rc = read_normalizer(c, json_object_get(root, "normalizer"), &opt);
    if (!rc)
        rc = read_model(c, json_object_get(root, "model"), tok, &opt);
    if (!rc)
        rc = read_post_processor(c, json_object_get(root, "post_processor"), tok, &opt);
    if (!rc)
        rc = read_added_tokens(c, json_object_get(root, "added_tokens"), tok);
    if (!rc)
        rc = ps_tok_finish(tok, &opt, c->err); /* copies the strings out of `root` */
    if (!rc && !(tok->model_type = strdup("WordPiece")))
        rc = ps_error_set(c->err, PS_ENOMEM, "out of memory");
    if (rc) {
        ps_tokenizer_free(tok);
        return rc;
    }
    *out = tok;
    return PS_OK;
}

/* The load from a parsed root: the fused BERT path, else the general one;
 * then the host's Unicode versions, unless any_host (unicode_check.h). */
static int load_root(const char *path, json_t *root, bool any_host, ps_tokenizer **out,
                     ps_error *err)
{
    ctx c = {path, err};
    unsigned regexes = 0;
    ps_tok_load lc = {path, err, &regexes};
    int rc;
    if (!json_is_object(root))
        rc = bad(&c, PS_EFORMAT, "top level", "expected an object");
    else if (!(rc = ps_tok_check_serde(&lc, root)))
        rc = load_bert(&c, root, out);
    if (rc == PS_EUSAGE) /* not BERT's pipeline: the general one */
        rc = ps_tok_hf_load(&lc, root, out);
    if (!rc && (rc = ps_tok_unicode_check(*out, path, regexes, any_host, err))) {
        ps_tokenizer_free(*out);
        *out = NULL;
    }
    /* what the shared vocabulary code says ("out of memory building the
     * vocabulary trie") names no file: name it */
    size_t pl = strlen(path);
    if (rc < 0 && err && (strncmp(err->message, path, pl) || err->message[pl] != ':')) {
        char why[PS_ERROR_MESSAGE_MAX];
        snprintf(why, sizeof why, "%s", err->message);
        ps_error_set(err, rc, "%s: %s", path, why);
    }
    return rc;
}

static _Atomic bool fast_off;
static _Atomic unsigned long fast_hits;

void ps_tok_fastload_enable(bool on) { fast_off = !on; }

unsigned long ps_tok_fastload_hits(void) { return fast_hits; }

/* The fast path (fastload.c): true with *out loaded, or false when the
 * plain path must do the load (and say what is wrong, if anything is). */
static bool load_fast(const char *path, const char *data, size_t len, bool any_host,
                      ps_tokenizer **out, ps_error *err)
{
    ps_tok_pre pre;
    char *text;
    size_t text_len;
    if (fast_off || ps_tok_pre_parse(data, len, &pre, &text, &text_len))
        return false;
    json_error_t jerr;
    json_t *root = ps_json_loadb(text, text_len, 0, &jerr);
    free(text);
    ps_error quiet = {0};
    int rc = PS_EFORMAT;
    if (root && ps_tok_pre_bind(&pre, root)) {
        ps_tok_pre_current = &pre;
        rc = load_root(path, root, any_host, out, &quiet);
        ps_tok_pre_current = NULL;
        if (!rc && !ps_tok_pre_complete(&pre)) { /* a stub was read as JSON */
            ps_tokenizer_free(*out);
            *out = NULL;
            rc = PS_EFORMAT;
        }
    }
    json_decref(root);
    ps_tok_pre_free(&pre);
    if (rc != PS_OK)
        return false;
    fast_hits++;
    if (err) /* what the plain path leaves there too (the BERT path's refusal) */
        *err = quiet;
    return true;
}

int ps_tokenizer_load_json(const char *path, ps_tokenizer **out, ps_error *err)
{
    return ps_tok_load_json_host(path, false, out, err);
}

int ps_tok_load_json_host(const char *path, bool any_host, ps_tokenizer **out, ps_error *err)
{
    if (!path || !out)
        return ps_error_set(err, PS_EINVAL, "ps_tokenizer_load_json: bad arguments");
    *out = NULL;
    char *data;
    size_t len;
    int rc = ps_file_read_all(path, "tokenizer.json", PS_TOK_FILE_MAX, &data, &len, err);
    if (rc)
        return rc;
    if (load_fast(path, data, len, any_host, out, err)) {
        free(data);
        return PS_OK;
    }
    json_error_t jerr;
    json_t *root = ps_json_loadb(data, len, 0, &jerr);
    free(data);
    if (!root)
        return ps_json_load_error(err, path, &jerr);
    rc = load_root(path, root, any_host, out, err);
    json_decref(root);
    return rc;
}
