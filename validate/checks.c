/* validate/checks.c — the checks that gate a build, their thresholds and
 * modes (defaults, overridden by the config's "validate" member), and the
 * report they make. Every check, metric and default is documented in
 * docs/REPORT.md; keep the two in step. */
#include "validate/checks.h"
#include "validate/vinternal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef ps_vcheck_ctx ctx;

const char *const ps_vverdict_names[PS_VV_N] = {"pass", "warn", "fail", "not_enough_data", "off"};

enum { M_OFF = 0, M_WARN, M_FAIL };
static const char *const MODE_NAMES[] = {"off", "warn", "fail"};

/* ---- the checks -------------------------------------------------------------- */

typedef struct checkdef {
    const char *name, *group;
    const char *op; /* ">": fails above the threshold; "<": below */
    double fail, warn;
    int mode;
    const char *metric;
} checkdef;

static const checkdef DEFS[C_N] = {
    {"accounting", "accounting", ">", 0, NAN, M_FAIL,
     "|records_in - (kept + rejected + duplicates)| + |raw.records - records_in| + |cleaned.records - kept|"},
    /* a set of no records trains nothing: readers refuse it (PS_EEMPTY) */
    {"empty_set", "paired", "<", 1, NAN, M_FAIL,
     "kept records (a set that keeps fewer is not published; a --part alone is never judged)"},
    {"label_retention", "paired", "<", 0.8, 0.9, M_FAIL,
     "min over labels (records_in >= min_label_records, lost >= retention_min_lost) of "
     "(kept/records_in of the label) / (kept/records_in overall)"},
    {"rejected_share", "paired", ">", 0.05, 0.01, M_FAIL,
     "max over (reason, rule) of rejected records / records_in"},
    {"empty_after_cleaning", "paired", ">", 0.005, 0, M_FAIL,
     "records that cleaning emptied (reason empty_after_cleaning) / records_in"},
    {"question_length_change", "paired", ">", 0.1, 0.02, M_FAIL,
     "max over all records and each label (kept >= min_label_records) of the share of kept "
     "records whose question length changed by >= length_change_relative (|after-before|/before, chars)"},
    {"sql_length_change", "paired", ">", 0.1, 0.02, M_FAIL,
     "as question_length_change, on the sql field"},
    {"duplicate_rate", "paired", ">", 0.5, 0.1, M_WARN, "duplicates / records_in"},
    {"label_js_distance", "labels", ">", 0.05, 0.02, M_FAIL,
     "Jensen-Shannon distance of the label shares, log base 2: sqrt((KL(P||M) + KL(Q||M)) / 2), M = (P+Q)/2, in [0, 1]"},
    {"label_psi", "labels", ">", 0.2, 0.1, M_FAIL,
     "PSI of the label shares: sum (q_i - p_i) ln(q_i / p_i), a share of 0 replaced by psi_epsilon"},
    {"label_chi2", "labels", ">", 0.3, 0.1, M_WARN,
     "Cramer's V = sqrt(chi2 / N) of the labels x {baseline, current} table (chi-square test of "
     "homogeneity, no continuity correction; its p-value is information only)"},
    {"question_chars_ks", "lengths", ">", 0.1, 0.05, M_FAIL,
     "two-sample Kolmogorov-Smirnov D of question lengths (chars): max |F1 - F2| over the fixed bins"},
    {"sql_chars_ks", "lengths", ">", 0.1, 0.05, M_FAIL, "two-sample KS D of sql lengths (chars)"},
    {"tokens_ks", "lengths", ">", 0.1, 0.05, M_FAIL, "two-sample KS D of encoded pair lengths (tokens)"},
    {"question_chars_ks_label", "lengths", ">", 0.3, 0.2, M_FAIL,
     "max over labels (>= min_label_ks_records on both sides) of the KS D of question lengths"},
    {"sql_chars_ks_label", "lengths", ">", 0.5, 0.35, M_FAIL,
     "max over labels (>= min_label_ks_records on both sides) of the KS D of sql lengths"},
    {"tokens_ks_label", "lengths", ">", 0.3, 0.2, M_FAIL,
     "max over labels (>= min_label_ks_records on both sides) of the KS D of token lengths"},
    {"question_chars_psi", "lengths", ">", 0.2, 0.1, M_FAIL,
     "PSI of question lengths over psi_bins groups of the fixed bins holding about equal baseline mass"},
    {"sql_chars_psi", "lengths", ">", 0.2, 0.1, M_FAIL, "PSI of sql lengths (baseline quantile groups)"},
    {"tokens_psi", "lengths", ">", 0.2, 0.1, M_FAIL, "PSI of token lengths (baseline quantile groups)"},
    {"question_chars_quantiles", "lengths", ">", 0.25, 0.1, M_FAIL,
     "max over p50, p90, p99 of |q_current - q_baseline| / max(q_baseline, 1), question chars"},
    {"sql_chars_quantiles", "lengths", ">", 0.25, 0.1, M_FAIL,
     "max over p50, p90, p99 of the relative shift, sql chars"},
    {"tokens_quantiles", "lengths", ">", 0.25, 0.1, M_FAIL,
     "max over p50, p90, p99 of the relative shift, tokens"},
    /* calibrated on standard sets (docs/REPORT.md): a fitting vocabulary and
     * casing stays under ~1.5% [UNK] tokens, a wrong one goes past ~9%; the
     * record share flags curly quotes in a fifth of CSpider, so it warns only */
    {"unk_token_rate", "health", ">", 0.05, 0.002, M_FAIL, "[UNK] tokens / tokens"},
    {"unk_record_rate", "health", ">", 0.05, 0.01, M_WARN,
     "records with at least one [UNK] / tokenized records"},
    {"unk_rate_increase", "health", ">", 0.005, 0.001, M_FAIL,
     "current [UNK] token rate - baseline [UNK] token rate"},
    {"truncation_rate", "health", ">", 0.05, 0.01, M_FAIL,
     "records longer than max_length (truncated) / tokenized records"},
    {"padding_rate", "health", ">", 0.8, 0.5, M_WARN,
     "(padded slots - tokens) / padded slots, each record padded to its bucket's bound"},
    {"id_collisions", "paired", ">", 0, 0, M_WARN,
     "kept records whose id (from the id field) an earlier kept record has"},
    /* a rule that breaks SQL is the seed incident's twin: any stops the build */
    {"sql_compile_regression", "sql", ">", 0, NAN, M_FAIL,
     "records whose SQL compiled against its schema before cleaning and not after"},
    {"sql_compile_rate", "sql", "<", 0.99, NAN, M_WARN,
     "records whose raw SQL compiled against its schema / records checked"},
    /* schema selection never reads the SQL, so a prompt may lack a table
     * the answer needs; a set where many do teaches guessing */
    {"schema_gold_table_recall", "sql", "<", 0.8, 0.9, M_FAIL,
     "records whose prompt holds every table their SQL uses / records with a schema prompt"},
    /* a record whose ids read back as another text teaches that text */
    {"round_trip", "generation", ">", 0, NAN, M_FAIL,
     "kept records whose stored ids (prefix and appended EOS aside) decode to a text other than "
     "the one rendered, while the tokenizer's own encoding of it decodes back"},
    {"junction_merges", "generation", ">", 0, NAN, M_WARN,
     "causal records with a token of the whole text crossing from the prompt into the "
     "completion (tokenized apart: ids a model never sees at inference)"},
    {"history_hidden", "dialogue", ">", 0, NAN, M_WARN,
     "dialogue turns with earlier utterances that the prompt does not show (no template, or "
     "one without a {history} placeholder)"},
    /* a rule that keeps SQL compiling but changes its answer ('France' ->
     * 'france') teaches wrong answers: any stops the build */
    {"sql_result_regression", "execution", ">", 0, NAN, M_FAIL,
     "records whose raw SQL ran (ok or empty) and whose cleaned SQL's result fingerprint "
     "(status, rows, hash of the rows) differs"},
    /* training on what a model is judged on: any kind over its limit
     * (leakage_max_<kind>, a share of training records) stops the build */
    {"leakage", "leakage", ">", 0, NAN, M_FAIL,
     "leakage kinds (docs/REPORT.md, \"Leakage\") whose share of training records is over "
     "its leakage_max_<kind>"},
    /* a rule or length limit that drops long nested queries leaves the
     * labels flat and the set easier: the same test as label_js_distance */
    {"hardness_js_distance", "hardness", ">", 0.05, 0.02, M_FAIL,
     "Jensen-Shannon distance of the shares of the SQL's hardness levels (Spider's easy, medium, "
     "hard, extra, or the values of --difficulty-field), log base 2, in [0, 1]"},
};

