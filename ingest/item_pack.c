/*
 * A cleaned item's strings copied out of its worker's buffers into an
 * arena, and pointed back into it on the thread that commits: how
 * ps_cleaner_run_threads and pairshard build hand items from the workers,
 * whose buffers the next record reuses, to the committing thread.
 */
#include "ingest/ingest.h"

#include <string.h>

#define NOOFF ((size_t)-1)

/* The item's string fields, as pointers to them, and (len not NULL)
 * their lengths: only while the pointers are valid. */
static void field_refs(ps_clean_item *it, const char **ref[PS_ITEM_STRINGS], size_t *len)
{
    ps_clean_result *r = &it->res;
    size_t n = 0;
#define F(p, l) (ref[n] = &(p), len ? (len[n] = (p) ? (size_t)(l) : 0) : 0, n++)
    F(r->source, strlen(r->source));
    F(r->id, strlen(r->id));
    F(r->question, r->question_len);
    F(r->sql, r->sql_len);
    F(r->label, strlen(r->label));
    F(r->detail, strlen(r->detail));
    F(r->original, r->original_len);
    F(r->db_id, strlen(r->db_id));
    F(r->prompt, r->prompt_len);
    F(r->completion, r->completion_len);
    F(r->sql_message, strlen(r->sql_message));
    F(it->keys, it->keys_len);
    F(it->raw_question, it->raw_question_len);
    F(it->raw_sql, it->raw_sql_len);
    F(it->sql_raw_msg, strlen(it->sql_raw_msg));
    F(it->sql_clean_msg, strlen(it->sql_clean_msg));
    F(it->exec_msg, strlen(it->exec_msg));
    F(it->difficulty, strlen(it->difficulty));
#undef F
}

/* Appends p[0..n) and a NUL; its offset, or NOOFF for NULL. */
static size_t put(ps_buf *b, const void *p, size_t n, int *rc)
{
    if (!p)
        return NOOFF;
    size_t off = b->len;
    if (ps_buf_append(b, p, n) || ps_buf_putc(b, '\0'))
        *rc = PS_ENOMEM;
    return off;
}

int ps_clean_item_pack(ps_clean_item *it, size_t nrules, ps_buf *arena, ps_item_offsets *o)
{
    const char **ref[PS_ITEM_STRINGS];
    size_t len[PS_ITEM_STRINGS];
    int rc = 0;
    if (it->res.outcome != PS_OUTCOME_REJECTED)
        it->res.original = NULL; /* only a rejection shows it */
    field_refs(it, ref, len);
    it->source_len = len[0];
    it->id_len = len[1];
    for (size_t k = 0; k < PS_ITEM_STRINGS; k++)
        o->off[k] = put(arena, *ref[k], len[k], &rc);
    o->touched = nrules ? put(arena, it->touched, nrules, &rc) : NOOFF;
    memset(&it->render, 0, sizeof it->render); /* the worker's: gone */
    return rc;
}

void ps_clean_item_unpack(ps_clean_item *it, const ps_buf *arena, const ps_item_offsets *o)
{
    const char **ref[PS_ITEM_STRINGS];
    field_refs(it, ref, NULL);
    for (size_t k = 0; k < PS_ITEM_STRINGS; k++)
        *ref[k] = o->off[k] == NOOFF ? NULL : arena->data + o->off[k];
    it->touched = o->touched == NOOFF ? NULL : (const unsigned char *)arena->data + o->touched;
}
