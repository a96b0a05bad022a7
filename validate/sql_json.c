/* validate/sql_json.c — ps_vsql to and from the "sql" object of stats.json
 * and report.json (docs/REPORT.md). The reader takes the file as untrusted:
 * every count is checked against the ones it must agree with, so a merge
 * of parts or a report never shows numbers that cannot be. */
#include "validate/vsql.h"
#include "validate/vinternal.h"

#include <stdlib.h>
#include <string.h>

static json_t *str_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

static json_t *rate(uint64_t a, uint64_t b)
{
    return b ? json_real((double)a / (double)b) : json_null();
}

/* Appends v (stolen) to the array *a; when that fails (v NULL, no
 * memory) the array is freed and *a set NULL, which ends the callers'
 * `a && ...` loops. */
static void append_or_drop(json_t **a, json_t *v)
{
    if (json_array_append_new(*a, v)) {
        json_decref(*a);
        *a = NULL;
    }
}

/* [{id, ka: a, kb: b}] or, for execution, [{id, status, message}]. */
static json_t *exlist_json(const ps_vsql_exlist *l, const char *ka, const char *kb)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < l->n; i++) {
        const ps_vsql_ex *e = &l->e[i];
        json_t *o = json_pack("{ss}", "id", e->id);
        int bad = !o;
        if (!bad && l->e[i].status >= 0)
            bad |= json_object_set_new(o, "status", json_string(ps_exec_status_name((ps_exec_status)(e->status))));
        bad |= !o || json_object_set_new(o, ka, str_or_null(e->a));
        if (kb)
            bad |= !o || json_object_set_new(o, kb, str_or_null(e->b));
        if (bad || json_array_append_new(a, o)) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

static json_t *counts_json(const uint64_t c[PS_VSQL_K], json_t *o)
{
    for (int k = 0; o && k < PS_VSQL_K; k++)
        if (json_object_set_new(o, ps_vsql_count_names[k], ps_vjson_uint(c[k]))) {
            json_decref(o);
            return NULL;
        }
    return o;
}

/* {status: count} of the five statuses, in order. */
static json_t *statuses_json(const uint64_t n[PS_VSQL_EXEC_N])
{
    json_t *st = json_object();
    for (int s = 0; st && s < PS_VSQL_EXEC_N; s++)
        if (json_object_set_new(st, ps_exec_status_name((ps_exec_status)(s)), ps_vjson_uint(n[s]))) {
            json_decref(st);
            st = NULL;
        }
    return st;
}

static int cmp_label(const void *a, const void *b)
{
    return strcmp(((const ps_vsql_label *)a)->name, ((const ps_vsql_label *)b)->name);
}

static json_t *labels_json(const ps_vsql *v)
{
    ps_vsql_label *ls = v->nlabels ? malloc(v->nlabels * sizeof *ls) : NULL;
    json_t *a = json_array();
    if ((v->nlabels && !ls) || !a) {
        free(ls);
        json_decref(a);
        return NULL;
    }
    if (v->nlabels) {
        memcpy(ls, v->labels, v->nlabels * sizeof *ls);
        qsort(ls, v->nlabels, sizeof *ls, cmp_label);
    }
    bool exec = ps_vsql_executed(v) > 0;
    for (size_t i = 0; a && i < v->nlabels; i++) {
        json_t *o = counts_json(ls[i].c, json_pack("{ss}", "label", ls[i].name));
        /* a label's statuses only in builds that ran SQL: others keep their bytes */
        if (o && exec && json_object_set_new(o, "execution", statuses_json(ls[i].exec))) {
            json_decref(o);
            o = NULL;
        }
        append_or_drop(&a, o);
    }
    free(ls);
    return a;
}

static json_t *classes_json(const ps_vsql *v)
{
    json_t *a = json_array();
    for (int c = 0; a && c < PS_SQL_CLASSES; c++) {
        json_t *o = json_pack("{sssoso}", "class", ps_sql_class_name((ps_sql_class)(c)), "raw", ps_vjson_uint(v->raw[c]),
                              "clean", ps_vjson_uint(v->clean[c]));
        json_t *re = exlist_json(&v->raw_ex[c], "message", NULL),
               *ce = exlist_json(&v->clean_ex[c], "message", NULL);
        if (!o || !re || !ce || json_object_set_new(o, "raw_examples", re) ||
            json_object_set_new(o, "clean_examples", ce) || json_array_append_new(a, o)) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

/* by_rule: the rules that changed regressed records, most first (ties in
 * rule order). */
static json_t *by_rule_json(const ps_vsql *v, const uint64_t *count)
{
    json_t *a = json_array();
    size_t *ord = v->n_rules ? malloc(v->n_rules * sizeof *ord) : NULL;
    size_t n = 0;
    if (!a || (v->n_rules && !ord)) {
        json_decref(a);
        free(ord);
        return NULL;
    }
    for (size_t i = 0; i < v->n_rules; i++) {
        if (!count[i])
            continue;
        size_t p = n++;
        while (p > 0 && count[ord[p - 1]] < count[i]) {
            ord[p] = ord[p - 1];
            p--;
        }
        ord[p] = i;
    }
    for (size_t i = 0; a && i < n; i++)
        append_or_drop(&a, json_pack("{ssso}", "rule", v->rules[ord[i]], "count",
                                     ps_vjson_uint(count[ord[i]])));
    free(ord);
    return a;
}

/* Execution before and after cleaning (builds that ran the raw SQL too):
 * the raw SQL's statuses, the unlabeled records' cleaned statuses, and
 * the result regressions. */
static int result_json(const ps_vsql *v, json_t *o)
{
    json_t *reg = json_object();
    int bad = !reg;
    bad |= !reg || json_object_set_new(reg, "count", ps_vjson_uint(v->result_regressions));
    bad |= !reg || json_object_set_new(reg, "by_rule", by_rule_json(v, v->rule_result_regressions));
    bad |= !reg || json_object_set_new(reg, "examples", exlist_json(&v->res_ex, "before", "after"));
    if (bad) {
        json_decref(reg);
        return -1;
    }
    return json_object_set_new(o, "before", statuses_json(v->exec_before)) ||
           json_object_set_new(o, "unlabeled", statuses_json(v->unlabeled_exec)) ||
           json_object_set_new(o, "result", json_pack("{soso}", "compared",
                                                      ps_vjson_uint(v->result_compared),
                                                      "regressions", reg));
}

static json_t *execution_json(const ps_vsql *v)
{
    json_t *o = json_pack("{sosososo}", "executed", ps_vjson_uint(ps_vsql_executed(v)), "statuses",
                          statuses_json(v->exec), "rows", ps_vjson_uint(v->rows), "examples",
                          exlist_json(&v->exec_ex, "message", NULL));
    if (o && ps_vsql_executed_before(v) && result_json(v, o)) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *regressions_json(const ps_vsql *v)
{
    json_t *o = json_object();
    int bad = !o;
    bad |= !o || json_object_set_new(o, "count", ps_vjson_uint(v->regressions));
    bad |= !o || json_object_set_new(o, "by_rule", by_rule_json(v, v->rule_regressions));
    bad |= !o || json_object_set_new(o, "examples",
                                     exlist_json(&v->reg_ex, "raw_message", "clean_message"));
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

json_t *ps_vsql_to_json(const ps_vsql *v)
{
    if (!v)
        return NULL;
    json_t *rules = json_array();
    for (size_t i = 0; rules && i < v->n_rules; i++)
        append_or_drop(&rules, json_string(v->rules[i]));
    json_t *o = json_object();
    int bad = !o;
    /* json_object_set_new refuses (and -1s) a NULL value: one check each */
    bad |= !o || json_object_set_new(o, "records", ps_vjson_uint(v->records));
    for (int k = 0; k < PS_VSQL_K; k++)
        bad |= !o || json_object_set_new(o, ps_vsql_count_names[k], ps_vjson_uint(v->c[k]));
    bad |= !o || json_object_set_new(o, "compile_rate_raw",
                                     rate(v->c[PS_VSQL_RAW_OK], v->c[PS_VSQL_CHECKED]));
    bad |= !o || json_object_set_new(o, "compile_rate_clean",
                                     rate(v->c[PS_VSQL_CLEAN_OK], v->c[PS_VSQL_CLEAN_CHECKED]));
    bad |= !o || json_object_set_new(o, "gold_table_recall",
                                     rate(v->c[PS_VSQL_GOLD_TABLES], v->c[PS_VSQL_GOLD]));
    bad |= !o || json_object_set_new(o, "gold_column_recall",
                                     rate(v->c[PS_VSQL_GOLD_COLUMNS], v->c[PS_VSQL_GOLD]));
    bad |= !o || json_object_set_new(o, "classes", classes_json(v));
    bad |= !o || json_object_set_new(o, "labels", labels_json(v));
    bad |= !o || json_object_set_new(o, "unlabeled", counts_json(v->unlabeled, json_object()));
    bad |= !o || json_object_set_new(o, "regressions", regressions_json(v));
    bad |= !o || json_object_set_new(o, "fixed",
                                     json_pack("{soso}", "count", ps_vjson_uint(v->fixed), "examples",
                                               exlist_json(&v->fix_ex, "raw_message", "clean_message")));
    bad |= !o || json_object_set_new(o, "execution", execution_json(v));
    bad |= !o || json_object_set_new(o, "shortening",
                                     json_pack("{sososo}", "records", ps_vjson_uint(v->shortened),
                                               "tables_dropped", ps_vjson_uint(v->tables_dropped),
                                               "columns_dropped", ps_vjson_uint(v->columns_dropped)));
    bad |= !o || json_object_set_new(o, "rules", rules);
    bad |= !o || json_object_set_new(o, "max_examples", json_integer(PS_VSQL_EXAMPLES));
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* ---- reading (untrusted) --------------------------------------------------- */

static const char *CTX = "sql statistics";

static int bad_format(ps_error *err, const char *what)
{
    return ps_error_set(err, PS_EFORMAT, "%s: %s", CTX, what);
}

/* An examples array: at most PS_VSQL_EXAMPLES and at most `count`
 * entries, each {id, ka, kb?} (status too when `exec`). */
static int exlist_from(json_t *a, ps_vsql_exlist *l, uint64_t count, const char *ka, const char *kb,
                       bool exec, const char *what, ps_error *err)
{
    if (!json_is_array(a) || json_array_size(a) > PS_VSQL_EXAMPLES || json_array_size(a) > count)
        return ps_error_set(err, PS_EFORMAT,
                            "%s: %s: examples must be an array of at most %d, and not more than "
                            "its count",
                            CTX, what, PS_VSQL_EXAMPLES);
    size_t i;
    json_t *e;
    json_array_foreach(a, i, e)
    {
        bool ok = json_is_object(e);
        const char *id = json_string_value(json_object_get(e, "id"));
        const char *ma = ok ? ps_vjson_opt_str(e, ka, &ok) : NULL,
                   *mb = ok && kb ? ps_vjson_opt_str(e, kb, &ok) : NULL;
        int status = -1;
        if (ok && exec) {
            const char *s = json_string_value(json_object_get(e, "status"));
            if (s && !strcmp(s, "error"))
                status = PS_EXEC_ERROR;
            else if (s && !strcmp(s, "timeout"))
                status = PS_EXEC_TIMEOUT;
            ok = status >= 0;
        }
        if (!ok || !id)
            return ps_error_set(err, PS_EFORMAT, "%s: %s: example %zu is malformed", CTX, what, i);
        if (ps_vsql_ex_push(l, id, ma, mb, status))
            return ps_error_set(err, PS_ENOMEM, "out of memory");
    }
    return 0;
}

/* {status: count} of the five statuses; *sum their total. */
static int statuses_from(json_t *o, uint64_t n[PS_VSQL_EXEC_N], uint64_t *sum, ps_error *err)
{
    if (!json_is_object(o) || json_object_size(o) != PS_VSQL_EXEC_N)
        return bad_format(err, "execution statuses must be an object with the 5 statuses");
    *sum = 0;
    for (int s = 0; s < PS_VSQL_EXEC_N; s++) {
        int rc = ps_vjson_u64(o, ps_exec_status_name((ps_exec_status)(s)), &n[s], CTX, err);
        if (rc)
            return rc;
        if (__builtin_add_overflow(*sum, n[s], sum))
            return bad_format(err, "execution counts overflow");
    }
    return 0;
}

/* The four compile counts of an object, consistent among themselves. */
static int counts_from(json_t *o, uint64_t c[PS_VSQL_K], const char *what, ps_error *err)
{
    if (!json_is_object(o))
        return ps_error_set(err, PS_EFORMAT, "%s: %s must be an object", CTX, what);
    for (int k = 0; k < PS_VSQL_K; k++) {
        int rc = ps_vjson_u64(o, ps_vsql_count_names[k], &c[k], CTX, err);
        if (rc)
            return rc;
    }
    if (c[PS_VSQL_RAW_OK] > c[PS_VSQL_CHECKED] || c[PS_VSQL_CLEAN_OK] > c[PS_VSQL_CLEAN_CHECKED])
        return ps_error_set(err, PS_EFORMAT, "%s: %s: more compiled than checked", CTX, what);
    if (c[PS_VSQL_GOLD_TABLES] > c[PS_VSQL_GOLD] || c[PS_VSQL_GOLD_COLUMNS] > c[PS_VSQL_GOLD])
        return ps_error_set(err, PS_EFORMAT, "%s: %s: more gold kept than measured", CTX, what);
    return 0;
}

static int sum_into(uint64_t s[PS_VSQL_K], const uint64_t c[PS_VSQL_K], ps_error *err)
{
    for (int k = 0; k < PS_VSQL_K; k++)
        if (__builtin_add_overflow(s[k], c[k], &s[k]))
            return bad_format(err, "label counts overflow");
    return 0;
}

/* labels (sorted, unique) and unlabeled add up to the totals. */
static int labels_from(json_t *j, ps_vsql *v, ps_error *err)
{
    json_t *la = json_object_get(j, "labels");
    if (!json_is_array(la) || json_array_size(la) > PS_VSQL_MAX_LABELS)
        return bad_format(err, "'labels' must be an array (of at most 200000)");
    uint64_t s[PS_VSQL_K] = {0};
    int rc = counts_from(json_object_get(j, "unlabeled"), v->unlabeled, "unlabeled", err);
    if (!rc)
        rc = sum_into(s, v->unlabeled, err);
    const char *prev = NULL;
    size_t i;
    json_t *e;
    json_array_foreach(la, i, e)
    {
        const char *name;
        if (rc || (rc = ps_vjson_label_entry(e, i, prev, 100, &name, CTX, err)))
            return rc;
        ps_vsql_label *l = ps_vsql_label_get(v, name);
        if (!l)
            return ps_error_set(err, PS_ENOMEM, "out of memory");
        if ((rc = counts_from(e, l->c, "a label", err)) || (rc = sum_into(s, l->c, err)))
            return rc;
        uint64_t ignored;
        json_t *ex = json_object_get(e, "execution");
        if (ex && (rc = statuses_from(ex, l->exec, &ignored, err)))
            return rc;
        prev = name;
    }
    for (int k = 0; !rc && k < PS_VSQL_K; k++)
        if (s[k] != v->c[k])
            rc = ps_error_set(err, PS_EFORMAT, "%s: the labels' '%s' add up to %llu, not %llu", CTX,
                              ps_vsql_count_names[k], (unsigned long long)s[k],
                              (unsigned long long)v->c[k]);
    return rc;
}

/* classes: one entry per class in order; each side sums to its checked
 * count, class "ok" to its compiled count, and has no examples. */
static int classes_from(json_t *a, ps_vsql *v, ps_error *err)
{
    if (!json_is_array(a) || json_array_size(a) != PS_SQL_CLASSES)
        return ps_error_set(err, PS_EFORMAT, "%s: 'classes' must list the %d classes", CTX,
                            PS_SQL_CLASSES);
    uint64_t sr = 0, sc = 0;
    for (int c = 0; c < PS_SQL_CLASSES; c++) {
        json_t *e = json_array_get(a, (size_t)c);
        const char *name = json_string_value(json_object_get(e, "class"));
        int rc;
        if (!name || strcmp(name, ps_sql_class_name((ps_sql_class)(c))))
            return ps_error_set(err, PS_EFORMAT, "%s: classes[%d] must be '%s'", CTX, c,
                                ps_sql_class_name((ps_sql_class)(c)));
        if ((rc = ps_vjson_u64(e, "raw", &v->raw[c], CTX, err)) ||
            (rc = ps_vjson_u64(e, "clean", &v->clean[c], CTX, err)))
            return rc;
        if (__builtin_add_overflow(sr, v->raw[c], &sr) || __builtin_add_overflow(sc, v->clean[c], &sc))
            return bad_format(err, "class counts overflow");
        uint64_t cap_r = c == PS_SQL_OK ? 0 : v->raw[c], cap_c = c == PS_SQL_OK ? 0 : v->clean[c];
        if ((rc = exlist_from(json_object_get(e, "raw_examples"), &v->raw_ex[c], cap_r, "message",
                              NULL, false, name, err)) ||
            (rc = exlist_from(json_object_get(e, "clean_examples"), &v->clean_ex[c], cap_c,
                              "message", NULL, false, name, err)))
            return rc;
    }
    if (sr != v->c[PS_VSQL_CHECKED] || v->raw[PS_SQL_OK] != v->c[PS_VSQL_RAW_OK] ||
        sc != v->c[PS_VSQL_CLEAN_CHECKED] || v->clean[PS_SQL_OK] != v->c[PS_VSQL_CLEAN_OK])
        return bad_format(err, "the classes disagree with the checked and compiled counts");
    return 0;
}

static int rules_from(json_t *a, ps_vsql **out, ps_error *err)
{
    if (!json_is_array(a) || json_array_size(a) > PS_VSQL_MAX_RULES)
        return bad_format(err, "'rules' must be an array of at most 4096 names");
    size_t n = json_array_size(a);
    const char **names = n ? calloc(n, sizeof *names) : NULL;
    if (n && !names)
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    int rc = 0;
    for (size_t i = 0; !rc && i < n; i++) {
        names[i] = json_string_value(json_array_get(a, i));
        if (!names[i])
            rc = bad_format(err, "'rules' must hold strings");
        for (size_t k = 0; !rc && k < i; k++)
            if (!strcmp(names[k], names[i]))
                rc = ps_error_set(err, PS_EFORMAT, "%s: rule '%.100s' is named twice", CTX, names[i]);
    }
    if (!rc && !(*out = ps_vsql_new(names, n)))
        rc = ps_error_set(err, PS_ENOMEM, "out of memory");
    free(names);
    return rc;
}

static long rule_index(const ps_vsql *v, const char *name)
{
    for (size_t i = 0; name && i < v->n_rules; i++)
        if (!strcmp(v->rules[i], name))
            return (long)i;
    return -1;
}

/* regressions: compiled raw and checked clean, not compiled clean; each
 * rule counted once, at most the count. */
static int regressions_from(json_t *o, ps_vsql *v, ps_error *err)
{
    int rc;
    if (!json_is_object(o))
        return bad_format(err, "'regressions' must be an object");
    if ((rc = ps_vjson_u64(o, "count", &v->regressions, CTX, err)))
        return rc;
    if (v->regressions > v->c[PS_VSQL_RAW_OK] ||
        v->regressions > v->c[PS_VSQL_CLEAN_CHECKED] - v->c[PS_VSQL_CLEAN_OK])
        return bad_format(err, "more regressions than records compiled raw and failed clean");
    json_t *br = json_object_get(o, "by_rule");
    if (!json_is_array(br))
        return bad_format(err, "regressions.by_rule must be an array");
    size_t i;
    json_t *e;
    json_array_foreach(br, i, e)
    {
        long r = rule_index(v, json_string_value(json_object_get(e, "rule")));
        uint64_t c;
        if (r < 0 || v->rule_regressions[r])
            return ps_error_set(err, PS_EFORMAT, "%s: regressions.by_rule[%zu]: not a rule of 'rules', "
                                "or named twice", CTX, i);
        if ((rc = ps_vjson_u64(e, "count", &c, CTX, err)))
            return rc;
        if (!c || c > v->regressions)
            return bad_format(err, "a rule's regressions must be between 1 and the count");
        v->rule_regressions[r] = c;
    }
    return exlist_from(json_object_get(o, "examples"), &v->reg_ex, v->regressions, "raw_message",
                       "clean_message", false, "regressions", err);
}

static int fixed_from(json_t *o, ps_vsql *v, ps_error *err)
{
    int rc;
    if (!json_is_object(o))
        return bad_format(err, "'fixed' must be an object");
    if ((rc = ps_vjson_u64(o, "count", &v->fixed, CTX, err)))
        return rc;
    if (v->fixed > v->c[PS_VSQL_CHECKED] - v->c[PS_VSQL_RAW_OK] || v->fixed > v->c[PS_VSQL_CLEAN_OK])
        return bad_format(err, "more fixed records than failed raw and compiled clean");
    return exlist_from(json_object_get(o, "examples"), &v->fix_ex, v->fixed, "raw_message",
                       "clean_message", false, "fixed", err);
}

/* The labels' and unlabeled statuses add up to the totals. */
static int label_statuses_agree(const ps_vsql *v, ps_error *err)
{
    for (int s = 0; s < PS_VSQL_EXEC_N; s++) {
        uint64_t sum = v->unlabeled_exec[s];
        for (size_t i = 0; i < v->nlabels; i++)
            if (__builtin_add_overflow(sum, v->labels[i].exec[s], &sum))
                return bad_format(err, "execution counts overflow");
        if (sum != v->exec[s])
            return bad_format(err, "the labels' execution statuses do not add up");
    }
    return 0;
}

/* before, unlabeled and result: present when the raw SQL ran too. */
static int result_from(json_t *o, ps_vsql *v, uint64_t executed, ps_error *err)
{
    uint64_t before, ignored;
    json_t *res = json_object_get(o, "result"), *reg = json_object_get(res, "regressions");
    int rc = statuses_from(json_object_get(o, "before"), v->exec_before, &before, err);
    if (!rc)
        rc = statuses_from(json_object_get(o, "unlabeled"), v->unlabeled_exec, &ignored, err);
    if (!rc && !json_is_object(reg))
        rc = bad_format(err, "execution.result.regressions must be an object");
    if (!rc && ((rc = ps_vjson_u64(res, "compared", &v->result_compared, CTX, err)) ||
                (rc = ps_vjson_u64(reg, "count", &v->result_regressions, CTX, err))))
        return rc;
    if (!rc && (before != executed ||
                v->result_compared > v->exec_before[PS_EXEC_OK] + v->exec_before[PS_EXEC_EMPTY] ||
                v->result_regressions > v->result_compared))
        rc = bad_format(err, "the execution before cleaning does not add up");
    if (!rc)
        rc = label_statuses_agree(v, err);
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(reg, "by_rule"), i, e)
    {
        long r = rc ? -1 : rule_index(v, json_string_value(json_object_get(e, "rule")));
        uint64_t c = 0;
        if (!rc && (r < 0 || v->rule_result_regressions[r]))
            rc = bad_format(err, "result regressions by_rule: not a rule of 'rules', or twice");
        if (!rc && !(rc = ps_vjson_u64(e, "count", &c, CTX, err)) &&
            (!c || c > v->result_regressions))
            rc = bad_format(err, "a rule's result regressions must be between 1 and the count");
        if (!rc)
            v->rule_result_regressions[r] = c;
    }
    if (!rc && !json_is_array(json_object_get(reg, "by_rule")))
        rc = bad_format(err, "execution.result.regressions.by_rule must be an array");
    return rc ? rc
              : exlist_from(json_object_get(reg, "examples"), &v->res_ex, v->result_regressions,
                            "before", "after", false, "result regressions", err);
}

static int execution_from(json_t *o, ps_vsql *v, ps_error *err)
{
    int rc;
    uint64_t executed, sum = 0;
    if (!json_is_object(o))
        return bad_format(err, "'execution' must be an object with the 5 statuses");
    if ((rc = ps_vjson_u64(o, "executed", &executed, CTX, err)) ||
        (rc = ps_vjson_u64(o, "rows", &v->rows, CTX, err)) ||
        (rc = statuses_from(json_object_get(o, "statuses"), v->exec, &sum, err)))
        return rc;
    if (sum != executed || executed > v->records)
        return bad_format(err, "the execution counts do not add up");
    if (json_object_get(o, "before") && (rc = result_from(o, v, executed, err)))
        return rc;
    return exlist_from(json_object_get(o, "examples"), &v->exec_ex,
                       v->exec[PS_EXEC_ERROR] + v->exec[PS_EXEC_TIMEOUT], "message", NULL, true,
                       "execution", err);
}

static int rest_from(json_t *j, ps_vsql *v, ps_error *err)
{
    int rc;
    for (int k = 0; k < PS_VSQL_K; k++)
        if ((rc = ps_vjson_u64(j, ps_vsql_count_names[k], &v->c[k], CTX, err)))
            return rc;
    if (v->c[PS_VSQL_RAW_OK] > v->c[PS_VSQL_CHECKED] ||
        v->c[PS_VSQL_CLEAN_OK] > v->c[PS_VSQL_CLEAN_CHECKED] || v->c[PS_VSQL_CHECKED] > v->records ||
        v->c[PS_VSQL_CLEAN_CHECKED] > v->records || v->c[PS_VSQL_GOLD] > v->records ||
        v->c[PS_VSQL_GOLD_TABLES] > v->c[PS_VSQL_GOLD] ||
        v->c[PS_VSQL_GOLD_COLUMNS] > v->c[PS_VSQL_GOLD])
        return bad_format(err, "checked and compiled counts out of range");
    json_t *sh = json_object_get(j, "shortening");
    if ((rc = ps_vjson_u64(sh, "records", &v->shortened, CTX, err)) ||
        (rc = ps_vjson_u64(sh, "tables_dropped", &v->tables_dropped, CTX, err)) ||
        (rc = ps_vjson_u64(sh, "columns_dropped", &v->columns_dropped, CTX, err)))
        return rc;
    if (v->shortened > v->records)
        return bad_format(err, "more records shortened than records");
    if ((rc = classes_from(json_object_get(j, "classes"), v, err)) || (rc = labels_from(j, v, err)) ||
        (rc = regressions_from(json_object_get(j, "regressions"), v, err)) ||
        (rc = fixed_from(json_object_get(j, "fixed"), v, err)))
        return rc;
    return execution_from(json_object_get(j, "execution"), v, err);
}

int ps_vsql_from_json(json_t *j, ps_vsql **out, ps_error *err)
{
    *out = NULL;
    if (!json_is_object(j))
        return bad_format(err, "must be a JSON object");
    ps_vsql *v = NULL;
    int rc = rules_from(json_object_get(j, "rules"), &v, err);
    if (!rc)
        rc = ps_vjson_u64(j, "records", &v->records, CTX, err);
    if (!rc)
        rc = rest_from(j, v, err);
    if (rc) {
        ps_vsql_free(v);
        return rc;
    }
    *out = v;
    return 0;
}
