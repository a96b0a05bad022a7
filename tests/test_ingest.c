/* End-to-end tests of ingest + cleaning through the public ps_cleaner API:
 * real Spider data, every input format, compression, hostile input, rules,
 * dedupe and the accounting identity (asserted by ps_test_clean_* on every
 * run). */
#include "tests/support/testutil.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#define S(lit) lit, sizeof(lit) - 1

static json_t *stats_of(const ps_test_run *run)
{
    json_error_t e;
    json_t *j = json_loads(run->stats_json, 0, &e);
    assert_non_null(j);
    assert_true(json_is_true(json_object_get(j, "balanced")));
    return j;
}

static json_int_t jint(json_t *obj, const char *path)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    json_t *cur = obj;
    for (char *tok = strtok(buf, "."); tok; tok = strtok(NULL, "."))
        cur = json_object_get(cur, tok);
    assert_non_null(cur);
    return json_integer_value(cur);
}

/* The outcome of each record in order, space-separated: "kept",
 * "duplicate" or the rejection reason; there are no more records. */
static void expect_outcomes(const ps_test_run *run, const char *want)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", want);
    size_t i = 0;
    for (char *w = strtok(buf, " "); w; w = strtok(NULL, " "), i++) {
        if (i >= run->n)
            fail_msg("%zu records, expected more: %s", run->n, want);
        const ps_test_outcome *o = &run->v[i];
        const char *got = o->outcome == PS_OUTCOME_KEPT        ? "kept"
                          : o->outcome == PS_OUTCOME_DUPLICATE ? "duplicate"
                                                               : o->reason;
        if (strcmp(got, w))
            fail_msg("record %zu: %s, expected %s", i, got, w);
    }
    assert_int_equal(run->n, i);
}

/* Record i was kept as (question, sql); a NULL one is not checked. */
static void expect_kept(const ps_test_run *run, size_t i, const char *question, const char *sql)
{
    assert_true(i < run->n);
    assert_int_equal(run->v[i].outcome, PS_OUTCOME_KEPT);
    if (question)
        assert_string_equal(run->v[i].question, question);
    if (sql)
        assert_string_equal(run->v[i].sql, sql);
}

/* Options naming Spider's label field, db_id. */
static void spider_options(ps_clean_options *o)
{
    ps_clean_options_init(o);
    o->label_field = "db_id";
}

static void test_spider_dev(void **state)
{
    (void)state;
    ps_clean_options o;
    spider_options(&o);
    ps_test_run run;
    ps_test_clean_file(&run, ps_test_data("spider/dev.json"), &o, NULL);
    assert_int_equal(run.rc, 0);
    assert_int_equal(run.counts.records_in, 1034);
    assert_int_equal(run.kept, 1034);
    /* The SQL comes from "query" (Spider's "sql" is a parsed object). */
    expect_kept(&run, 0, "How many singers do we have?", "SELECT count(*) FROM singer");
    assert_string_equal(run.v[0].label, "concert_singer");
    assert_string_equal(run.v[0].id, "dev.json:#0");
    assert_non_null(strstr(run.v[0].source, "spider/dev.json:#0"));
    json_t *st = stats_of(&run);
    assert_int_equal(jint(st, "label_count"), 20);
    /* Per-label counts add up to the total. */
    json_int_t sum = 0;
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(st, "labels"), k, v)
    {
        sum += json_integer_value(json_object_get(v, "kept"));
    }
    assert_int_equal(sum, 1034);
    json_decref(st);
    /* Cleaning folded the doubled spaces Spider's SQL is known for. */
    for (size_t i = 0; i < run.n; i++) {
        assert_null(strstr(run.v[i].sql, "  "));
        assert_null(strstr(run.v[i].question, "  "));
    }
    ps_test_run_free(&run);
}

static void test_spider_train_duplicates(void **state)
{
    (void)state;
    ps_clean_options o;
    spider_options(&o);
    ps_test_run run;
    ps_test_clean_file(&run, ps_test_data("spider/train.json"), &o, NULL);
    assert_int_equal(run.counts.records_in, 7000);
    assert_true(run.duplicates > 0);
    /* Each duplicate names a kept record with the same cleaned pair. */
    for (size_t i = 0; i < run.n; i++) {
        if (run.v[i].outcome != PS_OUTCOME_DUPLICATE)
            continue;
        bool found = false;
        for (size_t j = 0; j < i && !found; j++)
            found = run.v[j].outcome == PS_OUTCOME_KEPT &&
                    strcmp(run.v[j].id, run.v[i].duplicate_of) == 0 &&
                    strcmp(run.v[j].question, run.v[i].question) == 0 &&
                    strcmp(run.v[j].sql, run.v[i].sql) == 0;
        assert_true(found);
    }
    ps_test_run_free(&run);
    /* With keep_duplicates nothing is dropped. */
    o.keep_duplicates = 1;
    ps_test_clean_file(&run, ps_test_data("spider/train.json"), &o, NULL);
    assert_int_equal(run.kept, 7000);
    ps_test_run_free(&run);
}

