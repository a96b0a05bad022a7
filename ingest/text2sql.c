/*
 * The cleaner's text-to-SQL step (pairshard/schema.h): after a record's
 * question and SQL are cleaned, its database is looked up, the fields its
 * template names are cleaned like the question, its SQL is compiled against
 * the schema before and after cleaning (and run, on request), and its
 * prompt and completion are rendered. Kept apart from cleaner.c, which
 * knows nothing of schemas: with neither schemas nor a template (nor
 * dialogues) none of this runs.
 */
#include "ingest/cleaner_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Rows counted when a query runs: enough to tell empty from not. */
#define PS_EXEC_MAX_ROWS 100000

bool ps_t2s_active(const ps_cleaner *c)
{
    return c->schemas || c->tmpl || c->opts.turns_path;
}

/* Parses a field list into `spec` with its own copies (store, shown). */
static int own_spec(ps_field_spec *spec, const char *given, char **store, char **shown)
{
    *store = strdup(given);
    *shown = malloc(strlen(given) * 7 + 1);
    if (!*store || !*shown)
        return PS_ENOMEM;
    if (ps_field_spec_parse(spec, *store, *shown))
        return PS_EINVAL;
    (*shown)[0] = '\0';
    for (size_t k = 0; k < spec->n; k++) {
        if (k)
            strcat(*shown, "' or '");
        strcat(*shown, spec->cand[k]);
    }
    return 0;
}

int ps_t2s_names(ps_cleaner *c)
{
    ps_clean_options *o = &c->opts;
    char *shown[2] = {NULL, NULL};
    int rc = own_spec(&c->db_spec, o->db_field ? o->db_field : "db_id,database_id",
                      &c->db_store, &c->db_shown);
    if (!rc)
        rc = own_spec(&c->turn_q, o->turn_question_field ? o->turn_question_field : "utterance",
                      &c->turn_store[0], &shown[0]);
    if (!rc)
        rc = own_spec(&c->turn_sql, o->turn_sql_field ? o->turn_sql_field : "query",
                      &c->turn_store[1], &shown[1]);
    /* a turn's fields are single names: their text is the name itself */
    if (!rc) {
        c->turn_q.text = c->turn_q.cand[0];
        c->turn_sql.text = c->turn_sql.cand[0];
    }
    free(shown[0]);
    free(shown[1]);
    if (!rc && o->turns_path && !(c->turns_path = strdup(o->turns_path)))
        rc = PS_ENOMEM;
    if (!rc && o->turns_path && !*o->turns_path)
        rc = PS_EINVAL;
    /* From here on the cleaner's copies are read; the caller's may go. */
    o->turns_path = c->turns_path;
    o->db_field = o->turn_question_field = o->turn_sql_field = NULL;
    return rc;
}

void ps_t2s_names_free(ps_cleaner *c)
{
    free(c->db_store);
    free(c->db_shown);
    free(c->turn_store[0]);
    free(c->turn_store[1]);
    free(c->turns_path);
    free(c->difficulty_store);
    free(c->difficulty_shown);
}

/* From the first record on, which fields are read is fixed. */
static int started(const ps_cleaner *c, ps_error *err)
{
    return c->worker ? ps_error_set(err, PS_EINVAL, "schemas and templates must be set before "
                                    "cleaning starts")
                     : 0;
}

static void read_db(ps_cleaner *c)
{
    c->names.db = c->db_spec;
    c->names.db.text = c->db_shown;
}

int ps_cleaner_set_schemas(ps_cleaner *c, const ps_schemas *schemas, ps_error *err)
{
    int rc = started(c, err);
    if (rc)
        return rc;
    c->schemas = schemas;
    read_db(c);
    ps_stats_enable_text2sql(c->stats, true, c->turns_path != NULL);
    return 0;
}

int ps_cleaner_read_database(ps_cleaner *c, ps_error *err)
{
    int rc = started(c, err);
    if (rc)
        return rc;
    c->read_db = true;
    read_db(c);
    return 0;
}

