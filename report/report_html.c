/*
 * report.html: one self-contained page built from the report JSON object
 * (docs/REPORT.md). No scripts, no network resources (a Content Security
 * Policy forbids any), inline SVG charts with <title>/<desc>.
 *
 * Order: the verdict banner and key numbers; the checks that failed or
 * warned, with what they mean; every check in a table (failures first);
 * the records most changed by cleaning, before -> after with the changed
 * words marked; overlaid length histograms; per-label counts and
 * retention; rejections, rules, health counters and thresholds.
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
#include "report/report.h"
#include "validate/stat_math.h"
#include "report/svg.h"

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

static json_t *jget(json_t *o, const char *k) { return json_is_object(o) ? json_object_get(o, k) : NULL; }

static json_t *jpath(json_t *o, ...)
{
    va_list ap;
    va_start(ap, o);
    const char *k;
    while (o && (k = va_arg(ap, const char *)) != NULL)
        o = jget(o, k);
    va_end(ap);
    return o;
}

static bool jnum(json_t *j, double *v)
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

static void na(ps_html *h) { ps_html_raw(h, "<span class=\"na\">not available</span>"); }

/* Compact JSON of any value, cut when `budget` bytes are spent. */
static void put_json(ps_html *h, json_t *j, int *budget, int depth)
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
static void put_val(ps_html *h, json_t *j, size_t cap)
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

static void put_count(ps_html *h, json_t *j)
{
    double v;
    if (jnum(j, &v))
        ps_html_num(h, v, 6);
    else
        na(h);
}

/* ---- verdicts ------------------------------------------------------------- */

enum { V_FAIL, V_WARN, V_PASS, V_OTHER };

static int vrank(json_t *v)
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

static void put_badge(ps_html *h, json_t *verdict)
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

static int cmp_check(const void *a, const void *b)
{
    const check_ref *x = a, *y = b;
    if (x->rank != y->rank)
        return x->rank - y->rank;
    return (x->pos > y->pos) - (x->pos < y->pos);
}

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

typedef struct page {
    ps_html h;
    json_t *r;
    check_ref *checks; /* sorted */
    size_t n_checks;
    size_t counts[4];  /* per rank */
} page;

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
    ps_html_raw(h, "<nav aria-label=\"sections\"><a href=\"#attention\">Why</a><a href=\"#checks\">All checks</a>"
                   "<a href=\"#examples\">Examples</a><a href=\"#lengths\">Lengths</a><a href=\"#labels\">Labels</a>"
                   "<a href=\"#rejections\">Rejections &amp; rules</a><a href=\"#health\">Health</a>"
                   "<a href=\"#thresholds\">Thresholds</a></nav>");
}