static void test_jsonl_crlf_bom_blank_lines(void **state)
{
    (void)state;
    const char data[] = "\xEF\xBB\xBF{\"question\":\"q1\",\"sql\":\"SELECT 1\",\"label\":7}\r\n"
                        "\r\n   \n"
                        "{\"question\":\"q2\",\"query\":\"SELECT 2\",\"id\":42}\r\n"
                        "{\"question\":\"q3\",\"sql\":\"SELECT 3\"}";
    ps_test_run run;
    ps_test_clean_mem(&run, S(data), ".jsonl", NULL, NULL);
    assert_int_equal(run.rc, 0);
    expect_outcomes(&run, "kept kept kept");
    assert_string_equal(run.v[0].label, "7"); /* numeric label kept as a string */
    assert_null(run.v[1].label);
    assert_string_equal(run.v[1].id, "42");
    expect_kept(&run, 1, "q2", "SELECT 2");
    assert_non_null(strstr(run.v[1].source, ":4")); /* line numbers count blank lines */
    assert_non_null(strstr(run.v[2].source, ":5"));
    expect_kept(&run, 2, "q3", "SELECT 3"); /* no final newline */
    ps_test_run_free(&run);
}

static void test_empty_and_missing_files(void **state)
{
    (void)state;
    ps_test_run run;
    ps_test_clean_mem(&run, "", 0, ".json", NULL, NULL);
    assert_int_equal(run.rc, 0);
    assert_int_equal(run.counts.records_in, 0);
    ps_test_run_free(&run);
    ps_test_clean_file(&run, "/nonexistent/dir/pairs.jsonl", NULL, NULL);
    assert_int_equal(run.rc, PS_ENOENT);
    assert_non_null(strstr(run.err.message, "/nonexistent/dir/pairs.jsonl"));
    ps_test_run_free(&run);
}

static void test_json_array_damage(void **state)
{
    (void)state;
    /* A bad element, a missing comma and a truncated tail: each damaged
     * element is one rejection; the good ones are kept. */
    const char data[] = "[ {\"question\":\"a\",\"sql\":\"S1\"},\n"
                        "  {\"question\": oops},\n"
                        "  {\"question\":\"b\",\"sql\":\"S2\"}\n"
                        "  {\"question\":\"c\",\"sql\":\"S3\"},\n"
                        "  {\"question\":\"d\",\"sql\":\"S";
    ps_test_run run;
    ps_test_clean_mem(&run, S(data), ".json", NULL, NULL);
    assert_int_equal(run.rc, 0);
    /* b and c are glued into one by the missing comma */
    expect_outcomes(&run, "kept bad_json bad_json bad_json");
    expect_kept(&run, 0, "a", "S1");
    assert_non_null(strstr(run.v[1].source, ":#1"));
    assert_non_null(strstr(run.v[3].detail, "truncated"));
    ps_test_run_free(&run);

    const char trailing[] = "[{\"question\":\"a\",\"sql\":\"S1\"}] garbage";
    ps_test_clean_mem(&run, S(trailing), ".json", NULL, NULL);
    expect_outcomes(&run, "kept bad_json");
    assert_non_null(strstr(run.v[1].detail, "after the end"));
    ps_test_run_free(&run);

    const char notarray[] = "[1, \"x\", null, [], {\"question\":\"q\",\"sql\":\"s\"}]";
    ps_test_clean_mem(&run, S(notarray), ".json", NULL, NULL);
    expect_outcomes(&run, "wrong_type wrong_type wrong_type wrong_type kept");
    ps_test_run_free(&run);
}

static void test_fields_types_and_mapping(void **state)
{
    (void)state;
    const char data[] = "{\"q\":\"Q1\",\"s\":\"S1\",\"meta\":{\"db\":\"x\"}}\n"
                        "{\"q\":5,\"s\":\"S2\"}\n"
                        "{\"s\":\"S3\"}\n"
                        "{\"q\":\"Q4\",\"s\":null}\n"
                        "{\"q\":\"\",\"s\":\"S5\"}\n"
                        "{\"q\":\"Q6\",\"s\":\"S6\",\"meta\":{\"db\":[1]}}\n"
                        "{\"q\":\"Q7\",\"s\":\"S7\",\"q\":\"dup\"}\n";
    ps_clean_options o;
    ps_clean_options_init(&o);
    o.question_field = "q";
    o.sql_field = "s";
    o.label_field = "meta.db";
    ps_test_run run;
    ps_test_clean_mem(&run, S(data), ".jsonl", &o, NULL);
    /* the last: a duplicate key */
    expect_outcomes(&run, "kept wrong_type missing_field missing_field empty_field wrong_type "
                          "bad_json");
    assert_string_equal(run.v[0].label, "x"); /* dotted path */
    assert_non_null(strstr(run.v[1].detail, "'q'"));
    ps_test_run_free(&run);
}

static void test_invalid_utf8_policies(void **state)
{
    (void)state;
    const char data[] = "{\"question\":\"caf\xE9 ok\",\"sql\":\"SELECT 1\"}\n"
                        "{\"question\":\"fine\",\"sql\":\"SELECT 2\"}\n";
    ps_test_run run;
    ps_test_clean_mem(&run, S(data), ".jsonl", NULL, NULL);
    expect_outcomes(&run, "invalid_utf8 kept");
    assert_non_null(strstr(run.v[0].detail, "byte 16"));
    assert_int_equal(run.v[0].original_len, strchr(data, '\n') - data); /* the line */
    ps_test_run_free(&run);

    ps_clean_options o;
    ps_clean_options_init(&o);
    o.utf8_policy = PS_UTF8_REPLACE;
    ps_test_clean_mem(&run, S(data), ".jsonl", &o, NULL);
    assert_int_equal(run.kept, 2);
    assert_string_equal(run.v[0].question, "caf\xEF\xBF\xBD ok");
    json_t *st = stats_of(&run);
    assert_int_equal(jint(st, "steps.utf8.records_repaired"), 1);
    json_decref(st);
    ps_test_run_free(&run);
}

