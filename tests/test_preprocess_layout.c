/* The preprocessor of a causal or seq2seq set (pairshard/preprocess.h):
 * for every record of Spider dev built by the CLI (causal Llama-3-style
 * under --template ddl with its schemas; seq2seq T5-small without a
 * template), the ids the preprocessor gives the raw record equal the ids
 * the set stores (read from the shard's blocks directly, not through the
 * reader), with types 0 before the stored boundary and 1 after; and
 * serving a question without SQL gives the stored record's ids before its
 * boundary: the prefix and the prompt, or the encoded source. */
#include "tests/support/testutil.h"
#include "store/shards.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

/* One bucket, one shard: stored order is input order. */
static const char *build(const char *set, const char *opts)
{
    static char dir[256];
    char cmd[8192];
    snprintf(dir, sizeof dir, "%s/%s", ps_test_root, set);
    snprintf(cmd, sizeof cmd, "'%s' build -q --threads 2 --keep-duplicates --buckets 4096 "
             "--no-gate %s -o '%s' '%s'", ps_test_bin, opts, dir, ps_test_data("spider/dev.json"));
    if (system(cmd) != 0)
        fail_msg("failed: %s", cmd);
    return dir;
}

typedef struct rec {
    int32_t *ids;
    uint32_t len, boundary;
} rec;

typedef struct stored {
    rec *r;
    size_t n, cap;
    ps_buf scratch;
    void *dctx;
} stored;

static int on_block(void *user, uint32_t bucket, uint32_t seq, const void *data, size_t len)
{
    (void)bucket, (void)seq;
    stored *s = user;
    ps_block_view v;
    ps_error err = {0};
    if (ps_block_decode(data, len, s->dctx, &s->scratch, &v, &err))
        fail_msg("%s", err.message);
    for (uint32_t i = 0; i < v.n; i++) {
        if (s->n == s->cap) {
            s->cap = s->cap ? 2 * s->cap : 256;
            s->r = realloc(s->r, s->cap * sizeof *s->r);
        }
        rec *r = &s->r[s->n++];
        r->len = v.length[i];
        r->boundary = v.type_boundary[i];
        r->ids = malloc((r->len + 1) * sizeof *r->ids);
        for (uint32_t t = 0; t < r->len; t++)
            r->ids[t] = (int32_t)ps_block_token(&v, v.token_start[i] + t);
    }
    return 0;
}

static void read_set(const char *dir, stored *s)
{
    memset(s, 0, sizeof *s);
    s->dctx = ZSTD_createDCtx();
    ps_shard *sh;
    ps_error err = {0};
    if (ps_shard_open(&sh, ps_test_path(dir, "shard-00000.mdb"), &err) ||
        ps_shard_foreach(sh, on_block, s, &err))
        fail_msg("%s", err.message);
    ps_shard_close(sh);
    ZSTD_freeDCtx(s->dctx);
    ps_buf_free(&s->scratch);
}

/* Every raw record: the preprocessor's ids = the stored ones; then the
 * same question without SQL = the stored ids before the boundary. */
static size_t round_trip(const char *dir)
{
    stored s;
    read_set(dir, &s);
    ps_preprocessor *p = ps_test_preprocessor(dir);
    ps_error err = {0};
    json_t *arr = json_load_file(ps_test_data("spider/dev.json"), 0, NULL);
    assert_true(json_is_array(arr));
    size_t k = 0;
    for (size_t i = 0; i < json_array_size(arr); i++) {
        json_t *e = json_array_get(arr, i);
        char *raw = json_dumps(e, JSON_COMPACT);
        ps_preprocess_input in = {.record = raw, .record_len = strlen(raw)};
        ps_preprocess_output out;
        if (ps_preprocess(p, &in, &out, &err))
            fail_msg("record %zu: %s", i, err.message);
        free(raw);
        if (out.rejected)
            continue;
        assert_true(k < s.n);
        const rec *r = &s.r[k++];
        if (out.length != r->len || memcmp(out.input_ids, r->ids, r->len * sizeof *r->ids))
            fail_msg("%s: record %zu: %zu ids served, %u stored", dir, i, out.length, r->len);
        for (uint32_t t = 0; t < r->len; t++)
            assert_int_equal(out.token_type_ids[t], t >= r->boundary);
        if (out.shortened)
            continue; /* its prompt alone fits whole: another text */
        ps_preprocess_input q = {
            .question = json_string_value(json_object_get(e, "question")),
            .db_id = json_string_value(json_object_get(e, "db_id"))};
        if (ps_preprocess(p, &q, &out, &err))
            fail_msg("record %zu: %s", i, err.message);
        assert_false(out.rejected);
        if (out.length != r->boundary || memcmp(out.input_ids, r->ids, r->boundary * sizeof(int32_t)))
            fail_msg("%s: record %zu served without SQL: %zu ids, the stored boundary is %u", dir,
                     i, out.length, r->boundary);
    }
    assert_int_equal(k, s.n);
    json_decref(arr);
    ps_preprocessor_free(p);
    for (size_t i = 0; i < s.n; i++)
        free(s.r[i].ids);
    free(s.r);
    return k;
}

static void test_causal_llama3_ddl(void **state)
{
    (void)state;
    char opts[2048];
    snprintf(opts, sizeof opts, "--layout causal --tokenizer-json '%s' --schema '%s' "
             "--template ddl --max-length 300",
             ps_test_data("tokenizers/llama3-style.tokenizer.json"),
             ps_test_path(ps_test_data("spider"), "tables.json"));
    const char *dir = build("causal", opts);
    assert_true(round_trip(dir) > 900);
}

static void test_seq2seq_t5(void **state)
{
    (void)state;
    char opts[2048];
    snprintf(opts, sizeof opts, "--layout seq2seq --tokenizer-json '%s' --max-length 40 "
             "--max-target-length 80", ps_test_data("tokenizers/t5-small.tokenizer.json"));
    const char *dir = build("seq2seq", opts);
    assert_true(round_trip(dir) > 700); /* the longest are too_long */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_causal_llama3_ddl),
        cmocka_unit_test(test_seq2seq_t5),
    };
    return cmocka_run_group_tests(tests, ps_test_cli_setup, ps_test_cli_teardown);
}