int ps_cleaner_set_template(ps_cleaner *c, const ps_template *t, ps_error *err)
{
    int rc = started(c, err);
    if (rc)
        return rc;
    ps_template_info info;
    ps_template_get_info(t, &info);
    if (info.uses_schema && !c->schemas)
        return ps_error_set(err, PS_EUSAGE, "template '%s' shows the schema: it needs schemas "
                            "(--schema or --databases)", info.name);
    if (info.n_fields > PS_EXTRA_FIELDS)
        return ps_error_set(err, PS_EUSAGE, "template '%s' names %zu record fields, more than "
                            "%d", info.name, info.n_fields, PS_EXTRA_FIELDS);
    c->tmpl = t;
    read_db(c);
    ps_stats_enable_text2sql(c->stats, c->schemas != NULL, c->turns_path != NULL);
    c->names.n_extra = info.n_fields;
    for (size_t i = 0; i < info.n_fields; i++)
        c->names.extra[i] = info.fields[i];
    return 0;
}

int ps_cleaner_set_difficulty_field(ps_cleaner *c, const char *names, ps_error *err)
{
    int rc = started(c, err);
    if (rc)
        return rc;
    if (c->difficulty_store)
        return ps_error_set(err, PS_EINVAL, "the difficulty field is set already");
    rc = own_spec(&c->names.difficulty, names, &c->difficulty_store, &c->difficulty_shown);
    if (rc == PS_EINVAL)
        return ps_error_set(err, PS_EUSAGE, "--difficulty-field '%s': give up to %d names, "
                            "comma-separated, none empty", names, PS_FIELD_CANDIDATES);
    if (rc)
        return ps_error_set(err, rc, "out of memory");
    c->names.difficulty.text = c->difficulty_shown;
    return 0;
}

void ps_t2s_worker_free(ps_t2s_worker *t)
{
    if (t->dlg_root)
        json_decref(t->dlg_root);
    ps_buf_free(&t->dlg_bytes);
    for (size_t i = 0; i < t->hist_cap; i++)
        ps_buf_free(&t->hist[i]);
    free(t->hist);
    free(t->hist_ptr);
    free(t->hist_len);
    for (size_t i = 0; i < PS_EXTRA_FIELDS; i++)
        ps_buf_free(&t->extra[i]);
    ps_buf *bufs[] = {&t->db, &t->prompt, &t->completion, &t->hashed};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        ps_buf_free(bufs[i]);
    ps_sql_checker_free(t->checker);
}

int ps_t2s_reject(ps_clean_worker *w, ps_clean_item *it, const char *reason)
{
    it->res.outcome = PS_OUTCOME_REJECTED;
    it->res.reason = reason;
    it->res.detail = w->detail;
    return 1;
}

int ps_t2s_clean_text(ps_clean_worker *w, ps_clean_item *it, const char *text, size_t len,
                      ps_buf *out, const char *what, ps_error *err)
{
    ps_field_result fr;
    ps_rules_outcome ro;
    int rc = ps_clean_field(w, PS_FIELD_QUESTION, text, len, out, &fr, &ro, err);
    if (rc || !(ro.dropped || ro.failed))
        return rc;
    it->stepped = false; /* a record a rule stopped counts in no step */
    it->res.rule = ps_rules_name(w->c->rules, ro.rule);
    if (ro.dropped)
        it->dropped_rule = (long)ro.rule;
    snprintf(w->detail, sizeof w->detail, "%s: %s", what, ro.detail);
    return ps_t2s_reject(w, it, ro.dropped ? "dropped_by_rule" : "rule_error");
}

/* The record's database and its schema; 1 when rejected. */
static int database(ps_clean_worker *w, ps_clean_item *it)
{
    const ps_cleaner *c = w->c;
    ps_t2s_worker *t = &w->t2s;
    const ps_fields *f = &w->fields;
    if (f->db) {
        ps_buf_reset(&t->db);
        if (ps_buf_append(&t->db, f->db, f->db_len))
            return PS_ENOMEM;
        it->res.db_id = t->db.data;
    }
    if (!c->schemas)
        return 0;
    if (!f->db) {
        snprintf(w->detail, sizeof w->detail, "no field '%s' naming the database",
                 c->names.db.text);
        return ps_t2s_reject(w, it, "missing_field");
    }
    it->schema = ps_schemas_find(c->schemas, f->db, f->db_len);
    if (!it->schema) {
        snprintf(w->detail, sizeof w->detail,
                 "database '%.*s' is in none of the %zu databases of the schemas",
                 (int)(f->db_len > 200 ? 200 : f->db_len), f->db, ps_schemas_count(c->schemas));
        return ps_t2s_reject(w, it, "unknown_database");
    }
    return 0;
}

