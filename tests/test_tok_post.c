/* Post-processors of a tokenizer.json (tokenize/post.c, post_load.c): the
 * ids and type ids HF tokenizers 0.23.2 gives (node binding, same files),
 * HF's untagged reading of the JSON, and load errors. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/support/tok_fixture.h"
#include "tokenize/hf.h"

#include <stdio.h>
#include <string.h>

static int load_rc(const char *json, ps_tok_post **out, ps_error *err)
{
    json_t *j = ps_test_json(json, JSON_DECODE_ANY);
    ps_tok_load c = {"t.json", err, NULL};
    int rc = ps_tok_post_load(&c, j, "post_processor", out);
    json_decref(j);
    return rc;
}

static ps_tok_post *load(const char *json)
{
    ps_tok_post *p = NULL;
    ps_error err = {0};
    if (load_rc(json, &p, &err))
        fail_msg("load: %s", err.message);
    return p;
}

/* A = [1 2], B = [2 2]; returns "ids | types". */
static const char *apply(const ps_tok_post *p, bool pair)
{
    static char out[512];
    static const int32_t a[] = {1, 2}, b[] = {2, 2};
    ps_tok_ids ids = {0};
    ps_tok_buf types = {0};
    assert_int_equal(ps_tok_post_apply(p, a, 2, b, 2, pair, &ids, &types), 0);
    assert_int_equal(ids.n, types.len);
    size_t o = 0;
    for (size_t i = 0; i < ids.n; i++)
        o += (size_t)snprintf(out + o, sizeof out - o, "%s%d", i ? " " : "", ids.v[i]);
    o += (size_t)snprintf(out + o, sizeof out - o, " |");
    for (size_t i = 0; i < types.len; i++)
        o += (size_t)snprintf(out + o, sizeof out - o, " %d", (unsigned char)types.p[i]);
    ps_tok_ids_free(&ids);
    ps_tok_buf_free(&types);
    return out;
}

#define BERT "{\"type\":\"BertProcessing\",\"sep\":[\"<s>\",3],\"cls\":[\"a\",1]}"
#define ROBERTA                                                                     \
    "{\"type\":\"RobertaProcessing\",\"sep\":[\"<s>\",3],\"cls\":[\"a\",1],"       \
    "\"trim_offsets\":true,\"add_prefix_space\":false}"
#define SEQ(t, id) "{\"Sequence\":{\"id\":\"" id "\",\"type_id\":" #t "}}"
#define SP(t, id) "{\"SpecialToken\":{\"id\":\"" id "\",\"type_id\":" #t "}}"

static void test_none_and_bytelevel(void **state)
{
    (void)state;
    assert_string_equal(apply(NULL, false), "1 2 | 0 0");
    assert_string_equal(apply(NULL, true), "1 2 2 2 | 0 0 1 1");
    ps_tok_post *p = load("{\"type\":\"ByteLevel\",\"add_prefix_space\":true,\"trim_offsets\":false}");
    assert_string_equal(apply(p, true), "1 2 2 2 | 0 0 1 1");
    assert_int_equal(ps_tok_post_added(p, true), 0);
    ps_tok_post_free(p);
    p = NULL;
    assert_int_equal(load_rc("null", &p, NULL), 0);
    assert_null(p);
}

static void test_bert_and_roberta(void **state)
{
    (void)state;
    ps_tok_post *p = load(BERT);
    assert_string_equal(apply(p, false), "1 1 2 3 | 0 0 0 0");
    assert_string_equal(apply(p, true), "1 1 2 3 2 2 3 | 0 0 0 0 1 1 1");
    assert_int_equal(ps_tok_post_added(p, false), 2);
    assert_int_equal(ps_tok_post_added(p, true), 3);
    ps_tok_post_free(p);
    p = load(ROBERTA); /* HF: every type id 0, </s></s> between */
    assert_string_equal(apply(p, true), "1 1 2 3 3 2 2 3 | 0 0 0 0 0 0 0 0");
    assert_int_equal(ps_tok_post_added(p, true), 4);
    ps_tok_post_free(p);
    /* HF reads RobertaProcessing without its two flags as a Bert one */
    p = load("{\"type\":\"RobertaProcessing\",\"sep\":[\"<s>\",3],\"cls\":[\"a\",1]}");
    assert_string_equal(apply(p, true), "1 1 2 3 2 2 3 | 0 0 0 0 1 1 1");
    ps_tok_post_free(p);
}

static void test_template(void **state)
{
    (void)state;
    /* a special token for several ids; sequences repeated, B before A */
    ps_tok_post *p = load("{\"type\":\"TemplateProcessing\",\"single\":[" SP(7, "X") "," SEQ(2, "A") "," SEQ(
        3, "A") "],\"pair\":[" SEQ(1, "B") "," SP(200, "X") "],\"special_tokens\":{\"X\":{\"id\":\"Y\","
                                                             "\"ids\":[4,3,4],\"tokens\":[\"q\"]}}}");
    assert_string_equal(apply(p, false), "4 3 4 1 2 1 2 | 7 7 7 2 2 3 3");
    assert_string_equal(apply(p, true), "2 2 4 3 4 | 1 1 200 200 200");
    assert_int_equal(ps_tok_post_added(p, false), 3);
    assert_int_equal(ps_tok_post_added(p, true), 3);
    ps_tok_post_free(p);
}

