/* cli/signals.h — SIGINT, SIGTERM and SIGHUP ask a running build or merge
 * to stop and clean up; a second one kills at once. */
#ifndef PS_CLI_SIGNALS_H
#define PS_CLI_SIGNALS_H

#include <signal.h>

/* The first of those signals received (0: none); the library polls it as
 * its cancellation flag. */
extern volatile sig_atomic_t ps_cli_stop_signal;

/* Installs the handlers (not for signals the caller's parent ignores, as
 * nohup sets SIGHUP). */
void ps_cli_signals_install(void);

/* The conventional exit status after `sig`: 128 + its number (130 for
 * SIGINT, 143 for SIGTERM, 129 for SIGHUP). */
int ps_cli_signal_status(int sig);

#endif
