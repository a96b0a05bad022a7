/* validate/checks_sql.c — the checks of SQL compiled against its schema
 * and run on its database (docs/REPORT.md): a record whose SQL compiled
 * before cleaning and not after, or whose result changed, was broken by
 * cleaning, and the build stops naming the rules that changed it; raw SQL that often fails to compile says the data itself
 * (or the schema given) is suspect, and only warns. */
#include "validate/checks.h"
#include "validate/vsql.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef ps_vcheck_ctx ctx;

/* "'rule' (3), 'other' (1)" from the JSON by_rule list (sorted). */
static void rule_list(char *out, size_t sz, json_t *by_rule)
{
    size_t used = 0, i;
    json_t *e;
    out[0] = '\0';
    json_array_foreach(by_rule, i, e)
    {
        int n = snprintf(out + used, sz - used, "%s'%.80s' (%lld)", i ? ", " : "",
                         json_string_value(json_object_get(e, "rule")),
                         (long long)json_integer_value(json_object_get(e, "count")));
        if (n < 0 || (size_t)n >= sz - used) {
            out[used] = '\0';
            break;
        }
        used += (size_t)n;
    }
}

static void id_list(char *out, size_t sz, const ps_vsql_exlist *l)
{
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = 0; i < l->n; i++) {
        int n = snprintf(out + used, sz - used, "%s'%.80s'", i ? ", " : "", l->e[i].id);
        if (n < 0 || (size_t)n >= sz - used) {
            out[used] = '\0';
            break;
        }
        used += (size_t)n;
    }
}

static void regression_check(ctx *x, const ps_vsql *v, json_t *sql)
{
    json_t *reg = json_object_get(sql, "regressions");
    json_t *by_rule = json_object_get(reg, "by_rule");
    double value = (double)v->regressions;
    int vd = ps_vcheck_verdict(x, C_SQL_REGRESSION, value);
    json_t *d = json_pack("{sIsOsO}", "regressions", (json_int_t)v->regressions, "by_rule", by_rule,
                          "examples", json_object_get(reg, "examples"));
    if (!v->regressions) {
        ps_vcheck_push(x, C_SQL_REGRESSION, value, NAN, d,
             "no record's SQL compiled before cleaning and not after (%llu compiled raw): %s",
             (unsigned long long)v->c[PS_VSQL_RAW_OK], ps_vcheck_word(vd));
        return;
    }
    char rules[400], ids[300];
    rule_list(rules, sizeof rules, by_rule);
    id_list(ids, sizeof ids, &v->reg_ex);
    ps_vcheck_push(x, C_SQL_REGRESSION, value, NAN, d,
         "%llu record%s compiled against %s schema before cleaning and not after; %s%s; e.g. %s "
         "(threshold %.3g): %s",
         (unsigned long long)v->regressions, v->regressions == 1 ? "" : "s",
         v->regressions == 1 ? "its" : "their",
         json_array_size(by_rule) ? "changed by rule " : "changed by no named rule (built-in cleaning)",
         rules, ids, x->c->fail[C_SQL_REGRESSION], ps_vcheck_word(vd));
}

/* Execution before and after cleaning: a record whose raw SQL ran and
 * whose cleaned SQL returns another result (another status, row count or
 * hash of the rows) was changed in meaning by cleaning; the build stops
 * naming the rules that changed it, as for compile regressions. */
static void result_check(ctx *x, const ps_vsql *v, json_t *sql)
{
    json_t *reg = json_object_get(json_object_get(json_object_get(sql, "execution"), "result"),
                                  "regressions");
    json_t *by_rule = json_object_get(reg, "by_rule");
    uint64_t n = v->result_regressions;
    double value = (double)n;
    int vd = ps_vcheck_verdict(x, C_SQL_RESULT_REGRESSION, value);
    json_t *d = json_pack("{sIsIsOsO}", "compared", (json_int_t)v->result_compared, "regressions",
                          (json_int_t)n, "by_rule", by_rule, "examples",
                          json_object_get(reg, "examples"));
    if (!n) {
        ps_vcheck_push(x, C_SQL_RESULT_REGRESSION, value, NAN, d,
             "no record's result changed with cleaning (%llu run before and after): %s",
             (unsigned long long)v->result_compared, ps_vcheck_word(vd));
        return;
    }
    char rules[400], ids[300];
    rule_list(rules, sizeof rules, by_rule);
    id_list(ids, sizeof ids, &v->res_ex);
    const ps_vsql_ex *e = &v->res_ex.e[0];
    ps_vcheck_push(x, C_SQL_RESULT_REGRESSION, value, NAN, d,
         "%llu record%s whose SQL returns another result after cleaning (of %llu run before and "
         "after); %s%s; e.g. %s (before: %s; after: %s) (threshold %.3g): %s",
         (unsigned long long)n, n == 1 ? "" : "s", (unsigned long long)v->result_compared,
         json_array_size(by_rule) ? "changed by rule " : "changed by no named rule (built-in cleaning)",
         rules, ids, v->res_ex.n ? e->a : "?", v->res_ex.n ? e->b : "?",
         x->c->fail[C_SQL_RESULT_REGRESSION], ps_vcheck_word(vd));
}

