/* Unit tests of report.html (report/report_html.c): the verdict comes
 * first, every check is listed with failures first, examples' before and
 * after texts come out escaped and complete, nothing from the data is
 * live markup, nothing is loaded from elsewhere, the size is bounded for
 * huge hostile reports, and no member of any type or absence crashes it.
 *
 * With PS_REPORT_HTML_OUT=PATH set, the failing fixture's page is also
 * written to PATH, the warning one to PATH.warn.html and the passing one to
 * PATH.pass.html (tests/cli/
 * report_render.sh renders them in headless Chromium). */
#include "tests/support/testutil.h"

#include "report/report.h"
#include "validate/validate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static json_t *load_fixture(const char *name)
{
    char rel[64];
    snprintf(rel, sizeof rel, "report/%s.json", name);
    json_error_t e;
    json_t *j = json_load_file(ps_test_data(rel), 0, &e);
    if (!j)
        fail_msg("%s: %s (line %d)", rel, e.text, e.line);
    return j;
}

static void write_file(const char *path, const char *s)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fwrite(s, 1, strlen(s), f), strlen(s));
    assert_int_equal(fclose(f), 0);
}

static const char *find_ci(const char *h, const char *needle)
{
    size_t n = strlen(needle);
    for (; *h; h++)
        if (!strncasecmp(h, needle, n))
            return h;
    return NULL;
}

/* Nothing active and nothing from elsewhere. */
static void assert_inert(const char *html)
{
    assert_null(find_ci(html, "<script"));
    assert_null(find_ci(html, "javascript:"));
    assert_null(find_ci(html, "http://"));
    assert_null(find_ci(html, "https://"));
    assert_null(find_ci(html, "<link"));
    assert_null(find_ci(html, "<img"));
    assert_null(find_ci(html, "<iframe"));
    assert_null(find_ci(html, "<object"));
    assert_null(find_ci(html, "@import"));
    assert_null(find_ci(html, "url("));
    assert_null(find_ci(html, " src="));
    assert_null(find_ci(html, " onload"));
    assert_null(find_ci(html, " onerror"));
    /* every link is to an anchor of the page itself */
    for (const char *p = html; (p = strstr(p, "href=\"")) != NULL; p += 6)
        assert_int_equal(p[6], '#');
}

/* The text of html[a..b) without tags, entities decoded. */
static char *text_of(const char *a, const char *b)
{
    char *out = malloc((size_t)(b - a) + 1);
    size_t o = 0;
    assert_non_null(out);
    while (a < b) {
        if (*a == '<') {
            while (a < b && *a != '>')
                a++;
            a++;
            continue;
        }
        static const struct {
            const char *e;
            const char *c;
        } E[] = {{"&lt;", "<"}, {"&gt;", ">"}, {"&amp;", "&"}, {"&quot;", "\""}, {"&#39;", "'"},
                 {"&#xFFFD;", "\xEF\xBF\xBD"}};
        int hit = 0;
        for (size_t k = 0; k < sizeof E / sizeof E[0] && !hit; k++) {
            size_t n = strlen(E[k].e);
            if ((size_t)(b - a) >= n && !memcmp(a, E[k].e, n)) {
                memcpy(out + o, E[k].c, strlen(E[k].c));
                o += strlen(E[k].c);
                a += n;
                hit = 1;
            }
        }
        if (!hit)
            out[o++] = *a++;
    }
    out[o] = '\0';
    return out;
}

/* The decoded text of the next <pre class="tx"> at or after *p. */
static char *next_text(const char **p)
{
    const char *a = strstr(*p, "<pre class=\"tx\">");
    assert_non_null(a);
    a += strlen("<pre class=\"tx\">");
    const char *b = strstr(a, "</pre>");
    assert_non_null(b);
    *p = b + 6;
    return text_of(a, b);
}

/* What the page shows for a raw text: controls become U+FFFD, CR a space. */
static char *shown(const char *s)
{
    char *out = malloc(strlen(s) * 3 + 1);
    size_t o = 0;
    assert_non_null(out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '\r')
            out[o++] = ' ';
        else if ((*p < 0x20 && *p != '\n' && *p != '\t') || *p == 0x7F) {
            memcpy(out + o, "\xEF\xBF\xBD", 3);
            o += 3;
        } else
            out[o++] = (char)*p;
    }
    out[o] = '\0';
    return out;
}

static const char *section(const char *html, const char *id)
{
    char pat[64];
    snprintf(pat, sizeof pat, "<section id=\"%s\"", id);
    const char *s = strstr(html, pat);
    assert_non_null(s);
    return s;
}

