/*
 * validate/checks.h — what the files of the checks share (internal to
 * validate/): the check and parameter numbers, the context a run fills,
 * and the helpers that append a check to the report. checks.c holds the
 * table of checks, the distribution and health checks and the entry
 * points; checks_paired.c the checks of the same records before and
 * after cleaning.
 */
#ifndef PS_VALIDATE_CHECKS_H
#define PS_VALIDATE_CHECKS_H

#include "validate/vinternal.h"

enum {
    C_ACCOUNTING,
    C_EMPTY_SET,
    C_LABEL_RETENTION,
    C_REJECTED_SHARE,
    C_EMPTY_AFTER_CLEANING,
    C_QUESTION_LENGTH_CHANGE,
    C_SQL_LENGTH_CHANGE,
    C_DUPLICATE_RATE,
    C_LABEL_JS,
    C_LABEL_PSI,
    C_LABEL_CHI2,
    C_Q_KS,
    C_S_KS,
    C_T_KS,
    C_Q_KS_LABEL,
    C_S_KS_LABEL,
    C_T_KS_LABEL,
    C_Q_PSI,
    C_S_PSI,
    C_T_PSI,
    C_Q_QUANT,
    C_S_QUANT,
    C_T_QUANT,
    C_UNK_TOKEN,
    C_UNK_RECORD,
    C_UNK_INCREASE,
    C_TRUNCATION,
    C_PADDING,
    C_ID_COLLISIONS,
    C_SQL_REGRESSION, /* group "sql": only in reports of builds that checked SQL */
    C_SQL_RATE,
    C_SCHEMA_RECALL, /* "sql" too: builds that selected schemas for prompts */
    C_ROUND_TRIP,     /* group "generation": builds of causal and seq2seq sets */
    C_JUNCTION,
    C_HISTORY_HIDDEN, /* group "dialogue": builds with --turns and a template */
    C_SQL_RESULT_REGRESSION, /* group "execution": builds that ran the SQL before and after */
    C_LEAKAGE,        /* group "leakage": builds with --holdout */
    C_HARDNESS_JS,    /* group "hardness": the shares of the SQL's hardness levels */
    C_N
};

/* Parameters that are not a check's threshold. */
enum { P_MIN_RECORDS, P_MIN_LABEL_RECORDS, P_MIN_LABEL_KS_RECORDS, P_RETENTION_MIN_LOST, P_LENGTH_CHANGE_REL, P_PSI_EPS,
       P_PSI_BINS, P_SERVING_NOTE_SHARE,
       /* the leakage check's limit per kind (ps_leak_kind order), listed
        * only in reports of builds with --holdout */
       P_LEAK_FIRST, P_LEAK_LAST = P_LEAK_FIRST + 4, P_N };

/* Thresholds, modes and parameters (defaults in checks.c). */
struct ps_vconfig {
    double fail[C_N], warn[C_N];
    int mode[C_N];
    double param[P_N];
    size_t threads; /* for the exact KS sums (ps_vconfig_set_threads); 0 or 1: one */
    bool slice;     /* the statistics are a --part's (ps_vconfig_set_slice) */
};

typedef struct ps_vcheck_ctx {
    const ps_vconfig *c;
    ps_vreport *r;
    int rc;
    const char *compares;
    /* raw vs cleaned: why the kept lengths may have shifted, told after a
     * length check that is not "pass" ("" when nothing is known) */
    char length_cause[160];
} ps_vcheck_ctx;

/* Appends a check; takes `details` (may be NULL). The explanation is
 * formatted by the caller, knowing the verdict. */
void ps_vcheck_push(ps_vcheck_ctx *x, int id, double value, double p, json_t *details,
                    const char *fmt, ...) PS_PRINTF(6, 7);
/* The verdict for check `id` at `value` under the thresholds and mode. */
int ps_vcheck_verdict(const ps_vcheck_ctx *x, int id, double value);
/* "FAIL", "warning" or "ok" for a verdict, in explanations. */
const char *ps_vcheck_word(int v);
/* min_records: below it a check says "not enough data". */
double ps_vcheck_min_records(const ps_vcheck_ctx *x);

/* Adds the thresholds and modes of the checks of `group` to a report's
 * config object (the "sql" group is left out of it until SQL was checked:
 * reports of other builds keep their bytes). 0 or PS_ENOMEM. */
int ps_vconfig_add_group_json(const ps_vconfig *c, json_t *config, const char *group);
/* The report's verdict from its checks. */
void ps_vreport_refresh_verdict(ps_vreport *r);

/* The paired checks (checks_paired.c), in report order. */
void ps_vcheck_paired(ps_vcheck_ctx *x, const ps_vpaired *P, const ps_vstats *raw,
                      const ps_vstats *cl);

/* hardness_js_distance between two points (checks_hardness.c). */
void ps_vcheck_hardness(ps_vcheck_ctx *x, const ps_vstats *A, const ps_vstats *B);

#endif /* PS_VALIDATE_CHECKS_H */
