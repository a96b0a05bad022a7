/* validate/sql_stats.c — what compiling each record's SQL against its
 * schema found before and after cleaning, per label and per SQLite error
 * class; the records cleaning broke (regressions) with the rules that
 * changed them; execution and schema shortening counts. Counts and the
 * first few examples only, so parts of a build merge exactly. */
#include "validate/vsql.h"
#include "validate/vinternal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const ps_vsql_count_names[PS_VSQL_K] = {
    "checked", "compiled_raw", "checked_clean", "compiled_clean",
    "gold_checked", "gold_tables_kept", "gold_columns_kept"};

ps_vsql *ps_vsql_new(const char *const *rule_names, size_t n_rules)
{
    ps_vsql *v = calloc(1, sizeof *v);
    if (!v)
        return NULL;
    if (n_rules) {
        v->rules = calloc(n_rules, sizeof *v->rules);
        v->rule_regressions = calloc(n_rules, sizeof *v->rule_regressions);
        v->rule_result_regressions = calloc(n_rules, sizeof *v->rule_result_regressions);
        if (!v->rules || !v->rule_regressions || !v->rule_result_regressions) {
            ps_vsql_free(v);
            return NULL;
        }
    }
    for (size_t i = 0; i < n_rules; i++, v->n_rules++)
        if (!(v->rules[i] = strdup(rule_names[i] ? rule_names[i] : ""))) {
            ps_vsql_free(v);
            return NULL;
        }
    return v;
}

static void exlist_free(ps_vsql_exlist *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->e[i].id);
        free(l->e[i].a);
        free(l->e[i].b);
    }
    l->n = 0;
}

void ps_vsql_free(ps_vsql *v)
{
    if (!v)
        return;
    for (size_t i = 0; i < v->n_rules; i++)
        free(v->rules[i]);
    free(v->rules);
    free(v->rule_regressions);
    free(v->rule_result_regressions);
    for (int c = 0; c < PS_SQL_CLASSES; c++) {
        exlist_free(&v->raw_ex[c]);
        exlist_free(&v->clean_ex[c]);
    }
    exlist_free(&v->reg_ex);
    exlist_free(&v->fix_ex);
    exlist_free(&v->exec_ex);
    exlist_free(&v->res_ex);
    free(v->labels);
    ps_strmap_free(&v->names);
    free(v);
}

/* At most max bytes of s, cut before a continuation byte. */
static char *dup_cut(const char *s, size_t max)
{
    if (!s)
        return NULL;
    size_t n = strlen(s);
    if (n > max) {
        n = max;
        while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
            n--;
    }
    return ps_strndup(s, n);
}

int ps_vsql_ex_push(ps_vsql_exlist *l, const char *id, const char *a, const char *b, int status)
{
    if (l->n == PS_VSQL_EXAMPLES)
        return 0;
    ps_vsql_ex *e = &l->e[l->n];
    e->id = dup_cut(id ? id : "", PS_VSQL_ID_MAX);
    e->a = dup_cut(a, PS_VSQL_MSG_MAX);
    e->b = dup_cut(b, PS_VSQL_MSG_MAX);
    e->status = status;
    if (!e->id || (a && !e->a) || (b && !e->b)) {
        free(e->id);
        free(e->a);
        free(e->b);
        return PS_ENOMEM;
    }
    l->n++;
    return 0;
}

ps_vsql_label *ps_vsql_label_get(ps_vsql *v, const char *name)
{
    void *records = v->labels;
    long i = ps_strmap_slot(&v->names, name, &records, &v->cap, sizeof *v->labels);
    v->labels = records;
    if (i < 0)
        return NULL;
    v->nlabels = v->names.n;
    v->labels[i].name = v->names.keys[i];
    return &v->labels[i];
}

uint64_t ps_vsql_executed(const ps_vsql *v)
{
    uint64_t n = 0;
    for (int s = 0; s < PS_VSQL_EXEC_N; s++)
        n += v->exec[s];
    return n;
}

uint64_t ps_vsql_executed_before(const ps_vsql *v)
{
    uint64_t n = 0;
    for (int s = 0; s < PS_VSQL_EXEC_N; s++)
        n += v->exec_before[s];
    return n;
}

bool ps_vsql_empty(const ps_vsql *v)
{
    return !v || (!v->c[PS_VSQL_CHECKED] && !v->c[PS_VSQL_CLEAN_CHECKED] && !ps_vsql_executed(v) &&
                  !v->shortened && !v->c[PS_VSQL_GOLD]);
}