static void check_fixture(const char *name, const char *verdict_text)
{
    json_t *r = load_fixture(name);
    char *html = ps_report_html(r);
    assert_non_null(html);
    assert_inert(html);
    assert_true(!strncmp(html, "<!DOCTYPE html>", 15));

    /* the verdict first: before any check section */
    const char *v = strstr(html, verdict_text);
    assert_non_null(v);
    const char *attention = section(html, "attention"), *table = section(html, "checks"),
               *ex = section(html, "examples");
    assert_true(v < attention && attention < table && table < ex);

    /* every check in the table; failures before warnings before passes */
    json_t *checks = json_object_get(r, "checks");
    static const char *const RANK[] = {"fail", "warn", "pass"};
    const char *last[3] = {NULL, NULL, NULL}, *first[3] = {NULL, NULL, NULL};
    for (size_t i = 0; i < json_array_size(checks); i++) {
        json_t *c = json_array_get(checks, i);
        const char *n = json_string_value(json_object_get(c, "name"));
        const char *vd = json_string_value(json_object_get(c, "verdict"));
        char pat[160];
        snprintf(pat, sizeof pat, "<span class=\"mono\">%s</span>", n);
        const char *at = strstr(table, pat);
        assert_non_null(at);
        assert_true(at < ex);
        for (int k = 0; k < 3; k++)
            if (!strcmp(vd, RANK[k])) {
                if (!first[k] || at < first[k])
                    first[k] = at;
                if (!last[k] || at > last[k])
                    last[k] = at;
            }
        /* failing and warning checks are explained before the table */
        if (!strcmp(vd, "fail") || !strcmp(vd, "warn")) {
            const char *card = strstr(attention, pat);
            assert_non_null(card);
            assert_true(card < table);
        }
    }
    for (int a = 0; a < 3; a++)
        for (int b = a + 1; b < 3; b++)
            if (last[a] && first[b])
                assert_true(last[a] < first[b]);

    /* examples: each before and after text complete, in order, escaped */
    json_t *exs = json_object_get(json_object_get(r, "paired"), "examples");
    const char *p = ex;
    for (size_t i = 0; i < json_array_size(exs); i++) {
        json_t *e = json_array_get(exs, i);
        static const char *const F[][2] = {{"question_before", "question_after"}, {"sql_before", "sql_after"}};
        for (int f = 0; f < 2; f++) {
            const char *before = json_string_value(json_object_get(e, F[f][0]));
            const char *after = json_string_value(json_object_get(e, F[f][1]));
            char *tb = next_text(&p), *ta = next_text(&p);
            assert_non_null(before);
            char *sb = shown(before);
            assert_string_equal(tb, sb);
            if (!after)
                assert_string_equal(ta, "no cleaned text (not kept)");
            else if (!*after && *before)
                assert_string_equal(ta, "(empty after cleaning)");
            else if (!strcmp(after, before))
                assert_string_equal(ta, "(unchanged)");
            else {
                char *sa = shown(after);
                assert_string_equal(ta, sa);
                free(sa);
            }
            free(sb);
            free(tb);
            free(ta);
        }
    }
    /* the hostile label (and rule names) are text, not markup */
    if (strcmp(name, "pass"))
        assert_non_null(strstr(html, "&lt;script&gt;alert(&#39;label&#39;)&lt;/script&gt;"));
    /* charts with text alternatives; labels chart; retention */
    if (!strcmp(name, "compare")) {
        /* two statistics files: no paired data, labels as shares */
        assert_non_null(strstr(html, "<title id=\"h-q-t\">Question length: baseline vs current</title>"));
        assert_non_null(strstr(html, "<title id=\"h-s-t\">SQL length: baseline vs current</title>"));
        assert_non_null(strstr(html, "Labels: shares, baseline vs current"));
        assert_non_null(strstr(html, "<td>dog_kennels</td>"));
    } else {
        assert_non_null(strstr(html, "<title id=\"h-q-t\">Question length: raw vs cleaned</title>"));
        assert_non_null(strstr(html, "<title id=\"h-cq-t\">"));
        assert_non_null(strstr(html, "<title id=\"h-cs-t\">"));
        assert_non_null(strstr(html, "<title id=\"h-s-t\">SQL length: raw vs cleaned</title>"));
        assert_non_null(strstr(html, "<title id=\"h-t-t\">"));
        assert_non_null(strstr(html, "<title id=\"b-top-t\">"));
        assert_non_null(strstr(html, "<title id=\"b-ret-t\">"));
    }
    assert_null(strstr(html, ">no data<"));

    const char *out = getenv("PS_REPORT_HTML_OUT");
    if (out && *out) {
        char path[4096];
        snprintf(path, sizeof path, "%s%s%s%s", out, !strcmp(name, "fail") ? "" : ".",
                 !strcmp(name, "fail") ? "" : name, !strcmp(name, "fail") ? "" : ".html");
        write_file(path, html);
    }
    free(html);
    json_decref(r);
}

