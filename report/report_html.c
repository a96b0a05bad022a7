/*
 * report.html: one self-contained page built from the report JSON object
 * (docs/REPORT.md). No scripts, no network resources (a Content Security
 * Policy forbids any), inline SVG charts with <title>/<desc>.
 *
 * Order: the verdict banner and key numbers; the checks that failed or
 * warned, with what they mean; every check in a table (failures first);
 * SQL compiled against its schema (when the build checked it); the records
 * most changed by cleaning, before -> after with the changed words marked;
 * overlaid length histograms; per-label counts and retention; rejections,
 * rules, health counters and thresholds.
 *
 * The input is untrusted: every member may be missing or of the wrong type
 * (it renders as "not available"), and every string is HTML-escaped.
 *
 * Size bound, independent of the number of records and labels: every list
 * is capped (the constants below) and every string is cut at a byte bound
 * before escaping (an escaped byte is at most 8 bytes, "&#xFFFD;"). With
 * every cap reached: 30 explained checks and 60 table rows (names 80,
 * metrics 150/120, explanations 600/300 bytes, details 450), 20 examples
 * of 4 texts x 1000 bytes, 7 charts of at most 96 bars, 25 + 15 labels,
 * 40 rows of rejections, rules and health counters, 80 thresholds. The
 * worst case — a hostile report whose every string is at its cap and made
 * of control characters (each escaping to 8 bytes): 10,000 labels, 1,000
 * checks and examples of 70 KB strings, 4096-bin histograms — renders to
 * 1.6 MB (tests/test_report_html.c asserts < 2 MB); real build reports are
 * 50-90 KB.
 */
#include "report/html_page.h"

/* ---- page ------------------------------------------------------------------ */