/* The compile part of a record: classes, examples, regressions, fixes. */
static int add_compile(ps_vsql *v, const ps_vsql_record *r, uint64_t k[PS_VSQL_K])
{
    int rc = 0;
    if (r->raw_class >= 0) {
        k[PS_VSQL_CHECKED]++;
        k[PS_VSQL_RAW_OK] += r->raw_class == PS_SQL_OK;
        v->raw[r->raw_class]++;
        if (r->raw_class != PS_SQL_OK)
            rc = ps_vsql_ex_push(&v->raw_ex[r->raw_class], r->id, r->raw_msg, NULL, -1);
    }
    if (!rc && r->clean_class >= 0) {
        k[PS_VSQL_CLEAN_CHECKED]++;
        k[PS_VSQL_CLEAN_OK] += r->clean_class == PS_SQL_OK;
        v->clean[r->clean_class]++;
        if (r->clean_class != PS_SQL_OK)
            rc = ps_vsql_ex_push(&v->clean_ex[r->clean_class], r->id, r->clean_msg, NULL, -1);
    }
    if (rc || r->raw_class < 0 || r->clean_class < 0)
        return rc;
    if (r->raw_class == PS_SQL_OK && r->clean_class != PS_SQL_OK) {
        /* cleaning broke it: every rule that changed the record is a suspect */
        v->regressions++;
        for (size_t i = 0; r->touched && i < v->n_rules; i++)
            v->rule_regressions[i] += (r->touched[i] & 2) != 0;
        rc = ps_vsql_ex_push(&v->reg_ex, r->id, r->raw_msg, r->clean_msg, -1);
    } else if (r->raw_class != PS_SQL_OK && r->clean_class == PS_SQL_OK) {
        v->fixed++;
        rc = ps_vsql_ex_push(&v->fix_ex, r->id, r->raw_msg, r->clean_msg, -1);
    }
    return rc;
}

/* "ok, 3 rows, 0123456789abcdef" */
static void fingerprint_text(char *out, size_t sz, int status, uint64_t rows, uint64_t hash)
{
    snprintf(out, sz, "%s, %llu row%s, %016llx", ps_exec_status_name((ps_exec_status)status),
             (unsigned long long)rows, rows == 1 ? "" : "s", (unsigned long long)hash);
}

/* The execution part beside the cleaned SQL's status: the label's
 * statuses, the raw SQL's status, and a result regression: a raw query
 * that ran (ok or empty) whose cleaned query's fingerprint differs. */
static int add_result(ps_vsql *v, const ps_vsql_record *r)
{
    uint64_t *to = v->unlabeled_exec;
    if (r->label) {
        ps_vsql_label *l = ps_vsql_label_get(v, r->label);
        if (!l)
            return PS_ENOMEM;
        to = l->exec;
    }
    to[r->exec_status]++;
    if (!r->ran_before)
        return 0;
    v->exec_before[r->exec_before]++;
    if (r->exec_before != PS_EXEC_OK && r->exec_before != PS_EXEC_EMPTY)
        return 0;
    v->result_compared++;
    if (r->exec_before == r->exec_status && r->exec_before_rows == r->exec_rows &&
        r->exec_before_hash == r->exec_hash)
        return 0;
    v->result_regressions++;
    for (size_t i = 0; r->touched && i < v->n_rules; i++)
        v->rule_result_regressions[i] += (r->touched[i] & 2) != 0;
    char a[96], b[96];
    fingerprint_text(a, sizeof a, r->exec_before, r->exec_before_rows, r->exec_before_hash);
    fingerprint_text(b, sizeof b, r->exec_status, r->exec_rows, r->exec_hash);
    return ps_vsql_ex_push(&v->res_ex, r->id, a, b, -1);
}

