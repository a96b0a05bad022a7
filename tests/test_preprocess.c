/* Tests of pairshard/preprocess.h: for every record of sets built by the
 * CLI (Spider dev with rules and --normalize nfc, Spider dev under the
 * picard template with its schemas, BIRD's sample with a template file
 * reading {evidence} and a schema, a CSpider-like set with Chinese
 * questions), the preprocessor's ids for the raw record equal the ids the
 * set stores, read back through ps_reader in stored order; the records it
 * rejects are the ones the build rejected. A tampered embedded file is
 * refused naming it; a set without embedded files is refused clearly. */
#include "tests/support/testutil.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void sh(const char *cmd)
{
    if (system(cmd) != 0)
        fail_msg("failed: %s", cmd);
}

/* Builds `set` under ps_test_root with the CLI: `opts` then the input. */
static const char *build(const char *set, const char *opts, const char *input)
{
    static char dir[256];
    char cmd[8192];
    snprintf(dir, sizeof dir, "%s/%s", ps_test_root, set);
    snprintf(cmd, sizeof cmd, "'%s' build -q --threads 2 --keep-duplicates --buckets 4096 "
             "--no-gate %s -o '%s' '%s'", ps_test_bin, opts, dir, input);
    sh(cmd);
    return dir;
}

/* Every stored record, in stored order. */
typedef struct stored {
    size_t n, cap;
    int32_t **ids;
    uint8_t **types;
    size_t *len;
    char **id;
} stored;

static void take_row(void *ctx, const ps_batch *b, uint32_t i)
{
    stored *s = ctx;
    const int32_t *ids = b->input_ids, *lens = b->lengths, *tt = b->token_type_ids;
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 256;
        s->ids = realloc(s->ids, s->cap * sizeof *s->ids);
        s->types = realloc(s->types, s->cap * sizeof *s->types);
        s->len = realloc(s->len, s->cap * sizeof *s->len);
        s->id = realloc(s->id, s->cap * sizeof *s->id);
    }
    size_t n = (size_t)lens[i];
    s->len[s->n] = n;
    s->ids[s->n] = malloc(n * sizeof(int32_t) + 1);
    s->types[s->n] = malloc(n + 1);
    memcpy(s->ids[s->n], ids + (size_t)i * b->T, n * sizeof(int32_t));
    for (size_t t = 0; t < n; t++)
        s->types[s->n][t] = (uint8_t)tt[(size_t)i * b->T + t];
    s->id[s->n] = strdup(b->ids[i]);
    s->n++;
}

static void read_set(const char *dir, stored *s)
{
    memset(s, 0, sizeof *s);
    ps_test_read_rows(dir, 1, take_row, s);
}

static void stored_free(stored *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->ids[i]), free(s->types[i]), free(s->id[i]);
    free(s->ids), free(s->types), free(s->len), free(s->id);
}

static long manifest_count(const char *dir, const char *key)
{
    json_t *m = json_load_file(ps_test_path(dir, "manifest.json"), 0, NULL);
    assert_non_null(m);
    long v = (long)json_integer_value(json_object_get(json_object_get(m, "accounting"), key));
    json_decref(m);
    return v;
}

/* The round trip over every record of the JSON array `input`: the raw
 * element, re-serialised, is what the build read. Returns how many
 * records the preprocessor kept. */
