/* report.html: SQL compiled against its schema (the report's "sql" member,
 * docs/REPORT.md; see html_page.h). Only when the report has one. Every
 * list is capped: 16 classes, 5 examples each, MAX_ROWS rules, TOP_LABELS
 * labels (the lowest raw compile rates first). */
#include "report/html_page.h"

#define SQL_MAX_CLASSES 16
#define SQL_MAX_EXAMPLES 5
#define SQL_CAP_MSG 300

/* "12 (99.83%)": a count and its share of `of`. */
static void count_share(ps_html *h, json_t *count, json_t *of)
{
    double c, n;
    put_count(h, count);
    if (jnum(count, &c) && jnum(of, &n) && n > 0) {
        ps_html_raw(h, " <span class=\"mu\">(");
        ps_html_pct(h, c / n);
        ps_html_raw(h, ")</span>");
    }
}

/* A table row's first cell: e's member k, in monospace. */
static void row_head(ps_html *h, json_t *e, const char *k)
{
    ps_html_raw(h, "<tr><td class=\"mono\">");
    put_field_text(h, e, k, CAP_SHORT);
    ps_html_raw(h, "</td>");
}

/* A number cell: count_share. */
static void share_cell(ps_html *h, json_t *count, json_t *of)
{
    ps_html_raw(h, "<td class=\"n\">");
    count_share(h, count, of);
    ps_html_raw(h, "</td>");
}

/* A cell with the first example of a list: "id: message". */
static void first_example_cell(ps_html *h, json_t *ex)
{
    json_t *e = json_array_get(ex, 0);
    if (!json_is_object(e)) {
        ps_html_raw(h, "<td>" DASH_HTML "</td>");
        return;
    }
    ps_html_raw(h, "<td><span class=\"mono\">");
    put_field_text(h, e, "id", CAP_SHORT);
    ps_html_raw(h, "</span>: ");
    put_field_text(h, e, "message", SQL_CAP_MSG);
    ps_html_raw(h, "</td>");
}

static void classes_table(ps_html *h, json_t *sql)
{
    json_t *cl = jget(sql, "classes");
    if (!json_is_array(cl) || !json_array_size(cl)) {
        ps_html_raw(h, "<p class=\"na\">per-class counts not available</p>");
        return;
    }
    ps_html_raw(h, "<h3>By SQLite error class</h3><div class=\"tw\"><table><thead><tr><th>class</th>"
                   "<th class=\"n\">raw</th><th class=\"n\">after cleaning</th><th>first raw example</th>"
                   "<th>first example after cleaning</th></tr></thead><tbody>");
    for (size_t i = 0; i < json_array_size(cl) && i < SQL_MAX_CLASSES; i++) {
        json_t *e = json_array_get(cl, i);
        row_head(h, e, "class");
        share_cell(h, jget(e, "raw"), jget(sql, "checked"));
        share_cell(h, jget(e, "clean"), jget(sql, "checked_clean"));
        first_example_cell(h, jget(e, "raw_examples"));
        first_example_cell(h, jget(e, "clean_examples"));
        ps_html_raw(h, "</tr>");
    }
    ps_html_raw(h, "</tbody></table></div>");
}

typedef struct lrate {
    json_t *e;
    double rate;
} lrate;

static int cmp_lrate(const void *a, const void *b)
{
    const lrate *x = a, *y = b;
    if (x->rate != y->rate)
        return x->rate < y->rate ? -1 : 1;
    const char *a1 = jstr(jget(x->e, "label"), NULL), *b1 = jstr(jget(y->e, "label"), NULL);
    return strcmp(a1 ? a1 : "", b1 ? b1 : ""); /* qsort is not stable: ties by name */
}

static void labels_table(ps_html *h, json_t *sql)
{
    json_t *la = jget(sql, "labels");
    size_t n = json_is_array(la) ? json_array_size(la) : 0;
    if (!n)
        return;
    lrate *v = calloc(n, sizeof *v);
    if (!v) {
        h->err = PS_ENOMEM;
        return;
    }
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(la, i);
        double c, ok;
        if (json_is_object(e))
            v[m++] = (lrate){e, jnum(jget(e, "checked"), &c) && c > 0 && jnum(jget(e, "compiled_raw"), &ok)
                                    ? ok / c : 2.0};
    }
    qsort(v, m, sizeof *v, cmp_lrate);
    ps_html_printf(h, "<h3>Per label <span class=\"mu\">(%zu label%s; the lowest raw compile rates first)"
                      "</span></h3><div class=\"tw\"><table><thead><tr><th>label</th><th class=\"n\">checked</th>"
                      "<th class=\"n\">compiled raw</th><th class=\"n\">compiled after cleaning</th>"
                      "<th class=\"n\">every gold table in the prompt</th>"
                      "<th class=\"n\">every gold column</th></tr>"
                      "</thead><tbody>", m, m == 1 ? "" : "s");
    for (size_t i = 0; i < m && i < TOP_LABELS; i++) {
        json_t *e = v[i].e;
        row_head(h, e, "label");
        ps_html_raw(h, "<td class=\"n\">");
        put_count(h, jget(e, "checked"));
        ps_html_raw(h, "</td>");
        share_cell(h, jget(e, "compiled_raw"), jget(e, "checked"));
        share_cell(h, jget(e, "compiled_clean"), jget(e, "checked_clean"));
        share_cell(h, jget(e, "gold_tables_kept"), jget(e, "gold_checked"));
        share_cell(h, jget(e, "gold_columns_kept"), jget(e, "gold_checked"));
        ps_html_raw(h, "</tr>");
    }
    ps_html_raw(h, "</tbody></table></div>");
    if (m > TOP_LABELS)
        ps_html_printf(h, "<p class=\"mu\">%zu more labels not shown.</p>", m - TOP_LABELS);
    free(v);
}

