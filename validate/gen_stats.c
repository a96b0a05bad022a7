#define _GNU_SOURCE /* qsort_r */
/*
 * Prompt and completion lengths of a causal or seq2seq set (validate.h,
 * ps_vgen): per label and over all records, the tokens before the
 * boundary (causal: the prompt, its prefix included; seq2seq: the source)
 * and after it (the completion or target). A trainer sizes its packing
 * length and its generation budget from them, and a completion that is
 * mostly empty or a prompt that dwarfs it shows here first. Fixed-bin
 * histograms as the other statistics (stat_math.h), so that parts add up
 * (pairshard merge); min and max are exact.
 */
#include "validate/vinternal.h"

#include <stdlib.h>
#include <string.h>

enum { GEN_PROMPT = 0, GEN_COMPLETION = 1, GEN_N = 2 };
static const char *const GEN_NAMES[GEN_N] = {"prompt", "completion"};

typedef struct gen_dist {
    uint64_t n, sum[GEN_N];
    uint32_t min[GEN_N], max[GEN_N];
    uint64_t hist[GEN_N][PS_VBINS];
} gen_dist;

struct ps_vgen {
    gen_dist all;
    ps_vgen_end_counts ends; /* rt_id, rt_detail owned */
    gen_dist *labels; /* by index in names */
    size_t cap;
    ps_strmap names;
};

ps_vgen *ps_vgen_new(void) { return calloc(1, sizeof(ps_vgen)); }

void ps_vgen_free(ps_vgen *g)
{
    if (!g)
        return;
    free(g->labels);
    free((char *)g->ends.rt_id);
    free((char *)g->ends.rt_detail);
    ps_strmap_free(&g->names);
    free(g);
}

static void dist_add(gen_dist *d, const uint32_t v[GEN_N])
{
    for (int f = 0; f < GEN_N; f++) {
        if (!d->n || v[f] < d->min[f])
            d->min[f] = v[f];
        if (!d->n || v[f] > d->max[f])
            d->max[f] = v[f];
        d->sum[f] += v[f];
        d->hist[f][ps_vbin_of(v[f])]++;
    }
    d->n++;
}

static void dist_merge(gen_dist *into, const gen_dist *from)
{
    if (!from->n)
        return;
    for (int f = 0; f < GEN_N; f++) {
        if (!into->n || from->min[f] < into->min[f])
            into->min[f] = from->min[f];
        if (!into->n || from->max[f] > into->max[f])
            into->max[f] = from->max[f];
        into->sum[f] += from->sum[f];
        for (size_t b = 0; b < PS_VBINS; b++)
            into->hist[f][b] += from->hist[f][b];
    }
    into->n += from->n;
}

static gen_dist *label_dist(ps_vgen *g, const char *label, uint32_t number)
{
    void *recs = g->labels;
    long i = ps_strmap_slot_numbered(&g->names, label, number, &recs, &g->cap, sizeof(gen_dist));
    g->labels = recs;
    return i < 0 ? NULL : &g->labels[i];
}

int ps_vgen_add(ps_vgen *g, const char *label, uint32_t prompt, uint32_t completion)
{
    return ps_vgen_add_numbered(g, label, 0, prompt, completion);
}

int ps_vgen_add_numbered(ps_vgen *g, const char *label, uint32_t label_number, uint32_t prompt,
                         uint32_t completion)
{
    const uint32_t v[GEN_N] = {prompt, completion};
    dist_add(&g->all, v);
    if (!label)
        return 0;
    gen_dist *d = label_dist(g, label, label_number);
    if (!d)
        return PS_ENOMEM;
    dist_add(d, v);
    return 0;
}

int ps_vgen_add_ends(ps_vgen *g, const ps_vgen_ends *e)
{
    ps_vgen_end_counts *c = &g->ends;
    c->eos_appended += e->eos_appended;
    c->end_in_text += e->end_in_text;
    c->junction_merged += e->junction_merged;
    c->rt_ok += e->round_trip == PS_VGEN_RT_OK;
    c->rt_lossy += e->round_trip == PS_VGEN_RT_LOSSY;
    c->rt_mismatch += e->round_trip == PS_VGEN_RT_MISMATCH;
    return 0;
}

int ps_vgen_round_trip_example(ps_vgen *g, const char *id, const char *detail)
{
    if (g->ends.rt_id)
        return 0;
    char *i = strdup(id ? id : ""), *d = strdup(detail ? detail : "");
    if (!i || !d) {
        free(i);
        free(d);
        return PS_ENOMEM;
    }
    g->ends.rt_id = i;
    g->ends.rt_detail = d;
    return 0;
}

