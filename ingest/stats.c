/*
 * Accounting for a cleaning run: totals, per reason, per label, per input
 * and per cleaning step, serialised with jansson in a fixed key order so
 * that the same input always gives the same bytes.
 */
#define _GNU_SOURCE /* qsort_r */
#include "common/strmap.h"
#include "ingest/ingest.h"
#include "schema/schema.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static const char *const REASONS[] = {
    "invalid_utf8", "bad_json",     "bad_csv",         "wrong_type",
    "missing_field", "empty_field", "empty_after_cleaning", "too_long",
    "dropped_by_rule", "rule_error",
    /* text-to-SQL: shown only in runs with schemas, a template or turns */
    "unknown_database", "sql_invalid", "schema_lost_gold",
    /* a build's: a regex of the tokenizer.json ran out of steps on the
     * record; shown only when it happened, so that other runs' statistics
     * stay as they were */
    "tokenizer_error",
    /* --reject-failed-execution: shown only when it happened, as above */
    "execution_error", "execution_timeout", "execution_empty",
    /* --drop-leaked: a build's records that a held-out set shares (leaked_
     * and the kind, validate/leakage.h); shown only when it happened */
    "leaked_database", "leaked_question", "leaked_near_question", "leaked_sql",
    "leaked_sql_template",
};
#define NREASONS (sizeof REASONS / sizeof REASONS[0])
#define NREASONS_PLAIN 10 /* up to rule_error: every run shows them */
#define NREASONS_SQL 13   /* up to schema_lost_gold: runs with schemas, a template or turns;
                           * the rest only when they happened */
/* ps_exec_status values */
#define NEXEC 5
#define SQL_EXAMPLES 3

typedef struct sql_counts {
    uint64_t checked, compiled_raw, compiled_clean, regressions;
    uint64_t raw[PS_SQL_CLASSES], clean[PS_SQL_CLASSES];
    uint64_t exec[NEXEC], exec_rows, executed;
    json_t *examples;     /* clean class name -> [ids] (failures only) */
    json_t *regressed;    /* [ids] */
} sql_counts;

typedef struct counts {
    uint64_t in, kept, rejected, duplicates;
} counts;


typedef struct input_entry {
    char *path;
    counts c;
    uint64_t bytes;
} input_entry;

struct ps_stats {
    counts total;
    uint64_t by_reason[NREASONS];
    counts unlabeled;  /* parsed, no label */
    counts unparsed;   /* rejected before the label could be read */
    ps_strmap labels;    /* label -> index into label_counts */
    counts *label_counts;
    size_t label_cap;
    input_entry *inputs;
    size_t input_n;
    ps_step_counts steps;
    uint64_t id_collisions;  /* kept records whose id an earlier kept one has */
    json_t *id_examples;     /* the first few: [{id, source, first_source}] */
    bool show_sql, show_dialogues;
    sql_counts sql;
    uint64_t dialogues;
};

int ps_stats_create(ps_stats **out)
{
    ps_stats *s = calloc(1, sizeof *s);
    if (!s)
        return PS_ENOMEM;
    *out = s;
    return 0;
}

void ps_stats_free(ps_stats *s)
{
    if (!s)
        return;
    ps_strmap_free(&s->labels);
    json_decref(s->id_examples);
    json_decref(s->sql.examples);
    json_decref(s->sql.regressed);
    free(s->label_counts);
    for (size_t i = 0; i < s->input_n; i++)
        free(s->inputs[i].path);
    free(s->inputs);
    free(s);
}

ps_step_counts *ps_stats_steps(ps_stats *s) { return &s->steps; }

static counts *label_counts(ps_stats *s, const char *label)
{
    void *records = s->label_counts;
    long i = ps_strmap_slot(&s->labels, label, &records, &s->label_cap, sizeof *s->label_counts);
    s->label_counts = records;
    return i < 0 ? NULL : &s->label_counts[i];
}

