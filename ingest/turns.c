/*
 * Dialogues (SParC, CoSQL): a record whose member at opts.turns_path is an
 * array of turn objects becomes one record per turn. The reader side
 * (ps_turns_next) hands out the dialogue's bytes once per turn, with the
 * turn's index, so that everything downstream (workers, the build's
 * chunks, commit in input order) sees ordinary records; the worker side
 * parses a dialogue once for all its turns and reads a turn's fields and
 * its history (the earlier turns' utterances only: no later turn and no
 * SQL can leak into a turn).
 */
#include "ingest/cleaner_int.h"

#include <stdio.h>
#include <string.h>

/* Why a dialogue has no turns to give, into rec (rejected whole). */
static int whole(ps_raw_record *rec, const char *reason, const char *fmt, ...) PS_PRINTF(3, 4);
static int whole(ps_raw_record *rec, const char *reason, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    rec->error_reason = reason;
    vsnprintf(rec->error_detail, sizeof rec->error_detail, fmt, ap);
    va_end(ap);
    rec->turn = -1;
    return 1;
}

/* The number of turns of the dialogue in rec, or 0 with rec rejected. */
static size_t count_turns(const ps_cleaner *c, ps_raw_record *rec)
{
    const char *path = c->turns_path;
    size_t bad = ps_utf8_check(rec->data, rec->len);
    if (bad < rec->len) {
        whole(rec, "invalid_utf8", "invalid UTF-8 at byte %zu of the dialogue", bad);
        return 0;
    }
    json_error_t je;
    json_t *root = json_loadb(rec->data, rec->len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL |
                              JSON_DECODE_ANY, &je);
    size_t n = 0;
    if (!root) {
        whole(rec, "bad_json", "invalid JSON at column %d: %s", je.column, je.text);
        return 0;
    }
    json_t *turns = json_is_object(root) ? ps_fields_lookup(root, path) : NULL;
    if (!json_is_object(root))
        whole(rec, "wrong_type", "the dialogue is %s, expected a JSON object",
              ps_fields_type_name(root));
    else if (!turns || json_is_null(turns))
        whole(rec, "missing_field", "no field '%s' holding the dialogue's turns", path);
    else if (!json_is_array(turns))
        whole(rec, "wrong_type", "field '%s' is %s, expected an array of turns", path,
              ps_fields_type_name(turns));
    else if (json_array_size(turns) == 0)
        whole(rec, "empty_field", "the dialogue has no turns ('%s' is empty)", path);
    else
        n = json_array_size(turns);
    for (size_t i = 0; i < n; i++)
        if (!json_is_object(json_array_get(turns, i))) {
            whole(rec, "wrong_type", "turn %zu of '%s' is %s, expected an object", i, path,
                  ps_fields_type_name(json_array_get(turns, i)));
            n = 0;
        }
    json_decref(root);
    return n;
}

int ps_turns_next(ps_cleaner *c, ps_input_ctx *in, ps_raw_record *rec, ps_error *err)
{
    if (in->dlg_next < in->dlg_turns) {
        *rec = in->dlg;
        rec->data = in->dlg_bytes.data;
        rec->len = in->dlg_bytes.len;
        rec->turn = in->dlg_next++;
        return 1;
    }
    in->dlg_turns = in->dlg_next = 0;
    int rc = ps_input_next_record(c, in, rec, err);
    if (rc != 1)
        return rc;
    if (in->fmt == PS_FORMAT_CSV || in->fmt == PS_FORMAT_TSV)
        return ps_error_set(err, PS_EUSAGE, "%s: dialogues (--turns) are JSON or JSONL records, "
                            "not CSV/TSV rows", in->path);
    ps_stats_add_dialogue(c->stats);
    if (c->owner) /* a mixture's source: the overall accounting too */
        ps_stats_add_dialogue(c->owner->stats);
    if (rec->too_long || rec->error_reason)
        return 1; /* rejected whole, as any record */
    size_t n = count_turns(c, rec);
    if (n == 0)
        return 1;
    ps_buf_reset(&in->dlg_bytes);
    if (ps_buf_append(&in->dlg_bytes, rec->data, rec->len))
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    in->dlg = *rec;
    in->dlg_turns = (long)n;
    in->dlg_next = 1;
    rec->data = in->dlg_bytes.data;
    rec->turn = 0;
    return 1;
}

