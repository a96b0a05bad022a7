/* validate/stats.c — streaming, mergeable statistics at one point of the
 * pipeline: counts, fixed-bin length histograms (overall and per label),
 * text health counters; to and from JSON (the loader trusts nothing). */
#include "validate/vinternal.h"

#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

const char *const ps_vfield_names[PS_VF_N] = {"question_chars", "sql_chars", "tokens"};

static const char *const POINTS[] = {"raw", "cleaned", "tokenized"};

static bool point_ok(const char *p)
{
    for (size_t i = 0; i < 3; i++)
        if (p && !strcmp(p, POINTS[i]))
            return true;
    return false;
}

ps_vstats *ps_vstats_new(const char *point)
{
    if (!point_ok(point))
        return NULL;
    ps_vstats *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    snprintf(s->point, sizeof s->point, "%s", point);
    return s;
}

void ps_vstats_free(ps_vstats *s)
{
    if (!s)
        return;
    free(s->labels);
    ps_strmap_free(&s->names);
    free(s->bounds);
    for (int f = 0; s->unk && f < PS_VUNK_FIELDS; f++)
        ps_vunk_clear(&s->unk[f]);
    free(s->unk);
    ps_vhard_free(s);
    free(s);
}

static int unk_tables(ps_vstats *s)
{
    if (!s->unk && !(s->unk = calloc(PS_VUNK_FIELDS, sizeof *s->unk)))
        return PS_ENOMEM;
    return 0;
}

int ps_vstats_add_unk_word(ps_vstats *s, int field, const char *word, size_t len,
                           const char *example, int hint)
{
    if (!s || !word || !len || field < 0 || field >= PS_VUNK_FIELDS)
        return PS_EINVAL;
    if (unk_tables(s))
        return PS_ENOMEM;
    return ps_vunk_add(&s->unk[field], word, len, 1, 0, example, hint);
}

const ps_vlabel *ps_vstats_find_label(const ps_vstats *s, const char *name)
{
    long i = name ? ps_strmap_find(&s->names, name) : -1;
    return i < 0 ? NULL : &s->labels[i];
}

static ps_vlabel *get_label(ps_vstats *s, const char *name, uint32_t number)
{
    void *records = s->labels;
    long i = ps_strmap_slot_numbered(&s->names, name, number, &records, &s->cap,
                                     sizeof *s->labels);
    s->labels = records;
    if (i < 0)
        return NULL;
    s->nlabels = s->names.n;
    s->labels[i].name = s->names.keys[i];
    return &s->labels[i];
}

static void dist_add(ps_vdist *d, int f, uint32_t v)
{
    d->n[f]++;
    d->sum[f] += v;
    if (v > d->max[f])
        d->max[f] = v;
    d->hist[f][ps_vbin_of(v)]++;
}

int ps_vstats_add(ps_vstats *s, const ps_vrecord *r)
{
    ps_vlabel *l = NULL;
    if (r->label) {
        l = get_label(s, r->label, r->label_number);
        if (!l)
            return PS_ENOMEM;
        l->records++;
    } else {
        s->unlabeled++;
    }
    if (r->hardness && ps_vhard_add(s, l, r->hardness))
        return PS_ENOMEM;
    s->records++;
    uint32_t v[PS_VF_N] = {r->question_chars, r->sql_chars, r->tokens};
    int nf = r->tokens == PS_VSTATS_NO_TOKENS ? 2 : 3;
    for (int f = 0; f < nf; f++) {
        dist_add(&s->all, f, v[f]);
        if (l)
            dist_add(&l->d, f, v[f]);
    }
    if (!r->question_chars)
        s->empty_question++;
    if (!r->sql_chars)
        s->empty_sql++;
    if (r->changed)
        s->changed++;
    if (r->invalid_utf8)
        s->invalid_utf8++;
    if (r->controls_removed) {
        s->records_with_controls++;
        s->controls_removed += r->controls_removed;
    }
    if (nf == 3) {
        s->records_with_tokens++;
        s->tokens += r->tokens;
        s->unk_tokens += r->unk_tokens;
        if (r->unk_tokens)
            s->records_with_unk++;
        if (r->truncated)
            s->truncated++;
        if (r->tokens < PS_VTOK_EXACT)
            s->tok_exact[r->tokens]++;
    }
    return 0;
}

void ps_vstats_add_unparsed(ps_vstats *s)
{
    s->records++;
    s->unparsed++;
}

