/*
 * report/svg.h — small HTML/SVG writers for report.html (internal).
 *
 * A ps_html is a growable buffer with a sticky error: every writer is a
 * no-op once an allocation has failed, and the caller checks `err` once at
 * the end. Every text that may come from data goes through ps_html_text
 * (HTML-escaped, invalid UTF-8 and control characters replaced, optionally
 * cut at a byte bound on a character boundary).
 */
#ifndef PS_VALIDATE_SVG_H
#define PS_VALIDATE_SVG_H

#include "common/ps_internal.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct ps_html {
    ps_buf b;
    int err; /* 0 or PS_ENOMEM, sticky */
} ps_html;

/* Raw markup (trusted, never data). */
void ps_html_raw(ps_html *h, const char *s);
void ps_html_rawn(ps_html *h, const char *s, size_t n);
void ps_html_printf(ps_html *h, const char *fmt, ...) PS_PRINTF(2, 3);
/* Escaped text: &<>"' become entities, C0 controls (but tab and newline),
 * DEL and invalid UTF-8 become U+FFFD. Safe in element content and in
 * quoted attribute values. */
void ps_html_textn(ps_html *h, const char *s, size_t n);
void ps_html_text(ps_html *h, const char *s);
/* The longest prefix of s[0..n) of at most `max` bytes that ends on a
 * UTF-8 character boundary. */
size_t ps_utf8_cut(const char *s, size_t n, size_t max);
/* Escaped text cut at `max` bytes; appends "…" when cut. Returns whether
 * it was cut. */
bool ps_html_text_capped(ps_html *h, const char *s, size_t n, size_t max);
/* Integers with thousands separators ("1,234,567"); other numbers with up
 * to `sig` significant digits. Non-finite numbers print as "n/a". */
void ps_html_num(ps_html *h, double v, int sig);
/* A share 0..1 as a percentage ("97.3%", "99.95%" near 100, "<0.1%"). */
void ps_html_pct(ps_html *h, double r);

/* ---- charts ------------------------------------------------------------- */

/* One series of a histogram: bins [edges[i], edges[i+1]) with counts[i]
 * (n_edges == n_counts + 1), or lower edges only (n_edges == n_counts, the
 * last bin open-ended). Counts are drawn as shares of the series' total so
 * series of different sizes compare. `style` is 0, 1 or 2 (colour). */
typedef struct ps_svg_series {
    const char *name;
    const double *edges;
    size_t n_edges;
    const double *counts;
    size_t n_counts;
    int style;
} ps_svg_series;

/* The most bins a histogram draws (more are merged into wider ones). */
#define PS_SVG_MAX_SLOTS 96

/* An overlaid step histogram with axes, a legend, <title> and <desc>, and
 * vertical markers at values `marks` (e.g. bucket bounds; n_marks may be
 * 0), named `marks_name` in the legend; marks outside the drawn range are
 * left out. `id` must be a unique plain identifier; `title`, `xlabel` and
 * `desc` are escaped. Draws a "no data" panel when every series is empty. */
void ps_svg_histogram_marked(ps_html *h, const char *id, const char *title, const char *xlabel,
                             const char *desc, const ps_svg_series *s, size_t n, const double *marks,
                             size_t n_marks, const char *marks_name);

/* One row of a horizontal bar chart: a light bar of `total` with a dark bar
 * of `part` over it, and `note` at its end. */
typedef struct ps_svg_bar {
    const char *label; /* escaped; cut to fit */
    size_t label_len;
    double total, part;
    const char *note;  /* escaped */
    int level;         /* 0 normal, 1 warning colour, 2 failure colour */
} ps_svg_bar;

/* Horizontal bars. With `shares`, every row's full width is its own total
 * (a 0..100% scale); otherwise widths are to the largest total. */
void ps_svg_bars(ps_html *h, const char *id, const char *title, const char *desc,
                 const char *total_name, const char *part_name, const ps_svg_bar *rows,
                 size_t n, bool shares);

#endif /* PS_VALIDATE_SVG_H */