static void test_fail_fixture(void **state)
{
    (void)state;
    check_fixture("fail", "Verdict: FAIL");
}

static void test_warn_fixture(void **state)
{
    (void)state;
    check_fixture("warn", "Verdict: WARN");
}

static void test_compare_fixture(void **state)
{
    (void)state;
    check_fixture("compare", "Verdict: FAIL");
}

static void test_pass_fixture(void **state)
{
    (void)state;
    check_fixture("pass", "Verdict: PASS");
}

static void test_diff_marks_changes(void **state)
{
    (void)state;
    json_t *r = json_pack("{s:s, s:{s:[{s:s, s:s, s:s, s:s, s:s}]}}", "verdict", "pass", "paired", "examples",
                          "id", "x1", "question_before", "How  many\tpets  are <b>there</b>?",
                          "question_after", "How many pets are there?", "sql_before", "SELECT 1",
                          "sql_after", "SELECT 2");
    assert_non_null(r);
    char *html = ps_report_html(r);
    assert_non_null(html);
    assert_inert(html);
    assert_non_null(strstr(html, "<del>&lt;b&gt;</del>"));
    assert_non_null(strstr(html, "SELECT <del>1</del>"));
    assert_non_null(strstr(html, "SELECT <ins>2</ins>"));
    assert_null(strstr(html, "<ins>How"));
    free(html);
    json_decref(r);
}

/* report.json's "serving" (the build's note when cleaning changed over
 * serving_note_share of the kept records) is a section of its own, its
 * note escaped; a report without it has none. */
static void test_serving_note(void **state)
{
    (void)state;
    json_t *r = json_pack("{s:s, s:{s:i, s:i, s:f, s:f, s:s}}", "verdict", "pass", "serving",
                          "changed_by_cleaning", 487, "kept", 500, "share", 0.974, "threshold",
                          0.2, "note", "serve with pairshard.Preprocessor(DIR) <b>now</b>");
    assert_non_null(r);
    char *html = ps_report_html(r);
    assert_non_null(html);
    assert_inert(html);
    const char *sec = strstr(html, "<section id=\"serving\">");
    assert_non_null(sec);
    char *text = text_of(sec, strstr(sec, "</section>"));
    if (!strstr(text, "Cleaning changed 487 of 500 kept records (97.4%, over 20.0%): serve with "
                      "pairshard.Preprocessor(DIR) <b>now</b>."))
        fail_msg("the serving section says: %s", text);
    free(text);
    assert_non_null(strstr(sec, "&lt;b&gt;now"));
    /* the attention section comes first, the verdict before both */
    assert_true(strstr(html, "id=\"attention\"") < sec);
    free(html);
    json_object_del(r, "serving");
    html = ps_report_html(r);
    assert_non_null(html);
    assert_null(strstr(html, "id=\"serving\""));
    free(html);
    json_decref(r);
}

/* ---- size bound ------------------------------------------------------------- */

static char *filled(size_t n, const char *unit)
{
    size_t u = strlen(unit);
    char *s = malloc(n + 1);
    assert_non_null(s);
    for (size_t i = 0; i < n; i++)
        s[i] = unit[i % u];
    s[n] = '\0';
    return s;
}

static json_t *big_hist(size_t bins)
{
    json_t *e = json_array(), *c = json_array();
    for (size_t i = 0; i <= bins; i++)
        json_array_append_new(e, json_integer((json_int_t)i * 3));
    for (size_t i = 0; i < bins; i++)
        json_array_append_new(c, json_integer((json_int_t)(i * 7919 % 1000)));
    return json_pack("{s:o, s:o, s:i, s:f, s:i, s:i, s:i, s:i}", "bins", e, "counts", c, "count", 1000000,
                     "mean", 12.5, "p50", 10, "p90", 40, "p99", 90, "max", 65000);
}

