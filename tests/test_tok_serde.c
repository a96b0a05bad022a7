/* What HF tokenizers 0.23's deserializer refuses (tokenize/hf_serde.c), on
 * real files of tests/data/tokenizers edited: "padding" and "truncation"
 * members of the wrong type (pad_id 2^40, -1, "x"...) and Sequences of
 * normalizers, pre-tokenizers and decoders nested past serde_json's
 * recursion limit (128 levels: 63 Sequences; 62 load), through both the
 * BERT path (bert-base-uncased) and the general one (wordlevel), with the
 * fast load on and off. Each refusal names the file and the JSON path. */
#include "tests/support/testutil.h"
#include "tokenize/hf.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const BASES[] = {"wordlevel-whitespace.tokenizer.json",
                                    "bert-base-uncased.tokenizer.json"};

/* Base file `b` with member `key` set to `v` (stolen), loaded: its code,
 * and its message into msg. */
static int load_with(size_t b, const char *key, json_t *v, char *msg, size_t n)
{
    char rel[128];
    snprintf(rel, sizeof rel, "tokenizers/%s", BASES[b]);
    json_error_t je;
    json_t *root = json_load_file(ps_test_data(rel), 0, &je);
    assert_non_null(root);
    json_object_set_new(root, key, v);
    char *text = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    char *path = ps_test_tmpfile(text, strlen(text), ".tokenizer.json");
    free(text);
    int rc = 0;
    for (int fast = 1; fast >= 0; fast--) {
        ps_tok_fastload_enable(fast);
        ps_tokenizer *t = NULL;
        ps_error err = {0};
        int r = ps_tokenizer_load_json(path, &t, &err);
        if (fast)
            rc = r;
        assert_int_equal(r, rc); /* the same answer either way */
        snprintf(msg, n, "%s", r ? err.message : "");
        if (r)
            assert_non_null(strstr(err.message, path));
        ps_tokenizer_free(t);
    }
    ps_tok_fastload_enable(true);
    unlink(path);
    free(path);
    return rc;
}

static json_t *padding(const char *key, json_t *v)
{
    json_t *p = json_pack("{s:s, s:s, s:n, s:i, s:i, s:s}", "strategy", "BatchLongest",
                          "direction", "Right", "pad_to_multiple_of", "pad_id", 0, "pad_type_id",
                          0, "pad_token", "[PAD]");
    if (v)
        json_object_set_new(p, key, v);
    else if (key)
        json_object_del(p, key);
    return p;
}

static json_t *truncation(const char *key, json_t *v)
{
    json_t *t = json_pack("{s:s, s:i, s:s, s:i}", "direction", "Right", "max_length", 512,
                          "strategy", "LongestFirst", "stride", 0);
    if (v)
        json_object_set_new(t, key, v);
    else if (key)
        json_object_del(t, key);
    return t;
}

static void expect(size_t b, const char *member, json_t *v, int code, const char *needle)
{
    char msg[PS_ERROR_MESSAGE_MAX];
    int rc = load_with(b, member, v, msg, sizeof msg);
    if (rc != code || (needle && !strstr(msg, needle)))
        fail_msg("%s: got %s '%s', expected %s '%s'", BASES[b], ps_err_name(rc), msg,
                 ps_err_name(code), needle ? needle : "");
}

