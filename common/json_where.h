/* common/json_where.h — jansson's load errors as "FILE:LINE:COLUMN: why". */
#ifndef PS_COMMON_JSON_WHERE_H
#define PS_COMMON_JSON_WHERE_H

#include "pairshard/common.h"

#include <jansson.h>
#include <stddef.h>

/* Writes into buf (n bytes) where and why `path` failed to load:
 * "PATH:LINE:COLUMN: TEXT" when jansson knows the position; when it does
 * not (line -1: the file could not be opened or read) "PATH: TEXT", or
 * TEXT alone when it names the file already ("unable to open PATH: ...").
 * Returns buf. */
const char *ps_json_where(char *buf, size_t n, const char *path, const json_error_t *je);

/* Sets err to why `path` failed to load (ps_json_where) and returns the
 * code: PS_ENOMEM when jansson ran out of memory ("PATH: out of memory
 * parsing the JSON": jansson says so with line -1 and, on some paths, no
 * text at all), else PS_EFORMAT. */
int ps_json_load_error(ps_error *err, const char *path, const json_error_t *je);

/* json_loadb, except that a parse during which an allocation failed is a
 * failure with json_error_out_of_memory: jansson's lexer drops the bytes
 * it cannot store (lex_save ignores strbuffer's failure), so without this
 * a short allocation can come back as a wrong syntax error, or as a
 * document whose strings were cut short ("model.unk_token: missing"). */
json_t *ps_json_loadb(const char *buf, size_t len, size_t flags, json_error_t *je);

#endif
