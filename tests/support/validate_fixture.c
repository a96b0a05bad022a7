/* validate/'s tests' fixture: a seeded random stream, the checks of a report
 * looked up by name, and synthetic builds (raw, cleaned and tokenized
 * statistics with the paired ones) built record by record. Shared by
 * tests/test_validate_*.c. */
#include "tests/support/validate_fixture.h"

#include <stdlib.h>
#include <string.h>

/* ---- helpers --------------------------------------------------------------- */

static uint64_t rng_state = 12345;

uint32_t rnd(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_state >> 33);
}

ps_vrecord rec(const char *label, uint32_t q, uint32_t s, uint32_t t)
{
    ps_vrecord r = {.label = label, .question_chars = q, .sql_chars = s, .tokens = t};
    return r;
}

char *json_text(json_t *j)
{
    char *s = json_dumps(j, JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
    json_decref(j);
    assert_non_null(s);
    return s;
}

const ps_vcheck *check_of(const ps_vreport *r, const char *name)
{
    for (size_t i = 0; i < r->n; i++)
        if (!strcmp(r->checks[i].name, name))
            return &r->checks[i];
    fail_msg("no check named %s", name);
    return NULL;
}

int verdict(const ps_vreport *r, const char *name)
{
    return check_of(r, name)->verdict;
}

void assert_explains(const ps_vreport *r, const char *name, const char *needle)
{
    const ps_vcheck *k = check_of(r, name);
    if (!strstr(k->explanation, needle))
        fail_msg("%s: explanation '%s' lacks '%s'", name, k->explanation, needle);
}

void assert_fails_explained(const ps_vreport *r, const char *name, const char *needle)
{
    assert_int_equal(verdict(r, name), PS_VV_FAIL);
    assert_explains(r, name, needle);
}

/* A text of n ASCII characters. */
const char *text(size_t n)
{
    static char buf[4096];
    assert_true(n < sizeof buf);
    memset(buf, 'a', n);
    buf[n] = '\0';
    return buf;
}

void synth_init(synth *s)
{
    s->raw = ps_vstats_new("raw");
    s->cl = ps_vstats_new("cleaned");
    s->tok = ps_vstats_new("tokenized");
    s->p = ps_vpaired_new(5);
    assert_true(s->raw && s->cl && s->tok && s->p);
}

void synth_add(synth *s, const synth_rec *r)
{
    ps_vrecord raw = rec(r->label, r->qb, r->sb, PS_VSTATS_NO_TOKENS);
    raw.hardness = r->hard_before;
    assert_int_equal(ps_vstats_add(s->raw, &raw), 0);
    char *qb = strdup(text(r->qb)), *sb = strdup(text(r->sb));
    char *qa = strdup(text(r->qa)), *sa = strdup(text(r->sa));
    ps_vpair p = {.id = "x", .source = "s", .label = r->label, .outcome = r->outcome,
                  .reason = r->reason, .rule = r->rule, .question_before = qb,
                  .question_before_len = r->qb, .sql_before = sb, .sql_before_len = r->sb};
    if (r->outcome != PS_OUTCOME_REJECTED) {
        p.question_after = qa;
        p.question_after_len = r->qa;
        p.sql_after = sa;
        p.sql_after_len = r->sa;
    }
    assert_int_equal(ps_vpaired_add(s->p, &p), 0);
    if (r->outcome == PS_OUTCOME_KEPT) {
        ps_vrecord c = rec(r->label, r->qa, r->sa, PS_VSTATS_NO_TOKENS);
        c.changed = r->qa != r->qb || r->sa != r->sb;
        c.hardness = r->hard_after ? r->hard_after : r->hard_before;
        assert_int_equal(ps_vstats_add(s->cl, &c), 0);
        c.tokens = r->tokens;
        c.unk_tokens = r->unk;
        c.truncated = r->truncated;
        assert_int_equal(ps_vstats_add(s->tok, &c), 0);
    }
    free(qb);
    free(sb);
    free(qa);
    free(sa);
}

const char *const LABELS[5] = {"L0", "L1", "L2", "L3", "L4"};
const char *const HARDNESS[4] = {"easy", "medium", "hard", "extra"};

/* n records over 5 labels and 4 hardness classes, unchanged by cleaning,
 * all kept. */
synth_rec plain(size_t i)
{
    synth_rec r = {0};
    r.label = LABELS[i % 5];
    r.hard_before = HARDNESS[i % 4];
    r.qb = r.qa = 40 + (uint32_t)(i * 7919 % 41);
    r.sb = r.sa = 80 + (uint32_t)(i * 104729 % 81);
    r.tokens = 30 + (uint32_t)(i * 31 % 40);
    r.outcome = PS_OUTCOME_KEPT;
    return r;
}

void synth_plain(synth *s, size_t n)
{
    synth_init(s);
    for (size_t i = 0; i < n; i++) {
        synth_rec r = plain(i);
        synth_add(s, &r);
    }
}

ps_vreport *synth_build(synth *s, const ps_vconfig *c)
{
    uint32_t b[] = {32, 48, 64, 96, 128};
    assert_int_equal(ps_vstats_set_padding(s->tok, b, 5), 0);
    ps_vreport *r = NULL;
    ps_error err;
    assert_int_equal(ps_validate_build(c, s->raw, s->cl, s->tok, s->p, &r, &err), 0);
    /* every report serialises, and its summary names each failure */
    char *j = ps_vreport_json(r), *sum = ps_vreport_summary(r);
    assert_non_null(j);
    assert_non_null(sum);
    json_t *parsed = json_loads(j, 0, NULL);
    assert_non_null(parsed);
    assert_string_equal(json_string_value(json_object_get(parsed, "verdict")), ps_vreport_verdict(r));
    assert_int_equal(json_integer_value(json_object_get(parsed, "report_version")), 1);
    assert_int_equal(json_array_size(json_object_get(parsed, "checks")), r->n);
    for (size_t i = 0; i < r->n; i++) {
        if (r->checks[i].verdict == PS_VV_FAIL)
            assert_non_null(strstr(sum, r->checks[i].name));
        json_t *k = json_array_get(json_object_get(parsed, "checks"), i);
        static const char *const KEYS[] = {"name", "group", "compares", "metric", "value",
                                           "threshold", "op", "mode", "verdict", "p_value",
                                           "explanation", "details"};
        for (size_t q = 0; q < sizeof KEYS / sizeof KEYS[0]; q++)
            assert_non_null(json_object_get(k, KEYS[q]));
    }
    json_decref(parsed);
    free(j);
    free(sum);
    return r;
}

void synth_free(synth *s)
{
    ps_vstats_free(s->raw);
    ps_vstats_free(s->cl);
    ps_vstats_free(s->tok);
    ps_vpaired_free(s->p);
}