static void test_nul_and_controls(void **state)
{
    (void)state;
    /* An escaped NUL and ZWSP are removed; a raw NUL in the line is bad JSON. */
    const char data[] = "{\"question\":\"a\\u0000b\\u200bc\",\"sql\":\"SELECT\\t\\t1\"}\n"
                        "{\"question\":\"x\0y\",\"sql\":\"S\"}\n"
                        "{\"question\":\"\\u200b\\u200b\",\"sql\":\"S\"}\n";
    ps_test_run run;
    ps_test_clean_mem(&run, data, sizeof data - 1, ".jsonl", NULL, NULL);
    expect_outcomes(&run, "kept bad_json empty_after_cleaning");
    expect_kept(&run, 0, "abc", "SELECT 1");
    /* the raw line, NUL included */
    assert_int_equal(run.v[1].original_len, sizeof "{\"question\":\"x\0y\",\"sql\":\"S\"}" - 1);
    json_t *st = stats_of(&run);
    assert_int_equal(jint(st, "steps.controls.chars_removed"), 2 + 2);
    json_decref(st);
    ps_test_run_free(&run);
}

static void test_huge_line(void **state)
{
    (void)state;
    /* A 10 MiB line is rejected as too_long; the lines around it are kept. */
    size_t big = 10u << 20;
    const char head[] = "{\"question\":\"before\",\"sql\":\"S0\"}\n{\"question\":\"";
    const char tail[] = "\",\"sql\":\"S\"}\n{\"question\":\"after\",\"sql\":\"S1\"}\n";
    size_t n = sizeof head - 1 + big + sizeof tail - 1;
    char *data = malloc(n);
    assert_non_null(data);
    memcpy(data, head, sizeof head - 1);
    memset(data + sizeof head - 1, 'x', big);
    memcpy(data + sizeof head - 1 + big, tail, sizeof tail - 1);
    ps_test_run run;
    ps_test_clean_mem(&run, data, n, ".jsonl", NULL, NULL);
    free(data);
    expect_outcomes(&run, "kept too_long kept");
    expect_kept(&run, 0, "before", "S0");
    assert_true(run.v[1].original_len <= 4096); /* only a prefix is kept */
    expect_kept(&run, 2, "after", "S1");
    assert_non_null(strstr(run.v[2].source, ":3"));
    ps_test_run_free(&run);
}

static void test_csv_and_tsv(void **state)
{
    (void)state;
    const char csv[] = "id,question,query,db_id\r\n"
                       "1,\"Say \"\"hi\"\", then, go\",\"SELECT 'a,b'\",db1\r\n"
                       "2,\"multi\nline\",SELECT 2,db2\r\n"
                       "3,too,few\r\n"
                       "4,q4,SELECT 4,\r\n";
    ps_clean_options o;
    ps_clean_options_init(&o);
    o.label_field = "db_id";
    ps_test_run run;
    ps_test_clean_mem(&run, S(csv), ".csv", &o, NULL);
    assert_int_equal(run.rc, 0);
    expect_outcomes(&run, "kept kept bad_csv kept");
    expect_kept(&run, 0, "Say \"hi\", then, go", "SELECT 'a,b'");
    assert_string_equal(run.v[0].id, "1");
    expect_kept(&run, 1, "multi line", "SELECT 2");
    assert_non_null(strstr(run.v[3].source, ":6")); /* the quoted newline counts */
    assert_null(run.v[3].label);                     /* empty cell: no label */
    ps_test_run_free(&run);

    const char tsv[] = "question\tsql\tlabel\nhow many\tSELECT  count(*)  FROM t\tcount\n";
    ps_test_clean_mem(&run, S(tsv), ".tsv", NULL, NULL);
    expect_outcomes(&run, "kept");
    expect_kept(&run, 0, "how many", "SELECT count(*) FROM t");
    assert_string_equal(run.v[0].label, "count");
    ps_test_run_free(&run);

    /* Detected without a telling name; a header without the question
     * column is an input error naming it. */
    const char nohdr[] = "text\tsql\nq\ts\n";
    ps_test_clean_mem(&run, S(nohdr), ".txt", NULL, NULL);
    assert_int_equal(run.rc, PS_EFORMAT);
    assert_non_null(strstr(run.err.message, "'question'"));
    ps_test_run_free(&run);
}

static char *gzip_bytes(const char *s, size_t n, size_t *out_len)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    assert_int_equal(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
    size_t cap = deflateBound(&z, n);
    char *out = malloc(cap);
    z.next_in = (Bytef *)s;
    z.avail_in = (uInt)n;
    z.next_out = (Bytef *)out;
    z.avail_out = (uInt)cap;
    assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
    *out_len = z.total_out;
    deflateEnd(&z);
    return out;
}