static void test_sequence(void **state)
{
    (void)state;
    ps_tok_post *p = load("{\"type\":\"Sequence\",\"processors\":[{\"type\":\"ByteLevel\","
                          "\"add_prefix_space\":false,\"trim_offsets\":true},{\"type\":"
                          "\"Sequence\",\"processors\":[" BERT "]}]}");
    assert_string_equal(apply(p, true), "1 1 2 3 2 2 3 | 0 0 0 0 1 1 1");
    ps_tok_post_free(p);
    p = load("{\"type\":\"Sequence\",\"processors\":[]}");
    assert_string_equal(apply(p, true), "1 2 2 2 | 0 0 1 1");
    ps_tok_post_free(p);
}

/* A pair template naming a missing special token loads (HF loads it and
 * encodes single sequences); a pair is refused (HF panics). */
static void test_pair_template_missing_token(void **state)
{
    (void)state;
    ps_tok_post *p = load("{\"type\":\"TemplateProcessing\",\"single\":[" SEQ(0, "A") "],\"pair\":[" SP(
        0, "Q") "," SEQ(0, "A") "],\"special_tokens\":{}}");
    assert_string_equal(apply(p, false), "1 2 | 0 0");
    ps_tok_ids ids = {0};
    ps_tok_buf types = {0};
    int32_t a[] = {1};
    assert_int_equal(ps_tok_post_apply(p, a, 1, a, 1, true, &ids, &types), PS_EUSAGE);
    ps_tok_ids_free(&ids);
    ps_tok_buf_free(&types);
    ps_tok_post_free(p);
}

/* test_load_errors' loader: nothing may be made. */
static int try_load(const char *json, ps_error *err)
{
    ps_tok_post *p = NULL;
    int rc = load_rc(json, &p, err);
    assert_null(p);
    return rc;
}

static void test_load_errors(void **state)
{
    (void)state;
    static const ps_test_load_case cases[] = {
        {"{\"type\":\"Sequence\",\"processors\":[" BERT "," ROBERTA "]}", PS_EUSAGE,
         "t.json: post_processor.processors[1]: a second processor that adds special tokens "
         "is not supported"},
        {"{\"type\":\"TemplateProcessing\",\"single\":[" SP(0, "Q") "],\"pair\":[],"
         "\"special_tokens\":{}}",
         PS_EUSAGE,
         "t.json: post_processor.single[0]: special token not in special_tokens (HF panics on "
         "encode)"},
        {"{\"type\":\"TemplateProcessing\",\"single\":[" SEQ(0, "B") "],\"pair\":[],"
         "\"special_tokens\":{}}",
         PS_EUSAGE,
         "t.json: post_processor.single[0]: sequence B in the single template (HF panics on "
         "encode)"},
        {"{\"type\":\"TemplateProcessing\",\"single\":[" SEQ(300, "A") "],\"pair\":[],"
         "\"special_tokens\":{}}",
         PS_EUSAGE, "t.json: post_processor.single[0].Sequence: type_id 300: above 255 is not "
                    "supported"},
        {"{\"type\":\"TemplateProcessing\",\"single\":\"[CLS] $A\",\"pair\":[],"
         "\"special_tokens\":{}}",
         PS_EFORMAT, "t.json: post_processor.single: expected an array of pieces"},
        {"{\"type\":\"TemplateProcessing\",\"single\":[" SEQ(0, "A") "],\"pair\":[],"
         "\"special_tokens\":{\"X\":{\"id\":\"X\",\"ids\":[1]}}}",
         PS_EFORMAT, "t.json: post_processor.special_tokens.X: missing member 'tokens'"},
        {"{\"type\":\"ByteLevel\"}", PS_EFORMAT,
         "t.json: post_processor: missing member 'add_prefix_space'"},
        {"{\"type\":\"BertProcessing\",\"sep\":[\"<s>\",-1],\"cls\":[\"a\",1]}", PS_EFORMAT,
         "t.json: post_processor.sep[1]: expected an id (0 to 4294967295)"},
        {"{\"type\":\"BertProcessing\",\"sep\":[\"<s>\",3000000000],\"cls\":[\"a\",1]}",
         PS_EUSAGE, "t.json: post_processor.sep[1]: id 3000000000 is above 2147483647"},
        {"{\"type\":\"Foo\"}", PS_EUSAGE, "t.json: post_processor.type: 'Foo' is not supported"},
        {"{\"processors\":[]}", PS_EFORMAT,
         "t.json: post_processor: matches no post-processor (RobertaProcessing, "
         "BertProcessing, ByteLevel, TemplateProcessing, Sequence)"},
    };
    ps_test_load_errors(cases, sizeof cases / sizeof *cases, try_load, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_none_and_bytelevel),
        cmocka_unit_test(test_bert_and_roberta),
        cmocka_unit_test(test_template),
        cmocka_unit_test(test_sequence),
        cmocka_unit_test(test_pair_template_missing_token),
        cmocka_unit_test(test_load_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
