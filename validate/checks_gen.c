/* validate/checks_gen.c — the checks of what a generator set teaches
 * (docs/REPORT.md): causal and seq2seq records whose ids do not read back
 * as their text (round_trip, fails), causal records whose junction a
 * token crosses (junction_merges, warns), and dialogue turns whose prompt
 * (no template, or one without {history}) hides the earlier utterances
 * (history_hidden, warns). Each runs only in
 * builds it concerns, so other reports keep their bytes. */
#include "validate/checks.h"

#include <math.h>
#include <string.h>

typedef ps_vcheck_ctx ctx;

static void round_trip(ctx *x, const ps_vgen_end_counts *e)
{
    uint64_t checked = e->rt_ok + e->rt_mismatch;
    double value = (double)e->rt_mismatch;
    int vd = ps_vcheck_verdict(x, C_ROUND_TRIP, value);
    json_t *d = json_pack("{sIsIsI}", "checked", (json_int_t)checked, "mismatched",
                          (json_int_t)e->rt_mismatch, "not_lossless", (json_int_t)e->rt_lossy);
    if (!e->rt_mismatch) {
        ps_vcheck_push(x, C_ROUND_TRIP, value, NAN, d,
                       "every record the tokenizer decodes losslessly (%llu; %llu not) reads back "
                       "as its rendered text: %s",
                       (unsigned long long)checked, (unsigned long long)e->rt_lossy,
                       ps_vcheck_word(vd));
        return;
    }
    ps_vcheck_push(x, C_ROUND_TRIP, value, NAN, d,
                   "%llu of %llu records decode to a text other than the one rendered; first "
                   "'%.120s': %.200s: %s",
                   (unsigned long long)e->rt_mismatch, (unsigned long long)checked,
                   e->rt_id ? e->rt_id : "?", e->rt_detail ? e->rt_detail : "",
                   ps_vcheck_word(vd));
}

static void junction(ctx *x, const ps_vgen_end_counts *e)
{
    uint64_t records = e->records;
    double value = (double)e->junction_merged;
    int vd = ps_vcheck_verdict(x, C_JUNCTION, value);
    ps_vcheck_push(x, C_JUNCTION, value, NAN,
                   json_pack("{sIsI}", "records", (json_int_t)records, "junction_merged",
                             (json_int_t)e->junction_merged),
                   "%llu of %llu records have a token of the whole text crossing from the prompt "
                   "into the completion%s: %s",
                   (unsigned long long)e->junction_merged, (unsigned long long)records,
                   e->junction_merged ? " (end the prompt with a newline, not a space)" : "",
                   ps_vcheck_word(vd));
}

static void history(ctx *x, uint64_t turns, uint64_t hidden)
{
    double value = (double)hidden;
    int vd = ps_vcheck_verdict(x, C_HISTORY_HIDDEN, value);
    ps_vcheck_push(x, C_HISTORY_HIDDEN, value, NAN,
                   json_pack("{sIsI}", "turns_with_history", (json_int_t)turns, "hidden",
                             (json_int_t)hidden),
                   "%llu of %llu dialogue turns with earlier utterances have a prompt that does "
                   "not show them%s: %s",
                   (unsigned long long)hidden, (unsigned long long)turns,
                   hidden ? " (no {history} placeholder: use one, or a preset)" : "",
                   ps_vcheck_word(vd));
}

int ps_validate_gen(const ps_vconfig *c, const ps_vgen_checks *g, ps_vreport *r, ps_error *err)
{
    if (!r || (!g->gen && !g->dialogue))
        return 0;
    ps_vconfig *def = NULL;
    if (!c && !(c = def = ps_vconfig_new()))
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    ctx x = {c, r, 0, "tokenized", ""};
    if (g->gen) {
        ps_vgen_end_counts e;
        ps_vgen_get_end_counts(g->gen, &e);
        x.rc = ps_vconfig_add_group_json(c, r->config, "generation");
        round_trip(&x, &e);
        if (g->causal)
            junction(&x, &e);
    }
    if (g->dialogue && !x.rc) {
        x.rc = ps_vconfig_add_group_json(c, r->config, "dialogue");
        history(&x, g->history_turns, g->history_hidden);
    }
    ps_vconfig_free(def);
    if (x.rc)
        return ps_error_set(err, x.rc, "validation: out of memory");
    ps_vreport_refresh_verdict(r);
    return 0;
}
