/* pairshard inspect --show N: the first N records of a shard set as they
 * were stored (shard order, block order), one JSON line each, with the
 * ids decoded back to text by the tokenizer that built them. */
#include "cli/inspect_show.h"

#include "common/ps_internal.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

typedef struct show {
    const ps_manifest *m;
    ps_tokenizer *tok; /* NULL: ids only */
    ps_tok_scratch *ts;
    ZSTD_DCtx *dctx;
    ps_buf scratch;
    int32_t *ids;
    size_t ids_cap;
    size_t left;
    const char *shard; /* for messages */
    ps_error *err;
} show;

static int grow_ids(show *w, size_t n)
{
    if (n <= w->ids_cap)
        return PS_OK;
    int32_t *p = realloc(w->ids, n * sizeof *p);
    if (!p)
        return ps_error_set(w->err, PS_ENOMEM, "out of memory");
    w->ids = p;
    w->ids_cap = n;
    return PS_OK;
}

static json_t *record_json(show *w, const ps_block_view *v, uint32_t i, uint32_t bucket)
{
    uint64_t a = v->token_start[i], len = v->length[i];
    json_t *o = json_pack("{ss#sIsIsI}", "id", v->ids + v->id_offset[i],
                          (int)(v->id_offset[i + 1] - v->id_offset[i]), "bucket", (json_int_t)bucket,
                          "length", (json_int_t)len, "type_boundary",
                          (json_int_t)v->type_boundary[i]);
    if (!o)
        return NULL;
    uint32_t label = v->label[i];
    json_object_set_new(o, "label", label < w->m->n_labels ? json_string(w->m->labels[label])
                                                           : json_null());
    json_t *arr = json_array();
    for (uint64_t k = 0; k < len; k++) {
        w->ids[k] = (int32_t)ps_block_token(v, a + k);
        json_array_append_new(arr, json_integer(w->ids[k]));
    }
    json_object_set_new(o, "input_ids", arr);
    if (w->tok) {
        const char *text;
        size_t tlen;
        if (ps_tokenizer_decode(w->tok, w->ts, w->ids, len, 0, &text, &tlen, w->err)) {
            json_decref(o);
            return NULL;
        }
        json_object_set_new(o, "text", json_stringn(text, tlen));
    }
    return o;
}

static int on_block(void *user, uint32_t bucket, uint32_t seq, const void *data, size_t len)
{
    show *w = user;
    (void)seq;
    ps_block_view v;
    int rc = ps_block_decode(data, len, w->dctx, &w->scratch, &v, w->err);
    if (rc)
        return rc;
    for (uint32_t i = 0; i < v.n && w->left; i++, w->left--) {
        if ((rc = grow_ids(w, v.length[i] + 1)))
            return rc;
        json_t *o = record_json(w, &v, i, bucket);
        char *line = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
        json_decref(o);
        if (!line)
            return w->err->code ? w->err->code : ps_error_set(w->err, PS_ENOMEM, "out of memory");
        printf("%s\n", line);
        free(line);
    }
    return w->left ? 0 : 1; /* 1: enough records, stop the walk */
}

static int show_shards(show *w, const char *dir)
{
    int rc = PS_OK;
    for (size_t s = 0; s < w->m->n_shards && w->left && rc >= 0; s++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, w->m->shards[s].file);
        ps_shard *sh;
        if ((rc = ps_shard_open(&sh, path, w->err)))
            return rc;
        w->shard = path;
        rc = ps_shard_foreach(sh, on_block, w, w->err);
        ps_shard_close(sh);
    }
    return rc < 0 ? rc : PS_OK;
}

int ps_inspect_show(const char *dir, const ps_manifest *m, size_t n, ps_tokenizer *tok,
                    ps_error *err)
{
    show w = {.m = m, .tok = tok, .left = n, .err = err};
    w.dctx = ZSTD_createDCtx();
    w.ts = ps_tok_scratch_new();
    int rc = !w.dctx || !w.ts ? ps_error_set(err, PS_ENOMEM, "out of memory") : PS_OK;
    if (!rc)
        rc = show_shards(&w, dir);
    ZSTD_freeDCtx(w.dctx);
    ps_tok_scratch_free(w.ts);
    ps_buf_free(&w.scratch);
    free(w.ids);
    return rc;
}

int ps_inspect_load_tokenizer(const ps_manifest *m, const char *vocab, const char *json_path,
                              ps_tokenizer **out, ps_error *err)
{
    const char *path = json_path ? json_path : vocab;
    char sha[65];
    uint64_t bytes;
    int rc = ps_sha256_file(path, sha, &bytes, err);
    if (rc)
        return rc;
    if (m->vocab_sha256[0] && strcmp(sha, m->vocab_sha256))
        return ps_error_set(err, PS_EUSAGE,
                            "%s is not the tokenizer this set was built with (sha256 %.12s..., "
                            "the manifest says %.12s...)",
                            path, sha, m->vocab_sha256);
    return json_path ? ps_tokenizer_load_json(json_path, out, err)
                     : ps_tokenizer_load_vocab(vocab, NULL, out, err);
}
