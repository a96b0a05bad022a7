/*
 * Rejections per input, with one example each: "largest rejection cause:
 * missing_field" says what but not why nor where; a build mixing BIRD and
 * Spider needs "bird/dev.json: no field 'sql' or 'query' (fields: ...,
 * SQL, ...)". Part of the paired statistics (mergeable: counts add up,
 * the first example is kept), in report.json as paired.rejected_by_input.
 */
#include "validate/vinternal.h"

#include <stdlib.h>
#include <string.h>

static ps_vinput_reason *find(ps_vpaired *p, const char *input, const char *reason,
                              const char *rule)
{
    /* Rejections come in runs (one input, one cause): try the last hit first. */
    if (p->last_inr < p->ninr) {
        ps_vinput_reason *r = &p->inr[p->last_inr];
        if (!strcmp(r->input, input) && !strcmp(r->reason, reason) && ps_str_eq_opt(r->rule, rule))
            return r;
    }
    for (size_t i = 0; i < p->ninr; i++) {
        ps_vinput_reason *r = &p->inr[i];
        if (!strcmp(r->input, input) && !strcmp(r->reason, reason) && ps_str_eq_opt(r->rule, rule)) {
            p->last_inr = i;
            return r;
        }
    }
    return NULL;
}

int ps_vrejections_add(ps_vpaired *p, const char *input, const char *reason, const char *rule,
                       uint64_t count, const char *source, const char *detail)
{
    ps_vinput_reason *r = find(p, input, reason, rule);
    if (r) {
        r->count += count;
        return 0;
    }
    if (ps_array_grow(&p->inr, &p->inrcap, p->ninr, sizeof *p->inr, 8))
        return PS_ENOMEM;
    r = &p->inr[p->ninr];
    r->input = strdup(input);
    r->reason = strdup(reason);
    r->rule = ps_strdup_opt(rule);
    r->source = ps_strdup_opt(source);
    r->detail = ps_strdup_opt(detail);
    r->count = count;
    if (!r->input || !r->reason || (rule && !r->rule) || (source && !r->source) ||
        (detail && !r->detail)) {
        free(r->input), free(r->reason), free(r->rule), free(r->source), free(r->detail);
        return PS_ENOMEM;
    }
    p->last_inr = p->ninr++;
    return 0;
}

void ps_vrejections_free(ps_vpaired *p)
{
    for (size_t i = 0; i < p->ninr; i++) {
        ps_vinput_reason *r = &p->inr[i];
        free(r->input), free(r->reason), free(r->rule), free(r->source), free(r->detail);
    }
    free(p->inr);
    p->inr = NULL;
    p->ninr = p->inrcap = 0;
}

int ps_vrejections_merge(ps_vpaired *into, const ps_vpaired *from)
{
    for (size_t i = 0; i < from->ninr; i++) {
        const ps_vinput_reason *r = &from->inr[i];
        if (ps_vrejections_add(into, r->input, r->reason, r->rule, r->count, r->source,
                               r->detail))
            return PS_ENOMEM;
    }
    return 0;
}

const ps_vinput_reason *ps_vrejections_example(const ps_vpaired *p, const char *reason,
                                               const char *rule)
{
    for (size_t i = 0; i < p->ninr; i++)
        if (!strcmp(p->inr[i].reason, reason) && ps_str_eq_opt(p->inr[i].rule, rule))
            return &p->inr[i];
    return NULL;
}

static json_t *str_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

