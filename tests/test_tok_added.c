/* Added tokens of a tokenizer.json (tokenize/added.c): ids as HF's
 * add_tokens gives them, leftmost-longest splitting, single_word, lstrip,
 * rstrip, normalized tokens, and load errors. Expected values are HF
 * tokenizers 0.23.2's (node binding) for the same files. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/support/tok_fixture.h"
#include "tests/support/tok_stubs.h"
#include "tokenize/hf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A WordLevel-like model holding [UNK] a b c d (ids 0..4). */
static ps_tok_model *model5(void)
{
    static ps_tok_model m;
    static const char *w[] = {"[UNK]", "a", "b", "c", "d"};
    ps_tok_vocab_free(&m.vocab);
    ps_tok_vocab_init(&m.vocab);
    for (int i = 0; i < 5; i++)
        assert_int_equal(ps_tok_vocab_set(&m.vocab, w[i], strlen(w[i]), i), 0);
    m.kind = PS_TOK_MODEL_WORDLEVEL;
    m.unk_id = 0;
    return &m;
}

static ps_tok_norm lower_norm = {ps_test_ascii_lower, NULL};

static int load_rc(const char *json, const ps_tok_norm *norm, const ps_tok_model *m,
                   ps_tok_added **out, ps_error *err)
{
    json_t *j = ps_test_json(json, JSON_DECODE_ANY);
    ps_tok_load c = {"t.json", err, NULL};
    int rc = ps_tok_added_load_model(&c, j, "added_tokens", norm, m, out);
    json_decref(j);
    return rc;
}

static ps_tok_added *load(const char *json, const ps_tok_norm *norm, const ps_tok_model *m)
{
    ps_tok_added *a = NULL;
    ps_error err = {0};
    int rc = load_rc(json, norm, m, &a, &err);
    if (rc)
        fail_msg("load: %s", err.message);
    return a;
}

#define TOK(content, flags) \
    "{\"id\":0,\"content\":\"" content "\",\"single_word\":false,\"lstrip\":false," \
    "\"rstrip\":false,\"normalized\":false,\"special\":true" flags "}"
#define FL(name, value) ",\"" name "\":" value

/* The split as "off:len:id ..." (jansson keeps the last of duplicated
 * members, so FL overrides TOK's defaults). */
static const char *split(const ps_tok_added *a, bool normalized, const char *s)
{
    static char out[1024];
    ps_tok_segs segs = {0};
    assert_int_equal(ps_tok_added_split(a, normalized, s, strlen(s), &segs), 0);
    size_t o = 0;
    out[0] = '\0';
    for (size_t i = 0; i < segs.n; i++)
        o += (size_t)snprintf(out + o, sizeof out - o, "%s%zu:%zu:%d", i ? " " : "",
                              segs.v[i].off, segs.v[i].len, segs.v[i].id);
    ps_tok_segs_free(&segs);
    return out;
}

static void test_chat_markers_are_single_ids(void **state)
{
    (void)state;
    /* Qwen2.5's three specials, ids after a 5-token vocabulary, in order */
    ps_tok_added *a = load("[" TOK("<|endoftext|>", "") "," TOK("<|im_start|>", "") ","
                           TOK("<|im_end|>", "") "]", NULL, model5());
    assert_string_equal(split(a, false, "<|im_start|>user\nhi<|im_end|>"),
                        "0:12:6 12:7:-1 19:10:7");
    assert_string_equal(split(a, false, "<|im_start|><|im_end|>"), "0:12:6 12:10:7");
    assert_string_equal(split(a, false, "no markers"), "0:10:-1");
    assert_string_equal(split(a, false, ""), "");
    assert_string_equal(split(a, true, "<|im_start|>"), "0:12:-1"); /* none is normalized */
    assert_int_equal(ps_tok_added_find(a, "<|im_end|>", 10), 7);
    assert_int_equal(ps_tok_added_find(a, "<|im_end", 8), -1);
    assert_int_equal(ps_tok_added_max_id(a), 7);
    ps_tok_added_free(a);
}

/* Llama-3: <|begin_of_text|>, <|end_of_text|>, 254 reserved, <|eot_id|>
 * ... as 256 tokens after a vocabulary of 5; then split a long text. */
