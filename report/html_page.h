/*
 * report/html_page.h — what the sections of report.html share (internal to
 * report/): the caps, tolerant JSON access, small writers, verdicts and the
 * page being written. Each section lives in its own file: html_examples.c,
 * html_lengths.c, html_labels.c, html_hardness.c, html_tables.c; report_html.c puts the page
 * together. Helpers are static inline so every section gets its own copy.
 */
#ifndef PS_REPORT_HTML_PAGE_H
#define PS_REPORT_HTML_PAGE_H

#include "report/report.h"
#include "report/svg.h"
#include "validate/stat_math.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CHECKS 60      /* rows of the checks table (27 checks exist) */
#define MAX_CARDS 30       /* explained failing/warning checks */
#define MAX_EXAMPLES 20    /* before -> after records */
#define TEXT_BUDGET 1000   /* source bytes shown per example text */
#define TOP_LABELS 25      /* labels by raw count */
#define WORST_LABELS 15    /* labels by retention */
#define MAX_ROWS 40        /* reasons, rules, health keys */
#define MAX_THRESHOLDS 80
#define MAX_BINS 4096      /* a series with more bins is not drawn */
#define CAP_SHORT 80       /* names, metrics, labels in tables */
#define CAP_TEXT 600       /* explanations, summary */
#define CAP_JSON 300       /* details and other structured values */

/* ---- JSON access (tolerant) ----------------------------------------------- */

static inline json_t *jget(json_t *o, const char *k) { return json_is_object(o) ? json_object_get(o, k) : NULL; }

static inline json_t *jpath(json_t *o, ...)
{
    va_list ap;
    va_start(ap, o);
    const char *k;
    while (o && (k = va_arg(ap, const char *)) != NULL)
        o = jget(o, k);
    va_end(ap);
    return o;
}

static inline bool jnum(json_t *j, double *v)
{
    if (!json_is_number(j))
        return false;
    *v = json_number_value(j);
    return isfinite(*v);
}

static const char *jstr(json_t *j, size_t *len)
{
    if (!json_is_string(j))
        return NULL;
    if (len)
        *len = json_string_length(j);
    return json_string_value(j);
}

/* ---- small writers -------------------------------------------------------- */

static inline void na(ps_html *h) { ps_html_raw(h, "<span class=\"na\">not available</span>"); }
/* A table cell's "no value": an em dash. */
#define DASH_HTML "<span class=\"mu\">\xE2\x80\x94</span>"
static inline void dash(ps_html *h) { ps_html_raw(h, DASH_HTML); }

/* Compact JSON of any value, cut when `budget` bytes are spent. */
static inline void put_json(ps_html *h, json_t *j, int *budget, int depth)
{
    if (*budget <= 0) {
        return;
    }
    if (json_is_string(j)) {
        size_t n;
        const char *s = jstr(j, &n);
        size_t cut = ps_utf8_cut(s, n, (size_t)*budget);
        ps_html_raw(h, "&quot;");
        ps_html_textn(h, s, cut);
        ps_html_raw(h, cut < n ? "\xE2\x80\xA6&quot;" : "&quot;");
        *budget -= (int)cut + 2;
    } else if (json_is_number(j)) {
        double v = json_number_value(j);
        ps_html_num(h, v, 4);
        *budget -= 8;
    } else if (json_is_true(j) || json_is_false(j)) {
        ps_html_raw(h, json_is_true(j) ? "true" : "false");
        *budget -= 5;
    } else if (json_is_null(j) || !j) {
        ps_html_raw(h, "null");
        *budget -= 4;
    } else if (depth > 4) {
        ps_html_raw(h, "\xE2\x80\xA6");
        *budget -= 3;
    } else if (json_is_array(j)) {
        ps_html_raw(h, "[");
        size_t n = json_array_size(j);
        for (size_t i = 0; i < n; i++) {
            if (*budget <= 0) {
                ps_html_printf(h, "\xE2\x80\xA6 %zu more", n - i);
                break;
            }
            if (i)
                ps_html_raw(h, ", ");
            put_json(h, json_array_get(j, i), budget, depth + 1);
            *budget -= 2;
        }
        ps_html_raw(h, "]");
    } else if (json_is_object(j)) {
        ps_html_raw(h, "{");
        const char *k;
        json_t *v;
        size_t i = 0, n = json_object_size(j);
        json_object_foreach(j, k, v)
        {
            if (*budget <= 0) {
                ps_html_printf(h, "\xE2\x80\xA6 %zu more", n - i);
                break;
            }
            if (i++)
                ps_html_raw(h, ", ");
            size_t kl = strlen(k), cut = ps_utf8_cut(k, kl, 60);
            ps_html_textn(h, k, cut);
            ps_html_raw(h, ": ");
            *budget -= (int)cut + 4;
            put_json(h, v, budget, depth + 1);
        }
        ps_html_raw(h, "}");
    }
}

