/* Templates (schema/template.c): the presets' exact output on a real Spider
 * record with its real schema (tests/data/spider/tables.json), template
 * files and their errors, placeholders, history, PICARD's SQL
 * normalisation, and the digest. */
#include "pairshard/pairshard.h"
#include "schema/schema.h"
#include "schema/template_int.h"
#include "tests/support/testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

static ps_schemas *spider;

static int setup(void **state)
{
    (void)state;
    spider = ps_test_schemas("spider/tables.json", NULL);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    ps_schemas_free(spider);
    return 0;
}

/* Spider dev.json #0, as cleaning leaves it. */
static ps_render_fields dev0(void)
{
    ps_render_fields f;
    memset(&f, 0, sizeof f);
    f.question = "How many singers do we have?";
    f.question_len = strlen(f.question);
    f.sql = "SELECT count(*) FROM singer";
    f.sql_len = strlen(f.sql);
    f.db_id = "concert_singer";
    f.db_id_len = strlen(f.db_id);
    f.schema = ps_schemas_find(spider, f.db_id, f.db_id_len);
    return f;
}

typedef struct rendered {
    ps_buf prompt, completion;
    bool has_completion;
    int rc;
    char detail[300];
} rendered;

static void render(const ps_template *t, const ps_render_fields *f, rendered *r)
{
    memset(r, 0, sizeof *r);
    ps_buf_init(&r->prompt);
    ps_buf_init(&r->completion);
    r->rc = ps_template_render(t, f, NULL, &r->prompt, &r->completion, &r->has_completion,
                               r->detail, sizeof r->detail);
}

static void rendered_free(rendered *r)
{
    ps_buf_free(&r->prompt);
    ps_buf_free(&r->completion);
}

static ps_template *open_ok(const char *name)
{
    ps_template *t = NULL;
    ps_error err;
    int rc = ps_template_open(name, &t, &err);
    if (rc)
        fail_msg("%s: %s", name, err.message);
    return t;
}

static ps_template *parse(const char *json, int want_rc, ps_error *err)
{
    ps_template *t = NULL;
    assert_int_equal(ps_template_parse(json, strlen(json), "t.json", &t, err), want_rc);
    return t;
}

/* The picard preset against the string PICARD builds (seq2seq/utils/
 * dataset.py serialize_schema, peteshaw style, normalize_query=True:
 * lower-cased names; spider.py spider_get_input/spider_get_target). */
static void test_presets_on_spider_dev0(void **state)
{
    (void)state;
    ps_render_fields f = dev0();
    assert_non_null(f.schema);
    rendered r;

    ps_template *t = open_ok("pair");
    render(t, &f, &r);
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.prompt.data, "How many singers do we have?");
    assert_true(r.has_completion);
    assert_string_equal(r.completion.data, "SELECT count(*) FROM singer");
    rendered_free(&r);
    ps_template_free(t);

    t = open_ok("question");
    render(t, &f, &r);
    assert_string_equal(r.prompt.data, "How many singers do we have?");
    assert_false(r.has_completion);
    assert_string_equal(r.completion.data, "");
    rendered_free(&r);
    ps_template_free(t);

    t = open_ok("picard");
    render(t, &f, &r);
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.prompt.data,
                        "How many singers do we have? | concert_singer | stadium : stadium_id , "
                        "location , name , capacity , highest , lowest , average | singer : "
                        "singer_id , name , country , song_name , song_release_year , age , "
                        "is_male | concert : concert_id , concert_name , theme , stadium_id , "
                        "year | singer_in_concert : concert_id , singer_id");
    assert_string_equal(r.completion.data, "concert_singer | SELECT count(*) FROM singer");
    rendered_free(&r);
    ps_template_free(t);

    t = open_ok("ddl");
    render(t, &f, &r);
    assert_int_equal(r.rc, 0);
    ps_buf ddl;
    ps_buf_init(&ddl);
    assert_int_equal(ps_schema_serialize(f.schema, PS_SCHEMA_DDL, NULL, &ddl), 0);
    size_t n = ddl.len;
    while (n && (ddl.data[n - 1] == '\n' || ddl.data[n - 1] == ' '))
        n--;
    /* the CREATE TABLEs, one blank line, the instruction, the question */
    assert_memory_equal(r.prompt.data, ddl.data, n);
    assert_true(strncmp(r.prompt.data, "CREATE TABLE stadium (\n  Stadium_ID number,", 43) == 0);
    assert_string_equal(r.prompt.data + n,
                        "\n\n-- Using valid SQLite, answer the following question for the "
                        "tables provided above.\n-- How many singers do we have?\n");
    assert_non_null(strstr(r.prompt.data, "FOREIGN KEY (Stadium_ID) REFERENCES stadium(Stadium_ID)"));
    assert_string_equal(r.completion.data, "SELECT count(*) FROM singer");
    ps_buf_free(&ddl);
    rendered_free(&r);
    ps_template_free(t);
}