/* The template's fields, cleaned like the question; 1 when a rule
 * rejects the record. */
static int template_fields(ps_clean_worker *w, ps_clean_item *it, ps_error *err)
{
    const ps_cleaner *c = w->c;
    ps_t2s_worker *t = &w->t2s;
    const ps_fields *f = &w->fields;
    for (size_t i = 0; i < c->names.n_extra; i++) {
        t->extra_ptr[i] = NULL;
        t->extra_len[i] = 0;
        if (!f->extra[i])
            continue;
        int rc = ps_t2s_clean_text(w, it, f->extra[i], f->extra_len[i], &t->extra[i],
                                   c->names.extra[i], err);
        if (rc)
            return rc;
        t->extra_ptr[i] = t->extra[i].data ? t->extra[i].data : "";
        t->extra_len[i] = t->extra[i].len;
    }
    return 0;
}

/* Compiles the raw and the cleaned SQL against the record's schema; 1
 * when rejected sql_invalid. */
static int check_sql(ps_clean_worker *w, ps_clean_item *it, ps_error *err)
{
    const ps_cleaner *c = w->c;
    ps_t2s_worker *t = &w->t2s;
    if (!it->schema)
        return 0;
    int rc = t->checker ? 0 : ps_sql_checker_create(c->schemas, &t->checker, err);
    if (rc)
        return rc;
    ps_sql_class raw, clean;
    rc = ps_sql_compile(t->checker, it->schema, it->raw_sql, it->raw_sql_len, &raw,
                            t->raw_msg, sizeof t->raw_msg, err);
    /* cleaning that left the SQL as it was cannot change SQLite's verdict */
    bool unchanged = w->s.len == it->raw_sql_len && memcmp(w->s.data, it->raw_sql, w->s.len) == 0;
    if (!rc && unchanged) {
        clean = raw;
        memcpy(t->clean_msg, t->raw_msg, sizeof t->clean_msg);
    } else if (!rc) {
        rc = ps_sql_compile(t->checker, it->schema, w->s.data, w->s.len, &clean, t->clean_msg,
                            sizeof t->clean_msg, err);
    }
    if (rc)
        return rc;
    it->sql_raw_class = (int)raw;
    it->sql_clean_class = (int)clean;
    it->sql_raw_msg = t->raw_msg;
    it->sql_clean_msg = t->clean_msg;
    it->res.sql_check = ps_sql_class_name(clean);
    it->res.sql_message = clean == PS_SQL_OK ? NULL : t->clean_msg;
    if (clean != PS_SQL_OK && c->opts.reject_invalid_sql) {
        snprintf(w->detail, sizeof w->detail, "the SQL does not compile against database "
                 "'%s' (%s): %s", it->schema->db_id, ps_sql_class_name(clean), t->clean_msg);
        return ps_t2s_reject(w, it, "sql_invalid");
    }
    return 0;
}

/* The rejection reasons of --reject-failed-execution, by status. */
static const char *const EXEC_REASONS[] = {NULL, "execution_empty", "execution_error",
                                           "execution_timeout", NULL};

/* Runs the raw and the cleaned SQL of a record that is kept (last: no
 * query runs for a record rejected anyway), keeping both results'
 * fingerprints; the cleaned SQL runs only when cleaning changed it (the
 * same bytes give the same result). 1 when rejected for its outcome
 * (--reject-failed-execution). */
