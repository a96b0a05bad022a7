/*
 * The leakage check of a build with held-out sets (group "leakage"): the
 * kinds whose share of training records is over its limit, the limits
 * being the config's leakage_max_<kind> parameters (validate/leakage.h).
 */
#include "validate/checks.h"
#include "validate/leakage.h"

#include <math.h>

void ps_vconfig_leak_limits(const ps_vconfig *c, ps_leak_limits *l)
{
    ps_leak_limits_init(l);
    for (int k = 0; c && k < PS_LEAK_KINDS; k++)
        l->max_fraction[k] = c->param[P_LEAK_FIRST + k] >= 1.0 ? -1.0 : c->param[P_LEAK_FIRST + k];
}

/* The limits into the report's thresholds, beside the check's own. */
static int limits_json(const ps_leak_limits *l, json_t *config)
{
    json_t *th = json_object_get(config, "thresholds");
    int bad = th ? 0 : 1;
    for (int k = 0; !bad && k < PS_LEAK_KINDS; k++) {
        char name[64];
        snprintf(name, sizeof name, "leakage_max_%s", ps_leak_kind_name((ps_leak_kind)k));
        bad |= json_object_set_new(th, name, json_real(l->max_fraction[k] < 0 ? 1.0
                                                                          : l->max_fraction[k]));
    }
    return bad ? PS_ENOMEM : 0;
}

int ps_validate_leakage(const ps_vconfig *c, const ps_leak_tally *t, const ps_leak_limits *lim,
                        json_t *leakage, ps_vreport *r, ps_error *err)
{
    if (!r || !t)
        return 0;
    ps_vconfig *def = NULL;
    if (!c && !(c = def = ps_vconfig_new()))
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    ps_vcheck_ctx x = {c, r, 0, "cleaned", ""};
    ps_leak_limits l;
    if (lim)
        l = *lim;
    else
        ps_vconfig_leak_limits(c, &l);
    x.rc = ps_vconfig_add_group_json(c, r->config, "leakage");
    x.rc = x.rc ? x.rc : limits_json(&l, r->config);
    json_t *over = json_array();
    char worst[160] = "";
    double value = 0;
    for (int k = 0; over && k < PS_LEAK_KINDS; k++) {
        if (!ps_leak_kind_fails(t, &l, (ps_leak_kind)k))
            continue;
        value++;
        json_array_append_new(over, json_string(ps_leak_kind_name((ps_leak_kind)k)));
        if (!worst[0])
            snprintf(worst, sizeof worst, " (first: %s, %llu of %llu records, limit %g)",
                     ps_leak_kind_name((ps_leak_kind)k),
                     (unsigned long long)ps_leak_tally_count(t, (ps_leak_kind)k),
                     (unsigned long long)ps_leak_tally_records(t), l.max_fraction[k]);
    }
    int vd = ps_vcheck_verdict(&x, C_LEAKAGE, value);
    ps_vcheck_push(&x, C_LEAKAGE, value, NAN, json_pack("{so}", "over_limit", over),
                   "%g leakage kinds over their limit against the held-out sets%s: %s", value,
                   worst, ps_vcheck_word(vd));
    json_decref(r->leakage);
    r->leakage = json_incref(leakage);
    ps_vconfig_free(def);
    if (x.rc)
        return ps_error_set(err, x.rc, "validation: out of memory");
    ps_vreport_refresh_verdict(r);
    return 0;
}