json_t *ps_vrejections_to_json(const ps_vpaired *p)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < p->ninr; i++) {
        const ps_vinput_reason *r = &p->inr[i];
        if (json_array_append_new(
                a, json_pack("{sssssosIs{soso}}", "input", r->input, "reason", r->reason, "rule",
                             str_or_null(r->rule), "count", (json_int_t)r->count, "example",
                             "source", str_or_null(r->source), "detail",
                             str_or_null(r->detail)))) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

/* Entry i of 'rejected_by_input' into p; *sum adds up the entries' counts,
 * which cannot exceed the rejections (the file is untrusted). */
static int rejection_from_json(ps_vpaired *p, json_t *e, size_t i, uint64_t *sum, const char *ctx,
                               ps_error *err)
{
    bool ok = json_is_object(e);
    json_t *ex = json_object_get(e, "example");
    json_t *cnt = json_object_get(e, "count");
    const char *input = json_string_value(json_object_get(e, "input"));
    const char *reason = json_string_value(json_object_get(e, "reason"));
    const char *rule = ok ? ps_vjson_opt_str(e, "rule", &ok) : NULL;
    const char *source = json_is_object(ex) ? ps_vjson_opt_str(ex, "source", &ok) : NULL;
    const char *detail = json_is_object(ex) ? ps_vjson_opt_str(ex, "detail", &ok) : NULL;
    if (!ok || !input || !reason || !json_is_integer(cnt) || json_integer_value(cnt) < 0)
        return ps_error_set(err, PS_EFORMAT, "%s: rejected_by_input entry %zu is malformed", ctx,
                            i);
    uint64_t count = (uint64_t)json_integer_value(cnt);
    if (__builtin_add_overflow(*sum, count, sum) || *sum > p->rejected)
        return ps_error_set(err, PS_EFORMAT, "%s: rejected_by_input counts exceed rejected", ctx);
    if (ps_vrejections_add(p, input, reason, rule, count, source, detail))
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    return 0;
}

int ps_vrejections_from_json(ps_vpaired *p, json_t *a, const char *ctx, ps_error *err)
{
    if (!a) /* statistics written before this member existed */
        return 0;
    if (!json_is_array(a))
        return ps_error_set(err, PS_EFORMAT, "%s: 'rejected_by_input' must be an array", ctx);
    uint64_t sum = 0;
    size_t i;
    json_t *e;
    int rc = 0;
    json_array_foreach(a, i, e)
        if ((rc = rejection_from_json(p, e, i, &sum, ctx, err)))
            break;
    return rc;
}

/* ---- ids shared by kept records ----------------------------------------------
 * Counted by the cleaner in input order; here so that the report can warn
 * (check id_collisions) and merged part sets add them up. */

int ps_vid_collisions_add(ps_vpaired *p, const char *id, uint64_t count)
{
    p->id_collisions += count;
    if (id && p->nid_examples < PS_VID_EXAMPLES) {
        if (!(p->id_examples[p->nid_examples] = strdup(id)))
            return PS_ENOMEM;
        p->nid_examples++;
    }
    return 0;
}

void ps_vid_collisions_free(ps_vpaired *p)
{
    for (size_t i = 0; i < p->nid_examples; i++)
        free(p->id_examples[i]);
    p->nid_examples = 0;
}

int ps_vid_collisions_merge(ps_vpaired *into, const ps_vpaired *from)
{
    into->id_collisions += from->id_collisions;
    for (size_t i = 0; i < from->nid_examples; i++)
        if (ps_vid_collisions_add(into, from->id_examples[i], 0))
            return PS_ENOMEM;
    return 0;
}

json_t *ps_vid_collisions_to_json(const ps_vpaired *p)
{
    json_t *ex = json_array();
    for (size_t i = 0; ex && i < p->nid_examples; i++)
        json_array_append_new(ex, json_string(p->id_examples[i]));
    return ex ? json_pack("{sIso}", "count", (json_int_t)p->id_collisions, "examples", ex) : NULL;
}

int ps_vid_collisions_from_json(ps_vpaired *p, json_t *o, const char *ctx, ps_error *err)
{
    if (!o) /* statistics written before this member existed */
        return 0;
    json_t *cnt = json_object_get(o, "count"), *ex = json_object_get(o, "examples");
    if (!json_is_integer(cnt) || json_integer_value(cnt) < 0 || !json_is_array(ex) ||
        (uint64_t)json_integer_value(cnt) > p->kept)
        return ps_error_set(err, PS_EFORMAT, "%s: 'id_collisions' is malformed", ctx);
    p->id_collisions += (uint64_t)json_integer_value(cnt);
    size_t i;
    json_t *e;
    json_array_foreach(ex, i, e)
    {
        if (!json_is_string(e))
            return ps_error_set(err, PS_EFORMAT, "%s: id_collisions.examples[%zu] is not a string",
                                ctx, i);
        if (ps_vid_collisions_add(p, json_string_value(e), 0))
            return ps_error_set(err, PS_ENOMEM, "out of memory");
    }
    return 0;
}
