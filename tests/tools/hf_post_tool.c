/* hf_post_tool: drives the added-token, post-processor and decoder
 * components of a tokenizer.json (tokenize/hf.h) for the differential test
 * against HuggingFace tokenizers (tests/conformance/post.js), until the
 * whole-file orchestration runs them.
 *
 *   hf_post_tool TOKENIZER.json < requests
 *
 * The file's model must be a WordLevel (its vocab and unk_token are read
 * here); its normalizer null or Lowercase (ASCII only, enough for the
 * tests), its pre_tokenizer null or WhitespaceSplit (ASCII whitespace).
 * Each request line is a JSON object, answered by one line:
 *   {"a": S, "b": S?}          -> {"ids": [...], "types": [...]}
 *   {"ids": [...], "skip": B}  -> {"text": S}   (HF's Tokenizer.decode)
 *   {"tokens": [...]}          -> {"text": S}   (the decoder alone)
 * A load failure prints "load: CODE: MESSAGE" and exits 1; a request that
 * fails prints {"error": CODE}. */
#include "tokenize/hf.h"
#include "tokenize/unicode.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct tool {
    ps_tok_vocab vocab;
    int32_t unk;
    bool lower, ws_split;
    ps_tok_model model;
    ps_tok_added *added;
    ps_tok_post *post;
    ps_tok_decoder *dec;
} tool;

static int lower_apply(const ps_tok_norm *n, ps_tok_buf *io, ps_tok_buf *tmp)
{
    (void)n;
    (void)tmp;
    for (size_t i = 0; i < io->len; i++)
        if (io->p[i] >= 'A' && io->p[i] <= 'Z')
            io->p[i] = (char)(io->p[i] - 'A' + 'a');
    return 0;
}

static ps_tok_norm lower_norm = {lower_apply, NULL};


static int load_model(tool *t, json_t *m)
{
    json_t *v = json_object_get(m, "vocab");
    const char *k;
    json_t *id;
    ps_tok_vocab_init(&t->vocab);
    json_object_foreach(v, k, id)
    {
        if (ps_tok_vocab_set(&t->vocab, k, strlen(k), (int32_t)json_integer_value(id)))
            return -1;
    }
    const char *unk = json_string_value(json_object_get(m, "unk_token"));
    t->unk = unk ? ps_tok_vocab_find(&t->vocab, unk, strlen(unk)) : -1;
    t->model.kind = PS_TOK_MODEL_WORDLEVEL;
    t->model.vocab = t->vocab;
    return 0;
}

static void tool_free(tool *t)
{
    ps_tok_added_free(t->added);
    ps_tok_post_free(t->post);
    ps_tok_decoder_free(t->dec);
    ps_tok_vocab_free(&t->vocab);
}

static int load(tool *t, const char *path, ps_error *err)
{
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    if (!root)
        return ps_error_set(err, PS_EFORMAT, "%s: %s", path, je.text);
    ps_tok_load c = {path, err, NULL};
    json_t *norm = json_object_get(root, "normalizer");
    json_t *pre = json_object_get(root, "pre_tokenizer");
    t->lower = norm && !json_is_null(norm);
    t->ws_split = pre && !json_is_null(pre);
    int rc = load_model(t, json_object_get(root, "model"));
    if (!rc)
        rc = ps_tok_added_load_model(&c, json_object_get(root, "added_tokens"), "added_tokens",
                                     t->lower ? &lower_norm : NULL, &t->model, &t->added);
    if (!rc)
        rc = ps_tok_post_load(&c, json_object_get(root, "post_processor"), "post_processor",
                              &t->post);
    if (!rc)
        rc = ps_tok_decoder_load(&c, json_object_get(root, "decoder"), "decoder", &t->dec);
    json_decref(root);
    return rc;
}

/* Bytes of the white space character at s[0..n), or 0. */
static size_t space_at(const char *s, size_t n)
{
    uint32_t cp;
    unsigned l = ps_tok_utf8_decode((const unsigned char *)s, n, &cp);
    return l && ps_is_white_space(cp) ? l : 0;
}

/* WordLevel on each piece (WhitespaceSplit: runs of non-space). */
static int model_ids(const tool *t, const char *s, size_t n, ps_tok_ids *ids)
{
    size_t i = 0, l;
    while (i < n) {
        size_t b = i;
        while (t->ws_split && b < n && (l = space_at(s + b, n - b)))
            b += l;
        size_t e = b;
        while (e < n && !(t->ws_split && space_at(s + e, n - e)))
            e++;
        if (e > b) {
            int32_t id = ps_tok_vocab_find(&t->vocab, s + b, e - b);
            if (ps_tok_ids_push(ids, id >= 0 ? id : t->unk))
                return PS_ENOMEM;
        }
        i = e;
    }
    return 0;
}