static input_entry *input_of(ps_stats *s, const char *path)
{
    if (s->input_n && strcmp(s->inputs[s->input_n - 1].path, path) == 0)
        return &s->inputs[s->input_n - 1];
    for (size_t i = 0; i < s->input_n; i++)
        if (strcmp(s->inputs[i].path, path) == 0)
            return &s->inputs[i];
    input_entry *nv = realloc(s->inputs, (s->input_n + 1) * sizeof *nv);
    if (!nv)
        return NULL;
    s->inputs = nv;
    input_entry *e = &s->inputs[s->input_n];
    memset(e, 0, sizeof *e);
    e->path = strdup(path);
    if (!e->path)
        return NULL;
    s->input_n++;
    return e;
}

static void bump(counts *c, ps_outcome o)
{
    c->in++;
    if (o == PS_OUTCOME_KEPT)
        c->kept++;
    else if (o == PS_OUTCOME_REJECTED)
        c->rejected++;
    else
        c->duplicates++;
}

int ps_stats_record(ps_stats *s, const char *input, ps_outcome outcome, const char *reason,
                    const char *label, uint32_t *label_no)
{
    return ps_stats_record_known(s, input, outcome, reason, label, PS_LABEL_NO_NONE, label_no);
}

int ps_stats_record_known(ps_stats *s, const char *input, ps_outcome outcome,
                          const char *reason, const char *label, uint32_t known,
                          uint32_t *label_no)
{
    if (label_no)
        *label_no = PS_LABEL_NO_NONE;
    bump(&s->total, outcome);
    if (outcome == PS_OUTCOME_REJECTED && reason) {
        for (size_t i = 0; i < NREASONS; i++)
            if (strcmp(reason, REASONS[i]) == 0)
                s->by_reason[i]++;
    }
    counts *lc;
    if (label) {
        lc = known < s->labels.n ? &s->label_counts[known] : label_counts(s, label);
        if (!lc)
            return PS_ENOMEM;
        if (label_no)
            *label_no = (uint32_t)(lc - s->label_counts);
    } else {
        bool parsed = !(outcome == PS_OUTCOME_REJECTED && reason &&
                        (strcmp(reason, "invalid_utf8") == 0 || strcmp(reason, "bad_json") == 0 ||
                         strcmp(reason, "bad_csv") == 0 || strcmp(reason, "wrong_type") == 0 ||
                         strcmp(reason, "too_long") == 0));
        lc = parsed ? &s->unlabeled : &s->unparsed;
    }
    bump(lc, outcome);
    input_entry *ie = input_of(s, input);
    if (!ie)
        return PS_ENOMEM;
    bump(&ie->c, outcome);
    return 0;
}

#define ID_EXAMPLES 5

int ps_stats_id_collision(ps_stats *s, const char *id, const char *first_source,
                          const char *source)
{
    s->id_collisions++;
    if (!s->id_examples && !(s->id_examples = json_array()))
        return PS_ENOMEM;
    if (json_array_size(s->id_examples) < ID_EXAMPLES &&
        json_array_append_new(s->id_examples, json_pack("{ssssss}", "id", id, "source", source,
                                                        "first_source", first_source)))
        return PS_ENOMEM;
    return 0;
}

void ps_stats_enable_text2sql(ps_stats *s, bool sql, bool dialogues)
{
    s->show_sql = sql;
    s->show_dialogues = dialogues;
}

void ps_stats_add_dialogue(ps_stats *s) { s->dialogues++; }

/* Appends id to list (made on first use) while it has fewer than
 * SQL_EXAMPLES. 0 or PS_ENOMEM. */
static int example(json_t **list, const char *id)
{
    if (!*list && !(*list = json_array()))
        return PS_ENOMEM;
    if (json_array_size(*list) >= SQL_EXAMPLES)
        return 0;
    return json_array_append_new(*list, json_string(id ? id : "")) ? PS_ENOMEM : 0;
}

