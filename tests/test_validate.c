/* validate/: fixed bins and quantiles, merge = statistics of the union, JSON
 * round trips and hostile JSON, paired accounting and examples, every check
 * on constructed data (pass, warn, fail, not enough data, off), config
 * overrides, the Spider incident, and (with $PS_VALIDATE_REF, written by
 * tests/cli/validate_scipy.sh) the statistics against scipy. */
#include "report/report.h"
#include "tests/support/testutil.h"
#include "validate/stat_math.h"
#include "validate/vinternal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers --------------------------------------------------------------- */

static uint64_t rng_state = 12345;
static uint32_t rnd(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_state >> 33);
}

static ps_vrecord rec(const char *label, uint32_t q, uint32_t s, uint32_t t)
{
    ps_vrecord r = {.label = label, .question_chars = q, .sql_chars = s, .tokens = t};
    return r;
}

static char *json_text(json_t *j)
{
    char *s = json_dumps(j, JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
    json_decref(j);
    assert_non_null(s);
    return s;
}

static const ps_vcheck *check_of(const ps_vreport *r, const char *name)
{
    for (size_t i = 0; i < r->n; i++)
        if (!strcmp(r->checks[i].name, name))
            return &r->checks[i];
    fail_msg("no check named %s", name);
    return NULL;
}

static int verdict(const ps_vreport *r, const char *name)
{
    return check_of(r, name)->verdict;
}

static void assert_explains(const ps_vreport *r, const char *name, const char *needle)
{
    const ps_vcheck *k = check_of(r, name);
    if (!strstr(k->explanation, needle))
        fail_msg("%s: explanation '%s' lacks '%s'", name, k->explanation, needle);
}

/* A text of n ASCII characters. */
static const char *text(size_t n)
{
    static char buf[4096];
    assert_true(n < sizeof buf);
    memset(buf, 'a', n);
    buf[n] = '\0';
    return buf;
}

/* A synthetic build: records with labels L0..L{nl-1}, question and sql
 * lengths drawn around 60 and 120; `mut` may change the outcome/after. */
typedef struct synth {
    ps_vstats *raw, *cl, *tok;
    ps_vpaired *p;
} synth;

typedef struct synth_rec {
    const char *label;
    uint32_t qb, sb, qa, sa, tokens, unk;
    bool truncated;
    ps_outcome outcome;
    const char *reason, *rule;
} synth_rec;

static void synth_init(synth *s)
{
    s->raw = ps_vstats_new("raw");
    s->cl = ps_vstats_new("cleaned");
    s->tok = ps_vstats_new("tokenized");
    s->p = ps_vpaired_new(5);
    assert_true(s->raw && s->cl && s->tok && s->p);
}

static void synth_add(synth *s, const synth_rec *r)
{
    ps_vrecord raw = rec(r->label, r->qb, r->sb, PS_VSTATS_NO_TOKENS);
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

static const char *const LABELS[] = {"L0", "L1", "L2", "L3", "L4"};

/* n records over 5 labels, unchanged by cleaning, all kept. */
static synth_rec plain(size_t i)
{
    synth_rec r = {0};
    r.label = LABELS[i % 5];
    r.qb = r.qa = 40 + (uint32_t)(i * 7919 % 41);
    r.sb = r.sa = 80 + (uint32_t)(i * 104729 % 81);
    r.tokens = 30 + (uint32_t)(i * 31 % 40);
    r.outcome = PS_OUTCOME_KEPT;
    return r;
}

static ps_vreport *synth_build(synth *s, const ps_vconfig *c)
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

static void synth_free(synth *s)
{
    ps_vstats_free(s->raw);
    ps_vstats_free(s->cl);
    ps_vstats_free(s->tok);
    ps_vpaired_free(s->p);
}

/* ---- bins and quantiles ---------------------------------------------------- */

static void test_bins(void **state)
{
    (void)state;
    uint32_t prev = 0;
    for (uint32_t v = 0; v < 70000; v++) {
        uint32_t b = ps_vbin_of(v);
        assert_true(b < PS_VBINS);
        assert_true(b >= prev && b <= prev + 1);
        prev = b;
        assert_true(ps_vbin_lo(b) <= v);
        assert_true(v < ps_vbin_hi(b));
        if (v < 256)
            assert_int_equal(b, v);
    }
    assert_int_equal(ps_vbin_of(65535), 383);
    assert_int_equal(ps_vbin_of(65536), PS_VBIN_OVERFLOW);
    assert_int_equal(ps_vbin_of(UINT32_MAX), PS_VBIN_OVERFLOW);
    assert_int_equal(ps_vbin_lo(256), 256);
    assert_int_equal(ps_vbin_hi(256), 272);
    assert_int_equal(ps_vbin_lo(383), 65536 - 2048);
    for (uint32_t b = 1; b < PS_VBINS; b++)
        assert_int_equal(ps_vbin_lo(b), ps_vbin_hi(b - 1));
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static void test_quantiles_exact_below_256(void **state)
{
    (void)state;
    static uint64_t h[PS_VBINS];
    static uint32_t v[5000];
    for (int t = 0; t < 50; t++) {
        size_t n = 1 + rnd() % 5000;
        memset(h, 0, sizeof h);
        uint32_t max = 0;
        for (size_t i = 0; i < n; i++) {
            v[i] = rnd() % 256;
            h[v[i]]++;
            if (v[i] > max)
                max = v[i];
        }
        qsort(v, n, sizeof *v, cmp_u32);
        static const double Q[] = {0.5, 0.9, 0.99, 1.0, 0.01};
        for (size_t k = 0; k < 5; k++) {
            /* numpy 'inverted_cdf': the value at rank ceil(q n) */
            size_t rank = (size_t)ceil(Q[k] * (double)n - 1e-9);
            if (rank < 1)
                rank = 1;
            assert_true(ps_sm_quantile(h, n, Q[k], max) == (double)v[rank - 1]);
        }
    }
    /* widened bins: within the bin, never above max */
    memset(h, 0, sizeof h);
    h[ps_vbin_of(1000)] = 10;
    double q = ps_sm_quantile(h, 10, 0.5, 1001);
    assert_true(q >= ps_vbin_lo(ps_vbin_of(1000)) && q <= 1001);
    assert_true(ps_sm_quantile(h, 0, 0.5, 0) == 0);
}

static void test_quantile_groups(void **state)
{
    (void)state;
    static uint64_t base[PS_VBINS], cur[PS_VBINS];
    uint32_t first[128];
    /* one length only: a group below, the bin itself, a group above */
    memset(base, 0, sizeof base);
    base[50] = 1000;
    size_t ng = ps_sm_quantile_groups(base, PS_VBINS, 10, first);
    assert_int_equal(ng, 3);
    assert_int_equal(first[1], 50);
    assert_int_equal(first[2], 51);
    for (int t = 0; t < 200; t++) {
        memset(base, 0, sizeof base);
        memset(cur, 0, sizeof cur);
        size_t n = 1 + rnd() % 3000;
        for (size_t i = 0; i < n; i++)
            base[ps_vbin_of(rnd() % (1 + rnd() % 5000))]++;
        size_t want = 2 + rnd() % 20;
        ng = ps_sm_quantile_groups(base, PS_VBINS, want, first);
        assert_true(ng >= 1 && ng <= want + 2);
        assert_int_equal(first[0], 0);
        uint64_t tot = 0;
        for (size_t g = 0; g < ng; g++) {
            if (g)
                assert_true(first[g] > first[g - 1]);
            uint32_t end = g + 1 < ng ? first[g + 1] : PS_VBINS;
            uint64_t m = 0;
            for (uint32_t b = first[g]; b < end; b++)
                m += base[b];
            tot += m;
            /* only the outer groups (below / above the baseline) are empty */
            bool outer = (g == 0 && !base[0] && m == 0) || (g == ng - 1 && m == 0);
            if (!outer)
                assert_true(m > 0);
        }
        assert_int_equal(tot, n);
    }
}

/* ---- stats: merge, JSON ------------------------------------------------------ */

static void fill_random(ps_vstats *a, ps_vstats *b, ps_vstats *all, size_t n, bool tokens)
{
    static const char *const L[] = {"db_a", "db_b", "db_c", "\xe4\xb8\xad\xe6\x96\x87", "z"};
    for (size_t i = 0; i < n; i++) {
        ps_vrecord r = rec(rnd() % 7 == 0 ? NULL : L[rnd() % 5], rnd() % 300,
                           rnd() % 9 == 0 ? 70000 + rnd() % 5 : rnd() % 3000,
                           tokens ? rnd() % 1200 : PS_VSTATS_NO_TOKENS);
        r.unk_tokens = tokens && rnd() % 10 == 0 ? 1 + rnd() % 3 : 0;
        r.truncated = tokens && rnd() % 20 == 0;
        r.changed = rnd() % 3 == 0;
        r.invalid_utf8 = rnd() % 50 == 0;
        r.controls_removed = rnd() % 30 == 0 ? 2 : 0;
        if (rnd() % 40 == 0) {
            ps_vstats_add_unparsed(i % 2 ? a : b);
            ps_vstats_add_unparsed(all);
            continue;
        }
        assert_int_equal(ps_vstats_add(i % 2 ? a : b, &r), 0);
        assert_int_equal(ps_vstats_add(all, &r), 0);
    }
}

static void test_stats_merge_is_union(void **state)
{
    (void)state;
    ps_vstats *a = ps_vstats_new("tokenized"), *b = ps_vstats_new("tokenized"),
              *all = ps_vstats_new("tokenized");
    fill_random(a, b, all, 3000, true);
    assert_int_equal(ps_vstats_merge(a, b), 0);
    char *ja = json_text(ps_vstats_to_json(a)), *jall = json_text(ps_vstats_to_json(all));
    assert_string_equal(ja, jall);
    /* different points do not merge */
    ps_vstats *raw = ps_vstats_new("raw");
    assert_int_equal(ps_vstats_merge(raw, a), PS_EINVAL);
    assert_null(ps_vstats_new("bogus"));
    free(ja);
    free(jall);
    ps_vstats_free(a);
    ps_vstats_free(b);
    ps_vstats_free(all);
    ps_vstats_free(raw);
}

static void test_stats_json_roundtrip(void **state)
{
    (void)state;
    ps_vstats *a = ps_vstats_new("tokenized"), *b = ps_vstats_new("tokenized"),
              *all = ps_vstats_new("tokenized");
    fill_random(a, b, all, 2000, true);
    uint32_t bounds[] = {64, 128, 512, 2048};
    assert_int_equal(ps_vstats_set_padding(all, bounds, 4), 0);
    char *t1 = json_text(ps_vstats_to_json(all));
    json_t *j = json_loads(t1, 0, NULL);
    ps_vstats *back = NULL;
    ps_error err;
    assert_int_equal(ps_vstats_from_json(j, &back, &err), 0);
    json_decref(j);
    char *t2 = json_text(ps_vstats_to_json(back));
    assert_string_equal(t1, t2);
    /* padding equals a direct count for lengths below 1024 */
    uint64_t padded, toks;
    assert_true(ps_vstats_padding(back, &padded, &toks));
    assert_true(padded >= toks);
    free(t1);
    free(t2);
    ps_vstats_free(back);
    ps_vstats_free(a);
    ps_vstats_free(b);
    ps_vstats_free(all);
}

/* A stream of [UNK] words: a few frequent ones over many rare ones, more
 * distinct words than a table tracks. */
static void unk_stream(ps_vstats *a, ps_vstats *b, ps_vstats *all, size_t n)
{
    static const char *const common[] = {"SELECT", "\xE2\x80\x9C", "\xE2\x80\x9D", "FROM", "<"};
    static const int hints[] = {PS_UNK_HINT_LOWERCASE, PS_UNK_HINT_RULES, PS_UNK_HINT_RULES,
                                PS_UNK_HINT_LOWERCASE, PS_UNK_HINT_HTML};
    char w[32], id[32];
    for (size_t i = 0; i < n; i++) {
        int field = (int)(i % 3 == 0);
        const char *word = w;
        int hint = PS_UNK_HINT_NONE;
        if (i % 2 == 0) {
            size_t k = (i / 2) % 15; /* 0..4 each 3x as likely as the rare ones overall */
            k = k < 5 ? k : k % 5;
            word = common[k];
            hint = hints[k];
        } else {
            snprintf(w, sizeof w, "rare%zu", i * 7919 % 1500);
        }
        snprintf(id, sizeof id, "r%zu", i);
        ps_vstats *part = (i / 100) % 2 ? b : a; /* parts hold runs of records */
        assert_int_equal(ps_vstats_add_unk_word(part, field, word, strlen(word), id, hint), 0);
        assert_int_equal(ps_vstats_add_unk_word(all, field, word, strlen(word), id, hint), 0);
    }
}

static void test_stats_unk_words(void **state)
{
    (void)state;
    ps_vstats *a = ps_vstats_new("tokenized"), *b = ps_vstats_new("tokenized"),
              *all = ps_vstats_new("tokenized");
    unk_stream(a, b, all, 20000);
    /* bounded: at most PS_VUNK_CAP words per field, every occurrence in total */
    assert_true(all->unk[0].n <= PS_VUNK_CAP && all->unk[1].n <= PS_VUNK_CAP);
    assert_int_equal(all->unk[0].total + all->unk[1].total, 20000);
    /* the frequent words lead, with the exact count while nothing was evicted
     * before them: SELECT is word 0 of 15 on even i, sql when i % 3 != 0 */
    json_t *full = ps_vstats_to_json(all), *ja = json_object_get(full, "unk_words");
    json_t *top = json_array_get(json_object_get(json_object_get(ja, "sql"), "words"), 0);
    const char *w0 = json_string_value(json_object_get(top, "word"));
    assert_non_null(w0);
    assert_true(!strcmp(w0, "SELECT") || !strcmp(w0, "FROM") || !strcmp(w0, "<") ||
                !strncmp(w0, "\xE2\x80", 2));
    json_decref(full);
    /* mergeable: parts merged give the same heavy hitters (and total) */
    assert_int_equal(ps_vstats_merge(a, b), 0);
    for (int f = 0; f < PS_VUNK_FIELDS; f++) {
        assert_int_equal(a->unk[f].total, all->unk[f].total);
        size_t *ia = ps_vunk_sorted(&a->unk[f]), *il = ps_vunk_sorted(&all->unk[f]);
        for (size_t k = 0; k < 5; k++)
            assert_string_equal(a->unk[f].w[ia[k]].word, all->unk[f].w[il[k]].word);
        free(ia);
        free(il);
    }
    /* round trip through JSON: identical text; then merging loaded parts is
     * the same as merging the parts in memory (deterministic) */
    char *t1 = json_text(ps_vstats_to_json(all));
    json_t *j = json_loads(t1, 0, NULL);
    ps_vstats *back = NULL;
    ps_error err;
    assert_int_equal(ps_vstats_from_json(j, &back, &err), 0);
    json_decref(j);
    char *t2 = json_text(ps_vstats_to_json(back));
    assert_string_equal(t1, t2);
    ps_vstats *m1 = ps_vstats_new("tokenized"), *m2 = ps_vstats_new("tokenized");
    assert_int_equal(ps_vstats_merge(m1, all), 0);
    assert_int_equal(ps_vstats_merge(m1, all), 0);
    assert_int_equal(ps_vstats_merge(m2, back), 0);
    assert_int_equal(ps_vstats_merge(m2, back), 0);
    char *t3 = json_text(ps_vstats_to_json(m1)), *t4 = json_text(ps_vstats_to_json(m2));
    assert_string_equal(t3, t4);
    /* hints: lower-case, a rules example for the curly quotes, HTML escaping */
    json_t *d = ps_vunk_details(all->unk);
    char *dt = json_dumps(d, 0);
    assert_non_null(strstr(dt, "\"lowercase\""));
    assert_non_null(strstr(dt, "try --lowercase"));
    assert_true(strstr(dt, "\"replace\": \"[\xE2\x80\x9C\xE2\x80\x9D]\"") ||
                strstr(dt, "\"replace\": \"[\xE2\x80\x9D\xE2\x80\x9C]\""));
    assert_non_null(strstr(dt, "\"with\": \"\\\"\""));
    assert_non_null(strstr(dt, "HTML-escaped"));
    free(dt);
    json_decref(d);
    /* hostile files: a word twice, count <= error, counts above the total */
    const char *bad[] = {
        "{\"question\":{\"total\":2,\"words\":[{\"word\":\"x\",\"count\":1,\"error\":0},"
        "{\"word\":\"x\",\"count\":1,\"error\":0}]},\"sql\":{\"total\":0,\"words\":[]}}",
        "{\"question\":{\"total\":2,\"words\":[{\"word\":\"x\",\"count\":1,\"error\":1}]},"
        "\"sql\":{\"total\":0,\"words\":[]}}",
        "{\"question\":{\"total\":1,\"words\":[{\"word\":\"x\",\"count\":5,\"error\":0}]},"
        "\"sql\":{\"total\":0,\"words\":[]}}",
        "{\"question\":{\"total\":1,\"words\":[{\"word\":\"x\",\"count\":1,\"error\":0,\"hint\":\"?\"}]},"
        "\"sql\":{\"total\":0,\"words\":[]}}",
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        json_t *o = json_loads(t1, 0, NULL);
        json_object_set_new(o, "unk_words", json_loads(bad[k], 0, NULL));
        ps_vstats *x = NULL;
        assert_int_equal(ps_vstats_from_json(o, &x, &err), PS_EFORMAT);
        json_decref(o);
    }
    free(t1), free(t2), free(t3), free(t4);
    ps_vstats_free(back), ps_vstats_free(m1), ps_vstats_free(m2);
    ps_vstats_free(a), ps_vstats_free(b), ps_vstats_free(all);
}

static void test_padding_exact(void **state)
{
    (void)state;
    ps_vstats *t = ps_vstats_new("tokenized");
    uint32_t lens[] = {10, 16, 17, 30, 32, 100};
    for (size_t i = 0; i < 6; i++) {
        ps_vrecord r = rec("a", 1, 1, lens[i]);
        assert_int_equal(ps_vstats_add(t, &r), 0);
    }
    uint32_t b[] = {16, 32};
    assert_int_equal(ps_vstats_set_padding(t, b, 2), 0);
    uint64_t padded, toks;
    assert_true(ps_vstats_padding(t, &padded, &toks));
    assert_int_equal(toks, 205);
    assert_int_equal(padded, 16 + 16 + 32 + 32 + 32 + 100);
    uint32_t bad[] = {32, 16};
    assert_int_equal(ps_vstats_set_padding(t, bad, 2), PS_EINVAL);
    ps_vstats_free(t);
}

/* Applies `edit` (a jansson edit on the parsed STATS) and expects refusal. */
static void expect_refused(const char *good, void (*edit)(json_t *), const char *what)
{
    json_t *j = json_loads(good, 0, NULL);
    assert_non_null(j);
    edit(j);
    ps_vstats *s = NULL;
    ps_error err;
    ps_error_clear(&err);
    int rc = ps_vstats_from_json(j, &s, &err);
    if (rc == 0)
        fail_msg("hostile statistics accepted: %s", what);
    assert_null(s);
    assert_true(err.message[0] != '\0');
    json_decref(j);
}

static json_t *first_label_q(json_t *j)
{
    return json_object_get(json_object_get(json_object_get(json_array_get(json_object_get(j, "labels"), 0),
                                                           "lengths"),
                                           "question_chars"),
                           "hist");
}
static void e_neg_records(json_t *j) { json_object_set_new(j, "records", json_integer(-1)); }
static void e_str_records(json_t *j) { json_object_set_new(j, "records", json_string("9")); }
static void e_point(json_t *j) { json_object_set_new(j, "point", json_string("final")); }
static void e_no_health(json_t *j) { json_object_del(j, "health"); }
static void e_unk_gt_tokens(json_t *j)
{
    json_object_set_new(json_object_get(j, "health"), "unk_tokens", json_integer(1LL << 60));
}
static void e_hist_order(json_t *j)
{
    json_t *h = json_object_get(json_object_get(json_object_get(j, "lengths"), "question_chars"), "hist");
    json_array_insert_new(h, 0, json_pack("[ii]", 5000, 1));
}
static void e_hist_bin_range(json_t *j)
{
    json_t *h = json_object_get(json_object_get(json_object_get(j, "lengths"), "question_chars"), "hist");
    json_array_append_new(h, json_pack("[ii]", 385, 1));
}
static void e_hist_zero_count(json_t *j)
{
    json_t *h = json_object_get(json_object_get(json_object_get(j, "lengths"), "question_chars"), "hist");
    json_array_set_new(json_array_get(h, 0), 1, json_integer(0));
}
static void e_hist_not_pair(json_t *j)
{
    json_t *h = json_object_get(json_object_get(json_object_get(j, "lengths"), "sql_chars"), "hist");
    json_array_set_new(h, 0, json_pack("[iii]", 1, 2, 3));
}
static void e_sum(json_t *j)
{
    json_object_set_new(json_object_get(json_object_get(j, "lengths"), "question_chars"), "sum",
                        json_integer(1LL << 50));
}
static void e_max(json_t *j)
{
    json_object_set_new(json_object_get(json_object_get(j, "lengths"), "question_chars"), "max",
                        json_integer(3));
}
static void e_label_order(json_t *j)
{
    json_t *l = json_object_get(j, "labels");
    json_array_append(l, json_array_get(l, 0));
    json_object_set_new(j, "label_count", json_integer((json_int_t)json_array_size(l)));
}
static void e_label_count(json_t *j) { json_object_set_new(j, "label_count", json_integer(99)); }
static void e_label_records(json_t *j)
{
    json_t *l = json_array_get(json_object_get(j, "labels"), 0);
    json_object_set_new(l, "records", json_integer(json_integer_value(json_object_get(l, "records")) + 1));
}
static void e_label_hist(json_t *j) { json_array_append_new(first_label_q(j), json_pack("[ii]", 384, 7)); }
static void e_not_object(json_t *j) { json_object_set_new(j, "lengths", json_array()); }
static void e_tokens_exact(json_t *j)
{
    json_array_append_new(json_object_get(j, "tokens_exact"), json_pack("[ii]", 1023, 1000000));
}
static void e_padding(json_t *j)
{
    json_object_set_new(j, "padding", json_pack("{s[ii]}", "bounds", 64, 32));
}

static void test_stats_hostile_json(void **state)
{
    (void)state;
    ps_vstats *a = ps_vstats_new("tokenized"), *b = ps_vstats_new("tokenized"),
              *all = ps_vstats_new("tokenized");
    fill_random(a, b, all, 500, true);
    char *good = json_text(ps_vstats_to_json(all));
    struct {
        void (*f)(json_t *);
        const char *what;
    } E[] = {
        {e_neg_records, "negative count"}, {e_str_records, "string count"},
        {e_point, "unknown point"}, {e_no_health, "no health"},
        {e_unk_gt_tokens, "unk > tokens"}, {e_hist_order, "hist out of order"},
        {e_hist_bin_range, "bin out of range"}, {e_hist_zero_count, "zero count"},
        {e_hist_not_pair, "hist entry not a pair"}, {e_sum, "sum outside the bins"},
        {e_max, "max not in last bin"}, {e_label_order, "labels unsorted/duplicated"},
        {e_label_count, "label_count"}, {e_label_records, "label records"},
        {e_label_hist, "label hist count"}, {e_not_object, "lengths not an object"},
        {e_tokens_exact, "tokens_exact"}, {e_padding, "padding bounds"},
    };
    for (size_t i = 0; i < sizeof E / sizeof E[0]; i++)
        expect_refused(good, E[i].f, E[i].what);
    /* more labels than a statistics file may hold: refused before reading them */
    json_t *big = json_loads(good, 0, NULL);
    json_object_set_new(big, "label_count", json_integer(300000));
    ps_vstats *bs = NULL;
    assert_int_equal(ps_vstats_from_json(big, &bs, NULL), PS_ELIMIT);
    json_decref(big);
    /* random byte damage: refused or loaded, never a crash */
    size_t n = strlen(good);
    for (int t = 0; t < 300; t++) {
        char *d = strdup(good);
        for (int k = 0; k < 3; k++)
            d[rnd() % n] = "0123456789[]{},\"-ax"[rnd() % 19];
        json_t *j = json_loads(d, 0, NULL);
        ps_vstats *s = NULL;
        if (j && ps_vstats_from_json(j, &s, NULL) == 0)
            ps_vstats_free(s);
        json_decref(j);
        free(d);
    }
    free(good);
    ps_vstats_free(a);
    ps_vstats_free(b);
    ps_vstats_free(all);
}

/* ---- paired ---------------------------------------------------------------------- */

static void test_paired_accounting_and_examples(void **state)
{
    (void)state;
    ps_vpaired *p = ps_vpaired_new(3), *p1 = ps_vpaired_new(3), *p2 = ps_vpaired_new(3);
    struct {
        const char *label, *qb, *qa;
        ps_outcome o;
        const char *reason, *rule;
    } R[] = {
        {"a", "hello world", "hello world", PS_OUTCOME_KEPT, NULL, NULL},
        {"a", "hello  world", "hello world", PS_OUTCOME_KEPT, NULL, NULL},        /* -1 char */
        {"b", "abcdefghij", "ab", PS_OUTCOME_KEPT, NULL, NULL},                   /* -80% */
        {"b", "abcdefghij", "ab", PS_OUTCOME_KEPT, NULL, NULL},                   /* tie: later */
        {"b", "xyz", NULL, PS_OUTCOME_REJECTED, "empty_after_cleaning", "strip"}, /* 100% */
        {"c", "dup", "dup", PS_OUTCOME_DUPLICATE, NULL, NULL},
        {NULL, "q", NULL, PS_OUTCOME_REJECTED, "dropped_by_rule", "no-q"},
        {"c", NULL, NULL, PS_OUTCOME_REJECTED, "bad_json", NULL},
        {"c", "\xe4\xb8\xad\xe6\x96\x87", "\xe4\xb8\xad", PS_OUTCOME_KEPT, NULL, NULL}, /* 2 -> 1 chars */
    };
    size_t n = sizeof R / sizeof R[0];
    for (size_t i = 0; i < n; i++) {
        ps_vpair r = {.id = "id", .source = "src", .label = R[i].label, .outcome = R[i].o,
                      .reason = R[i].reason, .rule = R[i].rule, .question_before = R[i].qb,
                      .question_before_len = R[i].qb ? strlen(R[i].qb) : 0,
                      .sql_before = R[i].qb ? "SELECT 1" : NULL, .sql_before_len = 8,
                      .question_after = R[i].qa, .question_after_len = R[i].qa ? strlen(R[i].qa) : 0,
                      .sql_after = R[i].qa ? "SELECT 1" : NULL, .sql_after_len = 8};
        assert_int_equal(ps_vpaired_add(p, &r), 0);
        assert_int_equal(ps_vpaired_add(i < 4 ? p1 : p2, &r), 0);
    }
    assert_int_equal(p->records_in, 9);
    assert_int_equal(p->kept, 5);
    assert_int_equal(p->rejected, 3);
    assert_int_equal(p->duplicates, 1);
    assert_int_equal(p->unparsed, 1);
    assert_int_equal(p->empty_after_cleaning, 1);
    assert_int_equal(p->changed_question, 4);
    assert_int_equal(p->zero[0], 1);
    assert_int_equal(p->shrink[0][1], 2);   /* -1 char twice (ASCII and CJK) */
    assert_int_equal(p->shrink[0][8], 2);   /* -8 chars twice */
    assert_int_equal(p->rel[0][80], 2);
    assert_int_equal(p->rel[0][50], 1);     /* 2 -> 1 chars */
    const ps_vplabel *b = ps_vpaired_find_label(p, "b");
    assert_non_null(b);
    assert_int_equal(b->records_in, 3);
    assert_int_equal(b->kept, 2);
    assert_int_equal(b->empty_after_cleaning, 1);
    /* examples: largest relative change first, ties in input order */
    assert_int_equal(p->nex, 3);
    assert_true(p->ex[0].score == 1.0);
    assert_string_equal(p->ex[0].reason, "empty_after_cleaning");
    assert_true(p->ex[1].score == 0.8 && p->ex[1].seq == 2);
    assert_true(p->ex[2].score == 0.8 && p->ex[2].seq == 3);
    /* merge of two halves = the whole, JSON equal */
    assert_int_equal(ps_vpaired_merge(p1, p2), 0);
    char *a = json_text(ps_vpaired_to_json(p)), *m = json_text(ps_vpaired_to_json(p1));
    assert_string_equal(a, m);
    /* round trip */
    json_t *j = json_loads(a, 0, NULL);
    ps_vpaired *back = NULL;
    assert_int_equal(ps_vpaired_from_json(j, &back, NULL), 0);
    char *a2 = json_text(ps_vpaired_to_json(back));
    assert_string_equal(a, a2);
    /* hostile: counts that do not add up */
    json_object_set_new(j, "rejected", json_integer(7));
    ps_vpaired *bad = NULL;
    ps_error err;
    assert_int_equal(ps_vpaired_from_json(j, &bad, &err), PS_EFORMAT);
    assert_null(bad);
    json_decref(j);
    j = json_loads(a, 0, NULL);
    json_array_append_new(json_object_get(j, "examples"), json_pack("{si}", "seq", 1));
    assert_int_equal(ps_vpaired_from_json(j, &bad, &err), PS_EFORMAT);
    json_decref(j);
    j = json_loads(a, 0, NULL);
    json_object_set_new(json_object_get(json_object_get(j, "change"), "question_chars"), "zero",
                        json_integer(100));
    assert_int_equal(ps_vpaired_from_json(j, &bad, &err), PS_EFORMAT);
    json_decref(j);
    size_t len = strlen(a);
    for (int t = 0; t < 300; t++) {
        char *d = strdup(a);
        for (int k = 0; k < 3; k++)
            d[rnd() % len] = "0123456789[]{},\"-ax"[rnd() % 19];
        json_t *jj = json_loads(d, 0, NULL);
        ps_vpaired *q = NULL;
        if (jj && ps_vpaired_from_json(jj, &q, NULL) == 0)
            ps_vpaired_free(q);
        json_decref(jj);
        free(d);
    }
    free(a);
    free(m);
    free(a2);
    ps_vpaired_free(back);
    ps_vpaired_free(p);
    ps_vpaired_free(p1);
    ps_vpaired_free(p2);
}

/* ---- the checks on constructed data ---------------------------------------------- */

static void test_checks_clean_pass(void **state)
{
    (void)state;
    synth s;
    synth_init(&s);
    for (size_t i = 0; i < 1000; i++) {
        synth_rec r = plain(i);
        synth_add(&s, &r);
    }
    ps_vreport *r = synth_build(&s, NULL);
    for (size_t i = 0; i < r->n; i++)
        if (r->checks[i].verdict != PS_VV_PASS)
            fail_msg("%s: %s", r->checks[i].name, r->checks[i].explanation);
    assert_string_equal(ps_vreport_verdict(r), "pass");
    /* the same statistics give the same bytes */
    ps_vreport *r2 = synth_build(&s, NULL);
    char *j1 = ps_vreport_json(r), *j2 = ps_vreport_json(r2);
    assert_string_equal(j1, j2);
    free(j1);
    free(j2);
    ps_vreport_free(r2);
    assert_true(check_of(r, "question_chars_ks")->value == 0);
    assert_true(check_of(r, "question_chars_ks")->p_value == 1);
    ps_vreport_free(r);
    synth_free(&s);
}

static void test_checks_not_enough_data(void **state)
{
    (void)state;
    synth s;
    synth_init(&s);
    for (size_t i = 0; i < 50; i++) {
        synth_rec r = plain(i);
        if (i < 10) { /* even a big shift says nothing with 50 records */
            r.qa = 5;
            r.outcome = i < 5 ? PS_OUTCOME_REJECTED : PS_OUTCOME_KEPT;
            r.reason = "dropped_by_rule";
        }
        synth_add(&s, &r);
    }
    ps_vreport *r = synth_build(&s, NULL);
    static const char *const NED[] = {"label_js_distance", "label_psi", "label_chi2",
                                      "question_chars_ks", "sql_chars_psi", "question_chars_quantiles",
                                      "question_length_change", "rejected_share", "unk_token_rate",
                                      "truncation_rate", "label_retention"};
    for (size_t i = 0; i < sizeof NED / sizeof NED[0]; i++) {
        assert_int_equal(verdict(r, NED[i]), PS_VV_NOT_ENOUGH_DATA);
        assert_explains(r, NED[i], "not enough data");
        assert_true(isnan(check_of(r, NED[i])->value));
    }
    assert_int_equal(verdict(r, "accounting"), PS_VV_PASS);
    assert_string_equal(ps_vreport_verdict(r), "pass");
    ps_vreport_free(r);
    /* no input at all */
    ps_vreport *e = NULL;
    assert_int_equal(ps_validate_build(NULL, NULL, NULL, NULL, NULL, &e, NULL), 0);
    assert_string_equal(ps_vreport_verdict(e), "pass");
    assert_int_equal(verdict(e, "accounting"), PS_VV_NOT_ENOUGH_DATA);
    ps_vreport_free(e);
    synth_free(&s);
}

static void test_checks_label_retention(void **state)
{
    (void)state;
    /* L3 loses 60 of its 200 records to one rule */
    synth s;
    synth_init(&s);
    size_t lost = 0;
    for (size_t i = 0; i < 1000; i++) {
        synth_rec r = plain(i);
        if (!strcmp(r.label, "L3") && lost < 60) {
            r.outcome = PS_OUTCOME_REJECTED;
            r.reason = "dropped_by_rule";
            r.rule = "no-db3";
            lost++;
        }
        synth_add(&s, &r);
    }
    ps_vreport *r = synth_build(&s, NULL);
    assert_int_equal(verdict(r, "label_retention"), PS_VV_FAIL);
    assert_explains(r, "label_retention", "'L3'");
    assert_int_equal(verdict(r, "rejected_share"), PS_VV_FAIL); /* 6% by one rule */
    assert_explains(r, "rejected_share", "no-db3");
    assert_int_equal(verdict(r, "accounting"), PS_VV_PASS);
    assert_string_equal(ps_vreport_verdict(r), "fail");
    char *sum = ps_vreport_summary(r);
    assert_non_null(strstr(sum, "L3"));
    free(sum);
    ps_vreport_free(r);

    /* warn mode and off */
    ps_vconfig *c = ps_vconfig_new();
    json_t *cj = json_pack("{s{ssssss}}", "modes", "label_retention", "warn", "rejected_share",
                           "off", "label_js_distance", "warn");
    assert_int_equal(ps_vconfig_apply_json(c, cj, NULL), 0);
    json_decref(cj);
    r = synth_build(&s, c);
    assert_int_equal(verdict(r, "label_retention"), PS_VV_WARN);
    assert_int_equal(verdict(r, "rejected_share"), PS_VV_OFF);
    assert_true(isnan(check_of(r, "rejected_share")->value));
    assert_string_equal(ps_vreport_verdict(r), "warn");
    ps_vreport_free(r);
    ps_vconfig_free(c);
    synth_free(&s);

    /* a label that vanishes */
    synth_init(&s);
    for (size_t i = 0; i < 1000; i++) {
        synth_rec q = plain(i);
        if (!strcmp(q.label, "L1") && i < 150) {
            q.label = "tiny";
            q.outcome = PS_OUTCOME_REJECTED;
            q.reason = "too_long";
        }
        synth_add(&s, &q);
    }
    r = synth_build(&s, NULL);
    assert_int_equal(verdict(r, "label_retention"), PS_VV_FAIL);
    assert_explains(r, "label_retention", "'tiny' vanished");
    ps_vreport_free(r);
    synth_free(&s);

    /* a mild loss warns: L2 keeps 85% against ~97% overall */
    synth_init(&s);
    lost = 0;
    for (size_t i = 0; i < 1000; i++) {
        synth_rec q = plain(i);
        if (!strcmp(q.label, "L2") && lost < 30) {
            q.outcome = PS_OUTCOME_REJECTED;
            q.reason = "empty_field";
            lost++;
        }
        synth_add(&s, &q);
    }
    r = synth_build(&s, NULL);
    assert_int_equal(verdict(r, "label_retention"), PS_VV_WARN);
    ps_vreport_free(r);
    synth_free(&s);
}

static void test_checks_length_change(void **state)
{
    (void)state;
    /* cleaning halves L4's questions */
    synth s;
    synth_init(&s);
    for (size_t i = 0; i < 1000; i++) {
        synth_rec r = plain(i);
        if (!strcmp(r.label, "L4"))
            r.qa = r.qb / 2;
        synth_add(&s, &r);
    }
    ps_vreport *r = synth_build(&s, NULL);
    assert_int_equal(verdict(r, "question_length_change"), PS_VV_FAIL);
    assert_explains(r, "question_length_change", "'L4'");
    assert_int_equal(verdict(r, "question_chars_ks_label"), PS_VV_FAIL);
    assert_explains(r, "question_chars_ks_label", "'L4'");
    assert_int_equal(verdict(r, "question_chars_ks"), PS_VV_FAIL); /* 20% of records moved */
    assert_int_equal(verdict(r, "sql_length_change"), PS_VV_PASS);
    assert_int_equal(verdict(r, "sql_chars_ks"), PS_VV_PASS);
    ps_vreport_free(r);
    /* raising the thresholds makes it pass; overrides are reported */
    ps_vconfig *c = ps_vconfig_new();
    json_t *cj = json_pack("{s{sfsfsfsfsfsfsfsfsf}}", "thresholds", "question_length_change", 1.0,
                           "question_chars_ks_label", 1.0, "question_chars_ks", 0.9,
                           "question_chars_psi", 10.0, "question_chars_quantiles", 10.0,
                           "question_chars_ks_warn", 0.9, "question_chars_psi_warn", 10.0,
                           "question_chars_quantiles_warn", 10.0, "question_chars_ks_label_warn", 1.0);
    assert_int_equal(ps_vconfig_apply_json(c, cj, NULL), 0);
    json_decref(cj);
    r = synth_build(&s, c);
    assert_int_equal(verdict(r, "question_length_change"), PS_VV_WARN); /* above the warn 2% */
    assert_int_equal(verdict(r, "question_chars_ks"), PS_VV_PASS);
    assert_true(check_of(r, "question_chars_ks")->threshold == 0.9);
    assert_int_equal(verdict(r, "question_chars_ks_label"), PS_VV_PASS);
    ps_vreport_free(r);
    ps_vconfig_free(c);
    synth_free(&s);
}

static void test_checks_distribution_shift(void **state)
{
    (void)state;
    /* every question grows by 40 chars; every sql by 2 (a small shift) */
    synth s;
    synth_init(&s);
    for (size_t i = 0; i < 2000; i++) {
        synth_rec r = plain(i);
        r.qa = r.qb + 40;
        r.sa = r.sb + 2;
        synth_add(&s, &r);
    }
    ps_vreport *r = synth_build(&s, NULL);
    assert_int_equal(verdict(r, "question_chars_ks"), PS_VV_FAIL);
    assert_true(check_of(r, "question_chars_ks")->p_value < 1e-10);
    assert_int_equal(verdict(r, "question_chars_psi"), PS_VV_FAIL);
    assert_int_equal(verdict(r, "question_chars_quantiles"), PS_VV_FAIL);
    assert_int_equal(verdict(r, "question_length_change"), PS_VV_FAIL);
    /* sql: +2 of 80..160 chars: D about 2/81 */
    assert_int_equal(verdict(r, "sql_chars_ks"), PS_VV_PASS);
    assert_int_equal(verdict(r, "sql_chars_quantiles"), PS_VV_PASS);
    ps_vreport_free(r);
    synth_free(&s);
}

static void test_checks_health(void **state)
{
    (void)state;
    synth s;
    synth_init(&s);
    for (size_t i = 0; i < 1000; i++) {
        synth_rec r = plain(i);
        if (i % 25 == 0)
            r.unk = 1; /* 4% of records; 40 of ~49500 tokens */
        if (i % 50 == 0)
            r.truncated = true; /* 2% */
        synth_add(&s, &r);
    }
    ps_vreport *r = synth_build(&s, NULL);
    assert_int_equal(verdict(r, "unk_record_rate"), PS_VV_WARN);
    assert_int_equal(verdict(r, "unk_token_rate"), PS_VV_PASS);
    assert_int_equal(verdict(r, "truncation_rate"), PS_VV_WARN);
    assert_int_equal(verdict(r, "padding_rate"), PS_VV_PASS);
    ps_vreport_free(r);
    synth_free(&s);

    synth_init(&s);
    for (size_t i = 0; i < 1000; i++) {
        synth_rec q = plain(i);
        q.unk = i % 5 == 0 ? 30 : 0; /* ~12% of tokens */
        q.truncated = i % 10 == 0;
        synth_add(&s, &q);
    }
    r = synth_build(&s, NULL);
    assert_int_equal(verdict(r, "unk_token_rate"), PS_VV_FAIL);
    /* 20% of records: past the threshold, but the record share only warns */
    assert_int_equal(verdict(r, "unk_record_rate"), PS_VV_WARN);
    assert_int_equal(verdict(r, "truncation_rate"), PS_VV_FAIL);
    ps_vreport_free(r);
    synth_free(&s);
}

static void test_checks_empty_and_duplicates(void **state)
{
    (void)state;
    synth s;
    synth_init(&s);
    for (size_t i = 0; i < 1000; i++) {
        synth_rec r = plain(i);
        if (i % 100 == 1) {
            r.outcome = PS_OUTCOME_REJECTED;
            r.reason = "empty_after_cleaning";
            r.rule = "strip";
        }
        if (i % 5 == 2)
            r.outcome = PS_OUTCOME_DUPLICATE;
        synth_add(&s, &r);
    }
    ps_vreport *r = synth_build(&s, NULL);
    assert_int_equal(verdict(r, "empty_after_cleaning"), PS_VV_FAIL); /* 1% > 0.5% */
    assert_int_equal(verdict(r, "duplicate_rate"), PS_VV_WARN);       /* 20%, mode warn */
    assert_int_equal(verdict(r, "accounting"), PS_VV_PASS);
    ps_vreport_free(r);
    /* accounting: statistics that disagree with the paired counts */
    ps_vstats_add_unparsed(s.raw);
    r = synth_build(&s, NULL);
    assert_int_equal(verdict(r, "accounting"), PS_VV_FAIL);
    ps_vreport_free(r);
    synth_free(&s);
}

/* The sql and token sides of the length checks, and padding. */
static void test_checks_sql_tokens_padding(void **state)
{
    (void)state;
    synth s;
    synth_init(&s);
    for (size_t i = 0; i < 1000; i++) {
        synth_rec r = plain(i);
        if (!strcmp(r.label, "L2"))
            r.sa = r.sb / 2;
        synth_add(&s, &r);
    }
    ps_vreport *r = synth_build(&s, NULL);
    assert_int_equal(verdict(r, "sql_length_change"), PS_VV_FAIL);
    assert_explains(r, "sql_length_change", "'L2'");
    assert_int_equal(verdict(r, "sql_chars_ks_label"), PS_VV_FAIL);
    assert_explains(r, "sql_chars_ks_label", "'L2'");
    assert_int_equal(verdict(r, "question_length_change"), PS_VV_PASS);
    ps_vreport_free(r);
    /* bounds far above the lengths: padding warns (warn mode, even above its fail level) */
    uint32_t wide[] = {1000};
    assert_int_equal(ps_vstats_set_padding(s.tok, wide, 1), 0);
    ps_vreport *r2 = NULL;
    assert_int_equal(ps_validate_build(NULL, s.raw, s.cl, s.tok, s.p, &r2, NULL), 0);
    assert_int_equal(verdict(r2, "padding_rate"), PS_VV_WARN);
    assert_true(check_of(r2, "padding_rate")->value > 0.9);
    ps_vreport_free(r2);
    synth_free(&s);

    /* tokens: the current encodes every pair 30 tokens longer */
    ps_vstats *a = ps_vstats_new("tokenized"), *b = ps_vstats_new("tokenized");
    for (size_t i = 0; i < 2000; i++) {
        synth_rec q = plain(i);
        ps_vrecord x = rec(q.label, q.qb, q.sb, q.tokens);
        assert_int_equal(ps_vstats_add(a, &x), 0);
        x.tokens += 30;
        assert_int_equal(ps_vstats_add(b, &x), 0);
    }
    assert_int_equal(ps_validate_compare(NULL, a, b, &r, NULL), 0);
    static const char *const T[] = {"tokens_ks", "tokens_ks_label", "tokens_psi", "tokens_quantiles"};
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(verdict(r, T[i]), PS_VV_FAIL);
    assert_int_equal(verdict(r, "question_chars_ks"), PS_VV_PASS);
    assert_int_equal(verdict(r, "sql_chars_quantiles"), PS_VV_PASS);
    assert_int_equal(verdict(r, "unk_rate_increase"), PS_VV_PASS);
    ps_vreport_free(r);
    ps_vstats_free(a);
    ps_vstats_free(b);
}

static void test_compare(void **state)
{
    (void)state;
    ps_vstats *a = ps_vstats_new("tokenized"), *b = ps_vstats_new("tokenized"),
              *c = ps_vstats_new("tokenized");
    for (size_t i = 0; i < 2000; i++) {
        synth_rec r = plain(i);
        ps_vrecord x = rec(r.label, r.qb, r.sb, r.tokens);
        assert_int_equal(ps_vstats_add(a, &x), 0);
        x.unk_tokens = i % 10 == 0 ? 4 : 0; /* 0.4 [UNK] per record of ~50 tokens: 0.8% */
        assert_int_equal(ps_vstats_add(b, &x), 0);
        ps_vrecord y = rec(i % 2 ? "other" : "L0", r.qb, r.sb, r.tokens);
        assert_int_equal(ps_vstats_add(c, &y), 0);
    }
    ps_vreport *r = NULL;
    assert_int_equal(ps_validate_compare(NULL, a, b, &r, NULL), 0);
    assert_int_equal(verdict(r, "label_js_distance"), PS_VV_PASS);
    assert_int_equal(verdict(r, "tokens_ks"), PS_VV_PASS);
    assert_int_equal(verdict(r, "unk_rate_increase"), PS_VV_FAIL);
    assert_int_equal(verdict(r, "unk_token_rate"), PS_VV_WARN);
    assert_string_equal(ps_vreport_verdict(r), "fail");
    assert_string_equal(r->mode, "compare");
    ps_vreport_free(r);
    assert_int_equal(ps_validate_compare(NULL, a, c, &r, NULL), 0);
    assert_int_equal(verdict(r, "label_js_distance"), PS_VV_FAIL);
    assert_int_equal(verdict(r, "label_psi"), PS_VV_FAIL);
    assert_int_equal(verdict(r, "label_chi2"), PS_VV_WARN); /* mode warn */
    assert_true(check_of(r, "label_chi2")->p_value < 1e-100);
    assert_explains(r, "label_js_distance", "'other'");
    ps_vreport_free(r);
    ps_vstats_free(a);
    ps_vstats_free(b);
    ps_vstats_free(c);
}

static void test_config(void **state)
{
    (void)state;
    ps_vconfig *c = ps_vconfig_new();
    ps_error err;
    struct {
        const char *json, *needle;
    } BAD[] = {
        {"{\"thresholds\": {\"label_jsd\": 0.1}}", "label_jsd"},
        {"{\"thresholds\": {\"label_js_distance_warnx\": 0.1}}", "label_js_distance_warnx"},
        {"{\"modes\": {\"nope\": \"fail\"}}", "nope"},
        {"{\"modes\": {\"label_psi\": \"loud\"}}", "label_psi"},
        {"{\"modes\": {\"label_psi\": 1}}", "label_psi"},
        {"{\"thresholds\": {\"label_psi\": \"high\"}}", "label_psi"},
        {"{\"thresholds\": {\"label_psi\": -1}}", "label_psi"},
        {"{\"thresholds\": {\"min_records\": 0}}", "min_records"},
        {"{\"thresholds\": {\"min_records\": 1.5}}", "min_records"},
        {"{\"threshold\": {}}", "threshold"},
        {"{\"thresholds\": []}", "thresholds"},
        {"[1]", "object"},
    };
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        json_t *j = json_loads(BAD[i].json, 0, NULL);
        assert_non_null(j);
        ps_error_clear(&err);
        assert_int_equal(ps_vconfig_apply_json(c, j, &err), PS_EUSAGE);
        if (!strstr(err.message, BAD[i].needle))
            fail_msg("'%s' -> '%s'", BAD[i].json, err.message);
        json_decref(j);
    }
    /* a failed apply changes nothing; a good one is reported in the report */
    json_t *j = json_loads("{\"thresholds\": {\"label_psi\": 0.3, \"label_psi_warn\": 0.15, "
                           "\"min_records\": 10, \"psi_epsilon\": 1e-6}, "
                           "\"modes\": {\"padding_rate\": \"off\"}}",
                           0, NULL);
    assert_int_equal(ps_vconfig_apply_json(c, j, &err), 0);
    assert_int_equal(ps_vconfig_apply_json(c, NULL, &err), 0);
    json_decref(j);
    ps_vreport *r = NULL;
    assert_int_equal(ps_validate_build(c, NULL, NULL, NULL, NULL, &r, NULL), 0);
    assert_true(check_of(r, "label_psi")->threshold == 0.3);
    assert_true(check_of(r, "label_psi")->warn_threshold == 0.15);
    assert_int_equal(verdict(r, "padding_rate"), PS_VV_OFF);
    json_t *th = json_object_get(r->config, "thresholds");
    assert_true(json_real_value(json_object_get(th, "psi_epsilon")) == 1e-6);
    assert_int_equal(json_integer_value(json_object_get(th, "min_records")), 10);
    ps_vreport_free(r);
    ps_vconfig_free(c);
}

static void test_stats_file(void **state)
{
    (void)state;
    synth s;
    synth_init(&s);
    for (size_t i = 0; i < 300; i++) {
        synth_rec r = plain(i);
        synth_add(&s, &r);
    }
    char *t = ps_vstats_file_json(s.raw, s.cl, s.tok, s.p);
    assert_non_null(t);
    char *path = ps_test_tmpfile(t, strlen(t), ".json");
    ps_vstats *raw, *cl, *tok;
    ps_vpaired *p;
    ps_error err;
    assert_int_equal(ps_vstats_file_load(path, &raw, &cl, &tok, &p, &err), 0);
    assert_true(raw && cl && tok && p);
    char *t2 = ps_vstats_file_json(raw, cl, tok, p);
    assert_string_equal(t, t2);
    ps_vstats_free(raw);
    ps_vstats_free(cl);
    ps_vstats_free(tok);
    ps_vpaired_free(p);
    /* a report.json is a statistics file too */
    ps_vreport *r = synth_build(&s, NULL);
    char *rj = ps_vreport_json(r);
    char *rpath = ps_test_tmpfile(rj, strlen(rj), ".json");
    assert_int_equal(ps_vstats_file_load(rpath, NULL, &cl, NULL, NULL, &err), 0);
    assert_non_null(cl);
    assert_int_equal(cl->records, 300);
    ps_vstats_free(cl);
    /* versions, garbage, a point under the wrong key */
    const char *bad[] = {"{\"stats_version\": 2, \"points\": {}}", "{\"points\": {}}", "[]", "{",
                         "{\"stats_version\": 1, \"points\": []}"};
    int codes[] = {PS_EVERSION, PS_EFORMAT, PS_EFORMAT, PS_EFORMAT, PS_EFORMAT};
    for (size_t i = 0; i < 5; i++) {
        char *bp = ps_test_tmpfile(bad[i], strlen(bad[i]), ".json");
        assert_int_equal(ps_vstats_file_load(bp, &raw, &cl, &tok, &p, &err), codes[i]);
        assert_null(raw);
        remove(bp);
        free(bp);
    }
    json_t *fj = json_loads(t, 0, NULL);
    json_t *pts = json_object_get(fj, "points");
    json_object_set(pts, "raw", json_object_get(pts, "cleaned"));
    char *ft = json_text(fj);
    char *fp = ps_test_tmpfile(ft, strlen(ft), ".json");
    assert_int_equal(ps_vstats_file_load(fp, &raw, &cl, &tok, &p, &err), PS_EFORMAT);
    assert_non_null(strstr(err.message, "points.raw"));
    assert_int_equal(ps_vstats_file_load("/nonexistent/x.json", &raw, NULL, NULL, NULL, &err), PS_ENOENT);
    remove(fp);
    remove(path);
    remove(rpath);
    free(fp);
    free(ft);
    free(path);
    free(rpath);
    free(rj);
    free(t);
    free(t2);
    ps_vreport_free(r);
    synth_free(&s);
}

/* ---- the incident, on Spider ----------------------------------------------------- */

typedef struct spider_run {
    ps_vstats *raw, *cleaned, *tok;
    ps_vpaired *paired;
    json_t *elems;
    const ps_tokenizer *tk;
    ps_tok_scratch *scr;
    int32_t unk;
} spider_run;

static uint32_t u8chars(const char *s, size_t n)
{
    uint32_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += ((unsigned char)s[i] & 0xC0) != 0x80;
    return c;
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
    ps_vrecord raw = rec(lab, u8chars(q, ql), u8chars(s, sl), PS_VSTATS_NO_TOKENS);
    raw.changed = changed;
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
    ps_vrecord c = rec(r->label, u8chars(r->question, r->question_len), u8chars(r->sql, r->sql_len),
                       PS_VSTATS_NO_TOKENS);
    c.changed = changed;
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
    assert_int_equal(verdict(r, "question_length_change"), PS_VV_FAIL);
    assert_explains(r, "question_length_change", "'wine_1'");
    assert_int_equal(verdict(r, "question_chars_ks_label"), PS_VV_FAIL);
    assert_explains(r, "question_chars_ks_label", "'wine_1'");
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
    assert_int_equal(verdict(r, "label_retention"), PS_VV_FAIL);
    assert_explains(r, "label_retention", "'wine_1'");
    assert_int_equal(verdict(r, "label_js_distance"), PS_VV_FAIL);
    assert_explains(r, "label_js_distance", "'wine_1'");
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
    assert_int_equal(verdict(r, "label_retention"), PS_VV_FAIL);
    assert_explains(r, "label_retention", "'singer_zh'");
    assert_int_equal(verdict(r, "empty_after_cleaning"), PS_VV_FAIL);
    assert_int_equal(verdict(r, "rejected_share"), PS_VV_FAIL);
    assert_explains(r, "rejected_share", "empty_after_cleaning");
    assert_int_equal(verdict(r, "question_length_change"), PS_VV_FAIL);
    assert_explains(r, "question_length_change", "'singer_zh'");
    assert_int_equal(verdict(r, "question_chars_ks_label"), PS_VV_FAIL);
    assert_explains(r, "question_chars_ks_label", "'singer_zh'");
    ps_vreport_free(r);
    remove(zh);
    free(zh);
}

/* The character count behind the length changes, against a plain count. */
static void test_paired_char_count(void **state)
{
    (void)state;
    static const char *const PIECES[] = {"a", "Z", " ", "\xc3\xa9", "\xe4\xb8\xad", "\xf0\x9f\x98\x80", "\xd0\xaf"};
    for (int t = 0; t < 300; t++) {
        char buf[512];
        size_t len = 0, chars = 0, n = rnd() % 100;
        for (size_t i = 0; i < n; i++) {
            const char *p = PIECES[rnd() % 7];
            memcpy(buf + len, p, strlen(p));
            len += strlen(p);
            chars++;
        }
        buf[len] = '\0';
        ps_vpaired *p = ps_vpaired_new(0);
        ps_vpair r = {.label = "x", .outcome = PS_OUTCOME_KEPT, .question_before = buf,
                      .question_before_len = len, .sql_before = "s", .sql_before_len = 1,
                      .question_after = "", .question_after_len = 0, .sql_after = "s",
                      .sql_after_len = 1};
        assert_int_equal(ps_vpaired_add(p, &r), 0);
        if (chars)
            assert_int_equal(p->shrink[0][ps_vbin_of((uint32_t)chars)], 1);
        else
            assert_int_equal(p->zero[0], 1);
        ps_vpaired_free(p);
    }
}

/* ---- scipy reference (tests/cli/validate_scipy.sh) ---------------------------- */

typedef struct maxerr {
    const char *name;
    double worst;
    size_t n;
} maxerr;

static void rel_check(maxerr *m, double got, double want, const char *what, size_t i)
{
    double e;
    if (got == want)
        e = 0;
    else
        e = fabs(got - want) / fmax(fabs(want), 1e-300);
    if (e > m->worst)
        m->worst = e;
    m->n++;
    if (!(e <= 1e-9))
        fail_msg("%s case %zu: got %.17g, scipy %.17g (relative error %.3g)", what, i, got, want, e);
}

static double *num_array(json_t *a, size_t *n)
{
    *n = json_array_size(a);
    double *v = calloc(*n + 1, sizeof *v);
    assert_non_null(v);
    for (size_t i = 0; i < *n; i++)
        v[i] = json_number_value(json_array_get(a, i));
    return v;
}

static void hist_of(json_t *values, uint64_t *h)
{
    memset(h, 0, PS_VBINS * sizeof *h);
    size_t i;
    json_t *v;
    json_array_foreach(values, i, v) h[ps_vbin_of((uint32_t)json_integer_value(v))]++;
}

static void test_scipy_reference(void **state)
{
    (void)state;
    const char *path = getenv("PS_VALIDATE_REF");
    if (!path || !*path) {
        /* A skip, not a pass: tests/cli/validate_scipy.sh runs this with
         * the reference scipy computed, and counts it only when it ran. */
        printf("# PS_VALIDATE_REF unset: the scipy comparison runs in tests/cli/validate_scipy.sh\n");
        skip();
    }
    json_error_t je;
    json_t *ref = json_load_file(path, 0, &je);
    if (!ref)
        fail_msg("%s: %s", path, je.text);
    maxerr M[] = {{"ks_d", 0, 0},   {"ks_p", 0, 0},   {"kstwo_sf", 0, 0}, {"chi2", 0, 0},
                  {"chi2_p", 0, 0}, {"chi2_sf", 0, 0}, {"cramers_v", 0, 0}, {"js_distance", 0, 0},
                  {"psi", 0, 0}};
    static uint64_t h1[PS_VBINS], h2[PS_VBINS];
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(ref, "ks"), i, c)
    {
        hist_of(json_object_get(c, "x"), h1);
        hist_of(json_object_get(c, "y"), h2);
        uint64_t n1 = json_array_size(json_object_get(c, "x")), n2 = json_array_size(json_object_get(c, "y"));
        double d = ps_sm_ks_d(h1, h2, PS_VBINS);
        rel_check(&M[0], d, json_real_value(json_object_get(c, "d")), "ks_d", i);
        rel_check(&M[1], ps_sm_ks_2samp_p(d, n1, n2), json_real_value(json_object_get(c, "p")), "ks_p", i);
    }
    json_array_foreach(json_object_get(ref, "kstwo"), i, c)
    {
        uint64_t n = (uint64_t)json_integer_value(json_array_get(c, 0));
        double x = json_real_value(json_array_get(c, 1)), sf = json_real_value(json_array_get(c, 2));
        if (sf < 1e-290) /* below double's comfortable range: both round to ~0 */
            continue;
        rel_check(&M[2], ps_sm_kolmogn_sf(n, x), sf, "kstwo_sf", i);
    }
    json_array_foreach(json_object_get(ref, "chi2"), i, c)
    {
        size_t na, nb;
        double *a = num_array(json_object_get(c, "a"), &na), *b = num_array(json_object_get(c, "b"), &nb);
        assert_int_equal(na, nb);
        uint64_t *ua = calloc(na + 1, sizeof *ua), *ub = calloc(na + 1, sizeof *ub);
        for (size_t k = 0; k < na; k++) {
            ua[k] = (uint64_t)a[k];
            ub[k] = (uint64_t)b[k];
        }
        double chi2, dof, p, v;
        ps_sm_chi2_homogeneity(ua, ub, na, &chi2, &dof, &p, &v);
        rel_check(&M[3], chi2, json_real_value(json_object_get(c, "chi2")), "chi2", i);
        assert_true(dof == json_number_value(json_object_get(c, "dof")));
        double pw = json_real_value(json_object_get(c, "p"));
        if (pw >= 1e-290)
            rel_check(&M[4], p, pw, "chi2_p", i);
        rel_check(&M[6], v, json_real_value(json_object_get(c, "v")), "cramers_v", i);
        rel_check(&M[7], ps_sm_js_distance(a, b, na), json_real_value(json_object_get(c, "js")), "js", i);
        rel_check(&M[8], ps_sm_psi(a, b, na, json_real_value(json_object_get(c, "eps"))),
                  json_real_value(json_object_get(c, "psi")), "psi", i);
        free(a);
        free(b);
        free(ua);
        free(ub);
    }
    json_array_foreach(json_object_get(ref, "chi2sf"), i, c)
    {
        double df = json_number_value(json_array_get(c, 0)), x = json_number_value(json_array_get(c, 1)),
               sf = json_real_value(json_array_get(c, 2));
        if (sf < 1e-290)
            continue;
        rel_check(&M[5], ps_sm_chi2_sf(x, df), sf, "chi2_sf", i);
    }
    const char *out = getenv("PS_VALIDATE_REF_OUT");
    FILE *f = out && *out ? fopen(out, "w") : NULL;
    for (size_t k = 0; k < sizeof M / sizeof M[0]; k++) {
        printf("# %-12s %5zu cases, max relative error %.3g\n", M[k].name, M[k].n, M[k].worst);
        if (f)
            fprintf(f, "%s %zu %.6g\n", M[k].name, M[k].n, M[k].worst);
        assert_true(M[k].n > 0);
    }
    if (f)
        fclose(f);
    json_decref(ref);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bins),
        cmocka_unit_test(test_quantiles_exact_below_256),
        cmocka_unit_test(test_quantile_groups),
        cmocka_unit_test(test_stats_merge_is_union),
        cmocka_unit_test(test_stats_json_roundtrip),
        cmocka_unit_test(test_padding_exact),
        cmocka_unit_test(test_stats_hostile_json),
        cmocka_unit_test(test_paired_accounting_and_examples),
        cmocka_unit_test(test_checks_clean_pass),
        cmocka_unit_test(test_checks_not_enough_data),
        cmocka_unit_test(test_checks_label_retention),
        cmocka_unit_test(test_checks_length_change),
        cmocka_unit_test(test_checks_distribution_shift),
        cmocka_unit_test(test_checks_health),
        cmocka_unit_test(test_stats_unk_words),
        cmocka_unit_test(test_checks_empty_and_duplicates),
        cmocka_unit_test(test_checks_sql_tokens_padding),
        cmocka_unit_test(test_compare),
        cmocka_unit_test(test_config),
        cmocka_unit_test(test_stats_file),
        cmocka_unit_test(test_spider_clean_passes),
        cmocka_unit_test(test_spider_split_words_rule_fails),
        cmocka_unit_test(test_spider_drop_rule_fails),
        cmocka_unit_test(test_cjk_strip_rule_fails),
        cmocka_unit_test(test_paired_char_count),
        cmocka_unit_test(test_scipy_reference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