static void dist_merge(ps_vdist *a, const ps_vdist *b)
{
    for (int f = 0; f < PS_VF_N; f++) {
        a->n[f] += b->n[f];
        a->sum[f] += b->sum[f];
        if (b->max[f] > a->max[f])
            a->max[f] = b->max[f];
        for (size_t i = 0; i < PS_VBINS; i++)
            a->hist[f][i] += b->hist[f][i];
    }
}

int ps_vstats_merge(ps_vstats *into, const ps_vstats *from)
{
    if (!into || !from || strcmp(into->point, from->point))
        return PS_EINVAL;
    for (size_t i = 0; i < from->nlabels; i++) {
        ps_vlabel *l = get_label(into, from->labels[i].name, 0);
        if (!l)
            return PS_ENOMEM;
        l->records += from->labels[i].records;
        dist_merge(&l->d, &from->labels[i].d);
    }
    if (ps_vhard_merge(into, into->hard, from, from->hard))
        return PS_ENOMEM;
    for (size_t i = 0; from->nhlevels && i < from->nlabels; i++) /* labels exist: added above */
        if (ps_vhard_merge(into, get_label(into, from->labels[i].name, 0)->hard, from,
                           from->labels[i].hard))
            return PS_ENOMEM;
    into->records += from->records;
    into->unparsed += from->unparsed;
    into->unlabeled += from->unlabeled;
    into->empty_question += from->empty_question;
    into->empty_sql += from->empty_sql;
    into->changed += from->changed;
    into->invalid_utf8 += from->invalid_utf8;
    into->records_with_controls += from->records_with_controls;
    into->controls_removed += from->controls_removed;
    into->records_with_tokens += from->records_with_tokens;
    into->tokens += from->tokens;
    into->unk_tokens += from->unk_tokens;
    into->records_with_unk += from->records_with_unk;
    into->truncated += from->truncated;
    dist_merge(&into->all, &from->all);
    for (size_t i = 0; i < PS_VTOK_EXACT; i++)
        into->tok_exact[i] += from->tok_exact[i];
    for (int f = 0; from->unk && f < PS_VUNK_FIELDS; f++)
        if (unk_tables(into) || ps_vunk_merge(&into->unk[f], &from->unk[f]))
            return PS_ENOMEM;
    if (!into->nbounds && from->nbounds)
        return ps_vstats_set_padding(into, from->bounds, from->nbounds);
    return 0;
}

int ps_vstats_set_padding(ps_vstats *s, const uint32_t *bounds, size_t n)
{
    if (!s || (n && !bounds))
        return PS_EINVAL;
    for (size_t i = 1; i < n; i++)
        if (bounds[i] <= bounds[i - 1])
            return PS_EINVAL;
    uint32_t *b = NULL;
    if (n) {
        b = malloc(n * sizeof *b);
        if (!b)
            return PS_ENOMEM;
        memcpy(b, bounds, n * sizeof *b);
    }
    free(s->bounds);
    s->bounds = b;
    s->nbounds = n;
    return 0;
}

static uint64_t bound_of(const ps_vstats *s, uint64_t len)
{
    size_t lo = 0, hi = s->nbounds;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (s->bounds[mid] >= len)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo < s->nbounds ? s->bounds[lo] : len;
}

bool ps_vstats_padding(const ps_vstats *s, uint64_t *padded, uint64_t *tokens)
{
    if (!s->nbounds || !s->records_with_tokens)
        return false;
    uint64_t p = 0, t = 0;
    for (uint64_t l = 0; l < PS_VTOK_EXACT; l++) {
        p += s->tok_exact[l] * bound_of(s, l);
        t += s->tok_exact[l] * l;
    }
    /* longer records: the lower edge of their bin stands for the length */
    for (uint32_t b = ps_vbin_of(PS_VTOK_EXACT); b < PS_VBINS; b++) {
        uint64_t c = s->all.hist[PS_VF_TOKENS][b];
        if (!c)
            continue;
        uint64_t l = ps_vbin_lo(b);
        if (l < PS_VTOK_EXACT) /* the bin straddles 1024: only its part above */
            continue;
        p += c * bound_of(s, l);
        t += c * l;
    }
    *padded = p;
    *tokens = t;
    return true;
}

