/* validate/checks_paired.c — the checks of the same records before and
 * after cleaning: accounting, an empty set, label retention, rejection causes, length
 * change, duplicates and id collisions (documented in docs/REPORT.md). */
#include "validate/checks.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef ps_vcheck_ctx ctx;

/* ---- paired -------------------------------------------------------------------- */

typedef struct lret {
    const char *name;
    double ratio, retention;
    uint64_t in, kept, lost;
} lret;

static int cmp_lret(const void *p, const void *q)
{
    const lret *a = p, *b = q;
    if (a->ratio != b->ratio)
        return a->ratio < b->ratio ? -1 : 1;
    return strcmp(a->name, b->name);
}

/* Ids that kept records share: whatever keys by id (evaluation joins,
 * resumed jobs) would mix the records up. Any is worth a warning. */
static void id_collision_check(ctx *x, const ps_vpaired *P)
{
    json_t *ex = json_array();
    for (size_t i = 0; ex && i < P->nid_examples; i++)
        json_array_append_new(ex, json_string(P->id_examples[i]));
    double v = (double)P->id_collisions;
    int vd = ps_vcheck_verdict(x, C_ID_COLLISIONS, v);
    ps_vcheck_push(x, C_ID_COLLISIONS, v, NAN,
         json_pack("{sIso}", "id_collisions", (json_int_t)P->id_collisions, "examples",
                   ex ? ex : json_array()),
         "%llu kept records have an id an earlier kept record has%s%s%s: %s",
         (unsigned long long)P->id_collisions, P->nid_examples ? " (e.g. '" : "",
         P->nid_examples ? P->id_examples[0] : "", P->nid_examples ? "')" : "", ps_vcheck_word(vd));
}

/* records in = kept + rejected + duplicates, and the statistics agree. */
static void accounting_check(ctx *x, const ps_vpaired *P, const ps_vstats *raw, const ps_vstats *cl)
{
    uint64_t out = P->kept + P->rejected + P->duplicates;
    double imbalance = fabs((double)P->records_in - (double)out);
    double raw_gap = raw ? fabs((double)raw->records - (double)P->records_in) : 0;
    double cleaned_gap = cl ? fabs((double)cl->records - (double)P->kept) : 0;
    double discrepancy = imbalance + raw_gap + cleaned_gap;
    int vd = ps_vcheck_verdict(x, C_ACCOUNTING, discrepancy);
    ps_vcheck_push(x, C_ACCOUNTING, discrepancy, NAN,
         json_pack("{sIsIsIsIsbsIsI}", "records_in", (json_int_t)P->records_in, "kept",
                   (json_int_t)P->kept, "rejected", (json_int_t)P->rejected, "duplicates",
                   (json_int_t)P->duplicates, "balanced", imbalance == 0, "raw_records",
                   (json_int_t)(raw ? raw->records : 0), "cleaned_records",
                   (json_int_t)(cl ? cl->records : 0)),
         vd == PS_VV_PASS ? "records in (%llu) = kept (%llu) + rejected (%llu) + duplicates (%llu)"
                          : "records do not add up: in %llu, kept %llu + rejected %llu + duplicates %llu",
         (unsigned long long)P->records_in, (unsigned long long)P->kept,
         (unsigned long long)P->rejected, (unsigned long long)P->duplicates);
}

/* The index of the largest rejection cause not yet in `used` (ties: by
 * reason name), or -1. */
static long next_cause(const ps_vpaired *P, const bool *used)
{
    long best = -1;
    for (size_t i = 0; i < P->nreasons; i++) {
        const ps_vreason *r = &P->reasons[i], *b = best < 0 ? NULL : &P->reasons[best];
        if (!used[i] && (!b || r->count > b->count ||
                         (r->count == b->count && strcmp(r->reason, b->reason) < 0)))
            best = (long)i;
    }
    return best;
}

/* A set that keeps no record (every one rejected or a duplicate, or no
 * input record at all) trains nothing, and a reader refuses it: the gate
 * stops it, saying where the records went (the three largest causes and
 * the first example of the largest). A --part's slice is not judged. */
