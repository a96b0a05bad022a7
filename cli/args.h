/*
 * One way to read numbers and names from flags and environment variables,
 * for every command: strict decimal (common/parse_num.h) with an explicit
 * range, and one message shape:
 *   pairshard build: --shards: 'abc' is not a whole number (1..100000)
 *   pairshard build: SLURM_ARRAY_TASK_ID='abc' is not a whole number (0..4095)
 *   pairshard tokenize: --field: 'x' is not one of question, sql
 * Every function prints its message to stderr and returns -1 on bad input.
 */
#ifndef PS_CLI_ARGS_H
#define PS_CLI_ARGS_H

#include <stddef.h>
#include <stdint.h>

/* --opt VALUE (opt without the dashes) into [lo, hi]. 0 or -1. */
int ps_args_u64(const char *cmd, const char *opt, const char *v, uint64_t lo, uint64_t hi,
                uint64_t *out);
int ps_args_size(const char *cmd, const char *opt, const char *v, size_t lo, size_t hi,
                 size_t *out);

/* Environment variable `var` into [lo, hi]: 1 when unset (*out untouched),
 * 0 when read, -1 when set but not such a number (empty included). */
int ps_args_env_u64(const char *cmd, const char *var, uint64_t lo, uint64_t hi, uint64_t *out);

/* A decimal fraction for --opt in the open interval (lo, hi). 0 or -1. */
int ps_args_double(const char *cmd, const char *opt, const char *v, double lo, double hi,
                   double *out);

typedef struct ps_args_choice {
    const char *name;
    int value;
} ps_args_choice;

/* --opt NAME, one of `choices` (n of them). 0 or -1 listing the names. */
int ps_args_enum(const char *cmd, const char *opt, const char *v, const ps_args_choice *choices,
                 size_t n, int *out);

#endif