static void test_history_orders_most_recent_first(void **state)
{
    (void)state;
    ps_render_fields f = dev0();
    const char *hist[] = {"  Which of them are from France? ", "How many singers are there?"};
    size_t lens[] = {strlen(hist[0]), strlen(hist[1])};
    ps_error err;
    ps_template *t = parse("{\"prompt\": \"[{history}]\", \"completion\": \"{question}{history:picard}\"}",
                           0, &err);
    rendered r;
    render(t, &f, &r); /* no history: both render empty */
    assert_string_equal(r.prompt.data, "[]");
    assert_string_equal(r.completion.data, "How many singers do we have?");
    rendered_free(&r);
    f.history = hist;
    f.history_lens = lens;
    f.n_history = 2;
    render(t, &f, &r);
    assert_string_equal(r.prompt.data,
                        "[Which of them are from France? | How many singers are there?]");
    assert_string_equal(r.completion.data, "How many singers do we have? || Which of them are "
                                           "from France? | How many singers are there?");
    rendered_free(&r);
    ps_template_info info;
    ps_template_get_info(t, &info);
    assert_true(info.uses_history);
    assert_false(info.uses_schema);
    ps_template_free(t);
}

/* The ddl preset's history: earlier questions as comment lines, oldest
 * first, before the question's; nothing without history. The other
 * presets' follow the question, PICARD's way. */
static void test_ddl_history_lines(void **state)
{
    (void)state;
    ps_render_fields f = dev0();
    const char *hist[] = {" Only the dogs.", "Show all pets. "};
    size_t lens[] = {strlen(hist[0]), strlen(hist[1])};
    ps_template *t = open_ok("ddl");
    rendered r;
    render(t, &f, &r);
    const char *tail = "for the tables provided above.\n-- How many singers do we have?\n";
    assert_non_null(strstr(r.prompt.data, tail));
    assert_null(strstr(r.prompt.data, "Earlier"));
    rendered_free(&r);
    f.history = hist;
    f.history_lens = lens;
    f.n_history = 2;
    render(t, &f, &r);
    assert_non_null(strstr(r.prompt.data, "for the tables provided above.\n"
                                          "-- Earlier question: Show all pets.\n"
                                          "-- Earlier question: Only the dogs.\n"
                                          "-- How many singers do we have?\n"));
    rendered_free(&r);
    ps_template_info info;
    ps_template_get_info(t, &info);
    assert_true(info.uses_history);
    ps_template_free(t);
    /* every preset shows a dialogue's earlier utterances */
    const char *names[] = {"pair", "question", "picard"};
    for (int i = 0; i < 3; i++) {
        t = open_ok(names[i]);
        render(t, &f, &r);
        assert_true(strncmp(r.prompt.data, "How many singers do we have?", 28) == 0);
        const char *hist_tail = " || Only the dogs. | Show all pets."; /* most recent first */
        size_t tl = strlen(hist_tail);
        assert_true(r.prompt.len > tl);
        assert_string_equal(r.prompt.data + r.prompt.len - tl, hist_tail);
        rendered_free(&r);
        ps_template_get_info(t, &info);
        assert_true(info.uses_history);
        ps_template_free(t);
    }
}

/* In a causal set a preset's prompt ends in a newline (picard and pair get
 * one, ddl has one); other layouts and template files are as written. */