static void empty_set_check(ctx *x, const ps_vpaired *P)
{
    double kept = (double)P->kept;
    bool *used = calloc(P->nreasons + 1, sizeof *used);
    if (!used)
        x->rc = PS_ENOMEM; /* ps_vcheck_push then adds nothing */
    json_t *causes = json_array();
    char text[512] = "";
    size_t tl = 0;
    const ps_vreason *top = NULL;
    for (int k = 0; used && k < 3; k++) {
        long i = next_cause(P, used);
        if (i < 0)
            break;
        used[i] = true;
        const ps_vreason *r = &P->reasons[i];
        top = top ? top : r;
        if (causes)
            json_array_append_new(causes, json_pack("{sssosI}", "reason", r->reason, "rule",
                                                    r->rule ? json_string(r->rule) : json_null(),
                                                    "count", (json_int_t)r->count));
        int w = snprintf(text + tl, sizeof text - tl, "%s%s %llu%s%s%s", k ? ", " : "", r->reason,
                         (unsigned long long)r->count, r->rule ? " (rule '" : "",
                         r->rule ? r->rule : "", r->rule ? "')" : "");
        tl = w < 0 || (size_t)w >= sizeof text - tl ? sizeof text - 1 : tl + (size_t)w;
    }
    free(used);
    const ps_vinput_reason *ex = top ? ps_vrejections_example(P, top->reason, top->rule) : NULL;
    bool show = ex && ex->source && ex->detail;
    json_t *d = json_pack("{sIsIsIsIso}", "records_in", (json_int_t)P->records_in, "kept",
                          (json_int_t)P->kept, "rejected", (json_int_t)P->rejected, "duplicates",
                          (json_int_t)P->duplicates, "largest_causes",
                          causes ? causes : json_array());
    int vd = ps_vcheck_verdict(x, C_EMPTY_SET, kept);
    if (x->c->slice)
        ps_vcheck_push(x, C_EMPTY_SET, NAN, NAN, d,
             "not judged: %llu of %llu records kept in this --part's slice (a slice may be "
             "empty; merge judges the whole set)",
             (unsigned long long)P->kept, (unsigned long long)P->records_in);
    else if (vd == PS_VV_PASS)
        ps_vcheck_push(x, C_EMPTY_SET, kept, NAN, d, "%llu records kept (fail below %.0f): ok",
             (unsigned long long)P->kept, x->c->fail[C_EMPTY_SET]);
    else
        ps_vcheck_push(x, C_EMPTY_SET, kept, NAN, d,
             "%llu records kept of %llu read (fail below %.0f): %s; rejected %llu%s%s%s, "
             "duplicates %llu%s%s%s%s",
             (unsigned long long)P->kept, (unsigned long long)P->records_in,
             x->c->fail[C_EMPTY_SET], ps_vcheck_word(vd), (unsigned long long)P->rejected,
             tl ? " (" : "", text, tl ? ")" : "", (unsigned long long)P->duplicates,
             show ? "; e.g. " : "", show ? ex->source : "", show ? ": " : "",
             show ? ex->detail : "");
}

/* The label that lost most against the overall retention. False when out
 * of memory (the remaining paired checks are then skipped). */
