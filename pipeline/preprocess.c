/*
 * ps_preprocess: one record through the build's own per-record code
 * (ps_preprocess_item: ps_clean_record, then ps_build_encode), so that
 * serving gives the ids the set stores. A record given as fields is first
 * written as the JSON object a build input would hold, under the names the
 * set's cleaner reads; a record without SQL (serving) gets a stand-in SQL
 * to pass the cleaner, and is encoded as segment A alone. Everything a
 * call writes is in the calling thread's slot (preprocess_pool.c), so
 * threads may share the preprocessor.
 */
#include "pipeline/preprocess_priv.h"
#include "common/options.h"

#include <stdlib.h>
#include <string.h>

/* A stand-in for the SQL a served question does not have: it compiles
 * against any schema and names no table, so it changes no render. */
#define NO_SQL "SELECT 1"

/* Appends `s` as a JSON string: quotes, backslashes and control bytes
 * escaped, every other byte as it is — invalid UTF-8 included, so that it
 * reaches the cleaner as it would in a build input and the set's --utf8
 * policy decides (jansson would refuse to write it). */
static int put_json_str(ps_buf *b, const char *s)
{
    int bad = ps_buf_putc(b, '"');
    for (const unsigned char *u = (const unsigned char *)s; *u && !bad; u++) {
        if (*u == '"' || *u == '\\')
            bad = ps_buf_putc(b, '\\') || ps_buf_putc(b, (char)*u);
        else if (*u < 0x20)
            bad = ps_buf_printf(b, "\\u%04x", *u);
        else
            bad = ps_buf_putc(b, (char)*u);
    }
    return bad || ps_buf_putc(b, '"');
}

static int put_member(ps_buf *b, const char *key, const char *value)
{
    return (b->len > 1 && ps_buf_putc(b, ',')) || put_json_str(b, key) ||
           ps_buf_putc(b, ':') || put_json_str(b, value);
}

/* For a set built from dialogues: the dialogue the served turn ends, its
 * turns at p->turns_path (a dotted path opens nested objects): the history
 * oldest first, then the turn itself, which is turn n_history. */
static int put_dialogue(const ps_preprocessor *p, const ps_preprocess_input *in, ps_buf *b)
{
    const char *path = p->turns_path;
    size_t depth = 0;
    int bad = b->len > 1 && ps_buf_putc(b, ',');
    for (const char *dot; !bad && (dot = strchr(path, '.')); path = dot + 1, depth++) {
        char *seg = strndup(path, (size_t)(dot - path));
        bad = !seg || put_json_str(b, seg) || ps_buf_puts(b, ":{");
        free(seg);
    }
    bad = bad || put_json_str(b, path) || ps_buf_puts(b, ":[");
    for (size_t k = in->n_history; !bad && k-- > 0;)
        bad = ps_buf_putc(b, '{') || put_json_str(b, p->turn_q_key) || ps_buf_putc(b, ':') ||
              put_json_str(b, in->history[k] ? in->history[k] : "") || ps_buf_puts(b, "},");
    bad = bad || ps_buf_putc(b, '{') || put_json_str(b, p->turn_q_key) || ps_buf_putc(b, ':') ||
          put_json_str(b, in->question) || ps_buf_putc(b, ',') ||
          put_json_str(b, p->turn_sql_key) || ps_buf_putc(b, ':') ||
          put_json_str(b, in->sql ? in->sql : NO_SQL) || ps_buf_puts(b, "}]");
    while (!bad && depth--)
        bad = ps_buf_putc(b, '}');
    return bad;
}

/* The fields as one JSON object in `b`, under the names the set's
 * cleaner reads. */
static int fields_json(const ps_preprocessor *p, const ps_preprocess_input *in, ps_buf *b,
                       ps_error *err)
{
    ps_buf_reset(b);
    int bad = ps_buf_putc(b, '{');
    if (p->turns_path)
        bad = bad || put_dialogue(p, in, b);
    else
        bad = bad || put_member(b, p->question_key, in->question) ||
              put_member(b, p->sql_key, in->sql ? in->sql : NO_SQL);
    bad = bad || (in->db_id && put_member(b, p->db_key, in->db_id));
    for (size_t i = 0; !bad && i < in->n_fields; i++)
        if (in->fields[i].name && in->fields[i].value)
            bad = put_member(b, in->fields[i].name, in->fields[i].value);
    return bad || ps_buf_putc(b, '}') ? ps_error_set(err, PS_ENOMEM, "out of memory") : 0;
}