static int execute(ps_clean_worker *w, ps_clean_item *it, ps_error *err)
{
    const ps_cleaner *c = w->c;
    if (!c->opts.execute || !it->schema)
        return 0;
    ps_exec_result before, after;
    char *msg = w->t2s.exec_msg;
    size_t msz = sizeof w->t2s.exec_msg;
    unsigned ms = c->opts.execute_timeout_ms;
    int rc = ps_sql_execute_fp(w->t2s.checker, it->schema, it->raw_sql, it->raw_sql_len, ms,
                               PS_EXEC_MAX_ROWS, &before, msg, msz, err);
    bool unchanged = w->s.len == it->raw_sql_len && memcmp(w->s.data, it->raw_sql, w->s.len) == 0;
    if (!rc && unchanged)
        after = before;
    else if (!rc)
        rc = ps_sql_execute_fp(w->t2s.checker, it->schema, w->s.data, w->s.len, ms,
                               PS_EXEC_MAX_ROWS, &after, msg, msz, err);
    if (rc)
        return rc;
    it->exec_before = (int)before.status;
    it->exec_sql_changed = !unchanged;
    it->exec_before_rows = before.rows;
    it->exec_before_hash = before.hash;
    it->exec_status = (int)after.status;
    it->exec_rows = after.rows;
    it->exec_hash = after.hash;
    /* the report's execution examples show why a query failed or stopped */
    bool failed = after.status == PS_EXEC_ERROR || after.status == PS_EXEC_TIMEOUT;
    it->exec_msg = failed && msg[0] ? msg : NULL;
    const char *reason = EXEC_REASONS[after.status];
    if (!reason || !(c->opts.reject_failed_execution & (1u << after.status)))
        return 0;
    snprintf(w->detail, sizeof w->detail, "the SQL %s on database '%s'%s%s",
             after.status == PS_EXEC_EMPTY   ? "returned no rows"
             : after.status == PS_EXEC_ERROR ? "failed"
                                             : "ran past the time limit",
             it->schema->db_id, failed ? ": " : "", failed ? msg : "");
    return ps_t2s_reject(w, it, reason);
}

/* The prompt and completion; 1 when a placeholder's field is missing. */
static int render(ps_clean_worker *w, ps_clean_item *it)
{
    const ps_cleaner *c = w->c;
    ps_t2s_worker *t = &w->t2s;
    /* every member, so that nothing of the item's last record stays */
    it->render = (ps_render_fields){
        .question = w->q.data,
        .question_len = w->q.len,
        .sql = w->s.data,
        .sql_len = w->s.len,
        .db_id = it->res.db_id,
        .db_id_len = it->res.db_id ? t->db.len : 0,
        .schema = it->schema,
        .history = t->hist_ptr,
        .history_lens = t->hist_len,
        .n_history = t->n_hist,
        .values = t->extra_ptr,
        .value_lens = t->extra_len,
    };
    if (!c->tmpl)
        return 0;
    bool has_completion;
    int rc = ps_template_render(c->tmpl, &it->render, NULL, &t->prompt, &t->completion,
                                &has_completion, w->detail, sizeof w->detail);
    if (rc < 0)
        return rc;
    if (rc == 1)
        return ps_t2s_reject(w, it, "missing_field");
    it->res.prompt = t->prompt.data;
    it->res.prompt_len = t->prompt.len;
    it->res.completion = has_completion ? t->completion.data : NULL;
    it->res.completion_len = has_completion ? t->completion.len : 0;
    return 0;
}

/* Duplicates are exact repeats of what the model sees: the rendered
 * (prompt, completion) with a template; without one, a turn's question and
 * SQL together with its history (the same utterance after another
 * conversation is another example). */
static int rehash(ps_clean_worker *w, ps_clean_item *it)
{
    ps_t2s_worker *t = &w->t2s;
    if (w->c->tmpl) {
        it->hash = ps_dedupe_hash(t->prompt.data, t->prompt.len, t->completion.data,
                                  t->completion.len);
        return 0;
    }
    if (!t->n_hist)
        return 0;
    ps_buf_reset(&t->hashed);
    int rc = ps_buf_append(&t->hashed, w->s.data, w->s.len);
    for (size_t i = 0; !rc && i < t->n_hist; i++) {
        rc = ps_buf_putc(&t->hashed, '\x1e');
        if (!rc)
            rc = ps_buf_append(&t->hashed, t->hist_ptr[i], t->hist_len[i]);
    }
    if (rc)
        return PS_ENOMEM;
    it->hash = ps_dedupe_hash(w->q.data, w->q.len, t->hashed.data, t->hashed.len);
    return 0;
}

int ps_t2s_record(ps_clean_worker *w, const ps_raw_record *rec, ps_clean_item *it,
                  ps_error *err)
{
    w->t2s.n_hist = 0;
    int rc = database(w, it);
    if (!rc)
        rc = template_fields(w, it, err);
    if (!rc && rec->turn > 0)
        rc = ps_turn_history(w, rec, it, err);
    if (!rc)
        rc = check_sql(w, it, err);
    if (!rc)
        rc = render(w, it);
    if (!rc)
        rc = execute(w, it, err);
    if (!rc)
        rc = rehash(w, it);
    if (rc == PS_ENOMEM)
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    return rc < 0 ? rc : 0;
}
