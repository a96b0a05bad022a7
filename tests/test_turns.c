/* Dialogues (ingest/turns.c): SParC's shape (tests/data/formats/sparc/
 * dev.json) expanded one record per turn, with ids "<dialogue id>/<turn>",
 * histories most recent first with no later turn and no SQL in them,
 * dialogues that cannot be expanded rejected whole, and the accounting
 * identity on turns. */
#include "pairshard/pairshard.h"
#include "tests/support/testutil.h"

#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

typedef struct got {
    ps_outcome outcome;
    char *id, *source, *question, *sql, *prompt, *db_id, *reason, *rule, *detail;
} got;

typedef struct results {
    char path[4096]; /* the input */
    got v[64];
    size_t n;
    json_t *stats;
    ps_clean_counts counts;
} results;

static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

static int collect(void *user, const ps_clean_result *r)
{
    results *rs = user;
    assert_true(rs->n < 64);
    got *g = &rs->v[rs->n++];
    g->outcome = r->outcome;
    g->id = dup_or_null(r->id);
    g->source = dup_or_null(r->source);
    g->question = dup_or_null(r->outcome != PS_OUTCOME_REJECTED ? r->question : NULL);
    g->sql = dup_or_null(r->outcome != PS_OUTCOME_REJECTED ? r->sql : NULL);
    g->prompt = dup_or_null(r->outcome != PS_OUTCOME_REJECTED ? r->prompt : NULL);
    g->db_id = dup_or_null(r->db_id);
    g->reason = dup_or_null(r->reason);
    g->rule = dup_or_null(r->rule);
    g->detail = dup_or_null(r->detail);
    return 0;
}

static void results_free(results *rs)
{
    for (size_t i = 0; i < rs->n; i++) {
        got *g = &rs->v[i];
        char *p[] = {g->id,    g->source, g->question, g->sql,   g->prompt,
                     g->db_id, g->reason, g->rule,     g->detail};
        for (size_t k = 0; k < sizeof p / sizeof p[0]; k++)
            free(p[k]);
    }
    json_decref(rs->stats);
}

/* Cleans tests/data/<rel> with --turns interaction and, when given, a
 * template and rules. */
static void run_rules(const char *rel, const char *id_field, const char *template_json,
                      const char *rules_json, results *rs)
{
    memset(rs, 0, sizeof *rs);
    snprintf(rs->path, sizeof rs->path, "%s", ps_test_data(rel));
    ps_clean_options o;
    ps_clean_options_init(&o);
    o.turns_path = "interaction";
    if (id_field)
        o.id_field = id_field;
    ps_cleaner *c;
    ps_error err;
    assert_int_equal(ps_cleaner_create(&o, &c, &err), 0);
    if (rules_json)
        assert_int_equal(ps_cleaner_add_rules(c, rules_json, strlen(rules_json), "test", &err), 0);
    ps_template *t = NULL;
    if (template_json) {
        assert_int_equal(ps_template_parse(template_json, strlen(template_json), NULL, &t, &err),
                         0);
        assert_int_equal(ps_cleaner_set_template(c, t, &err), 0);
    }
    int rc = ps_cleaner_run(c, rs->path, collect, rs, &err);
    if (rc)
        fail_msg("%s", err.message);
    ps_cleaner_get_counts(c, &rs->counts);
    char *js = ps_cleaner_stats_json(c);
    json_error_t je;
    rs->stats = json_loads(js, 0, &je);
    free(js);
    ps_cleaner_free(c);
    ps_template_free(t);
    /* the identity, on turns */
    const ps_clean_counts *k = &rs->counts;
    assert_int_equal(k->records_in, k->kept + k->rejected + k->duplicates);
    assert_int_equal(k->records_in, rs->n);
    assert_true(json_is_true(json_object_get(rs->stats, "balanced")));
}

static void run(const char *rel, const char *id_field, const char *template_json, results *rs)
{
    run_rules(rel, id_field, template_json, NULL, rs);
}

static const char HISTORY_TEMPLATE[] =
    "{\"prompt\": \"{question} || {history}\", \"completion\": \"{db_id} | {sql}\"}";

