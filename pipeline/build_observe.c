/*
 * pairshard build: the validation statistics of committed records, fed in
 * input order: raw (as read), cleaned and tokenized (kept records), the
 * generation lengths, the [UNK] words, the paired view and the SQL checks.
 */
#include "pipeline/build_chunk.h"

static const char *at(const ps_buf *b, size_t off) { return off == NOOFF ? NULL : b->data + off; }

/* The label's number for the statistics' registries (ps_strmap_slot_numbered):
 * the accounting's, which the commit gave it, plus one (0: none). */
static uint32_t label_number(const ps_clean_item *it)
{
    return it->res.label && it->label_no != PS_LABEL_NO_NONE ? it->label_no + 1 : 0;
}

/* One record's lengths into the three points and the generation lengths. */
static int observe_lengths(ps_build_state *st, const packed *pk)
{
    const ps_clean_item *it = &pk->it;
    const ps_clean_result *r = &it->res;
    uint32_t number = label_number(it);
    int rc = 0;
    if (it->parsed) {
        ps_vrecord raw = {r->label, pk->raw_q_chars, pk->raw_s_chars, PS_VSTATS_NO_TOKENS, 0,
                          false, false, it->utf8_repaired, 0, number};
        rc = ps_vstats_add(st->v_raw, &raw);
    } else {
        ps_vstats_add_unparsed(st->v_raw);
    }
    if (rc || r->outcome != PS_OUTCOME_KEPT)
        return rc;
    uint32_t controls = (uint32_t)(it->fq.controls_removed + it->fs.controls_removed);
    ps_vrecord c = {r->label, pk->q_chars, pk->s_chars, PS_VSTATS_NO_TOKENS, 0, false,
                    it->changed, it->utf8_repaired, controls, number};
    rc = ps_vstats_add(st->v_clean, &c);
    ps_vrecord t = c;
    t.tokens = pk->ntokens;
    t.unk_tokens = pk->unk_tokens;
    t.truncated = pk->truncated;
    if (!rc)
        rc = ps_vstats_add(st->v_tok, &t);
    if (!rc && st->v_gen) /* causal, seq2seq: the two sides of the boundary */
        rc = ps_vgen_add_numbered(st->v_gen, r->label, number, pk->type_boundary,
                                  pk->ntokens - pk->type_boundary);
    return rc;
}

/* One committed record: its lengths, [UNK] words, paired view, SQL. */
static int observe(ps_build_state *st, const char *input, const packed *pk, const ps_buf *arena)
{
    const ps_clean_item *it = &pk->it;
    const ps_clean_result *r = &it->res;
    int rc = observe_lengths(st, pk);
    if (!rc && r->outcome == PS_OUTCOME_KEPT) {
        const unsigned char *u = pk->n_unk ? (const unsigned char *)at(arena, pk->o_unk) : NULL;
        for (uint32_t k = 0; !rc && k < pk->n_unk; k++) {
            size_t len = u[2] | (size_t)u[3] << 8;
            rc = ps_vstats_add_unk_word(st->v_tok, u[0], (const char *)u + 4, len, r->id, u[1]);
            u += 4 + len;
        }
    }
    if (!rc) {
        bool after = r->outcome != PS_OUTCOME_REJECTED;
        ps_vpair pr = {r->id, r->source, r->label, r->outcome, r->reason, r->rule,
                       it->raw_question, it->raw_sql, it->raw_question_len, it->raw_sql_len,
                       after ? r->question : NULL, after ? r->sql : NULL,
                       after ? r->question_len : 0, after ? r->sql_len : 0,
                       input, r->detail, it->id_collision,
                       /* the workers counted (put_strings, put_encoded): kept
                        * records have a spool record, rejected ones need only
                        * the counts before */
                       it->parsed && (!after || pk->o_spool != NOOFF),
                       pk->raw_q_chars, pk->raw_s_chars, pk->q_chars, pk->s_chars,
                       pk->q_changed, pk->s_changed, label_number(it)};
        rc = ps_vpaired_add(st->paired, &pr);
    }
    if (!rc && (it->sql_raw_class >= 0 || it->exec_status >= 0 || pk->shortened)) {
        ps_vsql_record q = {r->id, r->label, it->sql_raw_class, it->sql_clean_class,
                            it->sql_raw_msg, it->sql_clean_msg,
                            it->cleaned ? it->touched : NULL, it->exec_status, it->exec_rows,
                            it->exec_msg, pk->shortened, pk->tables_dropped, pk->columns_dropped};
        rc = ps_vsql_add(st->v_sql, &q);
    }
    return rc;
}

int ps_build_observe_chunk(ps_build_state *st, const chunk *ch)
{
    for (size_t i = 0; i < ch->n; i++)
        if (ch->taken[i]) {
            int rc = observe(st, ch->in.path, &ch->items[i], &ch->out);
            if (rc)
                return rc;
        }
    return 0;
}