static void test_causal_separator(void **state)
{
    (void)state;
    ps_render_fields f = dev0();
    ps_error err;
    const char *names[] = {"pair", "picard", "ddl"};
    for (int i = 0; i < 3; i++) {
        ps_template *pair = NULL, *causal = NULL;
        assert_int_equal(ps_template_open_layout(names[i], PS_LAYOUT_PAIR, &pair, &err), 0);
        assert_int_equal(ps_template_open_layout(names[i], PS_LAYOUT_CAUSAL, &causal, &err), 0);
        rendered a, b;
        render(pair, &f, &a);
        render(causal, &f, &b);
        assert_true(b.prompt.len && b.prompt.data[b.prompt.len - 1] == '\n');
        bool had = a.prompt.data[a.prompt.len - 1] == '\n';
        assert_int_equal(b.prompt.len, a.prompt.len + (had ? 0 : 1));
        assert_memory_equal(a.prompt.data, b.prompt.data, a.prompt.len);
        assert_string_equal(a.completion.data, b.completion.data);
        ps_template_info ia, ib;
        ps_template_get_info(pair, &ia);
        ps_template_get_info(causal, &ib);
        assert_int_equal(strcmp(ia.sha256, ib.sha256) == 0, had);
        rendered_free(&a);
        rendered_free(&b);
        ps_template_free(pair);
        ps_template_free(causal);
    }
}

/* A {NAME} the record lacks that is a placeholder misspelt says which. */
static void test_placeholder_typo(void **state)
{
    (void)state;
    ps_render_fields f = dev0();
    ps_error err;
    ps_template *t = parse("{\"prompt\": \"{questoin}\", \"completion\": \"{sql}\"}", 0, &err);
    rendered r;
    render(t, &f, &r);
    assert_int_equal(r.rc, 1);
    assert_non_null(strstr(r.detail, "{questoin}"));
    assert_non_null(strstr(r.detail, "did you mean {question}?"));
    rendered_free(&r);
    ps_template_free(t);
    t = parse("{\"prompt\": \"{evidence}\"}", 0, &err); /* a real field: no guess */
    render(t, &f, &r);
    assert_int_equal(r.rc, 1);
    assert_null(strstr(r.detail, "did you mean"));
    rendered_free(&r);
    ps_template_free(t);
}

static void test_fields_and_missing_values(void **state)
{
    (void)state;
    ps_error err;
    ps_template *t = parse("{\"prompt\": \"{evidence} {{x}} {hardness} {evidence}\"}", 0, &err);
    ps_template_info info;
    ps_template_get_info(t, &info);
    assert_int_equal(info.n_fields, 2); /* unique, in first-use order */
    assert_string_equal(info.fields[0], "evidence");
    assert_string_equal(info.fields[1], "hardness");
    assert_null(info.completion);
    ps_render_fields f = dev0();
    const char *vals[2] = {"", "easy"};
    size_t lens[2] = {0, 4};
    f.values = vals;
    f.value_lens = lens;
    rendered r;
    render(t, &f, &r); /* an empty string renders as empty */
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.prompt.data, " {x} easy ");
    rendered_free(&r);
    vals[1] = NULL; /* absent or null: a rejection naming it */
    render(t, &f, &r);
    assert_int_equal(r.rc, 1);
    assert_non_null(strstr(r.detail, "{hardness}"));
    rendered_free(&r);
    ps_template_free(t);

    t = open_ok("picard"); /* a schema placeholder without a schema */
    f = dev0();
    f.schema = NULL;
    render(t, &f, &r);
    assert_int_equal(r.rc, 1);
    assert_non_null(strstr(r.detail, "{schema:picard}"));
    rendered_free(&r);
    ps_template_free(t);
}