size_t *ps_vstats_sorted_labels(const ps_vstats *s)
{
    if (!s->nlabels)
        return NULL;
    size_t *ix = malloc(s->nlabels * sizeof *ix);
    if (!ix)
        return NULL;
    for (size_t i = 0; i < s->nlabels; i++)
        ix[i] = i;
    /* merge sort by name (stable, no global context) */
    size_t n = s->nlabels;
    size_t *tmp = malloc(n * sizeof *tmp);
    if (!tmp) {
        free(ix);
        return NULL;
    }
    for (size_t w = 1; w < n; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                tmp[k++] = strcmp(s->labels[ix[i]].name, s->labels[ix[j]].name) <= 0 ? ix[i++] : ix[j++];
            while (i < mid)
                tmp[k++] = ix[i++];
            while (j < hi)
                tmp[k++] = ix[j++];
        }
        memcpy(ix, tmp, n * sizeof *ix);
    }
    free(tmp);
    return ix;
}

/* ---- JSON ------------------------------------------------------------------ */

json_t *ps_vjson_uint(uint64_t v)
{
    return json_integer(v > (uint64_t)INT64_MAX ? INT64_MAX : (json_int_t)v);
}

static json_t *dist_field_json(const ps_vdist *d, int f, ps_vjson_cache *c)
{
    uint64_t n = d->n[f];
    json_t *o = json_object();
    if (!o)
        return NULL;
    int bad = 0;
    bad |= json_object_set_new(o, "n", ps_vjson_uint(n));
    bad |= json_object_set_new(o, "sum", ps_vjson_uint(d->sum[f]));
    bad |= json_object_set_new(o, "mean", json_real(n ? (double)d->sum[f] / (double)n : 0));
    bad |= json_object_set_new(o, "max", ps_vjson_uint(d->max[f]));
    bad |= json_object_set_new(o, "p50", json_real(ps_sm_quantile(d->hist[f], n, 0.50, d->max[f])));
    bad |= json_object_set_new(o, "p90", json_real(ps_sm_quantile(d->hist[f], n, 0.90, d->max[f])));
    bad |= json_object_set_new(o, "p99", json_real(ps_sm_quantile(d->hist[f], n, 0.99, d->max[f])));
    bad |= json_object_set_new(o, "hist", ps_vjson_hist_cached(c, d->hist[f], PS_VBINS));
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *dist_json(const ps_vdist *d, ps_vjson_cache *c)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    for (int f = 0; f < PS_VF_N; f++) {
        json_t *v = (f == PS_VF_TOKENS && !d->n[f]) ? json_null() : dist_field_json(d, f, c);
        if (!v || json_object_set_new(o, ps_vfield_names[f], v)) {
            json_decref(o);
            return NULL;
        }
    }
    return o;
}

static double rate(uint64_t a, uint64_t b)
{
    return b ? (double)a / (double)b : 0.0;
}