static void put_field_text(ps_html *h, json_t *c, const char *k, size_t cap)
{
    size_t n;
    const char *s = jstr(jget(c, k), &n);
    if (s)
        ps_html_text_capped(h, s, n, cap);
    else
        put_val(h, jget(c, k), cap);
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
        if (jstr(jget(c, "explanation"), NULL))
            put_field_text(h, c, "explanation", CAP_TEXT);
        else
            ps_html_raw(h, "<span class=\"na\">no explanation available</span>");
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
            ps_html_raw(h, "<span class=\"mu\">\xE2\x80\x94</span>");
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

/* ---- before -> after ---------------------------------------------------- */

typedef struct seg {
    int kind; /* 0 equal, 1 changed */
    size_t off, len;
} seg;

typedef struct segs {
    seg *v;
    size_t n, cap;
} segs;

static int segs_add(segs *s, int kind, size_t off, size_t len)
{
    if (!len)
        return 0;
    if (s->n && s->v[s->n - 1].kind == kind && s->v[s->n - 1].off + s->v[s->n - 1].len == off) {
        s->v[s->n - 1].len += len;
        return 0;
    }
    if (s->n == s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 16;
        seg *nv = realloc(s->v, nc * sizeof *nv);
        if (!nv)
            return PS_ENOMEM;
        s->v = nv;
        s->cap = nc;
    }
    s->v[s->n++] = (seg){kind, off, len};
    return 0;
}

static bool is_word(unsigned char c) { return c >= 0x80 || c == '_' || (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z'); }
static bool is_space(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

#define MAX_TOKENS 400

/* Splits s[0..n) into words, space runs and single other bytes; returns
 * the count, or MAX_TOKENS + 1 when there are more. */
static size_t tokens_of(const char *s, size_t n, size_t *start)
{
    size_t k = 0, i = 0;
    while (i < n) {
        if (k == MAX_TOKENS)
            return MAX_TOKENS + 1;
        start[k++] = i;
        unsigned char c = (unsigned char)s[i];
        if (is_word(c))
            while (i < n && is_word((unsigned char)s[i]))
                i++;
        else if (is_space(c))
            while (i < n && is_space((unsigned char)s[i]))
                i++;
        else
            i++;
    }
    start[k] = n;
    return k;
}

/* Word-level diff of a and b into the segments of each side. */
static int diff(const char *a, size_t na_, const char *b, size_t nb, segs *sa, segs *sb)
{
    size_t p = 0;
    while (p < na_ && p < nb && a[p] == b[p])
        p++;
    /* back to a token and character boundary */
    while (p > 0 && is_word((unsigned char)a[p - 1]) &&
           ((p < na_ && is_word((unsigned char)a[p])) || (p < nb && is_word((unsigned char)b[p]))))
        p--;
    size_t s = 0;
    while (s < na_ - p && s < nb - p && a[na_ - 1 - s] == b[nb - 1 - s])
        s++;
    while (s > 0 && is_word((unsigned char)a[na_ - s]) &&
           ((na_ - s > p && is_word((unsigned char)a[na_ - s - 1])) ||
            (nb - s > p && is_word((unsigned char)b[nb - s - 1]))))
        s--;
    int rc = segs_add(sa, 0, 0, p) | segs_add(sb, 0, 0, p);
    const char *ma = a + p, *mb = b + p;
    size_t la = na_ - p - s, lb = nb - p - s;
    size_t *ta = malloc((MAX_TOKENS + 1) * sizeof *ta), *tb = malloc((MAX_TOKENS + 1) * sizeof *tb);
    uint16_t *L = NULL;
    if (!ta || !tb) {
        rc = PS_ENOMEM;
        goto out;
    }
    size_t ka = tokens_of(ma, la, ta), kb = tokens_of(mb, lb, tb);
    if (ka > MAX_TOKENS || kb > MAX_TOKENS || !ka || !kb) {
        rc |= segs_add(sa, 1, p, la) | segs_add(sb, 1, p, lb);
    } else {
        size_t w = kb + 1;
        L = calloc((ka + 1) * w, sizeof *L);
        if (!L) {
            rc = PS_ENOMEM;
            goto out;
        }
#define TOKEQ(i, j) (ta[(i) + 1] - ta[i] == tb[(j) + 1] - tb[j] && !memcmp(ma + ta[i], mb + tb[j], ta[(i) + 1] - ta[i]))
        for (size_t i = ka; i-- > 0;)
            for (size_t j = kb; j-- > 0;)
                L[i * w + j] = TOKEQ(i, j) ? (uint16_t)(L[(i + 1) * w + j + 1] + 1)
                               : L[(i + 1) * w + j] >= L[i * w + j + 1] ? L[(i + 1) * w + j]
                                                                        : L[i * w + j + 1];
        size_t i = 0, j = 0;
        while (i < ka || j < kb) {
            if (i < ka && j < kb && TOKEQ(i, j)) {
                rc |= segs_add(sa, 0, p + ta[i], ta[i + 1] - ta[i]);
                rc |= segs_add(sb, 0, p + tb[j], tb[j + 1] - tb[j]);
                i++, j++;
            } else if (i < ka && (j == kb || L[(i + 1) * w + j] >= L[i * w + j + 1])) {
                rc |= segs_add(sa, 1, p + ta[i], ta[i + 1] - ta[i]);
                i++;
            } else {
                rc |= segs_add(sb, 1, p + tb[j], tb[j + 1] - tb[j]);
                j++;
            }
        }
#undef TOKEQ
    }
    rc |= segs_add(sa, 0, na_ - s, s) | segs_add(sb, 0, nb - s, s);
out:
    free(ta);
    free(tb);
    free(L);
    return rc ? PS_ENOMEM : 0;
}

/* One side of a diff, with long unchanged runs elided and at most
 * TEXT_BUDGET source bytes shown. */
static void put_side(ps_html *h, const char *s, size_t n, const segs *sg, const char *tag)
{
    size_t budget = TEXT_BUDGET;
    ps_html_raw(h, "<pre class=\"tx\">");
    for (size_t i = 0; i < sg->n; i++) {
        const seg *g = &sg->v[i];
        if (budget == 0) {
            ps_html_printf(h, "<span class=\"el\">\xE2\x80\xA6 (%zu more bytes not shown)</span>",
                           n - g->off);
            break;
        }
        const char *p = s + g->off;
        if (g->kind == 0) {
            if (g->len > 240) {
                /* keep context next to changes only */
                size_t head = i > 0 ? ps_utf8_cut(p, g->len, 90) : 0;
                size_t tail_max = i + 1 < sg->n ? 90 : 0;
                size_t tstart = g->len - tail_max;
                while (tstart < g->len && ((unsigned char)p[tstart] & 0xC0) == 0x80)
                    tstart++;
                ps_html_textn(h, p, head);
                ps_html_printf(h, "<span class=\"el\">\xE2\x80\xA6 %zu unchanged bytes \xE2\x80\xA6</span>",
                               tstart - head);
                ps_html_textn(h, p + tstart, g->len - tstart);
                budget = budget > 200 ? budget - 200 : 0;
            } else {
                size_t k = ps_utf8_cut(p, g->len, budget);
                ps_html_textn(h, p, k);
                budget -= k;
                if (k < g->len) {
                    ps_html_printf(h, "<span class=\"el\">\xE2\x80\xA6 (%zu more bytes not shown)</span>",
                                   n - g->off - k);
                    break;
                }
            }
        } else {
            size_t k = ps_utf8_cut(p, g->len, budget);
            ps_html_printf(h, "<%s>", tag);
            ps_html_textn(h, p, k);
            ps_html_printf(h, "</%s>", tag);
            budget -= k;
            if (k < g->len) {
                ps_html_printf(h, "<span class=\"el\">\xE2\x80\xA6 (%zu more bytes not shown)</span>",
                               n - g->off - k);
                break;
            }
        }
    }
    ps_html_raw(h, "</pre>");
}

static void put_plain(ps_html *h, const char *s, size_t n, const char *tag)
{
    ps_html_raw(h, "<pre class=\"tx\">");
    if (tag)
        ps_html_printf(h, "<%s>", tag);
    bool cut = ps_html_text_capped(h, s, n, TEXT_BUDGET);
    if (tag)
        ps_html_printf(h, "</%s>", tag);
    if (cut)
        ps_html_printf(h, "<span class=\"el\"> (%zu bytes in all)</span>", n);
    ps_html_raw(h, "</pre>");
}

static void before_after(ps_html *h, const char *field, json_t *before, json_t *after)
{
    size_t nb = 0, na_ = 0;
    const char *b = jstr(before, &nb), *a = jstr(after, &na_);
    ps_html_printf(h, "<div class=\"fl\">%s</div>", field);
    if (!b)
        ps_html_raw(h, "<pre class=\"tx\"><span class=\"na\">not available</span></pre>");
    if (!a) {
        if (b)
            put_plain(h, b, nb, NULL);
        ps_html_raw(h, "<pre class=\"tx\"><span class=\"na\">no cleaned text (not kept)</span></pre>");
        return;
    }
    if (!b) {
        put_plain(h, a, na_, NULL);
        return;
    }
    if (!na_ && nb) {
        put_plain(h, b, nb, "del");
        ps_html_raw(h, "<pre class=\"tx\"><span class=\"el\">(empty after cleaning)</span></pre>");
        return;
    }
    if (nb == na_ && !memcmp(a, b, nb)) {
        put_plain(h, b, nb, NULL);
        ps_html_raw(h, "<pre class=\"tx\"><span class=\"el\">(unchanged)</span></pre>");
        return;
    }
    segs sa = {0}, sb = {0};
    if (diff(b, nb, a, na_, &sa, &sb)) {
        put_plain(h, b, nb, "del");
        put_plain(h, a, na_, "ins");
    } else {
        put_side(h, b, nb, &sa, "del");
        put_side(h, a, na_, &sb, "ins");
    }
    free(sa.v);
    free(sb.v);
}

static void examples(page *pg)
{
    ps_html *h = &pg->h;
    json_t *ex = jpath(pg->r, "paired", "examples", NULL);
    ps_html_raw(h, "<section id=\"examples\"><h2>Records most changed by cleaning: before \xE2\x86\x92 after</h2>");
    if (!jget(pg->r, "paired") || json_is_null(jget(pg->r, "paired"))) {
        ps_html_raw(h, "<p class=\"na\">not available (a comparison of two statistics files has no "
                       "before/after records)</p></section>");
        return;
    }
    if (!json_is_array(ex) || !json_array_size(ex)) {
        ps_html_raw(h, json_is_array(ex) ? "<p>No record was changed by cleaning.</p></section>"
                                         : "<p class=\"na\">not available</p></section>");
        return;
    }
    size_t n = json_array_size(ex), shown = n < MAX_EXAMPLES ? n : MAX_EXAMPLES;
    ps_html_printf(h, "<p class=\"mu\">The %zu record%s with the largest change (of %zu in the report; at most %d "
                      "are shown). Removed text is <del>struck through in red</del>, added text is <ins>marked in green</ins>; "
                      "long unchanged stretches are elided.</p>",
                   shown, shown == 1 ? "" : "s", n, MAX_EXAMPLES);
    for (size_t i = 0; i < shown; i++) {
        json_t *e = json_array_get(ex, i);
        ps_html_printf(h, "<article class=\"ex\"><h3>%zu. ", i + 1);
        size_t sl;
        const char *s;
        if ((s = jstr(jget(e, "id"), &sl)) != NULL) {
            ps_html_raw(h, "id <span class=\"mono\">");
            ps_html_text_capped(h, s, sl, CAP_SHORT);
            ps_html_raw(h, "</span> ");
        }
        ps_html_raw(h, "<span class=\"mu\">");
        if ((s = jstr(jget(e, "source"), &sl)) != NULL) {
            ps_html_raw(h, "\xC2\xB7 ");
            ps_html_text_capped(h, s, sl, CAP_SHORT);
        }
        ps_html_raw(h, " \xC2\xB7 label ");
        json_t *lab = jget(e, "label");
        if (jstr(lab, NULL))
            put_val(h, lab, CAP_SHORT);
        else
            ps_html_raw(h, "(none)");
        const char *oc = jstr(jget(e, "outcome"), &sl);
        if (oc) {
            ps_html_raw(h, " \xC2\xB7 ");
            ps_html_text_capped(h, oc, sl, 24);
        }
        if (jget(e, "reason") && !json_is_null(jget(e, "reason"))) {
            ps_html_raw(h, oc ? ": <b>" : " \xC2\xB7 rejected: <b>");
            put_val(h, jget(e, "reason"), CAP_SHORT);
            ps_html_raw(h, "</b>");
        }
        if (jstr(jget(e, "rule"), NULL)) {
            ps_html_raw(h, " \xC2\xB7 rule <span class=\"mono\">");
            put_val(h, jget(e, "rule"), CAP_SHORT);
            ps_html_raw(h, "</span>");
        }
        static const char *const DK[] = {"question_delta", "sql_delta"};
        static const char *const DN[] = {"question", "sql"};
        for (int q = 0; q < 2; q++) {
            double dv;
            if (jnum(jget(e, DK[q]), &dv) && dv != 0) {
                ps_html_printf(h, " \xC2\xB7 %s %s", DN[q], dv > 0 ? "+" : "");
                ps_html_num(h, dv, 6);
                ps_html_raw(h, " chars");
            }
        }
        json_t *ch = jget(e, "relative_change") ? jget(e, "relative_change") : jget(e, "change");
        if (ch && !json_is_null(ch)) {
            double v;
            ps_html_raw(h, " \xC2\xB7 change ");
            if (jnum(ch, &v))
                ps_html_pct(h, v);
            else
                put_val(h, ch, CAP_SHORT);
        }
        ps_html_raw(h, "</span></h3><div class=\"pair\"><div></div><div class=\"hd\">before (raw)</div>"
                       "<div class=\"hd\">after (cleaned)</div>");
        before_after(h, "question", jget(e, "question_before"), jget(e, "question_after"));
        before_after(h, "sql", jget(e, "sql_before"), jget(e, "sql_after"));
        ps_html_raw(h, "</div></article>");
    }
    ps_html_raw(h, "</section>");
}

/* ---- lengths --------------------------------------------------------------- */

/* A length distribution as intervals [lo, hi) with counts (hi may be
 * infinite), read from any of the shapes a report may hold:
 *   LEN {"hist": [[bin, count], ...]}  sparse fixed bins (docs/REPORT.md)
 *   [[bin, count], ...]                the same, bare (paired shrink/grow)
 *   {"bins": [edges], "counts": [...]} explicit edges */
typedef struct ival {
    double lo, hi, n;
} ival;

typedef struct dist {
    ival *v;
    size_t n, cap;
    double total;
} dist;

static void dist_push(dist *d, double lo, double hi, double n, int *err)
{
    if (!(n > 0) || !isfinite(n) || !(hi >= lo) || !isfinite(lo))
        return;
    if (d->n == d->cap) {
        size_t nc = d->cap ? d->cap * 2 : 64;
        ival *nv = realloc(d->v, nc * sizeof *nv);
        if (!nv) {
            *err = PS_ENOMEM;
            return;
        }
        d->v = nv;
        d->cap = nc;
    }
    d->v[d->n++] = (ival){lo, hi, n};
    d->total += n;
}

static int cmp_ival(const void *a, const void *b)
{
    const ival *x = a, *y = b;
    return (x->lo > y->lo) - (x->lo < y->lo);
}

/* Adds `j` to d; sign -1 mirrors the values (a shrink histogram). */
static void dist_add(dist *d, json_t *j, int sign, int *err)
{
    json_t *sparse = json_is_array(j) ? j : jget(j, "hist");
    if (json_is_array(sparse)) {
        size_t n = json_array_size(sparse);
        for (size_t i = 0; i < n && i < 100000; i++) {
            json_t *e = json_array_get(sparse, i);
            double b, c;
            if (!json_is_array(e) || json_array_size(e) != 2 || !jnum(json_array_get(e, 0), &b) ||
                !jnum(json_array_get(e, 1), &c) || b < 0 || b >= PS_VBINS || b != floor(b))
                continue;
            double lo = ps_vbin_lo((uint32_t)b);
            double hi = (uint32_t)b == PS_VBIN_OVERFLOW ? INFINITY : (double)ps_vbin_hi((uint32_t)b);
            if (sign < 0)
                dist_push(d, hi == INFINITY ? -INFINITY : -hi, -lo, c, err);
            else
                dist_push(d, lo, hi, c, err);
        }
    } else {
        json_t *be = jget(j, "bins"), *co = jget(j, "counts");
        size_t ne = json_array_size(be), nc = json_array_size(co);
        if (!json_is_array(be) || !json_is_array(co) || !nc || nc > MAX_BINS ||
            (ne != nc && ne != nc + 1))
            return;
        for (size_t i = 0; i < nc; i++) {
            double lo, hi = INFINITY, c;
            if (!jnum(json_array_get(be, i), &lo) || !jnum(json_array_get(co, i), &c))
                continue;
            if (i + 1 < ne && !jnum(json_array_get(be, i + 1), &hi))
                continue;
            if (sign < 0)
                dist_push(d, hi == INFINITY ? -INFINITY : -hi, -lo, c, err);
            else
                dist_push(d, lo, hi, c, err);
        }
    }
    if (d->n)
        qsort(d->v, d->n, sizeof *d->v, cmp_ival);
}

/* The upper end of the interval where the cumulative share reaches q. */
static double dist_q(const dist *d, double q)
{
    double need = q * d->total, c = 0;
    for (size_t i = 0; i < d->n; i++) {
        c += d->v[i].n;
        if (c >= need) {
            const ival *v = &d->v[i];
            return isfinite(v->hi) ? v->hi : v->lo * 1.25 + 1;
        }
    }
    return d->n ? d->v[d->n - 1].lo + 1 : 1;
}

static double nice_step(double raw)
{
    if (!(raw > 1))
        return 1;
    double mag = pow(10.0, floor(log10(raw)));
    double f = raw / mag;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
}

/* Spreads d over display bins [x0 + i*w, x0 + (i+1)*w), i < nb (counts),
 * values beyond go to the end bins (`clamp`) or to counts[nb] (overflow). */
static void dist_rebin(const dist *d, double x0, double w, size_t nb, double *counts, bool clamp)
{
    double x1 = x0 + w * (double)nb;
    for (size_t i = 0; i < d->n; i++) {
        const ival *v = &d->v[i];
        double lo = v->lo, hi = v->hi;
        if (!isfinite(hi) || !isfinite(lo) || hi <= lo) {
            double at = isfinite(lo) ? lo : hi;
            if (at >= x1 || !isfinite(at))
                counts[clamp ? nb - 1 : nb] += v->n;
            else if (at < x0)
                counts[0] += v->n;
            else
                counts[(size_t)((at - x0) / w) < nb ? (size_t)((at - x0) / w) : nb - 1] += v->n;
            continue;
        }
        double width = hi - lo;
        if (lo < x0) { /* below the axis (clamped only) */
            double part = v->n * (fmin(hi, x0) - lo) / width;
            counts[0] += part;
            if (hi <= x0)
                continue;
        }
        if (hi > x1) {
            double part = v->n * (hi - fmax(lo, x1)) / width;
            counts[clamp ? nb - 1 : nb] += part;
            if (lo >= x1)
                continue;
        }
        double a = fmax(lo, x0), b = fmin(hi, x1);
        size_t ia = (size_t)((a - x0) / w);
        for (size_t k = ia; k < nb; k++) {
            double s0 = x0 + w * (double)k, s1 = s0 + w;
            if (s0 >= b)
                break;
            double ov = fmin(b, s1) - fmax(a, s0);
            if (ov > 0)
                counts[k] += v->n * ov / width;
        }
    }
}

typedef struct chart_in {
    const char *name;
    json_t *len;   /* LEN, sparse array or bins/counts */
    json_t *neg;   /* signed charts: the shrink histogram (mirrored) */
    int style;
} chart_in;

#define DISPLAY_BINS 48

static void put_stat_cell(ps_html *h, json_t *len, const char *k, bool one_decimal)
{
    double v;
    ps_html_raw(h, "<td class=\"n\">");
    if (jnum(jget(len, k), &v))
        ps_html_num(h, one_decimal ? round(v * 10) / 10 : v, 6);
    else
        ps_html_raw(h, "<span class=\"na\">n/a</span>");
    ps_html_raw(h, "</td>");
}

/* One figure: the chart and a caption table. Signed charts (length
 * changes) get a symmetric axis and no LEN statistics. */
static void chart_marked(page *pg, const char *id, const char *title, const char *xlabel, const chart_in *in,
                         size_t n, bool signed_axis, const char *caption, json_t *marks, const char *marks_name);

static void chart(page *pg, const char *id, const char *title, const char *xlabel, const chart_in *in,
                  size_t n, bool signed_axis, const char *caption)
{
    chart_marked(pg, id, title, xlabel, in, n, signed_axis, caption, NULL, NULL);
}

/* `marks`: a JSON array of values drawn as vertical lines (inclusive upper
 * bounds: drawn at value + 1, the edge after them). */
static void chart_marked(page *pg, const char *id, const char *title, const char *xlabel, const chart_in *in,
                         size_t n, bool signed_axis, const char *caption, json_t *marks, const char *marks_name)
{
    double mk[64];
    size_t nmk = 0;
    for (size_t i = 0; i < json_array_size(marks) && nmk < 64; i++)
        if (jnum(json_array_get(marks, i), &mk[nmk]))
            mk[nmk] += 1, nmk++;
    ps_html *h = &pg->h;
    dist d[3] = {{0}, {0}, {0}};
    double *cnt[3] = {NULL, NULL, NULL}, *edges = NULL;
    ps_svg_series s[3];
    char desc[700] = "";
    int err = 0;
    if (n > 3)
        n = 3;
    double x = 1;
    for (size_t k = 0; k < n; k++) {
        dist_add(&d[k], in[k].len, 1, &err);
        if (in[k].neg)
            dist_add(&d[k], in[k].neg, -1, &err);
        if (d[k].total > 0) {
            double q = signed_axis ? fmax(fabs(dist_q(&d[k], 0.005)), fabs(dist_q(&d[k], 0.995)))
                                   : fmax(dist_q(&d[k], 0.99), 1.5 * dist_q(&d[k], 0.5));
            if (q > x)
                x = q;
        }
    }
    double w = nice_step(x * 1.05 / (signed_axis ? DISPLAY_BINS / 2 : DISPLAY_BINS));
    size_t half = (size_t)ceil(x * 1.05 / w);
    if (half < 1)
        half = 1;
    size_t nb = signed_axis ? 2 * half : half;
    double x0 = signed_axis ? -w * (double)half : 0;
    edges = malloc((nb + 1) * sizeof *edges);
    for (size_t k = 0; k < n && edges; k++)
        cnt[k] = calloc(nb + 1, sizeof(double));
    if (!edges || (n && !cnt[n - 1]) || err) {
        h->err = PS_ENOMEM;
        goto out;
    }
    for (size_t i = 0; i <= nb; i++)
        edges[i] = x0 + w * (double)i;
    size_t dl = 0;
    for (size_t k = 0; k < n; k++) {
        dist_rebin(&d[k], x0, w, nb, cnt[k], signed_axis);
        bool overflow = !signed_axis && cnt[k][nb] > 0;
        s[k] = (ps_svg_series){in[k].name, edges, overflow ? nb + 1 : nb + 1, cnt[k],
                               overflow ? nb + 1 : nb, in[k].style};
        double c, m, p50, p90, mx;
        json_t *L = in[k].len;
        if (!signed_axis && (jnum(jget(L, "n"), &c) || jnum(jget(L, "count"), &c)) && jnum(jget(L, "mean"), &m) &&
            jnum(jget(L, "p50"), &p50) && jnum(jget(L, "p90"), &p90) && jnum(jget(L, "max"), &mx))
            snprintf(desc + dl, sizeof desc - dl, "%s: %.0f records, mean %.1f, median %.0f, p90 %.0f, max %.0f. ",
                     in[k].name, c, m, p50, p90, mx);
        else
            snprintf(desc + dl, sizeof desc - dl, "%s: %.0f records%s. ", in[k].name, d[k].total,
                     d[k].total > 0 ? "" : " (not available)");
        dl = strlen(desc);
    }
    /* an overflow bin shares the edges array: n_edges == n_counts marks it open */
    for (size_t k = 0; k < n; k++)
        if (!signed_axis && cnt[k][nb] > 0)
            s[k].n_edges = nb + 1, s[k].n_counts = nb + 1;
        else
            s[k].n_edges = nb + 1, s[k].n_counts = nb;
    ps_html_raw(h, "<figure>");
    ps_svg_histogram_marked(h, id, title, xlabel, desc, s, n, mk, nmk, marks_name);
    ps_html_raw(h, "<figcaption>");
    if (caption) {
        ps_html_raw(h, "<p>");
        ps_html_raw(h, caption); /* built from numbers by the caller */
        ps_html_raw(h, "</p>");
    } else {
        ps_html_raw(h, "<table><thead><tr><th></th><th class=\"n\">records</th><th class=\"n\">mean</th>"
                       "<th class=\"n\">p50</th><th class=\"n\">p90</th><th class=\"n\">p99</th>"
                       "<th class=\"n\">max</th></tr></thead><tbody>");
        for (size_t k = 0; k < n; k++) {
            json_t *L = in[k].len;
            ps_html_printf(h, "<tr><td><svg width=\"10\" height=\"10\" aria-hidden=\"true\"><rect class=\"s%d\" "
                              "x=\"1\" y=\"1\" width=\"8\" height=\"8\"/></svg> ", in[k].style % 3);
            ps_html_text(h, in[k].name);
            ps_html_raw(h, "</td>");
            put_stat_cell(h, L, jget(L, "n") ? "n" : "count", false);
            put_stat_cell(h, L, "mean", true);
            put_stat_cell(h, L, "p50", false);
            put_stat_cell(h, L, "p90", false);
            put_stat_cell(h, L, "p99", false);
            put_stat_cell(h, L, "max", false);
            ps_html_raw(h, "</tr>");
        }
        ps_html_raw(h, "</tbody></table>");
    }
    ps_html_raw(h, "</figcaption></figure>");
out:
    for (size_t k = 0; k < 3; k++) {
        free(d[k].v);
        free(cnt[k]);
    }
    free(edges);
}

/* The paired change of one field: a signed chart of the records whose
 * length changed, and how many did not. */
static void change_chart(page *pg, const char *id, const char *title, json_t *ch)
{
    ps_html cap = {0};
    double zero = 0, shr = 0, gro = 0;
    bool have = jnum(jget(ch, "zero"), &zero);
    json_t *parts[2] = {jget(ch, "shrink"), jget(ch, "grow")};
    double *sum[2] = {&shr, &gro};
    for (int i = 0; i < 2; i++) {
        json_t *a = json_is_array(parts[i]) ? parts[i] : jget(parts[i], "hist");
        for (size_t k = 0; k < json_array_size(a); k++) {
            double c;
            if (jnum(json_array_get(json_array_get(a, k), 1), &c) && c > 0)
                *sum[i] += c;
        }
    }
    double all = zero + shr + gro;
    if (have && all > 0) {
        ps_html_raw(&cap, "Of ");
        ps_html_num(&cap, all, 6);
        ps_html_raw(&cap, " kept records, <b>");
        ps_html_num(&cap, zero, 6);
        ps_html_raw(&cap, "</b> (");
        ps_html_pct(&cap, zero / all);
        ps_html_raw(&cap, ") kept their length; <b>");
        ps_html_num(&cap, shr, 6);
        ps_html_raw(&cap, "</b> got shorter and <b>");
        ps_html_num(&cap, gro, 6);
        ps_html_raw(&cap, "</b> longer (the chart shows these, left shorter, right longer).");
    } else
        ps_html_raw(&cap, "<span class=\"na\">counts not available</span>");
    if (cap.err)
        pg->h.err = cap.err;
    chart_in c[] = {{"records whose length changed", parts[1], parts[0], 1}};
    chart(pg, id, title, "characters after \xE2\x88\x92 before", c, 1, true, cap.b.data ? cap.b.data : "");
    ps_buf_free(&cap.b);
}

static void lengths(page *pg)
{
    ps_html *h = &pg->h;
    json_t *pts = jget(pg->r, "points");
    bool compare = !jget(pts, "raw") && (jget(pts, "baseline") || jget(pts, "current"));
    const char *an = compare ? "baseline" : "raw", *bn = compare ? "current" : "cleaned";
    json_t *A = jpath(pts, an, "lengths", NULL), *B = jpath(pts, bn, "lengths", NULL),
           *T = jpath(pts, "tokenized", "lengths", NULL);
    ps_html_raw(h, "<section id=\"lengths\"><h2>Lengths before and after</h2>"
                   "<p class=\"mu\">Each curve is a share of its own records, so distributions of different "
                   "sizes compare. Lengths are in characters (Unicode code points) or tokens; the last bar "
                   "(marked +) collects the long tail.</p><div class=\"charts\">");
    char t[96];
    snprintf(t, sizeof t, "Question length: %s vs %s", an, bn);
    chart_in q[] = {{an, jget(A, "question_chars"), NULL, 0}, {bn, jget(B, "question_chars"), NULL, 1}};
    chart(pg, "h-q", t, "characters", q, 2, false, NULL);
    snprintf(t, sizeof t, "SQL length: %s vs %s", an, bn);
    chart_in s[] = {{an, jget(A, "sql_chars"), NULL, 0}, {bn, jget(B, "sql_chars"), NULL, 1}};
    chart(pg, "h-s", t, "characters", s, 2, false, NULL);
    if (compare && !json_is_object(jget(A, "tokens")) && !json_is_object(jget(B, "tokens"))) {
        /* compared at a point without tokens */
    } else if (compare) {
        chart_in tk[] = {{an, jget(A, "tokens"), NULL, 0}, {bn, jget(B, "tokens"), NULL, 1}};
        chart(pg, "h-t", "Tokens per pair: baseline vs current", "tokens", tk, 2, false, NULL);
    } else if (json_is_object(jget(B, "tokens"))) {
        chart_in tk[] = {{"cleaned", jget(B, "tokens"), NULL, 1}, {"tokenized", jget(T, "tokens"), NULL, 2}};
        chart(pg, "h-t", "Tokens per pair: cleaned vs tokenized", "tokens", tk, 2, false, NULL);
    } else {
        chart_in tk[] = {{"tokenized", jget(T, "tokens"), NULL, 2}};
        json_t *pad = jpath(pts, "tokenized", "padding", NULL);
        chart_marked(pg, "h-t", "Tokens per pair ([CLS] question [SEP] sql [SEP], after truncation)", "tokens", tk,
                     1, false, NULL, jget(pad, "bounds"), "bucket bounds");
    }
    json_t *pch = jpath(pg->r, "paired", "change", NULL), *lc = jpath(pg->r, "paired", "length_change", NULL);
    if (pch) {
        change_chart(pg, "h-cq", "Question length change by cleaning", jget(pch, "question_chars"));
        change_chart(pg, "h-cs", "SQL length change by cleaning", jget(pch, "sql_chars"));
    } else if (lc) {
        chart_in cq[] = {{"change per record", jget(lc, "question"), NULL, 1}};
        chart(pg, "h-cq", "Question length change by cleaning", "characters after \xE2\x88\x92 before", cq, 1, true,
              "");
        chart_in cs[] = {{"change per record", jget(lc, "sql"), NULL, 1}};
        chart(pg, "h-cs", "SQL length change by cleaning", "characters after \xE2\x88\x92 before", cs, 1, true, "");
    }
    ps_html_raw(h, "</div></section>");
}

/* ---- labels ----------------------------------------------------------------- */

typedef struct lab {
    const char *name;
    size_t len;
    double in, kept, ret;
} lab;

static int cmp_by_count(const void *a, const void *b)
{
    const lab *x = a, *y = b;
    if (x->in != y->in)
        return x->in < y->in ? 1 : -1;
    size_t m = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->name, y->name, m);
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

static int cmp_by_ret(const void *a, const void *b)
{
    const lab *x = a, *y = b;
    if (x->ret != y->ret)
        return x->ret < y->ret ? -1 : 1;
    return cmp_by_count(a, b);
}

/* Retention against overall retention, coloured with the label_retention
 * thresholds (ratio of a label's retention to the overall one). */
typedef struct ret_levels {
    double overall, fail, warn;
    bool ok;
} ret_levels;

static int ret_level(const ret_levels *rl, const lab *l)
{
    if (!rl->ok || rl->overall <= 0)
        return 0;
    double ratio = l->ret / rl->overall;
    return ratio < rl->fail ? 2 : ratio < rl->warn ? 1 : 0;
}

/* The data of a label chart as a table (in a <details>, for screen
 * readers and exact numbers). */
static void retention_table(ps_html *h, const lab *v, size_t n)
{
    ps_html_raw(h, "<details><summary>as a table</summary><table><thead><tr><th>label</th><th class=\"n\">in</th>"
                   "<th class=\"n\">kept</th><th class=\"n\">retention</th></tr></thead><tbody>");
    for (size_t i = 0; i < n; i++) {
        ps_html_raw(h, "<tr><td>");
        ps_html_text_capped(h, v[i].name, v[i].len, CAP_SHORT);
        ps_html_raw(h, "</td><td class=\"n\">");
        ps_html_num(h, v[i].in, 6);
        ps_html_raw(h, "</td><td class=\"n\">");
        ps_html_num(h, v[i].kept, 6);
        ps_html_raw(h, "</td><td class=\"n\">");
        ps_html_pct(h, v[i].ret);
        ps_html_raw(h, "</td></tr>");
    }
    ps_html_raw(h, "</tbody></table></details>");
}

static void label_rows(ps_html *h, const lab *v, size_t n, ps_svg_bar *bars, char (*notes)[64], bool shares,
                       const ret_levels *rl)
{
    for (size_t i = 0; i < n; i++) {
        ps_html b = {0};
        if (shares) {
            ps_html_pct(&b, v[i].ret);
            ps_html_raw(&b, " \xC2\xB7 ");
            ps_html_num(&b, v[i].kept, 6);
            ps_html_raw(&b, "/");
            ps_html_num(&b, v[i].in, 6);
        } else {
            ps_html_num(&b, v[i].kept, 6);
            ps_html_raw(&b, "/");
            ps_html_num(&b, v[i].in, 6);
            ps_html_raw(&b, " \xC2\xB7 ");
            ps_html_pct(&b, v[i].ret);
        }
        /* &lt; may appear; notes are escaped again by the chart, so undo it */
        const char *t = b.b.data ? b.b.data : "";
        size_t o = 0;
        for (size_t k = 0; t[k] && o < 63;) {
            if (!strncmp(t + k, "&lt;", 4)) {
                notes[i][o++] = '<';
                k += 4;
            } else
                notes[i][o++] = t[k++];
        }
        notes[i][o] = '\0';
        if (b.err)
            h->err = b.err;
        ps_buf_free(&b.b);
        bars[i] = (ps_svg_bar){v[i].name, v[i].len, shares ? 1.0 : v[i].in, shares ? v[i].ret : v[i].kept,
                               notes[i], ret_level(rl, &v[i])};
    }
}

typedef struct lshare {
    const char *name;
    size_t len;
    double a, b; /* shares */
    double ra, rb;
} lshare;

static int cmp_lshare(const void *x, const void *y)
{
    const lshare *p = x, *q = y;
    double dp = fabs(p->b - p->a), dq = fabs(q->b - q->a);
    return (dp < dq) - (dp > dq);
}

/* Compare reports: the labels whose share moved most, baseline vs current. */
static void compare_labels(page *pg)
{
    ps_html *h = &pg->h;
    json_t *A = jpath(pg->r, "points", "baseline", "labels", NULL), *B = jpath(pg->r, "points", "current", "labels", NULL);
    if (!json_is_array(A) || !json_is_array(B)) {
        ps_html_raw(h, "<p class=\"na\">not available</p>");
        return;
    }
    size_t na_ = json_array_size(A), nb = json_array_size(B);
    lshare *v = calloc(na_ + nb + 1, sizeof *v);
    if (!v) {
        h->err = PS_ENOMEM;
        return;
    }
    double ta = 0, tb = 0;
    size_t n = 0, ia = 0, jb = 0;
    /* both lists are sorted by label (docs/REPORT.md): merge them */
    while (ia < na_ || jb < nb) {
        json_t *ea = ia < na_ ? json_array_get(A, ia) : NULL, *eb = jb < nb ? json_array_get(B, jb) : NULL;
        size_t la = 0, lb = 0;
        const char *sa = ea ? jstr(jget(ea, "label"), &la) : NULL, *sb = eb ? jstr(jget(eb, "label"), &lb) : NULL;
        double ra = 0, rb = 0;
        bool oka = sa && jnum(jget(ea, "records"), &ra) && ra >= 0;
        bool okb = sb && jnum(jget(eb, "records"), &rb) && rb >= 0;
        if (ea && !oka) {
            ia++;
            continue;
        }
        if (eb && !okb) {
            jb++;
            continue;
        }
        int c;
        if (!ea)
            c = 1;
        else if (!eb)
            c = -1;
        else {
            size_t m = la < lb ? la : lb;
            c = memcmp(sa, sb, m);
            if (!c)
                c = (la > lb) - (la < lb);
        }
        lshare *x = &v[n++];
        if (c <= 0) {
            x->name = sa;
            x->len = la;
            x->ra = ra;
            ta += ra;
            ia++;
        }
        if (c >= 0) {
            x->name = sb;
            x->len = lb;
            x->rb = rb;
            tb += rb;
            jb++;
        }
    }
    for (size_t i = 0; i < n; i++) {
        v[i].a = ta > 0 ? v[i].ra / ta : 0;
        v[i].b = tb > 0 ? v[i].rb / tb : 0;
    }
    qsort(v, n, sizeof *v, cmp_lshare);
    size_t top = n < TOP_LABELS ? n : TOP_LABELS;
    ps_html_printf(h, "<p class=\"mu\">%zu labels over both sides; the %zu whose share of records moved most.</p>", n, top);
    ps_html_raw(h, "<div class=\"tw\"><table><thead><tr><th>label</th><th class=\"n\">baseline records</th>"
                   "<th class=\"n\">baseline share</th><th class=\"n\">current records</th><th class=\"n\">current share</th>"
                   "<th class=\"n\">change (points)</th></tr></thead><tbody>");
    for (size_t i = 0; i < top; i++) {
        ps_html_raw(h, "<tr><td>");
        ps_html_text_capped(h, v[i].name, v[i].len, CAP_SHORT);
        ps_html_raw(h, "</td><td class=\"n\">");
        ps_html_num(h, v[i].ra, 6);
        ps_html_raw(h, "</td><td class=\"n\">");
        ps_html_pct(h, v[i].a);
        ps_html_raw(h, "</td><td class=\"n\">");
        ps_html_num(h, v[i].rb, 6);
        ps_html_raw(h, "</td><td class=\"n\">");
        ps_html_pct(h, v[i].b);
        ps_html_printf(h, "</td><td class=\"n\">%+.2f</td></tr>", 100 * (v[i].b - v[i].a));
    }
    ps_html_raw(h, "</tbody></table></div>");
    free(v);
}

static void labels(page *pg)
{
    ps_html *h = &pg->h;
    bool cmp_mode = !jpath(pg->r, "paired", "labels", NULL) && !jpath(pg->r, "paired", "retention", "labels", NULL) &&
                    jpath(pg->r, "points", "baseline", NULL);
    ps_html_raw(h, cmp_mode ? "<section id=\"labels\"><h2>Labels: shares, baseline vs current</h2>"
                            : "<section id=\"labels\"><h2>Labels: counts and retention</h2>");
    json_t *arr = jpath(pg->r, "paired", "labels", NULL);
    const char *in_key = "records_in";
    if (!json_is_array(arr)) {
        arr = jpath(pg->r, "paired", "retention", "labels", NULL);
        in_key = "in";
    }
    json_t *rawc = jpath(pg->r, "points", "raw", "labels", "counts", NULL);
    json_t *clc = jpath(pg->r, "points", "cleaned", "labels", "counts", NULL);
    size_t cap = json_is_array(arr) ? json_array_size(arr) : json_is_object(rawc) ? json_object_size(rawc) : 0;
    lab *v = cap ? calloc(cap, sizeof *v) : NULL;
    size_t n = 0;
    const char *src = "paired retention";
    if (cap && !v) {
        h->err = PS_ENOMEM;
        return;
    }
    if (json_is_array(arr)) {
        for (size_t i = 0; i < cap; i++) {
            json_t *e = json_array_get(arr, i);
            lab l = {0};
            double x;
            if (!jnum(jget(e, in_key), &l.in) || !jnum(jget(e, "kept"), &l.kept) || l.in < 0 || l.kept < 0)
                continue;
            l.name = jstr(jget(e, "label"), &l.len);
            if (!l.name) {
                l.name = "(unlabeled)";
                l.len = strlen(l.name);
            }
            l.ret = jnum(jget(e, "retention"), &x) ? x : l.in > 0 ? l.kept / l.in : 1.0;
            v[n++] = l;
        }
    } else if (json_is_object(rawc)) {
        src = "raw and cleaned label counts";
        const char *k;
        json_t *val;
        json_object_foreach(rawc, k, val)
        {
            lab l = {k, strlen(k), 0, 0, 0};
            if (!jnum(val, &l.in) || l.in < 0)
                continue;
            if (!jnum(jget(clc, k), &l.kept))
                l.kept = 0;
            l.ret = l.in > 0 ? l.kept / l.in : 1.0;
            v[n++] = l;
        }
    }
    if (!n) {
        free(v);
        compare_labels(pg);
        ps_html_raw(h, "</section>");
        return;
    }
    size_t top = n < TOP_LABELS ? n : TOP_LABELS, worst = n < WORST_LABELS ? n : WORST_LABELS;
    ps_html_printf(h, "<p class=\"mu\">%zu labels (from the %s). ", n, src);
    if (n > TOP_LABELS)
        ps_html_printf(h, "Shown: the top %d by raw count, and the worst %d by retention.</p>", TOP_LABELS,
                       WORST_LABELS);
    else
        ps_html_raw(h, "All are shown.</p>");
    ps_svg_bar *bars = calloc(top + worst, sizeof *bars);
    char(*notes)[64] = calloc(top + worst, sizeof *notes);
    if (!bars || !notes) {
        h->err = PS_ENOMEM;
        goto out;
    }
    qsort(v, n, sizeof *v, cmp_by_count);
    ret_levels rl = {0};
    json_t *pr = jpath(pg->r, "paired", "retention", NULL);
    rl.ok = (jnum(pr, &rl.overall) || jnum(jget(pr, "overall"), &rl.overall)) &&
            jnum(jpath(pg->r, "thresholds", "label_retention", NULL), &rl.fail);
    if (rl.ok && !jnum(jpath(pg->r, "thresholds", "label_retention_warn", NULL), &rl.warn))
        rl.warn = rl.fail;
    if (rl.ok) {
        ps_html_raw(h, "<p class=\"mu\">Bars are <span style=\"color:#cf222e;font-weight:650\">red</span> where a "
                       "label kept less than ");
        ps_html_num(h, rl.fail, 3);
        ps_html_raw(h, " \xC3\x97 the overall retention (");
        ps_html_pct(h, rl.overall);
        ps_html_raw(h, "), <span style=\"color:#9a6700;font-weight:650\">amber</span> below ");
        ps_html_num(h, rl.warn, 3);
        ps_html_raw(h, " \xC3\x97 (the label_retention thresholds; the check judges only labels with enough "
                       "records).</p>");
    }
    ps_html_raw(h, "<div class=\"charts\"><figure>");
    label_rows(h, v, top, bars, notes, false, &rl);
    char title[96], desc[160];
    snprintf(title, sizeof title, n > TOP_LABELS ? "Top %zu labels by raw count" : "All %zu labels by raw count", top);
    snprintf(desc, sizeof desc,
             "For each label, records in the raw input (light bar) and records kept after cleaning (dark bar), "
             "with kept/in and the retention share.");
    ps_svg_bars(h, "b-top", title, desc, "records in (raw)", "kept after cleaning", bars, top, false);
    retention_table(h, v, top);
    ps_html_raw(h, "</figure><figure>");
    qsort(v, n, sizeof *v, cmp_by_ret);
    label_rows(h, v, worst, bars + top, notes + top, true, &rl);
    snprintf(title, sizeof title, n > WORST_LABELS ? "Worst %zu labels by retention" : "Retention of all %zu labels",
             worst);
    snprintf(desc, sizeof desc, "For each label, the share of its raw records kept after cleaning (dark bar, "
                                "full width is 100%%), lowest first.");
    ps_svg_bars(h, "b-ret", title, desc, "100% of the label's records", "kept share", bars + top, worst, true);
    retention_table(h, v, worst);
    ps_html_raw(h, "</figure></div>");
out:
    ps_html_raw(h, "</section>");
    free(bars);
    free(notes);
    free(v);
}

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

static void rejections(page *pg)
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
            if (jstr(jget(e, "rule"), NULL))
                put_field_text(h, e, "rule", CAP_SHORT);
            else
                ps_html_raw(h, "<span class=\"mu\">\xE2\x80\x94</span>");
            ps_html_raw(h, "</td><td class=\"n\">");
            put_count(h, jget(e, "count"));
            ps_html_raw(h, "</td><td class=\"n\">");
            if (have_in && jnum(jget(e, "count"), &c))
                ps_html_pct(h, c / in);
            else
                na(h);
            ps_html_raw(h, "</td></tr>");
        }
        ps_html_raw(h, "</tbody></table>");
        if (n > MAX_ROWS)
            ps_html_printf(h, "<p class=\"mu\">%zu more not shown.</p>", n - MAX_ROWS);
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
            if (have_in)
                ps_html_pct(h, v[i].v / in);
            else
                na(h);
            ps_html_raw(h, "</td></tr>");
        }
        ps_html_raw(h, "</tbody></table>");
        if (m > MAX_ROWS)
            ps_html_printf(h, "<p class=\"mu\">%zu more reasons not shown.</p>", m - MAX_ROWS);
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
                       "<th class=\"n\">records changed</th><th class=\"n\">share of kept</th></tr></thead><tbody>"
                       "<tr><td>question</td><td class=\"n\">");
        ps_html_num(h, cq, 6);
        ps_html_raw(h, "</td><td class=\"n\">");
        if (kept > 0)
            ps_html_pct(h, cq / kept);
        else
            na(h);
        ps_html_raw(h, "</td></tr><tr><td>sql</td><td class=\"n\">");
        ps_html_num(h, cs, 6);
        ps_html_raw(h, "</td><td class=\"n\">");
        if (kept > 0)
            ps_html_pct(h, cs / kept);
        else
            na(h);
        ps_html_raw(h, "</td></tr></tbody></table>");
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
        if (n > MAX_ROWS)
            ps_html_printf(h, "<p class=\"mu\">%zu more rules not shown.</p>", n - MAX_ROWS);
    } else if (json_is_array(rules))
        ps_html_raw(h, "<p>No user rules.</p>");
    else if (!jget(p, "rejected_by"))
        ps_html_raw(h, "<p class=\"na\">not available</p>");
    ps_html_raw(h, "</div></div></section>");
}