static void test_compressed_inputs(void **state)
{
    (void)state;
    const char a[] = "{\"question\":\"q1\",\"sql\":\"S1\"}\n{\"question\":\"q2\",\"sql\":\"S2\"}\n";
    const char b[] = "{\"question\":\"q3\",\"sql\":\"S3\"}\n";
    size_t na, nb;
    char *ga = gzip_bytes(a, strlen(a), &na), *gb = gzip_bytes(b, strlen(b), &nb);
    /* Two concatenated gzip members, as `cat a.gz b.gz` makes. */
    char *both = malloc(na + nb);
    memcpy(both, ga, na);
    memcpy(both + na, gb, nb);
    ps_test_run run;
    ps_test_clean_mem(&run, both, na + nb, ".jsonl.gz", NULL, NULL);
    assert_int_equal(run.rc, 0);
    assert_int_equal(run.kept, 3);
    ps_test_run_free(&run);
    /* A truncated member is a decompression error, after what came before. */
    ps_test_clean_mem(&run, both, na + nb / 2, ".jsonl.gz", NULL, NULL);
    assert_int_equal(run.rc, PS_EDECOMPRESS);
    assert_non_null(strstr(run.err.message, "truncated gzip"));
    assert_int_equal(run.kept, 2);
    ps_test_run_free(&run);
    /* Plain text named .gz is refused, not read as text. */
    ps_test_clean_mem(&run, S(a), ".jsonl.gz", NULL, NULL);
    assert_int_equal(run.rc, PS_EDECOMPRESS);
    ps_test_run_free(&run);
    free(ga);
    free(gb);
    free(both);

    /* zstd with its content checksum on, as pairshard writes it: any
     * corruption is detected. */
    size_t cap = ZSTD_compressBound(strlen(a));
    char *za = malloc(cap);
    ZSTD_CCtx *cctx = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
    size_t nz = ZSTD_compress2(cctx, za, cap, a, strlen(a));
    ZSTD_freeCCtx(cctx);
    assert_false(ZSTD_isError(nz));
    ps_test_clean_mem(&run, za, nz, ".jsonl.zst", NULL, NULL);
    assert_int_equal(run.kept, 2);
    ps_test_run_free(&run);
    ps_test_clean_mem(&run, za, nz - 3, ".bin", NULL, NULL); /* told by content */
    assert_int_equal(run.rc, PS_EDECOMPRESS);
    ps_test_run_free(&run);
    za[nz - 2] ^= 0x5A; /* inside the checksum */
    ps_test_clean_mem(&run, za, nz, ".zst", NULL, NULL);
    assert_int_equal(run.rc, PS_EDECOMPRESS);
    assert_non_null(strstr(run.err.message, "corrupt zstd"));
    ps_test_run_free(&run);
    free(za);
}

static void test_rules(void **state)
{
    (void)state;
    const char data[] = "{\"question\":\"What\xE2\x80\x99s the count?\",\"sql\":\"SELECT count(*) FROM t;\"}\n"
                        "{\"question\":\"DROP everything\",\"sql\":\"DROP TABLE t\"}\n"
                        "{\"question\":\"only;\",\"sql\":\";\"}\n";
    const char rules[] = "[{\"name\":\"curly-apostrophe\",\"field\":\"question\","
                         "\"replace\":\"\\u2019\",\"with\":\"'\"},"
                         "{\"name\":\"no-trailing-semicolon\",\"field\":\"sql\","
                         "\"replace\":\";\\\\s*$\",\"with\":\"\"},"
                         "{\"name\":\"no-ddl\",\"field\":\"sql\",\"drop_if\":\"^\\\\s*drop\\\\b\","
                         "\"flags\":\"i\"}]";
    ps_test_run run;
    ps_test_clean_mem(&run, S(data), ".jsonl", NULL, rules);
    expect_outcomes(&run, "kept dropped_by_rule empty_after_cleaning");
    expect_kept(&run, 0, "What's the count?", "SELECT count(*) FROM t");
    assert_string_equal(run.v[1].rule, "no-ddl");
    json_t *st = stats_of(&run);
    json_t *r1 = json_array_get(json_object_get(st, "rules"), 1);
    assert_string_equal(json_string_value(json_object_get(r1, "name")), "no-trailing-semicolon");
    assert_int_equal(json_integer_value(json_object_get(r1, "changed")), 2);
    json_t *r2 = json_array_get(json_object_get(st, "rules"), 2);
    assert_int_equal(json_integer_value(json_object_get(r2, "dropped")), 1);
    json_decref(st);
    ps_test_run_free(&run);
}

/* Replacements that use the match's groups: numbered, named, the whole
 * match and a literal dollar, on real Spider text. */
static void test_rules_with_groups(void **state)
{
    (void)state;
    const char rules[] =
        "[{\"name\":\"qualify\",\"field\":\"sql\",\"replace\":\"\\\\b(T\\\\d+)\\\\.(\\\\w+)\","
        "\"with\":\"$2 OF $1\"},"
        "{\"name\":\"named\",\"field\":\"question\",\"replace\":\"^How many (?<thing>\\\\w+)\","
        "\"with\":\"Count ${thing}:\"},"
        "{\"name\":\"whole\",\"field\":\"question\",\"replace\":\"\\\\?$\",\"with\":\"$0$0\"},"
        "{\"name\":\"dollar\",\"field\":\"sql\",\"replace\":\"count\\\\(\\\\*\\\\)\","
        "\"with\":\"$$n\"}]";
    ps_clean_options o;
    spider_options(&o);
    ps_test_run run;
    ps_test_clean_file(&run, ps_test_data("spider/dev.json"), &o, rules);
    assert_int_equal(run.rc, 0);
    assert_int_equal(run.counts.records_in, 1034);
    assert_int_equal(run.rejected, 0);
    assert_string_equal(run.v[0].question, "Count singers: do we have??");
    assert_string_equal(run.v[0].sql, "SELECT $n FROM singer");
    assert_string_equal(run.v[22].sql,
                        "SELECT name OF T2 , $n FROM concert AS T1 JOIN stadium AS T2 ON "
                        "stadium_id OF T1 = stadium_id OF T2 GROUP BY stadium_id OF T1");
    for (size_t i = 0; i < run.n; i++)
        assert_null(strstr(run.v[i].sql, "T1."));
    json_t *st = stats_of(&run);
    json_t *list = json_object_get(st, "rules");
    for (size_t i = 0; i < 4; i++)
        assert_true(json_integer_value(json_object_get(json_array_get(list, i), "changed")) > 0);
    json_decref(st);
    ps_test_run_free(&run);
}