int ps_vsql_add(ps_vsql *v, const ps_vsql_record *r)
{
    if (!v || !r || r->raw_class < -1 || r->raw_class >= PS_SQL_CLASSES || r->clean_class < -1 ||
        r->clean_class >= PS_SQL_CLASSES || r->exec_status < -1 ||
        r->exec_status >= PS_VSQL_EXEC_N ||
        (r->ran_before && (r->exec_before < 0 || r->exec_before >= PS_VSQL_EXEC_N ||
                           r->exec_status < 0)))
        return PS_EINVAL;
    v->records++;
    uint64_t k[PS_VSQL_K] = {0};
    int rc = add_compile(v, r, k);
    if (rc)
        return rc;
    if (r->gold & PS_VSQL_GOLD_MEASURED) {
        k[PS_VSQL_GOLD]++;
        k[PS_VSQL_GOLD_TABLES] += (r->gold & PS_VSQL_GOLD_TABLES_KEPT) != 0;
        k[PS_VSQL_GOLD_COLUMNS] += (r->gold & PS_VSQL_GOLD_COLUMNS_KEPT) != 0;
    }
    if (k[PS_VSQL_CHECKED] || k[PS_VSQL_CLEAN_CHECKED] || k[PS_VSQL_GOLD]) {
        uint64_t *to = v->unlabeled;
        if (r->label) {
            ps_vsql_label *l = ps_vsql_label_get(v, r->label);
            if (!l)
                return PS_ENOMEM;
            to = l->c;
        }
        for (int i = 0; i < PS_VSQL_K; i++) {
            to[i] += k[i];
            v->c[i] += k[i];
        }
    }
    if (r->exec_status >= 0) {
        v->exec[r->exec_status]++;
        v->rows += r->exec_rows;
        if ((r->exec_status == PS_EXEC_ERROR || r->exec_status == PS_EXEC_TIMEOUT) &&
            (rc = ps_vsql_ex_push(&v->exec_ex, r->id, r->exec_msg, NULL, r->exec_status)))
            return rc;
        if ((rc = add_result(v, r)))
            return rc;
    }
    if (r->shortened) {
        v->shortened++;
        v->tables_dropped += r->tables_dropped;
        v->columns_dropped += r->columns_dropped;
    }
    return 0;
}

/* Appends from's examples while `into` has room: the first seen overall,
 * since parts are merged in input order. */
static int exlist_merge(ps_vsql_exlist *into, const ps_vsql_exlist *from)
{
    for (size_t i = 0; i < from->n; i++) {
        const ps_vsql_ex *e = &from->e[i];
        int rc = ps_vsql_ex_push(into, e->id, e->a, e->b, e->status);
        if (rc)
            return rc;
    }
    return 0;
}

int ps_vsql_merge(ps_vsql *into, const ps_vsql *from)
{
    if (!into || !from || into->n_rules != from->n_rules)
        return PS_EINVAL;
    for (size_t i = 0; i < into->n_rules; i++)
        if (strcmp(into->rules[i], from->rules[i]))
            return PS_EINVAL;
    for (size_t i = 0; i < from->nlabels; i++) {
        ps_vsql_label *l = ps_vsql_label_get(into, from->labels[i].name);
        if (!l)
            return PS_ENOMEM;
        for (int k = 0; k < PS_VSQL_K; k++)
            l->c[k] += from->labels[i].c[k];
        for (int s = 0; s < PS_VSQL_EXEC_N; s++)
            l->exec[s] += from->labels[i].exec[s];
    }
    into->records += from->records;
    for (int k = 0; k < PS_VSQL_K; k++) {
        into->c[k] += from->c[k];
        into->unlabeled[k] += from->unlabeled[k];
    }
    int rc = 0;
    for (int c = 0; c < PS_SQL_CLASSES && !rc; c++) {
        into->raw[c] += from->raw[c];
        into->clean[c] += from->clean[c];
        rc = exlist_merge(&into->raw_ex[c], &from->raw_ex[c]);
        if (!rc)
            rc = exlist_merge(&into->clean_ex[c], &from->clean_ex[c]);
    }
    into->regressions += from->regressions;
    into->fixed += from->fixed;
    for (size_t i = 0; i < into->n_rules; i++)
        into->rule_regressions[i] += from->rule_regressions[i];
    for (int s = 0; s < PS_VSQL_EXEC_N; s++) {
        into->exec[s] += from->exec[s];
        into->exec_before[s] += from->exec_before[s];
        into->unlabeled_exec[s] += from->unlabeled_exec[s];
    }
    into->result_compared += from->result_compared;
    into->result_regressions += from->result_regressions;
    for (size_t i = 0; i < into->n_rules; i++)
        into->rule_result_regressions[i] += from->rule_result_regressions[i];
    into->rows += from->rows;
    into->shortened += from->shortened;
    into->tables_dropped += from->tables_dropped;
    into->columns_dropped += from->columns_dropped;
    if (!rc)
        rc = exlist_merge(&into->reg_ex, &from->reg_ex);
    if (!rc)
        rc = exlist_merge(&into->fix_ex, &from->fix_ex);
    if (!rc)
        rc = exlist_merge(&into->exec_ex, &from->exec_ex);
    if (!rc)
        rc = exlist_merge(&into->res_ex, &from->res_ex);
    return rc;
}