static const char CSS[] =
    ":root{--fg:#1f2328;--mu:#59636e;--bd:#d1d9e0;--bg:#fff;--alt:#f6f8fa;"
    "--fail:#b3261e;--failbg:#fdecea;--warn:#8a5300;--warnbg:#fff4d6;--pass:#1a7f37;--passbg:#e6f4ea;}"
    "*{box-sizing:border-box}"
    "body{margin:0;background:var(--bg);color:var(--fg);font:15px/1.5 system-ui,-apple-system,"
    "\"Segoe UI\",Roboto,\"Noto Sans\",\"DejaVu Sans\",Helvetica,Arial,sans-serif}"
    "main{max-width:1240px;margin:0 auto;padding:20px 24px 40px}"
    "h1{font-size:26px;margin:0 0 4px;line-height:1.25}"
    "h2{font-size:20px;margin:32px 0 10px;padding-bottom:6px;border-bottom:1px solid var(--bd)}"
    "h3{font-size:16px;margin:0 0 6px}"
    "p{margin:6px 0}.mu{color:var(--mu)}.na{color:var(--mu);font-style:italic}"
    "code,pre,.mono{font-family:ui-monospace,\"SFMono-Regular\",\"DejaVu Sans Mono\",Menlo,Consolas,monospace;font-size:13px}"
    ".banner{display:flex;gap:20px;align-items:center;padding:18px 22px;border-radius:10px;"
    "border:2px solid;margin-bottom:14px}"
    ".banner .vw{font-size:34px;font-weight:800;letter-spacing:.06em;padding:6px 16px;border-radius:8px;color:#fff}"
    ".banner.fail{background:var(--failbg);border-color:var(--fail)}.banner.fail .vw{background:var(--fail)}"
    ".banner.warn{background:var(--warnbg);border-color:var(--warn)}.banner.warn .vw{background:var(--warn)}"
    ".banner.pass{background:var(--passbg);border-color:var(--pass)}.banner.pass .vw{background:var(--pass)}"
    ".banner.other{background:var(--alt);border-color:var(--mu)}.banner.other .vw{background:var(--mu)}"
    ".sum{font-size:16px}"
    ".kpis{display:grid;grid-template-columns:repeat(auto-fit,minmax(150px,1fr));gap:10px;margin:0 0 8px;padding:0}"
    ".kpis div{background:var(--alt);border:1px solid var(--bd);border-radius:8px;padding:8px 12px}"
    ".kpis dt{font-size:12px;color:var(--mu);text-transform:uppercase;letter-spacing:.04em}"
    ".kpis dd{margin:0;font-size:20px;font-weight:650}"
    "nav{font-size:14px;margin:6px 0 0;color:var(--mu)}nav a{color:#0550ae;margin-right:14px}"
    ".badge{display:inline-block;white-space:nowrap;min-width:46px;text-align:center;font-size:12px;font-weight:700;"
    "letter-spacing:.05em;padding:1px 7px;border-radius:10px;border:1px solid}"
    ".badge.fail{color:#fff;background:var(--fail);border-color:var(--fail)}"
    ".badge.warn{color:#3b2300;background:#f5c451;border-color:#d4a72c}"
    ".badge.pass{color:var(--pass);background:var(--passbg);border-color:#8fd19e}"
    ".badge.other{color:var(--mu);background:var(--alt);border-color:var(--bd);font-size:10.5px}"
    ".card{border:1px solid var(--bd);border-left:6px solid;border-radius:8px;padding:12px 16px;margin:10px 0}"
    ".card.fail{border-left-color:var(--fail)}.card.warn{border-left-color:#d4a72c}"
    ".card .expl{font-size:15px}.card .meta{font-size:13px;color:var(--mu)}"
    ".card .meta b{color:var(--fg)}"
    "table{border-collapse:collapse;width:100%;font-size:13.5px}"
    "th,td{text-align:left;vertical-align:top;padding:5px 8px;border-bottom:1px solid var(--bd)}"
    "th{background:var(--alt);font-weight:650;white-space:nowrap}"
    "td.n,th.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}"
    "tr.fail td{background:#fff5f4}tr.warn td{background:#fffbeb}"
    ".tw{overflow-x:auto}"
    ".ex{border:1px solid var(--bd);border-radius:8px;padding:10px 14px;margin:12px 0}"
    ".ex h3{font-weight:600}.ex h3 .mu{font-weight:400}"
    ".pair{display:grid;grid-template-columns:80px 1fr 1fr;gap:4px 10px;align-items:start}"
    ".pair .fl{font-size:12px;color:var(--mu);text-transform:uppercase;padding-top:6px}"
    ".pair .hd{font-size:12px;color:var(--mu);text-transform:uppercase}"
    "pre.tx{margin:0;white-space:pre-wrap;word-break:break-word;background:var(--alt);"
    "border:1px solid var(--bd);border-radius:6px;padding:6px 8px;max-height:260px;overflow:auto}"
    "del{background:#ffd7d5;color:#82071e;text-decoration:line-through}"
    "ins{background:#ccf2d4;color:#055d20;text-decoration:none;box-shadow:inset 0 -2px #2da44e}"
    ".el{color:var(--mu);font-style:italic}"
    ".charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(520px,1fr));gap:18px}"
    "figure{margin:0;border:1px solid var(--bd);border-radius:8px;padding:10px}"
    "figcaption{font-size:13px;margin-top:4px}figcaption table{font-size:12.5px}"
    "svg.chart{width:100%;height:auto;display:block}"
    "svg .ct{font-size:14px;font-weight:650;fill:var(--fg)}svg .lg{font-size:11.5px;fill:var(--fg)}"
    "svg .pl{fill:#fff;stroke:var(--bd)}svg .gr{stroke:#eaeef2}svg .tk{stroke:var(--mu)}"
    "svg .yt{font-size:11px;fill:var(--mu);text-anchor:end}svg .xt{font-size:11px;fill:var(--mu);text-anchor:middle}"
    "svg .xl,svg .yl{font-size:12px;fill:var(--fg);text-anchor:middle}"
    "svg .nd{font-size:14px;fill:var(--mu);text-anchor:middle}"
    "svg path.s0{fill:none;stroke:#d46000;stroke-width:2;stroke-dasharray:5 2}"
    "svg rect.s0{fill:#fff;stroke:#d46000;stroke-width:2}"
    "svg path.s1,svg rect.s1{fill:rgba(9,105,218,.28);stroke:#0550ae;stroke-width:1.6}"
    "svg path.s2,svg rect.s2{fill:rgba(130,80,223,.22);stroke:#6639ba;stroke-width:1.6}"
    "svg .mk{stroke:#57606a;stroke-width:1.2;stroke-dasharray:3 3}"
    "svg .bl{font-size:12px;fill:var(--fg);text-anchor:end}svg .bn{font-size:11.5px;fill:var(--mu)}"
    "svg rect.b0{fill:#d8dee4}svg rect.b1{fill:#0969da}svg rect.b1.lw{fill:#d4a72c}svg rect.b1.lf{fill:#cf222e}"
    "details{margin:6px 0}summary{cursor:pointer;color:#0550ae;font-size:13.5px}"
    "footer{margin-top:36px;font-size:12.5px;color:var(--mu);border-top:1px solid var(--bd);padding-top:10px}"
    "@media print{.pair{grid-template-columns:60px 1fr 1fr}pre.tx{max-height:none}}";