json_t *ps_vstats_to_json(const ps_vstats *s)
{
    if (!s)
        return NULL;
    uint64_t parsed = s->records - s->unparsed;
    json_t *o = json_object(), *h = json_object(), *labels = json_array();
    ps_vjson_cache *c = ps_vjson_cache_new();
    if (!o || !h || !labels || !c)
        goto fail;
    int bad = 0;
    bad |= json_object_set_new(o, "point", json_string(s->point));
    bad |= json_object_set_new(o, "records", ps_vjson_uint(s->records));
    bad |= json_object_set_new(o, "unparsed", ps_vjson_uint(s->unparsed));
    bad |= json_object_set_new(o, "parsed", ps_vjson_uint(parsed));
    bad |= json_object_set_new(o, "unlabeled", ps_vjson_uint(s->unlabeled));
    bad |= json_object_set_new(o, "label_count", ps_vjson_uint(s->nlabels));
    bad |= json_object_set_new(h, "empty_question", ps_vjson_uint(s->empty_question));
    bad |= json_object_set_new(h, "empty_sql", ps_vjson_uint(s->empty_sql));
    bad |= json_object_set_new(h, "changed", ps_vjson_uint(s->changed));
    bad |= json_object_set_new(h, "invalid_utf8", ps_vjson_uint(s->invalid_utf8));
    bad |= json_object_set_new(h, "records_with_controls_removed", ps_vjson_uint(s->records_with_controls));
    bad |= json_object_set_new(h, "controls_removed", ps_vjson_uint(s->controls_removed));
    bad |= json_object_set_new(h, "records_with_tokens", ps_vjson_uint(s->records_with_tokens));
    bad |= json_object_set_new(h, "tokens", ps_vjson_uint(s->tokens));
    bad |= json_object_set_new(h, "unk_tokens", ps_vjson_uint(s->unk_tokens));
    bad |= json_object_set_new(h, "records_with_unk", ps_vjson_uint(s->records_with_unk));
    bad |= json_object_set_new(h, "truncated", ps_vjson_uint(s->truncated));
    bad |= json_object_set_new(h, "empty_question_rate", json_real(rate(s->empty_question, parsed)));
    bad |= json_object_set_new(h, "empty_sql_rate", json_real(rate(s->empty_sql, parsed)));
    bad |= json_object_set_new(h, "changed_rate", json_real(rate(s->changed, parsed)));
    bad |= json_object_set_new(h, "invalid_utf8_rate", json_real(rate(s->invalid_utf8, parsed)));
    bad |= json_object_set_new(h, "unk_token_rate", json_real(rate(s->unk_tokens, s->tokens)));
    bad |= json_object_set_new(h, "unk_record_rate",
                               json_real(rate(s->records_with_unk, s->records_with_tokens)));
    bad |= json_object_set_new(h, "truncation_rate",
                               json_real(rate(s->truncated, s->records_with_tokens)));
    bad |= json_object_set_new(o, "health", h);
    h = NULL;
    bad |= json_object_set_new(o, "lengths", dist_json(&s->all, c));
    if (s->records_with_tokens) {
        json_t *te = ps_vjson_hist_cached(c, s->tok_exact, PS_VTOK_EXACT);
        bad |= json_object_set_new(o, "tokens_exact", te);
    }
    uint64_t padded, toks;
    if (ps_vstats_padding(s, &padded, &toks)) {
        json_t *b = json_array();
        for (size_t i = 0; b && i < s->nbounds; i++)
            bad |= json_array_append_new(b, ps_vjson_uint(s->bounds[i]));
        bad |= json_object_set_new(
            o, "padding",
            json_pack("{sosososf}", "bounds", b ? b : json_null(), "tokens", ps_vjson_uint(toks),
                      "padded_tokens", ps_vjson_uint(padded), "padding_rate",
                      padded ? (double)(padded - toks) / (double)padded : 0.0));
    } else {
        bad |= json_object_set_new(o, "padding", json_null());
    }
    if (s->nhlevels)
        bad |= json_object_set_new(o, "hardness", ps_vhard_to_json(s, s->hard));
    if (!strcmp(s->point, "tokenized")) {
        json_t *u = ps_vunk_to_json(s->unk, 0);
        bad |= !u || json_object_set_new(o, "unk_words", u);
    }
    size_t *ix = ps_vstats_sorted_labels(s);
    if (s->nlabels && !ix)
        goto fail;
    for (size_t i = 0; i < s->nlabels && !bad; i++) {
        const ps_vlabel *l = &s->labels[ix[i]];
        json_t *e = json_pack("{sssosfso}", "label", l->name, "records", ps_vjson_uint(l->records),
                              "share", rate(l->records, parsed - s->unlabeled), "lengths",
                              dist_json(&l->d, c));
        if (e && s->nhlevels)
            bad |= json_object_set_new(e, "hardness", ps_vhard_to_json(s, l->hard));
        bad |= !e || json_array_append_new(labels, e);
    }
    free(ix);
    bad |= json_object_set_new(o, "labels", labels);
    labels = NULL;
    if (bad)
        goto fail;
    ps_vjson_cache_free(c);
    return o;
fail:
    ps_vjson_cache_free(c);
    json_decref(o);
    json_decref(h);
    json_decref(labels);
    return NULL;
}

/* ---- loading ----------------------------------------------------------------- */

int ps_vjson_u64(json_t *o, const char *key, uint64_t *out, const char *ctx, ps_error *err)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return ps_error_set(err, PS_EFORMAT, "%s: '%s' must be a non-negative integer", ctx, key);
    *out = (uint64_t)json_integer_value(v);
    return 0;
}

const char *ps_vjson_opt_str(json_t *o, const char *key, bool *ok)
{
    json_t *v = json_object_get(o, key);
    if (v && !json_is_null(v) && !json_is_string(v))
        *ok = false;
    return json_string_value(v);
}

int ps_vjson_fields(json_t *o, void *base, const ps_vjson_field *t, size_t n, const char *ctx,
                    ps_error *err)
{
    for (size_t i = 0; i < n; i++) {
        int rc = 0;
        switch (t[i].type) {
        case PS_VJSON_U64:
            rc = ps_vjson_u64(o, t[i].key, (uint64_t *)((char *)base + t[i].offset), ctx, err);
            break;
        }
        if (rc)
            return rc;
    }
    return 0;
}