static void test_bad_rules(void **state)
{
    (void)state;
    ps_cleaner *c;
    ps_error err;
    assert_int_equal(ps_cleaner_create(NULL, &c, &err), 0);
    const char bad[] = "[{\"name\":\"ok\",\"field\":\"sql\",\"replace\":\"a\",\"with\":\"b\"},"
                       "{\"name\":\"broken\",\"field\":\"sql\",\"replace\":\"(ab\",\"with\":\"\"}]";
    assert_int_equal(ps_cleaner_add_rules(c, S(bad), "rules.json", &err), PS_ERULE);
    assert_non_null(strstr(err.message, "'broken'"));
    assert_non_null(strstr(err.message, "offset 3"));
    const char typo[] = "[{\"name\":\"t\",\"field\":\"sql\",\"replce\":\"a\",\"with\":\"b\"}]";
    assert_int_equal(ps_cleaner_add_rules(c, S(typo), "rules.json", &err), PS_ERULE);
    assert_non_null(strstr(err.message, "replce"));
    const char field[] = "[{\"name\":\"t\",\"field\":\"text\",\"drop_if\":\"a\"}]";
    assert_int_equal(ps_cleaner_add_rules(c, S(field), "rules.json", &err), PS_ERULE);
    assert_int_equal(ps_cleaner_add_rules(c, S("{not json"), "rules.json", &err), PS_EFORMAT);
    assert_non_null(strstr(err.message, "rules.json:1:"));
    assert_int_equal(ps_cleaner_load_rules(c, "/nonexistent/rules.json", &err), PS_ENOENT);
    ps_cleaner_free(c);
}

static void test_catastrophic_rule_is_bounded(void **state)
{
    (void)state;
    /* (a+)+$ on a long run of a's followed by '!' backtracks exponentially:
     * the match limit turns it into one rejected record, not a hang. */
    char data[256];
    snprintf(data, sizeof data, "{\"question\":\"%s!\",\"sql\":\"S\"}\n"
             "{\"question\":\"fine\",\"sql\":\"S2\"}\n",
             "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
    const char rules[] = "[{\"name\":\"evil\",\"field\":\"question\",\"drop_if\":\"^(a+)+$\"}]";
    ps_test_run run;
    ps_test_clean_mem(&run, data, strlen(data), ".jsonl", NULL, rules);
    expect_outcomes(&run, "rule_error kept");
    assert_string_equal(run.v[0].rule, "evil");
    ps_test_run_free(&run);
}

static void test_label_conflicts_counted(void **state)
{
    (void)state;
    const char data[] = "{\"question\":\"q\",\"sql\":\"S\",\"label\":\"a\"}\n"
                        "{\"question\":\" q \",\"sql\":\"S\",\"label\":\"b\"}\n"
                        "{\"question\":\"q\",\"sql\":\"S\",\"label\":\"a\"}\n";
    ps_test_run run;
    ps_test_clean_mem(&run, S(data), ".jsonl", NULL, NULL);
    assert_int_equal(run.kept, 1);
    assert_int_equal(run.duplicates, 2);
    json_t *st = stats_of(&run);
    assert_int_equal(jint(st, "duplicate_label_conflicts"), 1);
    assert_int_equal(jint(st, "labels.b.duplicates"), 1);
    json_decref(st);
    ps_test_run_free(&run);
}

static void test_result_json_round_trip(void **state)
{
    (void)state;
    /* Every outcome serialises to one valid JSON line; an invalid-UTF-8
     * original is shown repaired and kept exactly in base64. */
    const char data[] = "{\"question\":\"tab\\there \\\"q\\\"\",\"sql\":\"S\"}\n"
                        "{\"question\":\"\xFF\",\"sql\":\"S\"}\n";
    ps_cleaner *c;
    ps_error err;
    assert_int_equal(ps_cleaner_create(NULL, &c, &err), 0);
    char *path = ps_test_tmpfile(S(data), ".jsonl");
    ps_test_run run;
    memset(&run, 0, sizeof run);
    assert_int_equal(ps_cleaner_run(c, path, ps_test_collect, &run, &err), 0);
    unlink(path);
    free(path);
    assert_int_equal(run.n, 2);
    ps_clean_result r;
    memset(&r, 0, sizeof r);
    r.outcome = PS_OUTCOME_KEPT;
    r.id = run.v[0].id;
    r.question = run.v[0].question;
    r.question_len = run.v[0].question_len;
    r.sql = run.v[0].sql;
    r.sql_len = run.v[0].sql_len;
    r.source = run.v[0].source;
    char *line;
    size_t len;
    assert_int_equal(ps_clean_result_json(&r, &line, &len), 0);
    json_error_t je;
    json_t *j = json_loadb(line, len, 0, &je);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "question")), "tab here \"q\"");
    assert_true(json_is_null(json_object_get(j, "label")));
    /* byte-identical to jansson's own compact output */
    char *ref = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
    assert_string_equal(ref, line);
    free(ref);
    json_decref(j);
    free(line);

    memset(&r, 0, sizeof r);
    r.outcome = PS_OUTCOME_REJECTED;
    r.source = run.v[1].source;
    r.reason = run.v[1].reason;
    r.detail = run.v[1].detail;
    r.original = run.v[1].original;
    r.original_len = run.v[1].original_len;
    assert_int_equal(ps_clean_result_json(&r, &line, &len), 0);
    j = json_loadb(line, len, 0, &je);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "reason")), "invalid_utf8");
    assert_non_null(json_object_get(j, "original_base64"));
    json_decref(j);
    free(line);
    ps_test_run_free(&run);
    ps_cleaner_free(c);
}