static const struct {
    const char *name;
    double def, lo, hi;
    bool integer;
} PARAMS[P_N] = {
    {"min_records", 100, 1, 1e15, true},
    {"min_label_records", 20, 1, 1e15, true},
    {"min_label_ks_records", 50, 1, 1e15, true},
    {"retention_min_lost", 10, 0, 1e15, true},
    {"length_change_relative", 0.2, 0.01, 1.0, false},
    {"psi_epsilon", PS_SM_PSI_EPS, 1e-12, 0.1, false},
    {"psi_bins", 10, 2, 100, true},
    /* not a check: above this share of kept records changed by cleaning,
     * the build's summary and report.json point to the preprocessor */
    {"serving_note_share", 0.2, 0, 1, false},
    /* validate/leakage.c's ps_leak_limits_init: the same defaults; 1 is
     * "reported only" (a share is never above it) */
    {"leakage_max_database", 0, 0, 1, false},
    {"leakage_max_question", 0.01, 0, 1, false},
    {"leakage_max_near_question", 0.02, 0, 1, false},
    {"leakage_max_sql", 0.05, 0, 1, false},
    {"leakage_max_sql_template", 1, 0, 1, false},
};

ps_vconfig *ps_vconfig_new(void)
{
    ps_vconfig *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    for (int i = 0; i < C_N; i++) {
        c->fail[i] = DEFS[i].fail;
        c->warn[i] = DEFS[i].warn;
        c->mode[i] = DEFS[i].mode;
    }
    for (int i = 0; i < P_N; i++)
        c->param[i] = PARAMS[i].def;
    return c;
}

void ps_vconfig_free(ps_vconfig *c)
{
    free(c);
}

void ps_vconfig_set_threads(ps_vconfig *c, size_t threads)
{
    c->threads = threads;
}

void ps_vconfig_set_slice(ps_vconfig *c, bool slice)
{
    c->slice = slice;
}

double ps_vreport_threaded_seconds(const ps_vreport *r)
{
    return r ? r->threaded_seconds : 0;
}

/* A KS p-value over the config's threads, its seconds counted as the
 * report's threaded work (the build's profile reads them). */
