/* report.html: the records most changed by cleaning, before -> after (see html_page.h). */
#include "report/html_page.h"

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
    if (ps_array_grow(&s->v, &s->cap, s->n, sizeof *s->v, 16))
        return PS_ENOMEM;
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

void ps_rh_examples(page *pg)
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