int ps_vjson_label_entry(json_t *e, size_t i, const char *prev, int name_cap, const char **name,
                         const char *ctx, ps_error *err)
{
    *name = json_string_value(json_object_get(e, "label"));
    if (!json_is_object(e) || !*name)
        return ps_error_set(err, PS_EFORMAT, "%s: label %zu must be an object with a string 'label'",
                            ctx, i);
    if (prev && strcmp(prev, *name) >= 0)
        return ps_error_set(err, PS_EFORMAT, "%s: labels must be sorted and unique ('%.*s')", ctx,
                            name_cap, *name);
    return 0;
}

int ps_vjson_hist(json_t *a, uint64_t *h, size_t nbins, uint64_t *total, const char *ctx,
                  ps_error *err)
{
    memset(h, 0, nbins * sizeof *h);
    if (!json_is_array(a))
        return ps_error_set(err, PS_EFORMAT, "%s: 'hist' must be an array", ctx);
    long long prev = -1;
    uint64_t t = 0;
    size_t i;
    json_t *e;
    json_array_foreach(a, i, e)
    {
        json_t *b = json_array_get(e, 0), *c = json_array_get(e, 1);
        if (!json_is_array(e) || json_array_size(e) != 2 || !json_is_integer(b) ||
            !json_is_integer(c))
            return ps_error_set(err, PS_EFORMAT, "%s: hist entry %zu must be [bin, count]", ctx, i);
        long long bi = json_integer_value(b), ci = json_integer_value(c);
        if (bi <= prev || bi >= (long long)nbins)
            return ps_error_set(err, PS_EFORMAT,
                                "%s: hist entry %zu: bin %lld out of order or range (0..%zu)", ctx,
                                i, bi, nbins - 1);
        if (ci < 1)
            return ps_error_set(err, PS_EFORMAT, "%s: hist entry %zu: count %lld must be >= 1",
                                ctx, i, ci);
        if (__builtin_add_overflow(t, (uint64_t)ci, &t))
            return ps_error_set(err, PS_EFORMAT, "%s: hist counts overflow", ctx);
        h[bi] = (uint64_t)ci;
        prev = bi;
    }
    *total = t;
    return 0;
}

static int dist_from_json(json_t *o, ps_vdist *d, bool tokens_allowed, const char *ctx,
                          ps_error *err)
{
    char c2[160];
    if (!json_is_object(o))
        return ps_error_set(err, PS_EFORMAT, "%s: 'lengths' must be an object", ctx);
    for (int f = 0; f < PS_VF_N; f++) {
        snprintf(c2, sizeof c2, "%s.%s", ctx, ps_vfield_names[f]);
        json_t *v = json_object_get(o, ps_vfield_names[f]);
        if (f == PS_VF_TOKENS && (!v || json_is_null(v)))
            continue;
        if (f == PS_VF_TOKENS && !tokens_allowed)
            return ps_error_set(err, PS_EFORMAT, "%s: tokens before tokenization", c2);
        if (!json_is_object(v))
            return ps_error_set(err, PS_EFORMAT, "%s: must be an object", c2);
        uint64_t n, sum, max, total;
        int rc;
        if ((rc = ps_vjson_u64(v, "n", &n, c2, err)) || (rc = ps_vjson_u64(v, "sum", &sum, c2, err)) ||
            (rc = ps_vjson_u64(v, "max", &max, c2, err)) ||
            (rc = ps_vjson_hist(json_object_get(v, "hist"), d->hist[f], PS_VBINS, &total, c2, err)))
            return rc;
        if (total != n)
            return ps_error_set(err, PS_EFORMAT, "%s: hist counts sum to %llu, n is %llu", c2,
                                (unsigned long long)total, (unsigned long long)n);
        if (max > UINT32_MAX)
            return ps_error_set(err, PS_EFORMAT, "%s: max out of range", c2);
        if (n) {
            uint32_t top = 0;
            for (uint32_t b = 0; b < PS_VBINS; b++)
                if (d->hist[f][b])
                    top = b;
            if (ps_vbin_of((uint32_t)max) != top)
                return ps_error_set(err, PS_EFORMAT, "%s: max %llu is not in the last bin", c2,
                                    (unsigned long long)max);
            /* the sum lies between the bins' lower and upper edges */
            unsigned __int128 lo = 0, hi = 0;
            for (uint32_t b = 0; b < PS_VBINS; b++) {
                lo += (unsigned __int128)d->hist[f][b] * ps_vbin_lo(b);
                uint64_t up = b == PS_VBIN_OVERFLOW ? max : ps_vbin_hi(b) - 1;
                hi += (unsigned __int128)d->hist[f][b] * (up < max ? up : max);
            }
            if (sum < lo || sum > hi)
                return ps_error_set(err, PS_EFORMAT, "%s: sum %llu does not fit the histogram", c2,
                                    (unsigned long long)sum);
        } else if (sum || max) {
            return ps_error_set(err, PS_EFORMAT, "%s: sum and max must be 0 when n is 0", c2);
        }
        d->n[f] = n;
        d->sum[f] = sum;
        d->max[f] = (uint32_t)max;
    }
    return 0;
}

