/*
 * ps_preprocess: one record through the build's own per-record code
 * (ps_preprocess_item: ps_clean_record, then ps_build_encode), so that
 * serving gives the ids the set stores. A record given as fields is first
 * written as the JSON object a build input would hold, under the names the
 * set's cleaner reads; a record without SQL (serving) gets a stand-in SQL
 * to pass the cleaner, and is encoded as segment A alone.
 */
#include "pipeline/preprocess_priv.h"

#include <stdlib.h>
#include <string.h>

/* A stand-in for the SQL a served question does not have: it compiles
 * against any schema and names no table, so it changes no render. */
#define NO_SQL "SELECT 1"

/* The fields as one JSON object in p->record. */
static int fields_json(ps_preprocessor *p, const ps_preprocess_input *in, ps_error *err)
{
    json_t *o = json_object();
    json_object_set_new(o, p->question_key, json_string(in->question));
    json_object_set_new(o, p->sql_key, json_string(in->sql ? in->sql : NO_SQL));
    if (in->db_id)
        json_object_set_new(o, p->db_key, json_string(in->db_id));
    for (size_t i = 0; i < in->n_fields; i++)
        if (in->fields[i].name && in->fields[i].value)
            json_object_set_new(o, in->fields[i].name, json_string(in->fields[i].value));
    char *text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    if (!text)
        return ps_error_set(err, PS_EINVAL, "the record's fields are not valid UTF-8 "
                            "(or out of memory)");
    ps_buf_reset(&p->record);
    int rc = ps_buf_puts(&p->record, text);
    free(text);
    return rc ? ps_error_set(err, PS_ENOMEM, "out of memory") : 0;
}

static void fill_output(ps_preprocessor *p, const ps_clean_item *it, const ps_encoded *e,
                        bool has_sql, ps_preprocess_output *out)
{
    const ps_clean_result *r = &it->res;
    out->question = r->question;
    out->question_len = r->question_len;
    out->sql = has_sql ? r->sql : NULL;
    out->sql_len = has_sql ? r->sql_len : 0;
    if (r->prompt) {
        out->prompt = e->a;
        out->prompt_len = e->a_len;
        out->completion = e->b;
        out->completion_len = e->b_len;
    }
    out->input_ids = e->enc.input_ids;
    out->token_type_ids = e->enc.token_type_ids;
    out->length = e->enc.len;
    out->truncated = e->enc.truncated != 0;
    out->shortened = e->shortened;
    if (p->mask.len < e->enc.len) {
        size_t old = p->mask.len;
        if (ps_buf_reserve(&p->mask, e->enc.len - old) == 0) {
            memset(p->mask.data + old, 1, e->enc.len - old);
            p->mask.len = e->enc.len;
        }
    }
    out->attention_mask = p->mask.len >= e->enc.len ? (const uint8_t *)p->mask.data : NULL;
}

int ps_preprocess(ps_preprocessor *p, const ps_preprocess_input *in, ps_preprocess_output *out,
                  ps_error *err)
{
    memset(out, 0, sizeof *out);
    if (!in || (!in->record && !in->question))
        return ps_error_set(err, PS_EINVAL, "ps_preprocess: no record and no question");
    bool has_sql = in->record || in->sql;
    const char *data = in->record;
    size_t len = in->record_len;
    if (!data) {
        int rc = fields_json(p, in, err);
        if (rc)
            return rc;
        data = p->record.data;
        len = p->record.len;
    }
    ps_raw_record rec;
    memset(&rec, 0, sizeof rec);
    rec.data = data;
    rec.len = len;
    rec.line = 1;
    rec.turn = -1;
    rec.too_long = len > p->cfg.clean.max_record_bytes;
    ps_clean_item it;
    ps_encoded e;
    p->x.a_only = !has_sql;
    int rc = ps_preprocess_item(&p->cfg, p->w, p->ts, &p->x, &p->in, &rec, &it, &e, err);
    if (rc)
        return rc;
    if (it.res.outcome != PS_OUTCOME_KEPT) {
        out->rejected = 1;
        out->reason = it.res.reason;
        out->rule = it.res.rule;
        out->detail = it.res.detail;
        return 0;
    }
    fill_output(p, &it, &e, has_sql, out);
    return out->attention_mask ? 0 : ps_error_set(err, PS_ENOMEM, "out of memory");
}

int ps_preprocessor_clean(ps_preprocessor *p, const char *field, const char *text, size_t len,
                          const char **out, size_t *out_len, const char **reason, ps_error *err)
{
    return ps_cleaner_clean_text(p->cleaner, field, text, len, out, out_len, reason, err);
}

size_t ps_preprocessor_max_length(const ps_preprocessor *p) { return p->cfg.max_length; }

int32_t ps_preprocessor_pad_id(const ps_preprocessor *p) { return p->pad_id; }