static double ks_p(ps_vcheck_ctx *x, double d, uint64_t n1, uint64_t n2)
{
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    double p = ps_sm_ks_2samp_p_threads(d, n1, n2, x->c->threads);
    clock_gettime(CLOCK_MONOTONIC, &b);
    x->r->threaded_seconds += (double)(b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9;
    return p;
}

static int find_check(const char *name)
{
    for (int i = 0; i < C_N; i++)
        if (!strcmp(DEFS[i].name, name))
            return i;
    return -1;
}

int ps_vconfig_apply_json(ps_vconfig *c, json_t *j, ps_error *err)
{
    if (!j || json_is_null(j))
        return 0;
    if (!json_is_object(j))
        return ps_error_set(err, PS_EUSAGE, "validate: must be an object with \"thresholds\" and \"modes\"");
    ps_vconfig tmp = *c;
    const char *key;
    json_t *v;
    json_object_foreach(j, key, v)
    {
        if (strcmp(key, "thresholds") && strcmp(key, "modes"))
            return ps_error_set(err, PS_EUSAGE,
                                "validate: unknown member '%s' (expected \"thresholds\", \"modes\")", key);
        if (!json_is_object(v))
            return ps_error_set(err, PS_EUSAGE, "validate.%s must be an object", key);
    }
    json_t *th = json_object_get(j, "thresholds");
    json_object_foreach(th, key, v)
    {
        if (!json_is_number(v) || !isfinite(json_number_value(v)))
            return ps_error_set(err, PS_EUSAGE, "validate.thresholds.%s must be a number", key);
        double x = json_number_value(v);
        int p = -1;
        for (int i = 0; i < P_N; i++)
            if (!strcmp(PARAMS[i].name, key))
                p = i;
        if (p >= 0) {
            if (x < PARAMS[p].lo || x > PARAMS[p].hi || (PARAMS[p].integer && x != floor(x)))
                return ps_error_set(err, PS_EUSAGE,
                                    "validate.thresholds.%s: %g out of range (%g..%g%s)", key, x,
                                    PARAMS[p].lo, PARAMS[p].hi, PARAMS[p].integer ? ", integer" : "");
            tmp.param[p] = x;
            continue;
        }
        size_t kl = strlen(key);
        bool warn = kl > 5 && !strcmp(key + kl - 5, "_warn");
        char base[96];
        snprintf(base, sizeof base, "%.*s", (int)(warn ? kl - 5 : kl), key);
        int ci = find_check(base);
        if (ci < 0)
            return ps_error_set(err, PS_EUSAGE, "validate.thresholds: unknown threshold '%s'", key);
        if (x < 0)
            return ps_error_set(err, PS_EUSAGE, "validate.thresholds.%s: must be >= 0", key);
        if (warn)
            tmp.warn[ci] = x;
        else
            tmp.fail[ci] = x;
    }
    json_t *mo = json_object_get(j, "modes");
    json_object_foreach(mo, key, v)
    {
        int ci = find_check(key);
        if (ci < 0)
            return ps_error_set(err, PS_EUSAGE, "validate.modes: unknown check '%s'", key);
        const char *m = json_string_value(v);
        int mi = -1;
        for (int i = 0; m && i < 3; i++)
            if (!strcmp(m, MODE_NAMES[i]))
                mi = i;
        if (mi < 0)
            return ps_error_set(err, PS_EUSAGE,
                                "validate.modes.%s must be \"fail\", \"warn\" or \"off\"", key);
        tmp.mode[ci] = mi;
    }
    *c = tmp;
    return 0;
}

/* ---- the report ------------------------------------------------------------- */

void ps_vreport_free(ps_vreport *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++) {
        free(r->checks[i].compares);
        free(r->checks[i].explanation);
        json_decref(r->checks[i].details);
    }
    free(r->checks);
    json_decref(r->points);
    json_decref(r->paired);
    json_decref(r->sql);
    json_decref(r->config);
    json_decref(r->vocab_warnings);
    json_decref(r->serving);
    json_decref(r->leakage);
    json_decref(r->generation);
    json_decref(r->sources);
    free(r);
}

const char *ps_vreport_verdict(const ps_vreport *r)
{
    return ps_vverdict_names[r ? r->verdict : PS_VV_FAIL];
}

static bool beyond(const char *op, double v, double t)
{
    if (isnan(t))
        return false;
    return op[0] == '<' ? v < t : v > t;
}

static int judge(const ctx *x, int id, double value)
{
    if (x->c->mode[id] == M_OFF)
        return PS_VV_OFF;
    if (isnan(value))
        return PS_VV_NOT_ENOUGH_DATA;
    if (beyond(DEFS[id].op, value, x->c->fail[id]))
        return x->c->mode[id] == M_FAIL ? PS_VV_FAIL : PS_VV_WARN;
    if (beyond(DEFS[id].op, value, x->c->warn[id]))
        return PS_VV_WARN;
    return PS_VV_PASS;
}

void ps_vcheck_push(ctx *x, int id, double value, double p, json_t *details, const char *fmt, ...)
{
    ps_vreport *r = x->r;
    if (x->rc) {
        json_decref(details);
        return;
    }
    if (r->n == r->cap) {
        size_t nc = r->cap ? r->cap * 2 : 32;
        ps_vcheck *n = realloc(r->checks, nc * sizeof *n);
        if (!n) {
            x->rc = PS_ENOMEM;
            json_decref(details);
            return;
        }
        r->checks = n;
        r->cap = nc;
    }
    ps_vcheck *k = &r->checks[r->n];
    memset(k, 0, sizeof *k);
    k->name = DEFS[id].name;
    k->group = DEFS[id].group;
    k->metric = DEFS[id].metric;
    k->op = DEFS[id].op;
    k->mode = MODE_NAMES[x->c->mode[id]];
    k->threshold = x->c->fail[id];
    k->warn_threshold = x->c->warn[id];
    k->verdict = judge(x, id, value);
    k->value = k->verdict == PS_VV_OFF ? NAN : value;
    k->p_value = k->verdict == PS_VV_OFF ? NAN : p;
    k->details = details ? details : json_object();
    k->compares = strdup(x->compares);
    char buf[1024];
    if (k->verdict == PS_VV_OFF) {
        snprintf(buf, sizeof buf, "check turned off in the config");
    } else {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(buf, sizeof buf, fmt, ap);
        va_end(ap);
    }
    k->explanation = strdup(buf);
    if (!k->details || !k->compares || !k->explanation) {
        free(k->compares);
        free(k->explanation);
        json_decref(k->details);
        x->rc = PS_ENOMEM;
        return;
    }
    r->n++;
}