/* Examples with a raw and a clean message (regressions, fixed). */
/* Examples before and after cleaning: the messages under keys ka and kb
 * (`none` for a record without one). */
static void pair_examples_of(ps_html *h, json_t *ex, const char *ka, const char *kb,
                             const char *none)
{
    if (!json_is_array(ex) || !json_array_size(ex))
        return;
    ps_html_raw(h, "<div class=\"tw\"><table><thead><tr><th>record</th><th>before cleaning</th>"
                   "<th>after cleaning</th></tr></thead><tbody>");
    for (size_t i = 0; i < json_array_size(ex) && i < SQL_MAX_EXAMPLES; i++) {
        json_t *e = json_array_get(ex, i);
        row_head(h, e, "id");
        ps_html_raw(h, "<td class=\"mono\">");
        put_text_or(h, e, ka, SQL_CAP_MSG, none);
        ps_html_raw(h, "</td><td class=\"mono\">");
        put_text_or(h, e, kb, SQL_CAP_MSG, none);
        ps_html_raw(h, "</td></tr>");
    }
    ps_html_raw(h, "</tbody></table></div>");
}

static void pair_examples(ps_html *h, json_t *ex)
{
    pair_examples_of(h, ex, "raw_message", "clean_message", "compiled");
}

/* The rules that changed regressed records, most first. */
static void by_rule_table(ps_html *h, json_t *br, const char *what)
{
    if (json_is_array(br) && json_array_size(br)) {
        ps_html_printf(h, "<table><thead><tr><th>rule</th><th class=\"n\">%s</th></tr>"
                          "</thead><tbody>", what);
        for (size_t i = 0; i < json_array_size(br) && i < MAX_ROWS; i++) {
            row_head(h, json_array_get(br, i), "rule");
            ps_html_raw(h, "<td class=\"n\">");
            put_count(h, jget(json_array_get(br, i), "count"));
            ps_html_raw(h, "</td></tr>");
        }
        ps_html_raw(h, "</tbody></table>");
    } else
        ps_html_raw(h, "<p class=\"mu\">No named rule changed them: a built-in cleaning step did.</p>");
}

static void regressions(ps_html *h, json_t *sql)
{
    json_t *reg = jget(sql, "regressions"), *br = jget(reg, "by_rule");
    double n;
    ps_html_raw(h, "<h3>Broken by cleaning</h3>");
    if (!jnum(jget(reg, "count"), &n)) {
        ps_html_raw(h, "<p class=\"na\">not available</p>");
        return;
    }
    if (n == 0) {
        ps_html_raw(h, "<p>No record's SQL stopped compiling after cleaning.</p>");
        return;
    }
    ps_html_raw(h, "<p><b>");
    put_count(h, jget(reg, "count"));
    ps_html_raw(h, "</b> record(s) compiled before cleaning and not after. The cleaning rules that changed "
                   "them (a record changed by several rules counts for each):</p>");
    by_rule_table(h, br, "broken records it changed");
    if (json_array_size(jget(reg, "examples")))
        ps_html_raw(h, "<p class=\"mu\">The first records it broke, with SQLite's messages:</p>");
    pair_examples(h, jget(reg, "examples"));
}

static void fixed(ps_html *h, json_t *sql)
{
    json_t *fx = jget(sql, "fixed");
    double n;
    if (!jnum(jget(fx, "count"), &n) || n == 0)
        return;
    ps_html_raw(h, "<h3>Fixed by cleaning</h3><p><b>");
    put_count(h, jget(fx, "count"));
    ps_html_raw(h, "</b> record(s) failed to compile before cleaning and compiled after.</p>");
    pair_examples(h, jget(fx, "examples"));
}

static const char *const EXEC_S[] = {"ok", "empty", "error", "timeout", "no_database"};

/* One row of the statuses table: its name, the five shares of `st`. */
static void status_row(ps_html *h, const char *name, json_t *st)
{
    double total = 0, v;
    for (size_t i = 0; i < 5; i++)
        total += jnum(jget(st, EXEC_S[i]), &v) ? v : 0;
    json_t *of = json_real(total);
    ps_html_raw(h, "<tr><td>");
    ps_html_text_capped(h, name, strlen(name), CAP_SHORT);
    ps_html_raw(h, "</td>");
    for (size_t i = 0; i < 5; i++)
        share_cell(h, jget(st, EXEC_S[i]), of);
    ps_html_raw(h, "</tr>");
    json_decref(of);
}

