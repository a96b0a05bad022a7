/*
 * The leakage options `pairshard leakage`, `build` and `clean` share: one
 * table, one parser, one help text (pipeline/leak_load.h's ps_leak_config).
 */
#ifndef PS_CLI_LEAK_ARGS_H
#define PS_CLI_LEAK_ARGS_H

#include "pipeline/leak_load.h"

#include <getopt.h>

enum {
    PS_LEAK_OPT_HOLDOUT,
    PS_LEAK_OPT_THRESHOLD,
    PS_LEAK_OPT_NGRAM,
    PS_LEAK_OPT_LIMIT,
    PS_LEAK_OPT_DROP,
    PS_LEAK_OPTS
};

/* The long options, their vals from `base` up (holdout is base + 0). */
#define PS_LEAK_LONGOPTS(base)                                          \
    {"holdout", required_argument, NULL, (base) + PS_LEAK_OPT_HOLDOUT},  \
    {"near-threshold", required_argument, NULL, (base) + PS_LEAK_OPT_THRESHOLD}, \
    {"ngram", required_argument, NULL, (base) + PS_LEAK_OPT_NGRAM},      \
    {"leakage-limit", required_argument, NULL, (base) + PS_LEAK_OPT_LIMIT}, \
    {"drop-leaked", required_argument, NULL, (base) + PS_LEAK_OPT_DROP}

#define PS_LEAK_ARGS_HELP                                                                   \
    "      --near-threshold J     near_question's character n-gram Jaccard (default 0.8)\n"  \
    "      --ngram N              characters an n-gram (default 3)\n"                        \
    "      --leakage-limit KIND=FRACTION  the largest share of training records that\n"      \
    "                             may leak by KIND ('off': reported only); defaults:\n"      \
    "                             database=0 question=0.01 near_question=0.02 sql=0.05\n"    \
    "                             sql_template=off (docs/REPORT.md, \"Leakage\")\n"

#define PS_LEAK_DROP_HELP                                                                   \
    "      --holdout FILE|SET     a held-out set the model is judged on (repeatable):\n"    \
    "                             leakage is checked, reported and gated\n"                 \
    "      --drop-leaked KIND,... reject training records that leak by these kinds\n"      \
    "                             (reason leaked_KIND): database, question,\n"              \
    "                             near_question, sql, sql_template\n" PS_LEAK_ARGS_HELP

void ps_leak_args_init(ps_leak_config *c);
/* Applies option `which` (PS_LEAK_OPT_*). 0, or -1 after printing why. */
int ps_leak_args_apply(ps_leak_config *c, const char *cmd, int which, const char *value);

#endif
