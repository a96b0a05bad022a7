/* A mixture's sources in the cleaner (ps_cleaner_add_source): each source
 * reads its records with its own field names and gives them ids
 * "<name>/<id>", the owner commits every record (one dedupe across the
 * sources: the earlier source's copy is kept), each source keeps its own
 * accounting, and the owner's accounting has every input's bytes. */
#include "support/testutil.h"

#include "ingest/ingest.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Reads, cleans and commits one input of source `src` (owner commits). */
static void run_input(ps_cleaner *owner, ps_cleaner *src, const char *path, char ids[][64],
                      int outcomes[], size_t *n)
{
    ps_error err;
    ps_clean_worker *w;
    ps_input_ctx in;
    ps_raw_record rec;
    int r;
    assert_int_equal(ps_clean_worker_create(src, &w), 0);
    assert_int_equal(ps_input_open(src, &in, path, &err), 0);
    while ((r = ps_input_next(src, &in, &rec, &err)) == 1) {
        ps_clean_item it;
        assert_int_equal(ps_clean_record(w, &in, &rec, &it, &err), 0);
        assert_int_equal(ps_cleaner_commit(owner, path, &it, &err), 0);
        assert_int_equal(ps_cleaner_account_source(src, path, &it, &err), 0);
        snprintf(ids[*n], 64, "%s%s%s", it.res.id ? it.res.id : "",
                 it.res.duplicate_of ? "=" : "", it.res.duplicate_of ? it.res.duplicate_of : "");
        outcomes[(*n)++] = it.res.outcome;
    }
    assert_int_equal(r, 0);
    ps_input_close(src, &in);
    ps_clean_worker_free(w);
}

static json_t *stats_of(const ps_cleaner *c)
{
    char *text = ps_cleaner_stats_json(c);
    json_t *j = json_loads(text, 0, NULL);
    free(text);
    assert_non_null(j);
    return j;
}

static json_int_t count(json_t *j, const char *key)
{
    return json_integer_value(json_object_get(j, key));
}

static void test_sources_share_dedupe_keep_accounting(void **state)
{
    (void)state;
    const char a_text[] = "{\"question\": \"how many?\", \"sql\": \"SELECT 1\"}\n"
                          "{\"question\": \"which?\", \"sql\": \"SELECT 2\"}\n";
    const char b_text[] = "{\"nl\": \"how many?\", \"query\": \"SELECT 1\", \"id\": \"x7\"}\n"
                          "{\"nl\": \"who?\", \"query\": \"SELECT 3\", \"id\": \"x8\"}\n"
                          "{\"query\": \"SELECT 4\", \"id\": \"x9\"}\n";
    char *a = ps_test_tmpfile(a_text, strlen(a_text), ".jsonl");
    char *b = ps_test_tmpfile(b_text, strlen(b_text), ".jsonl");
    ps_clean_options o, ob;
    ps_clean_options_init(&o);
    ps_clean_options_init(&ob);
    ob.question_field = "nl";
    ob.sql_field = "query";
    ps_error err;
    ps_cleaner *owner, *sa, *sb;
    assert_int_equal(ps_cleaner_create(&o, &owner, &err), 0);
    assert_int_equal(ps_cleaner_add_source(owner, &o, "spider", &sa, &err), 0);
    assert_int_equal(ps_cleaner_add_source(owner, &ob, "mine", &sb, &err), 0);
    const char *pa[] = {a}, *pb[] = {b};
    assert_int_equal(ps_cleaner_declare_inputs(sa, pa, 1, &err), 0);
    assert_int_equal(ps_cleaner_declare_inputs(sb, pb, 1, &err), 0);
    ps_cleaner_sources_ready(owner);
    char ids[8][64];
    int out[8];
    size_t n = 0;
    run_input(owner, sa, a, ids, out, &n);
    run_input(owner, sb, b, ids, out, &n);
    assert_int_equal(n, 5);
    const char *base = strrchr(a, '/') + 1;
    char want[128];
    snprintf(want, sizeof want, "spider/%s:1", base);
    assert_string_equal(ids[0], want); /* a default id, with its source */
    assert_int_equal(out[2], PS_OUTCOME_DUPLICATE); /* mine's copy of spider's pair */
    snprintf(want, sizeof want, "mine/x7=spider/%s:1", base);
    assert_string_equal(ids[2], want);
    assert_string_equal(ids[3], "mine/x8"); /* an id from the field, with its source */
    assert_int_equal(out[4], PS_OUTCOME_REJECTED); /* mine's question field is "nl" */

    json_t *all = stats_of(owner), *js = stats_of(sa), *jm = stats_of(sb);
    assert_int_equal(count(all, "records_in"), 5);
    assert_int_equal(count(all, "kept"), 3);
    assert_int_equal(count(all, "duplicates"), 1);
    assert_int_equal(count(all, "rejected"), 1);
    assert_int_equal(count(js, "records_in") + count(jm, "records_in"), 5);
    assert_int_equal(count(js, "kept"), 2);
    assert_int_equal(count(jm, "kept"), 1);
    assert_int_equal(count(jm, "duplicates"), 1);
    assert_int_equal(count(jm, "rejected"), 1);
    /* the inputs' bytes are the owner's as well as their source's */
    ps_clean_counts ca, cs, cm;
    ps_cleaner_get_counts(owner, &ca);
    ps_cleaner_get_counts(sa, &cs);
    ps_cleaner_get_counts(sb, &cm);
    assert_int_equal(ca.bytes_in, strlen(a_text) + strlen(b_text));
    assert_int_equal(cs.bytes_in + cm.bytes_in, ca.bytes_in);
    json_decref(all);
    json_decref(js);
    json_decref(jm);
    ps_cleaner_free(owner); /* frees its sources */
    unlink(a);
    unlink(b);
    free(a);
    free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sources_share_dedupe_keep_accounting),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
