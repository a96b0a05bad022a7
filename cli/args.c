/* Flag and environment-variable values: see args.h. */
#include "cli/args.h"

#include "common/parse_num.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Parses `v` into *out, or says why not after `what` ("--shards: ",
 * "SLURM_ARRAY_TASK_ID=") and returns -1. */
static int u64_or_say(const char *cmd, const char *what, const char *sep, const char *v,
                      uint64_t lo, uint64_t hi, uint64_t *out)
{
    ps_num_status st = ps_parse_u64(v, lo, hi, out);
    if (st == PS_NUM_OK)
        return 0;
    char why[200];
    ps_num_explain_u64(why, sizeof why, st, v, lo, hi);
    fprintf(stderr, "pairshard %s: %s%s%s\n", cmd, what, sep, why);
    return -1;
}

int ps_args_u64(const char *cmd, const char *opt, const char *v, uint64_t lo, uint64_t hi,
                uint64_t *out)
{
    char what[128];
    snprintf(what, sizeof what, "--%s", opt);
    return u64_or_say(cmd, what, ": ", v, lo, hi, out);
}

int ps_args_size(const char *cmd, const char *opt, const char *v, size_t lo, size_t hi,
                 size_t *out)
{
    uint64_t x;
    if (ps_args_u64(cmd, opt, v, lo, hi, &x))
        return -1;
    *out = (size_t)x;
    return 0;
}

int ps_args_env_u64(const char *cmd, const char *var, uint64_t lo, uint64_t hi, uint64_t *out)
{
    const char *v = getenv(var);
    if (!v)
        return 1;
    return u64_or_say(cmd, var, "=", v, lo, hi, out);
}

int ps_args_double(const char *cmd, const char *opt, const char *v, double lo, double hi,
                   double *out)
{
    /* strtod alone takes " 1", "inf", "nan" and hex: insist on digits. */
    int ok = v && ((*v >= '0' && *v <= '9') || *v == '.') && strspn(v, "0123456789.") == strlen(v);
    char *end = NULL;
    double x = ok ? strtod(v, &end) : 0;
    if (!ok || *end || !isfinite(x) || !(x > lo && x < hi)) {
        fprintf(stderr, "pairshard %s: --%s: '%s' is not a number in (%g, %g)\n", cmd, opt,
                v ? v : "", lo, hi);
        return -1;
    }
    *out = x;
    return 0;
}

int ps_args_enum(const char *cmd, const char *opt, const char *v, const ps_args_choice *choices,
                 size_t n, int *out)
{
    for (size_t i = 0; v && i < n; i++)
        if (strcmp(v, choices[i].name) == 0) {
            *out = choices[i].value;
            return 0;
        }
    fprintf(stderr, "pairshard %s: --%s: '%s' is not one of ", cmd, opt, v ? v : "");
    for (size_t i = 0; i < n; i++)
        fprintf(stderr, "%s%s", i ? ", " : "", choices[i].name);
    fputc('\n', stderr);
    return -1;
}
