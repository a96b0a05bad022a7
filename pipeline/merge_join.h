/* pipeline/merge_join.h — `pairshard merge` of independent sets (not
 * parts of one build): the checks that they can be read as one, their
 * sources, and their accounting added up (merge_join.c). */
#ifndef PS_PIPELINE_MERGE_JOIN_H
#define PS_PIPELINE_MERGE_JOIN_H

#include "pipeline/build.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

/* True when none of the manifests is a part of a --part build; PS_EUSAGE
 * (in *rc) when some are and some are not. */
bool ps_merge_is_join(json_t *const *ms, const char *const *dirs, size_t n, int *rc,
                      ps_error *err);

/* Independent sets join when their tokenizers (vocab_sha256, vocab_size,
 * id_width), layouts and block_records agree: 0, or PS_EUSAGE naming both
 * sets and what differs. */
int ps_merge_join_check(json_t *const *ms, const char *const *dirs, size_t n, ps_error *err);

/* The joined set's "sources": each set's own sources, or the set as one
 * source named after its directory, renamed as opts says (a rename old=new
 * applies to the last source named old); offsets[i] is set i's first
 * source id. A name given twice is PS_EUSAGE naming both sets and
 * suggesting --rename. NULL on failure (err set). */
json_t *ps_merge_join_sources(json_t *const *ms, const char *const *dirs, size_t n,
                              const ps_merge_opts *opts, uint32_t *offsets, ps_error *err);

/* Adds b into a (accounting, statistics): numbers summed, objects by key,
 * arrays by position, or, with concat_arrays (joined sets: their inputs),
 * one after another. */
void ps_merge_json_add(json_t *a, json_t *b, bool concat_arrays);

#endif
