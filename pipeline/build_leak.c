/*
 * pairshard build with held-out sets (cfg->leak, pipeline/leak_load.h):
 * each worker compares its kept records with the held-out index and
 * rejects those --drop-leaked names (leaked_<kind>, accounted like every
 * rejection); the commit counts every compared record in input order, once
 * the ids are settled, finding a leaked one again for its examples (rare:
 * the rest cost a counter); the checks add the leakage check and the
 * report's object, the manifest the held-out sets' hashes.
 */
#include "pipeline/build_chunk.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The thread's scratch and hits, made on first use. */
static int ensure(ps_encode_ctx *x, ps_error *err)
{
    if (!x->leak_s && ps_leak_scratch_create(&x->leak_s))
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    if (!x->leak_h && !(x->leak_h = malloc(sizeof *x->leak_h)))
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    return 0;
}

static int find(const ps_leak_check *lc, ps_encode_ctx *x, const ps_clean_item *it,
                ps_error *err)
{
    int rc = ensure(x, err);
    if (rc)
        return rc;
    const ps_clean_result *r = &it->res;
    ps_leak_text t = {r->id, r->question, r->sql, r->db_id};
    return ps_leak_find(lc->index, x->leak_s, &t, x->leak_h, err);
}

int ps_build_leak_worker(const ps_build_config *cfg, ps_encode_ctx *x, ps_clean_item *it,
                         ps_error *err)
{
    const ps_leak_check *lc = cfg->leak;
    int rc = ensure(x, err);
    if (rc)
        return rc;
    const ps_clean_result *r = &it->res;
    ps_leak_text t = {r->id, r->question, r->sql, r->db_id};
    int k;
    rc = ps_leak_check_record(lc, x->leak_s, x->leak_h, &t, &k, x->detail, sizeof x->detail,
                                  err);
    if (rc)
        return rc;
    it->leak_checked = true;
    it->leak_kinds = (uint8_t)x->leak_h->kinds;
    if (k >= 0) {
        it->res.outcome = PS_OUTCOME_REJECTED;
        it->res.reason = ps_leak_reason((ps_leak_kind)k);
        it->res.detail = x->detail;
    }
    return 0;
}

int ps_build_leak_commit(ps_build_state *st, const ps_clean_item *it, ps_error *err)
{
    const ps_leak_check *lc = st->cfg->leak;
    const ps_clean_result *r = &it->res;
    ps_leak_text t = {r->id, r->question, r->sql, r->db_id};
    int dropped = -1;
    if (r->outcome == PS_OUTCOME_REJECTED)
        for (int k = 0; k < PS_LEAK_KINDS && dropped < 0; k++)
            if (r->reason == ps_leak_reason((ps_leak_kind)k))
                dropped = k;
    if (!it->leak_kinds) {
        ps_leak_hits none;
        none.kinds = 0;
        return ps_leak_tally_add(lc->tally, &t, &none, -1) ? ps_error_set(err, PS_ENOMEM,
                                                                          "out of memory")
                                                           : 0;
    }
    if (!st->leak_x && !(st->leak_x = calloc(1, sizeof *st->leak_x)))
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    int rc = find(lc, st->leak_x, it, err);
    if (!rc && ps_leak_tally_add(lc->tally, &t, st->leak_x->leak_h, dropped))
        rc = ps_error_set(err, PS_ENOMEM, "out of memory");
    return rc;
}

/* The validate config's limits, those given as --leakage-limit winning. */
static void merged_limits(const ps_leak_config *lc, const ps_vconfig *vc, ps_leak_limits *l)
{
    ps_vconfig_leak_limits(vc, l);
    for (int k = 0; k < PS_LEAK_KINDS; k++)
        if (lc->limits_set & (1u << k))
            l->max_fraction[k] = lc->limits.max_fraction[k];
}

int ps_build_leak_limits(const ps_build_config *cfg, ps_leak_limits *l, ps_error *err)
{
    ps_vconfig *vc = ps_vconfig_new();
    if (!vc)
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    int rc = cfg->validate_json ? ps_vconfig_apply_json(vc, (json_t *)cfg->validate_json, err) : 0;
    if (!rc && cfg->leak)
        merged_limits(cfg->leak->cfg, vc, l);
    ps_vconfig_free(vc);
    return rc;
}

int ps_build_leak_report(ps_build_state *st, ps_error *err)
{
    const ps_build_config *cfg = st->cfg;
    if (!cfg->leak || !st->report)
        return 0;
    ps_vconfig *vc = ps_vconfig_new();
    if (!vc)
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    int rc = cfg->validate_json ? ps_vconfig_apply_json(vc, (json_t *)cfg->validate_json, err) : 0;
    ps_leak_config lcfg = *cfg->leak->cfg;
    merged_limits(cfg->leak->cfg, vc, &lcfg.limits);
    ps_leak_check view = *cfg->leak;
    view.cfg = &lcfg;
    json_t *j = rc ? NULL : ps_leak_check_json(&view);
    if (!rc && !j)
        rc = ps_error_set(err, PS_ENOMEM, "out of memory");
    rc = rc ? rc : ps_validate_leakage(vc, cfg->leak->tally, &lcfg.limits, j, st->report, err);
    json_decref(j);
    ps_vconfig_free(vc);
    return rc;
}

json_t *ps_build_leak_manifest(const ps_build_config *cfg)
{
    const ps_leak_check *lc = cfg->leak;
    if (!lc)
        return NULL;
    json_t *hs = json_array(), *drop = json_array();
    for (size_t i = 0; i < lc->cfg->n_holdouts; i++)
        json_array_append_new(hs, json_pack("{s:s, s:I, s:s, s:b, s:I}", "path",
                                            lc->cfg->holdouts[i], "bytes",
                                            (json_int_t)lc->src[i].bytes, "sha256",
                                            lc->src[i].sha256, "shard_set", lc->src[i].is_set,
                                            "records", (json_int_t)lc->src[i].records));
    for (int k = 0; k < PS_LEAK_KINDS; k++)
        if (lc->cfg->drop_mask & (1u << k))
            json_array_append_new(drop, json_string(ps_leak_kind_name((ps_leak_kind)k)));
    return json_pack("{s:o, s:f, s:i, s:o}", "holdouts", hs, "near_threshold",
                     lc->cfg->opts.near_threshold, "ngram", (int)lc->cfg->opts.ngram,
                     "drop_leaked", drop);
}
