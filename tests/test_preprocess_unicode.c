/* The Unicode versions a set records and ps_preprocessor_open compares:
 * a set built here records the versions its tables assume, this host's
 * utf8proc and PCRE2 Unicode versions and which of the two its tokenizer
 * reads; a manifest edited to say another version of a library the
 * tokenizer depends on is refused with PS_EVERSION naming the library and
 * both versions, or with allow_unicode_mismatch opened with that warning
 * and the same ids; a library the tokenizer does not read may differ. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tests/support/testutil.h"

#include <jansson.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

static void sh(const char *cmd)
{
    if (system(cmd) != 0)
        fail_msg("failed: %s", cmd);
}

/* Builds `set` under ps_test_root from Spider dev's first 200 records with
 * the tokenizer option `tok`. */
static void build(const char *set, const char *tok)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "python3 -c \"import json,sys; json.dump(json.load(open(sys.argv[1]))"
             "[:200], open(sys.argv[2], 'w'))\" '%s' '%s/in.json' && '%s' build -q --no-gate "
             "--max-length 64 %s -o '%s/%s' '%s/in.json'", ps_test_data("spider/dev.json"),
             ps_test_root, ps_test_bin, tok, ps_test_root, set, ps_test_root);
    sh(cmd);
}

/* A copy of `from` named `to` whose manifest has `py` applied to m, its
 * parsed JSON (a Python statement). */
static const char *edited(const char *from, const char *to, const char *py)
{
    static char dir[512];
    char cmd[4096];
    snprintf(dir, sizeof dir, "%s/%s", ps_test_root, to);
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && cp -r '%s/%s' '%s' && python3 -c \"import json,sys; "
             "m=json.load(open(sys.argv[1])); %s; json.dump(m, open(sys.argv[1], 'w'), indent=2)\" "
             "'%s/manifest.json'", dir, ps_test_root, from, dir, py, dir);
    sh(cmd);
    return dir;
}

static const char *host_pcre2(void)
{
    static char v[32];
    pcre2_config(PCRE2_CONFIG_UNICODE_VERSION, v);
    return v;
}

static void expect_refused(const char *dir, const char *lib, const char *set_v,
                           const char *host_v)
{
    ps_preprocessor *p = NULL;
    ps_error err = {0};
    assert_int_equal(ps_preprocessor_open(dir, &p, &err), PS_EVERSION);
    assert_null(p);
    if (!strstr(err.message, lib) || !strstr(err.message, set_v) ||
        !strstr(err.message, host_v) || !strstr(err.message, "allow_unicode_mismatch"))
        fail_msg("the refusal does not name %s, %s and %s: %s", lib, set_v, host_v, err.message);
}

/* The ids of one question. */
static size_t ids_of(ps_preprocessor *p, const char *q, int32_t *ids, size_t cap)
{
    ps_preprocess_input in = {.question = q};
    ps_preprocess_output out;
    ps_error err = {0};
    assert_int_equal(ps_preprocess(p, &in, &out, &err), 0);
    assert_true(out.length <= cap);
    memcpy(ids, out.input_ids, out.length * sizeof *ids);
    return out.length;
}

static void test_manifest_records_versions(void **state)
{
    (void)state;
    char vocab[600], tj[600];
    snprintf(vocab, sizeof vocab, "--vocab '%s'", ps_test_data("vocab/bert-base-uncased.vocab.txt"));
    snprintf(tj, sizeof tj, "--tokenizer-json '%s'",
             ps_test_data("tokenizers/split-behaviors-wordpiece.tokenizer.json"));
    build("bert", vocab);
    build("split", tj);
    char path[512];
    snprintf(path, sizeof path, "%s/bert/manifest.json", ps_test_root);
    json_t *m = json_load_file(path, 0, NULL);
    assert_non_null(m);
    json_t *u = json_object_get(m, "unicode");
    assert_string_equal(json_string_value(json_object_get(json_object_get(u, "tables"), "ucd")),
                        "15.0.0");
    assert_string_equal(json_string_value(json_object_get(json_object_get(u, "tables"), "pcre2")),
                        "14.0.0");
    assert_string_equal(json_string_value(json_object_get(u, "utf8proc")),
                        utf8proc_unicode_version());
    assert_string_equal(json_string_value(json_object_get(u, "pcre2")), host_pcre2());
    /* BERT's pipeline reads categories, compiles no regex */
    json_t *uses = json_object_get(u, "tokenizer_uses");
    assert_int_equal(json_array_size(uses), 1);
    assert_string_equal(json_string_value(json_array_get(uses, 0)), "utf8proc");
    json_decref(m);
    snprintf(path, sizeof path, "%s/split/manifest.json", ps_test_root);
    m = json_load_file(path, 0, NULL);
    uses = json_object_get(json_object_get(m, "unicode"), "tokenizer_uses");
    assert_int_equal(json_array_size(uses), 2); /* NFKD and Split regexes */
    assert_string_equal(json_string_value(json_array_get(uses, 1)), "pcre2");
    json_decref(m);
    /* as built, both open without a warning */
    ps_preprocessor *p = ps_test_preprocessor(edited("bert", "plain", "pass"));
    assert_null(ps_preprocessor_get_warning(p));
    ps_preprocessor_free(p);
}