/* The record counts at the top of the file; parsed and label_count are
 * checked against the rest and not kept. */
typedef struct head_counts {
    uint64_t records, unparsed, parsed, unlabeled, label_count;
} head_counts;

static const ps_vjson_field head_fields[] = {
    {"records", offsetof(head_counts, records), PS_VJSON_U64},
    {"unparsed", offsetof(head_counts, unparsed), PS_VJSON_U64},
    {"parsed", offsetof(head_counts, parsed), PS_VJSON_U64},
    {"unlabeled", offsetof(head_counts, unlabeled), PS_VJSON_U64},
    {"label_count", offsetof(head_counts, label_count), PS_VJSON_U64},
};

static const ps_vjson_field health_fields[] = {
    {"empty_question", offsetof(ps_vstats, empty_question), PS_VJSON_U64},
    {"empty_sql", offsetof(ps_vstats, empty_sql), PS_VJSON_U64},
    {"changed", offsetof(ps_vstats, changed), PS_VJSON_U64},
    {"invalid_utf8", offsetof(ps_vstats, invalid_utf8), PS_VJSON_U64},
    {"records_with_controls_removed", offsetof(ps_vstats, records_with_controls), PS_VJSON_U64},
    {"controls_removed", offsetof(ps_vstats, controls_removed), PS_VJSON_U64},
    {"records_with_tokens", offsetof(ps_vstats, records_with_tokens), PS_VJSON_U64},
    {"tokens", offsetof(ps_vstats, tokens), PS_VJSON_U64},
    {"unk_tokens", offsetof(ps_vstats, unk_tokens), PS_VJSON_U64},
    {"records_with_unk", offsetof(ps_vstats, records_with_unk), PS_VJSON_U64},
    {"truncated", offsetof(ps_vstats, truncated), PS_VJSON_U64},
};

#define NFIELDS(t) (sizeof(t) / sizeof(t)[0])

/* The head and health counters, and whether they agree with each other. */
static int counts_from_json(json_t *j, ps_vstats *s, head_counts *hc, const char *ctx,
                            ps_error *err)
{
    int rc;
    if ((rc = ps_vjson_fields(j, hc, head_fields, NFIELDS(head_fields), ctx, err)))
        return rc;
    s->records = hc->records;
    s->unparsed = hc->unparsed;
    s->unlabeled = hc->unlabeled;
    uint64_t parsed = hc->parsed;
    if (s->unparsed > s->records || parsed != s->records - s->unparsed || s->unlabeled > parsed)
        return ps_error_set(err, PS_EFORMAT, "%s: records, unparsed, parsed and unlabeled disagree",
                            ctx);
    json_t *h = json_object_get(j, "health");
    if (!json_is_object(h))
        return ps_error_set(err, PS_EFORMAT, "%s: 'health' must be an object", ctx);
    if ((rc = ps_vjson_fields(h, s, health_fields, NFIELDS(health_fields), ctx, err)))
        return rc;
    if (s->empty_question > parsed || s->empty_sql > parsed || s->changed > parsed ||
        s->invalid_utf8 > parsed || s->records_with_controls > parsed ||
        s->records_with_controls > s->controls_removed ||
        (s->controls_removed && !s->records_with_controls) || s->records_with_tokens > parsed ||
        s->unk_tokens > s->tokens || s->records_with_unk > s->records_with_tokens ||
        s->records_with_unk > s->unk_tokens || s->truncated > s->records_with_tokens)
        return ps_error_set(err, PS_EFORMAT, "%s: health counters out of range", ctx);
    return 0;
}

