/* report.html: prompt and completion lengths of a causal or seq2seq set
 * (report.json "prompt_completion"; see html_page.h). */
#include "report/html_page.h"

/* min / mean / p50 / p95 / max of one side, as table cells. */
static void side(ps_html *h, json_t *s)
{
    static const char *const K[] = {"min", "mean", "p50", "p95", "max"};
    for (size_t i = 0; i < sizeof K / sizeof *K; i++) {
        double v;
        ps_html_raw(h, "<td class=\"n\">");
        if (jnum(jget(s, K[i]), &v))
            ps_html_printf(h, i == 1 ? "%.1f" : "%.0f", v);
        else
            dash(h);
        ps_html_raw(h, "</td>");
    }
}

static void row(ps_html *h, const char *name, json_t *d)
{
    ps_html_raw(h, "<tr><td class=\"mono\">");
    ps_html_text_capped(h, name, strlen(name), CAP_SHORT);
    ps_html_raw(h, "</td><td class=\"n\">");
    put_count(h, jget(d, "records"));
    ps_html_raw(h, "</td>");
    side(h, jget(d, "prompt"));
    side(h, jget(d, "completion"));
    ps_html_raw(h, "</tr>");
}

/* How the completions end and read back (report.json
 * "prompt_completion.ends"; absent in reports of sets built before): each
 * count after its words. */
static void ends(ps_html *h, json_t *e)
{
    static const struct {
        const char *words, *key;
        bool round_trip;
    } P[] = {
        {"<p>Completions ending in the tokenizer's EOS: ", "eos_appended", false},
        {"; in a special token of their own text: ", "end_in_text", false},
        {"; with a token crossing from the prompt into them: ", "junction_merged", false},
        {". Read back as their text: ", "ok", true},
        {"; not lossless (nothing to compare): ", "not_lossless", true},
        {"; mismatched: ", "mismatched", true},
    };
    if (!json_is_object(e))
        return;
    for (size_t i = 0; i < sizeof P / sizeof P[0]; i++) {
        ps_html_raw(h, P[i].words);
        ps_html_raw(h, "<b>");
        put_count(h, jget(P[i].round_trip ? jget(e, "round_trip") : e, P[i].key));
        ps_html_raw(h, "</b>");
    }
    ps_html_raw(h, ".</p>");
}

void ps_rh_generation(page *pg)
{
    json_t *g = jget(pg->r, "prompt_completion");
    if (!json_is_object(g))
        return; /* a pair set: no such section */
    ps_html *h = &pg->h;
    ps_html_raw(h, "<section id=\"prompt-completion\"><h2>Prompt and completion lengths "
                   "(tokens)</h2><p class=\"mu\">Per kept record: the tokens before its "
                   "boundary (the prompt with the tokenizer's prefix, or a seq2seq source) and "
                   "after it (the completion or target, the tokens a model learns).</p>"
                   "<div class=\"tw\"><table><thead><tr><th>label</th><th class=\"n\">records"
                   "</th><th class=\"n\">prompt min</th><th class=\"n\">mean</th><th class=\"n\">"
                   "p50</th><th class=\"n\">p95</th><th class=\"n\">max</th><th class=\"n\">"
                   "completion min</th><th class=\"n\">mean</th><th class=\"n\">p50</th><th "
                   "class=\"n\">p95</th><th class=\"n\">max</th></tr></thead><tbody>");
    row(h, "(all records)", jget(g, "all"));
    json_t *labels = jget(g, "labels");
    size_t n = json_array_size(labels);
    for (size_t i = 0; i < n && i < TOP_LABELS; i++) {
        json_t *e = json_array_get(labels, i);
        size_t len;
        const char *name = jstr(jget(e, "label"), &len);
        row(h, name ? name : "?", e);
    }
    ps_html_raw(h, "</tbody></table></div>");
    ends(h, jget(g, "ends"));
    if (n > TOP_LABELS)
        ps_html_printf(h, "<p class=\"mu\">%zu more labels in report.json.</p>", n - TOP_LABELS);
    ps_html_raw(h, "</section>");
}