static void kpi(ps_html *h, const char *name, json_t *v, bool pct)
{
    double x;
    ps_html_raw(h, "<div><dt>");
    ps_html_raw(h, name);
    ps_html_raw(h, "</dt><dd>");
    if (pct && jnum(v, &x))
        ps_html_pct(h, x);
    else
        put_count(h, v);
    ps_html_raw(h, "</dd></div>");
}

static void banner(page *pg)
{
    ps_html *h = &pg->h;
    json_t *r = pg->r;
    int vr = vrank(jget(r, "verdict"));
    ps_html_printf(h, "<header class=\"banner %s\"><div class=\"vw\">%s</div><div>", VCLASS[vr],
                   vr == V_OTHER ? "?" : VWORD[vr]);
    ps_html_raw(h, "<h1 id=\"verdict\">");
    size_t nf = pg->counts[V_FAIL], nw = pg->counts[V_WARN];
    bool compare = json_is_string(jget(r, "mode")) && !strcmp(json_string_value(jget(r, "mode")), "compare");
    if (vr == V_FAIL)
        ps_html_raw(h, compare ? "Verdict: FAIL \xE2\x80\x94 the current data fails the comparison"
                               : "Verdict: FAIL \xE2\x80\x94 the build was stopped");
    else if (vr == V_WARN)
        ps_html_raw(h, compare ? "Verdict: WARN \xE2\x80\x94 the current data differs, within limits"
                               : "Verdict: WARN \xE2\x80\x94 the build may proceed, with warnings");
    else if (vr == V_PASS)
        ps_html_raw(h, compare ? "Verdict: PASS \xE2\x80\x94 the current data matches the baseline"
                               : "Verdict: PASS \xE2\x80\x94 the build passed every check");
    else
        ps_html_raw(h, "Verdict: not available \xE2\x80\x94 the report does not say whether the build passed");
    ps_html_raw(h, "</h1><p class=\"sum\">");
    if (pg->n_checks) {
        ps_html_printf(h, "<b>%zu</b> check%s failed, <b>%zu</b> warned, <b>%zu</b> passed", nf, nf == 1 ? "" : "s",
                       nw, pg->counts[V_PASS]);
        if (pg->counts[V_OTHER])
            ps_html_printf(h, ", %zu not judged (not enough data or off)", pg->counts[V_OTHER]);
        ps_html_printf(h, " \xE2\x80\x94 %zu in all.", pg->n_checks);
    } else
        ps_html_raw(h, "<span class=\"na\">No checks are available.</span>");
    ps_html_raw(h, "</p>");
    size_t n;
    const char *s = jstr(jget(r, "summary"), &n);
    if (s) {
        ps_html_raw(h, "<p class=\"mono mu\">");
        ps_html_text_capped(h, s, n, CAP_TEXT);
        ps_html_raw(h, "</p>");
    }
    ps_html_raw(h, "</div></header>");

    json_t *p = jget(r, "paired");
    ps_html_raw(h, "<dl class=\"kpis\">");
    json_t *pts = jget(r, "points");
    if (compare || (!jget(pts, "raw") && jget(pts, "baseline"))) {
        static const char *const S[] = {"baseline", "current"};
        for (int i = 0; i < 2; i++) {
            json_t *st = jget(pts, S[i]);
            size_t pl;
            const char *pn = jstr(jget(st, "point"), &pl);
            ps_html_printf(h, "<div><dt>%s records", S[i]);
            if (pn) {
                ps_html_raw(h, " (");
                ps_html_text_capped(h, pn, pl, 16);
                ps_html_raw(h, ")");
            }
            ps_html_raw(h, "</dt><dd>");
            put_count(h, jget(st, "records"));
            ps_html_raw(h, "</dd></div>");
        }
        ps_html_raw(h, "<div><dt>labels baseline \xE2\x86\x92 current</dt><dd>");
        put_count(h, jpath(pts, "baseline", "label_count", NULL));
        ps_html_raw(h, " \xE2\x86\x92 ");
        put_count(h, jpath(pts, "current", "label_count", NULL));
        ps_html_raw(h, "</dd></div></dl>");
        goto nav;
    }
    kpi(h, "records in", jget(p, "records_in") ? jget(p, "records_in") : jpath(r, "points", "raw", "records", NULL), false);
    kpi(h, "kept", jget(p, "kept") ? jget(p, "kept") : jpath(r, "points", "cleaned", "records", NULL), false);
    kpi(h, "rejected", jget(p, "rejected"), false);
    kpi(h, "duplicates", jget(p, "duplicates"), false);
    kpi(h, "retention", json_is_number(jget(p, "retention")) ? jget(p, "retention")
                                                              : jpath(p, "retention", "overall", NULL), true);
    ps_html_raw(h, "<div><dt>labels raw \xE2\x86\x92 cleaned</dt><dd>");
    json_t *la = jpath(r, "points", "raw", "label_count", NULL), *lb = jpath(r, "points", "cleaned", "label_count", NULL);
    put_count(h, la ? la : jpath(r, "points", "raw", "labels", "classes", NULL));
    ps_html_raw(h, " \xE2\x86\x92 ");
    put_count(h, lb ? lb : jpath(r, "points", "cleaned", "labels", "classes", NULL));
    ps_html_raw(h, "</dd></div><div><dt>accounting balanced</dt><dd>");
    json_t *bal = jget(p, "balanced");
    if (json_is_boolean(bal))
        ps_html_raw(h, json_is_true(bal) ? "yes" : "<span style=\"color:var(--fail)\">NO</span>");
    else
        na(h);
    ps_html_raw(h, "</dd></div></dl>");
nav:
    ps_html_raw(h, "<nav aria-label=\"sections\"><a href=\"#attention\">Why</a><a href=\"#checks\">All checks</a>");
    if (json_is_object(jget(r, "sql")))
        ps_html_raw(h, "<a href=\"#sql\">SQL</a>");
    ps_html_raw(h, "<a href=\"#examples\">Examples</a><a href=\"#lengths\">Lengths</a><a href=\"#labels\">Labels</a>");
    if (jpath(r, "points", "raw", "hardness", NULL) || jpath(r, "points", "baseline", "hardness", NULL))
        ps_html_raw(h, "<a href=\"#hardness\">Hardness</a>");
    ps_html_raw(h, "<a href=\"#rejections\">Rejections &amp; rules</a><a href=\"#health\">Health</a>"
                   "<a href=\"#thresholds\">Thresholds</a></nav>");
}

