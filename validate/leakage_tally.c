/*
 * Leakage counts per kind and held-out set, the first examples of each,
 * the gate's limits and report.json's "leakage" object (validate/leakage.h).
 */
#include "validate/leakage.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TEXT_MAX 300 /* bytes kept of an example's text (cut at a character) */

typedef struct example {
    char *train_id, *holdout_id, *train_text, *holdout_text;
    double jaccard;
} example;

typedef struct cell {
    uint64_t count;
    example ex[PS_LEAK_EXAMPLES];
    size_t n_ex;
} cell;

struct ps_leak_tally {
    const ps_leak_index *x;
    uint64_t records;
    uint64_t any[PS_LEAK_KINDS];      /* records with the kind against any set */
    uint64_t dropped[PS_LEAK_KINDS];  /* records dropped for the kind */
    uint64_t remain[PS_LEAK_KINDS];   /* records with the kind still in the set */
    uint64_t leaked;                  /* records with any kind */
    cell cells[PS_LEAK_KINDS][PS_LEAK_MAX_HOLDOUTS];
};

int ps_leak_tally_create(const ps_leak_index *x, ps_leak_tally **out)
{
    *out = calloc(1, sizeof **out);
    if (!*out)
        return PS_ENOMEM;
    (*out)->x = x;
    return 0;
}

void ps_leak_tally_free(ps_leak_tally *t)
{
    if (!t)
        return;
    for (int k = 0; k < PS_LEAK_KINDS; k++)
        for (int h = 0; h < PS_LEAK_MAX_HOLDOUTS; h++)
            for (size_t i = 0; i < t->cells[k][h].n_ex; i++) {
                example *e = &t->cells[k][h].ex[i];
                free(e->train_id);
                free(e->holdout_id);
                free(e->train_text);
                free(e->holdout_text);
            }
    free(t);
}

/* A copy of at most TEXT_MAX bytes of s, cut before a continuation byte. */
static char *cut(const char *s)
{
    if (!s)
        return strdup("");
    size_t n = strlen(s);
    if (n > TEXT_MAX) {
        n = TEXT_MAX;
        while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
            n--;
    }
    return strndup(s, n);
}

/* The text an example of kind k shows. */
static const char *shown(ps_leak_kind k, const ps_leak_text *r)
{
    return k == PS_LEAK_DATABASE                           ? r->db_id
           : k == PS_LEAK_QUESTION || k == PS_LEAK_NEAR_QUESTION ? r->question
                                                            : r->sql;
}

int ps_leak_tally_add(ps_leak_tally *t, const ps_leak_text *r, const ps_leak_hits *h,
                      int dropped)
{
    t->records++;
    if (!h->kinds)
        return 0;
    t->leaked++;
    if (dropped >= 0 && dropped < PS_LEAK_KINDS)
        t->dropped[dropped]++;
    unsigned nh = (unsigned)ps_leak_index_holdouts(t->x);
    for (int k = 0; k < PS_LEAK_KINDS; k++) {
        if (!(h->kinds & (1u << k)))
            continue;
        t->any[k]++;
        t->remain[k] += dropped < 0;
        for (unsigned ho = 0; ho < nh; ho++) {
            if (h->rec[k][ho] < 0)
                continue;
            cell *c = &t->cells[k][ho];
            c->count++;
            if (c->n_ex == PS_LEAK_EXAMPLES)
                continue;
            ps_leak_text hr;
            ps_leak_index_record(t->x, h->rec[k][ho], &hr);
            example *e = &c->ex[c->n_ex];
            e->train_id = cut(r->id);
            e->holdout_id = cut(hr.id);
            e->train_text = cut(shown((ps_leak_kind)k, r));
            e->holdout_text = cut(shown((ps_leak_kind)k, &hr));
            e->jaccard = k == PS_LEAK_NEAR_QUESTION ? h->jaccard[ho] : 1.0;
            if (!e->train_id || !e->holdout_id || !e->train_text || !e->holdout_text)
                return PS_ENOMEM; /* freed with the tally: n_ex counts it below */
            c->n_ex++;
        }
    }
    return 0;
}

uint64_t ps_leak_tally_records(const ps_leak_tally *t) { return t->records; }

uint64_t ps_leak_tally_count(const ps_leak_tally *t, ps_leak_kind k)
{
    return (unsigned)k < PS_LEAK_KINDS ? t->any[k] : 0;
}

uint64_t ps_leak_tally_count_in(const ps_leak_tally *t, ps_leak_kind k, unsigned holdout)
{
    return (unsigned)k < PS_LEAK_KINDS && holdout < PS_LEAK_MAX_HOLDOUTS
               ? t->cells[k][holdout].count
               : 0;
}

void ps_leak_limits_init(ps_leak_limits *l)
{
    /* Cross-database evaluation (Spider) allows no shared database; a
     * verbatim question or query is expected now and then (Spider train
     * and dev share a few), a set made of the held-out one is not.
     * Templates recur by design: reported only. */
    static const double def[PS_LEAK_KINDS] = {0.0, 0.01, 0.02, 0.05, -1.0};
    memcpy(l->max_fraction, def, sizeof def);
}