static void test_sparc_turns(void **state)
{
    (void)state;
    results rs;
    run("formats/sparc/dev.json", NULL, HISTORY_TEMPLATE, &rs);
    static const char *const ids[] = {"dev.json:#0/0", "dev.json:#0/1", "dev.json:#1/0",
                                      "dev.json:#1/1", "dev.json:#1/2", "dev.json:#2/0",
                                      "dev.json:#2/1"};
    assert_int_equal(rs.n, 7);
    for (size_t i = 0; i < 7; i++) {
        assert_int_equal(rs.v[i].outcome, PS_OUTCOME_KEPT);
        assert_string_equal(rs.v[i].id, ids[i]);
    }
    assert_int_equal(json_integer_value(json_object_get(rs.stats, "dialogues")), 3);
    assert_int_equal(json_integer_value(json_object_get(rs.stats, "records_in")), 7);
    /* the source names the input and the turn */
    assert_non_null(strstr(rs.v[4].source, "sparc/dev.json:#1/2"));
    /* the database comes from the dialogue's database_id */
    assert_string_equal(rs.v[4].db_id, "pets_1");
    assert_string_equal(rs.v[0].prompt, "How many singers are there? || ");
    assert_string_equal(rs.v[4].prompt,
                        "How heavy is the heaviest one? || Only the dogs. | Show all pets.");

    /* No later turn's utterance and no SQL of any turn in a turn's prompt. */
    json_error_t je;
    json_t *raw = json_load_file(rs.path, 0, &je);
    assert_non_null(raw);
    size_t at = 0;
    for (size_t d = 0; d < json_array_size(raw); d++) {
        json_t *turns = json_object_get(json_array_get(raw, d), "interaction");
        for (size_t k = 0; k < json_array_size(turns); k++, at++) {
            const char *prompt = rs.v[at].prompt;
            for (size_t j = 0; j < json_array_size(turns); j++) {
                json_t *tj = json_array_get(turns, j);
                const char *u = json_string_value(json_object_get(tj, "utterance"));
                const char *q = json_string_value(json_object_get(tj, "query"));
                assert_null(strstr(prompt, q));
                if (j > k)
                    assert_null(strstr(prompt, u));
                else
                    assert_non_null(strstr(prompt, u));
            }
        }
    }
    assert_int_equal(at, 7);
    json_decref(raw);
    results_free(&rs);
}

/* A dialogue that cannot be expanded is one rejection; a turn without its
 * SQL is one rejected turn (the last line is cut short). */
static void test_bad_dialogues(void **state)
{
    (void)state;
    results rs;
    run("formats/sparc/bad_dialogues.jsonl", NULL, NULL, &rs);
    static const char *const reasons[] = {"empty_field", "missing_field", "wrong_type",
                                          "wrong_type", NULL, "missing_field", "bad_json"};
    assert_int_equal(rs.n, 7);
    for (size_t i = 0; i < 7; i++) {
        if (!reasons[i]) {
            assert_int_equal(rs.v[i].outcome, PS_OUTCOME_KEPT);
            continue;
        }
        assert_int_equal(rs.v[i].outcome, PS_OUTCOME_REJECTED);
        assert_string_equal(rs.v[i].reason, reasons[i]);
    }
    assert_non_null(strstr(rs.v[1].detail, "no field 'interaction'"));
    assert_non_null(strstr(rs.v[3].detail, "turn 1 of 'interaction' is an integer"));
    /* JSONL: "<path>:<line>/<turn>"; the kept turn's id from the base name */
    char want[sizeof rs.path + 8];
    snprintf(want, sizeof want, "%s:5/1", rs.path);
    assert_string_equal(rs.v[5].source, want);
    snprintf(want, sizeof want, "%s:5/0", strrchr(rs.path, '/') + 1);
    assert_string_equal(rs.v[4].id, want);
    assert_non_null(strstr(rs.v[5].detail, "no field 'query'"));
    json_t *by = json_object_get(rs.stats, "rejected_by_reason");
    assert_int_equal(json_integer_value(json_object_get(by, "wrong_type")), 2);
    assert_int_equal(json_integer_value(json_object_get(rs.stats, "dialogues")), 6);
    results_free(&rs);
}

