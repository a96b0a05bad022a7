/* Tests of validate/: the Spider incident: cleaning rules that damage the data
 * fail the gate, a clean run passes. Shared helpers:
 * tests/support/validate_fixture.c. */
#include "tests/support/validate_fixture.h"

#include "common/unicode.h"
#include "schema/schema.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the incident, on Spider ----------------------------------------------------- */

typedef struct spider_run {
    ps_vstats *raw, *cleaned, *tok;
    ps_vpaired *paired;
    json_t *elems;
    const ps_tokenizer *tk;
    ps_tok_scratch *scr;
    int32_t unk;
} spider_run;

/* The SQL's Spider hardness class, as the build takes it. */
static const char *hardness(const char *sql, size_t len)
{
    ps_sql_hardness level;
    assert_int_equal(ps_sql_hardness_classify(sql, len, NULL, &level), 0);
    return ps_sql_hardness_name(level);
}

static int spider_sink(void *user, const ps_clean_result *r)
{
    spider_run *h = user;
    const char *hash = strrchr(r->source, '#');
    json_t *e = json_array_get(h->elems, hash ? strtoul(hash + 1, NULL, 10) : 0);
    const char *q = json_string_value(json_object_get(e, "question"));
    const char *s = json_string_value(json_object_get(e, "query"));
    const char *lab = json_string_value(json_object_get(e, "db_id"));
    assert_true(q && s && lab);
    size_t ql = strlen(q), sl = strlen(s);
    bool changed = r->outcome != PS_OUTCOME_REJECTED &&
                   (r->question_len != ql || memcmp(r->question, q, ql) || r->sql_len != sl ||
                    memcmp(r->sql, s, sl));
    ps_vrecord raw = rec(lab, ps_utf8_count(q, ql), ps_utf8_count(s, sl), PS_VSTATS_NO_TOKENS);
    raw.changed = changed;
    raw.hardness = hardness(s, sl);
    assert_int_equal(ps_vstats_add(h->raw, &raw), 0);
    ps_vpair p = {.id = r->id, .source = r->source, .label = lab, .outcome = r->outcome,
                  .reason = r->reason, .rule = r->rule, .question_before = q,
                  .question_before_len = ql, .sql_before = s, .sql_before_len = sl};
    if (r->outcome != PS_OUTCOME_REJECTED) {
        p.question_after = r->question;
        p.question_after_len = r->question_len;
        p.sql_after = r->sql;
        p.sql_after_len = r->sql_len;
    }
    assert_int_equal(ps_vpaired_add(h->paired, &p), 0);
    if (r->outcome != PS_OUTCOME_KEPT)
        return 0;
    ps_vrecord c = rec(r->label, ps_utf8_count(r->question, r->question_len), ps_utf8_count(r->sql, r->sql_len),
                       PS_VSTATS_NO_TOKENS);
    c.changed = changed;
    c.hardness = hardness(r->sql, r->sql_len);
    assert_int_equal(ps_vstats_add(h->cleaned, &c), 0);
    ps_encoding enc;
    int n = ps_tokenizer_encode_pair(h->tk, h->scr, r->question, r->question_len, r->sql,
                                     r->sql_len, 512, &enc, NULL);
    assert_true(n >= 0);
    c.tokens = (uint32_t)enc.len;
    for (size_t i = 0; i < enc.len; i++)
        c.unk_tokens += enc.input_ids[i] == h->unk;
    c.truncated = enc.truncated;
    assert_int_equal(ps_vstats_add(h->tok, &c), 0);
    return 0;
}

/* Spider-shaped JSON arrays (question, query, db_id), with optional rules:
 * the build's report. */
static ps_vreport *files_report(const char *const *paths, size_t npaths, const char *rules,
                                const char *vocab)
{
    ps_tokenizer *tk = NULL;
    assert_int_equal(ps_tokenizer_load_vocab(ps_test_data(vocab), NULL, &tk, NULL), 0);
    spider_run h = {ps_vstats_new("raw"), ps_vstats_new("cleaned"), ps_vstats_new("tokenized"),
                    ps_vpaired_new(10), NULL, tk, ps_tok_scratch_new(), 0};
    h.unk = ps_tokenizer_token_to_id(tk, "[UNK]", 5);
    ps_clean_options o;
    ps_clean_options_init(&o);
    o.label_field = "db_id";
    ps_cleaner *c = NULL;
    ps_error err;
    assert_int_equal(ps_cleaner_create(&o, &c, &err), 0);
    if (rules)
        assert_int_equal(ps_cleaner_add_rules(c, rules, strlen(rules), "rules", &err), 0);
    for (size_t i = 0; i < npaths; i++) {
        const char *path = paths[i];
        h.elems = json_load_file(path, 0, NULL);
        assert_non_null(h.elems);
        assert_int_equal(ps_cleaner_run(c, path, spider_sink, &h, &err), 0);
        json_decref(h.elems);
    }
    ps_cleaner_free(c);
    uint32_t bounds[] = {32, 48, 64, 96, 128, 512};
    assert_int_equal(ps_vstats_set_padding(h.tok, bounds, 6), 0);
    ps_vreport *r = NULL;
    assert_int_equal(ps_validate_build(NULL, h.raw, h.cleaned, h.tok, h.paired, &r, &err), 0);
    ps_vstats_free(h.raw);
    ps_vstats_free(h.cleaned);
    ps_vstats_free(h.tok);
    ps_vpaired_free(h.paired);
    ps_tok_scratch_free(h.scr);
    ps_tokenizer_free(tk);
    return r;
}

