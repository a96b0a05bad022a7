/* report.html: the hardness levels before and after cleaning (or baseline
 * and current), overall and per label: a bar histogram each, the records of
 * a level before (light) and after (dark). Only in reports whose points
 * have "hardness" (see html_page.h). */
#include "report/html_page.h"

#define MAX_LEVELS 32 /* both sides' levels (16 each at most) */

/* The two points a report compares: raw and cleaned, or baseline and current. */
static void sides(json_t *r, json_t **a, json_t **b)
{
    *a = jpath(r, "points", "raw", NULL);
    *b = jpath(r, "points", "cleaned", NULL);
    if (!*a && !*b) {
        *a = jpath(r, "points", "baseline", NULL);
        *b = jpath(r, "points", "current", NULL);
    }
}

typedef struct levels {
    const char *name[MAX_LEVELS];
    size_t n;
} levels;

/* The union of both sides' levels, in the order the reports list them. */
static void level_names(json_t *ha, json_t *hb, levels *lv)
{
    json_t *side[2] = {ha, hb};
    lv->n = 0;
    for (int s = 0; s < 2; s++) {
        const char *k;
        json_t *v;
        if (!json_is_object(side[s]))
            continue;
        json_object_foreach(side[s], k, v)
        {
            bool seen = false;
            for (size_t i = 0; i < lv->n && !seen; i++)
                seen = !strcmp(lv->name[i], k);
            if (!seen && lv->n < MAX_LEVELS)
                lv->name[lv->n++] = k;
        }
    }
}

static double count_of(json_t *h, const char *level)
{
    double v;
    return jnum(jget(h, level), &v) && v >= 0 ? v : 0;
}

/* One histogram: a bar per level, before (light) and after (dark). */
static void histogram(ps_html *h, const char *id, const char *title, const levels *lv, json_t *ha,
                      json_t *hb)
{
    ps_svg_bar bars[MAX_LEVELS];
    char notes[MAX_LEVELS][64];
    double ta = 0, tb = 0;
    for (size_t i = 0; i < lv->n; i++) {
        ta += count_of(ha, lv->name[i]);
        tb += count_of(hb, lv->name[i]);
    }
    for (size_t i = 0; i < lv->n; i++) {
        double a = count_of(ha, lv->name[i]), b = count_of(hb, lv->name[i]);
        snprintf(notes[i], sizeof notes[i], "%.0f \xE2\x86\x92 %.0f (%.1f%% \xE2\x86\x92 %.1f%%)", a, b,
                 ta > 0 ? 100 * a / ta : 0, tb > 0 ? 100 * b / tb : 0);
        /* the dark bar lies over the light one: a level that grew (a cleaned
         * SQL of another class, or a later baseline) is drawn full and amber,
         * its note tells the counts */
        bars[i] = (ps_svg_bar){lv->name[i], strlen(lv->name[i]), a, b < a ? b : a, notes[i], b > a ? 1 : 0};
    }
    ps_svg_bars(h, id, title,
                "For each hardness level, its records before (light bar) and after (dark bar), with the "
                "counts and the level's share of all records on each side.",
                "before", "after", bars, lv->n, false);
}

/* A label's entry in a sorted labels array (linear: few labels are drawn). */
static json_t *find_label(json_t *labels, const char *name)
{
    size_t i;
    json_t *e;
    json_array_foreach(labels, i, e)
    {
        const char *s = jstr(jget(e, "label"), NULL);
        if (s && !strcmp(s, name))
            return e;
    }
    return NULL;
}

typedef struct lref {
    json_t *e;
    double records;
} lref;

static int cmp_lref(const void *x, const void *y)
{
    const lref *p = x, *q = y;
    if (p->records != q->records)
        return p->records < q->records ? 1 : -1;
    return strcmp(jstr(jget(p->e, "label"), NULL), jstr(jget(q->e, "label"), NULL));
}

/* The labels with most records before, a histogram each. */
static void per_label(page *pg, const levels *lv, json_t *la, json_t *lb)
{
    ps_html *h = &pg->h;
    size_t n = json_array_size(la), k = 0;
    lref *v = n ? calloc(n, sizeof *v) : NULL;
    if (n && !v) {
        h->err = PS_ENOMEM;
        return;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(la, i);
        double r;
        if (jstr(jget(e, "label"), NULL) && json_is_object(jget(e, "hardness")) &&
            jnum(jget(e, "records"), &r))
            v[k++] = (lref){e, r};
    }
    if (k) /* qsort's array may not be NULL, even empty */
        qsort(v, k, sizeof *v, cmp_lref);
    size_t top = k < TOP_LABELS ? k : TOP_LABELS;
    if (top)
        ps_html_printf(h, "<p class=\"mu\">Per label: %s%zu of %zu labels by records before.</p>",
                       top < k ? "the top " : "all ", top, k);
    ps_html_raw(h, "<div class=\"charts\">");
    for (size_t i = 0; i < top; i++) {
        const char *name = jstr(jget(v[i].e, "label"), NULL);
        json_t *eb = find_label(lb, name);
        char id[32], title[160];
        snprintf(id, sizeof id, "hl-%zu", i);
        snprintf(title, sizeof title, "Label %.120s", name);
        ps_html_raw(h, "<figure>");
        histogram(h, id, title, lv, jget(v[i].e, "hardness"), eb ? jget(eb, "hardness") : NULL);
        ps_html_raw(h, "</figure>");
    }
    ps_html_raw(h, "</div>");
    free(v);
}

void ps_rh_hardness(page *pg)
{
    json_t *a, *b;
    sides(pg->r, &a, &b);
    json_t *ha = jget(a, "hardness"), *hb = jget(b, "hardness");
    if (!json_is_object(ha) && !json_is_object(hb))
        return;
    ps_html *h = &pg->h;
    levels lv;
    level_names(ha, hb, &lv);
    ps_html_raw(h, "<section id=\"hardness\"><h2>Hardness: levels before and after</h2>"
                   "<p class=\"mu\">Each record's level: its SQL's class by Spider's evaluation rules "
                   "(easy, medium, hard, extra), or its own difficulty field. A rule or a length limit "
                   "that drops long, nested queries shows here as hard levels that shrink "
                   "(hardness_js_distance).</p><div class=\"charts\"><figure>");
    histogram(h, "hl-all", "All records", &lv, ha, hb);
    ps_html_raw(h, "</figure></div>");
    per_label(pg, &lv, jget(a, "labels"), jget(b, "labels"));
    ps_html_raw(h, "</section>");
}
