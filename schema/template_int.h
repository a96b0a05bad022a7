/* schema/template_int.h — between template.c and template_presets.c. */
#ifndef PS_SCHEMA_TEMPLATE_INT_H
#define PS_SCHEMA_TEMPLATE_INT_H

#include "schema/schema.h"

/* Makes a template from its texts (completion NULL: none). `preset` is the
 * preset's name (it counts in the digest) or NULL for a file. */
int ps_template_build(const char *name, const char *preset, const char *prompt,
                      const char *completion, bool normalize_sql, ps_template **out,
                      ps_error *err);

/* 0 and *out when `name` is a preset, 1 when it is not one, or a negative
 * code. `causal`: the prompt ends in a newline (ps_template_open_layout). */
int ps_template_preset(const char *name, bool causal, ps_template **out, ps_error *err);
/* "pair, question, picard, ddl" */
const char *ps_template_preset_names(void);

/* PICARD's normalize(query) (seq2seq/utils/dataset.py), appended to out:
 * every word not touching a quote is lower-cased, whitespace runs become
 * one space (and the ends are trimmed), " , " becomes ", ". 0 or
 * PS_ENOMEM. */
int ps_sql_normalize_picard(const char *sql, size_t n, ps_buf *out);

#endif
