/* The leakage options (cli/leak_args.h). */
#include "cli/leak_args.h"
#include "cli/args.h"

#include <stdio.h>

void ps_leak_args_init(ps_leak_config *c) { ps_leak_config_init(c); }

int ps_leak_args_apply(ps_leak_config *c, const char *cmd, int which, const char *value)
{
    ps_error err;
    ps_error_clear(&err);
    size_t n;
    switch (which) {
    case PS_LEAK_OPT_HOLDOUT:
        if (c->n_holdouts == PS_LEAK_MAX_HOLDOUTS) {
            fprintf(stderr, "pairshard %s: more than %d --holdout sets\n", cmd,
                    PS_LEAK_MAX_HOLDOUTS);
            return -1;
        }
        c->holdouts[c->n_holdouts++] = value;
        return 0;
    case PS_LEAK_OPT_THRESHOLD:
        /* (0, 1]: 1 itself is allowed, so the open interval's top is above it */
        return ps_args_double(cmd, "near-threshold", value, 0.0, 1.0000001, &c->opts.near_threshold);
    case PS_LEAK_OPT_NGRAM:
        if (ps_args_size(cmd, "ngram", value, 1, 16, &n))
            return -1;
        c->opts.ngram = (unsigned)n;
        return 0;
    case PS_LEAK_OPT_LIMIT:
        if (!ps_leak_limits_set(&c->limits, value, &c->limits_set, &err))
            return 0;
        break;
    case PS_LEAK_OPT_DROP:
        if (!ps_leak_kinds_parse(value, &c->drop_mask, &err))
            return 0;
        break;
    default:
        return -1;
    }
    fprintf(stderr, "pairshard %s: --%s: %s\n", cmd,
            which == PS_LEAK_OPT_LIMIT ? "leakage-limit" : "drop-leaked", err.message);
    return -1;
}
