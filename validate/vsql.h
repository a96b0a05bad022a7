/*
 * validate/vsql.h — the layout of ps_vsql (SQL checked against its schema),
 * shared by sql_stats.c, sql_json.c and checks_sql.c only.
 */
#ifndef PS_VALIDATE_VSQL_H
#define PS_VALIDATE_VSQL_H

#include "common/strmap.h"
#include "schema/schema.h"
#include "validate/validate.h"

#define PS_VSQL_EXAMPLES 5      /* examples kept per list: the first seen */
#define PS_VSQL_MSG_MAX 300     /* bytes kept of a message (cut at a character) */
#define PS_VSQL_ID_MAX 200      /* bytes kept of an id */
#define PS_VSQL_MAX_RULES 4096u /* a statistics file naming more is refused */
#define PS_VSQL_MAX_LABELS 200000u
#define PS_VSQL_EXEC_N (PS_EXEC_NO_DATABASE + 1)

/* The names stats.json writes for the classes and statuses are
 * ps_sql_class_name and ps_exec_status_name (schema/). */

/* Per-label (and overall) compile counts, and schema selection's gold
 * recall: records whose schema prompt was measured against their SQL, and
 * of them those whose prompt holds every table (column) the SQL uses. */
enum {
    PS_VSQL_CHECKED, PS_VSQL_RAW_OK, PS_VSQL_CLEAN_CHECKED, PS_VSQL_CLEAN_OK,
    PS_VSQL_GOLD, PS_VSQL_GOLD_TABLES, PS_VSQL_GOLD_COLUMNS, PS_VSQL_K
};
extern const char *const ps_vsql_count_names[PS_VSQL_K];

typedef struct ps_vsql_ex {
    char *id, *a, *b; /* a: the raw (or execution) message, b: the clean one; may be NULL */
    int status;       /* execution examples: a ps_exec_status */
} ps_vsql_ex;

typedef struct ps_vsql_exlist {
    ps_vsql_ex e[PS_VSQL_EXAMPLES];
    size_t n;
} ps_vsql_exlist;

typedef struct ps_vsql_label {
    char *name;
    uint64_t c[PS_VSQL_K];
    uint64_t exec[PS_VSQL_EXEC_N]; /* the cleaned SQL's statuses */
} ps_vsql_label;

struct ps_vsql {
    char **rules;
    size_t n_rules;
    uint64_t records;                     /* records added, checked or not */
    uint64_t c[PS_VSQL_K], unlabeled[PS_VSQL_K];
    uint64_t raw[PS_SQL_CLASSES], clean[PS_SQL_CLASSES];
    ps_vsql_exlist raw_ex[PS_SQL_CLASSES], clean_ex[PS_SQL_CLASSES];
    uint64_t regressions, fixed;
    uint64_t *rule_regressions;           /* n_rules: regressed records each rule changed */
    ps_vsql_exlist reg_ex, fix_ex;
    uint64_t exec[PS_VSQL_EXEC_N], rows;
    ps_vsql_exlist exec_ex;               /* errors and timeouts */
    uint64_t shortened, tables_dropped, columns_dropped;
    /* execution before and after cleaning: the raw SQL's statuses, the
     * unlabeled records' cleaned statuses, the records whose raw SQL ran
     * (ok or empty) with their cleaned SQL run too (compared), those whose
     * result changed, per rule that changed them, and examples */
    uint64_t exec_before[PS_VSQL_EXEC_N], unlabeled_exec[PS_VSQL_EXEC_N];
    uint64_t result_compared, result_regressions;
    uint64_t *rule_result_regressions;    /* n_rules */
    ps_vsql_exlist res_ex;
    ps_vsql_label *labels;                /* names owned by `names` */
    size_t nlabels, cap;
    ps_strmap names;
};

/* sql_stats.c, for the reader: a label's entry (added when new), an
 * example appended when there is room (strings copied and cut). */
ps_vsql_label *ps_vsql_label_get(ps_vsql *v, const char *name);
int ps_vsql_ex_push(ps_vsql_exlist *l, const char *id, const char *a, const char *b, int status);
uint64_t ps_vsql_executed(const ps_vsql *v);
/* Records whose raw SQL was run too (0: a statistics file of before). */
uint64_t ps_vsql_executed_before(const ps_vsql *v);

#endif /* PS_VALIDATE_VSQL_H */