/* Ids from the id field get "/<turn>"; a repeated turn is a duplicate only
 * when its history is the same too. */
static void test_ids_and_duplicates(void **state)
{
    (void)state;
    results rs;
    run("formats/sparc/repeated_turns.jsonl", "dlg", NULL, &rs);
    assert_int_equal(rs.n, 6);
    assert_string_equal(rs.v[0].id, "a/0");
    assert_string_equal(rs.v[1].id, "a/1");
    assert_int_equal(rs.v[2].outcome, PS_OUTCOME_DUPLICATE); /* b/0 = a/0 */
    assert_int_equal(rs.v[3].outcome, PS_OUTCOME_DUPLICATE); /* b/1: same history */
    assert_string_equal(rs.v[3].id, "b/1");
    assert_int_equal(rs.v[4].outcome, PS_OUTCOME_KEPT);      /* c/0: another question */
    assert_int_equal(rs.v[5].outcome, PS_OUTCOME_KEPT);      /* c/1: another history */
    assert_string_equal(rs.v[5].id, "c/1");
    results_free(&rs);
}

/* A rule that drops an earlier turn's utterance rejects the later turns
 * (their history would be incomplete), naming the turn and the rule. */
static void test_rule_in_history(void **state)
{
    (void)state;
    results rs;
    run_rules("formats/sparc/repeated_turns.jsonl", "dlg", NULL,
              "[{\"name\": \"no-show\", \"field\": \"question\", \"drop_if\": \"^Show\"}]", &rs);
    assert_int_equal(rs.n, 6);
    static const char *const reasons[] = {"dropped_by_rule", "dropped_by_rule", "dropped_by_rule",
                                          "dropped_by_rule", NULL, NULL};
    for (size_t i = 0; i < 6; i++) {
        if (!reasons[i]) {
            assert_int_equal(rs.v[i].outcome, PS_OUTCOME_KEPT); /* c: "List pets." */
            continue;
        }
        assert_int_equal(rs.v[i].outcome, PS_OUTCOME_REJECTED);
        assert_string_equal(rs.v[i].reason, reasons[i]);
        assert_string_equal(rs.v[i].rule, "no-show");
    }
    /* a/0 by its own question; a/1 by its history */
    assert_null(strstr(rs.v[0].detail, "earlier turn"));
    assert_ptr_equal(strstr(rs.v[1].detail, "earlier turn 0: "), rs.v[1].detail);
    results_free(&rs);
}

/* A template field is cleaned like the question: a rule that drops it
 * rejects the record, naming the field. */
static void test_rule_in_template_field(void **state)
{
    (void)state;
    results rs;
    run_rules("formats/sparc/repeated_turns.jsonl", NULL,
              "{\"prompt\": \"{question} | {dlg}\", \"completion\": \"{sql}\"}",
              "[{\"name\": \"not-b\", \"field\": \"question\", \"drop_if\": \"^b$\"}]", &rs);
    assert_int_equal(rs.n, 6);
    for (size_t i = 2; i < 4; i++) { /* dialogue b */
        assert_int_equal(rs.v[i].outcome, PS_OUTCOME_REJECTED);
        assert_string_equal(rs.v[i].reason, "dropped_by_rule");
        assert_string_equal(rs.v[i].rule, "not-b");
        assert_ptr_equal(strstr(rs.v[i].detail, "dlg: "), rs.v[i].detail);
    }
    assert_string_equal(rs.v[0].prompt, "Show pets. | a");
    assert_int_equal(rs.v[4].outcome, PS_OUTCOME_KEPT);
    results_free(&rs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sparc_turns),
        cmocka_unit_test(test_bad_dialogues),
        cmocka_unit_test(test_ids_and_duplicates),
        cmocka_unit_test(test_rule_in_history),
        cmocka_unit_test(test_rule_in_template_field),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
