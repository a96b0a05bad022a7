/*
 * report.html's leakage section (report.json's "leakage", a build with
 * --holdout): the held-out sets with their hashes, per kind the training
 * records that leak, those dropped and left against the limit, and the
 * first examples of each kind and held-out set.
 */
#include "report/html_page.h"

static void holdouts(ps_html *h, json_t *hs)
{
    ps_html_raw(h, "<p>Held-out sets: ");
    size_t i;
    json_t *e;
    json_array_foreach(hs, i, e) {
        double n;
        if (i)
            ps_html_raw(h, "; ");
        ps_html_raw(h, "<code>");
        put_text_or(h, e, "name", CAP_SHORT, "?");
        ps_html_raw(h, "</code> (");
        if (jnum(jget(e, "records"), &n))
            ps_html_num(h, n, 12);
        ps_html_raw(h, " records, sha256 <code>");
        put_text_or(h, e, "sha256", 16, "");
        ps_html_raw(h, "</code>)");
    }
    ps_html_raw(h, "</p>");
}

static void examples(ps_html *h, const char *kind, json_t *per)
{
    size_t i, j;
    json_t *ho, *ex;
    json_array_foreach(per, i, ho) {
        json_array_foreach(jget(ho, "examples"), j, ex) {
            ps_html_raw(h, "<tr><td>");
            ps_html_text(h, kind);
            ps_html_raw(h, "</td><td><code>");
            put_text_or(h, ex, "train_id", CAP_SHORT, "");
            ps_html_raw(h, "</code> ");
            put_text_or(h, ex, "train", CAP_TEXT, "");
            ps_html_raw(h, "</td><td><code>");
            put_text_or(h, ex, "holdout_id", CAP_SHORT, "");
            ps_html_raw(h, "</code> ");
            put_text_or(h, ex, "holdout", CAP_TEXT, "");
            ps_html_raw(h, "</td></tr>");
        }
    }
}

void ps_rh_leakage(page *pg)
{
    json_t *l = jget(pg->r, "leakage");
    if (!json_is_object(l))
        return;
    ps_html *h = &pg->h;
    double records;
    ps_html_raw(h, "<section id=\"leakage\"><h2>Leakage against held-out sets</h2>");
    holdouts(h, jget(l, "holdouts"));
    ps_html_raw(h, "<p>Training records compared: <b>");
    if (jnum(jget(l, "records"), &records))
        ps_html_num(h, records, 12);
    ps_html_raw(h, "</b>. A kind fails when the share of records left in the set that leak "
                   "by it is over its limit.</p><table><thead><tr><th>kind</th><th>leaked</th>"
                   "<th>share</th><th>dropped</th><th>left</th><th>limit</th><th>verdict</th>"
                   "</tr></thead><tbody>");
    const char *name;
    json_t *k;
    json_object_foreach(jget(l, "kinds"), name, k) {
        double v;
        ps_html_raw(h, "<tr><td>");
        ps_html_text(h, name);
        ps_html_raw(h, "</td><td>");
        put_count(h, jget(k, "records"));
        ps_html_raw(h, "</td><td>");
        if (jnum(jget(k, "fraction"), &v))
            ps_html_pct(h, v);
        ps_html_raw(h, "</td><td>");
        put_count(h, jget(k, "dropped"));
        ps_html_raw(h, "</td><td>");
        if (jnum(jget(k, "remaining_fraction"), &v))
            ps_html_pct(h, v);
        ps_html_raw(h, "</td><td>");
        if (jnum(jget(k, "max_fraction"), &v))
            ps_html_pct(h, v);
        else
            ps_html_raw(h, "reported only");
        ps_html_raw(h, json_is_false(jget(k, "passed")) ? "</td><td><b>FAIL</b></td></tr>"
                                                        : "</td><td>ok</td></tr>");
    }
    ps_html_raw(h, "</tbody></table><h3>Examples</h3><table><thead><tr><th>kind</th>"
                   "<th>training record</th><th>held-out record</th></tr></thead><tbody>");
    json_object_foreach(jget(l, "kinds"), name, k)
        examples(h, name, jget(k, "per_holdout"));
    ps_html_raw(h, "</tbody></table></section>");
}
