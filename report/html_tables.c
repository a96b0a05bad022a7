/* report.html: rejections, rules, health counters and thresholds (see html_page.h). */
#include "report/html_page.h"

/* ---- rejections, rules, health, thresholds ---------------------------------- */

typedef struct kv {
    const char *k;
    double v;
} kv;

static int cmp_kv(const void *a, const void *b)
{
    const kv *x = a, *y = b;
    if (x->v != y->v)
        return x->v < y->v ? 1 : -1;
    return strcmp(x->k, y->k);
}

/* A value, or a dash when absent. */
static void val_or_dash(ps_html *h, json_t *x, size_t cap)
{
    if (x)
        put_val(h, x, cap);
    else
        dash(h);
}

/* A share, or "not available" when its base is unknown. */
static void pct_or_na(ps_html *h, bool ok, double share)
{
    if (ok)
        ps_html_pct(h, share);
    else
        na(h);
}

/* The note under a table cut at MAX_ROWS rows (what: " reasons", or ""). */
static void more_not_shown(ps_html *h, size_t n, const char *what)
{
    if (n > MAX_ROWS)
        ps_html_printf(h, "<p class=\"mu\">%zu more%s not shown.</p>", n - MAX_ROWS, what);
}

void ps_rh_rejections(page *pg)
{
    ps_html *h = &pg->h;
    json_t *p = jget(pg->r, "paired");
    json_t *rr = jget(p, "rejected_by_reason");
    double in = 0;
    bool have_in = jnum(jget(p, "records_in"), &in) && in > 0;
    json_t *rb = jget(p, "rejected_by");
    ps_html_raw(h, "<section id=\"rejections\"><h2>Rejections and rules</h2><div class=\"charts\"><div>"
                   "<h3>Rejected records by reason</h3>");
    if (json_is_array(rb) && json_array_size(rb)) {
        size_t n = json_array_size(rb);
        ps_html_raw(h, "<table><thead><tr><th>reason</th><th>rule</th><th class=\"n\">records</th>"
                       "<th class=\"n\">share of input</th></tr></thead><tbody>");
        for (size_t i = 0; i < n && i < MAX_ROWS; i++) {
            json_t *e = json_array_get(rb, i);
            double c;
            ps_html_raw(h, "<tr><td class=\"mono\">");
            put_field_text(h, e, "reason", CAP_SHORT);
            ps_html_raw(h, "</td><td class=\"mono\">");
            put_text_or(h, e, "rule", CAP_SHORT, DASH_HTML);
            ps_html_raw(h, "</td><td class=\"n\">");
            put_count(h, jget(e, "count"));
            ps_html_raw(h, "</td><td class=\"n\">");
            bool counted = have_in && jnum(jget(e, "count"), &c);
            pct_or_na(h, counted, counted ? c / in : 0);
            ps_html_raw(h, "</td></tr>");
        }
        ps_html_raw(h, "</tbody></table>");
        more_not_shown(h, n, "");
    } else if (json_is_array(rb))
        ps_html_raw(h, "<p>No record was rejected.</p>");
    else if (json_is_object(rr) && json_object_size(rr)) {
        size_t n = json_object_size(rr), m = 0;
        kv *v = calloc(n, sizeof *v);
        if (!v) {
            h->err = PS_ENOMEM;
            return;
        }
        const char *k;
        json_t *val;
        json_object_foreach(rr, k, val)
        {
            double x;
            if (jnum(val, &x))
                v[m++] = (kv){k, x};
        }
        qsort(v, m, sizeof *v, cmp_kv);
        ps_html_raw(h, "<table><thead><tr><th>reason</th><th class=\"n\">records</th><th class=\"n\">share of input</th>"
                       "</tr></thead><tbody>");
        for (size_t i = 0; i < m && i < MAX_ROWS; i++) {
            ps_html_raw(h, "<tr><td class=\"mono\">");
            ps_html_text_capped(h, v[i].k, strlen(v[i].k), CAP_SHORT);
            ps_html_raw(h, "</td><td class=\"n\">");
            ps_html_num(h, v[i].v, 6);
            ps_html_raw(h, "</td><td class=\"n\">");
            pct_or_na(h, have_in, have_in ? v[i].v / in : 0);
            ps_html_raw(h, "</td></tr>");
        }
        ps_html_raw(h, "</tbody></table>");
        more_not_shown(h, m, " reasons");
        free(v);
    } else if (json_is_object(rr))
        ps_html_raw(h, "<p>No record was rejected.</p>");
    else
        ps_html_raw(h, "<p class=\"na\">not available</p>");
    json_t *rules = jget(p, "rules");
    ps_html_raw(h, "</div><div>");
    double cq, cs, kept;
    if (jnum(jget(p, "changed_question"), &cq) && jnum(jget(p, "changed_sql"), &cs) && jnum(jget(p, "kept"), &kept)) {
        ps_html_raw(h, "<h3>Records changed by cleaning</h3><table><thead><tr><th>field</th>"
                       "<th class=\"n\">records changed</th><th class=\"n\">share of kept</th></tr></thead><tbody>");
        const char *const field[2] = {"question", "sql"};
        const double changed[2] = {cq, cs};
        for (int f = 0; f < 2; f++) {
            ps_html_printf(h, "<tr><td>%s</td><td class=\"n\">", field[f]);
            ps_html_num(h, changed[f], 6);
            ps_html_raw(h, "</td><td class=\"n\">");
            pct_or_na(h, kept > 0, kept > 0 ? changed[f] / kept : 0);
            ps_html_raw(h, "</td></tr>");
        }
        ps_html_raw(h, "</tbody></table>");
    }
    if (rules || !jget(p, "rejected_by"))
        ps_html_raw(h, "<h3>Cleaning rules</h3>");
    if (json_is_array(rules) && json_array_size(rules)) {
        ps_html_raw(h, "<table><thead><tr><th>rule</th><th class=\"n\">matched</th><th class=\"n\">changed</th>"
                       "<th class=\"n\">dropped</th></tr></thead><tbody>");
        size_t n = json_array_size(rules);
        for (size_t i = 0; i < n && i < MAX_ROWS; i++) {
            json_t *r = json_array_get(rules, i);
            ps_html_raw(h, "<tr><td class=\"mono\">");
            put_field_text(h, r, "name", CAP_SHORT);
            static const char *const K[] = {"matched", "changed", "dropped"};
            for (size_t q = 0; q < 3; q++) {
                ps_html_raw(h, "</td><td class=\"n\">");
                put_count(h, jget(r, K[q]));
            }
            ps_html_raw(h, "</td></tr>");
        }
        ps_html_raw(h, "</tbody></table>");
        more_not_shown(h, n, " rules");
    } else if (json_is_array(rules))
        ps_html_raw(h, "<p>No user rules.</p>");
    else if (!jget(p, "rejected_by"))
        ps_html_raw(h, "<p class=\"na\">not available</p>");
    ps_html_raw(h, "</div></div></section>");
}