static void test_size_bound(void **state)
{
    (void)state;
    /* control characters: each becomes the longest escape, &#xFFFD; */
    char *lng = filled(70000, "\x01"), *lng2 = filled(70000, "\x02\x01");
    json_t *labels = json_array(), *counts = json_object(), *checks = json_array(), *examples = json_array(),
           *reasons = json_object(), *rules = json_array(), *health = json_object(), *thr = json_object();
    for (int i = 0; i < 10000; i++) {
        char name[300];
        snprintf(name, sizeof name, "<script>label-%d</script>%.*s", i, 200, lng);
        json_array_append_new(labels, json_pack("{s:s, s:i, s:i, s:f}", "label", name, "in", 1000 + i, "kept",
                                                900 + i % 100, "retention", (900.0 + i % 100) / (1000.0 + i)));
        json_object_set_new(counts, name, json_integer(1000 + i));
        json_object_set_new(reasons, name, json_integer(i));
        json_array_append_new(rules, json_pack("{s:s, s:i, s:i, s:i}", "name", name, "matched", i, "changed", i,
                                               "dropped", 0));
        json_object_set_new(health, name, json_integer(i));
        json_object_set_new(thr, name, json_real(0.5));
    }
    for (int i = 0; i < 1000; i++) {
        json_t *det = json_object();
        json_object_set(det, "all_labels", labels);
        json_array_append_new(checks,
                              json_pack("{s:s, s:s, s:s, s:s, s:s, s:f, s:s, s:s, s:s, s:f, s:s, s:o}", "name",
                                        lng, "group", lng, "compares", lng, "metric", lng, "value", lng,
                                        "threshold", 0.5, "op", lng, "mode", lng, "verdict",
                                        i % 2 ? "fail" : "warn", "p_value", 0.01, "explanation", lng,
                                        "details", det));
        json_array_append_new(examples,
                              json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "id", lng, "source",
                                        lng, "label", lng, "reason", lng, "question_before", lng,
                                        "question_after", lng2, "sql_before", lng2, "sql_after", lng, "change",
                                        lng));
    }
    json_t *stats = json_pack("{s:i, s:{s:o, s:i}, s:{s:o, s:o, s:o}, s:o}", "records", 1000000, "labels",
                              "counts", counts, "classes", 10000, "lengths", "question_chars", big_hist(4096),
                              "sql_chars", big_hist(4096), "tokens", big_hist(4096), "health", health);
    json_t *r = json_pack("{s:i, s:s, s:s, s:{s:O, s:O, s:o}, s:{s:i, s:i, s:i, s:i, s:b, s:{s:f, s:o}, "
                          "s:{s:o, s:o}, s:o, s:o, s:o}, s:o, s:o}",
                          "report_version", 1, "verdict", "fail", "summary", lng, "points", "raw", stats,
                          "cleaned", stats, "tokenized", stats, "paired", "records_in", 1000000, "kept", 900000,
                          "rejected", 90000, "duplicates", 10000, "balanced", 1, "retention", "overall", 0.9,
                          "labels", labels, "length_change", "question", big_hist(4096), "sql", big_hist(3000),
                          "rejected_by_reason", reasons, "rules", rules, "examples", examples, "checks", checks,
                          "thresholds", thr);
    assert_non_null(r);
    char *html = ps_report_html(r);
    assert_non_null(html);
    size_t len = strlen(html);
    print_message("# hostile 10,000-label, 1,000-check report: %zu bytes of HTML\n", len);
    assert_true(len < 2 * 1024 * 1024);
    assert_inert(html);
    assert_non_null(strstr(html, "Verdict: FAIL"));
    free(html);
    json_decref(r);
    free(lng);
    free(lng2);
}

/* ---- hostile shapes ---------------------------------------------------------- */

static size_t renders;

static void render_ok(json_t *r)
{
    char *html = ps_report_html(r);
    assert_non_null(html);
    assert_true(!strncmp(html, "<!DOCTYPE html>", 15));
    assert_non_null(strstr(html, "</html>"));
    assert_null(find_ci(html, "<script"));
    free(html);
    renders++;
}

/* Replaces, one at a time, every member and element under `node` with
 * values of every type (and deletes it), rendering `root` each time. */
