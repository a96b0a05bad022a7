/*
 * pipeline/preprocess_int.h — the per-record core shared by the build and
 * the preprocessor (pairshard/preprocess.h): one raw record cleaned
 * (ps_clean_record) and, when kept, encoded (ps_build_encode), with a
 * schema prompt that cannot be shortened to fit turned into a too_long
 * rejection. The build's workers and ps_preprocess both call
 * ps_preprocess_item, so serving cannot drift from what was stored.
 */
#ifndef PS_PIPELINE_PREPROCESS_INT_H
#define PS_PIPELINE_PREPROCESS_INT_H

#include "pipeline/build_internal.h"

#include <jansson.h>

#define PS_PREPROCESS_DIR "preprocess"
#define PS_PREPROCESS_VERSION 1

/* Cleans `rec` into *it and, when it is kept, encodes it into *e. On 0,
 * it->res.outcome says KEPT (e valid: ids in ts until its next use) or
 * REJECTED (a record too long for max_length even shortened is turned into
 * a too_long rejection, x->detail saying why). Returns a negative code
 * only for what stops a build (out of memory, a rule failure). */
int ps_preprocess_item(const ps_build_config *cfg, ps_clean_worker *w, ps_tok_scratch *ts,
                       ps_encode_ctx *x, const ps_input_ctx *in, const ps_raw_record *rec,
                       ps_clean_item *it, ps_encoded *e, ps_error *err);

/* Writes DIR/preprocess/ (preprocess_embed.c) and returns the manifest's
 * "preprocess" object, or NULL with a message. */
json_t *ps_build_embed_preprocess(const ps_build_config *cfg, const char *dir, ps_error *err);

/* Copies the embedded files a manifest's "preprocess" object `pre` lists
 * from set `from` into `to` (a merge: every part embeds the same),
 * checking their hashes. 0, PS_EFORMAT, PS_ECORRUPT, PS_EIO, PS_ENOMEM. */
int ps_preprocess_copy(const char *from, const json_t *pre, const char *to, ps_error *err);

/* One summary line when cleaning changed more than `share` of the kept
 * records, pointing to the preprocessor for serving; NULL otherwise (or
 * out of memory). malloc'ed. */
char *ps_build_serving_note(const ps_cleaner *c, double share);
/* The share of changed records above which they are given: the validate
 * config's thresholds.serving_note_share, else 0.2. */
double ps_build_serving_share(const void *validate_json);
/* The same in report.json ("serving"); 0 or PS_ENOMEM. */
int ps_build_serving_report(const ps_cleaner *c, double share, ps_vreport *r);

#endif