int ps_vcheck_verdict(const ctx *x, int id, double value)
{
    return judge(x, id, value);
}

const char *ps_vcheck_word(int v)
{
    switch (v) {
    case PS_VV_FAIL: return "FAIL";
    case PS_VV_WARN: return "warning";
    default: return "ok";
    }
}

double ps_vcheck_min_records(const ctx *x)
{
    return x->c->param[P_MIN_RECORDS];
}

/* ---- label distribution checks --------------------------------------------- */

typedef struct lrow {
    const char *name;
    uint64_t a, b;
} lrow;

static int cmp_lrow(const void *p, const void *q)
{
    return strcmp(((const lrow *)p)->name, ((const lrow *)q)->name);
}

/* The union of two stats' labels, sorted, with counts. */
static lrow *label_rows(const ps_vstats *A, const ps_vstats *B, size_t *n)
{
    lrow *v = malloc((A->nlabels + B->nlabels + 1) * sizeof *v);
    if (!v)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < A->nlabels; i++) {
        const ps_vlabel *lb = ps_vstats_find_label(B, A->labels[i].name);
        v[k++] = (lrow){A->labels[i].name, A->labels[i].records, lb ? lb->records : 0};
    }
    for (size_t i = 0; i < B->nlabels; i++)
        if (!ps_vstats_find_label(A, B->labels[i].name))
            v[k++] = (lrow){B->labels[i].name, 0, B->labels[i].records};
    qsort(v, k, sizeof *v, cmp_lrow);
    *n = k;
    return v;
}

typedef struct lshift {
    const char *name;
    double sa, sb, d;
    uint64_t a, b;
} lshift;

/* The order of the worst-first lists: the larger d first, then by name. */
static int worst_first(double dx, const char *nx, double dy, const char *ny)
{
    if (dx != dy)
        return dx < dy ? 1 : -1;
    return strcmp(nx, ny);
}

static int cmp_lshift(const void *p, const void *q)
{
    const lshift *x = p, *y = q;
    return worst_first(x->d, x->name, y->d, y->name);
}

/* The labels whose share moved most (details and explanations). */
static json_t *top_shifts(const lrow *v, size_t n, double na, double nb, size_t top, lshift *first)
{
    lshift *s = malloc((n + 1) * sizeof *s);
    json_t *a = json_array();
    if (!s || !a) {
        free(s);
        json_decref(a);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        double sa = na > 0 ? (double)v[i].a / na : 0, sb = nb > 0 ? (double)v[i].b / nb : 0;
        s[i] = (lshift){v[i].name, sa, sb, fabs(sb - sa), v[i].a, v[i].b};
    }
    qsort(s, n, sizeof *s, cmp_lshift);
    if (first)
        *first = n ? s[0] : (lshift){"", 0, 0, 0, 0, 0};
    for (size_t i = 0; i < n && i < top; i++)
        json_array_append_new(a, json_pack("{sssIsIsfsf}", "label", s[i].name, "baseline",
                                           (json_int_t)s[i].a, "current", (json_int_t)s[i].b,
                                           "baseline_share", s[i].sa, "current_share", s[i].sb));
    free(s);
    return a;
}