void ps_vgen_get_end_counts(const ps_vgen *g, ps_vgen_end_counts *c)
{
    *c = g->ends;
    c->records = g->all.n;
}

/* Adds from's end counts into into's; the first mismatch stays into's
 * when it has one (parts merge in order). */
static int ends_merge(ps_vgen *into, const ps_vgen *from)
{
    ps_vgen_end_counts *a = &into->ends;
    const ps_vgen_end_counts *b = &from->ends;
    a->eos_appended += b->eos_appended;
    a->end_in_text += b->end_in_text;
    a->junction_merged += b->junction_merged;
    a->rt_ok += b->rt_ok;
    a->rt_lossy += b->rt_lossy;
    a->rt_mismatch += b->rt_mismatch;
    return b->rt_id ? ps_vgen_round_trip_example(into, b->rt_id, b->rt_detail) : 0;
}

int ps_vgen_merge(ps_vgen *into, const ps_vgen *from)
{
    if (ends_merge(into, from))
        return PS_ENOMEM;
    dist_merge(&into->all, &from->all);
    for (size_t i = 0; i < from->names.n; i++) {
        gen_dist *d = label_dist(into, from->names.keys[i], 0);
        if (!d)
            return PS_ENOMEM;
        dist_merge(d, &from->labels[i]);
    }
    return 0;
}

static int cmp_name(const void *a, const void *b, void *names)
{
    char *const *k = names;
    return strcmp(k[*(const size_t *)a], k[*(const size_t *)b]);
}

/* Label indices by name (malloc'ed, or NULL when none or out of memory). */
static size_t *sorted(const ps_vgen *g)
{
    size_t *o = g->names.n ? malloc(g->names.n * sizeof *o) : NULL;
    for (size_t i = 0; o && i < g->names.n; i++)
        o[i] = i;
    if (o)
        qsort_r(o, g->names.n, sizeof *o, cmp_name, g->names.keys);
    return o;
}

/* {"records": n, "prompt": {...}, "completion": {...}}: with the histograms
 * (stats.json, `full`) or the summary a reader wants (report.json). */
static json_t *dist_json(const gen_dist *d, bool full)
{
    json_t *o = json_pack("{so}", "records", ps_vjson_uint(d->n));
    for (int f = 0; o && f < GEN_N; f++) {
        double mean = d->n ? (double)d->sum[f] / (double)d->n : 0;
        json_t *e = json_pack("{sosososfsfsf}", "min", ps_vjson_uint(d->min[f]), "max",
                              ps_vjson_uint(d->max[f]), "sum", ps_vjson_uint(d->sum[f]), "mean",
                              mean, "p50", ps_sm_quantile(d->hist[f], d->n, 0.50, d->max[f]),
                              "p95", ps_sm_quantile(d->hist[f], d->n, 0.95, d->max[f]));
        if (e && full)
            json_object_set_new(e, "hist", ps_vjson_hist_new(d->hist[f], PS_VBINS));
        if (!e || json_object_set_new(o, GEN_NAMES[f], e)) {
            json_decref(o);
            return NULL;
        }
    }
    return o;
}

/* {"eos_appended", "end_in_text", "junction_merged", "round_trip": {"ok",
 * "not_lossless", "mismatched"[, "first": {"id", "detail"}]}}. */
static json_t *ends_json(const ps_vgen_end_counts *c)
{
    json_t *rt = json_pack("{sososo}", "ok", ps_vjson_uint(c->rt_ok), "not_lossless",
                           ps_vjson_uint(c->rt_lossy), "mismatched",
                           ps_vjson_uint(c->rt_mismatch));
    if (rt && c->rt_id &&
        json_object_set_new(rt, "first", json_pack("{ssss}", "id", c->rt_id, "detail",
                                                   c->rt_detail))) {
        json_decref(rt);
        return NULL;
    }
    return rt ? json_pack("{sosososo}", "eos_appended", ps_vjson_uint(c->eos_appended),
                          "end_in_text", ps_vjson_uint(c->end_in_text), "junction_merged",
                          ps_vjson_uint(c->junction_merged), "round_trip", rt)
              : NULL;
}

