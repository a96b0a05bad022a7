/* pairshard inspect --exec: the execution fingerprints of a set. */
#ifndef PS_CLI_INSPECT_EXEC_H
#define PS_CLI_INSPECT_EXEC_H

#include "pairshard/common.h"

/* Prints each record's fingerprints as a JSON line (id, before and after:
 * status, rows, hash; sql_changed) and the statuses before -> after on
 * stderr. 0, PS_ENOENT (a set built without --execute) or what reading
 * the set gives. */
int ps_inspect_exec(const char *dir, ps_error *err);

#endif
