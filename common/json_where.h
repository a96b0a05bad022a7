/* common/json_where.h — jansson's load errors as "FILE:LINE:COLUMN: why". */
#ifndef PS_COMMON_JSON_WHERE_H
#define PS_COMMON_JSON_WHERE_H

#include <jansson.h>
#include <stddef.h>

/* Writes into buf (n bytes) where and why `path` failed to load:
 * "PATH:LINE:COLUMN: TEXT" when jansson knows the position; when it does
 * not (line -1: the file could not be opened or read) "PATH: TEXT", or
 * TEXT alone when it names the file already ("unable to open PATH: ...").
 * Returns buf. */
const char *ps_json_where(char *buf, size_t n, const char *path, const json_error_t *je);

#endif