/* The overall length distributions and the exact token lengths, checked
 * against the record counts and each other. */
static int lengths_from_json(json_t *j, ps_vstats *s, uint64_t parsed, const char *ctx,
                             ps_error *err)
{
    int rc;
    if ((rc = dist_from_json(json_object_get(j, "lengths"), &s->all,
                             !strcmp(s->point, "tokenized"), "statistics.lengths", err)))
        return rc;
    if (s->all.n[PS_VF_QUESTION] != parsed || s->all.n[PS_VF_SQL] != parsed ||
        s->all.n[PS_VF_TOKENS] != s->records_with_tokens ||
        s->all.sum[PS_VF_TOKENS] != s->tokens)
        return ps_error_set(err, PS_EFORMAT, "%s: length counts disagree with the record counts",
                            ctx);
    json_t *te = json_object_get(j, "tokens_exact");
    if (te && !json_is_null(te)) {
        uint64_t tt;
        if ((rc = ps_vjson_hist(te, s->tok_exact, PS_VTOK_EXACT, &tt, "statistics.tokens_exact",
                                err)))
            return rc;
        for (uint32_t l = 0; l < PS_VTOK_EXACT; l++)
            if (s->tok_exact[l] > s->all.hist[PS_VF_TOKENS][ps_vbin_of(l)])
                return ps_error_set(err, PS_EFORMAT,
                                    "%s: tokens_exact disagrees with the tokens histogram", ctx);
        for (uint32_t b = 0; b < 256; b++)
            if (s->tok_exact[b] != s->all.hist[PS_VF_TOKENS][b])
                return ps_error_set(err, PS_EFORMAT,
                                    "%s: tokens_exact disagrees with the tokens histogram", ctx);
    } else if (s->records_with_tokens) {
        return ps_error_set(err, PS_EFORMAT, "%s: 'tokens_exact' missing", ctx);
    }
    return 0;
}

/* padding.bounds (absent or null: no padding figures). */
static int padding_from_json(json_t *pad, ps_vstats *s, const char *ctx, ps_error *err)
{
    if (!pad || json_is_null(pad))
        return 0;
    json_t *b = json_object_get(pad, "bounds");
    if (!json_is_object(pad) || !json_is_array(b) || json_array_size(b) > 65536)
        return ps_error_set(err, PS_EFORMAT, "%s: 'padding.bounds' must be an array", ctx);
    size_t nb = json_array_size(b);
    uint32_t *bv = calloc(nb + 1, sizeof *bv);
    if (!bv)
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    for (size_t i = 0; i < nb; i++) {
        json_t *e = json_array_get(b, i);
        json_int_t v = json_is_integer(e) ? json_integer_value(e) : -1;
        if (v < 1 || v > UINT32_MAX || (i && (uint32_t)v <= bv[i - 1])) {
            free(bv);
            return ps_error_set(err, PS_EFORMAT,
                                "%s: padding bounds must be increasing positive integers", ctx);
        }
        bv[i] = (uint32_t)v;
    }
    int rc = ps_vstats_set_padding(s, bv, nb);
    free(bv);
    if (rc)
        return ps_error_set(err, rc, "%s: padding bounds", ctx);
    return 0;
}

/* unk_words: absent in files of earlier versions. */
static int unk_from_json(json_t *uw, ps_vstats *s, const char *ctx, ps_error *err)
{
    if (!uw || json_is_null(uw))
        return 0;
    if (strcmp(s->point, "tokenized"))
        return ps_error_set(err, PS_EFORMAT, "%s: 'unk_words' before tokenization", ctx);
    if (unk_tables(s))
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    return ps_vunk_from_json(uw, s->unk, err);
}

/* One entry of 'labels': its records and length distributions. */
static int label_from_json(json_t *e, size_t i, const char *prev, ps_vstats *s,
                           uint64_t *label_sum, const char *ctx, ps_error *err)
{
    const char *name;
    int rc = ps_vjson_label_entry(e, i, prev, INT_MAX, &name, ctx, err);
    if (rc)
        return rc;
    ps_vlabel *l = get_label(s, name, 0);
    if (!l)
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    char c3[200];
    snprintf(c3, sizeof c3, "statistics label '%.100s'", name);
    if ((rc = ps_vjson_u64(e, "records", &l->records, c3, err)) ||
        (rc = dist_from_json(json_object_get(e, "lengths"), &l->d, !strcmp(s->point, "tokenized"),
                             c3, err)))
        return rc;
    if (l->d.n[PS_VF_QUESTION] != l->records || l->d.n[PS_VF_SQL] != l->records ||
        l->d.n[PS_VF_TOKENS] > l->records)
        return ps_error_set(err, PS_EFORMAT, "%s: length counts disagree with records", c3);
    if ((rc = ps_vhard_from_json(json_object_get(e, "hardness"), s, l->hard, l->records, c3, err)))
        return rc;
    if (__builtin_add_overflow(*label_sum, l->records, label_sum))
        return ps_error_set(err, PS_EFORMAT, "%s: label counts overflow", ctx);
    return 0;
}