static void mutate_all(json_t *root, json_t *node, int depth)
{
    json_t *repl[] = {json_null(), json_string("<script>x</script>"), json_integer(-7), json_real(1e300),
                      json_true(), json_array(), json_object()};
    size_t nr = sizeof repl / sizeof repl[0];
    if (json_is_object(node)) {
        /* a fixed list of keys: deleting and re-adding moves a key last */
        size_t nk = json_object_size(node), i = 0;
        char **keys = calloc(nk ? nk : 1, sizeof *keys);
        assert_non_null(keys);
        const char *k;
        json_t *v;
        json_object_foreach(node, k, v)
        {
            keys[i] = strdup(k);
            assert_non_null(keys[i++]);
        }
        for (i = 0; i < nk; i++) {
            json_t *keep = json_incref(json_object_get(node, keys[i]));
            for (size_t m = 0; m < nr; m++) {
                json_object_set(node, keys[i], repl[m]);
                render_ok(root);
            }
            json_object_del(node, keys[i]);
            render_ok(root);
            json_object_set(node, keys[i], keep);
            if (depth < 6)
                mutate_all(root, keep, depth + 1);
            json_decref(keep);
            free(keys[i]);
        }
        free(keys);
    } else if (json_is_array(node)) {
        size_t n = json_array_size(node);
        for (size_t j = 0; j < n && j < 3; j++) { /* the first few elements */
            json_t *keep = json_incref(json_array_get(node, j));
            for (size_t i = 0; i < nr; i++) {
                json_array_set(node, j, repl[i]);
                render_ok(root);
            }
            json_array_set(node, j, keep);
            if (depth < 6)
                mutate_all(root, keep, depth + 1);
            json_decref(keep);
        }
        if (n) { /* a one-element-shorter array (bins vs counts mismatch...) */
            json_t *last = json_incref(json_array_get(node, n - 1));
            json_array_remove(node, n - 1);
            render_ok(root);
            json_array_append_new(node, last);
        }
    }
    for (size_t i = 0; i < nr; i++)
        json_decref(repl[i]);
}

static void test_hostile_shapes(void **state)
{
    (void)state;
    json_t *odd[] = {NULL, json_null(), json_string("report"), json_integer(3), json_array(), json_object()};
    for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) {
        char *html = ps_report_html(odd[i]);
        assert_non_null(html);
        assert_non_null(strstr(html, "Verdict: not available"));
        assert_non_null(strstr(html, "not available"));
        free(html);
        json_decref(odd[i]);
    }
    static const char *const FX[] = {"fail", "compare"};
    for (size_t i = 0; i < 2; i++) {
        json_t *r = load_fixture(FX[i]);
        mutate_all(r, r, 0);
        json_decref(r);
    }
    print_message("# %zu mutated reports rendered\n", renders);

    /* truncated texts that still parse as JSON objects */
    const char *odd_texts[] = {
        "{\"verdict\":\"fail\",\"checks\":[{\"verdict\":\"fail\"}]}",
        "{\"verdict\":\"warn\",\"checks\":[{}, 1, \"x\", null, [], {\"name\":[1,2]}]}",
        "{\"points\":{\"raw\":{\"lengths\":{\"question_chars\":{\"bins\":[5,1,2],\"counts\":[1,2]}}}}}",
        "{\"points\":{\"raw\":{\"lengths\":{\"question_chars\":{\"bins\":[0,1e308,-1e308],\"counts\":[-1,1e308]}}}}}",
        "{\"points\":{\"raw\":{\"lengths\":{\"question_chars\":{\"bins\":[0,0,0,0],\"counts\":[5,5,5]}}}}}",
        "{\"points\":{\"raw\":{\"lengths\":{\"question_chars\":{\"bins\":[1],\"counts\":[5]}}}}}",
        "{\"paired\":{\"retention\":{\"labels\":[{\"label\":\"a\",\"in\":0,\"kept\":5},{\"in\":-1,\"kept\":1}]}}}",
        "{\"paired\":{\"examples\":[{\"question_before\":\"\",\"question_after\":\"x\",\"sql_before\":\"a\\u0000b\","
        "\"sql_after\":\"\"}]}}",
    };
    for (size_t i = 0; i < sizeof odd_texts / sizeof odd_texts[0]; i++) {
        json_error_t e;
        json_t *j = json_loads(odd_texts[i], JSON_ALLOW_NUL, &e);
        if (!j)
            fail_msg("case %zu: %s", i, e.text);
        render_ok(j);
        json_decref(j);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fail_fixture),
        cmocka_unit_test(test_warn_fixture),
        cmocka_unit_test(test_pass_fixture),
        cmocka_unit_test(test_compare_fixture),
        cmocka_unit_test(test_diff_marks_changes),
        cmocka_unit_test(test_serving_note),
        cmocka_unit_test(test_size_bound),
        cmocka_unit_test(test_hostile_shapes),
    };
    return cmocka_run_group_tests_name("report_html", tests, NULL, NULL);
}