/* The failing class with the most raw records, or -1. */
static int worst_class(const ps_vsql *v)
{
    int w = -1;
    for (int c = 1; c < PS_SQL_CLASSES; c++)
        if (v->raw[c] && (w < 0 || v->raw[c] > v->raw[w]))
            w = c;
    return w;
}

static void rate_check(ctx *x, const ps_vsql *v)
{
    uint64_t n = v->c[PS_VSQL_CHECKED], ok = v->c[PS_VSQL_RAW_OK];
    double value = (double)ok / (double)n;
    int vd = ps_vcheck_verdict(x, C_SQL_RATE, value);
    int w = worst_class(v);
    char eg[480] = "";
    if (w >= 0 && v->raw_ex[w].n)
        snprintf(eg, sizeof eg, "; most often %s (%llu), e.g. '%.80s': %.200s", ps_sql_class_name((ps_sql_class)(w)),
                 (unsigned long long)v->raw[w], v->raw_ex[w].e[0].id,
                 v->raw_ex[w].e[0].a ? v->raw_ex[w].e[0].a : "");
    ps_vcheck_push(x, C_SQL_RATE, value, NAN,
         json_pack("{sIsIsI}", "checked", (json_int_t)n, "compiled_raw", (json_int_t)ok, "failed_raw",
                   (json_int_t)(n - ok)),
         "%.2f%% of raw SQL compiles against its schema (%llu of %llu; warn under %.4g%%)%s: %s%s",
         100 * value, (unsigned long long)ok, (unsigned long long)n, 100 * x->c->fail[C_SQL_RATE], eg,
         ps_vcheck_word(vd), vd == PS_VV_WARN || vd == PS_VV_FAIL ? " (the data itself is suspect)" : "");
}

/* Gold recall of schema selection: the share of schema prompts that
 * still hold every table their SQL uses (the columns are reported). */
static void recall_check(ctx *x, const ps_vsql *v)
{
    uint64_t n = v->c[PS_VSQL_GOLD], ok = v->c[PS_VSQL_GOLD_TABLES];
    uint64_t cols = v->c[PS_VSQL_GOLD_COLUMNS];
    double value = (double)ok / (double)n;
    int vd = ps_vcheck_verdict(x, C_SCHEMA_RECALL, value);
    ps_vcheck_push(x, C_SCHEMA_RECALL, value, NAN,
         json_pack("{sIsIsIsI}", "records", (json_int_t)n, "gold_tables_kept", (json_int_t)ok,
                   "gold_columns_kept", (json_int_t)cols, "selected", (json_int_t)v->shortened),
         "%.2f%% of schema prompts hold every table their SQL uses (%llu of %llu, %llu with a "
         "selected schema; every column: %.2f%%; fail under %.4g%%): %s",
         100 * value, (unsigned long long)ok, (unsigned long long)n,
         (unsigned long long)v->shortened, 100.0 * (double)cols / (double)n,
         100 * x->c->fail[C_SCHEMA_RECALL], ps_vcheck_word(vd));
}

int ps_validate_sql(const ps_vconfig *c, const ps_vsql *v, ps_vreport *r, ps_error *err)
{
    if (ps_vsql_empty(v) || !r)
        return 0;
    ps_vconfig *def = NULL;
    if (!c && !(c = def = ps_vconfig_new()))
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    json_t *sql = ps_vsql_to_json(v);
    int rc = sql ? ps_vconfig_add_group_json(c, r->config, "sql") : PS_ENOMEM;
    if (!rc && ps_vsql_executed_before(v))
        rc = ps_vconfig_add_group_json(c, r->config, "execution");
    ctx x = {c, r, rc, "raw vs cleaned", ""};
    /* absent, not "pass", when a side was never checked */
    if (v->c[PS_VSQL_CHECKED] && v->c[PS_VSQL_CLEAN_CHECKED])
        regression_check(&x, v, sql);
    if (ps_vsql_executed_before(v))
        result_check(&x, v, sql);
    x.compares = "raw";
    if (v->c[PS_VSQL_CHECKED])
        rate_check(&x, v);
    x.compares = "current";
    if (v->c[PS_VSQL_GOLD])
        recall_check(&x, v);
    ps_vconfig_free(def);
    if (x.rc) {
        json_decref(sql);
        return ps_error_set(err, x.rc, "validation: out of memory");
    }
    json_decref(r->sql);
    r->sql = sql;
    ps_vreport_refresh_verdict(r);
    return 0;
}
