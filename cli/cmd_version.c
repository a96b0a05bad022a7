/* pairshard version: the tool's version and its linked libraries'. */
#include "cli/commands.h"
#include "pairshard/pairshard.h"

#include <stdio.h>
#include <string.h>

int ps_cmd_version(int argc, char **argv)
{
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        fputs("usage: pairshard version\n\nPrints the versions of pairshard and of the "
              "libraries it is linked with.\n", stdout);
        return PS_EXIT_OK;
    }
    if (argc > 1) {
        fprintf(stderr, "pairshard version: unexpected argument '%s'\n", argv[1]);
        return PS_EXIT_USAGE;
    }
    char deps[1024];
    ps_dependency_versions(deps, sizeof deps);
    printf("pairshard %s\n%s", ps_version_string(), deps);
    return PS_EXIT_OK;
}