/* The op as a sign: ">" (a value above the threshold is bad), "<", or
 * whatever the report says (escaped). */
static void put_op(ps_html *h, json_t *c)
{
    size_t n;
    const char *op = jstr(jget(c, "op"), &n);
    if (!op)
        return;
    if (!strcmp(op, "<="))
        ps_html_raw(h, "\xE2\x89\xA4");
    else if (!strcmp(op, ">="))
        ps_html_raw(h, "\xE2\x89\xA5");
    else
        ps_html_text_capped(h, op, n, 4);
    ps_html_raw(h, "\xC2\xA0");
}

/* "fail > 0.05 · warn > 0.02" (long) or "> 0.05<br>warn > 0.02" (table). */
static void put_thresholds(ps_html *h, json_t *c, bool table)
{
    json_t *t = jget(c, "threshold"), *w = jget(c, "warn_threshold");
    if (!table)
        ps_html_raw(h, "fail if <b>");
    put_op(h, c);
    put_val(h, t, 40);
    if (!table)
        ps_html_raw(h, "</b>");
    if (w && !json_is_null(w)) {
        ps_html_raw(h, table ? "<br><span class=\"mu\">warn\xC2\xA0" : ", warn if <b>");
        put_op(h, c);
        put_val(h, w, 40);
        ps_html_raw(h, table ? "</span>" : "</b>");
    }
}