static void label_checks(ctx *x, const ps_vstats *A, const ps_vstats *B)
{
    size_t n = 0;
    lrow *v = (A && B) ? label_rows(A, B, &n) : NULL;
    if (A && B && !v) {
        x->rc = PS_ENOMEM;
        return;
    }
    double na = 0, nb = 0;
    for (size_t i = 0; i < n; i++) {
        na += (double)v[i].a;
        nb += (double)v[i].b;
    }
    bool enough = v && n >= 2 && na >= ps_vcheck_min_records(x) && nb >= ps_vcheck_min_records(x);
    if (!enough) {
        const char *why = !A || !B ? "statistics missing"
                          : n < 2  ? "fewer than 2 labels"
                                   : "fewer labeled records than min_records";
        char w[160];
        snprintf(w, sizeof w, "not enough data: %s (labeled records %.0f and %.0f, min_records %.0f)",
                 why, na, nb, ps_vcheck_min_records(x));
        ps_vcheck_push(x, C_LABEL_JS, NAN, NAN, NULL, "%s", w);
        ps_vcheck_push(x, C_LABEL_PSI, NAN, NAN, NULL, "%s", w);
        ps_vcheck_push(x, C_LABEL_CHI2, NAN, NAN, NULL, "%s", w);
        free(v);
        return;
    }
    double *pa = malloc(n * sizeof *pa), *pb = malloc(n * sizeof *pb);
    uint64_t *ua = malloc(n * sizeof *ua), *ub = malloc(n * sizeof *ub);
    if (!pa || !pb || !ua || !ub) {
        x->rc = PS_ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        pa[i] = (double)v[i].a;
        pb[i] = (double)v[i].b;
        ua[i] = v[i].a;
        ub[i] = v[i].b;
    }
    lshift top;
    double js = ps_sm_js_distance(pa, pb, n);
    json_t *d = json_pack("{sIsfsfso}", "labels", (json_int_t)n, "baseline_records", na,
                          "current_records", nb, "largest_shifts", top_shifts(v, n, na, nb, 10, &top));
    int vd = ps_vcheck_verdict(x, C_LABEL_JS, js);
    ps_vcheck_push(x, C_LABEL_JS, js, NAN, d,
         "label distribution %s: JS distance %.4f (threshold %.4g); largest shift: '%s' %.2f%% -> %.2f%%",
         vd == PS_VV_PASS ? "stable" : "shifted", js, x->c->fail[C_LABEL_JS], top.name,
         100 * top.sa, 100 * top.sb);
    double psi = ps_sm_psi(pa, pb, n, x->c->param[P_PSI_EPS]);
    d = json_pack("{sfso}", "epsilon", x->c->param[P_PSI_EPS], "largest_shifts",
                  top_shifts(v, n, na, nb, 10, NULL));
    vd = ps_vcheck_verdict(x, C_LABEL_PSI, psi);
    ps_vcheck_push(x, C_LABEL_PSI, psi, NAN, d, "label PSI %.4f (warn %.3g, fail %.3g): %s; largest shift '%s'",
         psi, x->c->warn[C_LABEL_PSI], x->c->fail[C_LABEL_PSI], ps_vcheck_word(vd), top.name);
    double chi2, dof, p, cv;
    ps_sm_chi2_homogeneity(ua, ub, n, &chi2, &dof, &p, &cv);
    d = json_pack("{sfsfsfsf}", "chi2", chi2, "dof", dof, "p_value", p, "n", na + nb);
    vd = ps_vcheck_verdict(x, C_LABEL_CHI2, cv);
    ps_vcheck_push(x, C_LABEL_CHI2, cv, p, d,
         "chi-square %.4g on %.0f dof (p = %.3g, information only); Cramer's V %.4f: %s", chi2, dof,
         p, cv, ps_vcheck_word(vd));
out:
    free(pa);
    free(pb);
    free(ua);
    free(ub);
    free(v);
}

/* ---- length distribution checks ---------------------------------------------- */

static bool widened(const uint64_t *h)
{
    for (size_t b = 256; b < PS_VBINS; b++)
        if (h[b])
            return true;
    return false;
}

typedef struct kslab {
    const char *name;
    double d, p;
    uint64_t n1, n2;
} kslab;

static int cmp_kslab(const void *p, const void *q)
{
    const kslab *a = p, *b = q;
    return worst_first(a->d, a->name, b->d, b->name);
}