/* paired.rejected_by_input: which input each cause came from, and why,
 * with its first record ("bird/dev.json:#0: no field 'sql' or 'query'
 * (fields: ..., SQL, ...)"). Absent from reports written before it. */
void ps_rh_rejections_by_input(page *pg)
{
    ps_html *h = &pg->h;
    json_t *rbi = jget(jget(pg->r, "paired"), "rejected_by_input");
    if (!json_is_array(rbi) || json_array_size(rbi) == 0)
        return;
    size_t n = json_array_size(rbi);
    ps_html_raw(h, "<section id=\"rejections-by-input\"><h2>Rejections by input</h2>"
                   "<table><thead><tr><th>input</th><th>reason</th><th>rule</th>"
                   "<th class=\"n\">records</th><th>first record</th><th>why</th></tr></thead>"
                   "<tbody>");
    for (size_t i = 0; i < n && i < MAX_ROWS; i++) {
        json_t *e = json_array_get(rbi, i), *ex = jget(e, "example");
        static const char *const K[] = {"input", "reason", "rule"};
        ps_html_raw(h, "<tr>");
        for (size_t k = 0; k < 3; k++) {
            ps_html_raw(h, "<td class=\"mono\">");
            put_text_or(h, e, K[k], CAP_SHORT, DASH_HTML);
            ps_html_raw(h, "</td>");
        }
        ps_html_raw(h, "<td class=\"n\">");
        put_count(h, jget(e, "count"));
        ps_html_raw(h, "</td><td class=\"mono\">");
        put_text_or(h, ex, "source", CAP_SHORT, NULL);
        ps_html_raw(h, "</td><td>");
        put_text_or(h, ex, "detail", CAP_TEXT, NULL);
        ps_html_raw(h, "</td></tr>");
    }
    ps_html_raw(h, "</tbody></table>");
    more_not_shown(h, n, "");
    ps_html_raw(h, "</section>");
}

