/* cli/profile.h — renders where a build's time went (--profile). */
#ifndef PS_CLI_PROFILE_H
#define PS_CLI_PROFILE_H

#include "pipeline/build.h"

#include <stdio.h>

/* Writes the build's profile to f: per phase, per thread, the serial
 * fraction and the Amdahl projection it implies. */
void ps_cli_print_build_profile(FILE *f, const ps_build_profile *pf);

/* The speed-up Amdahl's law gives `threads` workers when `serial` of the
 * single-thread time cannot be shared. */
double ps_cli_amdahl(double serial, double threads);

#endif