static size_t round_trip(const char *dir, const char *input)
{
    stored s;
    read_set(dir, &s);
    ps_preprocessor *p = ps_test_preprocessor(dir);
    ps_error err = {0};
    json_t *arr = json_load_file(input, 0, NULL);
    assert_true(json_is_array(arr));
    size_t k = 0, rejected = 0;
    for (size_t i = 0; i < json_array_size(arr); i++) {
        char *rec = json_dumps(json_array_get(arr, i), JSON_COMPACT);
        ps_preprocess_input in = {.record = rec, .record_len = strlen(rec)};
        ps_preprocess_output out;
        if (ps_preprocess(p, &in, &out, &err))
            fail_msg("record %zu: %s", i, err.message);
        free(rec);
        if (out.rejected) {
            rejected++;
            continue;
        }
        if (k >= s.n)
            fail_msg("%s: record %zu kept, but the set stores only %zu", dir, i, s.n);
        /* stored in input order: the default id names the element */
        const char *hash = strrchr(s.id[k], '#');
        if (hash)
            assert_int_equal(strtoul(hash + 1, NULL, 10), i);
        if (out.length != s.len[k] ||
            memcmp(out.input_ids, s.ids[k], out.length * sizeof(int32_t)) != 0 ||
            memcmp(out.token_type_ids, s.types[k], out.length) != 0)
            fail_msg("%s: record %zu (%s): ids differ from the stored ones (%zu vs %zu ids)",
                     dir, i, s.id[k], out.length, s.len[k]);
        for (size_t t = 0; t < out.length; t++)
            assert_int_equal(out.attention_mask[t], 1);
        k++;
    }
    assert_int_equal(k, s.n);
    assert_int_equal((long)rejected, manifest_count(dir, "rejected"));
    json_decref(arr);
    ps_preprocessor_free(p);
    stored_free(&s);
    return k;
}

/* ps_test_data into a buffer of its own (it returns a static one). */
static const char *data(const char *rel)
{
    static char bufs[4][1024];
    static int k;
    char *b = bufs[k++ % 4];
    snprintf(b, sizeof bufs[0], "%s", ps_test_data(rel));
    return b;
}

static const char *rules_file(void)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/rules.json", ps_test_root);
    ps_test_write_file(path,
        "[{\"name\": \"count-of\", \"field\": \"question\", \"replace\": \"^How many\", "
        "\"with\": \"Count of\", \"flags\": \"i\"},\n"
        " {\"name\": \"no-like\", \"field\": \"sql\", \"drop_if\": \"\\\\bLIKE\\\\b\"},\n"
        " {\"name\": \"spaced-eq\", \"field\": \"sql\", \"replace\": \"\\\\s*=\\\\s*\", "
        "\"with\": \" = \"}]\n");
    return path;
}

static void test_spider_rules_nfc(void **state)
{
    (void)state;
    char opts[2048];
    snprintf(opts, sizeof opts, "--vocab '%s' --rules '%s' --normalize nfc --max-length 48",
             data("vocab/bert-base-uncased.vocab.txt"), rules_file());
    const char *dir = build("spider", opts, data("spider/dev.json"));
    size_t kept = round_trip(dir, data("spider/dev.json"));
    assert_true(kept > 900 && kept < 1034); /* the LIKE queries are dropped */
}

static void test_spider_picard_schema(void **state)
{
    (void)state;
    char opts[2048];
    /* 128 tokens: many prompts have their schema shortened, some rejected */
    snprintf(opts, sizeof opts, "--vocab '%s' --schema '%s' --template picard --max-length 128",
             data("vocab/bert-base-uncased.vocab.txt"),
             data("spider/tables.json"));
    const char *dir = build("picard", opts, data("spider/dev.json"));
    assert_true(round_trip(dir, data("spider/dev.json")) > 500);
}

static void test_bird_template_evidence(void **state)
{
    (void)state;
    char tpl[256], opts[2048];
    snprintf(tpl, sizeof tpl, "%s/bird-template.json", ps_test_root);
    ps_test_write_file(tpl, "{\"prompt\": \"{question} Hint: {evidence} | {schema:ddl}\", "
                            "\"completion\": \"{sql}\"}\n");
    snprintf(opts, sizeof opts, "--vocab '%s' --schema '%s' --template '%s' "
             "--sql-field SQL,query --max-length 512",
             data("vocab/bert-base-uncased.vocab.txt"),
             data("formats/bird/dev_tables.json"), tpl);
    const char *dir = build("bird", opts, data("formats/bird/dev.json"));
    assert_int_equal(round_trip(dir, data("formats/bird/dev.json")), 6);
}