static void attention(page *pg)
{
    ps_html *h = &pg->h;
    ps_html_raw(h, "<section id=\"attention\"><h2>Why: the checks that failed or warned</h2>");
    size_t shown = 0, bad = pg->counts[V_FAIL] + pg->counts[V_WARN];
    if (!pg->n_checks)
        ps_html_raw(h, "<p class=\"na\">No checks are available in this report.</p>");
    else if (!bad)
        ps_html_printf(h, "<p>None: all %zu checks passed or did not apply.</p>", pg->n_checks);
    for (size_t i = 0; i < pg->n_checks && shown < MAX_CARDS; i++) {
        check_ref *cr = &pg->checks[i];
        if (cr->rank > V_WARN)
            break;
        json_t *c = cr->c;
        shown++;
        ps_html_printf(h, "<article class=\"card %s\"><h3>", VCLASS[cr->rank]);
        put_badge(h, jget(c, "verdict"));
        ps_html_raw(h, " <span class=\"mono\">");
        put_field_text(h, c, "name", CAP_SHORT);
        ps_html_raw(h, "</span></h3><p class=\"expl\">");
        put_text_or(h, c, "explanation", CAP_TEXT, "<span class=\"na\">no explanation available</span>");
        ps_html_raw(h, "</p><p class=\"meta\">compares <b>");
        put_field_text(h, c, "compares", CAP_SHORT);
        ps_html_raw(h, "</b> \xC2\xB7 <b>");
        put_field_text(h, c, "metric", CAP_TEXT / 4);
        ps_html_raw(h, "</b> = <b>");
        put_val(h, jget(c, "value"), CAP_SHORT);
        ps_html_raw(h, "</b> \xC2\xB7 ");
        put_thresholds(h, c, false);
        ps_html_raw(h, " \xC2\xB7 mode <b>");
        put_field_text(h, c, "mode", 16);
        ps_html_raw(h, "</b>");
        const char *md = jstr(jget(c, "mode"), NULL);
        if (md && !strcmp(md, "warn"))
            ps_html_raw(h, " (warns only, never stops the build)");
        else if (md && !strcmp(md, "fail"))
            ps_html_raw(h, " (a failure stops the build)");
        double pv;
        if (jnum(jget(c, "p_value"), &pv)) {
            ps_html_raw(h, " \xC2\xB7 p-value ");
            ps_html_num(h, pv, 3);
            ps_html_raw(h, " (information only)");
        }
        ps_html_raw(h, "</p>");
        json_t *d = jget(c, "details");
        if (d && !json_is_null(d)) {
            int budget = CAP_JSON * 3 / 2;
            ps_html_raw(h, "<p class=\"meta\">details: <code>");
            put_json(h, d, &budget, 0);
            ps_html_raw(h, "</code></p>");
        }
        ps_html_raw(h, "</article>");
    }
    if (shown < bad)
        ps_html_printf(h, "<p class=\"mu\">%zu more failing or warning checks are listed in the table below.</p>",
                       bad - shown);
    ps_html_raw(h, "</section>");
}

/* When cleaning changed a large share of the kept records (report.json's
 * "serving", set by the build over validate.thresholds.serving_note_share):
 * raw text at inference would get other ids than training, so the page
 * says so where it is read first, with the way to serve the same text. */
static void serving(page *pg)
{
    json_t *s = jget(pg->r, "serving");
    double changed, kept, share, threshold;
    if (!json_is_object(s) || !jnum(jget(s, "changed_by_cleaning"), &changed) ||
        !jnum(jget(s, "kept"), &kept) || !jnum(jget(s, "share"), &share))
        return;
    ps_html *h = &pg->h;
    ps_html_raw(h, "<section id=\"serving\"><h2>Serving: cleaning changed many records</h2>"
                   "<p>Cleaning changed <b>");
    ps_html_num(h, changed, 12);
    ps_html_raw(h, "</b> of <b>");
    ps_html_num(h, kept, 12);
    ps_html_raw(h, "</b> kept records (");
    ps_html_pct(h, share);
    if (jnum(jget(s, "threshold"), &threshold)) {
        ps_html_raw(h, ", over ");
        ps_html_pct(h, threshold);
    }
    ps_html_raw(h, "): ");
    put_text_or(h, s, "note", CAP_TEXT, "serve with the set's preprocessor");
    ps_html_raw(h, ".</p></section>");
}

/* The words that became [UNK] (details of the [UNK] checks): a table per
 * field and the hints, so a stopped build says why without a script. */