int ps_leak_limits_set(ps_leak_limits *l, const char *spec, unsigned *set, ps_error *err)
{
    const char *eq = strchr(spec, '=');
    char kind[128];
    if (!eq || (size_t)(eq - spec) >= sizeof kind)
        return ps_error_set(err, PS_EUSAGE, "leakage limit '%s' is not KIND=FRACTION", spec);
    memcpy(kind, spec, (size_t)(eq - spec));
    kind[eq - spec] = '\0';
    unsigned mask;
    int rc = ps_leak_kinds_parse(kind, &mask, err);
    if (rc)
        return rc;
    double v = -1.0;
    if (strcmp(eq + 1, "off") != 0) {
        char *end;
        v = strtod(eq + 1, &end);
        if (end == eq + 1 || *end || !(v >= 0.0 && v <= 1.0))
            return ps_error_set(err, PS_EUSAGE, "leakage limit '%s': the fraction must be in "
                                "[0, 1] or 'off'", spec);
    }
    for (int k = 0; k < PS_LEAK_KINDS; k++)
        if (mask & (1u << k))
            l->max_fraction[k] = v;
    if (set)
        *set |= mask;
    return 0;
}

static double fraction(const ps_leak_tally *t, ps_leak_kind k)
{
    return t->records ? (double)t->any[k] / (double)t->records : 0.0;
}

static double remaining(const ps_leak_tally *t, ps_leak_kind k)
{
    return t->records ? (double)t->remain[k] / (double)t->records : 0.0;
}

bool ps_leak_kind_fails(const ps_leak_tally *t, const ps_leak_limits *l, ps_leak_kind k)
{
    return l->max_fraction[k] >= 0.0 && remaining(t, k) > l->max_fraction[k];
}

static json_t *examples_json(const cell *c, ps_leak_kind k)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < c->n_ex; i++) {
        const example *e = &c->ex[i];
        json_t *o = json_pack("{s:s, s:s, s:s, s:s}", "train_id", e->train_id, "holdout_id",
                              e->holdout_id, "train", e->train_text, "holdout", e->holdout_text);
        if (o && k == PS_LEAK_NEAR_QUESTION)
            json_object_set_new(o, "jaccard", json_real((double)(long)(e->jaccard * 1e4) / 1e4));
        json_array_append_new(a, o);
    }
    return a;
}

json_t *ps_leak_tally_json(const ps_leak_tally *t, const ps_leak_limits *l)
{
    unsigned nh = (unsigned)ps_leak_index_holdouts(t->x);
    json_t *root = json_object(), *holdouts = json_array(), *kinds = json_object();
    if (!root || !holdouts || !kinds) {
        json_decref(root);
        json_decref(holdouts);
        json_decref(kinds);
        return NULL;
    }
    for (unsigned h = 0; h < nh; h++)
        json_array_append_new(holdouts, json_pack("{s:s, s:I}", "name",
                                                  ps_leak_index_holdout_name(t->x, h), "records",
                                                  (json_int_t)ps_leak_index_holdout_records(t->x, h)));
    for (int k = 0; k < PS_LEAK_KINDS; k++) {
        json_t *per = json_array();
        for (unsigned h = 0; per && h < nh; h++)
            json_array_append_new(per, json_pack("{s:s, s:I, s:o}", "holdout",
                                                 ps_leak_index_holdout_name(t->x, h), "records",
                                                 (json_int_t)t->cells[k][h].count, "examples",
                                                 examples_json(&t->cells[k][h], (ps_leak_kind)k)));
        double lim = l->max_fraction[k];
        json_object_set_new(kinds, ps_leak_kind_name((ps_leak_kind)k),
                            json_pack("{s:I, s:f, s:I, s:f, s:o, s:b, s:I, s:o}", "records",
                                      (json_int_t)t->any[k], "fraction",
                                      fraction(t, (ps_leak_kind)k), "remaining",
                                      (json_int_t)t->remain[k], "remaining_fraction",
                                      remaining(t, (ps_leak_kind)k), "max_fraction",
                                      lim >= 0.0 ? json_real(lim) : json_null(), "passed",
                                      !ps_leak_kind_fails(t, l, (ps_leak_kind)k), "dropped",
                                      (json_int_t)t->dropped[k], "per_holdout", per));
    }
    const ps_leak_options *o = ps_leak_index_options(t->x);
    json_object_set_new(root, "near_threshold", json_real(o->near_threshold));
    json_object_set_new(root, "ngram", json_integer((json_int_t)o->ngram));
    json_object_set_new(root, "records", json_integer((json_int_t)t->records));
    json_object_set_new(root, "leaked", json_integer((json_int_t)t->leaked));
    json_object_set_new(root, "holdouts", holdouts);
    json_object_set_new(root, "kinds", kinds);
    return root;
}
