/* pairshard version: the tool's version and its linked libraries'. */
#include "cli/commands.h"
#include "pairshard/pairshard.h"

#include <stdio.h>

int ps_cmd_version(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    char deps[1024];
    ps_dependency_versions(deps, sizeof deps);
    printf("pairshard %s\n%s", ps_version_string(), deps);
    return PS_EXIT_OK;
}
