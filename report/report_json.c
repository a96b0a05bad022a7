/* report/report_json.c — report.json (schema in docs/REPORT.md, version 1),
 * the terminal summary, and the statistics file (stats.json). */
#include "report/report.h"
#include "validate/vinternal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define DUMP_FLAGS (JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17))
#define STATS_FILE_MAX ((long long)1 << 29) /* 512 MiB: refuse larger files unread */

static json_t *num_or_null(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static void counts(const ps_vreport *r, size_t c[PS_VV_N])
{
    memset(c, 0, PS_VV_N * sizeof *c);
    for (size_t i = 0; i < r->n; i++)
        c[r->checks[i].verdict]++;
}

static char *headline(const ps_vreport *r)
{
    size_t c[PS_VV_N];
    counts(r, c);
    char buf[256];
    snprintf(buf, sizeof buf,
             "validation (%s): %s — %zu failed, %zu warned, %zu passed, %zu not enough data, %zu off",
             r->mode, r->verdict == PS_VV_FAIL ? "FAIL" : r->verdict == PS_VV_WARN ? "WARN" : "PASS",
             c[PS_VV_FAIL], c[PS_VV_WARN], c[PS_VV_PASS], c[PS_VV_NOT_ENOUGH_DATA], c[PS_VV_OFF]);
    return strdup(buf);
}

int ps_vreport_add_vocab_warning(ps_vreport *r, const char *msg)
{
    if (!r->vocab_warnings && !(r->vocab_warnings = json_array()))
        return PS_ENOMEM;
    return json_array_append_new(r->vocab_warnings, json_string(msg)) ? PS_ENOMEM : PS_OK;
}

int ps_vreport_set_serving(ps_vreport *r, uint64_t changed, uint64_t kept, double threshold,
                           const char *note)
{
    json_decref(r->serving);
    r->serving = json_pack("{sIsIsfsfss}", "changed_by_cleaning", (json_int_t)changed, "kept",
                           (json_int_t)kept, "share", kept ? (double)changed / (double)kept : 0.0,
                           "threshold", threshold, "note", note);
    return r->serving ? PS_OK : PS_ENOMEM;
}

int ps_vreport_set_generation(ps_vreport *r, const ps_vgen *g)
{
    json_decref(r->generation);
    r->generation = ps_vgen_to_json(g, false);
    return r->generation ? PS_OK : PS_ENOMEM;
}

static json_t *report_object(const ps_vreport *r)
{
    size_t c[PS_VV_N];
    counts(r, c);
    char *head = headline(r);
    json_t *o = json_object(), *checks = json_array(), *cn = json_object();
    if (!head || !o || !checks || !cn)
        goto fail;
    int bad = 0;
    bad |= json_object_set_new(o, "report_version", json_integer(1));
    bad |= json_object_set_new(o, "mode", json_string(r->mode));
    bad |= json_object_set_new(o, "verdict", json_string(ps_vverdict_names[r->verdict]));
    bad |= json_object_set_new(o, "summary", json_string(head));
    for (int v = 0; v < PS_VV_N; v++)
        bad |= json_object_set_new(cn, ps_vverdict_names[v], json_integer((json_int_t)c[v]));
    bad |= json_object_set_new(o, "counts", cn);
    cn = NULL;
    if (r->vocab_warnings) /* only when there are some: other reports keep their bytes */
        bad |= json_object_set(o, "vocab_warnings", r->vocab_warnings);
    if (r->serving) /* likewise: only when cleaning changed a large share */
        bad |= json_object_set(o, "serving", r->serving);
    if (r->generation) /* and only for causal and seq2seq sets */
        bad |= json_object_set(o, "prompt_completion", r->generation);
    if (r->leakage) /* and only with held-out sets */
        bad |= json_object_set(o, "leakage", r->leakage);
    for (size_t i = 0; i < r->n; i++) {
        const ps_vcheck *k = &r->checks[i];
        json_t *e = json_object();
        if (!e) {
            bad = 1;
            break;
        }
        bad |= json_object_set_new(e, "name", json_string(k->name));
        bad |= json_object_set_new(e, "group", json_string(k->group));
        bad |= json_object_set_new(e, "compares", json_string(k->compares));
        bad |= json_object_set_new(e, "metric", json_string(k->metric));
        bad |= json_object_set_new(e, "value", num_or_null(k->value));
        bad |= json_object_set_new(e, "threshold", num_or_null(k->threshold));
        bad |= json_object_set_new(e, "warn_threshold", num_or_null(k->warn_threshold));
        bad |= json_object_set_new(e, "op", json_string(k->op));
        bad |= json_object_set_new(e, "mode", json_string(k->mode));
        bad |= json_object_set_new(e, "verdict", json_string(ps_vverdict_names[k->verdict]));
        bad |= json_object_set_new(e, "p_value", num_or_null(k->p_value));
        bad |= json_object_set_new(e, "explanation", json_string(k->explanation));
        bad |= json_object_set_new(e, "details", json_incref(k->details));
        bad |= json_array_append_new(checks, e);
    }
    bad |= json_object_set_new(o, "checks", checks);
    checks = NULL;
    bad |= json_object_set_new(o, "points", json_incref(r->points));
    bad |= json_object_set_new(o, "paired", r->paired ? json_incref(r->paired) : json_null());
    if (r->sql) /* only when SQL was checked: other reports keep their bytes */
        bad |= json_object_set_new(o, "sql", json_incref(r->sql));
    bad |= json_object_set_new(o, "thresholds", json_incref(json_object_get(r->config, "thresholds")));
    bad |= json_object_set_new(o, "modes", json_incref(json_object_get(r->config, "modes")));
    if (r->sources) /* a mixture's: other reports keep their bytes */
        bad |= json_object_set(o, "sources", r->sources);
    if (bad)
        goto fail;
    free(head);
    return o;
fail:
    free(head);
    json_decref(o);
    json_decref(checks);
    json_decref(cn);
    return NULL;
}

json_t *ps_vreport_object(const ps_vreport *r)
{
    return r ? report_object(r) : NULL;
}

char *ps_vreport_text(const json_t *report)
{
    return report ? json_dumps(report, DUMP_FLAGS) : NULL;
}

char *ps_vreport_json(const ps_vreport *r)
{
    json_t *o = ps_vreport_object(r);
    char *s = ps_vreport_text(o);
    json_decref(o);
    return s;
}

/* The words behind a failed or warned [UNK] check, once. */
static int unk_words_summary(ps_buf *b, const ps_vreport *r)
{
    json_t *words = NULL;
    bool flagged = false;
    for (size_t i = 0; i < r->n; i++) {
        const ps_vcheck *k = &r->checks[i];
        if (strncmp(k->name, "unk_", 4))
            continue;
        flagged |= k->verdict == PS_VV_FAIL || k->verdict == PS_VV_WARN;
        if (!words)
            words = json_object_get(k->details, "unk_words");
    }
    return flagged && words ? ps_vunk_summary(b, words) : 0;
}

/* 7000 -> "7,000" (the terminal summary's counts). */
static const char *grouped(json_t *v, char buf[32])
{
    unsigned long long n = json_is_integer(v) && json_integer_value(v) >= 0
                               ? (unsigned long long)json_integer_value(v) : 0;
    char d[24];
    int len = snprintf(d, sizeof d, "%llu", n), o = 0;
    for (int i = 0; i < len; i++) {
        if (i && (len - i) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = d[i];
    }
    buf[o] = '\0';
    return buf;
}

/* One line per error class that holds a record, raw or cleaned, with its
 * first example: the summary says what failed and where to look, not only
 * how many ("  no_such_table  1 raw, 1 after cleaning; e.g. train.json:#3153:
 * no such table: Ref_Company_Types"). */
static int sql_class_lines(ps_buf *b, json_t *sql)
{
    json_t *c;
    size_t i;
    json_array_foreach(json_object_get(sql, "classes"), i, c) {
        const char *name = json_string_value(json_object_get(c, "class"));
        json_t *raw = json_object_get(c, "raw"), *clean = json_object_get(c, "clean");
        if (!name || !strcmp(name, "ok") || (json_integer_value(raw) <= 0 && json_integer_value(clean) <= 0))
            continue;
        json_t *ex = json_array_get(json_object_get(c, "raw_examples"), 0);
        if (!ex)
            ex = json_array_get(json_object_get(c, "clean_examples"), 0);
        const char *id = json_string_value(json_object_get(ex, "id"));
        const char *msg = json_string_value(json_object_get(ex, "message"));
        char x[32], y[32];
        if (ps_buf_printf(b, "  %-19s %s raw, %s after cleaning", name, grouped(raw, x), grouped(clean, y)) ||
            (id && ps_buf_printf(b, "; e.g. %s%s%s", id, msg && *msg ? ": " : "", msg ? msg : "")) || ps_buf_putc(b, '\n'))
            return -1;
    }
    return 0;
}

/* How many labels hold SQL that does not compile (raw or cleaned), and the
 * one with the lowest raw compile rate (the first in label order on a tie). */
static int sql_label_line(ps_buf *b, json_t *sql)
{
    json_t *labels = json_object_get(sql, "labels"), *l, *worst = NULL;
    size_t i, failing = 0;
    double worst_rate = 2.0;
    json_array_foreach(labels, i, l) {
        json_int_t ck = json_integer_value(json_object_get(l, "checked"));
        json_int_t raw = json_integer_value(json_object_get(l, "compiled_raw"));
        json_int_t ckc = json_integer_value(json_object_get(l, "checked_clean"));
        json_int_t clean = json_integer_value(json_object_get(l, "compiled_clean"));
        if (raw >= ck && clean >= ckc)
            continue;
        failing++;
        double rate = ck > 0 ? (double)raw / (double)ck : 1.0;
        if (rate < worst_rate)
            worst_rate = rate, worst = l;
    }
    if (!failing || !worst)
        return 0;
    const char *name = json_string_value(json_object_get(worst, "label"));
    char x[32], y[32];
    return ps_buf_printf(b, "  %zu of %zu labels hold SQL that does not compile; lowest raw rate: '%s', %s of %s\n",
                         failing, json_array_size(labels), name ? name : "",
                         grouped(json_object_get(worst, "compiled_raw"), x),
                         grouped(json_object_get(worst, "checked"), y)) != 0;
}

/* "Schema selection: 569 of 1,029 prompts over their budget; every gold
 * table kept in 97.1% (999), every gold column in 90.4% (930)", and the
 * label with the lowest table recall when there are labels. */
static int schema_line(ps_buf *b, json_t *sql)
{
    json_int_t n = json_integer_value(json_object_get(sql, "gold_checked"));
    if (n <= 0)
        return 0;
    json_int_t t = json_integer_value(json_object_get(sql, "gold_tables_kept"));
    json_int_t c = json_integer_value(json_object_get(sql, "gold_columns_kept"));
    char a[32], d[32], e[32], f[32];
    int bad = ps_buf_printf(b, "Schema selection: %s of %s prompts over their budget; every gold "
                            "table kept in %.1f%% (%s), every gold column in %.1f%% (%s)\n",
                            grouped(json_object_get(json_object_get(sql, "shortening"), "records"), a),
                            grouped(json_object_get(sql, "gold_checked"), d),
                            100.0 * (double)t / (double)n,
                            grouped(json_object_get(sql, "gold_tables_kept"), e),
                            100.0 * (double)c / (double)n,
                            grouped(json_object_get(sql, "gold_columns_kept"), f)) != 0;
    json_t *worst = NULL, *l;
    double low = 2;
    size_t i;
    json_array_foreach(json_object_get(sql, "labels"), i, l) {
        json_int_t ln = json_integer_value(json_object_get(l, "gold_checked"));
        double r = ln ? (double)json_integer_value(json_object_get(l, "gold_tables_kept")) /
                            (double)ln
                      : 2;
        if (r < low) {
            low = r;
            worst = l;
        }
    }
    if (!bad && worst && low < 1)
        bad = ps_buf_printf(b, "  lowest gold table recall of a label: '%s', %.1f%% of %lld\n",
                            json_string_value(json_object_get(worst, "label")), 100 * low,
                            (long long)json_integer_value(json_object_get(worst, "gold_checked"))) != 0;
    return bad;
}

/* "SQL: 7,000 checked, 6,997 compiled raw, 6,997 after cleaning, 0
 * regressions", the classes and labels that failed, and a line on
 * execution when queries ran. */
static int sql_summary(ps_buf *b, json_t *sql)
{
    if (!sql)
        return 0;
    char a[32], c[32], d[32], e[32];
    json_t *reg = json_object_get(sql, "regressions"), *ex = json_object_get(sql, "execution");
    int bad = ps_buf_printf(b, "SQL: %s checked, %s compiled raw, %s after cleaning, %s regression%s\n",
                            grouped(json_object_get(sql, "checked"), a),
                            grouped(json_object_get(sql, "compiled_raw"), c),
                            grouped(json_object_get(sql, "compiled_clean"), d),
                            grouped(json_object_get(reg, "count"), e),
                            json_integer_value(json_object_get(reg, "count")) == 1 ? "" : "s") != 0;
    bad = bad || sql_class_lines(b, sql) || sql_label_line(b, sql) || schema_line(b, sql);
    json_t *st = json_object_get(ex, "statuses");
    if (!bad && json_integer_value(json_object_get(ex, "executed")) > 0) {
        char f[32], g[32], h[32], i[32];
        bad = ps_buf_printf(b, "SQL executed: %s ok, %s empty, %s error, %s timeout\n",
                            grouped(json_object_get(st, "ok"), f), grouped(json_object_get(st, "empty"), g),
                            grouped(json_object_get(st, "error"), h),
                            grouped(json_object_get(st, "timeout"), i)) != 0;
    }
    json_t *res = json_object_get(ex, "result");
    if (!bad && res) {
        char f[32], g[32];
        json_t *n = json_object_get(json_object_get(res, "regressions"), "count");
        bad = ps_buf_printf(b, "SQL results before -> after cleaning: %s compared, %s changed\n",
                            grouped(json_object_get(res, "compared"), f), grouped(n, g)) != 0;
    }
    return bad;
}

char *ps_vreport_summary(const ps_vreport *r)
{
    if (!r)
        return NULL;
    ps_buf b;
    ps_buf_init(&b);
    char *head = headline(r);
    int bad = !head || ps_buf_puts(&b, head) || ps_buf_putc(&b, '\n');
    free(head);
    if (!bad)
        bad = sql_summary(&b, r->sql);
    /* failures first, then warnings */
    for (int pass = 0; pass < 2 && !bad; pass++) {
        int want = pass == 0 ? PS_VV_FAIL : PS_VV_WARN;
        for (size_t i = 0; i < r->n && !bad; i++) {
            const ps_vcheck *k = &r->checks[i];
            if (k->verdict != want)
                continue;
            bad |= ps_buf_printf(&b, "  %-4s %-26s %s\n", want == PS_VV_FAIL ? "FAIL" : "warn",
                                 k->name, k->explanation) != 0;
        }
    }
    if (!bad)
        bad = unk_words_summary(&b, r);
    if (bad) {
        ps_buf_free(&b);
        return NULL;
    }
    return b.data ? b.data : strdup("");
}

/* ---- the statistics file ------------------------------------------------------ */

/* The points of the statistics file, in its order. */
static const char *const K[3] = {"raw", "cleaned", "tokenized"};

/* The statistics file's text from its members' objects (each may be
 * NULL: left out; the references are the caller's). */
static char *stats_file_text(json_t *const pts[3], json_t *paired, const ps_vsql *sql,
                             const ps_vgen *gen)
{
    json_t *o = json_object(), *po = json_object();
    if (!o || !po) {
        json_decref(o);
        json_decref(po);
        return NULL;
    }
    int bad = json_object_set_new(o, "stats_version", json_integer(1));
    for (int i = 0; i < 3; i++)
        if (pts[i])
            bad |= json_object_set(po, K[i], pts[i]);
    bad |= json_object_set_new(o, "points", po);
    if (paired)
        bad |= json_object_set(o, "paired", paired);
    if (!ps_vsql_empty(sql)) {
        json_t *j = ps_vsql_to_json(sql);
        bad |= !j || json_object_set_new(o, "sql", j);
    }
    if (gen) {
        json_t *j = ps_vgen_to_json(gen, true);
        bad |= !j || json_object_set_new(o, "prompt_completion", j);
    }
    char *s = bad ? NULL : json_dumps(o, DUMP_FLAGS);
    json_decref(o);
    return s;
}

char *ps_vstats_file_json(const ps_vstats *raw, const ps_vstats *cleaned,
                          const ps_vstats *tokenized, const ps_vpaired *p, const ps_vsql *sql,
                          const ps_vgen *gen)
{
    const ps_vstats *v[3] = {raw, cleaned, tokenized};
    json_t *pts[3] = {NULL, NULL, NULL}, *paired = NULL;
    bool bad = false;
    for (int i = 0; i < 3; i++)
        bad |= v[i] && !(pts[i] = ps_vstats_to_json(v[i]));
    bad |= p && !(paired = ps_vpaired_to_json(p));
    char *s = bad ? NULL : stats_file_text(pts, paired, sql, gen);
    for (int i = 0; i < 3; i++)
        json_decref(pts[i]);
    json_decref(paired);
    return s;
}

char *ps_vstats_file_json_report(const ps_vreport *r, const ps_vsql *sql, const ps_vgen *gen)
{
    json_t *pts[3];
    for (int i = 0; i < 3; i++) {
        pts[i] = json_object_get(r->points, K[i]);
        if (json_is_null(pts[i]))
            pts[i] = NULL;
    }
    return stats_file_text(pts, r->paired, sql, gen);
}

/* ---- report.json and stats.json together -------------------------------------- */

/* The members both files hold: the three points and the paired view. */
enum { SHARED_N = 4, SHARED_PAIRED = 3 };

/* A string that stands in for shared member i while a file's object is
 * dumped, and its dumped text (both new; NULL when out of memory). */
static json_t *marker(int i)
{
    char m[48];
    snprintf(m, sizeof m, "\x01pairshard-shared-%d\x01", i);
    return json_string(m);
}

/* `text` with each marker's dumped text replaced by its member's: NULL
 * when a marker does not occur exactly once (a string of the report's
 * own that holds one) or out of memory. Frees nothing. */
static char *splice(const char *text, char *const marks[SHARED_N], char *const shared[SHARED_N])
{
    const char *at[SHARED_N] = {NULL};
    size_t len = strlen(text);
    for (int i = 0; i < SHARED_N; i++) {
        if (!shared[i])
            continue;
        at[i] = strstr(text, marks[i]);
        if (!at[i] || strstr(at[i] + 1, marks[i]))
            return NULL;
        len += strlen(shared[i]) - strlen(marks[i]);
    }
    char *out = malloc(len + 1), *o = out;
    if (!out)
        return NULL;
    const char *p = text;
    for (;;) { /* copy up to the next marker, then its member */
        int next = -1;
        for (int i = 0; i < SHARED_N; i++)
            if (at[i] && at[i] >= p && (next < 0 || at[i] < at[next]))
                next = i;
        size_t n = next < 0 ? strlen(p) : (size_t)(at[next] - p);
        memcpy(o, p, n);
        o += n;
        if (next < 0)
            break;
        size_t sn = strlen(shared[next]);
        memcpy(o, shared[next], sn);
        o += sn;
        p = at[next] + strlen(marks[next]);
    }
    *o = '\0';
    return out;
}

/* report.json's text with markers in place of the shared members. */
static char *report_marked(const json_t *report, json_t *const mk[SHARED_N])
{
    json_t *o = json_copy((json_t *)report), *pts = json_object_get(report, "points");
    json_t *np = json_is_object(pts) ? json_copy(pts) : NULL;
    int bad = !o || (json_is_object(pts) && !np);
    for (int i = 0; !bad && np && i < 3; i++)
        if (mk[i])
            bad |= json_object_set(np, K[i], mk[i]);
    if (!bad && np)
        bad |= json_object_set(o, "points", np);
    if (!bad && mk[SHARED_PAIRED])
        bad |= json_object_set(o, "paired", mk[SHARED_PAIRED]);
    char *s = bad ? NULL : json_dumps(o, DUMP_FLAGS);
    json_decref(np);
    json_decref(o);
    return s;
}

int ps_vreport_texts(const ps_vreport *r, const json_t *report, const ps_vsql *sql,
                     const ps_vgen *gen, char **report_json, char **stats_json,
                     double *threaded)
{
    json_t *member[SHARED_N], *mk[SHARED_N] = {NULL};
    char *shared[SHARED_N] = {NULL}, *marks[SHARED_N] = {NULL};
    for (int i = 0; i < 3; i++) {
        member[i] = json_object_get(r->points, K[i]);
        if (json_is_null(member[i]))
            member[i] = NULL;
    }
    member[SHARED_PAIRED] = r->paired;
    /* Each shared member is serialised once and spliced into both texts;
     * nested objects dump the same bytes alone as inside another (no
     * indentation), so the files are what whole dumps would give. */
    bool bad = false;
    for (int i = 0; i < SHARED_N && !bad; i++) {
        if (!member[i] || json_object_get(report, "points") != r->points ||
            json_object_get(report, "paired") != r->paired)
            continue;
        mk[i] = marker(i);
        marks[i] = mk[i] ? json_dumps(mk[i], JSON_ENCODE_ANY | DUMP_FLAGS) : NULL;
        shared[i] = ps_report_dump_labels(member[i], DUMP_FLAGS, r->threads, threaded);
        bad = !mk[i] || !marks[i] || !shared[i];
    }
    char *rm = bad ? NULL : report_marked(report, mk);
    json_t *pts[3] = {mk[0] ? mk[0] : member[0], mk[1] ? mk[1] : member[1],
                      mk[2] ? mk[2] : member[2]};
    char *sm = bad ? NULL
                   : stats_file_text(pts, mk[SHARED_PAIRED] ? mk[SHARED_PAIRED]
                                                            : member[SHARED_PAIRED], sql, gen);
    *report_json = rm ? splice(rm, marks, shared) : NULL;
    *stats_json = sm ? splice(sm, marks, shared) : NULL;
    free(rm);
    free(sm);
    for (int i = 0; i < SHARED_N; i++) {
        json_decref(mk[i]);
        free(marks[i]);
        free(shared[i]);
    }
    if (!*report_json || !*stats_json) { /* a marker clashed, or memory: whole dumps */
        free(*report_json);
        free(*stats_json);
        *report_json = ps_vreport_text(report);
        *stats_json = ps_vstats_file_json_report(r, sql, gen);
    }
    return *report_json && *stats_json ? PS_OK : PS_ENOMEM;
}

int ps_vstats_file_load(const char *path, ps_vstats **raw, ps_vstats **cleaned,
                        ps_vstats **tokenized, ps_vpaired **paired, ps_vsql **sql,
                        ps_vgen **gen, ps_error *err)
{
    /* A regular file only (a FIFO given as --baseline would block
     * forever), bounded before it is read. */
    char *text;
    size_t len;
    int frc = ps_file_read_all(path, "statistics file", (size_t)STATS_FILE_MAX, &text, &len, err);
    if (frc)
        return frc;
    frc = ps_vstats_text_load(text, len, path, raw, cleaned, tokenized, paired, sql, gen, err);
    free(text);
    return frc;
}

int ps_vstats_text_load(const char *text, size_t len, const char *path, ps_vstats **raw,
                        ps_vstats **cleaned, ps_vstats **tokenized, ps_vpaired **paired,
                        ps_vsql **sql, ps_vgen **gen, ps_error *err)
{
    ps_vstats **outs[3] = {raw, cleaned, tokenized};
    for (int i = 0; i < 3; i++)
        if (outs[i])
            *outs[i] = NULL;
    if (paired)
        *paired = NULL;
    if (sql)
        *sql = NULL;
    if (gen)
        *gen = NULL;
    json_error_t je;
    json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!j)
        return ps_error_set(err, PS_EFORMAT, "%s:%d:%d: %s", path, je.line, je.column, je.text);
    int rc = 0;
    ps_vstats *got[3] = {NULL, NULL, NULL};
    ps_vpaired *gp = NULL;
    ps_vsql *gs = NULL;
    ps_vgen *gg = NULL;
    json_t *sv = json_object_get(j, "stats_version"), *rv = json_object_get(j, "report_version");
    json_t *ver = sv ? sv : rv;
    if (!json_is_object(j)) {
        rc = ps_error_set(err, PS_EFORMAT, "%s: not a JSON object", path);
        goto out;
    }
    if (!json_is_integer(ver)) {
        rc = ps_error_set(err, PS_EFORMAT,
                          "%s: neither a statistics file (stats_version) nor a report (report_version)",
                          path);
        goto out;
    }
    if (json_integer_value(ver) != 1) {
        rc = ps_error_set(err, PS_EVERSION, "%s: %s %lld is not supported (1 is)", path,
                          sv ? "stats_version" : "report_version", (long long)json_integer_value(ver));
        goto out;
    }
    json_t *pts = json_object_get(j, "points");
    if (!json_is_object(pts)) {
        rc = ps_error_set(err, PS_EFORMAT, "%s: 'points' must be an object", path);
        goto out;
    }
    for (int i = 0; i < 3; i++) {
        json_t *pj = json_object_get(pts, K[i]);
        if (!outs[i] || !pj || json_is_null(pj))
            continue;
        ps_error e2 = {0};
        if ((rc = ps_vstats_from_json(pj, &got[i], &e2))) {
            ps_error_set(err, rc, "%s: points.%s: %s", path, K[i], e2.message);
            goto out;
        }
        if (strcmp(got[i]->point, K[i])) {
            rc = ps_error_set(err, PS_EFORMAT, "%s: points.%s holds statistics of point '%s'", path,
                              K[i], got[i]->point);
            goto out;
        }
    }
    json_t *pj = json_object_get(j, "paired");
    if (paired && pj && !json_is_null(pj)) {
        ps_error e2 = {0};
        if ((rc = ps_vpaired_from_json(pj, &gp, &e2))) {
            ps_error_set(err, rc, "%s: paired: %s", path, e2.message);
            goto out;
        }
    }
    json_t *sj = json_object_get(j, "sql");
    if (sql && sj && !json_is_null(sj)) {
        ps_error e2 = {0};
        if ((rc = ps_vsql_from_json(sj, &gs, &e2))) {
            ps_error_set(err, rc, "%s: sql: %s", path, e2.message);
            goto out;
        }
    }
    json_t *gj = json_object_get(j, "prompt_completion");
    if (gen && gj) {
        ps_error e2 = {0};
        if ((rc = ps_vgen_from_json(gj, &gg, &e2)))
            ps_error_set(err, rc, "%s: %s", path, e2.message);
    }
out:
    json_decref(j);
    if (rc) {
        for (int i = 0; i < 3; i++)
            ps_vstats_free(got[i]);
        ps_vpaired_free(gp);
        ps_vsql_free(gs);
        ps_vgen_free(gg);
        return rc;
    }
    for (int i = 0; i < 3; i++)
        if (outs[i])
            *outs[i] = got[i];
    if (paired)
        *paired = gp;
    if (sql)
        *sql = gs;
    if (gen)
        *gen = gg;
    return 0;
}
