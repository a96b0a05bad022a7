/*
 * One field's text cleaned alone (ps_cleaner_clean_text): what serving
 * needs when a question arrives by itself. It runs the steps a record's
 * field goes through in ps_clean_record — the UTF-8 policy, then
 * ps_clean_field (normalisation, controls, rules, folding), then the
 * empty and length checks — so text cleaned here is byte for byte the
 * text a build would have stored.
 */
#include "ingest/cleaner_int.h"

#include <string.h>

int ps_cleaner_clean_text(ps_cleaner *c, const char *field, const char *text, size_t len,
                          const char **out, size_t *out_len, const char **reason, ps_error *err)
{
    *out = NULL;
    *out_len = 0;
    *reason = NULL;
    if (!c->worker && ps_clean_worker_create(c, &c->worker))
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    return ps_clean_worker_clean_text(c->worker, field, text, len, out, out_len, reason, err);
}

int ps_clean_worker_clean_text(ps_clean_worker *w, const char *field, const char *text,
                               size_t len, const char **out, size_t *out_len,
                               const char **reason, ps_error *err)
{
    const ps_cleaner *c = w->c;
    *out = NULL;
    *out_len = 0;
    *reason = NULL;
    bool is_sql = field && strcmp(field, "sql") == 0;
    /* The record's own question and SQL must not be empty or too long
     * (ps_clean_record rejects the record); a template field or a history
     * utterance may be (ps_t2s_clean_text only cleans it). */
    bool own = is_sql || !field || strcmp(field, "question") == 0;
    if (len == 0 && own) {
        *reason = "empty_field";
        return 0;
    }
    if (ps_utf8_check(text, len) != len) {
        if (c->opts.utf8_policy == PS_UTF8_REJECT) {
            *reason = "invalid_utf8";
            return 0;
        }
        size_t replaced = 0;
        ps_buf_reset(&w->fixed);
        if (ps_utf8_repair(text, len, &w->fixed, &replaced))
            return ps_error_set(err, PS_ENOMEM, "out of memory");
        text = w->fixed.data;
        len = w->fixed.len;
    }
    size_t nrules = ps_rules_count(c->rules);
    if (nrules)
        memset(w->touched, 0, nrules);
    ps_field_result fr;
    ps_rules_outcome ro;
    int rc = ps_clean_field(w, is_sql ? PS_FIELD_SQL : PS_FIELD_QUESTION, text, len, &w->q, &fr,
                            &ro, err);
    if (rc)
        return rc;
    if (ro.dropped || ro.failed)
        *reason = ro.dropped ? "dropped_by_rule" : "rule_error";
    else if (own && w->q.len == 0)
        *reason = "empty_after_cleaning";
    else if (own && w->q.len > c->opts.max_field_bytes)
        *reason = "too_long";
    if (*reason)
        return 0;
    if (ps_buf_putc(&w->q, '\0'))
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    w->q.len--;
    *out = w->q.data;
    *out_len = w->q.len;
    return 0;
}
