#!/bin/sh
# Installs Debian packages for a test or benchmark that needs more than the
# build does: scripts/apt-install.sh LOG PACKAGE...
# As root, or through a password-less sudo; tries the cached package lists
# first and updates them only when that fails. Writes apt-get's output to
# LOG and exits with its status (1 when it cannot run apt-get at all); the
# caller then checks for what it needs and skips or fails as it must.
set -u
log=$1
shift
SUDO=""
if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        SUDO="sudo -n"
    else
        echo "apt-install: not root and no password-less sudo: cannot install $*" >"$log"
        exit 1
    fi
fi
export DEBIAN_FRONTEND=noninteractive
install() {
    $SUDO apt-get install -y --no-install-recommends "$@" >"$log" 2>&1 ||
        { $SUDO apt-get update >>"$log" 2>&1 &&
          $SUDO apt-get install -y --no-install-recommends "$@" >>"$log" 2>&1; }
}
# Tests run side by side (tests/run.sh): apt-get fails at once, rather than
# waits, when another one holds its locks, so pairshard's installs queue.
# The lock file is opened to append, never truncated: a name in /tmp that
# is not ours loses nothing.
if command -v flock >/dev/null 2>&1; then
    (flock 9 && install "$@") 9>>"${TMPDIR:-/tmp}/pairshard-apt.lock"
else
    install "$@"
fi
