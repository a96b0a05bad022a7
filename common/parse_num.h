/*
 * One strict parser for the numbers people type: command-line flags,
 * environment variables (SLURM_ARRAY_TASK_ID, RANK, ...) and config values.
 * Plain decimal digits only (a leading '-' where the type is signed): no
 * blanks, no '+', no trailing junk, no silent wrap-around, no empty text
 * read as 0. Internal; the CLI's cli/args.c prints what this explains.
 */
#ifndef PS_PARSE_NUM_H
#define PS_PARSE_NUM_H

#include "pairshard/common.h"

#include <stddef.h>
#include <stdint.h>

typedef enum ps_num_status {
    PS_NUM_OK = 0,
    PS_NUM_EMPTY,    /* "" (or NULL) */
    PS_NUM_JUNK,     /* not decimal digits: "abc", "1/2", " 5", "+5", "5x" */
    PS_NUM_NEGATIVE, /* "-1" where the type is unsigned */
    PS_NUM_RANGE,    /* digits, but outside [min, max] (overflow included) */
} ps_num_status;

/* Parses `s` into [min, max]. Returns PS_NUM_OK and sets *out, or the
 * reason it is not such a number (*out untouched). */
ps_num_status ps_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);
ps_num_status ps_parse_i64(const char *s, int64_t min, int64_t max, int64_t *out);

/* Writes "'TEXT' is not a whole number (MIN..MAX)" (or "is empty", "is
 * negative", "is out of range") into buf; TEXT is shown with control bytes
 * escaped and cut to a screen's width. */
void ps_num_explain_u64(char *buf, size_t cap, ps_num_status st, const char *s, uint64_t min,
                        uint64_t max);
void ps_num_explain_i64(char *buf, size_t cap, ps_num_status st, const char *s, int64_t min,
                        int64_t max);

/* Reads environment variable `name` into [min, max]. Returns 0 when it is
 * unset (*out = dflt, *was_set = 0), 0 with *was_set = 1 when valid, or
 * PS_EUSAGE with err naming the variable: "who: NAME='abc' is not a whole
 * number (0..1000000)". Set but empty is not unset: it is refused. */
int ps_env_i64(const char *who, const char *name, int64_t min, int64_t max, int64_t dflt,
               int64_t *out, int *was_set, ps_error *err);

#endif