static void test_cspider_like(void **state)
{
    (void)state;
    char cmd[2048], input[256], opts[1024];
    snprintf(input, sizeof input, "%s/cspider.json", ps_test_root);
    snprintf(cmd, sizeof cmd, "python3 '%s' '%s' '%s' 400", data("cspider/make_cspider_like.py"),
             data("spider/dev.json"), input);
    sh(cmd);
    snprintf(opts, sizeof opts, "--vocab '%s' --lowercase --max-length 96",
             data("vocab/bert-base-chinese.vocab.txt"));
    const char *dir = build("cspider", opts, input);
    assert_true(round_trip(dir, input) > 300);
    /* the hand-made CSpider sample too (full-width punctuation) */
    dir = build("cspider4", opts, data("formats/cspider/dev.json"));
    assert_int_equal(round_trip(dir, data("formats/cspider/dev.json")), 4);
}

/* Serving: the fields given one by one give the raw record's ids; without
 * SQL, the prompt alone; the per-field cleaner cleans as the build did. */
static void test_fields_and_serving(void **state)
{
    (void)state;
    char dir[256];
    snprintf(dir, sizeof dir, "%s/picard", ps_test_root);
    ps_preprocessor *p = ps_test_preprocessor(dir);
    ps_error err = {0};
    assert_int_equal(ps_preprocessor_get_max_length(p), 128); /* the build's --max-length */
    assert_int_equal(ps_preprocessor_get_pad_id(p), 0);        /* bert's [PAD] */
    const char *rec = "{\"db_id\": \"concert_singer\", \"query\": \"SELECT count(*)  FROM singer\", "
                      "\"question\": \"How\\u00a0many singers do we have\\uff1f\"}";
    ps_preprocess_input in = {.record = rec, .record_len = strlen(rec)};
    ps_preprocess_output a;
    assert_int_equal(ps_preprocess(p, &in, &a, &err), 0);
    assert_false(a.rejected);
    assert_string_equal(a.question, "How many singers do we have?"); /* NFKC, folded */
    assert_string_equal(a.sql, "SELECT count(*) FROM singer");
    assert_non_null(a.completion);
    size_t n = a.length;
    int32_t *ids = malloc(n * sizeof *ids);
    memcpy(ids, a.input_ids, n * sizeof *ids);
    ps_preprocess_input f = {.question = "How\xc2\xa0many singers do we have\xef\xbc\x9f",
                             .sql = "SELECT count(*)  FROM singer", .db_id = "concert_singer"};
    assert_int_equal(ps_preprocess(p, &f, &a, &err), 0);
    assert_int_equal(a.length, n);
    assert_memory_equal(a.input_ids, ids, n * sizeof *ids);
    /* serving: no SQL → the prompt alone, one segment */
    f.sql = NULL;
    assert_int_equal(ps_preprocess(p, &f, &a, &err), 0);
    assert_false(a.rejected);
    assert_null(a.completion);
    assert_null(a.sql);
    assert_true(a.length < n);
    assert_memory_equal(a.input_ids, ids, (a.length - 1) * sizeof *ids); /* up to its [SEP] */
    for (size_t t = 0; t < a.length; t++)
        assert_int_equal(a.token_type_ids[t], 0);
    /* invalid UTF-8 meets the set's --utf8 policy (reject), as in a build */
    ps_preprocess_input bad = {.question = "How many \xff singers", .db_id = "concert_singer"};
    assert_int_equal(ps_preprocess(p, &bad, &a, &err), 0);
    assert_true(a.rejected);
    assert_string_equal(a.reason, "invalid_utf8");
    /* quotes, backslashes and controls in a field survive the record made of it */
    ps_preprocess_input q = {.question = "Name \"quoted\" \\ and\ttab", .db_id = "concert_singer"};
    assert_int_equal(ps_preprocess(p, &q, &a, &err), 0);
    assert_false(a.rejected);
    assert_string_equal(a.question, "Name \"quoted\" \\ and tab");
    /* an unknown database is the build's rejection */
    f.db_id = "no_such_db";
    assert_int_equal(ps_preprocess(p, &f, &a, &err), 0);
    assert_true(a.rejected);
    assert_string_equal(a.reason, "unknown_database");
    /* one field, cleaned alone */
    const char *out, *reason;
    size_t len;
    const char *raw = " Which\xe2\x80\x8b  year\xef\xbc\x9f ";
    assert_int_equal(ps_preprocessor_clean(p, "question", raw, strlen(raw), &out, &len, &reason,
                                           &err), 0);
    assert_null(reason);
    assert_string_equal(out, "Which year?");
    assert_int_equal(ps_preprocessor_clean(p, "question", " \xe2\x80\x8b ", 5, &out, &len,
                                           &reason, &err), 0);
    assert_null(out);
    assert_string_equal(reason, "empty_after_cleaning");
    free(ids);
    ps_preprocessor_free(p);
}

