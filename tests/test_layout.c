/* The pieces of the causal and seq2seq layouts below the build: the
 * post-processor's single-sequence prefix (tokenize/post.c, prefix.c) that a
 * causal record starts with, and the layout names (common/layout.c). */
#include "tests/support/testutil.h"
#include "tests/support/tok_fixture.h"
#include "store/inspect.h"
#include "tokenize/hf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static ps_tok_post *load(const char *json)
{
    json_t *j = ps_test_json(json, JSON_DECODE_ANY);
    ps_error err = {0};
    ps_tok_load c = {"t.json", &err, NULL};
    ps_tok_post *p = NULL;
    if (ps_tok_post_load(&c, j, "post_processor", &p))
        fail_msg("load: %s", err.message);
    json_decref(j);
    return p;
}

/* The prefix as "a b c" (count included, so that a short copy shows). */
static const char *prefix(const ps_tok_post *p, size_t cap)
{
    static char out[256];
    int32_t ids[16];
    for (size_t i = 0; i < 16; i++)
        ids[i] = -7; /* what the function must not touch past cap */
    size_t n = ps_tok_post_prefix(p, ids, cap);
    size_t o = (size_t)snprintf(out, sizeof out, "%zu:", n);
    for (size_t i = 0; i < n && i < cap; i++)
        o += (size_t)snprintf(out + o, sizeof out - o, " %d", ids[i]);
    for (size_t i = cap; i < 16; i++)
        if (ids[i] != -7)
            fail_msg("ids[%zu] written past cap %zu", i, cap);
    return out;
}

#define SEQ(id) "{\"Sequence\":{\"id\":\"" id "\",\"type_id\":0}}"
#define SP(id) "{\"SpecialToken\":{\"id\":\"" id "\",\"type_id\":0}}"

static void test_post_prefix(void **state)
{
    (void)state;
    assert_string_equal(prefix(NULL, 8), "0:");
    ps_tok_post *p = load("{\"type\":\"ByteLevel\",\"add_prefix_space\":true,\"trim_offsets\":false}");
    assert_string_equal(prefix(p, 8), "0:");
    ps_tok_post_free(p);
    p = load("{\"type\":\"BertProcessing\",\"sep\":[\"[SEP]\",102],\"cls\":[\"[CLS]\",101]}");
    assert_string_equal(prefix(p, 8), "1: 101");
    ps_tok_post_free(p);
    p = load("{\"type\":\"RobertaProcessing\",\"sep\":[\"</s>\",2],\"cls\":[\"<s>\",0],"
             "\"trim_offsets\":true,\"add_prefix_space\":false}"); /* </s> after A: not part */
    assert_string_equal(prefix(p, 8), "1: 0");
    ps_tok_post_free(p);
    /* two specials before A (one of two ids), one after: only those before */
    p = load("{\"type\":\"TemplateProcessing\",\"single\":[" SP("B") "," SP("X") "," SEQ("A") "," SP(
        "E") "],\"pair\":[" SEQ("A") "," SEQ("B") "],\"special_tokens\":{\"B\":{\"id\":\"B\",\"ids\":"
        "[5],\"tokens\":[\"b\"]},\"X\":{\"id\":\"X\",\"ids\":[8,9],\"tokens\":[\"x\",\"y\"]},\"E\":{\"id\":"
        "\"E\",\"ids\":[6],\"tokens\":[\"e\"]}}}");
    assert_string_equal(prefix(p, 8), "3: 5 8 9");
    assert_string_equal(prefix(p, 2), "3: 5 8"); /* the count, the first cap ids copied */
    assert_string_equal(prefix(p, 0), "3:");
    ps_tok_post_free(p);
    /* T5: "$A </s>" has no prefix */
    p = load("{\"type\":\"TemplateProcessing\",\"single\":[" SEQ("A") "," SP("E") "],\"pair\":[" SEQ(
        "A") "," SEQ("B") "],\"special_tokens\":{\"E\":{\"id\":\"E\",\"ids\":[1],\"tokens\":[\"e\"]}}}");
    assert_string_equal(prefix(p, 8), "0:");
    ps_tok_post_free(p);
    /* Llama 3: ByteLevel then a BOS template, in a Sequence */
    p = load("{\"type\":\"Sequence\",\"processors\":[{\"type\":\"ByteLevel\",\"add_prefix_space\":"
             "true,\"trim_offsets\":false,\"use_regex\":true},{\"type\":\"TemplateProcessing\","
             "\"single\":[" SP("S") "," SEQ("A") "],\"pair\":[" SP("S") "," SEQ("A") "," SP("S") "," SEQ(
                 "B") "],\"special_tokens\":{\"S\":{\"id\":\"S\",\"ids\":[128000],\"tokens\":[\"s\"]}}}]}");
    assert_string_equal(prefix(p, 8), "1: 128000");
    ps_tok_post_free(p);
}

/* On the real files: encode(text) == prefix + tokenize(text) + a suffix,
 * and the prefix is what each model's users expect. */