/* Spider train + dev, db_id labels. */
static ps_vreport *spider_report(const char *rules)
{
    char train[4096], dev[4096];
    snprintf(train, sizeof train, "%s", ps_test_data("spider/train.json"));
    snprintf(dev, sizeof dev, "%s", ps_test_data("spider/dev.json"));
    const char *paths[] = {train, dev};
    return files_report(paths, 2, rules, "vocab/bert-base-uncased.vocab.txt");
}

static void test_spider_clean_passes(void **state)
{
    (void)state;
    ps_vreport *r = spider_report(NULL);
    for (size_t i = 0; i < r->n; i++)
        if (r->checks[i].verdict != PS_VV_PASS)
            fail_msg("clean Spider: %s is %s: %s", r->checks[i].name,
                     ps_vverdict_names[r->checks[i].verdict], r->checks[i].explanation);
    assert_string_equal(ps_vreport_verdict(r), "pass");
    ps_vreport_free(r);
}

/* The incident: a word-splitting rule that (through its lookahead) only
 * fires on questions about wines, i.e. on one database (wine_1). */
static void test_spider_split_words_rule_fails(void **state)
{
    (void)state;
    ps_vreport *r = spider_report(
        "[{\"name\": \"split-words\", \"field\": \"question\", \"replace\": "
        "\"(?i)(?:^(?=.*\\\\bwines?\\\\b)|(?!^)\\\\G)\\\\W*\\\\w\\\\K(?=\\\\W*\\\\w)\", \"with\": \" \"}]");
    assert_string_equal(ps_vreport_verdict(r), "fail");
    assert_fails_explained(r, "question_length_change", "'wine_1'");
    assert_fails_explained(r, "question_chars_ks_label", "'wine_1'");
    char *sum = ps_vreport_summary(r);
    assert_non_null(strstr(sum, "question_length_change"));
    assert_non_null(strstr(sum, "wine_1"));
    free(sum);
    /* the most changed records are shown, from that database */
    json_t *ex = json_object_get(r->paired, "examples");
    assert_true(json_array_size(ex) > 0);
    assert_string_equal(json_string_value(json_object_get(json_array_get(ex, 0), "label")), "wine_1");
    ps_vreport_free(r);
}

static void test_spider_drop_rule_fails(void **state)
{
    (void)state;
    ps_vreport *r = spider_report(
        "[{\"name\": \"no-wine\", \"field\": \"question\", \"drop_if\": \"(?i)\\\\bwines?\\\\b\"}]");
    assert_string_equal(ps_vreport_verdict(r), "fail");
    assert_fails_explained(r, "label_retention", "'wine_1'");
    assert_fails_explained(r, "label_js_distance", "'wine_1'");
    ps_vreport_free(r);
}

/* Spider dev plus one database of Chinese questions; a rule meant to keep
 * questions ASCII strips the CJK characters: that database is emptied or
 * mangled, and the gate names it. */
static void test_cjk_strip_rule_fails(void **state)
{
    (void)state;
    /* characters all in bert-base-uncased's vocabulary */
    static const char *const ZH[] = {"\\u6709\\u540d\\u7684\\u6b4c\\u624b",
                                     "\\u4e2d\\u56fd\\u7684\\u6b4c\\u624b",
                                     "\\u5927\\u5b66\\u751f\\u6b4c\\u624b",
                                     "\\u65e5\\u672c\\u7684\\u6b4c\\u624b\\u6709"};
    char dev[4096];
    snprintf(dev, sizeof dev, "%s", ps_test_data("spider/dev.json"));
    ps_buf b;
    ps_buf_init(&b);
    ps_buf_puts(&b, "[");
    for (int i = 0; i < 120; i++) {
        /* even: Chinese only (the rule empties it); odd: with a number (mangled) */
        if (i % 2)
            ps_buf_printf(&b, "%s{\"db_id\": \"singer_zh\", \"question\": \"%s %d\\uff1f\", "
                              "\"query\": \"SELECT name FROM singer WHERE age > %d\"}",
                          i ? "," : "", ZH[i % 4], 20 + i, 20 + i);
        else
            ps_buf_printf(&b, "%s{\"db_id\": \"singer_zh\", \"question\": \"%s\", "
                              "\"query\": \"SELECT name FROM singer WHERE age > %d\"}",
                          i ? "," : "", ZH[i % 4], 20 + i);
    }
    ps_buf_puts(&b, "]");
    char *zh = ps_test_tmpfile(b.data, b.len, ".json");
    ps_buf_free(&b);
    const char *paths[] = {dev, zh};
    /* without the rule: passes */
    ps_vreport *r = files_report(paths, 2, NULL, "vocab/bert-base-uncased.vocab.txt");
    if (strcmp(ps_vreport_verdict(r), "pass")) {
        char *sum = ps_vreport_summary(r);
        fail_msg("clean dev + Chinese: %s", sum);
    }
    ps_vreport_free(r);
    r = files_report(paths, 2,
                     "[{\"name\": \"ascii-only\", \"field\": \"question\", \"replace\": "
                     "\"[^\\\\x00-\\\\x7F]+\", \"with\": \"\"}]",
                     "vocab/bert-base-uncased.vocab.txt");
    assert_string_equal(ps_vreport_verdict(r), "fail");
    assert_fails_explained(r, "label_retention", "'singer_zh'");
    assert_int_equal(verdict(r, "empty_after_cleaning"), PS_VV_FAIL);
    assert_fails_explained(r, "rejected_share", "empty_after_cleaning");
    assert_fails_explained(r, "question_length_change", "'singer_zh'");
    assert_fails_explained(r, "question_chars_ks_label", "'singer_zh'");
    ps_vreport_free(r);
    remove(zh);
    free(zh);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spider_clean_passes),
        cmocka_unit_test(test_spider_split_words_rule_fails),
        cmocka_unit_test(test_spider_drop_rule_fails),
        cmocka_unit_test(test_cjk_strip_rule_fails),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