int ps_stats_sql(ps_stats *s, const char *id, int raw_class, int clean_class, int exec_status,
                 uint64_t exec_rows)
{
    sql_counts *q = &s->sql;
    if (exec_status >= 0 && exec_status < NEXEC) {
        q->executed++;
        q->exec[exec_status]++;
        q->exec_rows += exec_rows;
    }
    if (raw_class < 0 || clean_class < 0 || raw_class >= PS_SQL_CLASSES ||
        clean_class >= PS_SQL_CLASSES)
        return 0;
    q->checked++;
    q->raw[raw_class]++;
    q->clean[clean_class]++;
    q->compiled_raw += raw_class == PS_SQL_OK;
    q->compiled_clean += clean_class == PS_SQL_OK;
    if (clean_class != PS_SQL_OK) {
        const char *name = ps_sql_class_name((ps_sql_class)clean_class);
        if (!q->examples && !(q->examples = json_object()))
            return PS_ENOMEM;
        json_t *list = json_object_get(q->examples, name);
        bool fresh = !list;
        if (example(&list, id))
            return PS_ENOMEM;
        if (fresh && json_object_set_new(q->examples, name, list))
            return PS_ENOMEM;
    }
    if (raw_class == PS_SQL_OK && clean_class != PS_SQL_OK) {
        q->regressions++;
        return example(&q->regressed, id);
    }
    return 0;
}

static json_t *classes_json(const uint64_t *n)
{
    json_t *o = json_object();
    for (int i = 0; i < PS_SQL_CLASSES; i++)
        json_object_set_new(o, ps_sql_class_name((ps_sql_class)i), json_integer((json_int_t)n[i]));
    return o;
}

/* "sql": {checked, compiled_raw, compiled_clean, regressions,
 * regression_examples, raw: {class: n}, clean: {class: n}, examples:
 * {class: [ids]}, execute?: {...}}. */
static json_t *sql_json(const sql_counts *q)
{
    json_t *o = json_pack("{sIsIsIsI}", "checked", (json_int_t)q->checked, "compiled_raw",
                          (json_int_t)q->compiled_raw, "compiled_clean",
                          (json_int_t)q->compiled_clean, "regressions",
                          (json_int_t)q->regressions);
    json_object_set_new(o, "regression_examples", q->regressed ? json_copy(q->regressed)
                                                               : json_array());
    json_object_set_new(o, "raw", classes_json(q->raw));
    json_object_set_new(o, "clean", classes_json(q->clean));
    json_object_set_new(o, "examples", q->examples ? json_deep_copy(q->examples)
                                                   : json_object());
    if (q->executed) {
        json_t *e = json_pack("{sI}", "executed", (json_int_t)q->executed);
        for (int i = 0; i < NEXEC; i++)
            json_object_set_new(e, ps_exec_status_name((ps_exec_status)i),
                                json_integer((json_int_t)q->exec[i]));
        json_object_set_new(e, "rows", json_integer((json_int_t)q->exec_rows));
        json_object_set_new(o, "execute", e);
    }
    return o;
}

void ps_stats_add_input_bytes(ps_stats *s, const char *input, uint64_t bytes)
{
    input_entry *ie = input_of(s, input);
    if (ie)
        ie->bytes += bytes;
}

void ps_stats_counts(const ps_stats *s, ps_clean_counts *out)
{
    out->records_in = s->total.in;
    out->kept = s->total.kept;
    out->rejected = s->total.rejected;
    out->duplicates = s->total.duplicates;
    out->bytes_in = 0;
    for (size_t i = 0; i < s->input_n; i++)
        out->bytes_in += s->inputs[i].bytes;
}

static json_t *counts_json(const counts *c)
{
    return json_pack("{sIsIsIsI}", "records_in", (json_int_t)c->in, "kept", (json_int_t)c->kept,
                     "rejected", (json_int_t)c->rejected, "duplicates",
                     (json_int_t)c->duplicates);
}

static int cmp_label(const void *a, const void *b, void *keys)
{
    char *const *k = keys;
    return strcmp(k[*(const size_t *)a], k[*(const size_t *)b]);
}

#define I(x) ((json_int_t)(x))