static void length_checks(ctx *x, const ps_vstats *A, const ps_vstats *B, int f)
{
    static const int KS[3] = {C_Q_KS, C_S_KS, C_T_KS}, KSL[3] = {C_Q_KS_LABEL, C_S_KS_LABEL, C_T_KS_LABEL},
                     PSI[3] = {C_Q_PSI, C_S_PSI, C_T_PSI}, QU[3] = {C_Q_QUANT, C_S_QUANT, C_T_QUANT};
    const char *fname = ps_vfield_names[f];
    uint64_t n1 = A ? A->all.n[f] : 0, n2 = B ? B->all.n[f] : 0;
    double min_records = ps_vcheck_min_records(x), min_label_ks = x->c->param[P_MIN_LABEL_KS_RECORDS];
    if ((double)n1 < min_records || (double)n2 < min_records) {
        char w[200];
        snprintf(w, sizeof w, "not enough data: %s lengths of %llu and %llu records (min_records %.0f)",
                 fname, (unsigned long long)n1, (unsigned long long)n2, min_records);
        ps_vcheck_push(x, KS[f], NAN, NAN, NULL, "%s", w);
        ps_vcheck_push(x, KSL[f], NAN, NAN, NULL, "%s", w);
        ps_vcheck_push(x, PSI[f], NAN, NAN, NULL, "%s", w);
        ps_vcheck_push(x, QU[f], NAN, NAN, NULL, "%s", w);
        return;
    }
    const uint64_t *h1 = A->all.hist[f], *h2 = B->all.hist[f];
    double d = ps_sm_ks_d(h1, h2, PS_VBINS), p = ks_p(x, d, n1, n2);
    bool exact = !widened(h1) && !widened(h2);
    int vd = ps_vcheck_verdict(x, KS[f], d);
    ps_vcheck_push(x, KS[f], d, p,
         json_pack("{sIsIsbsf}", "n1", (json_int_t)n1, "n2", (json_int_t)n2, "exact", exact,
                   "p_value", p),
         "%s distribution %s: KS D %.4f (threshold %.3g; asymptotic p = %.3g, information only)%s%s",
         fname, vd == PS_VV_PASS ? "stable" : "shifted", d, x->c->fail[KS[f]], p,
         exact ? "" : "; D at the edges of widened bins", vd == PS_VV_PASS ? "" : x->length_cause);

    /* per label */
    kslab *ls = malloc((B->nlabels + 1) * sizeof *ls);
    if (!ls) {
        x->rc = PS_ENOMEM;
        return;
    }
    size_t nl = 0;
    for (size_t i = 0; i < B->nlabels; i++) {
        const ps_vlabel *lb = &B->labels[i], *la = ps_vstats_find_label(A, lb->name);
        if (!la || (double)la->d.n[f] < min_label_ks || (double)lb->d.n[f] < min_label_ks)
            continue;
        double dl = ps_sm_ks_d(la->d.hist[f], lb->d.hist[f], PS_VBINS);
        ls[nl++] = (kslab){lb->name, dl, NAN, la->d.n[f], lb->d.n[f]};
    }
    if (!nl) {
        ps_vcheck_push(x, KSL[f], NAN, NAN, NULL,
             "not enough data: no label has min_label_ks_records (%.0f) %s lengths on both sides",
             min_label_ks, fname);
    } else {
        qsort(ls, nl, sizeof *ls, cmp_kslab);
        /* p-values (information only) for the labels reported */
        for (size_t i = 0; i < nl && i < 10; i++)
            ls[i].p = ks_p(x, ls[i].d, ls[i].n1, ls[i].n2);
        json_t *arr = json_array();
        for (size_t i = 0; arr && i < nl && i < 10; i++)
            json_array_append_new(arr, json_pack("{sssfsfsIsI}", "label", ls[i].name, "d", ls[i].d,
                                                 "p_value", ls[i].p, "n1", (json_int_t)ls[i].n1,
                                                 "n2", (json_int_t)ls[i].n2));
        vd = ps_vcheck_verdict(x, KSL[f], ls[0].d);
        ps_vcheck_push(x, KSL[f], ls[0].d, ls[0].p,
             json_pack("{sIso}", "labels_tested", (json_int_t)nl, "worst", arr ? arr : json_array()),
             "%s per label: worst label '%s' KS D %.4f over %zu labels tested (threshold %.3g): %s",
             fname, ls[0].name, ls[0].d, nl, x->c->fail[KSL[f]], ps_vcheck_word(vd));
    }
    free(ls);

    /* PSI over baseline quantile groups */
    size_t want = (size_t)x->c->param[P_PSI_BINS];
    uint32_t first[128];
    size_t ng = ps_sm_quantile_groups(h1, PS_VBINS, want, first);
    double ga[128] = {0}, gb[128] = {0}; /* psi_bins <= 100, + 2 outer groups */
    for (size_t g = 0; g < ng; g++) {
        uint32_t end = g + 1 < ng ? first[g + 1] : PS_VBINS;
        for (uint32_t b = first[g]; b < end; b++) {
            ga[g] += (double)h1[b];
            gb[g] += (double)h2[b];
        }
    }
    double psi = ps_sm_psi(ga, gb, ng, x->c->param[P_PSI_EPS]);
    json_t *edges = json_array();
    for (size_t g = 0; edges && g < ng; g++)
        json_array_append_new(edges, json_integer(ps_vbin_lo(first[g])));
    vd = ps_vcheck_verdict(x, PSI[f], psi);
    ps_vcheck_push(x, PSI[f], psi, NAN,
         json_pack("{sIsosf}", "groups", (json_int_t)ng, "group_lower_edges",
                   edges ? edges : json_array(), "epsilon", x->c->param[P_PSI_EPS]),
         "%s PSI %.4f over %zu length groups (baseline quantiles; warn %.3g, fail %.3g): %s%s", fname, psi,
         ng, x->c->warn[PSI[f]], x->c->fail[PSI[f]], ps_vcheck_word(vd),
         vd == PS_VV_PASS ? "" : x->length_cause);

    /* quantile shifts */
    static const double Q[3] = {0.5, 0.9, 0.99};
    static const char *const QN[3] = {"p50", "p90", "p99"};
    double worst = 0;
    int wq = 0;
    double qa[3], qb[3];
    json_t *qd = json_object();
    for (int i = 0; i < 3; i++) {
        qa[i] = ps_sm_quantile(h1, n1, Q[i], A->all.max[f]);
        qb[i] = ps_sm_quantile(h2, n2, Q[i], B->all.max[f]);
        double s = fabs(qb[i] - qa[i]) / fmax(qa[i], 1);
        if (s > worst) {
            worst = s;
            wq = i;
        }
        if (qd)
            json_object_set_new(qd, QN[i], json_pack("{sfsfsf}", "baseline", qa[i], "current", qb[i],
                                                     "relative_shift", s));
    }
    vd = ps_vcheck_verdict(x, QU[f], worst);
    ps_vcheck_push(x, QU[f], worst, NAN, qd,
         "%s quantiles: largest relative shift %.3f at %s (%.0f -> %.0f; warn %.3g, fail %.3g): %s%s",
         fname, worst, QN[wq], qa[wq], qb[wq], x->c->warn[QU[f]], x->c->fail[QU[f]], ps_vcheck_word(vd),
         vd == PS_VV_PASS ? "" : x->length_cause);
}

/* ---- health ---------------------------------------------------------------- */