/* Random damage to real records in every format: whatever the bytes, the
 * run ends (no crash, no hang under the sanitizers) and every record is
 * accounted for (asserted inside ps_test_clean_mem). */
static void test_mutated_inputs_never_lose_records(void **state)
{
    (void)state;
    json_error_t e;
    json_t *arr = json_load_file(ps_test_data("spider/train.json"), 0, &e);
    assert_non_null(arr);
    char *base[3];
    size_t base_len[3];
    const char *suffix[3] = {".jsonl", ".json", ".csv"};
    {
        /* JSONL, JSON array and CSV forms of the first 40 records */
        char *jl = NULL, *ja = NULL, *cv = NULL;
        size_t jl_n = 0, ja_n = 0, cv_n = 0;
        FILE *fjl = open_memstream(&jl, &jl_n), *fja = open_memstream(&ja, &ja_n),
             *fcv = open_memstream(&cv, &cv_n);
        fputs("[", fja);
        fputs("question,query,db_id\n", fcv);
        for (size_t i = 0; i < 40; i++) {
            json_t *r = json_array_get(arr, i);
            char *line = json_dumps(r, JSON_COMPACT);
            fprintf(fjl, "%s\n", line);
            fprintf(fja, "%s%s\n", i ? "," : "", line);
            free(line);
            fputc('"', fcv);
            for (const char *q = json_string_value(json_object_get(r, "question")); *q; q++)
                fputs(*q == '"' ? "\"\"" : (char[]){*q, 0}, fcv);
            fprintf(fcv, "\",\"%s\",%s\n", json_string_value(json_object_get(r, "query")),
                    json_string_value(json_object_get(r, "db_id")));
        }
        fputs("]", fja);
        fclose(fjl);
        fclose(fja);
        fclose(fcv);
        base[0] = jl, base_len[0] = jl_n;
        base[1] = ja, base_len[1] = ja_n;
        base[2] = cv, base_len[2] = cv_n;
    }
    json_decref(arr);
    static const char junk[] = "\"\\{}[],:\n\r\t\0\xFF\xC3\xE2\x80 '`$-";
    unsigned seed = 2024;
    for (int t = 0; t < 3000; t++) {
        int f = t % 3;
        size_t n = base_len[f];
        char *buf = malloc(n + 64);
        memcpy(buf, base[f], n);
        int edits = 1 + (int)((seed = seed * 1103515245u + 12345u) >> 29);
        for (int k = 0; k < edits; k++) {
            seed = seed * 1103515245u + 12345u;
            size_t at = (seed >> 8) % (n ? n : 1);
            unsigned op = seed & 3;
            char ch = junk[(seed >> 4) % (sizeof junk - 1)];
            if (op == 0 && n) {
                buf[at] = ch; /* overwrite */
            } else if (op == 1 && n < base_len[f] + 60) {
                memmove(buf + at + 1, buf + at, n - at); /* insert */
                buf[at] = ch;
                n++;
            } else if (op == 2 && n) {
                memmove(buf + at, buf + at + 1, n - at - 1); /* delete */
                n--;
            } else {
                n = at; /* truncate */
            }
        }
        ps_test_run run;
        ps_test_clean_mem(&run, buf, n, suffix[f], NULL, NULL);
        /* JSONL has no whole-file structure to break; a JSON array whose
         * opening bracket is gone and a CSV whose header is damaged are
         * whole-input errors naming the file */
        if (!(run.rc == 0 || (f > 0 && run.rc == PS_EFORMAT && strstr(run.err.message, "pstest-"))))
            fail_msg("case %d (format %d): rc %d: %s", t, f, run.rc, run.err.message);
        ps_test_run_free(&run);
        free(buf);
    }
    for (int f = 0; f < 3; f++)
        free(base[f]);
}

/* ---- field names across the published text-to-SQL formats ---------------- */

