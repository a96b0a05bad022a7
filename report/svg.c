/* HTML escaping, number formatting and the two inline SVG charts of
 * report.html (an overlaid step histogram and horizontal bars). */
#include "report/svg.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- output ---------------------------------------------------------------- */

void ps_html_rawn(ps_html *h, const char *s, size_t n)
{
    if (!h->err && n && ps_buf_append(&h->b, s, n))
        h->err = PS_ENOMEM;
}

void ps_html_raw(ps_html *h, const char *s) { ps_html_rawn(h, s, strlen(s)); }

void ps_html_printf(ps_html *h, const char *fmt, ...)
{
    if (h->err)
        return;
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    ps_html_rawn(h, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if invalid. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t len;
    unsigned min;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        len = 2, min = 0x80;
    else if (c >= 0xE0 && c <= 0xEF)
        len = 3, min = 0x800;
    else if (c >= 0xF0 && c <= 0xF4)
        len = 4, min = 0x10000;
    else
        return 0;
    if (n < len)
        return 0;
    unsigned cp = c & (0x3F >> (len - 1));
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return len;
}

void ps_html_textn(ps_html *h, const char *s, size_t n)
{
    if (!s)
        return;
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, run = 0; /* run: start of bytes copied verbatim */
    while (i < n && !h->err) {
        unsigned c = p[i];
        const char *rep = NULL;
        size_t adv = 1;
        if (c >= 0x80) {
            adv = utf8_seq(p + i, n - i);
            if (!adv) {
                rep = "&#xFFFD;";
                adv = 1;
            }
        } else if (c == '&')
            rep = "&amp;";
        else if (c == '<')
            rep = "&lt;";
        else if (c == '>')
            rep = "&gt;";
        else if (c == '"')
            rep = "&quot;";
        else if (c == '\'')
            rep = "&#39;";
        else if (c == '\r')
            rep = " ";
        else if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7F)
            rep = "&#xFFFD;";
        if (rep) {
            ps_html_rawn(h, s + run, i - run);
            ps_html_raw(h, rep);
            run = i + adv;
        }
        i += adv;
    }
    if (run < n)
        ps_html_rawn(h, s + run, n - run);
}

void ps_html_text(ps_html *h, const char *s)
{
    if (s)
        ps_html_textn(h, s, strlen(s));
}

size_t ps_utf8_cut(const char *s, size_t n, size_t max)
{
    if (n <= max)
        return n;
    size_t k = max;
    while (k > 0 && ((unsigned char)s[k] & 0xC0) == 0x80)
        k--;
    return k;
}

bool ps_html_text_capped(ps_html *h, const char *s, size_t n, size_t max)
{
    size_t k = ps_utf8_cut(s, n, max);
    ps_html_textn(h, s, k);
    if (k < n) {
        ps_html_raw(h, "\xE2\x80\xA6");
        return true;
    }
    return false;
}

static void put_grouped(ps_html *h, unsigned long long v)
{
    char d[32];
    int n = snprintf(d, sizeof d, "%llu", v);
    char out[48];
    size_t o = 0;
    for (int i = 0; i < n; i++) {
        if (i && (n - i) % 3 == 0)
            out[o++] = ',';
        out[o++] = d[i];
    }
    ps_html_rawn(h, out, o);
}

void ps_html_num(ps_html *h, double v, int sig)
{
    if (!isfinite(v)) {
        ps_html_raw(h, "n/a");
        return;
    }
    if (v == floor(v) && fabs(v) < 1e15) {
        if (v < 0)
            ps_html_raw(h, "\xE2\x88\x92"); /* minus sign */
        put_grouped(h, (unsigned long long)fabs(v));
        return;
    }
    if (sig < 1 || sig > 17)
        sig = 4;
    char t[64];
    snprintf(t, sizeof t, "%.*g", sig, v);
    ps_html_raw(h, t);
}

void ps_html_pct(ps_html *h, double r)
{
    if (!isfinite(r)) {
        ps_html_raw(h, "n/a");
        return;
    }
    double p = r * 100.0;
    if (p > 0 && p < 0.1)
        ps_html_raw(h, "&lt;0.1%");
    else if (p > 99.9 && p < 100.0)
        ps_html_printf(h, "%.2f%%", floor(p * 100.0) / 100.0);
    else
        ps_html_printf(h, "%.1f%%", p);
}

