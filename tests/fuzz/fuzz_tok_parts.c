/*
 * The added-token, post-processor and decoder loaders (tokenize/hf.h) on
 * untrusted JSON, and what they load run on the input's own text:
 *   {"added_tokens": [...], "post_processor": {...}, "decoder": {...},
 *    "text": "...", "tokens": ["...", ...]}
 * Checks that a split covers the text in bounds, that every id gets one
 * type id, and that a failed load names its error.
 */
#include "tokenize/hf.h"
#include "tests/support/tok_stubs.h"

#include <stdlib.h>
#include <string.h>

static ps_tok_norm lower_norm = {ps_test_ascii_lower, NULL};

static void check_load(int rc, const ps_error *err)
{
    if (rc < 0 && (err->code != rc || !err->message[0]))
        abort(); /* a refusal must say why */
}

static void run_split(const ps_tok_added *a, const char *s, size_t n, ps_tok_ids *ids)
{
    ps_tok_segs segs = {0};
    for (int norm = 0; norm < 2; norm++) {
        if (ps_tok_added_split(a, norm, s, n, &segs))
            continue;
        for (size_t i = 0; i < segs.n; i++) {
            if (!segs.v[i].len || segs.v[i].off > n || segs.v[i].len > n - segs.v[i].off)
                abort();
            if (segs.v[i].id >= 0 && !ps_tok_added_token(a, segs.v[i].id, NULL))
                abort(); /* a matched id has a token */
            ps_tok_ids_push(ids, segs.v[i].id >= 0 ? segs.v[i].id : 1);
        }
    }
    ps_tok_segs_free(&segs);
}

static void run_post(const ps_tok_post *p, const ps_tok_ids *a)
{
    for (int pair = 0; pair < 2; pair++) {
        ps_tok_ids ids = {0};
        ps_tok_buf types = {0};
        int rc = ps_tok_post_apply(p, a->v, a->n, a->v, a->n / 2, pair, &ids, &types);
        if (!rc && ids.n != types.len)
            abort();
        ps_tok_ids_free(&ids);
        ps_tok_buf_free(&types);
    }
}

static void run_decode(const ps_tok_decoder *d, json_t *toks, const char *s, size_t n)
{
    ps_tok_pieces in = {0}, tmp = {0};
    ps_tok_buf out = {0};
    for (size_t i = 0; i < json_array_size(toks); i++) {
        json_t *t = json_array_get(toks, i);
        if (json_is_string(t))
            ps_tok_pieces_push(&in, json_string_value(t), json_string_length(t), false);
    }
    for (size_t i = 0, b = 0; i <= n; i++) /* and the text, split on spaces */
        if (i == n || s[i] == ' ') {
            ps_tok_pieces_push(&in, s + b, i - b, false);
            b = i + 1;
        }
    ps_tok_decode(d, &in, &tmp, &out);
    ps_tok_pieces_free(&in);
    ps_tok_pieces_free(&tmp);
    ps_tok_buf_free(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error_t je;
    json_t *root = json_loadb((const char *)data, size, JSON_DECODE_ANY, &je);
    if (!json_is_object(root)) {
        json_decref(root);
        return 0;
    }
    static ps_tok_model model;
    if (!model.vocab.slots) {
        ps_tok_vocab_init(&model.vocab);
        ps_tok_vocab_set(&model.vocab, "[UNK]", 5, 0);
        ps_tok_vocab_set(&model.vocab, "a", 1, 1);
        ps_tok_vocab_set(&model.vocab, "<s>", 3, 2);
        model.kind = PS_TOK_MODEL_WORDLEVEL;
    }
    ps_error err = {0};
    ps_tok_load c = {"f.json", &err, NULL};
    ps_tok_added *a = NULL;
    ps_tok_post *p = NULL;
    ps_tok_decoder *d = NULL;
    json_t *text = json_object_get(root, "text");
    const char *s = json_is_string(text) ? json_string_value(text) : "";
    size_t n = json_is_string(text) ? json_string_length(text) : 0;
    ps_tok_ids ids = {0};

    int rc = ps_tok_added_load_model(&c, json_object_get(root, "added_tokens"), "added_tokens",
                                     &lower_norm, &model, &a);
    check_load(rc, &err);
    if (!rc)
        run_split(a, s, n, &ids);
    rc = ps_tok_post_load(&c, json_object_get(root, "post_processor"), "post_processor", &p);
    check_load(rc, &err);
    if (!rc)
        run_post(p, &ids);
    rc = ps_tok_decoder_load(&c, json_object_get(root, "decoder"), "decoder", &d);
    check_load(rc, &err);
    if (!rc)
        run_decode(d, json_object_get(root, "tokens"), s, n);

    ps_tok_ids_free(&ids);
    ps_tok_added_free(a);
    ps_tok_post_free(p);
    ps_tok_decoder_free(d);
    json_decref(root);
    return 0;
}
