/* report.html: per-label counts and retention (see html_page.h). */
#include "report/html_page.h"

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

/* Table cells of a label row: the label opens the row, numbers follow. */
static void label_cell(ps_html *h, const char *name, size_t len)
{
    ps_html_raw(h, "<tr><td>");
    ps_html_text_capped(h, name, len, CAP_SHORT);
}

static void num_cell(ps_html *h, double v)
{
    ps_html_raw(h, "</td><td class=\"n\">");
    ps_html_num(h, v, 6);
}

static void pct_cell(ps_html *h, double r)
{
    ps_html_raw(h, "</td><td class=\"n\">");
    ps_html_pct(h, r);
}

/* The data of a label chart as a table (in a <details>, for screen
 * readers and exact numbers). */
static void retention_table(ps_html *h, const lab *v, size_t n)
{
    ps_html_raw(h, "<details><summary>as a table</summary><table><thead><tr><th>label</th><th class=\"n\">in</th>"
                   "<th class=\"n\">kept</th><th class=\"n\">retention</th></tr></thead><tbody>");
    for (size_t i = 0; i < n; i++) {
        label_cell(h, v[i].name, v[i].len);
        num_cell(h, v[i].in);
        num_cell(h, v[i].kept);
        pct_cell(h, v[i].ret);
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
        label_cell(h, v[i].name, v[i].len);
        num_cell(h, v[i].ra);
        pct_cell(h, v[i].a);
        num_cell(h, v[i].rb);
        pct_cell(h, v[i].b);
        ps_html_printf(h, "</td><td class=\"n\">%+.2f</td></tr>", 100 * (v[i].b - v[i].a));
    }
    ps_html_raw(h, "</tbody></table></div>");
    free(v);
}

void ps_rh_labels(page *pg)
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