/* Results that cleaning changed (builds that ran the raw SQL too). */
static void result_regressions(ps_html *h, json_t *ex)
{
    json_t *res = jget(ex, "result"), *reg = jget(res, "regressions");
    double n;
    if (!jnum(jget(reg, "count"), &n))
        return;
    ps_html_raw(h, "<h3>Results changed by cleaning</h3><p><b>");
    put_count(h, jget(reg, "count"));
    ps_html_raw(h, "</b> of ");
    put_count(h, jget(res, "compared"));
    ps_html_raw(h, " records whose raw SQL ran returned another result after cleaning (status, rows "
                   "or a hash of the rows: <code>sql_result_regression</code>, a gate).</p>");
    if (n == 0)
        return;
    by_rule_table(h, jget(reg, "by_rule"), "changed results it caused");
    pair_examples_of(h, jget(reg, "examples"), "before", "after", "-");
}

static void execution(ps_html *h, json_t *sql)
{
    json_t *ex = jget(sql, "execution");
    double n;
    if (!jnum(jget(ex, "executed"), &n) || n == 0)
        return;
    ps_html_raw(h, "<h3>Execution</h3><p>Each record's SQL run read-only on its database, with a "
                   "time limit. Rows returned after cleaning: ");
    put_count(h, jget(ex, "rows"));
    ps_html_raw(h, ".</p><div class=\"tw\"><table><thead><tr><th></th>");
    for (size_t i = 0; i < 5; i++)
        ps_html_printf(h, "<th class=\"n\">%s</th>", EXEC_S[i]);
    ps_html_raw(h, "</tr></thead><tbody>");
    if (jget(ex, "before"))
        status_row(h, "before cleaning", jget(ex, "before"));
    status_row(h, "after cleaning", jget(ex, "statuses"));
    json_t *la = jget(sql, "labels"), *e;
    size_t i;
    json_array_foreach(la, i, e)
    {
        if (i >= MAX_ROWS || !jget(e, "execution"))
            break;
        char name[160];
        snprintf(name, sizeof name, "label %.140s", json_string_value(jget(e, "label")));
        status_row(h, name, jget(e, "execution"));
    }
    if (json_array_size(la) && jget(ex, "unlabeled"))
        status_row(h, "unlabeled", jget(ex, "unlabeled"));
    ps_html_raw(h, "</tbody></table></div>");
    json_array_foreach(jget(ex, "examples"), i, e)
    {
        if (i >= SQL_MAX_EXAMPLES)
            break;
        ps_html_raw(h, "<p class=\"mono\">");
        put_field_text(h, e, "id", CAP_SHORT);
        ps_html_raw(h, " (");
        put_field_text(h, e, "status", 16);
        ps_html_raw(h, "): ");
        put_field_text(h, e, "message", SQL_CAP_MSG);
        ps_html_raw(h, "</p>");
    }
    result_regressions(h, ex);
}

void ps_rh_sql(page *pg)
{
    json_t *sql = jget(pg->r, "sql");
    if (!json_is_object(sql))
        return;
    ps_html *h = &pg->h;
    ps_html_raw(h, "<section id=\"sql\"><h2>SQL against its schema</h2><p>Each record's SQL compiled with "
                   "SQLite against its database's schema (nothing executed), before and after cleaning: <b>");
    put_count(h, jget(sql, "checked"));
    ps_html_raw(h, "</b> checked, <b>");
    count_share(h, jget(sql, "compiled_raw"), jget(sql, "checked"));
    ps_html_raw(h, "</b> compiled raw, <b>");
    count_share(h, jget(sql, "compiled_clean"), jget(sql, "checked_clean"));
    ps_html_raw(h, "</b> compiled after cleaning.</p>");
    classes_table(h, sql);
    regressions(h, sql);
    fixed(h, sql);
    labels_table(h, sql);
    execution(h, sql);
    json_t *sh = jget(sql, "shortening");
    double ns, ng;
    if ((jnum(jget(sh, "records"), &ns) && ns > 0) ||
        (jnum(jget(sql, "gold_checked"), &ng) && ng > 0)) {
        ps_html_raw(h, "<h3>Schema selection</h3><p><b>");
        put_count(h, jget(sh, "records"));
        ps_html_raw(h, "</b> prompt(s) were over their budget and kept the tables and columns "
                       "their question names best (never read from the SQL): ");
        put_count(h, jget(sh, "tables_dropped"));
        ps_html_raw(h, " table(s) and ");
        put_count(h, jget(sh, "columns_dropped"));
        ps_html_raw(h, " column(s) left out. Gold recall, of <b>");
        put_count(h, jget(sql, "gold_checked"));
        const char *parts[] = {"gold_tables_kept", "</b> schema prompts: every table the SQL uses "
                               "kept in <b>", "gold_columns_kept", "</b>, every column in <b>"};
        for (int i = 0; i < 4; i += 2) {
            ps_html_raw(h, parts[i + 1]);
            count_share(h, jget(sql, parts[i]), jget(sql, "gold_checked"));
        }
        ps_html_raw(h, "</b>.</p>");
    }
    ps_html_raw(h, "</section>");
}