void ps_rh_health(page *pg)
{
    ps_html *h = &pg->h;
    json_t *pts = jget(pg->r, "points");
    const char *pn[4];
    json_t *hs[4];
    size_t np = 0;
    const char *k;
    json_t *v;
    json_object_foreach(pts, k, v)
    {
        if (np < 4 && json_is_object(jget(v, "health"))) {
            pn[np] = k;
            hs[np++] = jget(v, "health");
        }
    }
    const char *keys[MAX_ROWS];
    size_t nk = 0, more = 0;
    for (size_t i = 0; i < np; i++) {
        json_object_foreach(hs[i], k, v)
        {
            bool seen = false;
            for (size_t j = 0; j < nk && !seen; j++)
                seen = !strcmp(keys[j], k);
            if (seen)
                continue;
            if (nk < MAX_ROWS)
                keys[nk++] = k;
            else
                more++;
        }
    }
    ps_html_raw(h, "<section id=\"health\"><h2>Health counters at each point</h2>");
    if (!nk) {
        ps_html_raw(h, "<p class=\"na\">not available</p></section>");
        return;
    }
    ps_html_raw(h, "<div class=\"tw\"><table><thead><tr><th>counter</th>");
    for (size_t i = 0; i < np; i++) {
        ps_html_raw(h, "<th class=\"n\">");
        ps_html_text_capped(h, pn[i], strlen(pn[i]), 40);
        ps_html_raw(h, "</th>");
    }
    ps_html_raw(h, "</tr></thead><tbody>");
    for (size_t j = 0; j < nk; j++) {
        ps_html_raw(h, "<tr><td class=\"mono\">");
        ps_html_text_capped(h, keys[j], strlen(keys[j]), CAP_SHORT);
        bool rate = strlen(keys[j]) > 5 && !strcmp(keys[j] + strlen(keys[j]) - 5, "_rate");
        for (size_t i = 0; i < np; i++) {
            ps_html_raw(h, "</td><td class=\"n\">");
            json_t *x = jget(hs[i], keys[j]);
            double d;
            if (rate && jnum(x, &d))
                ps_html_pct(h, d);
            else
                val_or_dash(h, x, 40);
        }
        ps_html_raw(h, "</td></tr>");
    }
    ps_html_raw(h, "</tbody></table></div>");
    if (more)
        ps_html_printf(h, "<p class=\"mu\">%zu more counters not shown.</p>", more);
    ps_html_raw(h, "</section>");
}

void ps_rh_thresholds(page *pg)
{
    ps_html *h = &pg->h;
    json_t *t = jget(pg->r, "thresholds"), *modes = jget(pg->r, "modes");
    ps_html_raw(h, "<section id=\"thresholds\"><h2>Thresholds and parameters in effect</h2>");
    if (!json_is_object(t) || !json_object_size(t)) {
        ps_html_raw(h, "<p class=\"na\">not available</p></section>");
        return;
    }
    ps_html_raw(h, "<div class=\"tw\"><table><thead><tr><th>check or parameter</th><th>fail threshold / value</th>"
                   "<th>warn threshold</th><th>mode</th></tr></thead><tbody>");
    size_t i = 0, skipped = 0;
    const char *k;
    json_t *v;
    json_object_foreach(t, k, v)
    {
        size_t kl = strlen(k);
        if (kl > 5 && !strcmp(k + kl - 5, "_warn")) {
            char base[256];
            if (kl - 5 < sizeof base) {
                memcpy(base, k, kl - 5);
                base[kl - 5] = '\0';
                if (jget(t, base))
                    continue; /* shown with its check */
            }
        }
        if (i++ >= MAX_THRESHOLDS) {
            skipped++;
            continue;
        }
        ps_html_raw(h, "<tr><td class=\"mono\">");
        ps_html_text_capped(h, k, kl, CAP_SHORT);
        ps_html_raw(h, "</td><td>");
        put_val(h, v, CAP_SHORT);
        ps_html_raw(h, "</td><td>");
        char wk[300];
        json_t *w = NULL;
        if (kl + 6 < sizeof wk) {
            snprintf(wk, sizeof wk, "%s_warn", k);
            w = jget(t, wk);
        }
        val_or_dash(h, w, CAP_SHORT);
        ps_html_raw(h, "</td><td>");
        val_or_dash(h, jget(modes, k), 16);
        ps_html_raw(h, "</td></tr>");
    }
    ps_html_raw(h, "</tbody></table></div>");
    if (skipped)
        ps_html_printf(h, "<p class=\"mu\">%zu more not shown.</p>", skipped);
    ps_html_raw(h, "</section>");
}
