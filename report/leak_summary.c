/*
 * The leakage check's terminal summary: one screen that says what each
 * kind found against which held-out set, its limit, an example of the
 * worst kind, and what was done (report/report.h).
 */
#include "report/report.h"

#include <stdio.h>
#include <string.h>

/* A text shown on one line: at most 60 bytes, cut at a character. */
static void put_short(ps_buf *b, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    size_t m = n > 60 ? 57 : n;
    while (m < n && m > 0 && ((unsigned char)s[m] & 0xC0) == 0x80)
        m--;
    ps_buf_printf(b, "\"%.*s%s\"", (int)m, s ? s : "", m < n ? "..." : "");
}

static void put_example(ps_buf *b, json_t *kind, const char *name)
{
    json_t *per = json_object_get(kind, "per_holdout"), *h;
    size_t i;
    json_array_foreach(per, i, h) {
        json_t *ex = json_array_get(json_object_get(h, "examples"), 0);
        if (!ex)
            continue;
        ps_buf_printf(b, "  e.g. %s: %s ", name,
                      json_string_value(json_object_get(ex, "train_id")));
        put_short(b, json_string_value(json_object_get(ex, "train")));
        ps_buf_printf(b, "\n       ~ %s ", json_string_value(json_object_get(ex, "holdout_id")));
        put_short(b, json_string_value(json_object_get(ex, "holdout")));
        ps_buf_puts(b, "\n");
        return;
    }
}

char *ps_leak_summary(const char *cmd, const ps_leak_tally *t, const ps_leak_limits *l,
                      unsigned drop_mask)
{
    json_t *j = ps_leak_tally_json(t, l);
    ps_buf b;
    ps_buf_init(&b);
    if (!j)
        return NULL;
    json_t *hs = json_object_get(j, "holdouts"), *h, *kinds = json_object_get(j, "kinds");
    size_t i;
    ps_buf_printf(&b, "%s: leakage: %llu training records against", cmd,
                  (unsigned long long)ps_leak_tally_records(t));
    json_array_foreach(hs, i, h)
        ps_buf_printf(&b, "%s %s (%lld)", i ? "," : "",
                      json_string_value(json_object_get(h, "name")),
                      (long long)json_integer_value(json_object_get(h, "records")));
    ps_buf_printf(&b, "\n  %-14s %9s %9s %9s %8s  %s\n", "kind", "leaked", "dropped", "left",
                  "limit", "verdict");
    const char *worst = NULL;
    bool failed = false;
    uint64_t dropped = 0;
    for (int k = 0; k < PS_LEAK_KINDS; k++) {
        const char *name = ps_leak_kind_name((ps_leak_kind)k);
        json_t *o = json_object_get(kinds, name);
        bool fails = ps_leak_kind_fails(t, l, (ps_leak_kind)k);
        uint64_t n = ps_leak_tally_count(t, (ps_leak_kind)k);
        char lim[16] = "-";
        if (l->max_fraction[k] >= 0.0)
            snprintf(lim, sizeof lim, "%.2f%%", 100.0 * l->max_fraction[k]);
        long long d = json_integer_value(json_object_get(o, "dropped"));
        dropped += (uint64_t)d;
        char verdict[48];
        snprintf(verdict, sizeof verdict, "%s%s", fails ? "FAIL" : n ? "ok" : "none",
                 drop_mask & (1u << k) ? ", dropped" : l->max_fraction[k] < 0 ? " (reported)" : "");
        ps_buf_printf(&b, "  %-14s %9llu %9lld %8.2f%% %8s  %s\n", name, (unsigned long long)n,
                      d, 100.0 * json_real_value(json_object_get(o, "remaining_fraction")), lim,
                      verdict);
        if (fails && !failed)
            worst = name; /* the first failing kind's example, else the first found */
        else if (n && !worst)
            worst = name;
        failed = failed || fails;
    }
    if (worst)
        put_example(&b, json_object_get(kinds, worst), worst);
    if (dropped)
        ps_buf_printf(&b, "  dropped %llu leaked records (rejects.jsonl, reason leaked_<kind>)\n",
                      (unsigned long long)dropped);
    else if (json_integer_value(json_object_get(j, "leaked")))
        ps_buf_puts(&b, "  nothing dropped (--drop-leaked KIND,... rejects such records)\n");
    ps_buf_printf(&b, "%s: leakage %s\n", cmd,
                  failed ? "FAILED: a kind is over its limit (--leakage-limit KIND=FRACTION)"
                         : "passed");
    json_decref(j);
    return b.data;
}