static void test_file_errors(void **state)
{
    (void)state;
    ps_error err;
    parse("{\"prompt\": \"Q: {question\"}", PS_EFORMAT, &err);
    assert_non_null(strstr(err.message, "t.json: prompt: the placeholder at offset 3 does not "
                                        "close"));
    parse("{\"prompt\": \"{question}\", \"completion\": \"a {} b\"}", PS_EFORMAT, &err);
    assert_non_null(strstr(err.message, "completion: empty placeholder {} at offset 2"));
    parse("{\"prompt\": \"x } y\"}", PS_EFORMAT, &err);
    assert_non_null(strstr(err.message, "offset 2"));
    parse("{\"prompt\": \"{schema:xml}\"}", PS_EUSAGE, &err);
    assert_non_null(strstr(err.message, "unknown placeholder {schema:xml} at offset 0"));
    /* An empty style is no field named "schema:" (every record would lack it). */
    parse("{\"prompt\": \"Q: {schema:}\"}", PS_EUSAGE, &err);
    assert_non_null(strstr(err.message, "t.json: prompt: unknown placeholder {schema:} at offset 3: "
                                        "no style after the colon (schema styles: picard, ddl, "
                                        "ddl_values)"));
    parse("{\"prompt\": \"{question}\", \"completion\": \"{history:}\"}", PS_EUSAGE, &err);
    assert_non_null(strstr(err.message, "completion: unknown placeholder {history:} at offset 0: "
                                        "no style after the colon (history styles: picard"));
    parse("{\"prompt\": \"{question}\", \"completions\": \"{sql}\"}", PS_EUSAGE, &err);
    assert_non_null(strstr(err.message, "unknown member \"completions\""));
    parse("{\"prompt\": \"{question}\", \"options\": {\"lowercase\": true}}", PS_EUSAGE, &err);
    assert_non_null(strstr(err.message, "unknown option \"lowercase\""));
    parse("{\"completion\": \"{sql}\"}", PS_EUSAGE, &err);
    assert_non_null(strstr(err.message, "\"prompt\" must be a string"));
    parse("{\"prompt\": \"{question}\",}", PS_EFORMAT, &err);
    assert_non_null(strstr(err.message, "t.json:1:"));
    ps_template *t = NULL;
    assert_int_equal(ps_template_open("picardd", &t, &err), PS_EUSAGE);
    assert_non_null(strstr(err.message, "unknown template 'picardd'"));
    assert_int_equal(ps_template_open("/nonexistent/t.json", &t, &err), PS_ENOENT);
}

/* The digest covers what renders: the same text gives the same digest,
 * a preset's name and the options count. */
static void test_digest(void **state)
{
    (void)state;
    ps_error err;
    /* the pair preset's texts, as a file: only the preset's name differs */
    const char *pair = "{\"prompt\": \"{question}{history:picard}\", \"completion\": \"{sql}\"}";
    ps_template *a = parse(pair, 0, &err), *b = parse(pair, 0, &err);
    ps_template *c = parse("{\"prompt\": \"{question}\", \"completion\": \"{sql}\", \"options\": "
                           "{\"normalize_sql\": true}}", 0, &err);
    ps_template *p = open_ok("pair");
    ps_template_info ia, ib, ic, ip;
    ps_template_get_info(a, &ia);
    ps_template_get_info(b, &ib);
    ps_template_get_info(c, &ic);
    ps_template_get_info(p, &ip);
    assert_int_equal(strlen(ia.sha256), 64);
    assert_string_equal(ia.sha256, ib.sha256);
    assert_string_not_equal(ia.sha256, ic.sha256);
    assert_string_not_equal(ia.sha256, ip.sha256);
    assert_string_equal(ip.name, "pair");
    assert_string_equal(ip.prompt, "{question}{history:picard}");
    ps_template_free(a);
    ps_template_free(b);
    ps_template_free(c);
    ps_template_free(p);
}

static const char *norm(const char *sql, ps_buf *b)
{
    ps_buf_reset(b);
    assert_int_equal(ps_sql_normalize_picard(sql, strlen(sql), b), 0);
    return b->data ? b->data : "";
}

/* Expected values computed with PICARD's normalize() (seq2seq/utils/
 * dataset.py) in Python. */
static void test_picard_normalize(void **state)
{
    (void)state;
    ps_buf b;
    ps_buf_init(&b);
    assert_string_equal(norm("SELECT T1.Name ,  T2.Age FROM Singer AS T1 WHERE T1.Country = "
                             "'France'", &b),
                        "select t1.name, t2.age from singer as t1 where t1.country = 'France'");
    /* a word touching a quote keeps its case; one inside a quote does not */
    assert_string_equal(norm("SELECT * FROM t WHERE a = \"New York City\"", &b),
                         "select * from t where a = \"New york City\"");
    assert_string_equal(norm("a , , b", &b), "a, , b");
    assert_string_equal(norm("  x ,", &b), "x ,");
    ps_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_presets_on_spider_dev0),
        cmocka_unit_test(test_history_orders_most_recent_first),
        cmocka_unit_test(test_ddl_history_lines),
        cmocka_unit_test(test_causal_separator),
        cmocka_unit_test(test_placeholder_typo),
        cmocka_unit_test(test_fields_and_missing_values),
        cmocka_unit_test(test_file_errors),
        cmocka_unit_test(test_digest),
        cmocka_unit_test(test_picard_normalize),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