char *ps_stats_to_json(const ps_stats *s, ps_rules *rules)
{
    json_t *root = json_object();
    if (!root)
        return NULL;
    const counts *t = &s->total;
    json_object_set_new(root, "records_in", json_integer(I(t->in)));
    json_object_set_new(root, "kept", json_integer(I(t->kept)));
    json_object_set_new(root, "rejected", json_integer(I(t->rejected)));
    json_object_set_new(root, "duplicates", json_integer(I(t->duplicates)));
    json_object_set_new(root, "balanced",
                        json_boolean(t->in == t->kept + t->rejected + t->duplicates));
    json_t *reasons = json_object();
    size_t nreasons = s->show_sql || s->show_dialogues ? NREASONS_SQL : NREASONS_PLAIN;
    for (size_t i = 0; i < NREASONS; i++)
        if (i < nreasons || (i >= NREASONS_SQL && s->by_reason[i]))
            json_object_set_new(reasons, REASONS[i], json_integer(I(s->by_reason[i])));
    json_object_set_new(root, "rejected_by_reason", reasons);

    json_t *jr = json_array();
    for (size_t i = 0; i < ps_rules_count(rules); i++) {
        const ps_rule_stats *rs = ps_rules_stats(rules, i);
        json_array_append_new(jr, json_pack("{sssIsIsI}", "name", ps_rules_name(rules, i),
                                            "matched", I(rs->matched), "changed", I(rs->changed),
                                            "dropped", I(rs->dropped)));
    }
    json_object_set_new(root, "rules", jr);

    size_t k = s->labels.n;
    size_t *sorted = malloc((k + 1) * sizeof *sorted);
    for (size_t i = 0; sorted && i < k; i++)
        sorted[i] = i;
    if (sorted)
        qsort_r(sorted, k, sizeof *sorted, cmp_label, s->labels.keys);
    json_t *labels = json_object();
    for (size_t i = 0; sorted && i < k; i++)
        json_object_set_new(labels, s->labels.keys[sorted[i]],
                            counts_json(&s->label_counts[sorted[i]]));
    free(sorted);
    json_object_set_new(root, "label_count", json_integer(I(k)));
    json_object_set_new(root, "labels", labels);
    json_object_set_new(root, "unlabeled", counts_json(&s->unlabeled));
    json_object_set_new(root, "label_unreadable", counts_json(&s->unparsed));

    const ps_step_counts *st = &s->steps;
    json_t *steps = json_object();
    json_object_set_new(steps, "utf8",
                        json_pack("{sIsI}", "records_repaired", I(st->utf8_repaired_records),
                                  "replacements", I(st->utf8_replacements)));
    json_object_set_new(steps, "normalize",
                        json_pack("{sIsI}", "question_changed", I(st->normalized_question),
                                  "sql_changed", I(st->normalized_sql)));
    json_object_set_new(steps, "controls",
                        json_pack("{sIsI}", "records_changed", I(st->control_records),
                                  "chars_removed", I(st->control_chars_removed)));
    json_object_set_new(steps, "rules",
                        json_pack("{sI}", "records_changed", I(st->rules_changed_records)));
    json_object_set_new(steps, "whitespace",
                        json_pack("{sIsI}", "question_changed", I(st->whitespace_question),
                                  "sql_changed", I(st->whitespace_sql)));
    json_object_set_new(root, "steps", steps);
    json_object_set_new(root, "changed_by_cleaning", json_integer(I(st->changed_records)));
    json_object_set_new(root, "sql_unterminated_quote", json_integer(I(st->sql_unterminated_quote)));
    json_object_set_new(root, "duplicate_label_conflicts", json_integer(I(st->label_conflicts)));
    json_object_set_new(root, "blank_lines_skipped", json_integer(I(st->blank_lines)));

    json_t *inputs = json_array();
    for (size_t i = 0; i < s->input_n; i++) {
        json_t *o = counts_json(&s->inputs[i].c);
        json_object_set_new(o, "bytes", json_integer(I(s->inputs[i].bytes)));
        json_object_set_new(o, "path", json_string(s->inputs[i].path));
        json_array_append_new(inputs, o);
    }
    json_object_set_new(root, "inputs", inputs);
    if (s->show_dialogues)
        json_object_set_new(root, "dialogues", json_integer(I(s->dialogues)));
    if (s->show_sql)
        json_object_set_new(root, "sql", sql_json(&s->sql));
    if (s->id_collisions) /* only then: builds with unique ids keep their bytes */
        json_object_set_new(root, "id_collisions",
                            json_pack("{sIsO}", "count", I(s->id_collisions), "examples",
                                      s->id_examples));
    char *out = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(root);
    return out;
}