/* paired.rejected_by_input: which input each cause came from, and why,
 * with its first record ("bird/dev.json:#0: no field 'sql' or 'query'
 * (fields: ..., SQL, ...)"). Absent from reports written before it. */
static void rejections_by_input(page *pg)
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
            if (jstr(jget(e, K[k]), NULL))
                put_field_text(h, e, K[k], CAP_SHORT);
            else
                ps_html_raw(h, "<span class=\"mu\">\xE2\x80\x94</span>");
            ps_html_raw(h, "</td>");
        }
        ps_html_raw(h, "<td class=\"n\">");
        put_count(h, jget(e, "count"));
        ps_html_raw(h, "</td><td class=\"mono\">");
        if (jstr(jget(ex, "source"), NULL))
            put_field_text(h, ex, "source", CAP_SHORT);
        ps_html_raw(h, "</td><td>");
        if (jstr(jget(ex, "detail"), NULL))
            put_field_text(h, ex, "detail", CAP_TEXT);
        ps_html_raw(h, "</td></tr>");
    }
    ps_html_raw(h, "</tbody></table>");
    if (n > MAX_ROWS)
        ps_html_printf(h, "<p class=\"mu\">%zu more not shown.</p>", n - MAX_ROWS);
    ps_html_raw(h, "</section>");
}

