/* report.html: overlaid length histograms (see html_page.h). */
#include "report/html_page.h"

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

void ps_rh_lengths(page *pg)
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
