/* The per-record core of the build and the preprocessor (preprocess_int.h). */
#include "pipeline/preprocess_int.h"

#include <stdio.h>
#include <string.h>

int ps_preprocess_item(const ps_build_config *cfg, ps_clean_worker *w, ps_tok_scratch *ts,
                       ps_encode_ctx *x, const ps_input_ctx *in, const ps_raw_record *rec,
                       ps_clean_item *it, ps_encoded *e, ps_error *err)
{
    memset(e, 0, sizeof *e);
    int rc = ps_clean_record(w, in, rec, it, err);
    if (!rc && cfg->leak && it->res.outcome == PS_OUTCOME_KEPT)
        rc = ps_build_leak_worker(cfg, x, it, err);
    if (rc || it->res.outcome != PS_OUTCOME_KEPT)
        return rc;
    if ((rc = ps_build_encode(cfg, x, ts, it, e, err)) == PS_ELIMIT) {
        /* The record's text, not the tokenizer, is at fault (a regex of
         * the tokenizer.json ran out of steps on it, or more ids than an
         * encoding holds): reject it, naming the component, and go on. */
        snprintf(x->detail, sizeof x->detail, "%s", err->message);
        ps_error_clear(err);
        memset(e, 0, sizeof *e);
        it->res.outcome = PS_OUTCOME_REJECTED;
        it->res.reason = "tokenizer_error";
        it->res.detail = x->detail;
        return 0;
    }
    if (rc)
        return rc;
    if (e->too_long || e->lost_gold) {
        it->res.outcome = PS_OUTCOME_REJECTED;
        it->res.reason = e->too_long ? "too_long" : "schema_lost_gold";
        it->res.detail = x->detail;
    }
    return 0;
}