static void unk_words_table(ps_html *h, json_t *t, const char *field)
{
    json_t *words = jget(t, "words");
    if (!json_array_size(words))
        return;
    ps_html_raw(h, "<h3>");
    ps_html_text(h, field);
    ps_html_raw(h, " <span class=\"mu\">(");
    put_count(h, jget(t, "total"));
    ps_html_raw(h, " in all)</span></h3><div class=\"tw\"><table><thead><tr><th>word</th>"
                   "<th>count</th><th>example record</th><th>hint</th></tr></thead><tbody>");
    size_t i;
    json_t *e;
    json_array_foreach(words, i, e)
    {
        if (i >= 20)
            break;
        ps_html_raw(h, "<tr><td class=\"mono\">");
        put_field_text(h, e, "word", CAP_SHORT);
        ps_html_raw(h, "</td><td>");
        put_count(h, jget(e, "count"));
        ps_html_raw(h, "</td><td class=\"mono\">");
        put_field_text(h, e, "example", CAP_SHORT);
        ps_html_raw(h, "</td><td>");
        put_field_text(h, e, "hint", CAP_SHORT);
        ps_html_raw(h, "</td></tr>");
    }
    ps_html_raw(h, "</tbody></table></div>");
}

static void unk_words(page *pg)
{
    json_t *uw = NULL;
    for (size_t i = 0; i < pg->n_checks && !uw; i++)
        uw = jget(jget(pg->checks[i].c, "details"), "unk_words");
    if (!json_is_object(uw))
        return;
    ps_html *h = &pg->h;
    ps_html_raw(h, "<section id=\"unk-words\"><h2>Words that became [UNK]</h2>");
    unk_words_table(h, jget(uw, "question"), "question");
    unk_words_table(h, jget(uw, "sql"), "sql");
    size_t i;
    json_t *hint;
    json_array_foreach(jget(uw, "hints"), i, hint)
    {
        ps_html_raw(h, "<p class=\"expl\"><b>hint:</b> ");
        put_field_text(h, hint, "message", CAP_TEXT);
        ps_html_raw(h, " <span class=\"mono\">(");
        size_t k;
        json_t *w;
        json_array_foreach(jget(hint, "words"), k, w)
        {
            ps_html_raw(h, k ? " " : "");
            ps_html_text_capped(h, jstr(w, NULL) ? jstr(w, NULL) : "", jstr(w, NULL) ? strlen(jstr(w, NULL)) : 0,
                                CAP_SHORT);
        }
        ps_html_raw(h, ")</span></p>");
        json_t *rules = jget(hint, "rules");
        char *txt = rules ? json_dumps(rules, JSON_COMPACT) : NULL;
        if (txt) {
            ps_html_raw(h, "<pre class=\"tx\">");
            ps_html_text_capped(h, txt, strlen(txt), CAP_TEXT);
            ps_html_raw(h, "</pre>");
        }
        free(txt);
    }
    ps_html_raw(h, "</section>");
}

static void checks_table(page *pg)
{
    ps_html *h = &pg->h;
    ps_html_raw(h, "<section id=\"checks\"><h2>All checks</h2>");
    if (!pg->n_checks) {
        ps_html_raw(h, "<p class=\"na\">not available</p></section>");
        return;
    }
    ps_html_printf(h, "<p class=\"mu\">%zu checks: %zu failed, %zu warned, %zu passed, %zu other "
                      "(not enough data or off). Failures first. The value is judged against the fail and warn "
                      "thresholds in the direction shown (&gt; : above is bad, &lt; : below is bad); mode "
                      "<b>fail</b> can stop the build, <b>warn</b> only warns. The p-value is information only.</p>",
                   pg->n_checks, pg->counts[V_FAIL], pg->counts[V_WARN], pg->counts[V_PASS],
                   pg->counts[V_OTHER]);
    ps_html_raw(h, "<div class=\"tw\"><table><thead><tr><th>verdict</th><th>check</th><th>compares</th>"
                   "<th>metric</th><th class=\"n\">value</th><th class=\"n\">threshold</th><th>mode</th>"
                   "<th class=\"n\">p-value (info)</th><th>what it means</th></tr></thead><tbody>");
    size_t rows = pg->n_checks < MAX_CHECKS ? pg->n_checks : MAX_CHECKS;
    for (size_t i = 0; i < rows; i++) {
        json_t *c = pg->checks[i].c;
        ps_html_printf(h, "<tr class=\"%s\"><td>", VCLASS[pg->checks[i].rank]);
        put_badge(h, jget(c, "verdict"));
        ps_html_raw(h, "</td><td><span class=\"mono\">");
        put_field_text(h, c, "name", CAP_SHORT);
        ps_html_raw(h, "</span>");
        if (jstr(jget(c, "group"), NULL)) {
            ps_html_raw(h, "<br><span class=\"mu\">");
            put_field_text(h, c, "group", 40);
            ps_html_raw(h, "</span>");
        }
        ps_html_raw(h, "</td><td>");
        put_field_text(h, c, "compares", CAP_SHORT);
        ps_html_raw(h, "</td><td>");
        put_field_text(h, c, "metric", CAP_SHORT * 3 / 2);
        ps_html_raw(h, "</td><td class=\"n\">");
        put_val(h, jget(c, "value"), 40);
        ps_html_raw(h, "</td><td class=\"n\">");
        put_thresholds(h, c, true);
        ps_html_raw(h, "</td><td>");
        put_field_text(h, c, "mode", 16);
        ps_html_raw(h, "</td><td class=\"n\">");
        double pv;
        if (jnum(jget(c, "p_value"), &pv))
            ps_html_num(h, pv, 3);
        else
            dash(h);
        ps_html_raw(h, "</td><td>");
        put_field_text(h, c, "explanation", CAP_TEXT / 2);
        ps_html_raw(h, "</td></tr>");
    }
    ps_html_raw(h, "</tbody></table></div>");
    if (rows < pg->n_checks)
        ps_html_printf(h, "<p class=\"mu\">%zu more checks not shown (the table shows at most %d; failures "
                          "and warnings come first, so those left out are passing or other checks).</p>",
                       pg->n_checks - rows, MAX_CHECKS);
    ps_html_raw(h, "</section>");
}

