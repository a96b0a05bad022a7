/* Option errors in one form for every command: getopt_long's own messages
 * name the subcommand as if it were the program ("build: unrecognized
 * option"), so commands silence them (opterr = 0) and print these. */
#include "cli/opt_error.h"

#include <stdio.h>
#include <string.h>

/* The long option `arg` ("--name" or "--name=value") names exactly, or NULL. */
static const struct option *long_named(const char *arg, const struct option *longopts)
{
    const char *name = arg + 2;
    size_t n = strcspn(name, "=");
    for (const struct option *o = longopts; o && o->name; o++)
        if (strlen(o->name) == n && strncmp(o->name, name, n) == 0)
            return o;
    return NULL;
}

/* Says so and returns 1 when `arg` (n bytes, "--x") abbreviates several
 * long options (getopt_long refuses it as it refuses an unknown one). */
static int ambiguous(const char *cmd, const char *arg, size_t n, const struct option *longopts)
{
    int hits = 0;
    for (const struct option *o = longopts; o && o->name; o++)
        hits += strncmp(o->name, arg + 2, n - 2) == 0;
    if (hits < 2)
        return 0;
    fprintf(stderr, "pairshard %s: option '%.*s' is ambiguous:", cmd, (int)n, arg);
    for (const struct option *o = longopts; o && o->name; o++)
        if (strncmp(o->name, arg + 2, n - 2) == 0)
            fprintf(stderr, " --%s", o->name);
    fputc('\n', stderr);
    return 1;
}

void ps_opt_error(const char *cmd, int c, char *const *argv, const struct option *longopts)
{
    const char *arg = optind > 0 ? argv[optind - 1] : NULL;
    if (arg && strncmp(arg, "--", 2) == 0) {
        const struct option *o = long_named(arg, longopts);
        size_t n = strcspn(arg, "=");
        if (c == ':' || (o && o->has_arg == required_argument && !strchr(arg, '=')))
            fprintf(stderr, "pairshard %s: option '%.*s' needs a value\n", cmd, (int)n, arg);
        else if (o && o->has_arg == no_argument && strchr(arg, '='))
            fprintf(stderr, "pairshard %s: option '%.*s' takes no value\n", cmd, (int)n, arg);
        else if (o)
            fprintf(stderr, "pairshard %s: option '%s' is not valid here\n", cmd, arg);
        else if (!ambiguous(cmd, arg, n, longopts))
            fprintf(stderr, "pairshard %s: unknown option '%.*s'\n", cmd, (int)n, arg);
    } else if (c == ':') {
        fprintf(stderr, "pairshard %s: option '-%c' needs a value\n", cmd, optopt);
    } else if (optopt) {
        fprintf(stderr, "pairshard %s: unknown option '-%c'\n", cmd, optopt);
    } else {
        fprintf(stderr, "pairshard %s: unknown option '%s'\n", cmd, arg ? arg : "?");
    }
    fprintf(stderr, "pairshard %s: see 'pairshard %s --help'\n", cmd, cmd);
}