/* ---- histogram ------------------------------------------------------------ */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Index of the first union edge >= v (the union is sorted). */
static size_t lower_bound(const double *u, size_t n, double v)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (u[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* A bin series made usable: n+1 finite, non-decreasing edges. */
typedef struct hseries {
    double *edges; /* n+1 */
    const double *counts;
    size_t n;
    double total;
    bool open_end;
    bool ok;
} hseries;

static void fmt_edge(char *t, size_t cap, double v)
{
    double a = fabs(v);
    if (a >= 1e6)
        snprintf(t, cap, "%.3gM", v / 1e6);
    else if (a >= 1e4)
        snprintf(t, cap, "%.3gk", v / 1e3);
    else if (v == floor(v))
        snprintf(t, cap, "%.0f", v);
    else
        snprintf(t, cap, "%.3g", v);
}

/* A "nice" axis maximum and step for values up to `m` (> 0). */
static void nice_axis(double m, double *top, double *step)
{
    double raw = m / 4.0;
    double mag = pow(10.0, floor(log10(raw)));
    double f = raw / mag;
    double nf = f <= 1 ? 1 : f <= 2 ? 2 : f <= 2.5 ? 2.5 : f <= 5 ? 5 : 10;
    *step = nf * mag;
    *top = ceil(m / *step - 1e-9) * *step;
    if (*top <= 0)
        *top = *step;
}

/* Opens an accessible chart: <svg> labelled by its <title> and <desc>. */
static void svg_open(ps_html *h, const char *id, const char *title, const char *desc, int W,
                     int H)
{
    ps_html_printf(h, "<svg class=\"chart\" viewBox=\"0 0 %d %d\" role=\"img\" aria-labelledby=\"", W, H);
    ps_html_text(h, id);
    ps_html_raw(h, "-t ");
    ps_html_text(h, id);
    ps_html_raw(h, "-d\"><title id=\"");
    ps_html_text(h, id);
    ps_html_raw(h, "-t\">");
    ps_html_text(h, title);
    ps_html_raw(h, "</title><desc id=\"");
    ps_html_text(h, id);
    ps_html_raw(h, "-d\">");
    ps_html_text(h, desc);
    ps_html_raw(h, "</desc>");
}

/* The union of every usable series' bin edges, each series' share of records
 * spread over the union's slots, and the span of slots drawn. Built by
 * hist_layout(); the drawing functions below only read it. */
typedef struct hlayout {
    hseries *hs; /* one per series */
    size_t n;
    double *uni; /* sorted distinct edges of the usable series */
    size_t nu;
    size_t nslots; /* nu - 1 */
    double *mass;  /* mass[k * nslots + j]: series k's share in union slot j */
    size_t lo, hi; /* the slots that hold anything: [lo, hi) */
    bool any;
    size_t group; /* union slots merged per bar, so that at most PS_SVG_MAX_SLOTS bars stand */
    size_t ng;    /* bars */
    double ymax;
    bool uneven;   /* the drawn slots are not all equally wide */
    bool open_end; /* the last edge is open ("120+") */
} hlayout;

static void hlayout_free(hlayout *L)
{
    if (L->hs)
        for (size_t k = 0; k < L->n; k++)
            free(L->hs[k].edges);
    free(L->hs);
    free(L->uni);
    free(L->mass);
}

/* Copies one series' bins into y, closing an open last bin with the width of
 * the one before it; y->ok says whether the series can be drawn. */
static int series_prepare(const ps_svg_series *x, hseries *y)
{
    if (!x->counts || !x->edges || x->n_counts == 0 || x->n_counts > 100000 ||
        (x->n_edges != x->n_counts + 1 && x->n_edges != x->n_counts))
        return 0;
    y->n = x->n_counts;
    y->counts = x->counts;
    y->edges = malloc((y->n + 1) * sizeof(double));
    if (!y->edges)
        return PS_ENOMEM;
    memcpy(y->edges, x->edges, x->n_edges * sizeof(double));
    if (x->n_edges == x->n_counts) {
        double w = y->n >= 2 ? y->edges[y->n - 1] - y->edges[y->n - 2] : 1.0;
        y->edges[y->n] = y->edges[y->n - 1] + (w > 0 ? w : 1.0);
        y->open_end = true;
    }
    y->ok = true;
    for (size_t i = 0; i <= y->n; i++)
        if (!isfinite(y->edges[i]) || (i && y->edges[i] < y->edges[i - 1]))
            y->ok = false;
    for (size_t i = 0; i < y->n && y->ok; i++) {
        if (!isfinite(y->counts[i]) || y->counts[i] < 0)
            y->ok = false;
        else
            y->total += y->counts[i];
    }
    if (!(y->ok && y->total > 0))
        y->ok = false;
    return 0;
}

/* The sorted, distinct edges of every usable series. */
static int union_edges(hlayout *L)
{
    size_t total_edges = 0;
    for (size_t k = 0; k < L->n; k++)
        if (L->hs[k].ok)
            total_edges += L->hs[k].n + 1;
    if (!total_edges)
        return 0;
    L->uni = malloc(total_edges * sizeof(double));
    if (!L->uni)
        return PS_ENOMEM;
    for (size_t k = 0; k < L->n; k++)
        if (L->hs[k].ok)
            for (size_t i = 0; i <= L->hs[k].n; i++)
                L->uni[L->nu++] = L->hs[k].edges[i];
    qsort(L->uni, L->nu, sizeof(double), cmp_double);
    size_t w = 0;
    for (size_t i = 0; i < L->nu; i++)
        if (!w || L->uni[i] != L->uni[w - 1])
            L->uni[w++] = L->uni[i];
    L->nu = w;
    return 0;
}

/* Spreads each series' share of a bin evenly over the union slots it covers,
 * so that series with different bins stand on one axis. */
static int slot_mass(hlayout *L)
{
    size_t nslots = L->nu >= 2 ? L->nu - 1 : 0;
    L->nslots = nslots;
    if (!nslots)
        return 0;
    L->mass = calloc(L->n * nslots, sizeof(double));
    if (!L->mass)
        return PS_ENOMEM;
    for (size_t k = 0; k < L->n; k++) {
        hseries *y = &L->hs[k];
        if (!y->ok)
            continue;
        for (size_t i = 0; i < y->n; i++) {
            size_t a = lower_bound(L->uni, L->nu, y->edges[i]);
            size_t b = lower_bound(L->uni, L->nu, y->edges[i + 1]);
            double share = y->counts[i] / y->total;
            if (b <= a) { /* zero-width bin: give it to the slot it starts */
                b = a + 1;
                if (b > nslots) {
                    a = nslots - 1;
                    b = nslots;
                }
            }
            for (size_t j = a; j < b; j++)
                L->mass[k * nslots + j] += share / (double)(b - a);
        }
    }
    return 0;
}

/* Series k's share in bar g (the union slots it merges). */
static double bar_value(const hlayout *L, size_t k, size_t g)
{
    double v = 0;
    for (size_t j = L->lo + g * L->group; j < L->lo + (g + 1) * L->group && j < L->hi; j++)
        v += L->mass[k * L->nslots + j];
    return v;
}

/* Trims to the slots that hold anything, merges them into at most
 * PS_SVG_MAX_SLOTS bars and finds the y maximum and the axis notes. */
static void layout_span(hlayout *L)
{
    size_t lo = L->nslots, hi = 0;
    for (size_t j = 0; j < L->nslots; j++)
        for (size_t k = 0; k < L->n; k++)
            if (L->mass[k * L->nslots + j] > 0) {
                if (j < lo)
                    lo = j;
                if (j + 1 > hi)
                    hi = j + 1;
            }
    L->lo = lo;
    L->hi = hi;
    L->any = lo < hi;
    size_t span = L->any ? hi - lo : 0;
    L->group = span > PS_SVG_MAX_SLOTS ? (span + PS_SVG_MAX_SLOTS - 1) / PS_SVG_MAX_SLOTS : 1;
    L->ng = L->any ? (span + L->group - 1) / L->group : 0;
    for (size_t k = 0; k < L->n && L->any; k++)
        for (size_t g = 0; g < L->ng; g++) {
            double v = bar_value(L, k, g);
            if (v > L->ymax)
                L->ymax = v;
        }
    const double *uni = L->uni;
    for (size_t j = lo + 1; L->any && j < hi; j++) {
        double w0 = uni[lo + 1] - uni[lo], w1 = uni[j + 1] - uni[j];
        if (fabs(w1 - w0) > 1e-9 * (fabs(w0) + 1))
            L->uneven = true;
    }
    for (size_t k = 0; k < L->n; k++)
        if (L->hs[k].ok && L->hs[k].open_end && L->any && L->hs[k].edges[L->hs[k].n] >= uni[hi])
            L->open_end = true;
}

static int hist_layout(hlayout *L, const ps_svg_series *s, size_t n)
{
    L->n = n;
    L->hs = calloc(n ? n : 1, sizeof *L->hs);
    if (!L->hs)
        return PS_ENOMEM;
    for (size_t k = 0; k < n; k++)
        if (series_prepare(&s[k], &L->hs[k]) < 0)
            return PS_ENOMEM;
    if (union_edges(L) < 0 || slot_mass(L) < 0)
        return PS_ENOMEM;
    layout_span(L);
    return 0;
}

/* Chart geometry: width, height and the plot's margins. */
enum { HW = 600, HH = 270, HML = 58, HMR = 14, HMT = 40, HMB = 50 };
static const double HPW = HW - HML - HMR, HPH = HH - HMT - HMB;

/* The legend, right-aligned on the title line: the markers, then the series
 * from last to first. */
static void draw_legend(ps_html *h, const ps_svg_series *s, const hlayout *L, size_t n_marks,
                        const char *marks_name)
{
    double x = HW - HMR;
    if (n_marks && marks_name) {
        size_t len = strlen(marks_name), cut = ps_utf8_cut(marks_name, len, 40);
        x -= 6.2 * (double)cut;
        ps_html_printf(h, "<text class=\"lg\" x=\"%.1f\" y=\"32\">", x);
        ps_html_text_capped(h, marks_name, len, 40);
        ps_html_raw(h, "</text>");
        x -= 18;
        ps_html_printf(h, "<line class=\"mk\" x1=\"%.1f\" x2=\"%.1f\" y1=\"23\" y2=\"34\"/>", x + 6, x + 6);
        x -= 10;
    }
    for (size_t k = L->n; k-- > 0;) {
        size_t len = s[k].name ? strlen(s[k].name) : 0;
        size_t cut = ps_utf8_cut(s[k].name ? s[k].name : "", len, 40);
        double tw = 6.2 * (double)cut + (L->hs[k].ok ? 0 : 6.2 * 17);
        x -= tw;
        ps_html_printf(h, "<text class=\"lg\" x=\"%.1f\" y=\"32\">", x);
        ps_html_text_capped(h, s[k].name ? s[k].name : "", len, 40);
        if (!L->hs[k].ok)
            ps_html_raw(h, " (not available)");
        ps_html_raw(h, "</text>");
        x -= 16;
        ps_html_printf(h, "<rect class=\"sw s%d\" x=\"%.1f\" y=\"23\" width=\"11\" height=\"11\"/>",
                       s[k].style % 3, x);
        x -= 14;
    }
}

/* Horizontal grid lines with their percentages; returns the axis top. */
static double draw_y_axis(ps_html *h, double ymax)
{
    double top, step;
    nice_axis(ymax, &top, &step);
    for (int t = 0; t * step <= top + 1e-12 && t < 12; t++) {
        double v = t * step;
        double y = HMT + HPH - HPH * v / top;
        ps_html_printf(h, "<line class=\"gr\" x1=\"%d\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\"/>", HML,
                       HML + HPW, y, y);
        ps_html_printf(h, "<text class=\"yt\" x=\"%d\" y=\"%.1f\">%.*f%%</text>", HML - 5, y + 4,
                       step * 100 < 1 ? (step * 100 < 0.1 ? 2 : 1) : 0, v * 100);
    }
    return top;
}

/* Each usable series as one step path over the bars. */
static void draw_series(ps_html *h, const ps_svg_series *s, const hlayout *L, double top)
{
    double gv[PS_SVG_MAX_SLOTS + 1];
    double gw = HPW / (double)L->ng;
    for (size_t k = 0; k < L->n; k++) {
        if (!L->hs[k].ok)
            continue;
        for (size_t g = 0; g < L->ng; g++)
            gv[g] = bar_value(L, k, g);
        ps_html_printf(h, "<path class=\"s%d\" d=\"M%.1f %.1f", s[k].style % 3, (double)HML, HMT + HPH);
        for (size_t g = 0; g < L->ng; g++) {
            double y = HMT + HPH - HPH * gv[g] / top;
            ps_html_printf(h, "L%.1f %.1fL%.1f %.1f", HML + gw * (double)g, y, HML + gw * (double)(g + 1), y);
        }
        ps_html_printf(h, "L%.1f %.1fZ\"/>", HML + HPW, HMT + HPH);
    }
}

/* Markers: a value's position inside its union slot, at most 64. */
static void draw_marks(ps_html *h, const hlayout *L, const double *marks, size_t n_marks)
{
    const double *uni = L->uni;
    double gw = HPW / (double)L->ng;
    for (size_t m = 0; m < n_marks && m < 64; m++) {
        double v = marks[m];
        if (!isfinite(v) || v < uni[L->lo] || v > uni[L->hi])
            continue;
        size_t j = lower_bound(uni, L->nu, v);
        if (j > L->lo && (j >= L->nu || uni[j] > v))
            j--;
        if (j >= L->hi)
            j = L->hi - 1;
        double span_w = uni[j + 1] - uni[j];
        double frac = span_w > 0 ? (v - uni[j]) / span_w : 0;
        double x = HML + gw * (((double)(j - L->lo) + frac) / (double)L->group);
        ps_html_printf(h, "<line class=\"mk\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%.0f\"/>", x, x, HMT,
                       HMT + HPH);
    }
}

/* x labels at bar boundaries (at most 9), the x axis title with its notes,
 * and the y axis title. */
static void draw_x_axis(ps_html *h, const hlayout *L, const char *xlabel)
{
    double gw = HPW / (double)L->ng;
    size_t every = (L->ng + 7) / 8;
    if (!every)
        every = 1;
    for (size_t g = 0; g <= L->ng; g += every) {
        size_t j = L->lo + g * L->group;
        if (j > L->hi)
            j = L->hi;
        char t[40];
        fmt_edge(t, sizeof t, L->uni[j]);
        double x = HML + gw * (double)g;
        ps_html_printf(h, "<line class=\"tk\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.0f\" y2=\"%.0f\"/>", x, x,
                       HMT + HPH, HMT + HPH + 4);
        ps_html_printf(h, "<text class=\"xt\" x=\"%.1f\" y=\"%.0f\">%s%s</text>", x, HMT + HPH + 16, t,
                       (L->open_end && j == L->hi) ? "+" : "");
    }
    ps_html_printf(h, "<text class=\"xl\" x=\"%.1f\" y=\"%d\">", HML + HPW / 2, HH - 8);
    ps_html_text(h, xlabel);
    if (L->uneven)
        ps_html_raw(h, " (bins of unequal width, drawn equally wide)");
    if (L->group > 1)
        ps_html_printf(h, " (%zu bins merged per bar)", L->group);
    ps_html_raw(h, "</text>");
    ps_html_printf(h, "<text class=\"yl\" transform=\"translate(13 %.1f) rotate(-90)\">share of records</text>",
                   HMT + HPH / 2);
}

void ps_svg_histogram_marked(ps_html *h, const char *id, const char *title, const char *xlabel,
                             const char *desc, const ps_svg_series *s, size_t n, const double *marks,
                             size_t n_marks, const char *marks_name)
{
    hlayout L = {0};
    if (hist_layout(&L, s, n) < 0) {
        h->err = PS_ENOMEM;
        hlayout_free(&L);
        return;
    }
    svg_open(h, id, title, desc, HW, HH);
    ps_html_printf(h, "<text class=\"ct\" x=\"%d\" y=\"16\">", HML);
    ps_html_text(h, title);
    ps_html_raw(h, "</text>");
    draw_legend(h, s, &L, n_marks, marks_name);
    ps_html_printf(h, "<rect class=\"pl\" x=\"%d\" y=\"%d\" width=\"%.0f\" height=\"%.0f\"/>", HML, HMT,
                   HPW, HPH);
    if (!L.any) {
        ps_html_printf(h, "<text class=\"nd\" x=\"%.1f\" y=\"%.1f\">no data</text></svg>",
                       HML + HPW / 2, HMT + HPH / 2);
    } else {
        double top = draw_y_axis(h, L.ymax);
        draw_series(h, s, &L, top);
        draw_marks(h, &L, marks, n_marks);
        draw_x_axis(h, &L, xlabel);
        ps_html_raw(h, "</svg>");
    }
    hlayout_free(&L);
}

/* ---- bars ------------------------------------------------------------------ */

void ps_svg_bars(ps_html *h, const char *id, const char *title, const char *desc,
                 const char *total_name, const char *part_name, const ps_svg_bar *rows,
                 size_t n, bool shares)
{
    enum { W = 600, ROW = 20, TOPM = 44, LABW = 180, NOTEW = 118 };
    const double bx = LABW + 8, bw = W - bx - NOTEW;
    int H = TOPM + (int)n * ROW + 8;
    double max = 0;
    for (size_t i = 0; i < n; i++)
        if (isfinite(rows[i].total) && rows[i].total > max)
            max = rows[i].total;
    svg_open(h, id, title, desc, W, H);
    ps_html_raw(h, "<text class=\"ct\" x=\"4\" y=\"16\">");
    ps_html_text(h, title);
    ps_html_raw(h, "</text>");
    ps_html_printf(h, "<rect class=\"sw b0\" x=\"%.0f\" y=\"24\" width=\"11\" height=\"11\"/>", bx);
    ps_html_printf(h, "<text class=\"lg\" x=\"%.0f\" y=\"33\">", bx + 15);
    ps_html_text(h, total_name);
    ps_html_raw(h, "</text>");
    ps_html_printf(h, "<rect class=\"sw b1\" x=\"%.0f\" y=\"24\" width=\"11\" height=\"11\"/>", bx + 200);
    ps_html_printf(h, "<text class=\"lg\" x=\"%.0f\" y=\"33\">", bx + 215);
    ps_html_text(h, part_name);
    ps_html_raw(h, "</text>");
    for (size_t i = 0; i < n; i++) {
        const ps_svg_bar *r = &rows[i];
        double y = TOPM + (double)i * ROW;
        double t = isfinite(r->total) && r->total > 0 ? r->total : 0;
        double p = isfinite(r->part) && r->part > 0 ? r->part : 0;
        if (p > t)
            p = t;
        double scale = shares ? (t > 0 ? t : 1) : (max > 0 ? max : 1);
        double wt = bw * t / scale, wp = bw * p / scale;
        const char *lab = r->label ? r->label : "";
        ps_html_raw(h, "<g><title>");
        ps_html_text_capped(h, lab, r->label_len, 200);
        ps_html_raw(h, ": ");
        ps_html_text(h, r->note);
        ps_html_raw(h, "</title>");
        ps_html_printf(h, "<text class=\"bl\" x=\"%d\" y=\"%.1f\">", LABW, y + 14);
        ps_html_text_capped(h, lab, r->label_len, 26);
        ps_html_raw(h, "</text>");
        ps_html_printf(h, "<rect class=\"b0\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\"/>", bx,
                       y + 3, shares ? bw : wt, ROW - 6);
        ps_html_printf(h, "<rect class=\"b1%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\"/>",
                       r->level == 2 ? " lf" : r->level == 1 ? " lw" : "", bx, y + 3, wp, ROW - 6);
        ps_html_printf(h, "<text class=\"bn\" x=\"%.1f\" y=\"%.1f\">", bx + bw + 6, y + 14);
        ps_html_text(h, r->note);
        ps_html_raw(h, "</text></g>");
    }
    ps_html_raw(h, "</svg>");
}