static void test_llama3_reserved_specials(void **state)
{
    (void)state;
    size_t cap = 256 * 200, o = 0;
    char *json = malloc(cap);
    o += (size_t)snprintf(json + o, cap - o, "[");
    for (int i = 0; i < 256; i++) {
        char name[64];
        if (i == 0)
            snprintf(name, sizeof name, "<|begin_of_text|>");
        else if (i == 9)
            snprintf(name, sizeof name, "<|eot_id|>");
        else
            snprintf(name, sizeof name, "<|reserved_special_token_%d|>", i);
        o += (size_t)snprintf(json + o, cap - o,
                              "%s{\"id\":%d,\"content\":\"%s\",\"single_word\":false,"
                              "\"lstrip\":false,\"rstrip\":false,\"normalized\":false,"
                              "\"special\":true}",
                              i ? "," : "", 128000 + i, name);
    }
    snprintf(json + o, cap - o, "]");
    ps_tok_added *a = load(json, NULL, NULL); /* no model: the file's ids */
    free(json);
    assert_string_equal(split(a, false, "<|begin_of_text|>hi<|eot_id|>"),
                        "0:17:128000 17:2:-1 19:10:128009");
    /* _1|> is no prefix of _10|>: each is found whole */
    assert_string_equal(split(a, false, "<|reserved_special_token_10|><|reserved_special_token_1|>"),
                        "0:29:128010 29:28:128001");
    assert_string_equal(split(a, false, "<|reserved_special_token_300|>"), "0:30:-1");

    /* speed: 4 MB of text with a marker every ~100 bytes */
    size_t n = 4u << 20;
    char *text = malloc(n + 1);
    for (size_t i = 0; i < n;) {
        const char *piece = i % 1000 < 100 ? "<|eot_id|>" : "plain words, < and | too ";
        size_t l = strlen(piece);
        if (i + l > n)
            l = n - i;
        memcpy(text + i, piece, l);
        i += l;
    }
    text[n] = '\0';
    ps_tok_segs segs = {0};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(ps_tok_added_split(a, false, text, n, &segs), 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    size_t markers = 0;
    for (size_t i = 0; i < segs.n; i++)
        markers += segs.v[i].id == 128009;
    assert_true(markers > 1000);
    print_message("# split 4 MB against 256 added tokens: %.1f MB/s\n", 4 / s);
    assert_true(s < 2.0); /* a linear scan: well under a second even under sanitizers */
    ps_tok_segs_free(&segs);
    free(text);
    ps_tok_added_free(a);
}

static void test_leftmost_longest(void **state)
{
    (void)state;
    ps_tok_added *a = load("[" TOK("ab", "") "," TOK("abc", "") "," TOK("bcd", "") "]", NULL,
                           model5());
    assert_string_equal(split(a, false, "abcd"), "0:3:6 3:1:-1"); /* HF: abc d */
    assert_string_equal(split(a, false, "xbcd"), "0:1:-1 1:3:7");
    assert_string_equal(split(a, false, "abab"), "0:2:5 2:2:5");
    ps_tok_added_free(a);
}

/* A match refused by single_word is consumed all the same: in "zxabc"
 * HF finds xab (refused: z before it), and never abc. */
static void test_single_word(void **state)
{
    (void)state;
    ps_tok_added *a = load("[" TOK("xab", FL("single_word", "true")) "," TOK("abc", "") ","
                           TOK("<x>", FL("single_word", "true")) "]", NULL, model5());
    assert_string_equal(split(a, false, "zxabc"), "0:5:-1");
    assert_string_equal(split(a, false, "a<x>"), "0:4:-1");
    assert_string_equal(split(a, false, "\xc3\xa9<x>"), "0:5:-1"); /* é is a word char */
    assert_string_equal(split(a, false, ". <x>."), "0:2:-1 2:3:7 5:1:-1");
    assert_string_equal(split(a, false, "<x>_"), "0:4:-1"); /* _ is one too */
    assert_string_equal(split(a, false, "\xe2\x92\xb6<x>"), "0:6:-1"); /* circled A: Alphabetic */
    ps_tok_added_free(a);
}

static void test_lstrip_rstrip_take_unicode_space(void **state)
{
    (void)state;
    ps_tok_added *a = load("[" TOK("<x>", FL("lstrip", "true") FL("rstrip", "true")) "]", NULL,
                           model5());
    /* "a \u3000<x>\u00a0 b": both runs of White_Space go with the token */
    assert_string_equal(split(a, false, "a \xe3\x80\x80<x>\xc2\xa0 b"), "0:1:-1 1:10:5 11:1:-1");
    assert_string_equal(split(a, false, "<x><x>"), "0:3:5 3:3:5");
    ps_tok_added_free(a);
    /* rstrip may run into a token that starts with a space: HF's
     * stretches overlap ("<y> " then " <x>") */
    a = load("[" TOK(" <x>", "") "," TOK("<y>", FL("rstrip", "true")) "]", NULL, model5());
    assert_string_equal(split(a, false, "<y> <x>"), "0:4:6 3:4:5");
    ps_tok_added_free(a);
}

static void test_ids_follow_hf_add_tokens(void **state)
{
    (void)state;
    /* file ids ignored: order of the file, content in the vocabulary
     * keeps its id, a repeated content keeps the first id */
    ps_tok_added *a = load("[{\"id\":10,\"content\":\"<y>\",\"single_word\":false,\"lstrip\":false,"
                           "\"rstrip\":false,\"normalized\":false,\"special\":true},"
                           "{\"id\":7,\"content\":\"<x>\",\"single_word\":false,\"lstrip\":false,"
                           "\"rstrip\":false,\"normalized\":false,\"special\":true},"
                           "{\"id\":99,\"content\":\"c\",\"single_word\":false,\"lstrip\":false,"
                           "\"rstrip\":false,\"normalized\":false,\"special\":false},"
                           "{\"id\":42,\"content\":\"<y>\",\"single_word\":false,\"lstrip\":false,"
                           "\"rstrip\":false,\"normalized\":false,\"special\":false},"
                           "{\"id\":43,\"content\":\"\",\"single_word\":false,\"lstrip\":false,"
                           "\"rstrip\":false,\"normalized\":false,\"special\":false}]",
                           NULL, model5());
    assert_int_equal(ps_tok_added_find(a, "<y>", 3), 5);
    assert_int_equal(ps_tok_added_find(a, "<x>", 3), 6);
    assert_int_equal(ps_tok_added_find(a, "c", 1), 3);
    assert_int_equal(ps_tok_added_max_id(a), 6);
    bool special = true;
    assert_string_equal(ps_tok_added_token(a, 5, &special), "<y>");
    /* the later entry replaced the flags, but HF's special set keeps the
     * content it once held */
    assert_true(special);
    assert_string_equal(ps_tok_added_token(a, 3, &special), "c");
    assert_false(special);
    assert_null(ps_tok_added_token(a, 4, &special));
    ps_tok_added_free(a);

    /* without a model: the file's ids */
    a = load("[" TOK("<x>", FL("id", "42")) "]", NULL, NULL);
    assert_int_equal(ps_tok_added_find(a, "<x>", 3), 42);
    ps_tok_added_free(a);
}

static void test_normalized_tokens(void **state)
{
    (void)state;
    ps_tok_added *a = load("[" TOK("AB", FL("normalized", "true") FL("special", "false")) "," TOK(
                               "CD", "") "]",
                           &lower_norm, model5());
    /* AB is matched as "ab" in normalized text only; CD in the raw text */
    assert_string_equal(split(a, true, "xaby"), "0:1:-1 1:2:5 3:1:-1");
    assert_string_equal(split(a, false, "xABy"), "0:4:-1");
    assert_string_equal(split(a, false, "xCDy"), "0:1:-1 1:2:6 3:1:-1");
    assert_string_equal(split(a, true, "xcdy"), "0:4:-1");
    bool special;
    /* decoding gives HF's normalized form */
    assert_string_equal(ps_tok_added_token(a, 5, &special), "ab");
    ps_tok_added_free(a);
    /* null and empty: nothing */
    a = (ps_tok_added *)1;
    assert_int_equal(load_rc("null", NULL, NULL, &a, NULL), 0);
    assert_null(a);
    assert_string_equal(split(NULL, false, "abc"), "0:3:-1");
}

/* test_load_errors' loader: nothing may be made. */
static int try_load(const char *json, ps_error *err)
{
    ps_tok_added *a = NULL;
    int rc = load_rc(json, NULL, NULL, &a, err);
    assert_null(a);
    return rc;
}

static void test_load_errors(void **state)
{
    (void)state;
    static const ps_test_load_case cases[] = {
        {"{}", PS_EFORMAT, "t.json: added_tokens: expected an array"},
        {"[1]", PS_EFORMAT, "t.json: added_tokens[0]: expected an object"},
        {"[{\"id\":1,\"content\":\"x\"}]", PS_EFORMAT,
         "t.json: added_tokens[0]: missing member 'single_word'"},
        {"[" TOK("x", "") "," TOK("y", FL("lstrip", "1")) "]", PS_EFORMAT,
         "t.json: added_tokens[1].lstrip: expected true or false"},
        {"[" TOK("x", FL("id", "-1")) "]", PS_EFORMAT,
         "t.json: added_tokens[0].id: expected an integer from 0 to 4294967295"},
        {"[" TOK("x", FL("content", "null")) "]", PS_EFORMAT,
         "t.json: added_tokens[0]: 'content' and 'id' may not be null"},
        {"[" TOK("x", FL("id", "3000000000")) "]", PS_ELIMIT,
         "t.json: added_tokens[0]: id 3000000000 is above 2147483647"},
    };
    ps_test_load_errors(cases, sizeof cases / sizeof *cases, try_load, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chat_markers_are_single_ids),
        cmocka_unit_test(test_llama3_reserved_specials),
        cmocka_unit_test(test_leftmost_longest),
        cmocka_unit_test(test_single_word),
        cmocka_unit_test(test_lstrip_rstrip_take_unicode_space),
        cmocka_unit_test(test_ids_follow_hf_add_tokens),
        cmocka_unit_test(test_normalized_tokens),
        cmocka_unit_test(test_load_errors),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    ps_tok_vocab_free(&model5()->vocab);
    return rc;
}