/* Cleans `paths` with one cleaner, declared first when `declare`. */
static void clean_paths(ps_test_run *run, const char *const *paths, size_t n,
                        const ps_clean_options *o, bool declare)
{
    memset(run, 0, sizeof *run);
    ps_cleaner *c;
    assert_int_equal(ps_cleaner_create(o, &c, &run->err), 0);
    if (declare)
        assert_int_equal(ps_cleaner_declare_inputs(c, paths, n, &run->err), 0);
    for (size_t i = 0; i < n && run->rc == 0; i++)
        run->rc = ps_cleaner_run(c, paths[i], ps_test_collect, run, &run->err);
    ps_cleaner_get_counts(c, &run->counts);
    run->stats_json = ps_cleaner_stats_json(c);
    assert_int_equal(run->counts.records_in,
                     run->counts.kept + run->counts.rejected + run->counts.duplicates);
    ps_cleaner_free(c);
}

static void test_named_field_absent_from_every_record(void **state)
{
    (void)state;
    ps_clean_options o;
    ps_clean_options_init(&o);
    o.label_field = "dbid";
    o.named_fields = PS_NAMED_LABEL;
    ps_test_run run;
    ps_test_clean_file(&run, ps_test_data("spider/dev.json"), &o, NULL);
    assert_int_equal(run.rc, PS_EUSAGE);
    assert_non_null(strstr(run.err.message, "spider/dev.json: no record has the label field 'dbid'"));
    assert_non_null(strstr(run.err.message, "did you mean 'db_id'?"));
    assert_non_null(strstr(run.err.message, "question_toks"));
    ps_test_run_free(&run);

    /* Not named (the default "label"): records simply have no label. */
    ps_clean_options_init(&o);
    ps_test_clean_file(&run, ps_test_data("spider/dev.json"), &o, NULL);
    assert_int_equal(run.rc, 0);
    assert_int_equal(run.kept, 1034);
    assert_null(run.v[0].label);
    ps_test_run_free(&run);

    /* Named and present in some records only: per record, no error. */
    ps_clean_options_init(&o);
    o.label_field = "db_id";
    o.named_fields = PS_NAMED_LABEL;
    ps_test_clean_mem(&run, S("{\"question\":\"q\",\"sql\":\"SELECT 1\"}\n"
                              "{\"question\":\"r\",\"sql\":\"SELECT 2\",\"db_id\":\"d\"}\n"),
                      ".jsonl", &o, NULL);
    assert_int_equal(run.rc, 0);
    assert_int_equal(run.kept, 2);
    ps_test_run_free(&run);

    /* CSV: the header's columns are the fields. */
    ps_clean_options_init(&o);
    o.id_field = "qid";
    o.named_fields = PS_NAMED_ID;
    ps_test_clean_mem(&run, S("question,sql,question_id\nq,SELECT 1,7\n"), ".csv", &o, NULL);
    assert_int_equal(run.rc, PS_EUSAGE);
    assert_non_null(strstr(run.err.message, "its records have: question, sql, question_id"));
    ps_test_run_free(&run);
}

static void test_field_candidate_lists(void **state)
{
    (void)state;
    const char *paths[2] = {NULL, NULL};
    char spider[4096];
    snprintf(spider, sizeof spider, "%s", ps_test_data("spider/dev.json"));
    paths[0] = spider;
    paths[1] = ps_test_data("formats/bird/dev.json");
    ps_clean_options o;
    ps_clean_options_init(&o);
    o.sql_field = "SQL,query";
    o.label_field = "db_id";
    ps_test_run run;
    clean_paths(&run, paths, 2, &o, true);
    assert_int_equal(run.rc, 0);
    assert_int_equal(run.kept, 1040);
    assert_string_equal(run.v[0].sql, "SELECT count(*) FROM singer"); /* Spider: query */
    assert_non_null(strstr(run.v[1034].sql, "FROM frpm"));              /* BIRD: SQL */
    assert_string_equal(run.v[1039].label, "formula_1");
    ps_test_run_free(&run);

    /* The first candidate present and not null wins; messages name them all. */
    ps_clean_options_init(&o);
    o.question_field = "utterance,question";
    ps_test_clean_mem(&run, S("{\"utterance\":null,\"question\":\"q\",\"sql\":\"SELECT 1\"}\n"
                              "{\"text\":\"q\",\"sql\":\"SELECT 1\"}\n"),
                      ".jsonl", &o, NULL);
    expect_outcomes(&run, "kept missing_field");
    expect_kept(&run, 0, "q", "SELECT 1");
    assert_string_equal(run.v[1].detail, "no field 'utterance' or 'question' (fields: text, sql)");
    ps_test_run_free(&run);

    ps_clean_options_init(&o);
    o.sql_field = "SQL,,query";
    ps_cleaner *c = NULL;
    ps_error err;
    assert_int_equal(ps_cleaner_create(&o, &c, &err), PS_EINVAL);
    assert_null(c);
}

static void test_default_ids_unique_across_inputs(void **state)
{
    (void)state;
    char spider[4096], bird[4096], want[4200];
    snprintf(spider, sizeof spider, "%s", ps_test_data("spider/dev.json"));
    snprintf(bird, sizeof bird, "%s", ps_test_data("formats/bird/dev.json"));
    const char *paths[2] = {spider, bird};
    ps_clean_options o;
    ps_clean_options_init(&o);
    o.sql_field = "SQL,query";
    for (int declare = 0; declare < 2; declare++) {
        ps_test_run run;
        clean_paths(&run, paths, 2, &o, declare);
        assert_int_equal(run.rc, 0);
        assert_int_equal(run.kept, 1040);
        /* declared: both inputs by their path; undeclared: the later one */
        snprintf(want, sizeof want, "%s:#0", spider);
        assert_string_equal(run.v[0].id, declare ? want : "dev.json:#0");
        snprintf(want, sizeof want, "%s:#0", bird);
        assert_string_equal(run.v[1034].id, want);
        json_t *st = stats_of(&run);
        assert_null(json_object_get(st, "id_collisions"));
        json_decref(st);
        ps_test_run_free(&run);
    }
}