/* The dialogue of rec, parsed (cached: its turns come one after another). */
static json_t *dialogue(ps_clean_worker *w, const char *data, size_t len)
{
    ps_t2s_worker *t = &w->t2s;
    if (t->dlg_root && t->dlg_bytes.len == len && memcmp(t->dlg_bytes.data, data, len) == 0)
        return t->dlg_root;
    if (t->dlg_root)
        json_decref(t->dlg_root);
    t->dlg_root = NULL;
    ps_buf_reset(&t->dlg_bytes);
    if (ps_buf_append(&t->dlg_bytes, data, len))
        return NULL;
    json_error_t je;
    t->dlg_root = json_loadb(data, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
    return t->dlg_root;
}

int ps_turn_fields(ps_clean_worker *w, const ps_raw_record *rec, const char *data, size_t len)
{
    const ps_cleaner *c = w->c;
    ps_fields *f = &w->fields;
    json_t *root = dialogue(w, data, len);
    json_t *turn = root ? json_array_get(ps_fields_lookup(root, c->turns_path),
                                         (size_t)rec->turn)
                        : NULL;
    if (!turn) { /* ps_turns_next parsed it: only memory can fail here */
        ps_fields_clear(f);
        return PS_ENOMEM;
    }
    ps_field_names names = c->names;
    names.question = c->turn_q;
    names.sql = c->turn_sql;
    return ps_fields_from_turn(f, root, turn, &names);
}

/* Room for n cleaned utterances. */
static int hist_room(ps_t2s_worker *t, size_t n)
{
    if (n <= t->hist_cap)
        return 0;
    ps_buf *h = realloc(t->hist, n * sizeof *h);
    if (h)
        t->hist = h;
    const char **p = h ? realloc(t->hist_ptr, n * sizeof *p) : NULL;
    if (p)
        t->hist_ptr = p;
    size_t *l = p ? realloc(t->hist_len, n * sizeof *l) : NULL;
    if (!l)
        return PS_ENOMEM;
    t->hist_len = l;
    for (size_t i = t->hist_cap; i < n; i++)
        ps_buf_init(&t->hist[i]);
    t->hist_cap = n;
    return 0;
}

int ps_turn_history(ps_clean_worker *w, const ps_raw_record *rec, ps_clean_item *it,
                    ps_error *err)
{
    const ps_cleaner *c = w->c;
    ps_t2s_worker *t = &w->t2s;
    json_t *turns = ps_fields_lookup(t->dlg_root, c->turns_path);
    size_t n = (size_t)rec->turn;
    if (hist_room(t, n))
        return PS_ENOMEM;
    for (size_t j = 0; j < n; j++) { /* most recent first */
        size_t k = n - 1 - j;
        json_t *turn = json_array_get(turns, k), *u = NULL;
        for (size_t i = 0; !json_is_string(u) && i < c->turn_q.n; i++)
            u = ps_fields_lookup(turn, c->turn_q.cand[i]);
        if (!json_is_string(u)) {
            snprintf(w->detail, sizeof w->detail, "the earlier turn %zu has no string '%s', "
                     "so the history is incomplete", k, c->turn_q.text);
            return ps_t2s_reject(w, it, "missing_field");
        }
        char what[40];
        snprintf(what, sizeof what, "earlier turn %zu", k);
        int rc = ps_t2s_clean_text(w, it, json_string_value(u), json_string_length(u), &t->hist[j],
                                   what, err);
        if (rc)
            return rc;
        t->hist_ptr[j] = t->hist[j].data ? t->hist[j].data : "";
        t->hist_len[j] = t->hist[j].len;
    }
    t->n_hist = n;
    return 0;
}