/* What ends_json wrote; untrusted. Absent in files of sets built before. */
static int ends_from_json(json_t *o, ps_vgen *g, ps_error *err)
{
    if (!o)
        return 0;
    const char *ctx = "prompt_completion.ends";
    ps_vgen_end_counts *c = &g->ends;
    json_t *rt = json_object_get(o, "round_trip");
    if (ps_vjson_u64(o, "eos_appended", &c->eos_appended, ctx, err) ||
        ps_vjson_u64(o, "end_in_text", &c->end_in_text, ctx, err) ||
        ps_vjson_u64(o, "junction_merged", &c->junction_merged, ctx, err) ||
        ps_vjson_u64(rt, "ok", &c->rt_ok, ctx, err) ||
        ps_vjson_u64(rt, "not_lossless", &c->rt_lossy, ctx, err) ||
        ps_vjson_u64(rt, "mismatched", &c->rt_mismatch, ctx, err))
        return PS_EFORMAT;
    json_t *first = json_object_get(rt, "first");
    const char *id = json_string_value(json_object_get(first, "id"));
    const char *detail = json_string_value(json_object_get(first, "detail"));
    if (first && (!id || !detail))
        return ps_error_set(err, PS_EFORMAT, "%s: round_trip.first needs id and detail", ctx);
    return id && ps_vgen_round_trip_example(g, id, detail)
               ? ps_error_set(err, PS_ENOMEM, "out of memory")
               : 0;
}

json_t *ps_vgen_to_json(const ps_vgen *g, bool full)
{
    json_t *labels = json_array();
    size_t *ord = sorted(g);
    if (!labels || (g->names.n && !ord)) {
        json_decref(labels);
        free(ord);
        return NULL;
    }
    for (size_t k = 0; k < g->names.n; k++) {
        json_t *d = dist_json(&g->labels[ord[k]], full);
        if (!d || json_object_set_new(d, "label", json_string(g->names.keys[ord[k]])) ||
            json_array_append_new(labels, d)) {
            json_decref(labels);
            free(ord);
            return NULL;
        }
    }
    free(ord);
    json_t *all = dist_json(&g->all, full);
    json_t *o = all ? json_pack("{soso}", "all", all, "labels", labels) : NULL;
    json_t *e = o ? ends_json(&g->ends) : NULL;
    if (!e || json_object_set_new(o, "ends", e)) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* One distribution as dist_json(full) wrote it; untrusted. */
static int dist_from_json(json_t *o, gen_dist *d, const char *ctx, ps_error *err)
{
    memset(d, 0, sizeof *d);
    if (ps_vjson_u64(o, "records", &d->n, ctx, err))
        return PS_EFORMAT;
    for (int f = 0; f < GEN_N; f++) {
        json_t *e = json_object_get(o, GEN_NAMES[f]);
        uint64_t mn, mx, total;
        if (!json_is_object(e))
            return ps_error_set(err, PS_EFORMAT, "%s: '%s' must be an object", ctx, GEN_NAMES[f]);
        if (ps_vjson_u64(e, "min", &mn, ctx, err) || ps_vjson_u64(e, "max", &mx, ctx, err) ||
            ps_vjson_u64(e, "sum", &d->sum[f], ctx, err) ||
            ps_vjson_hist(json_object_get(e, "hist"), d->hist[f], PS_VBINS, &total, ctx, err))
            return PS_EFORMAT;
        if (total != d->n || mn > mx || mx > UINT32_MAX)
            return ps_error_set(err, PS_EFORMAT,
                                "%s: %s: the histogram counts %llu records, min %llu max %llu "
                                "(records %llu)", ctx, GEN_NAMES[f], (unsigned long long)total,
                                (unsigned long long)mn, (unsigned long long)mx,
                                (unsigned long long)d->n);
        d->min[f] = (uint32_t)mn;
        d->max[f] = (uint32_t)mx;
    }
    return 0;
}

int ps_vgen_from_json(json_t *j, ps_vgen **out, ps_error *err)
{
    *out = NULL;
    ps_vgen *g = ps_vgen_new();
    json_t *labels = json_object_get(j, "labels");
    if (!g)
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    int rc = json_is_array(labels) ? dist_from_json(json_object_get(j, "all"), &g->all,
                                                    "prompt_completion.all", err)
                                   : ps_error_set(err, PS_EFORMAT,
                                                  "prompt_completion: 'labels' must be an array");
    const char *prev = NULL;
    size_t i;
    json_t *e;
    json_array_foreach(labels, i, e)
    {
        const char *name;
        gen_dist *d;
        if (rc || (rc = ps_vjson_label_entry(e, i, prev, 64, &name, "prompt_completion", err)))
            break;
        if (!(d = label_dist(g, name, 0))) {
            rc = ps_error_set(err, PS_ENOMEM, "out of memory");
            break;
        }
        if ((rc = dist_from_json(e, d, "prompt_completion.labels", err)))
            break;
        prev = name;
    }
    if (!rc)
        rc = ends_from_json(json_object_get(j, "ends"), g, err);
    if (rc) {
        ps_vgen_free(g);
        return rc;
    }
    *out = g;
    return 0;
}