static void health(page *pg)
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
            else if (x)
                put_val(h, x, 40);
            else
                ps_html_raw(h, "<span class=\"mu\">\xE2\x80\x94</span>");
        }
        ps_html_raw(h, "</td></tr>");
    }
    ps_html_raw(h, "</tbody></table></div>");
    if (more)
        ps_html_printf(h, "<p class=\"mu\">%zu more counters not shown.</p>", more);
    ps_html_raw(h, "</section>");
}

static void thresholds(page *pg)
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
        if (w)
            put_val(h, w, CAP_SHORT);
        else
            ps_html_raw(h, "<span class=\"mu\">\xE2\x80\x94</span>");
        ps_html_raw(h, "</td><td>");
        json_t *m = jget(modes, k);
        if (m)
            put_val(h, m, 16);
        else
            ps_html_raw(h, "<span class=\"mu\">\xE2\x80\x94</span>");
        ps_html_raw(h, "</td></tr>");
    }
    ps_html_raw(h, "</tbody></table></div>");
    if (skipped)
        ps_html_printf(h, "<p class=\"mu\">%zu more not shown.</p>", skipped);
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
    unk_words(&pg);
    checks_table(&pg);
    examples(&pg);
    lengths(&pg);
    labels(&pg);
    rejections(&pg);
    rejections_by_input(&pg);
    health(&pg);
    thresholds(&pg);
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