/* A template field (BIRD's {evidence}) is cleaned like the question, but
 * as in a build, an empty one rejects nothing: the set's build keeps a
 * record whose evidence is empty, and clean(field="evidence") says so. */
static void test_clean_template_field(void **state)
{
    (void)state;
    char dir[256];
    snprintf(dir, sizeof dir, "%s/bird", ps_test_root);
    ps_preprocessor *p = ps_test_preprocessor(dir);
    ps_error err = {0};
    const char *out, *reason;
    size_t len;
    const char *raw = " Free\xc2\xa0rate \xef\xbc\x9d count ";
    assert_int_equal(ps_preprocessor_clean(p, "evidence", raw, strlen(raw), &out, &len, &reason,
                                           &err), 0);
    assert_null(reason);
    assert_string_equal(out, "Free rate = count");
    const char *empties[] = {"", " \xe2\x80\x8b "};
    for (size_t i = 0; i < 2; i++) {
        assert_int_equal(ps_preprocessor_clean(p, "evidence", empties[i], strlen(empties[i]),
                                               &out, &len, &reason, &err), 0);
        assert_null(reason);
        assert_int_equal(len, 0);
        assert_string_equal(out, "");
        /* ... and the record with it is kept, as the build keeps it */
        ps_preprocess_field ev = {"evidence", empties[i]};
        ps_preprocess_input in = {.question = "How many schools?", .db_id = "california_schools",
                                  .fields = &ev, .n_fields = 1};
        ps_preprocess_output o;
        assert_int_equal(ps_preprocess(p, &in, &o, &err), 0);
        assert_false(o.rejected);
        assert_int_equal(strncmp(o.prompt, "How many schools? Hint:  | CREATE TABLE", 39), 0);
        /* the question itself may not be empty */
        assert_int_equal(ps_preprocessor_clean(p, "question", empties[i], strlen(empties[i]),
                                               &out, &len, &reason, &err), 0);
        assert_non_null(reason);
    }
    ps_preprocessor_free(p);
}

/* Opening fails with PS_ECORRUPT naming the tampered file (and saying
 * `why`, when given). */
static void expect_refused(const char *dir, const char *file, const char *why)
{
    ps_preprocessor *p = NULL;
    ps_error err = {0};
    assert_int_equal(ps_preprocessor_open(dir, &p, &err), PS_ECORRUPT);
    assert_null(p);
    if (!strstr(err.message, file))
        fail_msg("the message does not name %s: %s", file, err.message);
    if (why && !strstr(err.message, why))
        fail_msg("the message does not say \"%s\": %s", why, err.message);
}

/* A copy of set `from` (under ps_test_root) with `edit` (a shell command
 * run in the copy's folder) applied: opening it must be refused naming
 * `file` (and saying `why`, unless NULL). */
