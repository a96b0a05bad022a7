/* Tests of validate/: the statistics: fixed bins, exact quantiles, merge as
 * the statistics of the union, JSON round trips, padding, [UNK] words, and
 * hostile statistics files refused. Shared helpers:
 * tests/support/validate_fixture.c. */
#include "tests/support/validate_fixture.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Labels found by their numbers (ps_strmap_slot_numbered, as the build's
 * statistics stage finds them) give the statistics the strings give,
 * byte for byte, also when some records of a label come without one and
 * labels are first met in a different way each time. */
static void test_stats_numbered_labels(void **state)
{
    (void)state;
    static const char *const L[] = {"db_a", "db_b", "db_c", "\xe4\xb8\xad\xe6\x96\x87", "z"};
    ps_vstats *by_name = ps_vstats_new("tokenized"), *by_number = ps_vstats_new("tokenized");
    ps_vgen *g_name = ps_vgen_new(), *g_number = ps_vgen_new();
    assert_non_null(by_name);
    assert_non_null(by_number);
    assert_non_null(g_name);
    assert_non_null(g_number);
    for (size_t i = 0; i < 5000; i++) {
        uint32_t k = (uint32_t)(rnd() % 6); /* 5: unlabeled */
        ps_vrecord r = rec(k < 5 ? L[k] : NULL, rnd() % 300, rnd() % 3000, rnd() % 1200);
        assert_int_equal(ps_vstats_add(by_name, &r), 0);
        r.label_number = k < 5 && rnd() % 4 ? 100 + k * 7 : 0; /* sometimes none */
        assert_int_equal(ps_vstats_add(by_number, &r), 0);
        uint32_t p = rnd() % 500, c = rnd() % 200;
        assert_int_equal(ps_vgen_add(g_name, r.label, p, c), 0);
        assert_int_equal(ps_vgen_add_numbered(g_number, r.label, r.label_number, p, c), 0);
    }
    json_t *ja = ps_vstats_to_json(by_name), *jb = ps_vstats_to_json(by_number);
    json_t *jga = ps_vgen_to_json(g_name, true), *jgb = ps_vgen_to_json(g_number, true);
    char *a = json_dumps(ja, JSON_SORT_KEYS), *b = json_dumps(jb, JSON_SORT_KEYS);
    char *ga = json_dumps(jga, JSON_SORT_KEYS), *gb = json_dumps(jgb, JSON_SORT_KEYS);
    json_decref(ja);
    json_decref(jb);
    json_decref(jga);
    json_decref(jgb);
    assert_non_null(a);
    assert_string_equal(a, b);
    assert_non_null(ga);
    assert_string_equal(ga, gb);
    assert_non_null(strstr(a, "db_c"));
    free(a);
    free(b);
    free(ga);
    free(gb);
    ps_vstats_free(by_name);
    ps_vstats_free(by_number);
    ps_vgen_free(g_name);
    ps_vgen_free(g_number);
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

/* s through its JSON and back: the copy, whose JSON is the same text
 * (*text, the caller's to free). */
static ps_vstats *round_trip(ps_vstats *s, char **text)
{
    *text = json_text(ps_vstats_to_json(s));
    json_t *j = json_loads(*text, 0, NULL);
    ps_vstats *back = NULL;
    ps_error err;
    assert_int_equal(ps_vstats_from_json(j, &back, &err), 0);
    json_decref(j);
    char *again = json_text(ps_vstats_to_json(back));
    assert_string_equal(*text, again);
    free(again);
    return back;
}

static void test_stats_json_roundtrip(void **state)
{
    (void)state;
    ps_vstats *a = ps_vstats_new("tokenized"), *b = ps_vstats_new("tokenized"),
              *all = ps_vstats_new("tokenized");
    fill_random(a, b, all, 2000, true);
    uint32_t bounds[] = {64, 128, 512, 2048};
    assert_int_equal(ps_vstats_set_padding(all, bounds, 4), 0);
    char *t1;
    ps_vstats *back = round_trip(all, &t1);
    /* padding equals a direct count for lengths below 1024 */
    uint64_t padded, toks;
    assert_true(ps_vstats_padding(back, &padded, &toks));
    assert_true(padded >= toks);
    free(t1);
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
    char *t1;
    ps_vstats *back = round_trip(all, &t1);
    ps_error err;
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
    free(t1), free(t3), free(t4);
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

/* Histograms built through a cache dump as without one; equal [bin, count]
 * pairs are one value, across histograms and after the cache is freed. */
static void test_hist_cache(void **state)
{
    (void)state;
    uint64_t a[PS_VBINS] = {0}, b[PS_VBINS] = {0};
    for (size_t i = 0; i < PS_VBINS; i += 3)
        a[i] = i % 7 + 1;
    for (size_t i = 0; i < PS_VBINS; i += 2) /* the same as a's below 200 */
        b[i] = i < 200 ? a[i] : i % 5 + 1 + (i > 300 ? (uint64_t)1 << 40 : 0);
    a[PS_VBINS - 1] = UINT64_MAX;
    ps_vjson_cache *c = ps_vjson_cache_new();
    assert_non_null(c);
    json_t *ca = ps_vjson_hist_cached(c, a, PS_VBINS), *cb = ps_vjson_hist_cached(c, b, PS_VBINS);
    json_t *pa = ps_vjson_hist_new(a, PS_VBINS), *pb = ps_vjson_hist_new(b, PS_VBINS);
    ps_vjson_cache_free(c); /* the histograms hold their own references */
    assert_non_null(ca);
    assert_non_null(cb);
    const json_t *hs[4] = {ca, cb, pa, pb};
    char *txt[4];
    for (int i = 0; i < 4; i++)
        assert_non_null(txt[i] = json_dumps(hs[i], JSON_COMPACT));
    assert_string_equal(txt[0], txt[2]);
    assert_string_equal(txt[1], txt[3]);
    assert_true(json_equal(ca, pa));
    size_t shared = 0;
    for (size_t i = 0; i < json_array_size(ca); i++) {
        json_t *x = json_array_get(ca, i);
        for (size_t j = 0; j < json_array_size(cb); j++)
            if (json_equal(x, json_array_get(cb, j))) {
                assert_ptr_equal(x, json_array_get(cb, j));
                shared++;
            }
    }
    assert_true(shared > 10);
    for (int i = 0; i < 4; i++)
        free(txt[i]);
    json_decref(ca);
    json_decref(cb);
    json_decref(pa);
    json_decref(pb);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bins),
        cmocka_unit_test(test_quantiles_exact_below_256),
        cmocka_unit_test(test_quantile_groups),
        cmocka_unit_test(test_stats_merge_is_union),
        cmocka_unit_test(test_stats_numbered_labels),
        cmocka_unit_test(test_stats_json_roundtrip),
        cmocka_unit_test(test_padding_exact),
        cmocka_unit_test(test_stats_hostile_json),
        cmocka_unit_test(test_stats_unk_words),
        cmocka_unit_test(test_hist_cache),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
