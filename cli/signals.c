/*
 * Stop on SIGINT/SIGTERM/SIGHUP without leaving a staging directory: the
 * handler only records the signal; the build polls it, removes what it
 * staged and returns, and the command exits 128 + the signal's number.
 * A second signal means "now": it takes the default action (the next
 * build removes the staging directory left behind, as after a crash).
 */
#include "cli/signals.h"

#include <string.h>

volatile sig_atomic_t ps_cli_stop_signal = 0;

static void on_stop(int sig)
{
    if (ps_cli_stop_signal) {
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    ps_cli_stop_signal = sig;
}

void ps_cli_signals_install(void)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction old, sa;
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
            continue;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_stop;
        sigemptyset(&sa.sa_mask);
        /* No SA_RESTART: a system call blocked on something that may never
         * come (the open of a FIFO no one writes to, a read of a stalled
         * pipe) returns EINTR, so the signal stops the command instead of
         * being noted by a process that never looks again. Regular files
         * are never interrupted; what is, fails, and the command reports
         * the stop (ps_cli_stop_signal) before any such error. */
        sa.sa_flags = 0;
        sigaction(sigs[i], &sa, NULL);
    }
}

int ps_cli_signal_status(int sig)
{
    return 128 + sig;
}