static bool label_retention_check(ctx *x, const ps_vpaired *P)
{
    double min_label_records = x->c->param[P_MIN_LABEL_RECORDS], min_lost = x->c->param[P_RETENTION_MIN_LOST];
    double overall = P->records_in ? (double)P->kept / (double)P->records_in : 0;
    lret *lr = malloc((P->nlabels + 1) * sizeof *lr);
    if (!lr) {
        x->rc = PS_ENOMEM;
        return false;
    }
    size_t nl = 0, eligible = 0;
    for (size_t i = 0; i < P->nlabels; i++) {
        const ps_vpaired_label *l = &P->labels[i];
        if ((double)l->records_in < min_label_records)
            continue;
        eligible++;
        uint64_t lost = l->records_in - l->kept;
        if ((double)lost < min_lost && l->kept)
            continue;
        double ret = (double)l->kept / (double)l->records_in;
        lr[nl++] = (lret){l->name, overall > 0 ? ret / overall : (l->kept ? 1 : 0), ret,
                          l->records_in, l->kept, lost};
    }
    if (!eligible || !(overall > 0)) {
        ps_vcheck_push(x, C_LABEL_RETENTION, NAN, NAN, NULL,
             overall > 0 ? "not enough data: no label has min_label_records (%.0f) records"
                         : "not enough data: no record was kept (%.0f)",
             min_label_records);
    } else {
        qsort(lr, nl, sizeof *lr, cmp_lret);
        json_t *arr = json_array();
        for (size_t i = 0; arr && i < nl && i < 20; i++)
            json_array_append_new(arr, json_pack("{sssIsIsfsf}", "label", lr[i].name, "records_in",
                                                 (json_int_t)lr[i].in, "kept", (json_int_t)lr[i].kept,
                                                 "retention", lr[i].retention, "ratio", lr[i].ratio));
        double value = nl ? lr[0].ratio : 1.0;
        if (value > 1)
            value = 1; /* a label keeping more than the overall rate is no damage */
        int vd = ps_vcheck_verdict(x, C_LABEL_RETENTION, value);
        json_t *d = json_pack("{sfsIso}", "overall_retention", overall, "labels_checked",
                              (json_int_t)eligible, "lowest", arr ? arr : json_array());
        if (!nl)
            ps_vcheck_push(x, C_LABEL_RETENTION, value, NAN, d,
                 "no label with >= %.0f records lost >= %.0f records (overall retention %.2f%%)", min_label_records,
                 min_lost, 100 * overall);
        else if (lr[0].kept == 0)
            ps_vcheck_push(x, C_LABEL_RETENTION, value, NAN, d,
                 "label '%s' vanished: 0 of its %llu records kept (overall retention %.2f%%)",
                 lr[0].name, (unsigned long long)lr[0].in, 100 * overall);
        else
            ps_vcheck_push(x, C_LABEL_RETENTION, value, NAN, d,
                 "label '%s' kept %.2f%% of %llu records against %.2f%% overall (ratio %.3f; fail "
                 "below %.3g): %s",
                 lr[0].name, 100 * lr[0].retention, (unsigned long long)lr[0].in, 100 * overall,
                 lr[0].ratio, x->c->fail[C_LABEL_RETENTION], ps_vcheck_word(vd));
    }
    free(lr);
    return true;
}

/* The largest rejection cause (reason and rule), and records cleaning emptied. */
static void rejection_checks(ctx *x, const ps_vpaired *P, bool enough)
{
    double min_records = ps_vcheck_min_records(x);
    if (!enough) {
        ps_vcheck_push(x, C_REJECTED_SHARE, NAN, NAN, NULL, "not enough data: %llu records (min_records %.0f)",
             (unsigned long long)P->records_in, min_records);
        ps_vcheck_push(x, C_EMPTY_AFTER_CLEANING, NAN, NAN, NULL,
             "not enough data: %llu records (min_records %.0f)", (unsigned long long)P->records_in, min_records);
    } else {
        double worst = 0;
        const ps_vreason *wr = NULL;
        json_t *arr = json_array();
        for (size_t i = 0; i < P->nreasons; i++) {
            double s = (double)P->reasons[i].count / (double)P->records_in;
            if (s > worst || (s == worst && wr && strcmp(P->reasons[i].reason, wr->reason) < 0)) {
                worst = s;
                wr = &P->reasons[i];
            }
            if (arr)
                json_array_append_new(
                    arr, json_pack("{sssosIsf}", "reason", P->reasons[i].reason, "rule",
                                   P->reasons[i].rule ? json_string(P->reasons[i].rule) : json_null(),
                                   "count", (json_int_t)P->reasons[i].count, "share", s));
        }
        int vd = ps_vcheck_verdict(x, C_REJECTED_SHARE, worst);
        json_t *d = json_pack("{sfso}", "rejected_share",
                              (double)P->rejected / (double)P->records_in, "by_reason_and_rule",
                              arr ? arr : json_array());
        /* The cause's first example names the input and says why
         * ("bird/dev.json:#0: no field 'sql' or 'query' (fields: ..., SQL)"). */
        const ps_vinput_reason *ex = wr ? ps_vrejections_example(P, wr->reason, wr->rule) : NULL;
        bool show = ex && ex->source && ex->detail;
        if (!wr)
            ps_vcheck_push(x, C_REJECTED_SHARE, 0, NAN, d, "no record was rejected");
        else
            ps_vcheck_push(x, C_REJECTED_SHARE, worst, NAN, d,
                 "largest rejection cause: %s%s%s%s, %.2f%% of records (warn %.3g%%, fail %.3g%%): "
                 "%s%s%s%s%s",
                 wr->reason, wr->rule ? " (rule '" : "", wr->rule ? wr->rule : "",
                 wr->rule ? "')" : "", 100 * worst, 100 * x->c->warn[C_REJECTED_SHARE],
                 100 * x->c->fail[C_REJECTED_SHARE], ps_vcheck_word(vd), show ? "; e.g. " : "",
                 show ? ex->source : "", show ? ": " : "", show ? ex->detail : "");
        double e = (double)P->empty_after_cleaning / (double)P->records_in;
        vd = ps_vcheck_verdict(x, C_EMPTY_AFTER_CLEANING, e);
        ps_vcheck_push(x, C_EMPTY_AFTER_CLEANING, e, NAN,
             json_pack("{sI}", "empty_after_cleaning", (json_int_t)P->empty_after_cleaning),
             "cleaning emptied %llu records (%.3f%%; fail above %.3g%%): %s",
             (unsigned long long)P->empty_after_cleaning, 100 * e,
             100 * x->c->fail[C_EMPTY_AFTER_CLEANING], ps_vcheck_word(vd));
    }
}