/* The labels' histograms add up to at most the overall ones. */
static int labels_within_overall(const ps_vstats *s, const char *ctx, ps_error *err)
{
    ps_vdist *acc = calloc(1, sizeof *acc);
    if (!acc)
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    for (size_t k = 0; k < s->nlabels; k++)
        for (int f = 0; f < PS_VF_N; f++)
            for (uint32_t b = 0; b < PS_VBINS; b++)
                acc->hist[f][b] += s->labels[k].d.hist[f][b]; /* each <= parsed: no overflow */
    bool over = false;
    for (int f = 0; f < PS_VF_N; f++)
        for (uint32_t b = 0; b < PS_VBINS; b++)
            over |= acc->hist[f][b] > s->all.hist[f][b];
    free(acc);
    if (over)
        return ps_error_set(err, PS_EFORMAT,
                            "%s: the labels' length histograms exceed the overall ones", ctx);
    return 0;
}

static int labels_from_json(json_t *labels, ps_vstats *s, const head_counts *hc, const char *ctx,
                            ps_error *err)
{
    int rc;
    if (hc->label_count > PS_VSTATS_MAX_LABELS)
        return ps_error_set(err, PS_ELIMIT, "%s: %llu labels, more than %u", ctx,
                            (unsigned long long)hc->label_count, PS_VSTATS_MAX_LABELS);
    if (!json_is_array(labels) || json_array_size(labels) != hc->label_count)
        return ps_error_set(err, PS_EFORMAT, "%s: 'labels' must be an array of label_count entries",
                            ctx);
    size_t i;
    json_t *e;
    const char *prev = NULL;
    uint64_t lsum = 0;
    json_array_foreach(labels, i, e)
    {
        if ((rc = label_from_json(e, i, prev, s, &lsum, ctx, err)))
            return rc;
        prev = json_string_value(json_object_get(e, "label"));
    }
    if ((rc = labels_within_overall(s, ctx, err)))
        return rc;
    if (lsum + s->unlabeled != hc->parsed)
        return ps_error_set(err, PS_EFORMAT,
                            "%s: label records (%llu) + unlabeled (%llu) != parsed (%llu)", ctx,
                            (unsigned long long)lsum, (unsigned long long)s->unlabeled,
                            (unsigned long long)hc->parsed);
    return 0;
}

int ps_vstats_from_json(json_t *j, ps_vstats **out, ps_error *err)
{
    *out = NULL;
    const char *ctx = "statistics";
    int rc;
    if (!json_is_object(j))
        return ps_error_set(err, PS_EFORMAT, "%s: must be a JSON object", ctx);
    const char *point = json_string_value(json_object_get(j, "point"));
    if (!point_ok(point))
        return ps_error_set(err, PS_EFORMAT,
                            "%s: 'point' must be \"raw\", \"cleaned\" or \"tokenized\"", ctx);
    ps_vstats *s = ps_vstats_new(point);
    if (!s)
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    char c2[160];
    snprintf(c2, sizeof c2, "statistics '%s'", point);
    ctx = c2;
    head_counts hc;
    if ((rc = counts_from_json(j, s, &hc, ctx, err)) ||
        (rc = lengths_from_json(j, s, hc.parsed, ctx, err)) ||
        (rc = padding_from_json(json_object_get(j, "padding"), s, ctx, err)) ||
        (rc = unk_from_json(json_object_get(j, "unk_words"), s, ctx, err)) ||
        (rc = ps_vhard_from_json(json_object_get(j, "hardness"), s, s->hard, hc.parsed, ctx, err)) ||
        (rc = labels_from_json(json_object_get(j, "labels"), s, &hc, ctx, err)))
        goto fail;
    *out = s;
    return 0;
fail:
    ps_vstats_free(s);
    return rc;
}
