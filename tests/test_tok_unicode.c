/* Which host Unicode data a tokenizer's ids depend on (tokenize/
 * unicode_check.h), and the comparison of versions behind the load-time
 * refusal and ps_preprocessor_open's: BERT's pipeline and any normalizer or
 * pre-tokenizer read utf8proc; a Split or Replace regex PCRE2 (GPT-2's
 * pattern runs on the built-in scanner: not PCRE2); a model alone neither.
 * The tables were generated for the Unicode this host's libraries carry,
 * so every tokenizer loads here. */
#include "tests/support/testutil.h"
#include "tokenize/unicode.h"
#include "tokenize/unicode_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static unsigned deps_of_json(const char *path)
{
    ps_tokenizer *tok = NULL;
    ps_error err = {0};
    if (ps_tokenizer_load_json(path, &tok, &err))
        fail_msg("%s: %s", path, err.message);
    unsigned d = tok->unicode_deps;
    ps_tokenizer_free(tok);
    return d;
}

static void test_deps(void **state)
{
    (void)state;
    ps_tokenizer *bert = ps_test_bert_tokenizer();
    assert_int_equal(bert->unicode_deps, PS_UNIDEP_UTF8PROC);
    ps_tokenizer_free(bert);
    assert_int_equal(deps_of_json(ps_test_data("tokenizers/gpt2.tokenizer.json")),
                     PS_UNIDEP_UTF8PROC);
    assert_int_equal(deps_of_json(ps_test_data("tokenizers/split-behaviors-wordpiece.tokenizer.json")),
                     PS_UNIDEP_UTF8PROC | PS_UNIDEP_PCRE2);
    /* a WordLevel model with neither normalizer nor pre-tokenizer */
    const char *json =
        "{\"version\":\"1.0\",\"truncation\":null,\"padding\":null,\"added_tokens\":[],"
        "\"normalizer\":null,\"pre_tokenizer\":null,\"post_processor\":null,\"decoder\":null,"
        "\"model\":{\"type\":\"WordLevel\",\"vocab\":{\"a\":0,\"[UNK]\":1},\"unk_token\":\"[UNK]\"}}";
    char *path = ps_test_tmpfile(json, strlen(json), ".json");
    assert_int_equal(deps_of_json(path), 0);
    unlink(path);
    free(path);
}

static void test_versions_match(void **state)
{
    (void)state;
    ps_uni_mismatch mm = {0};
    assert_true(ps_uni_versions_match(PS_UNIDEP_UTF8PROC | PS_UNIDEP_PCRE2, "15.0.0", "14.0.0",
                                      "15.0.0", "14.0.0", &mm));
    assert_false(ps_uni_versions_match(PS_UNIDEP_UTF8PROC, "15.0.0", "14.0.0", "15.1.0",
                                       "14.0.0", &mm));
    assert_string_equal(mm.lib, "utf8proc");
    assert_string_equal(mm.have, "15.1.0");
    assert_string_equal(mm.want, "15.0.0");
    /* only the libraries the tokenizer reads count */
    assert_true(ps_uni_versions_match(PS_UNIDEP_PCRE2, "15.0.0", "14.0.0", "16.0.0", "14.0.0",
                                      &mm));
    assert_true(ps_uni_versions_match(0, "15.0.0", "14.0.0", "16.0.0", "15.0.0", &mm));
    assert_false(ps_uni_versions_match(PS_UNIDEP_PCRE2, "15.0.0", "14.0.0", "15.0.0", "15.0.0",
                                       &mm));
    assert_string_equal(mm.lib, "PCRE2");
    /* a version not recorded differs from any */
    assert_false(ps_uni_versions_match(PS_UNIDEP_PCRE2, "15.0.0", NULL, "15.0.0", "14.0.0", &mm));
    assert_string_equal(mm.want, "unknown");
}

static void test_host_is_the_tables(void **state)
{
    (void)state;
    /* the versions this build's tables were generated for are this host's:
     * the premise of every conformance result */
    assert_string_equal(ps_uni_host_utf8proc(), ps_uni_tables_ucd_version);
    assert_string_equal(ps_uni_host_pcre2(), ps_uni_tables_pcre2_version);
    char names[32];
    ps_uni_deps_names(PS_UNIDEP_UTF8PROC | PS_UNIDEP_PCRE2, names, sizeof names);
    assert_string_equal(names, "utf8proc, PCRE2");
    ps_uni_deps_names(PS_UNIDEP_PCRE2, names, sizeof names);
    assert_string_equal(names, "PCRE2");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_deps),
        cmocka_unit_test(test_versions_match),
        cmocka_unit_test(test_host_is_the_tables),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