static void health_checks(ctx *x, const ps_vstats *T, const ps_vstats *base, bool increase)
{
    double min_records = ps_vcheck_min_records(x);
    uint64_t nt = T ? T->records_with_tokens : 0;
    bool ok = T && (double)nt >= min_records && T->tokens > 0;
    char w[200];
    snprintf(w, sizeof w, "not enough data: %llu tokenized records (min_records %.0f)",
             (unsigned long long)nt, min_records);
    if (!ok) {
        ps_vcheck_push(x, C_UNK_TOKEN, NAN, NAN, NULL, "%s", w);
        ps_vcheck_push(x, C_UNK_RECORD, NAN, NAN, NULL, "%s", w);
        if (increase)
            ps_vcheck_push(x, C_UNK_INCREASE, NAN, NAN, NULL, "%s", w);
        ps_vcheck_push(x, C_TRUNCATION, NAN, NAN, NULL, "%s", w);
        ps_vcheck_push(x, C_PADDING, NAN, NAN, NULL, "%s", w);
        return;
    }
    double ur = (double)T->unk_tokens / (double)T->tokens;
    int vd = ps_vcheck_verdict(x, C_UNK_TOKEN, ur);
    ps_vcheck_push(x, C_UNK_TOKEN, ur, NAN,
         json_pack("{sIsIso*}", "unk_tokens", (json_int_t)T->unk_tokens, "tokens",
                   (json_int_t)T->tokens, "unk_words", T->unk_tokens ? ps_vunk_details(T->unk) : NULL),
         "[UNK] is %.3f%% of tokens (warn %.3g%%, fail %.3g%%): %s", 100 * ur,
         100 * x->c->warn[C_UNK_TOKEN], 100 * x->c->fail[C_UNK_TOKEN], ps_vcheck_word(vd));
    double rr = (double)T->records_with_unk / (double)nt;
    vd = ps_vcheck_verdict(x, C_UNK_RECORD, rr);
    ps_vcheck_push(x, C_UNK_RECORD, rr, NAN,
         json_pack("{sIsIso*}", "records_with_unk", (json_int_t)T->records_with_unk, "records",
                   (json_int_t)nt, "unk_words", T->unk_tokens ? ps_vunk_details(T->unk) : NULL),
         "%.2f%% of records hold an [UNK] (warn %.3g%%, fail %.3g%%): %s", 100 * rr,
         100 * x->c->warn[C_UNK_RECORD], 100 * x->c->fail[C_UNK_RECORD], ps_vcheck_word(vd));
    if (increase) {
        bool bok = base && (double)base->records_with_tokens >= min_records && base->tokens > 0;
        if (!bok) {
            ps_vcheck_push(x, C_UNK_INCREASE, NAN, NAN, NULL,
                 "not enough data: the baseline has %llu tokenized records (min_records %.0f)",
                 (unsigned long long)(base ? base->records_with_tokens : 0), min_records);
        } else {
            double br = (double)base->unk_tokens / (double)base->tokens, inc = ur - br;
            vd = ps_vcheck_verdict(x, C_UNK_INCREASE, inc);
            ps_vcheck_push(x, C_UNK_INCREASE, inc, NAN,
                 json_pack("{sfsf}", "baseline_rate", br, "current_rate", ur),
                 "[UNK] token rate %.3f%% -> %.3f%% (increase %+.3f points; fail above %.3g): %s",
                 100 * br, 100 * ur, 100 * inc, 100 * x->c->fail[C_UNK_INCREASE], ps_vcheck_word(vd));
        }
    }
    double tr = (double)T->truncated / (double)nt;
    vd = ps_vcheck_verdict(x, C_TRUNCATION, tr);
    ps_vcheck_push(x, C_TRUNCATION, tr, NAN,
         json_pack("{sIsI}", "truncated", (json_int_t)T->truncated, "records", (json_int_t)nt),
         "%.2f%% of records were truncated at max_length (warn %.3g%%, fail %.3g%%): %s", 100 * tr,
         100 * x->c->warn[C_TRUNCATION], 100 * x->c->fail[C_TRUNCATION], ps_vcheck_word(vd));
    uint64_t padded, toks;
    if (!ps_vstats_padding(T, &padded, &toks) || !padded) {
        ps_vcheck_push(x, C_PADDING, NAN, NAN, NULL, "not enough data: no bucket bounds were given");
    } else {
        double pr = (double)(padded - toks) / (double)padded;
        vd = ps_vcheck_verdict(x, C_PADDING, pr);
        ps_vcheck_push(x, C_PADDING, pr, NAN,
             json_pack("{sIsIsI}", "tokens", (json_int_t)toks, "padded_tokens", (json_int_t)padded,
                       "buckets", (json_int_t)T->nbounds),
             "padding is %.1f%% of batched slots under the bucket bounds (warn %.3g%%): %s", 100 * pr,
             100 * x->c->warn[C_PADDING], ps_vcheck_word(vd));
    }
}

/* ---- entry points -------------------------------------------------------- */

static int check_config_json(const ps_vconfig *c, int i, json_t *th, json_t *mo)
{
    char k[112];
    int bad = json_object_set_new(th, DEFS[i].name, isnan(c->fail[i]) ? json_null() : json_real(c->fail[i]));
    snprintf(k, sizeof k, "%s_warn", DEFS[i].name);
    bad |= json_object_set_new(th, k, isnan(c->warn[i]) ? json_null() : json_real(c->warn[i]));
    bad |= json_object_set_new(mo, DEFS[i].name, json_string(MODE_NAMES[c->mode[i]]));
    return bad ? PS_ENOMEM : 0;
}

int ps_vconfig_add_group_json(const ps_vconfig *c, json_t *config, const char *group)
{
    json_t *th = json_object_get(config, "thresholds"), *mo = json_object_get(config, "modes");
    int rc = th && mo ? 0 : PS_ENOMEM;
    for (int i = 0; !rc && i < C_N; i++)
        if (!strcmp(DEFS[i].group, group))
            rc = check_config_json(c, i, th, mo);
    return rc;
}