static void test_other_utf8proc_refused(void **state)
{
    (void)state;
    const char *host = utf8proc_unicode_version();
    const char *dir = edited("bert", "u14", "m['unicode']['utf8proc'] = '14.0.0'");
    expect_refused(dir, "utf8proc", "14.0.0", host);
    /* the tables the set's build had, too */
    dir = edited("bert", "t16", "m['unicode']['tables']['ucd'] = '16.0.0'");
    expect_refused(dir, "utf8proc", "16.0.0", "15.0.0");
    /* a set of an older release: its "libraries" say utf8proc's version */
    dir = edited("bert", "old", "del m['unicode']; "
                 "m['libraries']['utf8proc'] = '2.7.0 (Unicode 14.0.0)'");
    expect_refused(dir, "utf8proc", "14.0.0", host);
    ps_preprocessor_free(ps_test_preprocessor(edited("bert", "old-same", "del m['unicode']")));
}

static void test_library_not_read_may_differ(void **state)
{
    (void)state;
    /* BERT's vocab.txt pipeline compiles no regex: PCRE2's Unicode cannot
     * change its ids */
    ps_preprocessor *p = ps_test_preprocessor(
        edited("bert", "p10", "m['unicode']['pcre2'] = '10.0.0'; "
               "m['unicode']['tables']['pcre2'] = '10.0.0'"));
    assert_null(ps_preprocessor_get_warning(p));
    ps_preprocessor_free(p);
    /* the Split regexes' tokenizer does read it */
    expect_refused(edited("split", "sp10", "m['unicode']['pcre2'] = '10.0.0'"), "PCRE2",
                   "10.0.0", host_pcre2());
}

static void test_allowed_with_warning(void **state)
{
    (void)state;
    ps_preprocess_options o;
    assert_int_equal(ps_preprocess_options_init(&o), 0);
    assert_int_equal(o.allow_unicode_mismatch, 0);
    o.allow_unicode_mismatch = 1;
    ps_preprocessor *p = NULL, *ref = NULL;
    ps_error err = {0};
    const char *dir = edited("split", "sp-allow", "m['unicode']['pcre2'] = '10.0.0'");
    assert_int_equal(ps_preprocessor_open_opts(dir, &o, &p, &err), 0);
    const char *w = ps_preprocessor_get_warning(p);
    assert_non_null(w);
    if (!strstr(w, "PCRE2") || !strstr(w, "10.0.0") || !strstr(w, host_pcre2()))
        fail_msg("the warning does not name PCRE2 and both versions: %s", w);
    /* served as the unedited set serves it */
    char plain[512];
    snprintf(plain, sizeof plain, "%s/split", ps_test_root);
    ref = ps_test_preprocessor(plain);
    int32_t a[128], b[128];
    const char *q = "How many singers (aged 30; or 40) are from France, Ünïcode?";
    size_t na = ids_of(p, q, a, 128), nb = ids_of(ref, q, b, 128);
    assert_int_equal(na, nb);
    assert_memory_equal(a, b, na * sizeof *a);
    ps_preprocessor_free(p);
    ps_preprocessor_free(ref);
    /* NULL options are the defaults: refused */
    assert_int_equal(ps_preprocessor_open_opts(dir, NULL, &p, &err), PS_EVERSION);
    /* an options struct never initialised is refused as such */
    ps_preprocess_options bad = {0};
    assert_int_equal(ps_preprocessor_open_opts(dir, &bad, &p, &err), PS_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_manifest_records_versions),
        cmocka_unit_test(test_other_utf8proc_refused),
        cmocka_unit_test(test_library_not_read_may_differ),
        cmocka_unit_test(test_allowed_with_warning),
    };
    return cmocka_run_group_tests(tests, ps_test_cli_setup, ps_test_cli_teardown);
}
