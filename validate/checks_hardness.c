/* validate/checks_hardness.c — hardness_js_distance: whether the shares of
 * the hardness levels (Spider's easy/medium/hard/extra of each gold query,
 * or a dataset's own difficulty field) moved between two points, as
 * label_js_distance does for labels. A rule or a length limit that rejects
 * long, nested queries leaves the labels flat and takes the hard questions
 * away; this is the check that sees it. The details give the counts of
 * each level on both sides, overall and per label (the labels whose own
 * hardness moved most first). */
#include "validate/checks.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef ps_vcheck_ctx ctx;

/* The union of two stats' levels, in B's report order after A's. */
typedef struct hrow {
    const char *name[2 * PS_VHARD_LEVELS];
    int ia[2 * PS_VHARD_LEVELS], ib[2 * PS_VHARD_LEVELS]; /* -1: absent */
    size_t n;
} hrow;

static int find_level(const ps_vstats *s, const char *name)
{
    for (size_t i = 0; i < s->nhlevels; i++)
        if (!strcmp(s->hlevels[i], name))
            return (int)i;
    return -1;
}

static void level_rows(const ps_vstats *A, const ps_vstats *B, hrow *r)
{
    size_t ix[PS_VHARD_LEVELS];
    r->n = 0;
    size_t n = ps_vhard_order(A, ix);
    for (size_t i = 0; i < n; i++) {
        r->name[r->n] = A->hlevels[ix[i]];
        r->ia[r->n] = (int)ix[i];
        r->ib[r->n++] = find_level(B, A->hlevels[ix[i]]);
    }
    n = ps_vhard_order(B, ix);
    for (size_t i = 0; i < n; i++)
        if (find_level(A, B->hlevels[ix[i]]) < 0) {
            r->name[r->n] = B->hlevels[ix[i]];
            r->ia[r->n] = -1;
            r->ib[r->n++] = (int)ix[i];
        }
}

/* The two sides' counts of `r`'s levels from ca and cb (A->hard and
 * B->hard, or a label's); the totals into *na, *nb. */
static void level_counts(const hrow *r, const uint64_t *ca, const uint64_t *cb, double *pa,
                         double *pb, double *na, double *nb)
{
    *na = *nb = 0;
    for (size_t i = 0; i < r->n; i++) {
        pa[i] = r->ia[i] >= 0 && ca ? (double)ca[r->ia[i]] : 0;
        pb[i] = r->ib[i] >= 0 && cb ? (double)cb[r->ib[i]] : 0;
        *na += pa[i];
        *nb += pb[i];
    }
}

static json_t *levels_json(const hrow *r, const double *pa, const double *pb, double na, double nb)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < r->n; i++)
        json_array_append_new(a, json_pack("{sssIsIsfsf}", "level", r->name[i], "baseline",
                                           (json_int_t)pa[i], "current", (json_int_t)pb[i],
                                           "baseline_share", na > 0 ? pa[i] / na : 0,
                                           "current_share", nb > 0 ? pb[i] / nb : 0));
    return a;
}

typedef struct lmove {
    const char *label;
    double js, na, nb;
    size_t i;
} lmove;

static int cmp_lmove(const void *p, const void *q)
{
    const lmove *x = p, *y = q;
    if (x->js != y->js)
        return x->js < y->js ? 1 : -1;
    return strcmp(x->label, y->label);
}

/* Labels with min_label_records classified records on both sides, the
 * most moved first: {"label", "js_distance", "levels": [...]}. */
static json_t *label_moves(ctx *x, const ps_vstats *A, const ps_vstats *B, const hrow *r,
                           size_t top)
{
    lmove *m = malloc((A->nlabels + 1) * sizeof *m);
    json_t *out = json_array();
    if (!m || !out) {
        free(m);
        json_decref(out);
        return NULL;
    }
    double pa[2 * PS_VHARD_LEVELS], pb[2 * PS_VHARD_LEVELS];
    size_t k = 0;
    for (size_t i = 0; i < A->nlabels; i++) {
        const ps_vlabel *la = &A->labels[i], *lb = ps_vstats_find_label(B, la->name);
        double na, nb;
        level_counts(r, la->hard, lb ? lb->hard : NULL, pa, pb, &na, &nb);
        if (na >= x->c->param[P_MIN_LABEL_RECORDS] && nb >= x->c->param[P_MIN_LABEL_RECORDS])
            m[k++] = (lmove){la->name, ps_sm_js_distance(pa, pb, r->n), na, nb, i};
    }
    if (k) /* qsort's array may not be NULL, even empty */
        qsort(m, k, sizeof *m, cmp_lmove);
    for (size_t i = 0; i < k && i < top; i++) {
        const ps_vlabel *la = &A->labels[m[i].i], *lb = ps_vstats_find_label(B, la->name);
        double na, nb;
        level_counts(r, la->hard, lb->hard, pa, pb, &na, &nb);
        json_array_append_new(out, json_pack("{sssfso}", "label", m[i].label, "js_distance",
                                             m[i].js, "levels", levels_json(r, pa, pb, na, nb)));
    }
    free(m);
    return out;
}

void ps_vcheck_hardness(ctx *x, const ps_vstats *A, const ps_vstats *B)
{
    hrow r = {.n = 0};
    if (A && B)
        level_rows(A, B, &r);
    double pa[2 * PS_VHARD_LEVELS], pb[2 * PS_VHARD_LEVELS], na = 0, nb = 0;
    level_counts(&r, A ? A->hard : NULL, B ? B->hard : NULL, pa, pb, &na, &nb);
    double min = ps_vcheck_min_records(x);
    if (r.n < 2 || na < min || nb < min) {
        ps_vcheck_push(x, C_HARDNESS_JS, NAN, NAN, NULL,
                       "not enough data: %s (classified records %.0f and %.0f, min_records %.0f)",
                       !A || !B ? "statistics missing"
                       : !r.n   ? "no hardness (no SQL classified, no --difficulty-field)"
                       : r.n < 2 ? "fewer than 2 hardness levels"
                                 : "fewer classified records than min_records",
                       na, nb, min);
        return;
    }
    double js = ps_sm_js_distance(pa, pb, r.n);
    size_t worst = 0; /* the level whose share moved most */
    for (size_t i = 1; i < r.n; i++)
        if (fabs(pb[i] / nb - pa[i] / na) > fabs(pb[worst] / nb - pa[worst] / na))
            worst = i;
    json_t *d = json_pack("{sfsfsoso}", "baseline_records", na, "current_records", nb, "levels",
                          levels_json(&r, pa, pb, na, nb), "labels", label_moves(x, A, B, &r, 10));
    int vd = ps_vcheck_verdict(x, C_HARDNESS_JS, js);
    ps_vcheck_push(x, C_HARDNESS_JS, js, NAN, d,
                   "hardness distribution %s: JS distance %.4f (threshold %.4g); largest shift: "
                   "'%s' %.2f%% -> %.2f%%",
                   vd == PS_VV_PASS ? "stable" : "shifted", js, x->c->fail[C_HARDNESS_JS],
                   r.name[worst], 100 * pa[worst] / na, 100 * pb[worst] / nb);
}
