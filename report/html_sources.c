/* report.html: a mixture's sources, one row each, and the checks each
 * source did not pass (see html_page.h; report.json's "sources"). */
#include "report/html_page.h"

/* A source's count from its accounting, or a dash. */
static void acct_cell(ps_html *h, json_t *s, const char *key)
{
    double v;
    ps_html_raw(h, "<td class=\"num\">");
    if (jnum(jpath(s, "accounting", key, NULL), &v))
        ps_html_num(h, v, 15);
    else
        dash(h);
    ps_html_raw(h, "</td>");
}

/* Its rejections by reason, the non-zero ones, largest first as listed. */
static void reasons_cell(ps_html *h, json_t *s)
{
    json_t *by = jpath(s, "accounting", "rejected_by_reason", NULL);
    const char *k;
    json_t *v;
    bool any = false;
    ps_html_raw(h, "<td>");
    json_object_foreach(by, k, v)
    {
        double n;
        if (!jnum(v, &n) || n <= 0)
            continue;
        ps_html_raw(h, any ? ", " : "");
        ps_html_text(h, k);
        ps_html_raw(h, " ");
        ps_html_num(h, n, 15);
        any = true;
    }
    if (!any)
        dash(h);
    ps_html_raw(h, "</td>");
}

/* The checks a source warned or failed, with their explanations. */
static void source_checks(ps_html *h, json_t *s)
{
    size_t i;
    json_t *c;
    json_array_foreach(jget(s, "checks"), i, c)
    {
        int r = vrank(jget(c, "verdict"));
        if (r != V_FAIL && r != V_WARN)
            continue;
        ps_html_raw(h, "<li>");
        put_badge(h, jget(c, "verdict"));
        ps_html_raw(h, " <code>");
        ps_html_text(h, jstr(jget(c, "name"), NULL) ? jstr(jget(c, "name"), NULL) : "");
        ps_html_raw(h, "</code> ");
        put_field_text(h, c, "explanation", TEXT_BUDGET);
        ps_html_raw(h, "</li>");
    }
}

void ps_rh_sources(page *pg)
{
    json_t *src = jget(pg->r, "sources");
    if (!json_is_array(src) || !json_array_size(src))
        return;
    ps_html *h = &pg->h;
    ps_html_raw(h, "<section id=\"sources\"><h2>Sources: every check per source</h2>"
                   "<p>Each source's records were checked alone as well as together; a "
                   "source's failed check fails the build and is listed above, named.</p>"
                   "<table><tr><th>source</th><th>verdict</th><th>records in</th><th>kept</th>"
                   "<th>rejected</th><th>duplicates</th><th>rejected by reason</th></tr>");
    size_t i;
    json_t *s;
    json_array_foreach(src, i, s)
    {
        ps_html_raw(h, "<tr><td>");
        ps_html_text(h, jstr(jget(s, "name"), NULL) ? jstr(jget(s, "name"), NULL) : "");
        ps_html_raw(h, "</td><td>");
        put_badge(h, jget(s, "verdict"));
        ps_html_raw(h, "</td>");
        acct_cell(h, s, "records_in");
        acct_cell(h, s, "kept");
        acct_cell(h, s, "rejected");
        acct_cell(h, s, "duplicates");
        reasons_cell(h, s);
        ps_html_raw(h, "</tr>");
    }
    ps_html_raw(h, "</table>");
    json_array_foreach(src, i, s)
    {
        int r = vrank(jget(s, "verdict"));
        if (r != V_FAIL && r != V_WARN)
            continue;
        ps_html_raw(h, "<h3>");
        ps_html_text(h, jstr(jget(s, "name"), NULL) ? jstr(jget(s, "name"), NULL) : "");
        ps_html_raw(h, "</h3><ul>");
        source_checks(h, s);
        ps_html_raw(h, "</ul>");
    }
    ps_html_raw(h, "</section>");
}
