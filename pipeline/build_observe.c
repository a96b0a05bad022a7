/*
 * pairshard build: the validation statistics of committed records: raw (as
 * read), cleaned and tokenized (kept records), the generation lengths, the
 * [UNK] words, the paired view and the SQL checks.
 *
 * The length statistics (the three points and the generation lengths) and
 * the paired view's counts are sums, maxima and histograms, the same
 * whatever the order records are added in or the objects they are added
 * to before a merge (ps_vstats_merge, ps_vgen_merge, ps_vpaired_merge;
 * every output lists labels by name), so workers add most of them to
 * statistics of their own (ps_build_observe_lengths), merged once at the
 * end of phase 1; the rest is added in input order.
 */
#include "pipeline/build_chunk.h"

#include <string.h>

static const char *at(const ps_buf *b, size_t off) { return off == NOOFF ? NULL : b->data + off; }

/* The label's number for the statistics' registries (ps_strmap_slot_numbered):
 * the accounting's, which the commit gave it, plus one (0: none). */
static uint32_t label_number(const ps_clean_item *it)
{
    return it->res.label && it->label_no != PS_LABEL_NO_NONE ? it->label_no + 1 : 0;
}

/* A record as the paired view takes it. */
static ps_vpair pair_of(const char *input, const packed *pk)
{
    const ps_clean_item *it = &pk->it;
    const ps_clean_result *r = &it->res;
    bool after = r->outcome != PS_OUTCOME_REJECTED;
    return (ps_vpair){r->id, r->source, r->label, r->outcome, r->reason, r->rule,
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
}

/* The hardness level of a record: its own difficulty field's value when
 * the build reads one, else its SQL's Spider class (schema/hardness.c):
 * *name, or PS_ENOMEM. */
static int hardness_of(const ps_clean_item *it, const char *sql, size_t len, const char **name)
{
    *name = it->difficulty;
    if (it->difficulty)
        return 0;
    ps_sql_hardness level;
    int rc = ps_sql_hardness_classify(sql, len, NULL, &level);
    *name = rc ? NULL : ps_sql_hardness_name(level);
    return rc;
}

/* One record's lengths into the three points and the generation lengths,
 * and its paired view's counts. */
static int observe_lengths(const ps_build_lengths *l, const char *input, const packed *pk)
{
    const ps_clean_item *it = &pk->it;
    const ps_clean_result *r = &it->res;
    uint32_t number = label_number(it);
    ps_vpair pr = pair_of(input, pk);
    int rc = ps_vpaired_add_counts(l->paired, &pr);
    if (rc)
        return rc;
    if (it->parsed) {
        ps_vrecord raw = {r->label, pk->raw_q_chars, pk->raw_s_chars, PS_VSTATS_NO_TOKENS, 0,
                          false, false, it->utf8_repaired, 0, number, NULL};
        rc = hardness_of(it, it->raw_sql, it->raw_sql_len, &raw.hardness);
        if (!rc)
            rc = ps_vstats_add(l->raw, &raw);
    } else {
        ps_vstats_add_unparsed(l->raw);
    }
    if (rc || r->outcome != PS_OUTCOME_KEPT)
        return rc;
    uint32_t controls = (uint32_t)(it->fq.controls_removed + it->fs.controls_removed);
    ps_vrecord c = {r->label, pk->q_chars, pk->s_chars, PS_VSTATS_NO_TOKENS, 0, false,
                    it->changed, it->utf8_repaired, controls, number, NULL};
    rc = hardness_of(it, r->sql, r->sql_len, &c.hardness);
    if (!rc)
        rc = ps_vstats_add(l->clean, &c);
    ps_vrecord t = c;
    t.tokens = pk->ntokens;
    t.unk_tokens = pk->unk_tokens;
    t.truncated = pk->truncated;
    if (!rc)
        rc = ps_vstats_add(l->tok, &t);
    if (!rc && l->gen) /* causal, seq2seq: the two sides of the boundary */
        rc = ps_vgen_add_numbered(l->gen, r->label, number, pk->type_boundary,
                                  pk->ntokens - pk->type_boundary);
    if (!rc && l->gen)
        rc = ps_vgen_add_ends(l->gen, &pk->ends);
    return rc;
}

/* A record's SQL checks, execution and gold recall. */
static int observe_sql(ps_vsql *v, const packed *pk)
{
    const ps_clean_item *it = &pk->it;
    const ps_clean_result *r = &it->res;
    /* gold recall is of the prompts the set holds: not of duplicates */
    uint8_t gold = r->outcome == PS_OUTCOME_KEPT ? pk->gold : 0;
    if (it->sql_raw_class < 0 && it->exec_status < 0 && !pk->shortened && !gold)
        return 0;
    ps_vsql_record q = {r->id, r->label, it->sql_raw_class, it->sql_clean_class,
                        it->sql_raw_msg, it->sql_clean_msg,
                        it->cleaned ? it->touched : NULL, it->exec_status, it->exec_rows,
                        it->exec_msg, pk->shortened, pk->tables_dropped, pk->columns_dropped,
                        gold, it->exec_before >= 0, it->exec_before, it->exec_before_rows,
                        it->exec_before_hash, it->exec_hash};
    return ps_vsql_add(v, &q);
}

/* One committed record: its lengths unless the workers add them, its
 * [UNK] words, paired view, SQL. */
static int observe(ps_build_state *st, const char *input, const packed *pk, const ps_buf *arena,
                   uint32_t worker_labels)
{
    const ps_clean_item *it = &pk->it;
    const ps_clean_result *r = &it->res;
    ps_build_lengths own = ps_build_state_lengths(st);
    bool by_workers = ps_build_lengths_by_workers(pk, worker_labels);
    int rc = by_workers ? 0 : observe_lengths(&own, input, pk);
    if (!rc && r->outcome == PS_OUTCOME_KEPT) {
        const unsigned char *u = pk->n_unk ? (const unsigned char *)at(arena, pk->o_unk) : NULL;
        for (uint32_t k = 0; !rc && k < pk->n_unk; k++) {
            size_t len = u[2] | (size_t)u[3] << 8;
            rc = ps_vstats_add_unk_word(st->v_tok, u[0], (const char *)u + 4, len, r->id, u[1]);
            u += 4 + len;
        }
    }
    if (!rc && r->outcome == PS_OUTCOME_KEPT) {
        st->history_turns += pk->history;
        st->history_hidden += pk->history_hidden;
        if (pk->ends.round_trip == PS_VGEN_RT_MISMATCH && st->v_gen)
            rc = ps_vgen_round_trip_example(st->v_gen, r->id, at(arena, pk->o_rt));
    }
    if (!rc) { /* its counts with its lengths, above or by a worker */
        ps_vpair pr = pair_of(input, pk);
        rc = ps_vpaired_add_ordered(st->paired, &pr);
    }
    return rc ? rc : observe_sql(st->v_sql, pk);
}

/* A mixture: the record into its source's statistics too, all of them
 * here, in input order. */
static int observe_source(ps_build_state *st, const chunk *ch, const packed *pk)
{
    ps_build_src *s = &st->src[st->input_source[ch->input]];
    ps_build_lengths l = {s->v_raw, s->v_clean, s->v_tok, s->v_gen, s->paired};
    int rc = observe_lengths(&l, ch->in.path, pk);
    if (!rc) {
        ps_vpair pr = pair_of(ch->in.path, pk);
        rc = ps_vpaired_add_ordered(s->paired, &pr);
    }
    if (!rc && pk->it.res.outcome == PS_OUTCOME_KEPT) {
        s->history_turns += pk->history;
        s->history_hidden += pk->history_hidden;
    }
    return rc ? rc : observe_sql(s->v_sql, pk);
}

int ps_build_observe_chunk(ps_build_state *st, const chunk *ch, uint32_t worker_labels)
{
    for (size_t i = 0; i < ch->n; i++)
        if (ch->taken[i]) {
            int rc = observe(st, ch->in.path, &ch->items[i], &ch->out, worker_labels);
            if (!rc && st->n_src)
                rc = observe_source(st, ch, &ch->items[i]);
            if (rc)
                return rc;
        }
    return 0;
}

int ps_build_observe_lengths(const ps_build_lengths *into, const chunk *ch,
                             uint32_t worker_labels)
{
    for (size_t i = 0; i < ch->n; i++)
        if (ch->taken[i] && ps_build_lengths_by_workers(&ch->items[i], worker_labels)) {
            int rc = observe_lengths(into, ch->in.path, &ch->items[i]);
            if (rc)
                return rc;
        }
    return 0;
}

int ps_build_lengths_new(ps_build_lengths *l, bool gen)
{
    l->raw = ps_vstats_new("raw");
    l->clean = ps_vstats_new("cleaned");
    l->tok = ps_vstats_new("tokenized");
    l->gen = gen ? ps_vgen_new() : NULL;
    l->paired = ps_vpaired_new(0); /* counts only: the examples are added in order */
    if (l->raw && l->clean && l->tok && (!gen || l->gen) && l->paired)
        return 0;
    ps_build_lengths_free(l);
    return PS_ENOMEM;
}

void ps_build_lengths_free(ps_build_lengths *l)
{
    ps_vstats_free(l->raw);
    ps_vstats_free(l->clean);
    ps_vstats_free(l->tok);
    ps_vgen_free(l->gen);
    ps_vpaired_free(l->paired);
    memset(l, 0, sizeof *l);
}

int ps_build_lengths_merge(const ps_build_lengths *into, const ps_build_lengths *from)
{
    if (ps_vstats_merge(into->raw, from->raw) || ps_vstats_merge(into->clean, from->clean) ||
        ps_vstats_merge(into->tok, from->tok) ||
        (into->gen && from->gen && ps_vgen_merge(into->gen, from->gen)) ||
        (into->paired && from->paired && ps_vpaired_merge(into->paired, from->paired)))
        return PS_ENOMEM;
    return 0;
}