/* Field f (0 question, 1 sql): the share of kept records whose length
 * cleaning changed by at least length_change_rel, overall and per label. */
static void length_change_check(ctx *x, const ps_vpaired *P, int f)
{
    double min_records = ps_vcheck_min_records(x), min_label_records = x->c->param[P_MIN_LABEL_RECORDS];
    unsigned min_bin = (unsigned)llround(x->c->param[P_LENGTH_CHANGE_REL] * 100);
    int id = f == 0 ? C_QUESTION_LENGTH_CHANGE : C_SQL_LENGTH_CHANGE;
    uint64_t kept_total = 0, changed = 0;
    for (unsigned b = 0; b < PS_VREL_BINS; b++) {
        kept_total += P->rel[f][b];
        if (b >= min_bin)
            changed += P->rel[f][b];
    }
    if ((double)kept_total < min_records) {
        ps_vcheck_push(x, id, NAN, NAN, NULL, "not enough data: %llu kept records (min_records %.0f)",
             (unsigned long long)kept_total, min_records);
        return;
    }
    double worst = (double)changed / (double)kept_total;
    const char *worst_label = NULL;
    uint64_t worst_changed = changed, worst_kept = kept_total;
    json_t *arr = json_array();
    for (size_t i = 0; i < P->nlabels; i++) {
        const ps_vpaired_label *l = &P->labels[i];
        uint64_t label_kept = 0, label_changed = 0;
        for (unsigned b = 0; b < PS_VREL_BINS; b++) {
            label_kept += l->rel[f][b];
            if (b >= min_bin)
                label_changed += l->rel[f][b];
        }
        if ((double)label_kept < min_label_records || !label_changed)
            continue;
        double s = (double)label_changed / (double)label_kept;
        if (arr && s > 0.01)
            json_array_append_new(arr, json_pack("{sssIsIsf}", "label", l->name, "changed", (json_int_t)label_changed,
                                                 "kept", (json_int_t)label_kept, "share", s));
        if (s > worst || (s == worst && worst_label && strcmp(l->name, worst_label) < 0)) {
            worst = s;
            worst_label = l->name;
            worst_changed = label_changed;
            worst_kept = label_kept;
        }
    }
    uint64_t hist_total = 0;
    double mean_abs = 0;
    for (size_t b = 0; b < PS_VBINS; b++) {
        hist_total += P->shrink[f][b] + P->grow[f][b];
        mean_abs += (double)(P->shrink[f][b] + P->grow[f][b]) * ps_vbin_lo((uint32_t)b);
    }
    json_t *d = json_pack("{sfsIsIsIso}", "min_relative_change", x->c->param[P_LENGTH_CHANGE_REL],
                          "records", (json_int_t)kept_total, "changed_overall", (json_int_t)changed,
                          "length_changed", (json_int_t)hist_total, "labels",
                          arr ? arr : json_array());
    int vd = ps_vcheck_verdict(x, id, worst);
    const char *fld = f == 0 ? "question" : "sql";
    if (worst_label)
        ps_vcheck_push(x, id, worst, NAN, d,
             "label '%s': %llu of %llu kept records (%.1f%%) had their %s length changed by >= "
             "%.0f%% (fail above %.3g%%): %s",
             worst_label, (unsigned long long)worst_changed, (unsigned long long)worst_kept, 100 * worst, fld,
             100 * x->c->param[P_LENGTH_CHANGE_REL], 100 * x->c->fail[id], ps_vcheck_word(vd));
    else
        ps_vcheck_push(x, id, worst, NAN, d,
             "%llu of %llu kept records (%.2f%%) had their %s length changed by >= %.0f%% (fail "
             "above %.3g%%): %s",
             (unsigned long long)changed, (unsigned long long)kept_total, 100 * worst, fld,
             100 * x->c->param[P_LENGTH_CHANGE_REL], 100 * x->c->fail[id], ps_vcheck_word(vd));
}