static void tamper(const char *from, const char *edit, const char *file, const char *why)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "rm -rf '%s/tamper' && cp -r '%s/%s' '%s/tamper' && cd '%s/tamper' && %s",
             ps_test_root, ps_test_root, from, ps_test_root, ps_test_root, edit);
    sh(cmd);
    snprintf(cmd, sizeof cmd, "%s/tamper", ps_test_root);
    expect_refused(cmd, file, why);
}

static void test_tampered(void **state)
{
    (void)state;
    tamper("spider", "sed -i 's/Count of/Number of/' preprocess/rules.json",
           "preprocess/rules.json", "SHA-256");
    /* the tokenizer: one token changed */
    tamper("spider", "sed -i '2000s/.*/zzz/' preprocess/vocab.txt", "preprocess/vocab.txt",
           "SHA-256");
    /* the schemas: a column renamed */
    tamper("picard", "sed -i '0,/\"Singer_ID\"/s//\"Singer_Id\"/' preprocess/schemas.json",
           "preprocess/schemas.json", "SHA-256");
    /* the file gone */
    tamper("picard", "rm preprocess/template.json", "preprocess/template.json", "cannot be read");
    /* the template: a preset swapped, a template file's text edited */
    tamper("picard", "printf '{\"preset\":\"ddl\"}' > preprocess/template.json",
           "preprocess/template.json", "SHA-256");
    tamper("bird", "sed -i 's/Hint:/Evidence:/' preprocess/template.json",
           "preprocess/template.json", "SHA-256");
    /* ... and with the manifest's hash made to match: the template's digest
     * the build recorded (text_to_sql.template.sha256) still refuses it */
    tamper("bird", "sed -i 's/Hint:/Evidence:/' preprocess/template.json && python3 -c \""
           "import hashlib, json; m = json.load(open('manifest.json')); "
           "f = m['preprocess']['files']['template']; "
           "f['sha256'] = hashlib.sha256(open('preprocess/template.json', 'rb').read()).hexdigest(); "
           "json.dump(m, open('manifest.json', 'w'))\"", "preprocess/template.json",
           "is not the build's");
    /* ... the rules and the tokenizer file: the SHA-256 the build recorded
     * of the files it read (config.clean.rules_sha256,
     * tokenizer.vocab_sha256) */
    tamper("spider", "sed -i 's/Count of/Number of/' preprocess/rules.json && python3 -c \""
           "import hashlib, json; m = json.load(open('manifest.json')); "
           "f = m['preprocess']['files']['rules']; "
           "f['sha256'] = hashlib.sha256(open('preprocess/rules.json', 'rb').read()).hexdigest(); "
           "json.dump(m, open('manifest.json', 'w'))\"", "preprocess/rules.json",
           "is not the build's rules");
    tamper("spider", "sed -i '2000s/.*/zzz/' preprocess/vocab.txt && python3 -c \""
           "import hashlib, json; m = json.load(open('manifest.json')); "
           "f = m['preprocess']['files']['tokenizer']; "
           "f['sha256'] = hashlib.sha256(open('preprocess/vocab.txt', 'rb').read()).hexdigest(); "
           "json.dump(m, open('manifest.json', 'w'))\"", "preprocess/vocab.txt",
           "is not the build's tokenizer");
    /* the same for the schemas: their digest (text_to_sql.schemas.digest) */
    tamper("picard", "sed -i '0,/\"Singer_ID\"/s//\"Singer_Id\"/' preprocess/schemas.json && "
           "python3 -c \"import hashlib, json; m = json.load(open('manifest.json')); "
           "f = m['preprocess']['files']['schemas']; "
           "f['sha256'] = hashlib.sha256(open('preprocess/schemas.json', 'rb').read()).hexdigest(); "
           "json.dump(m, open('manifest.json', 'w'))\"", "preprocess/schemas.json",
           "is not the build's");
}

