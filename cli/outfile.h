/*
 * Output files that appear whole or not at all: written to a temporary
 * file beside the target, fsynced, then renamed over it on commit. "-"
 * writes to stdout directly.
 */
#ifndef PS_CLI_OUTFILE_H
#define PS_CLI_OUTFILE_H

#include <stdbool.h>
#include <stdio.h>

typedef struct ps_outfile {
    FILE *f;
    char *path; /* final path (NULL for stdout) */
    char *tmp;  /* temporary path */
} ps_outfile;

/* Opens `path` for writing; returns 0, or -1 with a message on stderr. */
int ps_outfile_open(ps_outfile *o, const char *path);
/* Flushes, fsyncs and renames into place. Returns 0, or -1 (message on
 * stderr, temporary removed). */
int ps_outfile_commit(ps_outfile *o);
/* Discards the output (removes the temporary). Safe on an unopened one. */
void ps_outfile_abort(ps_outfile *o);

#endif
