/* cli/opt_error.h — getopt_long's complaints in pairshard's words. */
#ifndef PS_CLI_OPT_ERROR_H
#define PS_CLI_OPT_ERROR_H

#include <getopt.h>

/* Optstrings start with this (a missing value returns ':', told apart from
 * an unknown option's '?'); set opterr = 0 before getopt_long. */
#define PS_OPT_QUIET ":"

/* Says on stderr what is wrong with the option getopt_long just refused
 * (c is its '?' or ':'), as "pairshard CMD: unknown option '--x'",
 * "... option '--output' needs a value" or "... option '--quiet' takes no
 * value", then where the help is. */
void ps_opt_error(const char *cmd, int c, char *const *argv, const struct option *longopts);

#endif