char *ps_report_html(json_t *report)
{
    page pg = {0};
    pg.r = json_is_object(report) ? report : NULL;
    json_t *checks = jget(pg.r, "checks");
    if (json_is_array(checks) && json_array_size(checks)) {
        size_t n = json_array_size(checks);
        pg.checks = calloc(n, sizeof *pg.checks);
        if (!pg.checks)
            return NULL;
        for (size_t i = 0; i < n; i++) {
            json_t *c = json_array_get(checks, i);
            if (!json_is_object(c))
                continue;
            check_ref *cr = &pg.checks[pg.n_checks++];
            cr->c = c;
            cr->rank = vrank(jget(c, "verdict"));
            cr->pos = i;
            pg.counts[cr->rank]++;
        }
        qsort(pg.checks, pg.n_checks, sizeof *pg.checks, cmp_check);
    }
    ps_html *h = &pg.h;
    int vr = vrank(jget(pg.r, "verdict"));
    ps_html_raw(h, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                   "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
                   "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
                   "style-src 'unsafe-inline'\">");
    ps_html_printf(h, "<title>%s \xE2\x80\x94 pairshard validation report</title><style>",
                   vr == V_OTHER ? "verdict not available" : VWORD[vr]);
    ps_html_raw(h, CSS);
    ps_html_raw(h, "</style></head><body><main>");
    banner(&pg);
    attention(&pg);
    serving(&pg);
    unk_words(&pg);
    checks_table(&pg);
    ps_rh_leakage(&pg);
    ps_rh_sources(&pg);
    ps_rh_sql(&pg);
    ps_rh_examples(&pg);
    ps_rh_lengths(&pg);
    ps_rh_generation(&pg);
    ps_rh_labels(&pg);
    ps_rh_hardness(&pg);
    ps_rh_rejections(&pg);
    ps_rh_rejections_by_input(&pg);
    ps_rh_health(&pg);
    ps_rh_thresholds(&pg);
    double ver;
    ps_html_raw(h, "<footer>pairshard validation report");
    if (jnum(jget(pg.r, "report_version"), &ver))
        ps_html_printf(h, " \xC2\xB7 report version %.0f", ver);
    ps_html_printf(h, " \xC2\xB7 one self-contained page: no scripts, no fonts, images or styles from "
                      "elsewhere. Its size does not grow with the data: at most %d checks, %d examples "
                      "(%d bytes of each text), %d + %d labels and fixed histogram bins are shown.",
                   MAX_CHECKS, MAX_EXAMPLES, TEXT_BUDGET, TOP_LABELS, WORST_LABELS);
    ps_html_raw(h, "</footer></main></body></html>\n");
    free(pg.checks);
    if (h->err) {
        ps_buf_free(&h->b);
        return NULL;
    }
    return h->b.data;
}