static void check_file(ps_tokenizer *tok, const char *name, const char *want)
{
    int32_t ids[8];
    size_t n = ps_tokenizer_prefix_ids(tok, ids, 8);
    char got[128];
    size_t o = (size_t)snprintf(got, sizeof got, "%zu:", n);
    for (size_t i = 0; i < n && i < 8; i++)
        o += (size_t)snprintf(got + o, sizeof got - o, " %d", ids[i]);
    if (strcmp(got, want))
        fail_msg("%s: prefix %s, expected %s", name, got, want);
    static const char text[] = "How many singers do we have? SELECT count(*) FROM singer";
    ps_tok_scratch *s = ps_tok_scratch_new();
    ps_encoding e;
    ps_error err = {0};
    int32_t plain[256];
    int np = ps_tokenizer_tokenize(tok, s, text, sizeof text - 1, &e, &err);
    assert_true(np > 0 && np < 256);
    memcpy(plain, e.input_ids, (size_t)np * sizeof *plain);
    int ne = ps_tokenizer_encode(tok, s, text, sizeof text - 1, 0, &e, &err);
    assert_true(ne >= np + (int)n);
    assert_memory_equal(e.input_ids, ids, n * sizeof *ids);
    assert_memory_equal(e.input_ids + n, plain, (size_t)np * sizeof *plain);
    ps_tok_scratch_free(s);
}

static void test_files(void **state)
{
    (void)state;
    static const char *const files[][2] = {
        {"tokenizers/gpt2.tokenizer.json", "0:"},
        {"tokenizers/llama3-style.tokenizer.json", "1: 8256"},
        {"tokenizers/llama2-style.tokenizer.json", "1: 1"},
        {"tokenizers/roberta-base.tokenizer.json", "1: 0"},
        {"tokenizers/qwen2-style.tokenizer.json", "0:"},
        {"tokenizers/t5-small.tokenizer.json", "0:"},
        {"tokenizers/bert-base-uncased.tokenizer.json", "1: 101"},
    };
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        ps_tokenizer *tok = NULL;
        ps_error err = {0};
        if (ps_tokenizer_load_json(ps_test_data(files[i][0]), &tok, &err))
            fail_msg("%s: %s", files[i][0], err.message);
        check_file(tok, files[i][0], files[i][1]);
        ps_tokenizer_free(tok);
    }
    ps_tokenizer *tok = NULL; /* the fused BERT path of a vocab.txt: [CLS] */
    ps_error err = {0};
    assert_int_equal(ps_tokenizer_load_vocab(ps_test_data("vocab/bert-base-uncased.vocab.txt"), NULL,
                                             &tok, &err),
                     0);
    check_file(tok, "vocab.txt", "1: 101");
    ps_tokenizer_free(tok);
    assert_int_equal(ps_tokenizer_prefix_ids(NULL, NULL, 0), 0);
}

static void test_layout_names(void **state)
{
    (void)state;
    assert_string_equal(ps_layout_name(PS_LAYOUT_PAIR), "pair");
    assert_string_equal(ps_layout_name(PS_LAYOUT_CAUSAL), "causal");
    assert_string_equal(ps_layout_name(PS_LAYOUT_SEQ2SEQ), "seq2seq");
    assert_null(ps_layout_name(3));
    assert_null(ps_layout_name(-1));
    for (int l = 0; l < 3; l++)
        assert_int_equal(ps_layout_parse(ps_layout_name(l)), l);
    assert_int_equal(ps_layout_parse("Causal"), PS_EINVAL); /* exact names only */
    assert_int_equal(ps_layout_parse("causal "), PS_EINVAL);
    assert_int_equal(ps_layout_parse(""), PS_EINVAL);
    assert_int_equal(ps_layout_parse(NULL), PS_EINVAL);
}

/* A manifest of format version `ver` with `layout` (NULL: no member),
 * read: the return code, and *layout when it is read. */
static int read_layout(int ver, const char *layout, int *out, ps_error *err)
{
    char dir[] = "/tmp/pstest-layout-XXXXXX", path[64], text[1024], member[64] = "";
    assert_non_null(mkdtemp(dir));
    if (layout)
        snprintf(member, sizeof member, "\"layout\":\"%s\",", layout);
    snprintf(text, sizeof text,
             "{\"format\":\"pairshard-manifest\",\"format_version\":%d,%s"
             "\"tokenizer\":{\"vocab_size\":100,\"id_width\":2},\"labels\":[],"
             "\"buckets\":[8],\"block_records\":4,\"shards\":[]}",
             ver, member);
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    ps_test_write_file(path, text);
    ps_manifest *m = NULL;
    int rc = ps_manifest_read(dir, &m, err);
    if (!rc)
        *out = m->layout;
    ps_manifest_free(m);
    unlink(path);
    rmdir(dir);
    return rc;
}

static void test_manifest_layout(void **state)
{
    (void)state;
    ps_error err = {0};
    int l = -1;
    assert_int_equal(read_layout(1, NULL, &l, &err), 0); /* every set before layouts */
    assert_int_equal(l, PS_LAYOUT_PAIR);
    assert_int_equal(read_layout(1, "pair", &l, &err), 0);
    assert_int_equal(l, PS_LAYOUT_PAIR);
    assert_int_equal(read_layout(2, "causal", &l, &err), 0);
    assert_int_equal(l, PS_LAYOUT_CAUSAL);
    assert_int_equal(read_layout(2, "seq2seq", &l, &err), 0);
    assert_int_equal(l, PS_LAYOUT_SEQ2SEQ);
    /* a version 1 reader would read these as pair sets: refused */
    assert_int_equal(read_layout(1, "causal", &l, &err), PS_EFORMAT);
    assert_non_null(strstr(err.message, "needs format version 2"));
    assert_int_equal(read_layout(2, NULL, &l, &err), PS_EFORMAT);
    assert_non_null(strstr(err.message, "without \"layout\""));
    assert_int_equal(read_layout(2, "decoder", &l, &err), PS_EFORMAT);
    assert_non_null(strstr(err.message, "\"layout\" must be"));
    assert_int_equal(read_layout(3, "causal", &l, &err), PS_EVERSION);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_manifest_layout),
        cmocka_unit_test(test_post_prefix),
        cmocka_unit_test(test_files),
        cmocka_unit_test(test_layout_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
