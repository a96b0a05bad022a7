/* cli/profile.h — renders where a build's time went (--profile). */
#ifndef PS_CLI_PROFILE_H
#define PS_CLI_PROFILE_H

#include "pipeline/build.h"

#include <stdio.h>

/* The command's own seconds around ps_build_run, serial at any thread
 * count: before it, reading the options and loading the tokenizer; after
 * it, freeing the tokenizer. */
typedef struct ps_cli_command_times {
    double before, after;
} ps_cli_command_times;

/* Seconds on a monotonic clock. */
double ps_cli_now(void);

/* Writes the build's profile to f: per phase, per thread, the serial
 * fraction and the Amdahl projection it implies, over the whole command
 * (the build and `ct`'s seconds around it). */
void ps_cli_print_build_profile(FILE *f, const ps_build_profile *pf,
                                const ps_cli_command_times *ct);

/* The speed-up Amdahl's law gives `threads` workers when `serial` of the
 * single-thread time cannot be shared. */
double ps_cli_amdahl(double serial, double threads);

#endif