static void duplicate_rate_check(ctx *x, const ps_vpaired *P, bool enough)
{
    double min_records = ps_vcheck_min_records(x);
    if (!enough) {
        ps_vcheck_push(x, C_DUPLICATE_RATE, NAN, NAN, NULL, "not enough data: %llu records (min_records %.0f)",
             (unsigned long long)P->records_in, min_records);
    } else {
        double dr = (double)P->duplicates / (double)P->records_in;
        int vd = ps_vcheck_verdict(x, C_DUPLICATE_RATE, dr);
        ps_vcheck_push(x, C_DUPLICATE_RATE, dr, NAN, json_pack("{sI}", "duplicates", (json_int_t)P->duplicates),
             "%.2f%% of records were exact duplicates after cleaning (warn %.3g%%): %s", 100 * dr,
             100 * x->c->warn[C_DUPLICATE_RATE], ps_vcheck_word(vd));
    }
}

void ps_vcheck_paired(ctx *x, const ps_vpaired *P, const ps_vstats *raw, const ps_vstats *cl)
{
    const char *nop = "not enough data: no paired before/after statistics";
    if (!P) {
        ps_vcheck_push(x, C_ACCOUNTING, NAN, NAN, NULL, "%s", nop);
        ps_vcheck_push(x, C_EMPTY_SET, NAN, NAN, NULL, "%s", nop);
        ps_vcheck_push(x, C_LABEL_RETENTION, NAN, NAN, NULL, "%s", nop);
        ps_vcheck_push(x, C_REJECTED_SHARE, NAN, NAN, NULL, "%s", nop);
        ps_vcheck_push(x, C_EMPTY_AFTER_CLEANING, NAN, NAN, NULL, "%s", nop);
        ps_vcheck_push(x, C_QUESTION_LENGTH_CHANGE, NAN, NAN, NULL, "%s", nop);
        ps_vcheck_push(x, C_SQL_LENGTH_CHANGE, NAN, NAN, NULL, "%s", nop);
        ps_vcheck_push(x, C_DUPLICATE_RATE, NAN, NAN, NULL, "%s", nop);
        ps_vcheck_push(x, C_ID_COLLISIONS, NAN, NAN, NULL, "%s", nop);
        return;
    }
    accounting_check(x, P, raw, cl);
    empty_set_check(x, P);
    bool enough = (double)P->records_in >= ps_vcheck_min_records(x);
    if (!label_retention_check(x, P))
        return;
    rejection_checks(x, P, enough);
    for (int f = 0; f < 2; f++)
        length_change_check(x, P, f);
    duplicate_rate_check(x, P, enough);
    id_collision_check(x, P);
}
