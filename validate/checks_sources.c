/*
 * A mixture's checks per source: the build runs every check (the whole
 * check table, whatever it holds) on each source's statistics as it does
 * on the overall ones, then adds each source's report here. A source's
 * check that does not pass joins the overall report's checks, its
 * explanation naming the source, so that the verdict, the gate and the
 * summary see it; every source's verdict, checks and distributions go to
 * the report's "sources" section.
 */
#include "validate/checks.h"
#include "validate/vinternal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_t *num_or_null(double v) { return isnan(v) ? json_null() : json_real(v); }

/* A source's check as a copy in the overall report, naming the source. */
static int copy_check(ps_vreport *r, const char *name, const ps_vcheck *k)
{
    if (r->n == r->cap) {
        size_t nc = r->cap ? r->cap * 2 : 32;
        ps_vcheck *n = realloc(r->checks, nc * sizeof *n);
        if (!n)
            return PS_ENOMEM;
        r->checks = n;
        r->cap = nc;
    }
    ps_vcheck *c = &r->checks[r->n];
    *c = *k;
    c->group = "source";
    size_t len = strlen(name) + strlen(k->explanation) + 16;
    c->explanation = malloc(len);
    c->compares = strdup(k->compares);
    c->details = json_deep_copy(k->details);
    if (c->explanation)
        snprintf(c->explanation, len, "source '%s': %s", name, k->explanation);
    if (!c->explanation || !c->compares || !c->details ||
        json_object_set_new(c->details, "source", json_string(name))) {
        free(c->explanation);
        free(c->compares);
        json_decref(c->details);
        return PS_ENOMEM;
    }
    r->n++;
    return 0;
}

/* {"name", "verdict", "value", "threshold", "explanation"} of every check. */
static json_t *check_list(const ps_vreport *s)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < s->n; i++) {
        const ps_vcheck *k = &s->checks[i];
        json_t *e = json_pack("{sssssoso ss}", "name", k->name, "verdict",
                              ps_vverdict_names[k->verdict], "value", num_or_null(k->value),
                              "threshold", num_or_null(k->threshold), "explanation",
                              k->explanation);
        if (!e || json_array_append_new(a, e)) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

int ps_vreport_add_source(ps_vreport *r, const char *name, const ps_vreport *s, json_t *extra)
{
    for (size_t i = 0; i < s->n; i++)
        if ((s->checks[i].verdict == PS_VV_FAIL || s->checks[i].verdict == PS_VV_WARN) &&
            copy_check(r, name, &s->checks[i]))
            return PS_ENOMEM;
    ps_vreport_refresh_verdict(r);
    if (!r->sources && !(r->sources = json_array()))
        return PS_ENOMEM;
    json_t *o = json_pack("{sssssO}", "name", name, "verdict", ps_vverdict_names[s->verdict],
                          "points", s->points);
    json_t *checks = o ? check_list(s) : NULL;
    if (!checks || json_object_set_new(o, "checks", checks) ||
        (extra && json_object_update(o, extra)) || json_array_append_new(r->sources, o)) {
        json_decref(o);
        return PS_ENOMEM;
    }
    return 0;
}