static json_t *config_json(const ps_vconfig *c)
{
    json_t *th = json_object(), *mo = json_object();
    if (!th || !mo) {
        json_decref(th);
        json_decref(mo);
        return NULL;
    }
    for (int i = 0; i < C_N; i++)
        if (strcmp(DEFS[i].group, "sql") && strcmp(DEFS[i].group, "generation") &&
            strcmp(DEFS[i].group, "dialogue") && strcmp(DEFS[i].group, "execution") &&
            strcmp(DEFS[i].group, "leakage"))
            check_config_json(c, i, th, mo);
    for (int i = 0; i < P_LEAK_FIRST; i++)
        json_object_set_new(th, PARAMS[i].name, PARAMS[i].integer ? json_integer((json_int_t)c->param[i])
                                                                  : json_real(c->param[i]));
    return json_pack("{soso}", "thresholds", th, "modes", mo);
}

static ps_vreport *report_new(const ps_vconfig *c, const char *mode)
{
    ps_vreport *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->mode = mode;
    r->threads = c->threads;
    r->config = config_json(c);
    r->points = json_object();
    if (!r->config || !r->points) {
        ps_vreport_free(r);
        return NULL;
    }
    return r;
}

void ps_vreport_refresh_verdict(ps_vreport *r)
{
    r->verdict = PS_VV_PASS;
    for (size_t i = 0; i < r->n; i++) {
        if (r->checks[i].verdict == PS_VV_FAIL)
            r->verdict = PS_VV_FAIL;
        else if (r->checks[i].verdict == PS_VV_WARN && r->verdict == PS_VV_PASS)
            r->verdict = PS_VV_WARN;
    }
}

/* Ends ps_validate_build and ps_validate_compare: the report with its
 * verdict into *out, or freed when rc (memory ran out) is set. def is
 * the default config made for a NULL one. */
static int report_finish(ps_vreport *r, int rc, ps_vconfig *def, ps_vreport **out, ps_error *err)
{
    ps_vconfig_free(def);
    if (rc) {
        ps_vreport_free(r);
        return ps_error_set(err, rc, "validation: out of memory");
    }
    ps_vreport_refresh_verdict(r);
    *out = r;
    return 0;
}

static int set_point(ps_vreport *r, const char *key, const ps_vstats *s)
{
    if (!s)
        return json_object_set_new(r->points, key, json_null()) ? PS_ENOMEM : 0;
    json_t *j = ps_vstats_to_json(s);
    if (!j)
        return PS_ENOMEM;
    return json_object_set_new(r->points, key, j) ? PS_ENOMEM : 0;
}

/* Records rejected too_long leave the kept lengths shorter than the raw
 * ones: a length check that fails then says so, rather than leave it to
 * look like cleaning damage. */
static void too_long_cause(ctx *x, const ps_vpaired *P)
{
    uint64_t n = 0;
    for (size_t i = 0; P && i < P->nreasons; i++)
        if (!strcmp(P->reasons[i].reason, "too_long"))
            n += P->reasons[i].count;
    if (n)
        snprintf(x->length_cause, sizeof x->length_cause,
                 " (%llu of %llu records were rejected too_long, over --max-length: the longest "
                 "are gone from the kept lengths)",
                 (unsigned long long)n, (unsigned long long)P->records_in);
}

int ps_validate_build(const ps_vconfig *c, const ps_vstats *raw, const ps_vstats *cleaned,
                      const ps_vstats *tokenized, const ps_vpaired *paired, ps_vreport **out,
                      ps_error *err)
{
    *out = NULL;
    ps_vconfig *def = NULL;
    if (!c)
        c = def = ps_vconfig_new();
    ps_vreport *r = c ? report_new(c, "build") : NULL;
    if (!r) {
        ps_vconfig_free(def);
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    }
    ctx x = {c, r, 0, "raw vs cleaned", ""};
    too_long_cause(&x, paired);
    ps_vcheck_paired(&x, paired, raw, cleaned);
    label_checks(&x, raw, cleaned);
    length_checks(&x, raw, cleaned, PS_VF_QUESTION);
    length_checks(&x, raw, cleaned, PS_VF_SQL);
    ps_vcheck_hardness(&x, raw, cleaned);
    x.compares = "tokenized";
    health_checks(&x, tokenized, NULL, false);
    int rc = x.rc;
    if (!rc)
        rc = set_point(r, "raw", raw);
    if (!rc)
        rc = set_point(r, "cleaned", cleaned);
    if (!rc)
        rc = set_point(r, "tokenized", tokenized);
    if (!rc && paired && !(r->paired = ps_vpaired_to_json(paired)))
        rc = PS_ENOMEM;
    return report_finish(r, rc, def, out, err);
}

int ps_validate_compare(const ps_vconfig *c, const ps_vstats *baseline,
                        const ps_vstats *current, ps_vreport **out, ps_error *err)
{
    *out = NULL;
    ps_vconfig *def = NULL;
    if (!c)
        c = def = ps_vconfig_new();
    ps_vreport *r = c ? report_new(c, "compare") : NULL;
    if (!r) {
        ps_vconfig_free(def);
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    }
    char cmp[96];
    snprintf(cmp, sizeof cmp, "baseline %s vs current %s", baseline ? baseline->point : "-",
             current ? current->point : "-");
    ctx x = {c, r, 0, cmp, ""};
    label_checks(&x, baseline, current);
    length_checks(&x, baseline, current, PS_VF_QUESTION);
    length_checks(&x, baseline, current, PS_VF_SQL);
    length_checks(&x, baseline, current, PS_VF_TOKENS);
    ps_vcheck_hardness(&x, baseline, current);
    health_checks(&x, current, baseline, true);
    int rc = x.rc;
    if (!rc)
        rc = set_point(r, "baseline", baseline);
    if (!rc)
        rc = set_point(r, "current", current);
    return report_finish(r, rc, def, out, err);
}