/* HF's extract_and_normalize, then the model on what is left. */
static int encode_one(const tool *t, const char *s, size_t n, ps_tok_ids *ids)
{
    ps_tok_segs raw = {0}, nseg = {0};
    ps_tok_buf io = {0}, tmp = {0};
    int rc = ps_tok_added_split(t->added, false, s, n, &raw);
    for (size_t i = 0; i < raw.n && !rc; i++) {
        if (raw.v[i].id >= 0) {
            rc = ps_tok_ids_push(ids, raw.v[i].id);
            continue;
        }
        io.len = 0;
        if ((rc = ps_tok_buf_put(&io, s + raw.v[i].off, raw.v[i].len)) ||
            (rc = t->lower ? lower_apply(&lower_norm, &io, &tmp) : 0) ||
            (rc = ps_tok_added_split(t->added, true, io.p, io.len, &nseg)))
            break;
        for (size_t k = 0; k < nseg.n && !rc; k++)
            rc = nseg.v[k].id >= 0 ? ps_tok_ids_push(ids, nseg.v[k].id)
                                   : model_ids(t, io.p + nseg.v[k].off, nseg.v[k].len, ids);
    }
    ps_tok_segs_free(&raw);
    ps_tok_segs_free(&nseg);
    ps_tok_buf_free(&io);
    ps_tok_buf_free(&tmp);
    return rc;
}

static json_t *do_encode(const tool *t, json_t *req)
{
    json_t *a = json_object_get(req, "a"), *b = json_object_get(req, "b");
    bool pair = json_is_string(b);
    ps_tok_ids ia = {0}, ib = {0}, out = {0};
    ps_tok_buf types = {0};
    int rc = encode_one(t, json_string_value(a), json_string_length(a), &ia);
    if (!rc && pair)
        rc = encode_one(t, json_string_value(b), json_string_length(b), &ib);
    if (!rc)
        rc = ps_tok_post_apply(t->post, ia.v, ia.n, ib.v, ib.n, pair, &out, &types);
    json_t *res = json_object();
    if (rc) {
        json_object_set_new(res, "error", json_integer(rc));
    } else {
        json_t *ji = json_array(), *jt = json_array();
        for (size_t i = 0; i < out.n; i++) {
            json_array_append_new(ji, json_integer(out.v[i]));
            json_array_append_new(jt, json_integer((unsigned char)types.p[i]));
        }
        json_object_set_new(res, "ids", ji);
        json_object_set_new(res, "types", jt);
        json_object_set_new(res, "added", json_integer((json_int_t)ps_tok_post_added(t->post, pair)));
    }
    ps_tok_ids_free(&ia);
    ps_tok_ids_free(&ib);
    ps_tok_ids_free(&out);
    ps_tok_buf_free(&types);
    return res;
}

/* HF's Tokenizer::decode: added token (its decode form), else the model's;
 * special ones dropped when asked. */
static int gather(const tool *t, json_t *ids, bool skip, ps_tok_pieces *toks)
{
    for (size_t i = 0; i < json_array_size(ids); i++) {
        int32_t id = (int32_t)json_integer_value(json_array_get(ids, i));
        bool special = false;
        const char *s = ps_tok_added_token(t->added, id, &special);
        if (!s && id >= 0 && (size_t)id < t->vocab.n_ids && t->vocab.tok_off[id] != SIZE_MAX) {
            s = t->vocab.pool + t->vocab.tok_off[id];
            special = ps_tok_added_is_special(t->added, s, strlen(s));
        }
        if (!s || (skip && special))
            continue;
        if (ps_tok_pieces_push(toks, s, strlen(s), false))
            return PS_ENOMEM;
    }
    return 0;
}

static json_t *do_decode(const tool *t, json_t *req)
{
    ps_tok_pieces toks = {0}, tmp = {0};
    ps_tok_buf out = {0};
    json_t *list = json_object_get(req, "tokens");
    int rc = 0;
    if (list) {
        for (size_t i = 0; i < json_array_size(list) && !rc; i++) {
            json_t *s = json_array_get(list, i);
            rc = ps_tok_pieces_push(&toks, json_string_value(s), json_string_length(s), false);
        }
    } else {
        rc = gather(t, json_object_get(req, "ids"), json_is_true(json_object_get(req, "skip")),
                    &toks);
    }
    if (!rc)
        rc = ps_tok_decode(t->dec, &toks, &tmp, &out);
    json_t *res = json_object();
    if (rc)
        json_object_set_new(res, "error", json_integer(rc));
    else
        json_object_set_new(res, "text", json_stringn(out.p ? out.p : "", out.len));
    ps_tok_pieces_free(&toks);
    ps_tok_pieces_free(&tmp);
    ps_tok_buf_free(&out);
    return res;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: hf_post_tool TOKENIZER.json < requests\n");
        return 2;
    }
    tool t = {0};
    ps_error err = {0};
    int rc = load(&t, argv[1], &err);
    if (rc) { /* free what did load: a sanitizer build checks for leaks at exit */
        printf("load: %s: %s\n", ps_err_name(rc), err.message);
        fflush(stdout);
        tool_free(&t);
        return 1;
    }
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, stdin) > 0) {
        json_error_t je;
        json_t *req = json_loads(line, 0, &je);
        if (!req)
            break;
        json_t *res = json_object_get(req, "a") ? do_encode(&t, req) : do_decode(&t, req);
        char *s = json_dumps(res, JSON_COMPACT | JSON_ENSURE_ASCII);
        printf("%s\n", s);
        free(s);
        json_decref(res);
        json_decref(req);
    }
    free(line);
    tool_free(&t);
    return 0;
}