static void test_id_collisions_counted(void **state)
{
    (void)state;
    ps_clean_options o;
    ps_clean_options_init(&o);
    o.id_field = "question_id";
    o.named_fields = PS_NAMED_ID;
    ps_test_run run;
    ps_test_clean_mem(&run, S("{\"question_id\":1,\"question\":\"a\",\"sql\":\"SELECT 1\"}\n"
                              "{\"question_id\":2,\"question\":\"b\",\"sql\":\"SELECT 2\"}\n"
                              "{\"question_id\":1,\"question\":\"c\",\"sql\":\"SELECT 3\"}\n"
                              "{\"question_id\":1,\"question\":\"a\",\"sql\":\"SELECT 1\"}\n"),
                      ".jsonl", &o, NULL);
    assert_int_equal(run.rc, 0);
    assert_int_equal(run.kept, 3);
    assert_int_equal(run.duplicates, 1); /* a duplicate is no collision: it is dropped */
    json_t *st = stats_of(&run);
    json_t *ic = json_object_get(st, "id_collisions");
    assert_non_null(ic);
    assert_int_equal(jint(ic, "count"), 1);
    json_t *ex = json_array_get(json_object_get(ic, "examples"), 0);
    assert_string_equal(json_string_value(json_object_get(ex, "id")), "1");
    assert_non_null(strstr(json_string_value(json_object_get(ex, "source")), ":3"));
    assert_non_null(strstr(json_string_value(json_object_get(ex, "first_source")), ":1"));
    json_decref(st);
    ps_test_run_free(&run);
}

static void test_csv_header_names_its_columns(void **state)
{
    (void)state;
    ps_test_run run;
    ps_test_clean_mem(&run, S("Question,SQL,db_id\nHow many?,SELECT 1,x\n"), ".csv", NULL, NULL);
    assert_int_equal(run.rc, PS_EFORMAT);
    assert_non_null(strstr(run.err.message, "the header has no column 'question' (columns: "
                                            "Question, SQL, db_id); did you mean 'Question'?"));
    ps_test_run_free(&run);
}

static void test_missing_field_detail_lists_fields(void **state)
{
    (void)state;
    ps_test_run run;
    /* BIRD's shape with its SQL under a name no default reads */
    static const char rec[] = "{\"question_id\": 0, \"db_id\": \"x\", \"question\": \"q\", "
                              "\"evidence\": \"\", \"Sql\": \"SELECT 1\"}\n";
    ps_test_clean_mem(&run, rec, sizeof rec - 1, ".jsonl", NULL, NULL);
    assert_int_equal(run.rc, 0);
    assert_int_equal(run.rejected, 1);
    assert_string_equal(run.v[0].reason, "missing_field");
    assert_string_equal(run.v[0].detail, "no field 'sql', 'query' or 'SQL' (fields: question_id, "
                                         "db_id, question, evidence, Sql)");
    ps_test_run_free(&run);
}

/* BIRD keeps its SQL in "SQL": the third default name. */
static void test_bird_sql_is_a_default_name(void **state)
{
    (void)state;
    ps_test_run run;
    ps_test_clean_file(&run, ps_test_data("formats/bird/dev.json"), NULL, NULL);
    assert_int_equal(run.rc, 0);
    assert_int_equal(run.kept, 6);
    assert_int_equal(run.rejected, 0);
    assert_non_null(strstr(run.v[0].sql, "FROM frpm WHERE `County Name` = 'Alameda'"));
    ps_test_run_free(&run);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spider_dev),
        cmocka_unit_test(test_spider_train_duplicates),
        cmocka_unit_test(test_jsonl_crlf_bom_blank_lines),
        cmocka_unit_test(test_empty_and_missing_files),
        cmocka_unit_test(test_json_array_damage),
        cmocka_unit_test(test_fields_types_and_mapping),
        cmocka_unit_test(test_invalid_utf8_policies),
        cmocka_unit_test(test_nul_and_controls),
        cmocka_unit_test(test_huge_line),
        cmocka_unit_test(test_csv_and_tsv),
        cmocka_unit_test(test_compressed_inputs),
        cmocka_unit_test(test_rules),
        cmocka_unit_test(test_rules_with_groups),
        cmocka_unit_test(test_bad_rules),
        cmocka_unit_test(test_catastrophic_rule_is_bounded),
        cmocka_unit_test(test_label_conflicts_counted),
        cmocka_unit_test(test_result_json_round_trip),
        cmocka_unit_test(test_mutated_inputs_never_lose_records),
        cmocka_unit_test(test_named_field_absent_from_every_record),
        cmocka_unit_test(test_field_candidate_lists),
        cmocka_unit_test(test_default_ids_unique_across_inputs),
        cmocka_unit_test(test_id_collisions_counted),
        cmocka_unit_test(test_missing_field_detail_lists_fields),
        cmocka_unit_test(test_bird_sql_is_a_default_name),
        cmocka_unit_test(test_csv_header_names_its_columns),
    };
    return cmocka_run_group_tests_name("ingest", tests, NULL, NULL);
}