/* A scalar for a table cell: strings cut at `cap`, numbers formatted,
 * anything else as bounded JSON; missing as "not available". */
static inline void put_val(ps_html *h, json_t *j, size_t cap)
{
    size_t n;
    const char *s;
    double v;
    if (!j || json_is_null(j))
        na(h);
    else if ((s = jstr(j, &n)) != NULL)
        ps_html_text_capped(h, s, n, cap);
    else if (jnum(j, &v))
        ps_html_num(h, v, 4);
    else if (json_is_boolean(j))
        ps_html_raw(h, json_is_true(j) ? "yes" : "no");
    else {
        int budget = CAP_JSON;
        ps_html_raw(h, "<code>");
        put_json(h, j, &budget, 0);
        ps_html_raw(h, "</code>");
    }
}

static inline void put_count(ps_html *h, json_t *j)
{
    double v;
    if (jnum(j, &v))
        ps_html_num(h, v, 6);
    else
        na(h);
}

/* ---- verdicts ------------------------------------------------------------- */

enum { V_FAIL, V_WARN, V_PASS, V_OTHER };

static inline int vrank(json_t *v)
{
    const char *s = jstr(v, NULL);
    if (!s)
        return V_OTHER;
    if (!strcmp(s, "fail"))
        return V_FAIL;
    if (!strcmp(s, "warn"))
        return V_WARN;
    if (!strcmp(s, "pass"))
        return V_PASS;
    return V_OTHER;
}

static const char *const VCLASS[] = {"fail", "warn", "pass", "other"};
static const char *const VWORD[] = {"FAIL", "WARN", "PASS", ""};

static inline void put_badge(ps_html *h, json_t *verdict)
{
    int r = vrank(verdict);
    ps_html_printf(h, "<span class=\"badge %s\">", VCLASS[r]);
    if (r == V_OTHER) {
        size_t n;
        const char *s = jstr(verdict, &n);
        if (s && !strcmp(s, "not_enough_data"))
            ps_html_raw(h, "NOT ENOUGH DATA");
        else if (s && !strcmp(s, "off"))
            ps_html_raw(h, "OFF");
        else if (s && n)
            ps_html_text_capped(h, s, n, 24);
        else
            ps_html_raw(h, "n/a");
    } else
        ps_html_raw(h, VWORD[r]);
    ps_html_raw(h, "</span>");
}

typedef struct check_ref {
    json_t *c;
    int rank;
    size_t pos;
} check_ref;

static inline int cmp_check(const void *a, const void *b)
{
    const check_ref *x = a, *y = b;
    if (x->rank != y->rank)
        return x->rank - y->rank;
    return (x->pos > y->pos) - (x->pos < y->pos);
}

typedef struct page {
    ps_html h;
    json_t *r;
    check_ref *checks; /* sorted */
    size_t n_checks;
    size_t counts[4];  /* per rank */
} page;

static inline void put_field_text(ps_html *h, json_t *c, const char *k, size_t cap)
{
    size_t n;
    const char *s = jstr(jget(c, k), &n);
    if (s)
        ps_html_text_capped(h, s, n, cap);
    else
        put_val(h, jget(c, k), cap);
}

/* c's string member k, or the HTML `none` (NULL: nothing) when it has no
 * string there. */
static inline void put_text_or(ps_html *h, json_t *c, const char *k, size_t cap, const char *none)
{
    if (jstr(jget(c, k), NULL))
        put_field_text(h, c, k, cap);
    else if (none)
        ps_html_raw(h, none);
}

/* The sections after the checks, in page order. */
void ps_rh_sql(page *pg); /* only when the report has "sql" */
void ps_rh_examples(page *pg);
void ps_rh_lengths(page *pg);
void ps_rh_generation(page *pg); /* only when the report has "prompt_completion" */
void ps_rh_leakage(page *pg);    /* only when the report has "leakage" (html_leakage.c) */
void ps_rh_labels(page *pg);
void ps_rh_hardness(page *pg); /* only when the points have "hardness" */
void ps_rh_rejections(page *pg);
void ps_rh_rejections_by_input(page *pg);
void ps_rh_health(page *pg);
void ps_rh_thresholds(page *pg);
void ps_rh_sources(page *pg); /* only when the report has "sources" (a mixture) */

#endif /* PS_REPORT_HTML_PAGE_H */