static void fill_output(ps_pp_slot *s, const ps_clean_item *it, const ps_encoded *e,
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
    if (s->mask.len < e->enc.len) {
        size_t old = s->mask.len;
        if (ps_buf_reserve(&s->mask, e->enc.len - old) == 0) {
            memset(s->mask.data + old, 1, e->enc.len - old);
            s->mask.len = e->enc.len;
        }
    }
    out->attention_mask = s->mask.len >= e->enc.len ? (const uint8_t *)s->mask.data : NULL;
}

static int preprocess_record(ps_preprocessor *p, const ps_preprocess_input *in,
                             ps_preprocess_output *out, ps_error *err)
{
    memset(out, 0, sizeof *out);
    if (!in || (!in->record && !in->question))
        return ps_error_set(err, PS_EINVAL, "ps_preprocess: no record and no question");
    if (in->record && p->turns_path)
        return ps_error_set(err, PS_EUSAGE,
                            "%s: the set was built from dialogues (--turns): give the turn's "
                            "fields and its history, not a raw record", p->dir);
    ps_pp_slot *s = ps_pp_slot_take(p, err);
    if (!s)
        return PS_ENOMEM;
    bool has_sql = in->record || in->sql;
    const char *data = in->record;
    size_t len = in->record_len;
    if (!data) {
        int rc = fields_json(p, in, &s->record, err);
        if (rc)
            return rc;
        data = s->record.data;
        len = s->record.len;
    }
    ps_raw_record rec;
    memset(&rec, 0, sizeof rec);
    rec.data = data;
    rec.len = len;
    rec.line = 1;
    rec.turn = p->turns_path ? (long)in->n_history : -1;
    rec.too_long = len > p->cfg.clean.max_record_bytes;
    ps_clean_item it;
    ps_encoded e;
    s->x.a_only = !has_sql;
    int rc = ps_preprocess_item(&p->cfg, s->w, s->ts, &s->x, &p->in, &rec, &it, &e, err);
    if (rc)
        return rc;
    if (it.res.outcome != PS_OUTCOME_KEPT) {
        out->rejected = 1;
        out->reason = it.res.reason;
        out->rule = it.res.rule;
        out->detail = it.res.detail;
        return 0;
    }
    fill_output(s, &it, &e, has_sql, out);
    return out->attention_mask ? 0 : ps_error_set(err, PS_ENOMEM, "out of memory");
}

int ps_preprocessor_clean(ps_preprocessor *p, const char *field, const char *text, size_t len,
                          const char **out, size_t *out_len, const char **reason, ps_error *err)
{
    *out = NULL;
    *out_len = 0;
    *reason = NULL;
    ps_pp_slot *s = ps_pp_slot_take(p, err);
    return s ? ps_clean_worker_clean_text(s->w, field, text, len, out, out_len, reason, err)
             : PS_ENOMEM;
}

/* ps_preprocess_output's size in 0.2.0, its first published version. */
#define OUTPUT_SIZE_0_2 PS_SIZE_THROUGH(ps_preprocess_output, shortened)

int ps_preprocess_size(ps_preprocessor *p, const ps_preprocess_input *in,
                       ps_preprocess_output *out, size_t out_size, ps_error *err)
{
    /* Checked first: a size too small gets nothing written, not a record's
     * partial result. */
    int rc = ps_struct_out(out, out_size, &(ps_preprocess_output){0}, sizeof *out,
                           OUTPUT_SIZE_0_2, "ps_preprocess_output", err);
    if (rc)
        return rc;
    ps_preprocess_output o;
    rc = preprocess_record(p, in, &o, err);
    ps_struct_out(out, out_size, &o, sizeof o, OUTPUT_SIZE_0_2, "ps_preprocess_output", NULL);
    return rc;
}

/* The 0.2.0 entry point (pairshard/common.h, "Structs the library fills"). */
#undef ps_preprocess
PS_API int ps_preprocess(ps_preprocessor *p, const ps_preprocess_input *in,
                         ps_preprocess_output *out, ps_error *err);

int ps_preprocess(ps_preprocessor *p, const ps_preprocess_input *in, ps_preprocess_output *out,
                  ps_error *err)
{
    return ps_preprocess_size(p, in, out, OUTPUT_SIZE_0_2, err);
}

size_t ps_preprocessor_get_max_length(const ps_preprocessor *p) { return p->cfg.max_length; }

int32_t ps_preprocessor_get_pad_id(const ps_preprocessor *p) { return p->pad_id; }