/* A set built before the files were embedded: refused, saying so. */
static void test_old_set(void **state)
{
    (void)state;
    char cmd[2048], dir[256];
    snprintf(dir, sizeof dir, "%s/old", ps_test_root);
    snprintf(cmd, sizeof cmd, "cp -r '%s/spider' '%s' && python3 -c \"import json,sys; "
             "m=json.load(open(sys.argv[1])); del m['preprocess']; "
             "json.dump(m, open(sys.argv[1],'w'))\" '%s/manifest.json'", ps_test_root, dir, dir);
    sh(cmd);
    ps_preprocessor *p = NULL;
    ps_error err = {0};
    assert_int_equal(ps_preprocessor_open(dir, &p, &err), PS_EVERSION);
    assert_non_null(strstr(err.message, "rebuild"));
}

/* ps_cleaner_clean_text gives each field of every record of the Unicode
 * torture file exactly what a whole-file run keeps for it (NFKC, controls,
 * joiners stripped, replacing invalid UTF-8, a rule on each field), and
 * the rejection a field alone explains. */
static void test_clean_text_matches_run(void **state)
{
    (void)state;
    const char *rules = "[{\"name\": \"digits\", \"field\": \"both\", \"replace\": \"[0-9]+\", "
                        "\"with\": \"N\"}]";
    ps_clean_options o;
    ps_clean_options_init(&o);
    o.strip_joiners = 1;
    o.utf8_policy = PS_UTF8_REPLACE;
    o.keep_duplicates = 1;
    const char *path = data("torture/torture.jsonl");
    ps_test_run run;
    ps_test_clean_file(&run, path, &o, rules);
    ps_cleaner *c;
    ps_error err = {0};
    assert_int_equal(ps_cleaner_create(&o, &c, &err), 0);
    assert_int_equal(ps_cleaner_add_rules(c, rules, strlen(rules), NULL, &err), 0);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[65536];
    size_t i = 0, compared = 0;
    while (fgets(line, sizeof line, f) && i < run.n) {
        json_t *j = json_loads(line, 0, NULL);
        const ps_test_outcome *r = &run.v[i++];
        const char *q = json_string_value(json_object_get(j, "question"));
        const char *sql = json_string_value(json_object_get(j, "sql"));
        if (j && q && sql && r->outcome == PS_OUTCOME_KEPT) {
            const char *out, *reason;
            size_t len;
            assert_int_equal(ps_cleaner_clean_text(c, "question", q, strlen(q), &out, &len,
                                                   &reason, &err), 0);
            assert_null(reason);
            assert_int_equal(len, r->question_len);
            assert_memory_equal(out, r->question, len);
            assert_int_equal(ps_cleaner_clean_text(c, "sql", sql, strlen(sql), &out, &len,
                                                   &reason, &err), 0);
            assert_null(reason);
            assert_int_equal(len, r->sql_len);
            assert_memory_equal(out, r->sql, len);
            compared++;
        }
        json_decref(j);
    }
    fclose(f);
    assert_true(compared > 40);
    const char *out, *reason;
    size_t len;
    assert_int_equal(ps_cleaner_clean_text(c, "question", "\xe2\x80\x8b\x01", 4, &out, &len,
                                           &reason, &err), 0);
    assert_string_equal(reason, "empty_after_cleaning");
    assert_int_equal(ps_cleaner_clean_text(c, "question", "", 0, &out, &len, &reason, &err), 0);
    assert_string_equal(reason, "empty_field");
    ps_cleaner_free(c);
    ps_test_run_free(&run);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spider_rules_nfc),
        cmocka_unit_test(test_spider_picard_schema),
        cmocka_unit_test(test_bird_template_evidence),
        cmocka_unit_test(test_cspider_like),
        cmocka_unit_test(test_fields_and_serving),
        cmocka_unit_test(test_clean_template_field),
        cmocka_unit_test(test_tampered),
        cmocka_unit_test(test_old_set),
        cmocka_unit_test(test_clean_text_matches_run),
    };
    return cmocka_run_group_tests(tests, ps_test_cli_setup, ps_test_cli_teardown);
}