static void test_padding(void **state)
{
    (void)state;
    for (size_t b = 0; b < 2; b++) {
        expect(b, "padding", padding(NULL, NULL), PS_OK, NULL);
        expect(b, "padding", json_null(), PS_OK, NULL);
        expect(b, "padding", padding("pad_id", json_integer(4294967295LL)), PS_OK, NULL);
        expect(b, "padding", padding("strategy", json_pack("{s:i}", "Fixed", 512)), PS_OK, NULL);
        expect(b, "padding", padding("pad_to_multiple_of", json_integer(8)), PS_OK, NULL);
        expect(b, "padding", padding("pad_id", json_integer(1LL << 40)), PS_EFORMAT,
               ": padding.pad_id: expected a u32, an integer from 0 to 4294967295 "
               "(1099511627776)");
        expect(b, "padding", padding("pad_id", json_integer(-1)), PS_EFORMAT,
               ": padding.pad_id: expected a u32, an integer from 0 to 4294967295 (-1)");
        expect(b, "padding", padding("pad_id", json_string("x")), PS_EFORMAT,
               ": padding.pad_id: expected a u32");
        expect(b, "padding", padding("pad_id", json_real(1.0)), PS_EFORMAT,
               ": padding.pad_id: expected a u32");
        expect(b, "padding", padding("pad_type_id", json_integer(1LL << 32)), PS_EFORMAT,
               ": padding.pad_type_id: expected a u32");
        expect(b, "padding", padding("pad_id", NULL), PS_EFORMAT, ": padding.pad_id: missing");
        expect(b, "padding", padding("pad_token", json_integer(3)), PS_EFORMAT,
               ": padding.pad_token: expected a string");
        expect(b, "padding", padding("strategy", json_string("Fixed")), PS_EFORMAT,
               ": padding.strategy: expected one of \"BatchLongest\", {\"Fixed\": N}");
        expect(b, "padding", padding("direction", json_string("Up")), PS_EFORMAT,
               ": padding.direction: expected one of \"Left\", \"Right\"");
        expect(b, "padding", json_array(), PS_EFORMAT, ": padding: expected an object or null");
    }
}

static void test_truncation(void **state)
{
    (void)state;
    for (size_t b = 0; b < 2; b++) {
        expect(b, "truncation", truncation(NULL, NULL), PS_OK, NULL);
        expect(b, "truncation", truncation("direction", NULL), PS_OK, NULL); /* serde default */
        expect(b, "truncation", truncation("max_length", json_integer(1LL << 40)), PS_OK, NULL);
        expect(b, "truncation", truncation("max_length", json_integer(-1)), PS_EFORMAT,
               ": truncation.max_length: expected a usize");
        expect(b, "truncation", truncation("max_length", json_string("x")), PS_EFORMAT,
               ": truncation.max_length: expected a usize");
        expect(b, "truncation", truncation("max_length", NULL), PS_EFORMAT,
               ": truncation.max_length: missing");
        expect(b, "truncation", truncation("stride", json_real(1.5)), PS_EFORMAT,
               ": truncation.stride: expected a usize");
        expect(b, "truncation", truncation("strategy", json_string("Longest")), PS_EFORMAT,
               ": truncation.strategy: expected one of \"LongestFirst\", \"OnlyFirst\", "
               "\"OnlySecond\"");
    }
}

/* A Sequence of Sequences `n` deep around a leaf. */
static json_t *nested(const char *list_key, json_t *leaf, int n)
{
    json_t *v = leaf;
    for (int i = 0; i < n; i++)
        v = json_pack("{s:s, s:[o]}", "type", "Sequence", list_key, v);
    return v;
}

static void test_nesting(void **state)
{
    (void)state;
    static const struct {
        const char *member, *list;
    } kinds[] = {{"normalizer", "normalizers"}, {"pre_tokenizer", "pretokenizers"}};
    for (size_t b = 0; b < 2; b++) {
        for (size_t k = 0; k < 2; k++) {
            json_t *leaf = k ? json_pack("{s:s}", "type", "Whitespace")
                             : json_pack("{s:s}", "type", "Lowercase");
            /* 62 Sequences: the leaf 126 levels deep, which serde_json reads */
            expect(b, kinds[k].member, nested(kinds[k].list, json_deep_copy(leaf), 62), PS_OK,
                   NULL);
            char want[128];
            snprintf(want, sizeof want, ": %s.%s[0].", kinds[k].member, kinds[k].list);
            for (int n = 63; n <= 1000; n += 937) {
                expect(b, kinds[k].member, nested(kinds[k].list, json_deep_copy(leaf), n),
                       PS_ELIMIT, want);
                expect(b, kinds[k].member, nested(kinds[k].list, json_deep_copy(leaf), n),
                       PS_ELIMIT,
                       "...: nested 128 levels deep: HF's parser (serde_json) refuses JSON "
                       "nested deeper than 127 levels");
            }
            json_decref(leaf);
        }
        /* decoders 1000 deep: refused by serde_json's limit first */
        expect(b, "decoder", nested("decoders", json_pack("{s:s}", "type", "Fuse"), 1000),
               PS_ELIMIT, ": decoder.decoders[0].decoders[0].");
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_padding),
        cmocka_unit_test(test_truncation),
        cmocka_unit_test(test_nesting),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
